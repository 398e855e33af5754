r"""Weston–Watkins multiclass SVM by dual block coordinate descent (Walrus).

Model (the paper's has no offset; ``fit_intercept=True`` adds LIBLINEAR's
regularised bias feature, see :func:`solve`)::

    min_W  P(W) = 1/2 ||W||_F^2 + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i)

with ``W = [w_1 ... w_k]`` (d x k), one column per class (the distinct labels of
``y``, sorted; any hashable labels, encoded by
:func:`solvers.validation.encode_labels`).

Dual: one ``alpha_ij`` in [0, C] per sample i and class j != y_i,

    D(alpha) = sum_{i, j != y_i} alpha_ij - 1/2 ||W(alpha)||_F^2,
    w_j(alpha) = sum_i x_i ([j == y_i] sum_{t != y_i} alpha_it - [j != y_i] alpha_ij),

and ``P(W(alpha)) - D(alpha) >= 0`` is the duality gap certificate.

The solver visits samples in a seeded random order each epoch. For sample i
the block ``b = (alpha_ij)_{j != y_i}`` solves exactly

    min_{b in [0, C]^{k-1}}  1/2 b^T (I + 1 1^T) b - v^T b,
    v_j = (1 - (w'_{y_i} - w'_j)^T x_i) / ||x_i||^2,

``W'`` being ``W`` without sample i's contribution. ``method="walrus"`` solves
it exactly (Wang & Scott 2021, supplement Lemma A.9: ``b = clip_C(v - gamma)``
with ``gamma = sum(b)``, the root of a monotone piecewise-linear equation found by
sweeping sorted breakpoints, :func:`solve_subproblem`; only the largest entries of
``v`` are selected and sorted, enough to make the root exact; the epochs first try
Newton steps on the root equation from the block's current sum, accepted only when
the root is exact for its own active pattern, which late in a run it nearly always
is); ``method="iterative"``
is the Shark-style baseline (clipped Newton steps on the most violating
coordinate, :func:`solve_subproblem_iterative`).

Free-block acceleration (``accelerate=True``, on by default; ``False`` runs the
paper's algorithm alone). On overlapping classes coordinate descent crawls once
the active set has settled: the dual restricted to its free variables
``F = {(i, j): 0 < alpha_ij < C}`` is a quadratic ``g^T delta - 1/2 ||Z_F delta||^2``
(``Z_F`` has columns ``x_i (e_{y_i} - e_j)^T``) with a large condition number. Once
at most ``d (k - 1)`` variables are free (the rank of ``Z_F``), every few epochs
the solver computes the Newton step ``delta = (Z_F^T Z_F)^{-1} g_F`` exactly (dense
Cholesky of the ``|F| x |F|`` Gram matrix), either projected onto the box or
shortened to stay inside it, whichever raises the dual more, and keeps it only if
the dual increases and the certified gap decreases; otherwise it is undone and the
sweeps continue (with a growing pause between attempts, and never more work on
attempts than on sweeps). The certificate itself is unchanged.

Overlapping classes at large C (``method="ipm"``): the dual has ``n (k - 1)``
variables but ``W`` only ``d k``; when ``d k`` is small a primal-dual
interior-point method (Mehrotra's predictor-corrector, Nocedal & Wright,
*Numerical Optimization*, 2006, Alg. 16.4) solves the primal QP in a few dozen
iterations whatever C is, each one a ``(d k) x (d k)`` Cholesky of
``I + A^T D A`` (built in ``O(n d^2 k)``) plus products with ``X``. Every
iteration is certified by ``alpha = clip(lambda, 0, C)`` (the multipliers of the
margin constraints), which is dual feasible. ``method="auto"`` picks it for small
``d k``.

Slow tails (``method="catalyst"``; ``"auto"`` switches to it): on text and on
overlapping dense classes the dual ascent's tail is long because both ``W(alpha)``
and the dual approach their optimum slowly once more pairs are free than the
free-block step takes (thousands on text). Catalyst (Lin, Mairal & Harchaoui, *A universal catalyst
for first-order optimization*, NeurIPS 2015) wraps the same Walrus epochs in an
accelerated proximal point: outer step ``t`` runs a few epochs on the dual of
``P(W) + kappa/2 ||W - Z_t||_F^2`` (with the samples scaled by ``1 / sqrt(1 + kappa)``
a WW-SVM whose margins are measured from ``kappa Z_t / (1 + kappa)``), warm-started
from the previous ``alpha``, then extrapolates the
prox centre ``Z_{t+1} = W_t + beta (W_t - W_{t-1})`` (reset when the primal at ``W_t``
rose: O'Donoghue & Candes, *Adaptive restart for accelerated gradient schemes*, 2015).
Every ``alpha`` in ``[0, C]`` is feasible for the original dual, so the certificate is
the original problem's ``P(best W) - D(best alpha_t)``; ``W(alpha) = (1 + kappa) W_t -
kappa Z_t`` costs no pass over the data, and the reported dual is recomputed from its
``alpha`` before any stop. The primal candidates are the iterates ``W_t`` (evaluated
at every outer step for the restart test) and the polynomial-decay average of the
``W_t`` (below); the certificate follows the same schedule as Walrus's, counted in
outer steps.

Certificate: ``P(W) - D(alpha)`` is computed (one ``X @ W`` product; for sparse ``X``
row by row, without forming the ``n x k`` scores) every epoch for
the first 5 epochs, then every 1 to 5 epochs, sooner when the gap's geometric trend
predicts the target (``result.n_certificates`` says how many); ``W`` is recomputed
exactly from ``alpha`` before any stop. Its primal candidates are ``W(alpha)`` and,
after the first 5 epochs, the polynomial-decay average of the epochs' ``W(alpha)``
(Shamir & Zhang, ICML 2013, ``Wbar_t = beta_t Wbar_{t-1} + (1 - beta_t) W_t``,
``beta_t = 1 - 10 / (t + 9)``; the averaged output of stochastic dual coordinate
ascent, Shalev-Shwartz & Zhang, JMLR 2013): any ``W`` gives the upper bound
``P(W)``, and the average's hinge terms are often far smaller late in a run, when
coordinate ascent moves the free pairs' margins back and forth around 1. The
average is evaluated at every certificate while it wins, else at fewer (at least 1
in 8); it never changes ``alpha``, so the iterates stay the paper's. The reported
``W`` is the certified candidate with the lowest primal value (a free-block step can
raise the primal of ``W(alpha)`` for a while); so the certified gap never increases
during a run.
BLAS runs single-threaded inside :func:`solve` (``solvers._blas``).

The compiled loops live in ``solvers._wwsvm_kernels`` (``numba.njit(cache=True)``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from . import _wwsvm_kernels as K
from ._blas import single_threaded_blas
from ._ipm import mehrotra_step
from .base import IncompatibleWarmStart, Monitor, Result, SlowProgress, handover
from .params import MAX_ITER, TOL, ParamSpec, ParamSpecs
from .saved import SavedForm, array_specs
from .validation import (
    check_array,
    check_callback,
    check_init,
    check_int,
    check_matrix,
    check_matrix_or_sparse,
    check_scalar,
    encode_labels,
)

__all__ = [
    "BLOCK_METHODS",
    "METHODS",
    "PARAMS",
    "STOPPING",
    "WWSVMResult",
    "auto_method",
    "catalyst_kappa",
    "dual_objective",
    "primal_objective",
    "solve",
    "solve_ipm",
    "solve_subproblem",
    "solve_subproblem_iterative",
    "weights_from_dual",
]

#: The parameters of :func:`solve`, declared once (defaults, ranges, choices, help).
PARAMS = ParamSpecs(
    ParamSpec("C", 1.0, "loss weight", low=0.0),
    ParamSpec("method", "walrus", "exact Walrus block solver (the paper's), the Shark-style "
              "iterative block solver (the baseline), a primal interior-point method "
              "(small d k, any C), Walrus epochs inside Catalyst's accelerated proximal "
              "point (catalyst), or auto (ipm for small d k, else walrus, continued by "
              "catalyst once its tail is slow; the CLI's, the estimator's and the page's "
              "default: it certifies at any C)",
              choices=("walrus", "iterative", "ipm", "catalyst", "auto"),
              user_default="auto"),
    TOL,
    MAX_ITER,
    ParamSpec("seed", 0, "seed of the per-epoch sample order", low=0, low_inclusive=True,
              high=2**64 - 1),  # the uint64 state of the sample order's generator
    ParamSpec("shrinking", True, "skip blocks stuck at a vertex of the box (speed only)"),
    ParamSpec("accelerate", True, "exact Newton step on the free dual variables every few "
              "epochs (off: the paper's sweeps alone)"),
    ParamSpec("stopping", "relative_gap", "stopping rule: relative gap <= tol, or the "
              "paper's gap <= ratio x first-epoch gap", choices=("relative_gap", "gap_ratio")),
    ParamSpec("ratio", 0.0009, "gap ratio of the paper's stopping rule (the authors' code: "
              "0.0009)", low=0.0, high=1.0, high_inclusive=False),
    ParamSpec("fit_intercept", False, "learn a per-class offset b_j as the weights of a "
              "constant feature (LIBLINEAR's regularised bias; off: the paper's model)"),
    ParamSpec("intercept_scaling", 1.0, "value of the constant bias feature (a larger value "
              "regularises the offset less)", low=0.0),
)
METHODS = PARAMS["method"].choices
#: The dual block-coordinate methods (the paper's comparison).
BLOCK_METHODS = ("walrus", "iterative")
STOPPING = PARAMS["stopping"].choices

#: Shark's inner loop: at most this many steps per class, stop when the largest
#: KKT violation (in margin units) is below the inner tolerance. Shark ties the
#: inner tolerance to its outer accuracy; here it follows the accuracy reached
#: so far, ``min(1e-3, 1e-2 * last relative gap)``, so that the baseline can
#: reach any relative gap Walrus reaches (a fixed tolerance stalls above it).
_INNER_STEPS_PER_CLASS = 10
_INNER_EPS = 1e-3
_INNER_EPS_FACTOR = 1e-2
#: Skipping heuristic: longest skip (epochs) of a sample found at a vertex, and
#: how often (in certificates) the incrementally updated W is recomputed from alpha.
_SKIP_CAP = 16
_RESYNC_EVERY = 10
#: Certificate schedule: every epoch for the first ``_CERT_WARMUP`` epochs, then at
#: most every ``_CERT_MAX`` epochs, sooner when the gap's trend predicts the target.
_CERT_WARMUP = 5
_CERT_MAX = 5
#: Free-block steps (``accelerate=True``), measured on blobs n=5000, d=50, k=10:
#: tried only while at most ``_ACCEL_RANK_SLACK * d (k - 1)`` (and ``_ACCEL_MAX_DIM``)
#: variables are free (earlier, the active set is far from settled and a step costs
#: hundreds of epochs); their total modelled cost stays below ``_ACCEL_SHARE`` x the
#: epochs run; after a step that gained less than ``_ACCEL_GOOD`` x what the sweeps
#: would have gained at the same cost, the pause doubles (up to
#: ``_ACCEL_MAX_BACKOFF`` epochs); at most ``_ACCEL_INNER`` projected-Newton
#: iterations per step, on the free variables plus the ``max(_ACCEL_MIN_VIOLATORS,
#: |F| / 4)`` worst KKT violators at a bound. ``_BLAS3_SPEEDUP`` converts dense flops
#: into sweep flops in the (deterministic) cost model; ``_ACCEL_RANK_TOL`` is the
#: pivoted Cholesky's rank tolerance.
_ACCEL_MAX_DIM = 1000
_ACCEL_RANK_SLACK = 1.1
_ACCEL_MAX_BACKOFF = 64
_ACCEL_SHARE = 0.5
_ACCEL_INNER = 20
_ACCEL_RANK_TOL = 1e-11
_BLAS3_SPEEDUP = 6.0
_ACCEL_GOOD = 2.0
_ACCEL_MIN_VIOLATORS = 10
#: Primal candidate of the certificate: the polynomial-decay average of the epochs'
#: ``W(alpha)`` (Shamir & Zhang 2013), ``Wbar_t = beta_t Wbar_{t-1} + (1 - beta_t) W_t``
#: with ``beta_t = 1 - c / (t + c - 1)``, ``c = _AVG_DECAY``.
_AVG_DECAY = 10.0
_AVG_MAX_SKIP = 8
#: ``method="catalyst"``: the prox weight of Catalyst's outer steps,
#: ``kappa = _CATALYST_KAPPA * sqrt(C * r2)`` with ``r2`` the mean ``||x_i||^2`` of the
#: non-zero rows (a proximal problem's dual is conditioned like a WW-SVM with
#: ``C r2 / (1 + kappa)``; measured on the Debian text set, C = 1 and 10), and the Walrus
#: epochs run on each proximal problem before the extrapolation.
_CATALYST_KAPPA = 9.0
_CATALYST_INNER = 2
#: ``method="auto"`` leaves Walrus for Catalyst (from its ``alpha``) at the first
#: certificate where the free pairs are more than the free-block step takes and the
#: relative gap fell by less than ``_SWITCH_RATE`` over the last ``_SWITCH_WINDOW``
#: epochs (:class:`solvers.base.SlowProgress`).
_SWITCH_WINDOW = 10
_SWITCH_RATE = 0.5


@dataclass(frozen=True, eq=False, kw_only=True)
class WWSVMResult(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    W : ndarray, shape (d, k)
        Primal weights, column ``j`` for the label ``classes[j]``: the certified primal
        candidate (``W(alpha)`` or the averaged ``W``) with the lowest primal value among
        the certified epochs (``method="ipm"``: among its primal iterates).
    alpha : ndarray, shape (n, k)
        Dual variables, ``alpha[i, code(y_i)] = 0``.
    gap_ratio : float
        Final gap divided by the first epoch's gap (the paper's stopping
        quantity: its experiments stop at 0.1, 0.01, 0.001).
    classes : ndarray, shape (k,)
        The class labels (distinct values of ``y``, sorted).
    n_classes : int
        Number of classes ``k``.
    n_certificates : int
        How many epochs computed the certificate (the others only swept).
    intercept : ndarray, shape (k,)
        Per-class offsets ``b_j = intercept_scaling * w_{d+1, j}`` (zeros without
        ``fit_intercept``).
    n_accel_steps : int
        Accepted free-block Newton steps (0 with ``accelerate=False``).
    """

    W: np.ndarray
    alpha: np.ndarray
    gap_ratio: float
    classes: np.ndarray
    n_classes: int
    intercept: np.ndarray | None = None
    n_certificates: int = 0
    n_accel_steps: int = 0

    def decision_function(self, X: Any) -> np.ndarray:
        """Class scores ``X @ W + intercept`` (n x k), columns in the order of ``classes``."""
        X = check_matrix_or_sparse(X, "X", n_cols=self.W.shape[0])
        S = np.asarray(X @ self.W)
        return S if self.intercept is None else S + self.intercept

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels ``classes[argmax_j (X @ W + intercept)_j]``."""
        return self.classes[np.argmax(self.decision_function(X), axis=1)]


# ---------------------------------------------------------------------------
# Data and objectives
# ---------------------------------------------------------------------------


def _encode(X: Any, y: Any) -> tuple[Any, np.ndarray, np.ndarray]:
    """Validated ``X`` (dense, or CSR if sparse), label codes ``0..k-1``, the classes."""
    X = check_matrix_or_sparse(X, "X")
    classes, codes = encode_labels(y, "y", size=X.shape[0])
    return X, np.ascontiguousarray(codes), classes


def _with_bias(X: Any, scaling: float) -> Any:
    """``[X, scaling * 1]``: the data with LIBLINEAR's constant bias feature appended."""
    col = np.full((X.shape[0], 1), float(scaling))
    if sp.issparse(X):
        Xb = sp.hstack([X, sp.csr_matrix(col)], format="csr")
        Xb.sort_indices()
        return Xb
    return np.hstack([X, col])


