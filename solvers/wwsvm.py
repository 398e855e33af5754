r"""Weston–Watkins multiclass SVM by dual block coordinate descent (Walrus).

Model (no offset; append a constant feature if wanted)::

    min_W  P(W) = 1/2 ||W||_F^2 + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i)

with ``W = [w_1 ... w_k]`` (d x k), labels ``y_i`` in {0, ..., k-1}.

Dual: one ``alpha_ij`` in [0, C] per sample i and class j != y_i,

    D(alpha) = sum_{i, j != y_i} alpha_ij - 1/2 ||W(alpha)||_F^2,
    w_j(alpha) = sum_i x_i ([j == y_i] sum_{t != y_i} alpha_it - [j != y_i] alpha_ij),

and ``P(W(alpha)) - D(alpha) >= 0`` is the duality gap certificate.

The solver visits samples in a seeded random order each epoch. For sample i
the block ``b = (alpha_ij)_{j != y_i}`` solves exactly

    min_{b in [0, C]^{k-1}}  1/2 b^T (I + 1 1^T) b - v^T b,
    v_j = (1 - (w'_{y_i} - w'_j)^T x_i) / ||x_i||^2,

``W'`` being ``W`` without sample i's contribution. ``method="walrus"`` solves
it exactly in O(k log k) (Wang & Scott: ``b = clip_C(v - gamma)`` with
``gamma = sum(b)``, the root of a monotone piecewise-linear equation found by
sweeping sorted breakpoints, :func:`solve_subproblem`); ``method="iterative"``
is the Shark-style baseline (clipped Newton steps on the most violating
coordinate, :func:`solve_subproblem_iterative`).

The compiled loops are cached on disk (``numba.njit(cache=True)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from .base import Monitor, Result
from .params import MAX_ITER, TOL, ParamSpec, ParamSpecs
from .prox import _clip_sum_root_sorted, _sort_prefix
from .validation import (
    check_array,
    check_callback,
    check_init,
    check_int,
    check_matrix,
    check_scalar,
)

__all__ = [
    "METHODS",
    "WWSVMResult",
    "dual_objective",
    "primal_objective",
    "solve",
    "solve_subproblem",
    "solve_subproblem_iterative",
    "weights_from_dual",
]

#: The parameters of :func:`solve`, declared once (defaults, ranges, choices, help).
PARAMS = ParamSpecs(
    ParamSpec("C", 1.0, "loss weight", low=0.0),
    ParamSpec("method", "walrus", "block solver: exact Walrus (the paper's) or "
              "Shark-style iterative (the baseline)", choices=("walrus", "iterative")),
    TOL,
    MAX_ITER,
    ParamSpec("seed", 0, "seed of the per-epoch sample order", low=0, low_inclusive=True),
    ParamSpec("shrinking", True, "skip blocks stuck at a vertex of the box (speed only)"),
)
METHODS = PARAMS["method"].choices

#: Shark's inner loop: at most this many steps per class, stop when the largest
#: KKT violation (in margin units) is below the inner tolerance. Shark ties the
#: inner tolerance to its outer accuracy; here it follows the accuracy reached
#: so far, ``min(1e-3, 1e-2 * last relative gap)``, so that the baseline can
#: reach any relative gap Walrus reaches (a fixed tolerance stalls above it).
_INNER_STEPS_PER_CLASS = 10
_INNER_EPS = 1e-3
_INNER_EPS_FACTOR = 1e-2
#: Skipping heuristic: longest skip (epochs) of a sample found at a vertex, and
#: how often the incrementally updated W is recomputed from alpha.
_SKIP_CAP = 8
_RESYNC_EVERY = 10


@dataclass(frozen=True, eq=False, kw_only=True)
class WWSVMResult(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    W : ndarray, shape (d, k)
        Primal weights ``W(alpha)``; predictions are ``argmax_j (X @ W)_j``.
    alpha : ndarray, shape (n, k)
        Dual variables, ``alpha[i, y_i] = 0``.
    gap_ratio : float
        Final gap divided by the first epoch's gap (the paper's stopping
        quantity: its experiments stop at 0.1, 0.01, 0.001).
    classes : int
        Number of classes ``k``.
    """

    W: np.ndarray
    alpha: np.ndarray
    gap_ratio: float
    classes: int

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``X @ W`` (n x k)."""
        X = check_matrix(X, "X", n_cols=self.W.shape[0])
        return X @ self.W

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels ``argmax_j (X @ W)_j``."""
        return np.argmax(self.decision_function(X), axis=1)


