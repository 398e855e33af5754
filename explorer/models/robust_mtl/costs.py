"""The cost model of robust temporal MTL's datasets (:class:`explorer.estimates.Cost`).

Each dataset of the model's registry entry names its cost here
(``Dataset(cost="explorer.models.robust_mtl.costs:NAME")``);
``tests/test_estimates.py`` checks the estimates against real runs within 3x.
"""

from __future__ import annotations

from ...estimates import BASE, Cost

__all__ = ["DIABETES", "TEMPORAL"]

# exact_dual APG: per step an O(m n d) pass and an SVD of the d x m iterate, 3e-4 s +
# 1.2e-8 s per m n d + d m^2; 118 steps at the default, 37 at m=30, d=80, n=80.


def _rmtl_iter(m: int, n: int, d: int) -> float:
    return 3e-4 + 1.2e-8 * (m * n * d + d * m * m)


TEMPORAL = Cost(
    memory=lambda s: 8.0 * (1.5 * int(s["m"]) * int(s["n"]) * int(s["d"])
                            + 10 * int(s["d"]) * int(s["m"])) + BASE,
    iterations=lambda s: 70.0,
    per_iteration=lambda s: _rmtl_iter(int(s["m"]), int(s["n"]), int(s["d"])),
    max_iter=100_000)
DIABETES = Cost(
    memory=lambda s: 8.0 * (1.5 * 442 * 10 + 10 * 10 * int(s["m"])) + BASE,
    iterations=lambda s: 20.0,
    per_iteration=lambda s: _rmtl_iter(int(s["m"]), 442 // max(int(s["m"]), 1), 10),
    max_iter=100_000, setup=lambda s: 0.01)