def _check_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Validated ``X``, label codes and the number of classes (used by the reference)."""
    X, codes, classes = _encode(X, y)
    return X, codes, int(classes.shape[0])


def _margins_hinge(W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Matrix of ``max(0, 1 - (w_{y_i} - w_j)^T x_i)`` with zeros at ``j = y_i``."""
    S = np.asarray(X @ W)
    n = X.shape[0]
    sy = S[np.arange(n), y]
    H = np.maximum(0.0, 1.0 - (sy[:, None] - S))
    H[np.arange(n), y] = 0.0
    return H


def primal_objective(W: Any, X: Any, y: Any, C: float) -> float:
    """``1/2 ||W||_F^2 + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i)``.

    Parameters
    ----------
    W : array_like, shape (d, k)
        One weight vector per class (column ``j`` is ``w_j``).
    X : array_like or scipy.sparse matrix, shape (n, d)
        Samples.
    y : array_like, shape (n,)
        Labels (the classes are the sorted distinct labels).
    C : float, >= 0
        Loss weight.

    Returns
    -------
    float
        The primal objective ``P(W)``.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import wwsvm
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([0, 1])
    >>> wwsvm.primal_objective(np.zeros((2, 2)), X, y, C=1.0)  # one unit hinge per sample
    2.0
    """
    X, y, k = _check_data(X, y)
    W = check_matrix(W, "W", n_rows=X.shape[1], n_cols=k)
    C = check_scalar(C, "C", low=0.0)
    return 0.5 * float(np.sum(W * W)) + C * float(_margins_hinge(W, X, y).sum())


def weights_from_dual(alpha: Any, X: Any, y: Any) -> np.ndarray:
    """``W(alpha)``: ``w_j = sum_i x_i ([j == y_i] sum_t alpha_it - [j != y_i] alpha_ij)``.

    Parameters
    ----------
    alpha : array_like, shape (n, k)
        Dual variables, ``alpha[i, y_i] = 0``.
    X : array_like or scipy.sparse matrix, shape (n, d)
        Samples.
    y : array_like, shape (n,)
        Labels.

    Returns
    -------
    ndarray, shape (d, k)
        The primal weights ``W(alpha)`` of the dual point.
    """
    X, y, k = _check_data(X, y)
    alpha = check_matrix(alpha, "alpha", n_rows=X.shape[0], n_cols=k)
    return _weights(alpha, X, y)


def _weights(alpha: np.ndarray, X: Any, y: np.ndarray) -> np.ndarray:  # X dense or CSR
    if sp.issparse(X):  # CSR (validated): one pass over the rows, no n x k temporary
        W = np.empty((X.shape[1], alpha.shape[1]))
        K.weights_sparse(X.indptr, X.indices, X.data, y, np.ascontiguousarray(alpha), W)
        return W
    n = X.shape[0]
    coef = -alpha.copy()
    coef[np.arange(n), y] = 0.0
    coef[np.arange(n), y] = -coef.sum(axis=1)
    return np.asarray(X.T @ coef)


