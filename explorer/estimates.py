"""Rough memory and time estimates of one solve, per dataset (for ``dualscope solve --force``).

Each function takes the dataset's full size mapping (defaults filled in) and
returns bytes (``*_memory``) or CPU seconds (``*_seconds``) of building the
problem and one solve at the default parameters and iteration budget, on a
2-core machine. They are named in the registry's ``Dataset(memory=...,
seconds=...)`` as ``"explorer.estimates:name"`` strings (imported on use).

The constants were fitted to ``tracemalloc`` peaks and ``time.process_time``
of single runs at two or three sizes per dataset (default and larger); the
leading terms follow the solvers' storage (data matrices, dual variables,
triplet lists, similarity matrices). They are meant to tell megabytes from
gigabytes and seconds from hours, not to be exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

MB = 1024.0**2
_Est = Callable[[Mapping[str, Any]], float]


def _all(v: Any, n_all: int) -> int:
    """A sample-count size where 0 means the whole dataset."""
    v = int(v)
    return n_all if v <= 0 else min(v, n_all)


# --------------------------------------------------------------------------- wwsvm


def wwsvm_blobs_memory(s: Mapping[str, Any]) -> float:
    n, k, d = int(s["n"]), int(s["k"]), int(s["d"])
    return 8.0 * (2 * n * d + 4 * n * k + d * k) + 1 * MB


def wwsvm_blobs_seconds(s: Mapping[str, Any]) -> float:
    # measured: 8 s CPU at n=2000, k=8, d=50 (1000 epochs, the default budget)
    return 1e-8 * int(s["n"]) * int(s["k"]) * int(s["d"]) * 1000


def _wwsvm_real(n_all: int, d: int, k: int) -> tuple[_Est, _Est]:
    def memory(s: Mapping[str, Any]) -> float:
        n = _all(s.get("n", 0), n_all)
        return 8.0 * (2 * n * d + 4 * n * k + d * k) + 1 * MB

    def seconds(s: Mapping[str, Any]) -> float:
        return 1e-8 * _all(s.get("n", 0), n_all) * k * d * 1000

    return memory, seconds


wwsvm_digits_memory, wwsvm_digits_seconds = _wwsvm_real(1797, 64, 10)
wwsvm_wine_memory, wwsvm_wine_seconds = _wwsvm_real(178, 13, 3)
wwsvm_iris_memory, wwsvm_iris_seconds = _wwsvm_real(150, 4, 3)


# ---------------------------------------------------------------------------- caso


def caso_subspace_memory(s: Mapping[str, Any]) -> float:
    m, n, d = int(s["m"]), int(s["n"]), int(s["d"])
    return 8.0 * (3 * m * n * d + 6 * d * d + 6 * d * m) + 1 * MB


def caso_subspace_seconds(s: Mapping[str, Any]) -> float:
    # per iteration O(m n d + d^3); ~1000 iterations is a slow (APG) run
    m, n, d = int(s["m"]), int(s["n"]), int(s["d"])
    return 2e-9 * (m * n * d + d**3) * 1000


def caso_digits_memory(s: Mapping[str, Any]) -> float:
    n, d = int(s["n"]), int(s["d"])
    return 8.0 * (3 * 10 * n * d + 6 * d * d + 60 * d) + 2 * MB


def caso_digits_seconds(s: Mapping[str, Any]) -> float:
    n, d = int(s["n"]), int(s["d"])
    return 2e-9 * (10 * n * d + d**3) * 1000


# ---------------------------------------------------------------------- robust_mtl


def robust_temporal_memory(s: Mapping[str, Any]) -> float:
    m, n, d = int(s["m"]), int(s["n"]), int(s["d"])
    return 8.0 * (1.5 * m * n * d + 10 * d * m) + 1 * MB


def robust_temporal_seconds(s: Mapping[str, Any]) -> float:
    # measured: 6 s CPU at the default (m=12, d=30, n=40), 16 s at m=30, d=80, n=80
    return 5.0 + 6e-5 * int(s["m"]) * int(s["n"]) * int(s["d"])


def robust_diabetes_memory(s: Mapping[str, Any]) -> float:
    return 8.0 * (1.5 * 442 * 10 + 10 * 10 * int(s["m"])) + 1 * MB


def robust_diabetes_seconds(s: Mapping[str, Any]) -> float:
    return 5.0 + 6e-5 * 442 * 10 * 2


# ---------------------------------------------------------------- triplet screening


def _n_triplets(n: int, k: Any, classes: int) -> float:
    per_class = max(1.0, n / max(classes, 1))
    kk = per_class if (k is None or int(k) <= 0) else min(float(k), per_class)
    return n * kk * kk


def _triplet_memory(T: float, d: int) -> float:
    # fitted to 160,000 triplets in 5, 20 and 100 dimensions (27, 86, 146 MB peak); it
    # overestimates other data (breast cancer, k=30: 298 MB estimated, 157 MB measured)
    return T * (46.0 + 19.8 * min(d, 20) + 4.7 * d) + 1 * MB


def triplet_synthetic_memory(s: Mapping[str, Any]) -> float:
    T = _n_triplets(int(s["n"]), s["k"], int(s["classes"]))
    return _triplet_memory(T, int(s["d"]))


def triplet_synthetic_seconds(s: Mapping[str, Any]) -> float:
    # measured: 0.5 s CPU for 320,000 triplets in 20-D
    return 8e-8 * _n_triplets(int(s["n"]), s["k"], int(s["classes"])) * int(s["d"])


def _triplet_real(n_all: int, d: int, classes: int) -> tuple[_Est, _Est]:
    def memory(s: Mapping[str, Any]) -> float:
        T = _n_triplets(_all(s.get("n", 0), n_all), s.get("k", 0), classes)
        return _triplet_memory(T, d)

    def seconds(s: Mapping[str, Any]) -> float:
        return 8e-8 * _n_triplets(_all(s.get("n", 0), n_all), s.get("k", 0), classes) * d

    return memory, seconds


triplet_iris_memory, triplet_iris_seconds = _triplet_real(150, 4, 3)
triplet_wine_memory, triplet_wine_seconds = _triplet_real(178, 13, 3)
triplet_breast_cancer_memory, triplet_breast_cancer_seconds = _triplet_real(569, 30, 2)
triplet_digits_memory, triplet_digits_seconds = _triplet_real(1797, 64, 10)


# --------------------------------------------------------------------------- mtmkl


def mtmkl_hierarchy_memory(s: Mapping[str, Any]) -> float:
    T = 2 ** int(s["depth"])
    d = int(s["d"])
    n_train, n_test = 2 * T * int(s["n_train"]), 2 * T * int(s["n_test"])
    # training and test features (and their noise draws), one T x T matrix per tree node
    return 8.0 * (2 * (n_train + n_test) * d + 2 * (2 * T) * T * T) + 2 * MB


def mtmkl_hierarchy_seconds(s: Mapping[str, Any]) -> float:
    T = 2 ** int(s["depth"])
    return 1.5e-8 * 2 * T * (int(s["n_train"]) + int(s["n_test"])) * int(s["d"]) + 0.1


def mtmkl_digits_memory(s: Mapping[str, Any]) -> float:
    n = 2 * 10 * (int(s["n_train"]) + _all(s.get("n_test", 0), 1797))
    return 8.0 * 2 * n * 64 + 2 * MB


def mtmkl_digits_seconds(s: Mapping[str, Any]) -> float:
    return 1.5e-8 * 2 * 10 * (int(s["n_train"]) + _all(s.get("n_test", 0), 1797)) * 64 + 0.1
