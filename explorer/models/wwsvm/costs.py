"""The cost model of the Weston–Watkins SVM's datasets (:class:`explorer.estimates.Cost`).

Each dataset of the model's registry entry names its cost here
(``Dataset(cost="explorer.models.wwsvm.costs:NAME")``);
``tests/test_estimates.py`` checks the estimates against real runs within 3x.
"""

from __future__ import annotations

from ...estimates import BASE, Cost, Sizes, all_rows

__all__ = ["BLOBS", "DIGITS", "IRIS", "WINE"]

# Walrus epochs: each sample's block update costs O(k d + k log k); measured 4e-5 s per
# epoch at the default (n=300, k=4, d=2) and 2.5e-10 s per n k (d + k) above it.
# Epochs grow with n (45 at n=300, 233 at n=1000 with k=6, d=20, 161 at n=2000, the
# 1000 budget at n=5000, k=10, d=100; the averaged primal candidate of the certificate
# stops small runs early); the real datasets converge in a fixed number (digits 105,
# wine 10).


def _ww_memory(n: int, k: int, d: int) -> float:
    walrus = 8.0 * (2 * n * d + 4 * n * k + d * k) + BASE
    if not _ipm(d, k):
        return walrus
    # the interior-point method: an n x k (d + 1) block and Newton systems of size d k
    return walrus + 8.0 * (n * k * (d + 1) + 3 * (k * (d + 1)) ** 2)


def _ww_epoch(n: int, k: int, d: int) -> float:
    return 3e-5 + 2.5e-10 * n * k * (d + k)


def _ww_blobs(s: Sizes) -> tuple[int, int, int]:
    return int(s["n"]), int(s["k"]), int(s["d"])


# The registry's default method is "auto": the interior-point method for small d k
# (solvers.wwsvm.auto_method), whose iterations grow slowly with n (19 at the default,
# 26 at n=1000, k=6, d=20, 35-68 at n=3000-10000) and cost a pass over n k (d + k)
# entries each (7e-4 s at the default, 1.4e-2 s at n=5000, k=10, d=30); else Walrus.


def _ipm(d: int, k: int) -> bool:
    from solvers.wwsvm import auto_method

    return auto_method(d, k) == "ipm"


def _iterations(n: int, k: int, d: int, walrus_epochs: float) -> float:
    return 4.0 * n**0.3 if _ipm(d, k) else walrus_epochs


def _per_iteration(n: int, k: int, d: int) -> float:
    return 7e-4 + 6.5e-9 * n * k * (d + k) if _ipm(d, k) else _ww_epoch(n, k, d)


BLOBS = Cost(memory=lambda s: _ww_memory(*_ww_blobs(s)),
             iterations=lambda s: _iterations(*_ww_blobs(s), 3.0 * int(s["n"]) ** 0.62),
             per_iteration=lambda s: _per_iteration(*_ww_blobs(s)), max_iter=1000)


def _ww_real(n_all: int, d: int, k: int, epochs: float, setup: float) -> Cost:
    def n(s: Sizes) -> int:
        return all_rows(s.get("n", 0), n_all)

    return Cost(memory=lambda s: _ww_memory(n(s), k, d),
                iterations=lambda s: _iterations(n(s), k, d, epochs),
                per_iteration=lambda s: _per_iteration(n(s), k, d),
                max_iter=1000, setup=lambda s: setup)


DIGITS = _ww_real(1797, 64, 10, 120.0, 0.1)
WINE = _ww_real(178, 13, 3, 15.0, 0.01)
IRIS = _ww_real(150, 4, 3, 30.0, 0.01)