def _row_sq_norms(X: Any) -> np.ndarray:
    """``||x_i||^2`` of every row (dense or CSR)."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=np.float64).ravel()
    return np.einsum("ij,ij->i", X, X)


def _run_epoch(X, y, sqn, Wt, A, order, C, exact, inner_eps, max_steps, skip, wait, cap):
    """One epoch of :func:`solvers._wwsvm_kernels.epoch` (dense) or ``epoch_sparse``."""
    if sp.issparse(X):
        # Wt is then the transposed view of a C-ordered d x k array (see _solve)
        return K.epoch_sparse(X.indptr, X.indices, X.data, y, sqn, Wt.T, A, order, C, exact,
                              inner_eps, max_steps, skip, wait, cap)
    return K.epoch(X, y, sqn, Wt, A, order, C, exact, inner_eps, max_steps, skip, wait, cap)


def _step_to_w(X: Any, y: np.ndarray, ii: np.ndarray, jj: np.ndarray, delta: np.ndarray,
               dWt: np.ndarray) -> None:
    """``dWt = sum_a delta_a (e_{y_i} - e_j) x_i^T`` (dense kernel, or a sparse product)."""
    if not sp.issparse(X):
        K.step_to_w(X, y, ii, jj, delta, dWt)
        return
    s, inv = np.unique(ii, return_inverse=True)
    coef = np.zeros((s.size, dWt.shape[0]))
    np.add.at(coef, (inv, y[ii]), delta)
    np.add.at(coef, (inv, jj), -delta)
    dWt[:] = np.asarray(X[s].T @ coef).T


def dual_objective(alpha: Any, X: Any, y: Any, C: float | None = None) -> float:
    """``sum alpha - 1/2 ||W(alpha)||_F^2``; with ``C`` given, checks feasibility.

    Raises ``ValueError`` if ``alpha`` is outside [0, C] or ``alpha[i, y_i] != 0``.

    Parameters
    ----------
    alpha : array_like, shape (n, k)
        Dual variables, ``alpha[i, y_i] = 0``.
    X : array_like or scipy.sparse matrix, shape (n, d)
        Samples.
    y : array_like, shape (n,)
        Labels.
    C : float, optional
        The box bound; given, ``alpha`` must lie in ``[0, C]``.

    Returns
    -------
    float
        ``D(alpha)``, a lower bound of the optimal value for every feasible ``alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import wwsvm
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]]); y = np.array([0, 1])
    >>> wwsvm.dual_objective(np.zeros((2, 2)), X, y, C=1.0)
    0.0
    """
    X, y, k = _check_data(X, y)
    alpha = check_matrix(alpha, "alpha", n_rows=X.shape[0], n_cols=k)
    if C is not None:
        C = check_scalar(C, "C", low=0.0)
    if np.any(alpha[np.arange(X.shape[0]), y] != 0.0):
        raise ValueError("alpha[i, y_i] must be 0 for every sample")
    if np.any(alpha < 0) or (C is not None and np.any(alpha > C)):
        raise ValueError("alpha must lie in [0, C]")
    W = _weights(alpha, X, y)
    return float(alpha.sum()) - 0.5 * float(np.sum(W * W))


# ---------------------------------------------------------------------------
# The block subproblem
# ---------------------------------------------------------------------------


def solve_subproblem(v: Any, C: float, *, full_sort: bool = False) -> np.ndarray:
    """Exact minimiser of ``1/2 b^T (I + 1 1^T) b - v^T b`` over ``[0, C]^m`` (Walrus).

    Parameters
    ----------
    v : array_like, shape (m,)
    C : float, > 0
    full_sort : bool
        Sort every positive entry of ``v`` (the textbook sweep) instead of the
        default partial selection of the largest ones; both are exact.

    Returns
    -------
    b : ndarray, shape (m,)
        ``clip(v - gamma, 0, C)`` with ``gamma = sum(b)``; ``b = 0`` when ``max(v) <= 0``.
    """
    v = check_array(v, "v", ndim=1)
    C = check_scalar(C, "C", low=0.0)
    out = np.empty_like(v)
    if full_sort:
        K.walrus_block_fullsort(v, C, out, np.empty_like(v))
    else:
        K.walrus_block(v, C, out, np.empty_like(v))
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
    tol : float, > 0
        Stop when the largest KKT violation of the gradient is below ``tol``.
    max_steps : int, optional
        Step budget (default ``100 m``).
    b0 : array_like, optional
        Starting point in ``[0, C]^m`` (default 0).

    Returns
    -------
    ndarray, shape (m,)
        The block ``b`` in ``[0, C]^m`` (the exact minimiser up to ``tol``).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import wwsvm
    >>> wwsvm.solve_subproblem_iterative(np.array([1.0, 0.5]), 1.0)
    array([0.5, 0. ])
    """
    v = check_array(v, "v", ndim=1)
    C = check_scalar(C, "C", low=0.0)
    tol = check_scalar(tol, "tol", low=0.0)
    m = v.shape[0]
    b = np.zeros(m) if b0 is None else np.clip(check_array(b0, "b0", shape=(m,)), 0.0, C)
    steps = 100 * m if max_steps is None else check_int(max_steps, "max_steps", low=1)
    K.iterative_block(v, C, b, float(tol), steps)
    return b


# ---------------------------------------------------------------------------
# Certificate and the free-block acceleration
# ---------------------------------------------------------------------------


def _certificate(Wt: np.ndarray, A: np.ndarray, X: Any, y: np.ndarray, C: float,
                 Ut: np.ndarray | None = None
                 ) -> tuple[float, float, tuple[int, int, int], np.ndarray | None]:
    """Primal at ``W``, dual at ``A`` (``W(A)^T`` is ``Ut``, by default ``Wt``), the
    counts, and ``S = X W``.

    For sparse ``X`` (CSR; ``Wt`` the transposed view of a C-ordered ``d x k``
    array) the scores are formed one row at a time and ``S`` is ``None`` (not
    allocated; the free-block step computes it when it runs).
    """
    sqW = float(np.sum(Wt * Wt))
    sqU = sqW if Ut is None else float(np.sum(Ut * Ut))
    if sp.issparse(X):
        hinge, asum, n_zero, n_free, n_c = K.hinge_and_counts_sparse(
            X.indptr, X.indices, X.data, y, Wt.T, A, C)
        return 0.5 * sqW + C * hinge, asum - 0.5 * sqU, (n_zero, n_free, n_c), None
    S = np.ascontiguousarray(X @ Wt.T)
    hinge, asum, n_zero, n_free, n_c = K.hinge_and_counts(S, y, A, C)
    return 0.5 * sqW + C * hinge, asum - 0.5 * sqU, (n_zero, n_free, n_c), S


def _pair_counts(A: np.ndarray, C: float) -> tuple[int, int, int]:
    """``(at 0, free, at C)`` among the pairs ``j != y_i`` of ``A`` (whose ``A[i, y_i]``
    are 0), as :func:`_certificate` counts them."""
    n, k = A.shape
    n_zero = int(np.count_nonzero(A <= 0.0)) - n
    n_c = int(np.count_nonzero(A >= C))
    return n_zero, n * (k - 1) - n_zero - n_c, n_c


def _primal_at(Wt: np.ndarray, X: Any, y: np.ndarray, C: float) -> float:
    """``P(W)`` for ``Wt = W^T`` in the layout of :func:`_certificate`."""
    if sp.issparse(X):
        hinge = K.hinge_sparse(X.indptr, X.indices, X.data, y, Wt.T)
    else:
        hinge = K.hinge_scores(np.ascontiguousarray(X @ Wt.T), y)
    return 0.5 * float(np.sum(Wt * Wt)) + C * hinge


def _accel_cost(p: int, n_samples_free: int, d: int, inner: int) -> float:
    """Cost of one free-block step in epoch-equivalent flops (Gram matrix, Cholesky).

    Dense BLAS-3 is counted as ``_BLAS3_SPEEDUP`` times more flops per second than the
    sweeps (the ratio was measured on blobs, n = 5000, d = 50, k = 10; the benchmark
    re-measures it); a deterministic model keeps runs reproducible.
    """
    flops = n_samples_free ** 2 * d + inner * (4.0 * p * p + p ** 3 / 3.0)
    return flops / _BLAS3_SPEEDUP + 8.0 * p * d


def _free_gram(X: np.ndarray, y: np.ndarray, ii: np.ndarray, jj: np.ndarray) -> np.ndarray:
    """``Z_F^T Z_F``: ``x_{i_a}^T x_{i_b} <e_{y_{i_a}} - e_{j_a}, e_{y_{i_b}} - e_{j_b}>``."""
    ya = y[ii]
    s, inv = np.unique(ii, return_inverse=True)
    Xs = X[s]
    XX = Xs @ Xs.T
    G = (XX.toarray() if sp.issparse(XX) else XX)[np.ix_(inv, inv)]
    G *= ((ya[:, None] == ya[None, :]).astype(float) - (ya[:, None] == jj[None, :])
          - (jj[:, None] == ya[None, :]) + (jj[:, None] == jj[None, :]))
    return G


def _box_qp(G: np.ndarray, g: np.ndarray, a: np.ndarray, C: float, rank_bound: int
            ) -> tuple[np.ndarray, int]:
    """Approximately maximise ``q(x) = g^T (x - a) - 1/2 (x - a)^T G (x - a)`` on [0, C]^p.

    Projected Newton (Bertsekas 1982) from ``x = a``: Newton step on the variables
    not held at a bound by their gradient (on an independent subset of them when
    their Gram matrix is singular), projected onto the box with a halving search on
    ``q``; a few iterations (the free block is nearly identified).
    """
    x = a.copy()
    r = g.copy()  # gradient of q at x
    q = 0.0
    its = 0
    null_first = False
    for _ in range(_ACCEL_INNER):
        its += 1
        eps = 1e-12 * C
        held = ((x <= eps) & (r <= 0.0)) | ((x >= C - eps) & (r >= 0.0))
        f = np.nonzero(~held)[0]
        if f.size == 0:
            break
        # Pivoted Cholesky (LAPACK dpstrf): when more variables are free than Z_F has
        # rank, Newton's step is taken on a maximal independent subset (the others
        # stay): the exact maximiser of q over that subset.
        Gff = G[np.ix_(f, f)]
        df = None
        rank_deficient = False
        if f.size <= rank_bound:
            c, info = sla.lapack.dpotrf(Gff, lower=1, clean=0)
            if info == 0:
                df = sla.cho_solve((c, True), r[f], check_finite=False)
        if df is None:
            c, piv, rank, info = sla.lapack.dpstrf(Gff, lower=1, tol=_ACCEL_RANK_TOL)
            if info < 0 or rank < 1:
                break
            basis = piv[:rank] - 1
            L = (c[:rank, :rank], True)
            rank_deficient = rank < f.size
            if rank < f.size and null_first:
                # Z_F u = 0 for u = (-G_BB^{-1} G_Bt, e_t), t off the basis: along u
                # W does not move and q is linear with slope r^T u = sum(u); go to
                # the box's edge in the ascending sense (one variable leaves F)
                t_idx = piv[rank] - 1
                u = np.zeros(f.size)
                u[basis] = -sla.cho_solve(L, Gff[basis, t_idx], check_finite=False)
                u[t_idx] = 1.0
                slope = float(r[f] @ u)
                if slope < 0.0:
                    u, slope = -u, -slope
                xf = x[f]
                with np.errstate(divide="ignore", invalid="ignore"):
                    lim = np.where(u > 0, (C - xf) / u, np.where(u < 0, -xf / u, np.inf))
                step = float(lim.min())
                if slope > 1e-14 * (1.0 + abs(q)) and np.isfinite(step) and step > 0.0:
                    x = x.copy()
                    x[f] = np.clip(xf + step * u, 0.0, C)
                    x[f[np.argmin(lim)]] = 0.0 if u[np.argmin(lim)] < 0 else C
                    dx = x - a
                    q = float(g @ dx) - 0.5 * float(dx @ (G @ dx))
                    r = g - G @ dx
                    continue
            df = np.zeros(f.size)
            df[basis] = sla.cho_solve(L, r[f[basis]], check_finite=False)
        if not np.all(np.isfinite(df)):
            break
        # step sizes along the projected arc: halving from the full step down to the
        # longest step inside the box (q rises along a Newton direction up to t = 1)
        xf = x[f]
        with np.errstate(divide="ignore", invalid="ignore"):
            lim = np.where(df > 0, (C - xf) / df, np.where(df < 0, -xf / df, np.inf))
        t_in = float(min(1.0, lim.min()))
        halving = [0.5 ** i for i in range(30)]
        steps = [t for t in halving if t > t_in] + ([t_in] if t_in > 0.0 else []) + [
            t for t in halving if t < t_in]
        improved = False
        for t in steps:
            xn = x.copy()
            xn[f] = np.clip(xf + t * df, 0.0, C)
            dx = xn - a
            qn = float(g @ dx) - 0.5 * float(dx @ (G @ dx))
            if qn > q:
                improved = True
                break
        if not improved:
            if rank_deficient and not null_first:
                null_first = True  # no Newton progress: leave the degenerate face
                continue
            break
        null_first = False
        gain_rel = (qn - q) / max(abs(qn), 1e-300)
        x, q = xn, qn
        r = g - G @ (x - a)
        if gain_rel < 1e-12:
            break
    return x, its


