"""The cost model of MT-MKL's datasets (:class:`explorer.estimates.Cost`).

Each dataset of the model's registry entry names its cost here
(``Dataset(cost="explorer.models.mtmkl.costs:NAME")``);
``tests/test_estimates.py`` checks the estimates against real runs within 3x.
"""

from __future__ import annotations

from ...estimates import MB, Cost, Sizes, all_rows

__all__ = ["DIGITS", "HIERARCHY"]

# T = 2^depth tasks, 2T - 1 tree nodes whose similarities the solver keeps in factor form
# (a sparse T x (depth + 1) T indicator matrix): memory is the features, time per iteration
# grows as T log T (CPU per iteration 4.8 ms at depth 7, 21 ms at 9, 55 ms at 10 with d =
# 100, 15-18 iterations, measured while other jobs shared the machine); building the data
# 4e-8 s per sample-feature.


def _hierarchy_memory(s: Sizes) -> float:
    T = 2 ** int(s["depth"])
    d = int(s["d"])
    n_train, n_test = 2 * T * int(s["n_train"]), 2 * T * int(s["n_test"])
    # training and test features and their noise draws; the factor form's indicators
    return 8.0 * (2 * (n_train + n_test) * d + 3 * T * (int(s["depth"]) + 1)) + 2 * MB


def _mtmkl_setup(T: int, n: int, d: int) -> float:
    return 0.1 + 4e-8 * 2 * T * n * d


HIERARCHY = Cost(
    memory=_hierarchy_memory, iterations=lambda s: 12.0 + int(s["depth"]),
    per_iteration=lambda s: 1e-3 + 5e-8 * (2 ** int(s["depth"])) * int(s["depth"])
    * int(s["d"]),
    max_iter=1000,
    setup=lambda s: _mtmkl_setup(2 ** int(s["depth"]), int(s["n_train"]) + int(s["n_test"]),
                                 int(s["d"])))


def _digits_memory(s: Sizes) -> float:
    n = 2 * 10 * (int(s["n_train"]) + all_rows(s.get("n_test", 0), 1797))
    return 8.0 * 0.5 * n * 64 + 2 * MB


DIGITS = Cost(
    memory=_digits_memory, iterations=lambda s: 12.0,
    per_iteration=lambda s: 5e-4,
    max_iter=1000,
    setup=lambda s: _mtmkl_setup(10, int(s["n_train"]) + all_rows(s.get("n_test", 0), 1797), 64)
    - 0.09)
