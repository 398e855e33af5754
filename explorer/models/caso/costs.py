"""The cost model of cASO's datasets (:class:`explorer.estimates.Cost`).

Each dataset of the model's registry entry names its cost here
(``Dataset(cost="explorer.models.caso.costs:NAME")``);
``tests/test_estimates.py`` checks the estimates against real runs within 3x.
"""

from __future__ import annotations

from ...estimates import BASE, MB, Cost, Sizes

__all__ = ["DIGITS", "SUBSPACE"]

# BCD (the page's default method) converges in 4-10 outer iterations, each an O(m n d)
# pass, an O(d^3) eigendecomposition and O(m d^2) for U: 2e-4 s + 7e-9 s per unit.


def _caso_memory(m: int, n: int, d: int) -> float:
    return 8.0 * (3 * m * n * d + 6 * d * d + 6 * d * m) + BASE


def _caso_iter(m: int, n: int, d: int) -> float:
    return 2e-4 + 7e-9 * (m * n * d + d**3 + m * d * d)


def _caso_sub(s: Sizes) -> tuple[int, int, int]:
    return int(s["m"]), int(s["n"]), int(s["d"])


SUBSPACE = Cost(memory=lambda s: _caso_memory(*_caso_sub(s)), iterations=lambda s: 6.0,
                     per_iteration=lambda s: _caso_iter(*_caso_sub(s)), max_iter=1000)
# digits: loading and the PCA dominate (0.7 s CPU)
DIGITS = Cost(memory=lambda s: _caso_memory(10, int(s["n"]), int(s["d"])) + 2 * MB,
                   iterations=lambda s: 10.0,
                   per_iteration=lambda s: _caso_iter(10, int(s["n"]), int(s["d"])),
                   max_iter=1000, setup=lambda s: 0.7)