def _free_block_step(X: np.ndarray, y: np.ndarray, A: np.ndarray, Wt: np.ndarray,
                     S: np.ndarray, C: float, n_free: int):
    """A step on the free dual variables that raises the dual, if one is found.

    The dual restricted to the free set ``F`` (other variables fixed) is the box QP
    ``max g^T delta - 1/2 delta^T (Z_F^T Z_F) delta`` over ``0 <= alpha_F + delta <= C``
    with ``g_F = 1 - (s_{i y_i} - s_{ij})`` (``S = X W``); :func:`_box_qp` solves it.
    Returns ``None`` or ``(ii, jj, new_values, dWt)``.
    """
    ii, jj, viol = K.free_pairs(A, y, C, S)
    free = viol == 0.0
    extra = np.nonzero(~free)[0]
    n_extra = min(extra.size, max(_ACCEL_MIN_VIOLATORS, n_free // 4),
                  _ACCEL_MAX_DIM - int(free.sum()))
    if n_extra > 0 and n_extra < extra.size:
        extra = extra[np.argpartition(-viol[extra], n_extra - 1)[:n_extra]]
    elif n_extra <= 0:
        extra = extra[:0]
    keep = np.sort(np.concatenate([np.nonzero(free)[0], extra]))
    ii, jj = ii[keep], jj[keep]
    if ii.shape[0] == 0:
        return None
    g = 1.0 - (S[ii, y[ii]] - S[ii, jj])
    G = _free_gram(X, y, ii, jj)
    a = A[ii, jj]
    x, its = _box_qp(G, g, a, C, X.shape[1] * (Wt.shape[0] - 1))
    if np.array_equal(x, a):
        return None
    dWt = np.empty_like(Wt)
    _step_to_w(X, y, ii, jj, x - a, dWt)
    return ii, jj, x, dWt, its


# ---------------------------------------------------------------------------
# Public solver
# ---------------------------------------------------------------------------


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
    accelerate: bool = PARAMS.default("accelerate"),
    stopping: str = PARAMS.default("stopping"),
    ratio: float = PARAMS.default("ratio"),
    fit_intercept: bool = PARAMS.default("fit_intercept"),
    intercept_scaling: float = PARAMS.default("intercept_scaling"),
    init: WWSVMResult | None = None,
    callback=None,
) -> WWSVMResult:
    r"""Train a Weston–Watkins SVM by dual block coordinate descent.

    Minimises ``1/2 ||W||_F^2 + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i)``
    (Wang & Scott 2021, eq. (P) of the supplement) by maximising its dual one
    sample's block at a time (the supplement's Algorithm with the exact
    subproblem solver, Lemma A.9).

    Parameters
    ----------
    X : array_like or scipy.sparse matrix, shape (n, d)
        Samples (finite). Sparse input (CSR, CSC, COO, ...; 32- or 64-bit indices)
        stays sparse: the epochs, the certificate and the free-block steps touch
        only its non-zeros. Rows equal to zero are handled explicitly (their block
        is at ``C``, their hinge terms are 1).
    y : array_like, shape (n,)
        Labels, any hashable sortable values, at least two distinct; the classes
        are the distinct labels (``{1, 5, 9}`` are three classes).
    C : float, > 0
        Loss weight.
    method : {"walrus", "iterative", "ipm", "catalyst", "auto"}
        ``"walrus"``: dual BCD with the exact block solver (the paper's);
        ``"iterative"``: the same with the Shark-style iterative block solver (the
        paper's baseline); ``"ipm"``: a primal-dual interior-point method on the
        primal QP (Mehrotra predictor-corrector, Nocedal & Wright 2006, Alg. 16.4)
        whose Newton systems are reduced to ``(d k) x (d k)`` normal equations, so
        its cost per iteration is ``O(n d^2 k)`` and its iteration count (15-45 on
        blobs) does not grow with C; needs ``d k <= 3000``; ``max_iter`` counts its
        iterations, ``seed``, ``shrinking``, ``accelerate`` and ``init`` do not
        apply. ``"catalyst"``: Walrus epochs inside Catalyst's accelerated proximal
        point (Lin, Mairal & Harchaoui, NeurIPS 2015): two epochs on the dual of
        ``P(W) + kappa/2 ||W - Z_t||_F^2`` per outer step, ``kappa`` from
        :func:`catalyst_kappa`, then ``Z_{t+1} = W_t + beta (W_t - W_{t-1})`` with
        ``beta = (1 - sqrt(q)) / (1 + sqrt(q))``, ``q = 1 / (1 + kappa)``, restarted
        when the primal rises; certified on the original problem (``alpha`` stays in
        ``[0, C]``) on Walrus's certificate schedule counted in outer steps, with the
        iterate ``W_t`` and the average of the ``W_t`` as primal candidates;
        ``accelerate`` does not apply.
        ``"auto"``: ``"ipm"`` when ``d <= 32`` and ``d k <= 400``, else
        ``"walrus"``, continued by ``"catalyst"`` from its ``alpha`` at the first
        certificate where the free pairs are more than the free-block step takes and
        the relative gap fell by less than half over the last 10 epochs
        (``result.method`` says what ran: ``"ipm"``, ``"walrus"`` or
        ``"walrus+catalyst@k"``, ``k`` the epoch of the switch).
    tol : float
        With ``stopping="relative_gap"``: stop when ``gap / max(1, |primal|) <= tol``.
    max_iter : int
        Maximum number of epochs (one pass over all samples).
    seed : int
        Seed of the per-epoch random permutation.
    shrinking : bool
        Skip samples whose block sat unchanged at a vertex of ``[0, C]^{k-1}``
        for exponentially growing (at most 16) numbers of epochs. Only the
        speed changes: the gap is always certified on the full problem and
        every sample is revisited at least every 17 epochs.
    accelerate : bool
        Every few epochs, take the exact Newton step of the dual restricted to
        its free variables (see the module docstring), kept only when the dual
        increases. ``False`` runs the paper's sweeps alone.
    stopping : {"relative_gap", "gap_ratio"}
        ``"relative_gap"``: the project's rule (``tol``). ``"gap_ratio"``: the
        paper's rule, stop when ``gap <= ratio * (gap after the first epoch)``.
    ratio : float in (0, 1)
        The ratio of the ``"gap_ratio"`` rule (0.0009 in the authors' code).
    fit_intercept : bool
        Learn per-class offsets ``b`` as LIBLINEAR does (``-B``): every sample gets
        a constant feature ``s = intercept_scaling`` whose weights are regularised
        like the others, so the problem solved (and certified) is

            min_{W, v}  1/2 ||W||_F^2 + 1/2 ||v||^2
                        + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i
                                                        - s (v_{y_i} - v_j)),

        with ``b = s v`` (``result.intercept``); the dual is the one above on the
        augmented samples ``(x_i, s)``. ``False`` (default): the paper's model.
    intercept_scaling : float, > 0
        The constant ``s``; a larger ``s`` regularises the offsets less
        (``1/2 ||b||^2 / s^2``).
    init : WWSVMResult, optional
        Warm start: the previous result's ``alpha`` (clipped to the new ``[0, C]``).
    callback : callable, optional
        ``callback(state)`` at every certified epoch (``state.iterate`` has ``W``
        and ``alpha``); return ``False`` to stop.

    Returns
    -------
    WWSVMResult
        ``W``, ``intercept``, ``alpha``, ``classes``, ``primal``, ``dual``, ``gap`` (certified),
        ``gap_ratio``, ``n_iter`` (epochs), ``converged``, ``history`` (one row per
        certified epoch: the first 10 epochs, then every epoch up to every 5th,
        sooner as the target nears; extras ``n_zero``, ``n_free``, ``n_at_C`` dual
        variables, ``gap_ratio``, ``inner_steps``, ``n_visited`` samples updated in
        the epoch, ``accel_gain`` dual increase of the Newton step, 0 if none).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import wwsvm
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((30, 3)); y = np.arange(30) % 3
    >>> res = wwsvm.solve(X, y, C=1.0, method="walrus", tol=1e-6)
    >>> res.stop_reason, res.W.shape
    ('converged', (3, 3))
    >>> bool(res.gap <= 1e-6 * max(1.0, abs(res.primal)))  # the certificate
    True
    """
    X, y, classes = _encode(X, y)
    k = int(classes.shape[0])
    v = PARAMS.validate(C=C, method=method, tol=tol, max_iter=max_iter, seed=seed,
                        shrinking=shrinking, accelerate=accelerate, stopping=stopping,
                        ratio=ratio, fit_intercept=fit_intercept,
                        intercept_scaling=intercept_scaling)
    C, method, tol, max_iter, seed = v["C"], v["method"], v["tol"], v["max_iter"], v["seed"]
    shrinking, accelerate, stopping, ratio = (
        v["shrinking"], v["accelerate"], v["stopping"], v["ratio"])
    callback = check_callback(callback)
    n, d = X.shape
    init = check_init(init, WWSVMResult, alpha=(n, k))
    if init is not None and not np.array_equal(np.asarray(init.classes), classes):
        raise IncompatibleWarmStart(
            "init does not match this problem: its classes differ from the labels of y")
    bias = v["intercept_scaling"] if v["fit_intercept"] else 0.0
    if bias:
        X = _with_bias(X, bias)
    dims = X.shape[1] + (1 if bias else 0)
    auto = method == "auto"
    if auto:
        method = auto_method(dims, k)
    if method == "ipm" and dims * k > _IPM_MAX_DIM:
        raise ValueError(
            f"method='ipm' needs (d + fit_intercept) * k <= {_IPM_MAX_DIM} (its Newton systems "
            f"have that size); got d={X.shape[1]}, k={k}: use method='walrus'")
    with single_threaded_blas():
        if method == "ipm":
            return _solve_ipm(X, y, classes, C, tol, max_iter, stopping, ratio, callback, v,
                              bias)
        if method == "catalyst":
            return _solve_catalyst(X, y, classes, C, tol, max_iter, seed, shrinking,
                                   stopping, ratio, init, callback, v, bias)
        switch = SlowProgress(_SWITCH_WINDOW, _SWITCH_RATE) if auto else None
        out = _solve(X, y, classes, C, method, tol, max_iter, seed, shrinking, accelerate,
                     stopping, ratio, init, callback, v, bias, switch)
        if isinstance(out, _Handoff):
            return _solve_catalyst(X, y, classes, C, tol, max_iter, seed, shrinking, stopping,
                                   ratio, None, callback, v, bias, after=out)
        return out