# ---------------------------------------------------------------------------
# Objectives
# ---------------------------------------------------------------------------


def _margins_hinge(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Matrix of ``max(0, 1 - (w_{y_i} - w_j)^T x_i)`` with zeros at ``j = y_i``."""
    S = X @ W
    n = X.shape[0]
    sy = S[np.arange(n), y]
    H = np.maximum(0.0, 1.0 - (sy[:, None] - S))
    H[np.arange(n), y] = 0.0
    return H


def primal_objective(W: Any, X: Any, y: Any, C: float) -> float:
    """``1/2 ||W||_F^2 + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i)``."""
    X, y, k = _check_data(X, y)
    W = check_matrix(W, "W", n_rows=X.shape[1])
    C = check_scalar(C, "C", low=0.0)
    return 0.5 * float(np.sum(W * W)) + C * float(_margins_hinge(W, X, y).sum())


def weights_from_dual(alpha: Any, X: Any, y: Any) -> np.ndarray:
    """``W(alpha)``: ``w_j = sum_i x_i ([j == y_i] sum_t alpha_it - [j != y_i] alpha_ij)``."""
    X, y, k = _check_data(X, y)
    alpha = check_matrix(alpha, "alpha", n_rows=X.shape[0])
    return _weights(alpha, X, y)


def _weights(alpha: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    n = X.shape[0]
    coef = -alpha.copy()
    coef[np.arange(n), y] = 0.0
    coef[np.arange(n), y] = -coef.sum(axis=1)
    return X.T @ coef


def dual_objective(alpha: Any, X: Any, y: Any, C: float | None = None) -> float:
    """``sum alpha - 1/2 ||W(alpha)||_F^2``; with ``C`` given, checks feasibility.

    Raises ``ValueError`` if ``alpha`` is outside [0, C] or ``alpha[i, y_i] != 0``.
    """
    X, y, k = _check_data(X, y)
    alpha = check_matrix(alpha, "alpha", n_rows=X.shape[0], n_cols=k)
    if np.any(alpha[np.arange(X.shape[0]), y] != 0.0):
        raise ValueError("alpha[i, y_i] must be 0 for every sample")
    if np.any(alpha < 0) or (C is not None and np.any(alpha > C)):
        raise ValueError("alpha must lie in [0, C]")
    W = _weights(alpha, X, y)
    return float(alpha.sum()) - 0.5 * float(np.sum(W * W))


# ---------------------------------------------------------------------------
# The block subproblem
# ---------------------------------------------------------------------------


@njit(cache=True)
def _walrus_block(v, C, out, work):  # pragma: no cover - compiled
    # Exact minimiser of 1/2 b'(I + 11')b - v'b on [0, C]^m: b = clip(v - gamma)
    # with gamma = sum(b) >= 0 (Lemma A.9). Coordinates with v_j <= 0 are 0, so
    # only the positive entries enter the sorted breakpoint sweep. ``work`` is
    # a scratch buffer of length >= m.
    m = v.shape[0]
    n_pos = 0
    for j in range(m):
        if v[j] > 0.0:
            work[n_pos] = v[j]
            n_pos += 1
    if n_pos == 0:
        for j in range(m):
            out[j] = 0.0
        return 0.0
    _sort_prefix(work, n_pos)
    gamma = _clip_sum_root_sorted(work, n_pos, C, 0.0, 1.0)
    for j in range(m):
        bj = v[j] - gamma
        out[j] = 0.0 if bj < 0.0 else (C if bj > C else bj)
    return gamma


@njit(cache=True)
def _iterative_block(v, C, b, eps, max_steps):  # pragma: no cover - compiled
    # Shark-style: repeatedly take a clipped Newton step (Hessian diagonal 2)
    # on the coordinate with the largest KKT violation of the gradient
    # g = b + sum(b) - v, until the violation is below eps. b is updated in place.
    m = v.shape[0]
    s = 0.0
    for j in range(m):
        s += b[j]
    steps = 0
    for _ in range(max_steps):
        best = 0.0
        idx = -1
        for j in range(m):
            g = b[j] + s - v[j]
            if g < -best and b[j] < C:
                best = -g
                idx = j
            elif g > best and b[j] > 0.0:
                best = g
                idx = j
        if idx < 0 or best < eps:
            break
        g = b[idx] + s - v[idx]
        new = b[idx] - 0.5 * g
        if new < 0.0:
            new = 0.0
        elif new > C:
            new = C
        s += new - b[idx]
        b[idx] = new
        steps += 1
    return steps


def solve_subproblem(v: Any, C: float) -> np.ndarray:
    """Exact minimiser of ``1/2 b^T (I + 1 1^T) b - v^T b`` over ``[0, C]^m`` (Walrus).

    Parameters
    ----------
    v : array_like, shape (m,)
    C : float, > 0

    Returns
    -------
    b : ndarray, shape (m,)
        ``clip(v - gamma, 0, C)`` with ``gamma = sum(b)``; ``b = 0`` when ``max(v) <= 0``.
    """
    v = check_array(v, "v", ndim=1)
    C = check_scalar(C, "C", low=0.0)
    out = np.empty_like(v)
    _walrus_block(v, C, out, np.empty_like(v))
    return out


def solve_subproblem_iterative(
    v: Any, C: float, *, tol: float = 1e-12, max_steps: int | None = None,
    b0: Any = None,
) -> np.ndarray:
    """The same subproblem by Shark-style greedy clipped Newton steps (the baseline).

    Parameters
    ----------
    v : array_like, shape (m,)
    C : float, > 0
    tol : float
        Stop when the largest KKT violation of the gradient is below ``tol``.
    max_steps : int, optional
        Step budget (default ``100 m``).
    b0 : array_like, optional
        Starting point in ``[0, C]^m`` (default 0).
    """
    v = check_array(v, "v", ndim=1)
    C = check_scalar(C, "C", low=0.0)
    m = v.shape[0]
    b = np.zeros(m) if b0 is None else np.clip(check_array(b0, "b0", shape=(m,)), 0.0, C)
    steps = 100 * m if max_steps is None else check_int(max_steps, "max_steps", low=1)
    _iterative_block(v, C, b, float(tol), steps)
    return b


# ---------------------------------------------------------------------------
# The epoch
# ---------------------------------------------------------------------------


@njit(cache=True)
def _epoch(X, y, sqn, Wt, A, order, C, exact, inner_eps, max_steps, skip, wait, skip_cap
           ):  # pragma: no cover - compiled
    # One pass over the samples in ``order``. Skipping heuristic (``skip_cap > 0``):
    # a sample whose block the update left unchanged at a vertex of the box (all
    # entries 0 or C) is skipped for 1, 3, 7, ... (at most ``skip_cap``) epochs;
    # any change resets it. The certificate is always computed on the full
    # problem, so skipping can only change the speed, never the reported gap.
    n, d = X.shape
    k = Wt.shape[0]
    m = k - 1
    v = np.empty(m)
    b = np.empty(m)
    bnew = np.empty(m)
    work = np.empty(m)
    wx = np.empty(k)
    cls = np.empty(m, dtype=np.int64)
    inner_steps = 0
    visited = 0
    for ii in range(n):
        i = order[ii]
        if wait[i] > 0:
            wait[i] -= 1
            continue
        visited += 1
        yi = y[i]
        sq = sqn[i]
        if sq == 0.0:
            # x_i = 0: W does not depend on this block; the dual is maximised at C.
            for j in range(k):
                A[i, j] = C if j != yi else 0.0
            wait[i] = n  # never needs another visit
            continue
        wx[:] = np.dot(Wt, X[i])  # BLAS gemv
        tot = 0.0
        t = 0
        for j in range(k):
            if j != yi:
                cls[t] = j
                b[t] = A[i, j]
                tot += b[t]
                t += 1
        wy = wx[yi] - sq * tot  # w'_{y_i}^T x_i without sample i's contribution
        for t in range(m):
            v[t] = (1.0 - (wy - (wx[cls[t]] + sq * b[t]))) / sq
        if exact:
            _walrus_block(v, C, bnew, work)
        else:
            for t in range(m):
                bnew[t] = b[t]
            inner_steps += _iterative_block(v, C, bnew, inner_eps / sq, max_steps)
        dsum = 0.0
        vertex = True
        for t in range(m):
            delta = bnew[t] - b[t]
            if delta != 0.0:
                vertex = False
                j = cls[t]
                dsum += delta
                for f in range(d):
                    Wt[j, f] -= delta * X[i, f]
                A[i, j] = bnew[t]
            elif bnew[t] != 0.0 and bnew[t] != C:
                vertex = False
        if dsum != 0.0:
            for f in range(d):
                Wt[yi, f] += dsum * X[i, f]
        if skip_cap > 0:
            if vertex:
                skip[i] = min(2 * skip[i] + 1, skip_cap)
                wait[i] = skip[i]
            else:
                skip[i] = 0
    return inner_steps, visited


# ---------------------------------------------------------------------------
# Public solver
# ---------------------------------------------------------------------------


def _check_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, int]:
    X = check_matrix(X, "X")
    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or y_arr.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must be a 1-D array of {X.shape[0]} labels (one per row of X), "
            f"got shape {y_arr.shape}"
        )
    if y_arr.dtype.kind not in "iuf" or y_arr.dtype == bool:
        raise TypeError(f"y must contain integer class labels 0..k-1, got dtype {y_arr.dtype}")
    if y_arr.dtype.kind == "f":
        if not np.all(np.isfinite(y_arr)) or np.any(y_arr != np.round(y_arr)):
            raise ValueError("y must contain integer class labels 0..k-1, found non-integers")
    yi = y_arr.astype(np.int64)
    if yi.min() < 0:
        raise ValueError(f"y must contain class labels 0..k-1, found {int(yi.min())}")
    if np.unique(yi).size < 2:
        raise ValueError("y must contain at least two classes, found a single class")
    return X, np.ascontiguousarray(yi), int(yi.max()) + 1


@njit(cache=True)
def _hinge_and_counts(S, y, A, C):  # pragma: no cover - compiled
    # sum of the WW hinge terms from the scores S = X W, sum(alpha), and the
    # numbers of dual variables at 0, strictly inside (0, C), and at C.
    n, k = S.shape
    hinge = 0.0
    asum = 0.0
    n_zero = 0
    n_c = 0
    for i in range(n):
        yi = y[i]
        sy = S[i, yi]
        for j in range(k):
            if j == yi:
                continue
            h = 1.0 - (sy - S[i, j])
            if h > 0.0:
                hinge += h
            a = A[i, j]
            asum += a
            if a <= 0.0:
                n_zero += 1
            elif a >= C:
                n_c += 1
    return hinge, asum, n_zero, n * (k - 1) - n_zero - n_c, n_c


def _certificate(W: np.ndarray, A: np.ndarray, X: np.ndarray, y: np.ndarray, C: float
                 ) -> tuple[float, float, tuple[int, int, int]]:
    """Primal at ``W``, dual at ``A`` (with ``W = W(A)``), and the dual-variable counts."""
    sqW = float(np.sum(W * W))
    hinge, asum, n_zero, n_free, n_c = _hinge_and_counts(X @ W, y, A, C)
    return 0.5 * sqW + C * hinge, asum - 0.5 * sqW, (n_zero, n_free, n_c)


def solve(
    X: Any,
    y: Any,
    C: float = PARAMS.default("C"),
    *,
    method: str = PARAMS.default("method"),
    tol: float = PARAMS.default("tol"),
    max_iter: int = PARAMS.default("max_iter"),
    seed: int = PARAMS.default("seed"),
    shrinking: bool = PARAMS.default("shrinking"),
    init: WWSVMResult | None = None,
    callback=None,
) -> WWSVMResult:
    r"""Train a Weston–Watkins SVM by dual block coordinate descent.

    Minimises ``1/2 ||W||_F^2 + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i)``.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Samples (finite). Rows equal to zero are handled explicitly.
    y : array_like of int, shape (n,)
        Labels in {0, ..., k-1}, at least two distinct.
    C : float, > 0
        Loss weight.
    method : {"walrus", "iterative"}
        Exact block solver (the paper's) or the Shark-style iterative baseline.
    tol : float
        Stop when ``gap / max(1, |primal|) <= tol`` (checked once per epoch).
    max_iter : int
        Maximum number of epochs (one pass over all samples).
    seed : int
        Seed of the per-epoch random permutation.
    shrinking : bool
        Skip samples whose block sat unchanged at a vertex of ``[0, C]^{k-1}``
        for exponentially growing (at most 8) numbers of epochs. Only the
        speed changes: the gap is always certified on the full problem and
        every sample is revisited at least every 9 epochs.
    init : WWSVMResult, optional
        Warm start: the previous result's ``alpha`` (clipped to the new ``[0, C]``).
    callback : callable, optional
        ``callback(state)`` once per epoch (``state.iterate`` has ``W`` and
        ``alpha``); return ``False`` to stop.

    Returns
    -------
    WWSVMResult
        ``W``, ``alpha``, ``primal``, ``dual``, ``gap`` (certified), ``gap_ratio``,
        ``n_iter``, ``converged``, ``history`` (extras: ``n_zero``, ``n_free``,
        ``n_at_C`` dual variables per epoch, ``gap_ratio``, ``inner_steps``,
        ``n_visited`` samples updated in the epoch).
    """
    X, y, k = _check_data(X, y)
    v = PARAMS.validate(C=C, method=method, tol=tol, max_iter=max_iter, seed=seed,
                        shrinking=shrinking)
    C, method, tol, max_iter, seed, shrinking = (
        v["C"], v["method"], v["tol"], v["max_iter"], v["seed"], v["shrinking"])
    callback = check_callback(callback)
    n, d = X.shape
    init = check_init(init, WWSVMResult, alpha=(n, k))

    if init is None:
        A = np.zeros((n, k))
    else:
        A = np.clip(np.array(init.alpha, dtype=float), 0.0, C)
        A[np.arange(n), y] = 0.0
    sqn = np.einsum("ij,ij->i", X, X)
    W = _weights(A, X, y)
    Wt = np.ascontiguousarray(W.T)
    rng = np.random.default_rng(seed)
    exact = method == "walrus"
    max_steps = _INNER_STEPS_PER_CLASS * max(k - 1, 1)
    inner_eps = _INNER_EPS
    skip = np.zeros(n, dtype=np.int64)
    wait = np.zeros(n, dtype=np.int64)
    cap = _SKIP_CAP if shrinking else 0
    mon = Monitor("wwsvm", tol=tol, max_iter=max_iter, callback=callback)
    first_gap = None
    for epoch in range(1, max_iter + 1):
        order = rng.permutation(n).astype(np.int64)
        inner, visited = _epoch(X, y, sqn, Wt, A, order, C, exact, inner_eps, max_steps,
                                skip, wait, cap)
        W = Wt.T
        primal, dual, counts = _certificate(W, A, X, y, C)
        exact_w = epoch % _RESYNC_EVERY == 0 or epoch == max_iter or (
            max(primal - dual, 0.0) / max(1.0, abs(primal)) <= tol)
        if exact_w:
            # Recompute W(alpha) exactly (drops rounding drift of the incremental
            # updates) before any decision to stop, so the final certificate is exact.
            Wt[:] = _weights(A, X, y).T
            W = Wt.T
            primal, dual, counts = _certificate(W, A, X, y, C)
        gap = max(primal - dual, 0.0)
        if first_gap is None:
            first_gap = gap if gap > 0 else 1.0
        inner_eps = min(_INNER_EPS, _INNER_EPS_FACTOR * gap / max(1.0, abs(primal)))
        n_zero, n_free, n_c = counts
        if mon.record(
            epoch, primal, dual,
            iterate={"W": W.copy(), "alpha": A.copy()} if callback is not None else None,
            n_zero=n_zero, n_free=n_free, n_at_C=n_c,
            gap_ratio=gap / first_gap, inner_steps=inner, n_visited=visited,
        ) and exact_w:
            break
        if mon.stopped_by_callback:
            Wt[:] = _weights(A, X, y).T
            break
    W = np.ascontiguousarray(Wt.T)
    fields = mon.result_fields()
    return WWSVMResult(
        **fields,
        method=method,
        params={k: v[k] for k in ("C", "tol", "max_iter", "seed", "shrinking")},
        W=W,
        alpha=A,
        gap_ratio=fields["gap"] / first_gap,
        classes=k,
    )
