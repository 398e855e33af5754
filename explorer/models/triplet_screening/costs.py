"""The cost model of the triplet metric learner's datasets (:class:`explorer.estimates.Cost`).

Each dataset of the model's registry entry names its cost here
(``Dataset(cost="explorer.models.triplet_screening.costs:NAME")``);
``tests/test_estimates.py`` checks the estimates against real runs within 3x.
"""

from __future__ import annotations

from typing import Any

from ...estimates import BASE, Cost, Sizes, all_rows

__all__ = ["BREAST_CANCER", "DIGITS", "IRIS", "SYNTHETIC", "WINE"]

# projected gradient: per iteration one pass over the T triplets (O(T d)) and a d x d
# eigendecomposition; 2e-4 s + 2.5e-9 s per T d. 16-24 iterations on the synthetic data
# and wine, ~250 on digits (64-D).


def _n_triplets(n: int, k: Any, classes: int) -> float:
    per_class = max(1.0, n / max(classes, 1))
    kk = per_class if (k is None or int(k) <= 0) else min(float(k), per_class)
    return n * kk * kk


def _triplet_memory(T: float, d: int, n: int) -> float:
    # fitted to 160,000 triplets in 5, 20 and 100 dimensions (27, 86, 146 MB peak); it
    # overestimates other data (breast cancer, k=30: 298 MB estimated, 157 MB measured);
    # the n x n pair tables matter when triplets are few (digits, k=3: 12 MB)
    return T * (46.0 + 19.8 * min(d, 20) + 4.7 * d) + 24.0 * n * n + BASE


def _triplet_iter(T: float, d: int) -> float:
    return 2e-4 + 2.5e-9 * T * d + 3e-9 * d**3


def _triplet_syn(s: Sizes) -> tuple[float, int]:
    return _n_triplets(int(s["n"]), s["k"], int(s["classes"])), int(s["d"])


SYNTHETIC = Cost(memory=lambda s: _triplet_memory(*_triplet_syn(s), int(s["n"])),
                         iterations=lambda s: 20.0,
                         per_iteration=lambda s: _triplet_iter(*_triplet_syn(s)),
                         max_iter=5000)


def _triplet_real(n_all: int, d: int, classes: int, iterations: float) -> Cost:
    def T(s: Sizes) -> float:
        return _n_triplets(all_rows(s.get("n", 0), n_all), s.get("k", 0), classes)

    return Cost(memory=lambda s: _triplet_memory(T(s), d, all_rows(s.get("n", 0), n_all)),
                iterations=lambda s: iterations,
                per_iteration=lambda s: _triplet_iter(T(s), d), max_iter=5000,
                setup=lambda s: 0.01)


IRIS = _triplet_real(150, 4, 3, 25.0)
WINE = _triplet_real(178, 13, 3, 25.0)
BREAST_CANCER = _triplet_real(569, 30, 2, 50.0)
DIGITS = _triplet_real(1797, 64, 10, 250.0)