def solve_ipm(
    X: Any,
    y: Any,
    C: float = PARAMS.default("C"),
    *,
    tol: float = PARAMS.default("tol"),
    max_iter: int = PARAMS.default("max_iter"),
    stopping: str = PARAMS.default("stopping"),
    ratio: float = PARAMS.default("ratio"),
    fit_intercept: bool = PARAMS.default("fit_intercept"),
    intercept_scaling: float = PARAMS.default("intercept_scaling"),
    callback=None,
) -> WWSVMResult:
    r"""Train a Weston–Watkins SVM by the primal interior-point method alone.

    The same problem and certificate as :func:`solve` (``method="ipm"``), with only the
    parameters this method honours: it has no sample order (``seed``), no shrinking,
    no free-block steps and no warm start. Minimises
    ``1/2 ||W||_F^2 + C sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i)`` as the
    QP ``min 1/2 ||W||^2 + C 1^T xi`` s.t. ``(w_{y_i} - w_j)^T x_i + xi_ij >= 1``,
    ``xi >= 0`` by Mehrotra's predictor-corrector (Nocedal & Wright 2006, Alg. 16.4),
    its Newton systems reduced to ``(d k) x (d k)`` normal equations.

    Parameters
    ----------
    X, y, C, tol, stopping, ratio, fit_intercept, intercept_scaling, callback
        As in :func:`solve`.
    max_iter : int
        Maximum number of interior-point iterations.

    Returns
    -------
    WWSVMResult
        As :func:`solve`; ``result.method == "ipm"``.

    Raises
    ------
    ValueError
        When ``(d + fit_intercept) k`` exceeds the size of the Newton systems this
        method accepts (use :func:`solve` with ``method="walrus"``).
    """
    return solve(X, y, C, method="ipm", tol=tol, max_iter=max_iter, stopping=stopping,
                 ratio=ratio, fit_intercept=fit_intercept,
                 intercept_scaling=intercept_scaling, callback=callback)


def _split_bias(W: np.ndarray, bias: float) -> tuple[np.ndarray, np.ndarray]:
    """``(W, intercept)`` from the weights on the augmented data (bias row last)."""
    if not bias:
        return W, np.zeros(W.shape[1])
    return np.ascontiguousarray(W[:-1]), bias * W[-1]


def _result(mon: Any, method: str, v: Mapping[str, Any], W_aug: np.ndarray, bias: float,
            alpha: np.ndarray, first_gap: float, classes: np.ndarray, n_certificates: int,
            n_accel_steps: int) -> WWSVMResult:
    """The :class:`WWSVMResult` of a finished run: the monitor's certificate and history,
    ``W_aug`` (d [+ 1] x k, the bias row last when ``bias``) split into W and the
    intercept, and the solve's validated parameters ``v``. ``alpha`` is handed over
    (:func:`~solvers.base.handover`): the caller must not use it afterwards."""
    W, intercept = _split_bias(np.ascontiguousarray(W_aug), bias)
    fields = mon.result_fields()
    return WWSVMResult(
        **fields,
        method=method,
        params=PARAMS.record(**{key: v[key] for key in (
            "C", "method", "tol", "max_iter", "seed", "shrinking", "accelerate", "stopping",
            "ratio", "fit_intercept", "intercept_scaling")}),
        W=W,
        intercept=intercept,
        alpha=handover(alpha),
        gap_ratio=fields["gap"] / first_gap,
        classes=classes,
        n_classes=int(classes.size),
        n_certificates=n_certificates,
        n_accel_steps=n_accel_steps,
    )


class _Best:
    """The lowest primal value certified so far and its ``W`` (d x k): any ``W`` gives
    an upper bound ``P(W)``, so the result reports the best candidate seen."""

    def __init__(self) -> None:
        self.primal = math.inf
        self.W: np.ndarray | None = None

    def keep(self, primal: float, W_src: np.ndarray) -> float:
        """Record ``(primal, W_src.T)`` if it is the best so far; returns the best value."""
        if primal < self.primal:
            self.primal = primal
            self.W = W_src.T.copy()
        return self.primal

    def current(self) -> np.ndarray:
        """The best ``W`` (d x k); a certificate has been recorded."""
        assert self.W is not None
        return self.W


class _Average:
    """The polynomial-decay average of the epochs' ``W(alpha)`` (Shamir & Zhang 2013;
    for ``method="catalyst"``, of the outer steps' iterates ``W_t``),
    ``Wbar_t = beta_t Wbar_{t-1} + (1 - beta_t) W_t``, ``beta_t = 1 - c / (t + c - 1)``,
    a second primal candidate of the certificate. It is evaluated at every certificate
    while it wins, else at geometrically fewer (at most 1 in ``_AVG_MAX_SKIP``), and not
    before epoch ``_CERT_WARMUP`` (earlier it lags far behind ``W(alpha)``)."""

    def __init__(self, Wt: np.ndarray, sparse: bool) -> None:
        self.W = Wt.T.copy().T if sparse else Wt.copy()  # the layout of Wt
        self.every, self.next = 1, 0

    def update(self, Wt: np.ndarray, epoch: int) -> None:
        beta = 1.0 - _AVG_DECAY / (epoch + _AVG_DECAY - 1.0)  # 0 at epoch 1
        self.W -= Wt  # W = beta W + (1 - beta) Wt, without a temporary
        self.W *= beta
        self.W += Wt

    def offer(self, epoch: int, n_cert: int, primal: float, best: _Best, X: Any,
              y: np.ndarray, C: float) -> float:
        """The best primal after offering the average (when it is due)."""
        if epoch <= _CERT_WARMUP or n_cert < self.next:
            return primal
        p_avg = _primal_at(self.W, X, y, C)
        self.every = 1 if p_avg < primal else min(2 * self.every, _AVG_MAX_SKIP)
        self.next = n_cert + self.every
        return best.keep(p_avg, self.W)


class _CertSchedule:
    """When to certify: every epoch for the first ``_CERT_WARMUP`` epochs, then at most
    every ``_CERT_MAX`` epochs, sooner when the gap's geometric trend predicts the
    target. Also remembers the last certificate (epoch, gap, dual)."""

    def __init__(self) -> None:
        self.next, self.count = 1, 0
        self.last_gap: float | None = None
        self.last_epoch, self.last_dual = 0, -math.inf

    def due(self, epoch: int, max_iter: int) -> bool:
        return epoch >= self.next or epoch >= max_iter

    def plan(self, epoch: int, gap: float, target: float, dual: float) -> None:
        every = 1
        if epoch >= _CERT_WARMUP and self.last_gap is not None and gap > 0:
            rate = math.log(max(self.last_gap, 1e-300) / max(gap, 1e-300)) / max(
                1, epoch - self.last_epoch)
            need = math.log(gap / max(target, 1e-300)) / rate if rate > 0 else math.inf
            every = int(min(_CERT_MAX, max(1.0, need / 2.0)))
        self.last_epoch, self.last_gap, self.last_dual = epoch, gap, dual
        self.next = epoch + every


