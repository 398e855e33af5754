"""Memory and time estimates of one solve, per dataset: the project's one cost model.

Every dataset of the registry names its two estimates (``Dataset(memory=...,
seconds=...)`` as ``"explorer.estimates:name"`` strings, imported on use), and
:meth:`explorer.registry.Dataset.estimate` is the single entry point that the CLI's size
check, the page's confirmation guard (``explorer.ui.guards``) and the sweep call.

Each estimate is a :class:`Cost`: the bytes of the data and the solver's state, and the
CPU seconds of building the problem plus ``iterations x seconds per iteration`` at the
default parameters, tolerance and iteration budget, single-threaded. The constants were
fitted to ``tracemalloc`` peaks and ``time.process_time`` of runs at two or three sizes
per dataset (the default and larger ones); the size dependence follows the solvers'
per-iteration work (data passes, eigen- and singular value decompositions, triplet
passes). ``tests/test_estimates.py`` checks the memory and the predicted iteration
counts against real runs within 3x. They tell megabytes from gigabytes and seconds from
hours; they are not exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["COSTS", "Cost"]

MB = 1024.0**2
#: bytes of a solve's small fixed state (histories, Python objects)
_BASE = 0.05 * MB
Sizes = Mapping[str, Any]


def _all(v: Any, n_all: int) -> int:
    """A sample-count size where 0 means the whole dataset."""
    v = int(v)
    return n_all if v <= 0 else min(v, n_all)


def _zero(_s: Sizes) -> float:
    return 0.0


@dataclass(frozen=True)
class Cost:
    """The cost model of one dataset (functions of the full size mapping).

    ``seconds(s) = setup(s) + min(iterations(s), max_iter) * per_iteration(s)``.
    """

    memory: Callable[[Sizes], float]
    iterations: Callable[[Sizes], float]
    per_iteration: Callable[[Sizes], float]
    max_iter: int
    setup: Callable[[Sizes], float] = _zero

    def predicted_iterations(self, s: Sizes) -> float:
        """Iterations of one solve at the default parameters (capped by the budget)."""
        return float(min(self.iterations(s), self.max_iter))

    def seconds(self, s: Sizes) -> float:
        return float(self.setup(s) + self.predicted_iterations(s) * self.per_iteration(s))


# --------------------------------------------------------------------------- wwsvm
# Walrus epochs: each sample's block update costs O(k d + k log k); measured 4e-5 s per
# epoch at the default (n=300, k=4, d=2) and 2.5e-10 s per n k (d + k) above it.
# Epochs grow with n (45 at n=300, 233 at n=1000 with k=6, d=20, 161 at n=2000, the
# 1000 budget at n=5000, k=10, d=100; the averaged primal candidate of the certificate
# stops small runs early); the real datasets converge in a fixed number (digits 105,
# wine 10).


def _ww_memory(n: int, k: int, d: int) -> float:
    return 8.0 * (2 * n * d + 4 * n * k + d * k) + _BASE


def _ww_epoch(n: int, k: int, d: int) -> float:
    return 3e-5 + 2.5e-10 * n * k * (d + k)


def _ww_blobs(s: Sizes) -> tuple[int, int, int]:
    return int(s["n"]), int(s["k"]), int(s["d"])


WWSVM_BLOBS = Cost(memory=lambda s: _ww_memory(*_ww_blobs(s)),
                   iterations=lambda s: 3.0 * int(s["n"]) ** 0.62,
                   per_iteration=lambda s: _ww_epoch(*_ww_blobs(s)), max_iter=1000)


def _ww_real(n_all: int, d: int, k: int, epochs: float, setup: float) -> Cost:
    return Cost(memory=lambda s: _ww_memory(_all(s.get("n", 0), n_all), k, d),
                iterations=lambda s: epochs,
                per_iteration=lambda s: _ww_epoch(_all(s.get("n", 0), n_all), k, d),
                max_iter=1000, setup=lambda s: setup)


WWSVM_DIGITS = _ww_real(1797, 64, 10, 120.0, 0.1)
WWSVM_WINE = _ww_real(178, 13, 3, 15.0, 0.01)
WWSVM_IRIS = _ww_real(150, 4, 3, 30.0, 0.01)


# ---------------------------------------------------------------------------- caso
# BCD (the page's default method) converges in 4-10 outer iterations, each an O(m n d)
# pass, an O(d^3) eigendecomposition and O(m d^2) for U: 2e-4 s + 7e-9 s per unit.


def _caso_memory(m: int, n: int, d: int) -> float:
    return 8.0 * (3 * m * n * d + 6 * d * d + 6 * d * m) + _BASE


def _caso_iter(m: int, n: int, d: int) -> float:
    return 2e-4 + 7e-9 * (m * n * d + d**3 + m * d * d)


def _caso_sub(s: Sizes) -> tuple[int, int, int]:
    return int(s["m"]), int(s["n"]), int(s["d"])


CASO_SUBSPACE = Cost(memory=lambda s: _caso_memory(*_caso_sub(s)), iterations=lambda s: 6.0,
                     per_iteration=lambda s: _caso_iter(*_caso_sub(s)), max_iter=1000)
# digits: loading and the PCA dominate (0.7 s CPU)
CASO_DIGITS = Cost(memory=lambda s: _caso_memory(10, int(s["n"]), int(s["d"])) + 2 * MB,
                   iterations=lambda s: 10.0,
                   per_iteration=lambda s: _caso_iter(10, int(s["n"]), int(s["d"])),
                   max_iter=1000, setup=lambda s: 0.7)


# ---------------------------------------------------------------------- robust_mtl
# exact_dual APG: per step an O(m n d) pass and an SVD of the d x m iterate, 3e-4 s +
# 1.2e-8 s per m n d + d m^2; 118 steps at the default, 37 at m=30, d=80, n=80.


def _rmtl_iter(m: int, n: int, d: int) -> float:
    return 3e-4 + 1.2e-8 * (m * n * d + d * m * m)


ROBUST_TEMPORAL = Cost(
    memory=lambda s: 8.0 * (1.5 * int(s["m"]) * int(s["n"]) * int(s["d"])
                            + 10 * int(s["d"]) * int(s["m"])) + _BASE,
    iterations=lambda s: 70.0,
    per_iteration=lambda s: _rmtl_iter(int(s["m"]), int(s["n"]), int(s["d"])),
    max_iter=100_000)
ROBUST_DIABETES = Cost(
    memory=lambda s: 8.0 * (1.5 * 442 * 10 + 10 * 10 * int(s["m"])) + _BASE,
    iterations=lambda s: 20.0,
    per_iteration=lambda s: _rmtl_iter(int(s["m"]), 442 // max(int(s["m"]), 1), 10),
    max_iter=100_000, setup=lambda s: 0.01)


# ---------------------------------------------------------------- triplet screening
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
    return T * (46.0 + 19.8 * min(d, 20) + 4.7 * d) + 24.0 * n * n + _BASE


def _triplet_iter(T: float, d: int) -> float:
    return 2e-4 + 2.5e-9 * T * d + 3e-9 * d**3


def _triplet_syn(s: Sizes) -> tuple[float, int]:
    return _n_triplets(int(s["n"]), s["k"], int(s["classes"])), int(s["d"])


TRIPLET_SYNTHETIC = Cost(memory=lambda s: _triplet_memory(*_triplet_syn(s), int(s["n"])),
                         iterations=lambda s: 20.0,
                         per_iteration=lambda s: _triplet_iter(*_triplet_syn(s)),
                         max_iter=5000)


def _triplet_real(n_all: int, d: int, classes: int, iterations: float) -> Cost:
    def T(s: Sizes) -> float:
        return _n_triplets(_all(s.get("n", 0), n_all), s.get("k", 0), classes)

    return Cost(memory=lambda s: _triplet_memory(T(s), d, _all(s.get("n", 0), n_all)),
                iterations=lambda s: iterations,
                per_iteration=lambda s: _triplet_iter(T(s), d), max_iter=5000,
                setup=lambda s: 0.01)


TRIPLET_IRIS = _triplet_real(150, 4, 3, 25.0)
TRIPLET_WINE = _triplet_real(178, 13, 3, 25.0)
TRIPLET_BREAST_CANCER = _triplet_real(569, 30, 2, 50.0)
TRIPLET_DIGITS = _triplet_real(1797, 64, 10, 250.0)


# --------------------------------------------------------------------------- mtmkl
# T = 2^depth tasks, 2T - 1 tree nodes whose similarities the solver keeps in factor form
# (a sparse T x (depth + 1) T indicator matrix): memory is the features, time per iteration
# grows as T log T (CPU per iteration 4.8 ms at depth 7, 21 ms at 9, 55 ms at 10 with d =
# 100, 15-18 iterations, measured while other jobs shared the machine); building the data
# 4e-8 s per sample-feature.


def mtmkl_hierarchy_memory(s: Sizes) -> float:
    T = 2 ** int(s["depth"])
    d = int(s["d"])
    n_train, n_test = 2 * T * int(s["n_train"]), 2 * T * int(s["n_test"])
    # training and test features and their noise draws; the factor form's indicators
    return 8.0 * (2 * (n_train + n_test) * d + 3 * T * (int(s["depth"]) + 1)) + 2 * MB


def _mtmkl_setup(T: int, n: int, d: int) -> float:
    return 0.1 + 4e-8 * 2 * T * n * d


MTMKL_HIERARCHY = Cost(
    memory=mtmkl_hierarchy_memory, iterations=lambda s: 12.0 + int(s["depth"]),
    per_iteration=lambda s: 1e-3 + 5e-8 * (2 ** int(s["depth"])) * int(s["depth"])
    * int(s["d"]),
    max_iter=1000,
    setup=lambda s: _mtmkl_setup(2 ** int(s["depth"]), int(s["n_train"]) + int(s["n_test"]),
                                 int(s["d"])))


def mtmkl_digits_memory(s: Sizes) -> float:
    n = 2 * 10 * (int(s["n_train"]) + _all(s.get("n_test", 0), 1797))
    return 8.0 * 0.5 * n * 64 + 2 * MB


MTMKL_DIGITS = Cost(
    memory=mtmkl_digits_memory, iterations=lambda s: 12.0,
    per_iteration=lambda s: 5e-4,
    max_iter=1000,
    setup=lambda s: _mtmkl_setup(10, int(s["n_train"]) + _all(s.get("n_test", 0), 1797), 64)
    - 0.09)


#: The cost model of every dataset, by (model, dataset).
COSTS: dict[tuple[str, str], Cost] = {
    ("wwsvm", "blobs"): WWSVM_BLOBS, ("wwsvm", "digits"): WWSVM_DIGITS,
    ("wwsvm", "wine"): WWSVM_WINE, ("wwsvm", "iris"): WWSVM_IRIS,
    ("caso", "subspace"): CASO_SUBSPACE, ("caso", "digits"): CASO_DIGITS,
    ("robust_mtl", "temporal"): ROBUST_TEMPORAL, ("robust_mtl", "diabetes"): ROBUST_DIABETES,
    ("triplet_screening", "synthetic"): TRIPLET_SYNTHETIC,
    ("triplet_screening", "iris"): TRIPLET_IRIS, ("triplet_screening", "wine"): TRIPLET_WINE,
    ("triplet_screening", "breast_cancer"): TRIPLET_BREAST_CANCER,
    ("triplet_screening", "digits"): TRIPLET_DIGITS,
    ("mtmkl", "hierarchy"): MTMKL_HIERARCHY, ("mtmkl", "digits"): MTMKL_DIGITS,
}

# The names the registry's datasets declare ("explorer.estimates:<name>").
wwsvm_blobs_memory, wwsvm_blobs_seconds = WWSVM_BLOBS.memory, WWSVM_BLOBS.seconds
wwsvm_digits_memory, wwsvm_digits_seconds = WWSVM_DIGITS.memory, WWSVM_DIGITS.seconds
wwsvm_wine_memory, wwsvm_wine_seconds = WWSVM_WINE.memory, WWSVM_WINE.seconds
wwsvm_iris_memory, wwsvm_iris_seconds = WWSVM_IRIS.memory, WWSVM_IRIS.seconds
caso_subspace_memory, caso_subspace_seconds = CASO_SUBSPACE.memory, CASO_SUBSPACE.seconds
caso_digits_memory, caso_digits_seconds = CASO_DIGITS.memory, CASO_DIGITS.seconds
robust_temporal_memory = ROBUST_TEMPORAL.memory
robust_temporal_seconds = ROBUST_TEMPORAL.seconds
robust_diabetes_memory = ROBUST_DIABETES.memory
robust_diabetes_seconds = ROBUST_DIABETES.seconds
triplet_synthetic_memory = TRIPLET_SYNTHETIC.memory
triplet_synthetic_seconds = TRIPLET_SYNTHETIC.seconds
triplet_iris_memory, triplet_iris_seconds = TRIPLET_IRIS.memory, TRIPLET_IRIS.seconds
triplet_wine_memory, triplet_wine_seconds = TRIPLET_WINE.memory, TRIPLET_WINE.seconds
triplet_breast_cancer_memory = TRIPLET_BREAST_CANCER.memory
triplet_breast_cancer_seconds = TRIPLET_BREAST_CANCER.seconds
triplet_digits_memory, triplet_digits_seconds = TRIPLET_DIGITS.memory, TRIPLET_DIGITS.seconds
mtmkl_hierarchy_seconds = MTMKL_HIERARCHY.seconds
mtmkl_digits_seconds = MTMKL_DIGITS.seconds
