"""Triplet construction (section 5) and argument checks of the triplet model."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import njit

from ..params import TOL, ParamSpec, ParamSpecs
from ..validation import (
    check_choice,
    check_int,
    check_label_kind,
    check_matrix,
    check_scalar,
)

SPHERES = ("gb", "pgb", "dgb", "cdgb", "rpb", "rrpb")
#: Screening choices offered by the dashboard and the CLI ("+" joins spheres); any
#: combination of :data:`SPHERES` (RPB excepted) is accepted by :func:`solve`.
SCREENING_PRESETS = ("rrpb+pgb", "rrpb", "pgb", "gb", "dgb", "cdgb", "gb+pgb+dgb+cdgb+rrpb",
                     "none")

#: The parameters of :func:`solve`, declared once (defaults, choices, help).
PARAMS = ParamSpecs(
    ParamSpec("lam", 1.0, "regularisation weight lambda > 0 (solve's positional argument)",
              low=0.0),
    ParamSpec("k", 10.0, "neighbourhood size of the default triplets (inf: all)", low=1.0,
              low_inclusive=True, allow_inf=True),
    ParamSpec("loss", "smoothed_hinge", "triplet loss", choices=("smoothed_hinge", "hinge")),
    ParamSpec("gamma", 0.05, "smoothing of the smoothed hinge (> 0; ignored by the hinge)",
              low=0.0, low_inclusive=True),
    ParamSpec("screening", "rrpb+pgb", "spheres used for safe screening ('+'-joined; none: "
              "the naive optimisation; solve also takes any sequence of sphere names)",
              choices=SCREENING_PRESETS),
    ParamSpec("rule", "sphere", "screening rule", choices=("sphere", "linear", "sdls")),
    ParamSpec("diagonal", False, "diagonal metric"),
    ParamSpec("active_set", False, "active-set heuristic (baseline)"),
    ParamSpec("refresh", "every10", "active set: when its working set is refreshed and the "
              "solve certified: 'every10' (every 10 iterations, Weinberger et al.'s schedule "
              "as the paper uses it) or 'converged' (also as soon as the working set's own "
              "problem meets tol, when that refresh costs less than the steps it saves)",
              choices=("every10", "converged")),
    ParamSpec("method", "auto", "optimiser (auto: pgd for the smoothed hinge, dual for the "
              "hinge)", choices=("auto", "pgd", "dual")),
    ParamSpec("dynamic", "adaptive", "schedule of dynamic screening rounds: 'adaptive' "
              "(whenever the duality-gap ball has halved since the last screening) or "
              "'every10' (every 10 iterations, the paper's section 5)",
              choices=("adaptive", "every10")),
    ParamSpec("evaluation", "triplets", "loss pass over all triplets: 'triplets' (each "
              "triplet visited, the paper's) or 'sorted' (per anchor, sorted distances and "
              "prefix sums, O(n log n): the pairwise-ranking trick; for triplets in anchor "
              "blocks, e.g. k = inf)", choices=("triplets", "sorted")),
    ParamSpec("backoff", True, "skip screening rounds whose measured cost exceeds the "
              "loss-pass time they can save (noted in the result); False: always screen"),
    TOL,
    ParamSpec("max_iter", 5000, "iteration budget", kind="int", low=1, low_inclusive=True),
)
LOSSES = PARAMS["loss"].choices
RULES = PARAMS["rule"].choices
METHODS = PARAMS["method"].choices
#: Dynamic screening and active-set refresh period (iterations), as in the paper.
SCREEN_EVERY = 10
#: Refuse to build more triplets than this (about 80 bytes per triplet with the pair
#: form and the path state: 10M triplets take about 1 GB).
MAX_TRIPLETS = 10_000_000
#: Padding of the gap in sphere radii against rounding in P and D.
_GAP_PAD = 1e-11


@njit(cache=True)
def _pad(gap: float, P: float) -> float:  # pragma: no cover - compiled
    # the reduced gap padded against rounding (compiled: the compiled loop uses it too)
    return max(gap, 0.0) + _GAP_PAD * max(1.0, abs(P))


@njit(cache=True)
def _iters_left(prev: int, iteration: int) -> int:  # pragma: no cover - compiled
    # Iterations still expected at this lambda (prev < 0: no previous lambda), as
    # documented in _Run.iters_left; compiled: the compiled loop's screening tests use it.
    if prev < 0:
        return max(iteration, SCREEN_EVERY)
    return max(prev - iteration, iteration // 2, 1)


_GLL_MEMORY = 10


# ---------------------------------------------------------------------------
# Validation and triplets
# ---------------------------------------------------------------------------


#: Largest admissible |X| entry: ||H_t|| grows like |x|^4 and must stay far below overflow.
X_MAX = 1e70


def _check_xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = check_matrix(X, "X")
    big = float(np.max(np.abs(X))) if X.size else 0.0
    if big > X_MAX:
        raise ValueError(
            f"X: the triplet matrices H_t = a a^T - b b^T grow like |x|^4 and overflow for "
            f"entries as large as {big:.3g} (limit {X_MAX:g}); rescale X (e.g. standardise "
            "its columns)")
    check_label_kind(y, "y")
    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or y_arr.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must be a 1-D array of {X.shape[0]} labels (one per row of X), "
            f"got shape {y_arr.shape}")
    if y_arr.dtype.kind == "f" and not np.all(np.isfinite(y_arr)):
        raise ValueError("y contains NaN or infinite labels")
    if y_arr.dtype == object:
        raise TypeError("y must contain class labels (numbers or strings), got objects")
    _, codes = np.unique(y_arr, return_inverse=True)
    codes = codes.astype(np.int64).ravel()
    counts = np.bincount(codes)
    if counts.size < 2:
        raise ValueError("y must contain at least two classes, found a single class")
    if counts.max() < 2:
        raise ValueError("y needs a class with at least two samples to form a triplet")
    return X, codes


def _check_k(k: Any) -> float:
    if k is None:
        return math.inf
    if isinstance(k, (float, np.floating)) and math.isinf(k) and k > 0:
        return math.inf
    if isinstance(k, (float, np.floating)) and float(k).is_integer():
        k = int(k)
    k = check_int(k, "k", low=1)
    return float(k)


def _n_triplets(codes: np.ndarray, k: float) -> int:
    counts = np.bincount(codes)
    n = codes.size
    same = np.minimum(counts[codes] - 1, k)
    other = np.minimum(n - counts[codes], k)
    return int(np.sum(same * other))


def triplets(X: Any, y: Any, k: float = 10) -> np.ndarray:
    """Triplets ``(i, j, l)`` of section 5: k nearest same-class ``j``, k nearest other-class ``l``.

    For every ``i``: its ``k`` nearest neighbours ``j != i`` in its class and its
    ``k`` nearest points ``l`` of the other classes (Euclidean; ties broken by
    index), and every combination. ``k = inf`` (or ``None``) takes all of them.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Class labels (at least two classes).
    k : int >= 1 or inf

    Returns
    -------
    ndarray of int64, shape (n_t, 3)
        Rows ``(i, j, l)`` sorted by ``i``, then neighbour rank of ``j``, then of ``l``.
    """
    X, codes = _check_xy(X, y)
    return _build_triplets(X, codes, _check_k(k))


def _build_triplets(X: np.ndarray, codes: np.ndarray, k: float) -> np.ndarray:
    n_t = _n_triplets(codes, k)
    if n_t == 0:
        raise ValueError("no triplets: every class needs two samples and another class")
    if n_t > MAX_TRIPLETS:
        raise ValueError(f"k={k:g} gives {n_t:,} triplets (limit {MAX_TRIPLETS:,}); "
                         "choose a smaller k or fewer samples")
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty((n_t, 3), dtype=np.int64)
    pos = 0
    idx = np.arange(n)
    for i in range(n):
        same = idx[(codes == codes[i]) & (idx != i)]
        other = idx[codes != codes[i]]
        if same.size == 0 or other.size == 0:
            continue
        if math.isfinite(k):
            d2 = sq + sq[i] - 2.0 * (X @ X[i])
            if same.size > k:
                same = same[np.argsort(d2[same], kind="stable")[: int(k)]]
            else:
                same = same[np.argsort(d2[same], kind="stable")]
            if other.size > k:
                other = other[np.argsort(d2[other], kind="stable")[: int(k)]]
            else:
                other = other[np.argsort(d2[other], kind="stable")]
        m = same.size * other.size
        out[pos:pos + m, 0] = i
        out[pos:pos + m, 1] = np.repeat(same, other.size)
        out[pos:pos + m, 2] = np.tile(other, same.size)
        pos += m
    return out


def _check_triplets(T: Any, codes: np.ndarray) -> np.ndarray:
    arr = np.asarray(T)
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] == 0:
        raise ValueError(f"triplets must be a non-empty (n_t, 3) integer array, got shape "
                         f"{arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"triplets must contain integer indices, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    n = codes.size
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"triplets must index rows of X (0..{n - 1})")
    i, j, l = arr[:, 0], arr[:, 1], arr[:, 2]
    if np.any(i == j):
        raise ValueError("triplets must have i != j")
    if np.any(codes[i] != codes[j]):
        raise ValueError("triplets must have y[i] == y[j]")
    if np.any(codes[i] == codes[l]):
        raise ValueError("triplets must have y[l] != y[i]")
    return arr


def _check_loss(loss: Any, gamma: Any) -> tuple[str, float, bool]:
    loss = check_choice(loss, "loss", LOSSES)
    gamma = check_scalar(gamma, "gamma", low=0.0, low_inclusive=True)
    if loss == "smoothed_hinge" and gamma <= 0.0:
        raise ValueError("gamma must be > 0 for the smoothed hinge (use loss='hinge' for 0)")
    if loss == "hinge":
        gamma = 0.0
    return loss, gamma, loss == "hinge"


def _check_screening(screening: Any, *, allow_rpb: bool = False) -> tuple[str, ...]:
    if screening is None or screening is False:
        return ()
    if isinstance(screening, str):
        return _screening_from_str(screening, allow_rpb)
    return _screening_kinds(screening, allow_rpb)


@functools.lru_cache(maxsize=64)
def _screening_from_str(screening: str, allow_rpb: bool) -> tuple[str, ...]:
    # "rrpb+pgb", "rrpb, pgb", "none"; cached per string (errors are raised, not cached)
    kinds = tuple(s.strip().lower() for s in screening.replace("+", ",").split(",")
                  if s.strip())
    if kinds in (("none",), ()):
        return ()
    return _screening_kinds(kinds, allow_rpb)


def _screening_kinds(screening: Any, allow_rpb: bool) -> tuple[str, ...]:
    try:
        kinds = tuple(screening)
    except TypeError as exc:
        raise TypeError("screening must be None, a sphere name or a sequence of sphere names"
                        ) from exc
    for s in kinds:
        check_choice(s, "screening", SPHERES)
    if "rpb" in kinds and not allow_rpb:
        raise ValueError("screening='rpb' needs the exact optimum at the previous lambda, "
                         "which no solver has; use 'rrpb' (or path(..., compare=...) for "
                         "RPB's screening rate as a theoretical comparison)")
    return tuple(dict.fromkeys(kinds))


def _check_lam(lam: Any) -> float:
    """``lam > 0`` and large enough that ``1 / lam`` and ``||M||^2 lam`` stay representable."""
    lam = PARAMS["lam"].validate(lam)
    if lam < 1e-100:
        raise ValueError(f"lam={lam:g} is too small: the solver divides by lam (step sizes, "
                         "sphere radii, M = A / lam); use lam >= 1e-100 (rescale X instead)")
    return lam