class _Accel:
    """The free-block (restricted Newton) steps of ``accelerate=True`` and their
    back-off: tried once the free set is near the rank ``d (k - 1)`` of its Gram matrix,
    while their modelled cost stays below ``_ACCEL_SHARE`` x the epochs run; a step that
    gains less than ``_ACCEL_GOOD`` x what the sweeps would have at the same cost doubles
    the pause (up to ``_ACCEL_MAX_BACKOFF`` epochs)."""

    def __init__(self, enabled: bool, n: int, d: int, k: int) -> None:
        self.enabled = enabled
        self.n, self.d, self.k = n, d, k
        self.next, self.backoff, self.count, self.spent = _CERT_WARMUP, 1, 0, 0.0
        self.inner_used = 4  # inner iterations of the last step (its cost model)
        self.max_dim = min(_ACCEL_MAX_DIM, int(_ACCEL_RANK_SLACK * d * (k - 1)) + 50)

    def reaches(self, n_free: int) -> bool:
        """Whether the free-block step can take ``n_free`` free pairs at all."""
        return self.enabled and n_free <= self.max_dim

    def step(self, run: _Run, epoch: int, cert: tuple, gap: float, target: float,
             visited: int) -> tuple[tuple, float]:
        """Try a step when it is due; returns the (possibly new) certificate and the
        dual gain (0 when no step was taken or it was rejected)."""
        primal, dual, counts, S = cert
        p, n, d = counts[1], self.n, self.d
        epoch_flops = 2.0 * d * self.k * (visited + n / _CERT_MAX) + 1.0
        if not (self.enabled and epoch >= self.next and gap > target and 0 < p <= self.max_dim
                and self.spent + _accel_cost(p, min(p, n), d, self.inner_used) / epoch_flops
                <= _ACCEL_SHARE * epoch):
            return cert, 0.0
        X, y, A, Wt = run.X, run.y, run.A, run.Wt
        if S is None:  # sparse X: the certificate did not form the scores
            S = np.ascontiguousarray(X @ Wt.T)
        found = _free_block_step(X, y, A, Wt, S, run.C, p)
        accepted, gain = False, 0.0
        cost_epochs = _accel_cost(p, min(p, n), d, 1) / epoch_flops
        if found is not None:
            ii, jj, new_vals, dWt, self.inner_used = found
            cost_epochs = _accel_cost(p, min(p, n), d, self.inner_used) / epoch_flops
            old_vals = A[ii, jj].copy()
            A[ii, jj] = new_vals
            Wt += dWt
            new = _certificate(Wt, A, X, y, run.C)
            if new[1] > dual + 1e-15 * abs(dual):
                accepted, gain = True, new[1] - dual
                self.count += 1
                # worth repeating soon if it gained more than the sweeps would have in
                # the epochs its cost buys
                sched = run.schedule
                sweep_rate = max(dual - sched.last_dual, 0.0) / max(1, epoch - sched.last_epoch)
                good = gain >= _ACCEL_GOOD * sweep_rate * max(1.0, cost_epochs)
                self.backoff = 1 if good else min(2 * self.backoff, _ACCEL_MAX_BACKOFF)
                cert = (run.best.keep(new[0], Wt), *new[1:])
                run.wait[ii] = 0
                run.skip[ii] = 0
            else:
                A[ii, jj] = old_vals
                Wt -= dWt
        if not accepted:
            self.backoff = min(2 * self.backoff, _ACCEL_MAX_BACKOFF)
        self.spent += cost_epochs
        self.next = epoch + self.backoff
        return cert, gain


def _start_alpha(init: WWSVMResult | None, n: int, k: int, y: np.ndarray, C: float
                 ) -> np.ndarray:
    """The starting dual: zeros, or a warm start's ``alpha`` clipped to ``[0, C]`` with
    ``alpha[i, y_i] = 0``."""
    if init is None:
        return np.zeros((n, k))
    A = np.clip(np.array(init.alpha, dtype=float), 0.0, C)
    A[np.arange(n), y] = 0.0
    return A


class _Run:
    """The state of one dual BCD run (:func:`_solve`): the data, the dual ``A`` and
    ``Wt = W(A)^T`` (k x d; for sparse ``X`` a view of a C-ordered d x k array, the
    sparse epoch's layout), the sweeps' settings and the schedules."""

    def __init__(self, X: Any, y: np.ndarray, k: int, C: float, method: str, seed: int,
                 shrinking: bool, accelerate: bool, init: WWSVMResult | None) -> None:
        n, d = X.shape
        self.X, self.y, self.C = X, y, C
        self.A = _start_alpha(init, n, k, y, C)
        self.sqn = _row_sq_norms(X)
        W = _weights(self.A, X, y)
        self.Wt = np.ascontiguousarray(W).T if sp.issparse(X) else np.ascontiguousarray(W.T)
        self.order = np.arange(n, dtype=np.int64)
        self.rng_state = np.array([seed], dtype=np.uint64)  # splitmix64 state of the order
        self.exact = method == "walrus"
        self.max_steps = _INNER_STEPS_PER_CLASS * max(k - 1, 1)
        self.inner_eps = _INNER_EPS
        self.skip = np.zeros(n, dtype=np.int64)
        self.wait = np.zeros(n, dtype=np.int64)
        self.cap = _SKIP_CAP if shrinking else 0
        self.best = _Best()
        self.average = _Average(self.Wt, sp.issparse(X))
        self.schedule = _CertSchedule()
        self.accel = _Accel(accelerate, n, d, k)

    def sweep(self, epoch: int) -> tuple[int, int]:
        """One epoch over the samples in a fresh random order; updates the average.
        Returns (inner steps, samples visited)."""
        K.shuffle(self.order, self.rng_state)
        out = _run_epoch(self.X, self.y, self.sqn, self.Wt, self.A, self.order, self.C,
                         self.exact, self.inner_eps, self.max_steps, self.skip, self.wait,
                         self.cap)
        self.average.update(self.Wt, epoch)
        return out

    def certify(self, resync: bool = False) -> tuple:
        """``(best primal, dual, counts, S)``; ``resync`` first recomputes ``W(A)``
        exactly (dropping the rounding drift of the incremental updates)."""
        if resync:
            self.Wt[:] = _weights(self.A, self.X, self.y).T
        primal, dual, counts, S = _certificate(self.Wt, self.A, self.X, self.y, self.C)
        return self.best.keep(primal, self.Wt), dual, counts, S


def catalyst_kappa(C: float, r2: float) -> float:
    """The prox weight ``kappa`` of ``method="catalyst"``: ``9 sqrt(C r2)``.

    Parameters
    ----------
    C : float
        Loss weight.
    r2 : float
        Mean squared norm of the non-zero samples (with ``fit_intercept``, of the
        augmented ones).

    Returns
    -------
    float
        ``kappa``; the proximal problems are then conditioned like a WW-SVM with
        ``C r2 / (1 + kappa)`` (0.1 at ``C r2 = 1``, 0.34 at 10).

    Examples
    --------
    >>> from solvers.wwsvm import catalyst_kappa
    >>> catalyst_kappa(1.0, 1.0), round(catalyst_kappa(10.0, 1.0), 2)
    (9.0, 28.46)
    """
    return _CATALYST_KAPPA * math.sqrt(C * r2)


class _Catalyst:
    """The state of a ``method="catalyst"`` run (:func:`_solve_catalyst`).

    Outer step ``t`` approximately solves the proximal problem
    ``h_t(W) = P(W) + kappa/2 ||W - Z_t||_F^2`` by Walrus epochs on its dual. With
    ``s = sqrt(1 + kappa)`` and the samples ``x_i / s``, ``h_t`` is, up to a constant, a
    WW-SVM in ``V = s W`` whose margins are measured from ``s c_t``,
    ``c_t = kappa Z_t / (1 + kappa)``: its dual has the same variables
    ``alpha in [0, C]`` and ``V(alpha) = s c_t + W(alpha) / s``, so the compiled epochs
    of :func:`_run_epoch` run on it unchanged (the block curvature becomes
    ``||x_i||^2 / (1 + kappa)``). The primal iterate is ``W = V / s``, and
    ``W(alpha) = (1 + kappa) W - kappa Z_t`` (the original problem's dual weights) comes
    without a pass over the data. ``Vt`` and ``Wt`` have the layout of :class:`_Run`'s
    ``Wt``.
    """

    def __init__(self, X: Any, y: np.ndarray, k: int, C: float, seed: int,
                 shrinking: bool, A0: np.ndarray, best: _Best | None = None) -> None:
        n, d = X.shape
        self.X, self.y, self.C = X, y, C
        sqn = _row_sq_norms(X)
        r2 = float(np.mean(sqn[sqn > 0])) if np.any(sqn > 0) else 0.0
        self.kappa = catalyst_kappa(C, r2)
        self.s = math.sqrt(1.0 + self.kappa)
        q = 1.0 / (1.0 + self.kappa)
        self.beta = (1.0 - math.sqrt(q)) / (1.0 + math.sqrt(q))
        if sp.issparse(X):  # the scaled samples share X's index arrays
            self.Xs = sp.csr_matrix((X.data / self.s, X.indices, X.indptr), shape=X.shape)
        else:
            self.Xs = X / self.s
        self.sqn = sqn / (1.0 + self.kappa)
        self.A = A0
        U = _weights(self.A, X, y)  # Z_0 = W(alpha_0): then V = s W(alpha_0)
        self.Vt = self._layout(self.s * U, sp.issparse(X))
        self.Zt = self._layout(U, sp.issparse(X))
        self.Wt = np.empty_like(self.Vt)  # the primal iterate V / s, same layout
        self.W_prev = self.Zt.copy()
        self.scratch = np.empty_like(self.Zt)
        self.P_prev = math.inf
        self.order = np.arange(n, dtype=np.int64)
        self.rng_state = np.array([seed], dtype=np.uint64)
        self.skip = np.zeros(n, dtype=np.int64)
        self.wait = np.zeros(n, dtype=np.int64)
        self.cap = _SKIP_CAP if shrinking else 0
        self.best = _Best() if best is None else best
        self.average = _Average(self.Zt, sp.issparse(X))  # of the outer steps' W_t
        self.restarts = 0
        # D(alpha_t) is not monotone along the outer steps: the best one is reported,
        # starting from the starting point's (a handed-over run's last dual)
        self.dual_best = float(self.A.sum()) - 0.5 * float(np.sum(U * U))
        self.A_best = self.A.copy()

    @staticmethod
    def _layout(W: np.ndarray, sparse: bool) -> np.ndarray:
        """``W^T`` (k x d): C-ordered, or for sparse ``X`` the view of a C-ordered d x k."""
        return np.ascontiguousarray(W).T if sparse else np.ascontiguousarray(W.T)

    def sweep(self) -> tuple[int, int]:
        """One Walrus epoch on the dual of the current proximal problem."""
        K.shuffle(self.order, self.rng_state)
        return _run_epoch(self.Xs, self.y, self.sqn, self.Vt, self.A, self.order, self.C,
                          True, _INNER_EPS, 1, self.skip, self.wait, self.cap)

    def iterate(self, outer: int, resync: bool = False) -> float:
        """Set the iterate ``W_t = V / s`` of outer step ``outer``, fold it into the
        average of the outer steps' iterates (:class:`_Average`) and return ``P(W_t)``
        (offered as a primal candidate). ``resync`` first recomputes ``V`` from
        ``alpha`` and ``Z_t`` exactly."""
        if resync:
            U = _weights(self.A, self.X, self.y)
            self.Vt[:] = (self.s * self.kappa / (1.0 + self.kappa)) * self.Zt + U.T / self.s
        np.multiply(self.Vt, 1.0 / self.s, out=self.Wt)
        self.average.update(self.Wt, outer)
        primal = _primal_at(self.Wt, self.X, self.y, self.C)
        self.best.keep(primal, self.Wt)
        return primal

    def certify(self, outer: int, n_cert: int) -> tuple[float, float, tuple[int, int, int]]:
        """``(best primal, best dual, counts)`` of the original problem at the iterate
        of outer step ``outer`` (:meth:`iterate`), after offering the average's primal
        (when due) and the dual at ``alpha``; ``n_cert`` counts the certificates."""
        Ut = (1.0 + self.kappa) * self.Wt - self.kappa * self.Zt
        dual = float(self.A.sum()) - 0.5 * float(np.sum(Ut * Ut))
        counts = _pair_counts(self.A, self.C)
        if dual > self.dual_best:
            self.dual_best = dual
            self.A_best[:] = self.A
        best = self.average.offer(outer, n_cert, self.best.primal, self.best, self.X,
                                  self.y, self.C)
        return best, self.dual_best, counts

    def exact_dual(self) -> None:
        """Recompute the best dual value from its ``alpha`` (before any stop)."""
        U = _weights(self.A_best, self.X, self.y)
        self.dual_best = float(self.A_best.sum()) - 0.5 * float(np.sum(U * U))

    def extrapolate(self, primal: float) -> None:
        """The next prox centre ``Z = W_t + beta (W_t - W_{t-1})``; the momentum restarts
        (``W_{t-1} = W_t``) when the primal at ``W_t`` rose (O'Donoghue & Candes 2015).
        ``V`` moves with the centre so that ``alpha`` keeps its ``W(alpha)``."""
        if primal > self.P_prev:
            self.W_prev[:] = self.Wt
            self.restarts += 1
        Z_new, step = self.scratch, self.W_prev  # in place: no d x k temporaries
        np.subtract(self.Wt, self.W_prev, out=Z_new)
        Z_new *= self.beta
        Z_new += self.Wt
        np.subtract(Z_new, self.Zt, out=step)
        step *= self.s * self.kappa / (1.0 + self.kappa)
        self.Vt += step
        self.scratch, self.Zt = self.Zt, Z_new
        self.W_prev[:] = self.Wt
        self.P_prev = primal


def _record(mon: Monitor, callback: Any, epoch: int, primal: float, dual: float,
            best: _Best, bias: float, A: np.ndarray, counts: tuple[int, int, int],
            gap_ratio: float, inner: int, visited: int, gain: float) -> bool:
    """Record one certified epoch in ``mon`` (the iterate, best ``W`` and ``A``, only
    for a callback); True when the run stops."""
    iterate = None if callback is None else dict(
        zip(("W", "intercept"), _split_bias(best.current().copy(), bias), strict=True),
        alpha=A.copy())
    return mon.record(epoch, primal, dual, iterate=iterate, n_zero=counts[0],
                      n_free=counts[1], n_at_C=counts[2], gap_ratio=gap_ratio,
                      inner_steps=inner, n_visited=visited, accel_gain=gain)


@dataclass
class _Handoff:
    """Where ``method="auto"``'s Walrus run hands over to Catalyst (:func:`_solve`):
    its monitor, dual, best primal candidate, last epoch, first gap and certificates."""

    mon: Monitor
    A: np.ndarray
    best: _Best
    epoch: int
    first_gap: float
    n_cert: int


def _solve_catalyst(X, y, classes, C, tol, max_iter, seed, shrinking, stopping, ratio,
                    init, callback, v, bias, after: _Handoff | None = None) -> WWSVMResult:
    """Walrus epochs inside Catalyst's accelerated proximal point (``_Catalyst``),
    ``_CATALYST_INNER`` epochs per outer step. Every outer step evaluates the primal at
    its iterate (the restart test needs it); the certificate on the original problem
    follows :class:`_CertSchedule` in outer steps. ``after``: continue a Walrus run
    (its history, epochs, dual and best primal) instead of starting."""
    k = int(classes.shape[0])
    if after is None:
        cat = _Catalyst(X, y, k, C, seed, shrinking, _start_alpha(init, X.shape[0], k, y, C))
        mon = Monitor("wwsvm", tol=tol, max_iter=max_iter, callback=callback)
        start, name, n_before, first_gap = 0, "catalyst", 0, None
    else:
        cat = _Catalyst(X, y, k, C, seed, shrinking, after.A, after.best)
        mon, start, n_before = after.mon, after.epoch, after.n_cert
        name, first_gap = f"walrus+catalyst@{after.epoch}", after.first_gap
    sched = _CertSchedule()
    visited, outer = 0, 0
    for epoch in range(start + 1, max_iter + 1):
        visited = cat.sweep()[1]
        last = epoch == max_iter
        if (epoch - start) % _CATALYST_INNER and not last:
            continue
        outer += 1
        due = sched.due(outer, max_iter) or last
        resync = due and ((sched.count + 1) % _RESYNC_EVERY == 0 or last)
        p_iter = cat.iterate(outer, resync)
        if not due:
            cat.extrapolate(p_iter)
            continue
        sched.count += 1
        primal, dual, counts = cat.certify(outer, sched.count)
        gap = max(primal - dual, 0.0)
        first_gap = first_gap if first_gap is not None else (gap if gap > 0 else 1.0)
        target = _target(stopping, tol, ratio, primal, first_gap)
        if gap <= target or resync:  # exact figures before any decision to stop
            cat.exact_dual()
            dual = cat.dual_best
            gap = max(primal - dual, 0.0)
        if stopping == "gap_ratio":
            mon.tol = target / max(1.0, abs(primal))
        if _record(mon, callback, epoch, primal, dual, cat.best, bias, cat.A_best, counts,
                   gap / first_gap, 0, visited, 0.0):
            break
        sched.plan(outer, gap, target, dual)
        cat.extrapolate(p_iter)
    return _result(mon, name, v, cat.best.current(), bias, cat.A_best,
                   1.0 if first_gap is None else first_gap, classes, n_before + sched.count, 0)


def _target(stopping: str, tol: float, ratio: float, primal: float, first_gap: float
            ) -> float:
    """The gap to reach: ``tol max(1, |P|)`` or the paper's ``ratio x`` first gap."""
    return tol * max(1.0, abs(primal)) if stopping == "relative_gap" else ratio * first_gap


def _solve(X, y, classes, C, method, tol, max_iter, seed, shrinking, accelerate, stopping,
           ratio, init, callback, v, bias, switch: SlowProgress | None = None
           ) -> WWSVMResult | _Handoff:
    """Dual block coordinate descent (the supplement's algorithm) with the certificate,
    the averaged-W candidate and the free-block steps as scheduled by :class:`_Run`.
    With ``switch`` (``method="auto"``): hand over to Catalyst (a :class:`_Handoff`) at
    the first certificate where the free pairs are beyond the free-block step's reach
    and the relative gap's progress is slow."""
    run = _Run(X, y, int(classes.shape[0]), C, method, seed, shrinking, accelerate, init)
    mon = Monitor("wwsvm", tol=tol, max_iter=max_iter, callback=callback)
    sched, inner_total = run.schedule, 0
    first_gap: float | None = None
    for epoch in range(1, max_iter + 1):
        inner, visited = run.sweep(epoch)
        inner_total += inner
        if not sched.due(epoch, max_iter):
            continue
        sched.count += 1
        primal, dual, counts, S = run.certify()
        primal = run.average.offer(epoch, sched.count, primal, run.best, X, y, C)
        gap = max(primal - dual, 0.0)
        first_gap = first_gap if first_gap is not None else (gap if gap > 0 else 1.0)
        target = _target(stopping, tol, ratio, primal, first_gap)
        (primal, dual, counts, S), gain = run.accel.step(
            run, epoch, (primal, dual, counts, S), gap, target, visited)
        gap = max(primal - dual, 0.0)
        resync = sched.count % _RESYNC_EVERY == 0 or epoch == max_iter
        if resync or gap <= target:  # W(alpha) exact before any decision to stop
            primal, dual, counts, S = run.certify(resync=True)
            gap = max(primal - dual, 0.0)
            target = _target(stopping, tol, ratio, primal, first_gap)
        exact_w = resync or gap <= target
        run.inner_eps = min(_INNER_EPS, _INNER_EPS_FACTOR * gap / max(1.0, abs(primal)))
        if stopping == "gap_ratio":  # the paper's rule as the Monitor's tolerance
            mon.tol = target / max(1.0, abs(primal))
        if _record(mon, callback, epoch, primal, dual, run.best, bias, run.A, counts,
                   gap / first_gap, inner_total, visited, gain) and exact_w:
            break
        if mon.stopped_by_callback:
            run.Wt[:] = _weights(run.A, X, y).T
            break
        if switch is not None and not run.accel.reaches(counts[1]) and switch.update(
                epoch, gap / max(1.0, abs(primal))):
            return _Handoff(mon, run.A, run.best, epoch, first_gap, sched.count)
        inner_total = 0
        sched.plan(epoch, gap, target, dual)
    return _result(mon, method, v, run.best.current(), bias, run.A,
                   1.0 if first_gap is None else first_gap, classes, sched.count,
                   run.accel.count)


# ---------------------------------------------------------------------------
# Primal interior-point method (method="ipm")
# ---------------------------------------------------------------------------

#: Largest ``d k`` (Newton system size) accepted by ``method="ipm"``.
_IPM_MAX_DIM = 3000
#: ``method="auto"`` runs the interior-point method when ``d <= _AUTO_IPM_D`` and
#: ``d k <= _AUTO_IPM_DIM`` (its iterations then cost a few epochs each, and about
#: 15-45 of them certify any C), otherwise Walrus.
_AUTO_IPM_D = 32
_AUTO_IPM_DIM = 400


def auto_method(dims: int, k: int) -> str:
    """The method ``method="auto"`` runs: ``"ipm"`` when ``dims <= 32`` and
    ``dims k <= 400``, else ``"walrus"``.

    Parameters
    ----------
    dims : int
        Features, plus one with ``fit_intercept``.
    k : int
        Classes.

    Returns
    -------
    str
        ``"ipm"`` or ``"walrus"``.

    Examples
    --------
    >>> from solvers.wwsvm import auto_method
    >>> auto_method(13, 3), auto_method(64, 10)
    ('ipm', 'walrus')
    """
    return "ipm" if dims <= _AUTO_IPM_D and dims * k <= _AUTO_IPM_DIM else "walrus"


def _ipm_normal_matrix(X: Any, y: np.ndarray, Dm: np.ndarray, k: int) -> np.ndarray:
    """``I + A^T diag(D) A`` (dk x dk, W stacked column by column, ``w_j`` = block j).

    Row ``(i, j)`` of ``A`` is ``(e_{y_i} - e_j) kron x_i``, so block ``(a, b)`` is
    ``sum_i M_i[a, b] x_i x_i^T`` with ``M_i = sum_{j != y_i} D_ij (e_{y_i} - e_j)
    (e_{y_i} - e_j)^T``: per class ``a``, ``T_ab = X_a^T diag(D_{., b}) X_a`` adds to
    blocks ``(a, a)`` and ``(b, b)`` and subtracts from ``(a, b)``, ``(b, a)``
    (``n d^2 k`` flops).
    """
    d = X.shape[1]
    N = np.zeros((k, d, k, d))
    for a in range(k):
        rows = np.flatnonzero(y == a)
        if rows.size == 0:
            continue
        Xa = X[rows]
        Da = Dm[rows]  # (n_a, k), zero in column a
        if sp.issparse(Xa):
            T = [np.asarray((Xa.T @ Xa.multiply(Da[:, [b]])).todense()) for b in range(k)]
        else:
            TT = Xa.T @ (Xa[:, :, None] * Da[:, None, :]).reshape(rows.size, d * k)
            T = [TT[:, b::k] for b in range(k)]
        for b in range(k):
            if b == a:
                continue
            N[a, :, a, :] += T[b]
            N[b, :, b, :] += T[b]
            N[a, :, b, :] -= T[b]
            N[b, :, a, :] -= T[b]
    N = N.reshape(k * d, k * d)
    N[np.diag_indices_from(N)] += 1.0
    return N


def _solve_ipm(X, y, classes, C, tol, max_iter, stopping, ratio, callback, v, bias
               ) -> WWSVMResult:
    """Mehrotra predictor-corrector interior-point method on the primal QP.

    ``min 1/2 ||W||^2 + C 1^T xi`` s.t. ``(w_{y_i} - w_j)^T x_i + xi_ij >= 1``,
    ``xi >= 0`` (Nocedal & Wright, *Numerical Optimization*, 2nd ed., 2006, Sec. 16.6,
    Alg. 16.4 with Mehrotra's corrector; Gertz & Wright, OOQP, 2003). The Newton
    system is reduced to the ``dk x dk`` normal matrix ``I + A^T D A`` (Cholesky);
    everything else costs O(nnz(X) k) per iteration. Each iteration is certified:
    ``alpha = clip(lambda, 0, C)`` (the margin constraints' multipliers) is dual
    feasible, so ``P(best W) - D(alpha)`` is a true bound on the suboptimality.
    """
    n, d = X.shape
    k = int(classes.shape[0])
    ar = np.arange(n)
    # the classes j != y_i of each sample, in order: an (n, k - 1) table
    J = np.tile(np.arange(k), (n, 1))
    J = J[J != y[:, None]].reshape(n, k - 1)

    def A_mul(W):  # (A w)_ij = s_{i y_i} - s_ij, S = X W
        S = np.asarray(X @ W)
        return S[ar, y][:, None] - np.take_along_axis(S, J, axis=1), S

    def AT_mul(L):  # A^T lambda = W(lambda), L (n, k - 1)
        coef = np.zeros((n, k))
        np.put_along_axis(coef, J, -L, axis=1)
        coef[ar, y] = L.sum(axis=1)
        return np.asarray(X.T @ coef)

    def full(L):  # (n, k - 1) -> (n, k) with zeros at y_i
        out = np.zeros((n, k))
        np.put_along_axis(out, J, L, axis=1)
        return out

    W = np.zeros((d, k))
    xi = np.full((n, k - 1), 2.0)
    s_ = np.ones((n, k - 1))
    lam = np.full((n, k - 1), 0.5 * C)
    mu = np.full((n, k - 1), 0.5 * C)
    m = n * (k - 1)
    mon = Monitor("wwsvm", tol=tol, max_iter=max_iter, callback=callback)
    best = _Best()
    first_gap: float | None = None
    alpha = full(lam)
    zero_rows = _row_sq_norms(X) == 0.0
    for it in range(1, max_iter + 1):
        AW, S = A_mul(W)
        # certificate: any alpha in [0, C] gives D(alpha) <= optimum <= P(any W); a
        # zero row's block is optimal at C whatever the rest is
        alpha_c = np.clip(lam, 0.0, C)
        alpha_c[zero_rows] = C
        Wa = AT_mul(alpha_c)
        dual = float(alpha_c.sum()) - 0.5 * float(np.sum(Wa * Wa))
        for Wc, Sc in ((W, S), (Wa, None)):
            Sc = np.asarray(X @ Wc) if Sc is None else Sc
            H = np.maximum(0.0, 1.0 - (Sc[ar, y][:, None] - np.take_along_axis(Sc, J, 1)))
            primal = 0.5 * float(np.sum(Wc * Wc)) + C * float(H.sum())
            best.keep(primal, Wc.T)
        primal = best.primal
        gap = max(primal - dual, 0.0)
        if first_gap is None:
            first_gap = gap if gap > 0 else 1.0
        if stopping == "gap_ratio":
            mon.tol = ratio * first_gap / max(1.0, abs(primal))
        alpha = full(alpha_c)
        lo, hi = alpha_c <= 1e-9 * C, alpha_c >= C * (1 - 1e-9)
        n_zero, n_c = int(lo.sum()), int(hi.sum())
        if mon.record(
            it, primal, dual,
            iterate=dict(zip(("W", "intercept"), _split_bias(best.current().copy(), bias),
                             strict=True), alpha=alpha.copy()) if callback is not None else None,
            n_zero=n_zero, n_free=m - n_zero - n_c, n_at_C=n_c, gap_ratio=gap / first_gap,
            inner_steps=0, n_visited=n, accel_gain=0.0,
        ):
            break
        # residuals of the KKT system
        r_w = W - AT_mul(lam)
        r_xi = C - lam - mu
        r_s = AW + xi - 1.0 - s_
        Dm = 1.0 / (xi / mu + s_ / lam)
        try:
            L = sla.cho_factor(_ipm_normal_matrix(X, y, full(Dm), k), lower=True,
                               check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            mon.stop("floor", "the interior-point Newton system became singular")
            mon.record(it, primal, dual)
            break
        dW, dxi, dlam, dmu, ds, t = mehrotra_step((xi, s_, lam, mu, r_w, r_xi, r_s, Dm, L),
                                                  A_mul, AT_mul)
        if not (np.all(np.isfinite(dW)) and t > 1e-12):
            mon.stop("floor", "the interior-point steps stalled at the rounding level")
            mon.record(it, primal, dual)
            break
        W = W + t * dW
        xi = xi + t * dxi
        s_ = s_ + t * ds
        lam = lam + t * dlam
        mu = mu + t * dmu
    return _result(mon, "ipm", v, best.current(), bias, alpha,
                   1.0 if first_gap is None else first_gap, classes, mon.n_iter, 0)


# ------------------------------------------------------------------ the saved model


def _saved_scores(sm: Any, X: Any, _tasks: Any) -> np.ndarray:
    """Scores ``X W (+ b)``, (n, k), from the saved arrays (dense or CSR ``X``)."""
    a = sm.arrays
    S = np.asarray(X @ a["W"])
    for b in ("b", "intercept"):
        if b in a:
            S = S + a[b]
    return S


def _saved_predict(sm: Any, X: Any, tasks: Any) -> np.ndarray:
    """The class of the largest score."""
    classes = sm.class_names if sm.class_names is not None else sm.arrays["classes"]
    return np.asarray(classes)[np.argmax(_saved_scores(sm, X, tasks), axis=1)]


def _saved_check(sm: Any, bad: Any, sizes: Mapping[str, tuple[int, str]]) -> None:
    if sizes["k"][0] < 2:
        raise bad("arrays.W", f"has {sizes['k'][0]} class column(s); a classifier has at "
                              "least two")
    if sm.class_names is None and "classes" not in sm.arrays:
        raise bad("names.class_names", "missing (and no arrays.classes): the classes cannot "
                                       "be named")


def _saved_prepare(res: Any, _est: Any, arrays: dict[str, np.ndarray], _names: Any,
                   reference: Any) -> None:
    if reference is not None:
        raise ValueError("reference points are the metric learner's; this model has none")
    if "classes" not in arrays and hasattr(res, "classes"):
        arrays["classes"] = np.asarray(res.classes)


#: How a fitted WW-SVM is saved and predicts (:class:`solvers.saved.SavedForm`).
SAVED_FORM = SavedForm(
    arrays=array_specs(("W", "d k", True), ("classes", "k", False, "biufU"),
                       ("intercept", "k"), ("b", "k")),
    names={"feature_names": "d", "class_names": "k", "task_names": None},
    features=("W", 0), decide=_saved_scores, predict=_saved_predict, sparse=True,
    check=_saved_check, prepare=_saved_prepare)
