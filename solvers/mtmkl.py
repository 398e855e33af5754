r"""Multi-task multiple kernel learning: lp-norm MKL over task-similarity matrices.

Widmer, Kloft & Rätsch, "Multi-task multiple kernel learning" (Problems 1–3,
Algorithm 1, Algorithm E.1). Samples ``x_i`` with labels ``y_i`` in {-1, +1}
belong to tasks ``tau(i)`` in {0, ..., T-1}. There are M "views", each a
feature map ``phi_m`` (``kernel="linear"``: ``phi_m(x) = x`` for every view,
or a precomputed kernel ``k_m``) with a kernel-side task similarity
``G_m = Q_m^{-1}`` (T x T, PSD, possibly singular: then ``Q_m`` is its
pseudo-inverse and ``W_m`` must lie in its range). The multitask kernels are
``k~_m(x_i, x_j) = G_m[tau(i), tau(j)] k_m(x_i, x_j)``.

Primal (Problem 1, hinge loss)::

    min_{theta in Theta_p, W}  1/2 sum_m ||W_m||^2_{Q_m} / theta_m
                               + C sum_i max(0, 1 - y_i sum_m <w_{m tau(i)}, phi_m(x_i)>),
    ||W_m||^2_{Q_m} = tr(W_m Q_m W_m^T),   Theta_p = {theta >= 0, ||theta||_p <= 1},  p >= 1.

Dual (Problem 3), ``0 <= alpha <= C``::

    D(alpha) = sum_i alpha_i - 1/2 || (s_m(alpha))_m ||_{p*},   p* = p / (p - 1),
    s_m(alpha) = alpha^T Y K~_m Y alpha = tr(Z G_m Z^T),
    Z_t = sum_{i in task t} alpha_i y_i phi(x_i)

(``p = 1`` gives ``p* = inf``, the max norm: sparse MKL; ``p = inf`` gives
``p* = 1``, all views at weight 1). Representer theorem (F.1)::

    w_mt = theta_m sum_i G_m[tau(i), t] alpha_i y_i phi_m(x_i),
    ||W_m||^2_{Q_m} = theta_m^2 s_m(alpha)      (no Q_m needed).

Certificate. For any ``alpha`` in [0, C]^n and ``theta`` in Theta_p,
``P(W(alpha, theta), theta) >= D_theta(alpha) >= D(alpha)`` where
``D_theta(alpha) = sum alpha - 1/2 <theta, s(alpha)>`` is the dual of the SVM
with the fixed kernel ``sum_m theta_m K~_m`` (Problem 2's inner problem) and
``D`` minimises it over Theta_p (Hölder). Every recorded gap
``P(W(alpha, theta), theta) - D(alpha)`` therefore bounds the suboptimality of
the returned ``(W, theta)``. With ``fix_theta=True`` the problem is that
fixed-kernel SVM and the gap is ``P - D_theta``.

Algorithm E.1 (``method="e1"``, the paper's): one epoch of dual coordinate
ascent over ``alpha`` with the analytic step (E.3) and the incremental weight
update (E.4) (compiled, ``solvers._mtmkl_kernels``); after the epoch the
primal ``o`` is computed and, if it decreased since the previous epoch, the
theta-step (E.1)

    theta_m = a_m^{1/(p+1)} / ( sum_m' a_m'^{p/(p+1)} )^{1/p},   a_m = ||W_m||^2_{Q_m},

followed by the rescaling (E.5) ``w_mt <- (theta_m^new / theta_m^old) w_mt``
(done as ``w_mt = theta_m^new (Z G_m)_t``, exact and safe at ``theta_m = 0``).
Start: ``alpha = 0``, ``theta_m = M^{-1/p}`` (on the unit p-sphere).
``method="alternating"`` is Algorithm 1 (the MKL "wrapper" the paper improves
on): the W-step solves the fixed-theta SVM to a relative gap
``min(1e-2, 0.1 x the last outer relative gap)`` before every theta-step, by
coordinate-ascent epochs each followed, while the tolerance is not met, by
conjugate gradients on the free face of the box (``_face_step``): the
dual is flat along the null space of ``Y K~ Y`` (more samples than feature
dimensions), where an epoch advances only by ``g_i / q_ii``.

``method="newton"``: Algorithm 1 with a projected truncated-Newton W-step
(``_newton_face_step``). Each round of the W-step is a coordinate epoch over a
working set (all samples but those held at a bound by a gradient larger than the
largest KKT violation: their coordinate steps are zero) followed, while the inner
tolerance is not met, by at most 10 conjugate-gradient steps on the Newton system
of the free coordinates, ``Q_FF d = g_F``, and a projected Armijo search along
``clip(alpha + t d, 0, C)`` (Bertsekas, SIAM J. Control Optim. 20(2), 1982), which
lets many coordinates reach their bounds in one step where ``_face_step`` stops at
the first. With more free coordinates than the rank bound ``T d`` of ``Q`` (linear
features) the face is singular and the round takes ``_face_step`` instead. In factor
form a round's inner gap is computed from the ``V = U^T Z`` the epoch and the step
kept (no task sums over all samples) and from decision values on the working set
only: the samples outside it, held at ``C`` or ``0`` by their gradient, add their
hinge ``1 - y_i f_i`` (at ``C``) through per-task sums of ``y_i x_i`` as long as they
stay held, which is all the round's stopping test assumes; every W-step ends on an
exact refresh, so the theta-step and the certificate see the exact state. The
theta-steps and the inner tolerances are Algorithm 1's.

``method="ipm"`` (linear features, ``d sum_m rank(G_m) <= 1000``): Algorithm 1 whose
W-step is solved in the feature space of the multitask kernel. With ``G_m = L_m
L_m^T`` (its factors, or its eigenvectors scaled by the square roots of its positive
eigenvalues) and ``psi_i = (L[tau_i, c] x_i)_c``, ``K~_theta = Psi diag(theta[view])
Psi^T``, so the fixed-theta SVM is the primal QP ``min 1/2 |w|^2 + C sum_i max(0, 1 -
y_i b_i^T w)`` in ``r = d sum_m rank(G_m)`` variables, ``b_i = sqrt(theta[view]) psi_i``,
solved by Mehrotra's predictor-corrector (Nocedal & Wright, *Numerical Optimization*,
2006, Alg. 16.4; one ``r x r`` Cholesky per iteration). Its multipliers ``alpha =
clip(lambda, 0, C)`` are dual feasible; the W-step stops when they and ``W(alpha)``
have a relative gap of ``0.1 tol``, then the theta-step and the certificate follow
as in Algorithm 1 from that ``alpha``. Its iterations do not depend on the
conditioning of ``Q`` (unscaled features such as grams next to millimetres make
coordinate epochs crawl); at ``p = 1`` the alternation itself converges slowly where
a weight tends to 0, as Algorithm 1's does.

``method="auto"``: Algorithm E.1 until its progress per epoch falls below a
measured rate (the relative gap fell by less than half over the last 10 epochs),
then the W-steps of ``method="newton"`` (above) from that point, a theta-step
after each; a Newton W-step still short of its tolerance after 50 epochs is finished,
with every later W-step, by ``method="ipm"``'s where that applies (below). The
result's ``method`` names what ran (``"e1"``, ``"e1+newton@k"`` when the switch
happened at iteration ``k``, then ``"+ipm@j"`` from iteration ``j``);
``params["method"]`` keeps ``"auto"``. Why E.1's tail is slow on unscaled real data
(School, penguins-like data): with theta held at E.1's own weights the coordinate epochs alone need
thousands of epochs between relative gaps 1e-6 and 1e-8 (the free face of
``Y K~_theta Y`` is badly conditioned), so the tail is the dual coordinate
ascent's linear rate close to 1, not the theta-step (whose fixed-point iteration
contracts by ``2 / (p + 1)``).

Similarities in factor form, ``G_m = U_m U_m^T`` (:class:`FactoredSimilarities`,
e.g. one 0/1 indicator per node of a task tree), or dense ones recognised as
rank one or diagonal, are used as such (``structure="auto"``): no
eigendecomposition to check them, ``s_m = ||U_m^T Z||_F^2``, and the epoch
keeps ``V = U^T Z`` so that a step touches only the factor columns of its
task; the iterates are those of the dense path (``structure="dense"``).

With precomputed kernels the decision values ``f_i`` are kept per sample
instead of w (O(n) per coordinate step). The loops are compiled with numba
(``cache=True``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.linalg as sla

from ._blas import with_blas_policy
from ._ipm import mehrotra_step
from ._mtmkl_kernels import (
    _add_task_kernel,
    _decision_linear,
    _decision_rows,
    _epoch_factored,
    _epoch_kernel,
    _epoch_linear,
    _factor_combine,
    _factor_project,
    _factor_qprod_rows,
    _factor_weights,
    _gram_rows,
    _kernel_task_products,
    _kkt_scan,
    _small_matmul,
    _task_decision,
    _task_sums,
    _task_sums_rows,
)
from .base import Monitor, Result, SlowProgress, relative_gap
from .params import MAX_ITER, TOL, ParamSpec, ParamSpecs
from .saved import SavedForm, array_specs, scores_per_task, sign_classes
from .validation import (
    check_array,
    check_binary_labels,
    check_callback,
    check_choice,
    check_init,
    check_int,
    check_magnitude,
    check_matrix,
    check_psd,
    check_vector,
)

__all__ = [
    "METHODS",
    "PARAMS",
    "STRUCTURES",
    "FactoredSimilarities",
    "MTMKLResult",
    "dual_norm",
    "dual_objective",
    "primal_objective",
    "solve",
    "theta_step",
    "uniform_theta",
    "view_norms",
    "weights_from_dual",
]

#: The parameters of :func:`solve`, declared once (defaults, ranges, choices, help).
PARAMS = ParamSpecs(
    ParamSpec("C", 1e-3, "loss weight", low=0.0),
    ParamSpec("p", 2.0, "norm of the kernel-weight constraint ||theta||_p <= 1 (inf allowed)",
              low=1.0, low_inclusive=True, allow_inf=True),
    ParamSpec("kernel", "linear", '"linear" (phi_m(x) = x) or precomputed PSD kernel(s)',
              kind="object"),
    ParamSpec("method", "e1", "Algorithm E.1 (interleaved), Algorithm 1 (exact W-step), "
              "auto (E.1 until its progress per epoch stalls, then newton's W-steps, "
              "then ipm's where a Newton W-step crawls; "
              "the CLI's, estimator's and page's default: E.1 alone can stall on real "
              "data), newton (Algorithm 1 with a projected truncated-Newton W-step), or "
              "ipm (Algorithm 1 with exact W-steps by a primal interior-point method in the "
              "multitask kernel's feature space: linear kernel, small d times the "
              "similarities' ranks)",
              choices=("e1", "alternating", "auto", "newton", "ipm"), user_default="auto"),
    ParamSpec("structure", "auto", '"auto": similarities given in factor form, or dense ones '
              "that are rank one or diagonal (e.g. a tree's 0/1 node matrices), run in factor "
              'form; "dense": every similarity as a dense T x T matrix',
              choices=("auto", "dense")),
    ParamSpec("fix_theta", False, "keep theta fixed (at theta0 or uniform): a fixed-kernel "
              "SVM, e.g. Vanilla MTL"),
    ParamSpec("theta0", None, "starting kernel weights (default uniform M^(-1/p))",
              kind="object"),
    TOL,
    replace(MAX_ITER, default=20_000),
    ParamSpec("seed", 0, "seed of the sample order", low=0, low_inclusive=True),
)
METHODS = PARAMS["method"].choices
STRUCTURES = PARAMS["structure"].choices
#: Largest admissible magnitude of a similarity or kernel entry: products of two such
#: entries (and sums of them) stay finite in float64.
_MAX_ENTRY = 1e150

#: Factor form: ``W`` (M x T x d) is materialised up to this many entries (else None;
#: ``task_weights`` and :func:`weights_from_dual` remain).
_MAX_W_ENTRIES = 2**25

#: Algorithm 1's exact W-step: inner relative-gap target and epoch budget.
_INNER_TOL_MAX = 1e-2
_INNER_TOL_FACTOR = 0.1
_INNER_MAX_EPOCHS = 10_000
#: Conjugate-gradient steps on the free face after each W-step epoch (``_face_step``).
_FACE_MAX_CG = 50
#: ``method="newton"``: conjugate-gradient steps per W-step Newton direction
#: (``_newton_face_step``), the Armijo constant and the halvings of its projected search.
_NEWTON_MAX_CG = 10
_ARMIJO = 1e-4
_MAX_BACKTRACK = 40
_BACKTRACK = 0.5  # the step factor of the projected search
#: ``method="auto"``: E.1 until the relative gap fell by less than ``_SWITCH_RATE`` over
#: the last ``_SWITCH_WINDOW`` epochs, then Algorithm 1's exact W-steps.
_SWITCH_WINDOW = 10
_SWITCH_RATE = 0.5
#: The methods that take an (almost) exact W-step before every theta-step (Algorithm 1).
_EXACT = ("alternating", "newton", "ipm")
#: ``method="ipm"``: largest feature dimension ``d sum_m rank(G_m)`` (its Newton systems
#: have that size), the interior-point iterations per W-step, and the W-step's relative
#: gap as a fraction of ``tol``.
_IPM_MAX_DIM = 1000
#: ``method="auto"``: a Newton W-step still short of its tolerance after this many
#: epochs is finished, with every later W-step, by ``method="ipm"``'s (where it applies).
_IPM_AFTER_EPOCHS = 50
_IPM_MAX_ITER = 200
_IPM_INNER = 0.1


# ---------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, kw_only=True)
class MTMKLResult(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    theta : ndarray, shape (M,)
        View (kernel) weights; ``||theta||_p = 1`` after a theta-step. Read
        them with ``p``: for ``p = 2`` the squares, not the weights, sum to 1.
    alpha : ndarray, shape (n,)
        Dual variables in ``[0, C]``.
    W : ndarray, shape (M, T, d), or None
        ``W[m, t] = w_mt`` by the representer theorem (F.1) (linear features);
        ``None`` with precomputed kernels, and in factor form when
        ``M T d > 2**25`` (then :func:`weights_from_dual` gives it).
    task_weights : ndarray, shape (T, d), or None
        ``sum_m w_mt``, the weight vector of each task (linear features).
    similarity : ndarray, shape (T, T)
        Learned kernel-side task similarity ``sum_m theta_m G_m``.
    view_norms : ndarray, shape (M,)
        ``s_m = alpha^T Y K~_m Y alpha``; ``||W_m||^2_{Q_m} = theta_m^2 s_m``.
    p : float
        The norm of the constraint ``||theta||_p <= 1``.
    kernel : {"linear", "precomputed"}
    y, tasks : ndarray, shape (n,)
        Training labels and task ids (the kernel decision function needs them).
    G : ndarray, shape (M, T, T), or FactoredSimilarities
        The task-similarity matrices (in factor form when the solve used it).
    fixed_theta : bool
        ``True`` when theta was held fixed (e.g. the Vanilla MTL baseline).
    shared_kernel : bool
        ``True`` when one feature map / kernel serves every view.
    """

    theta: np.ndarray
    alpha: np.ndarray
    W: np.ndarray | None
    task_weights: np.ndarray | None
    similarity: np.ndarray
    view_norms: np.ndarray
    p: float
    kernel: str
    y: np.ndarray
    tasks: np.ndarray
    G: np.ndarray | FactoredSimilarities
    fixed_theta: bool
    shared_kernel: bool

    def arrays(self) -> dict[str, Any]:
        """The solution arrays; similarities in factor form as their factor (a mapping)."""
        out = super().arrays()
        if isinstance(self.G, FactoredSimilarities):
            out["G"] = self.G.to_dict()
        return out

    @property
    def n_tasks(self) -> int:
        return int(self.G.shape[1])

    @property
    def n_views(self) -> int:
        return int(self.G.shape[0])

    @property
    def theta_norm(self) -> float:
        """``||theta||_p`` (1 at a theta-step's output)."""
        return _pnorm(self.theta, self.p)

    def theta_summary(self, names: list[str] | None = None, top: int = 10) -> str:
        """The largest weights as text, with the norm they are normalised in."""
        names = names or [f"view {m}" for m in range(self.n_views)]
        idx = np.argsort(-self.theta)[:top]
        body = ", ".join(f"{names[m]}: {self.theta[m]:.4g}" for m in idx)
        return (f"theta (p = {self.p:g}, ||theta||_{self.p:g} = {self.theta_norm:.4g}, "
                f"sum = {self.theta.sum():.4g}): {body}")

    def decision_function(self, X_new: Any, tasks_new: Any) -> np.ndarray:
        """Decision values ``f_t(x) = sum_m <w_mt, phi_m(x)>`` for new samples.

        Parameters
        ----------
        X_new : array_like
            With ``kernel="linear"``: features, shape (n_new, d). With
            precomputed kernels: the cross-kernels ``k_m(x_new, x_train)``,
            a list of M arrays of shape (n_new, n_train) (one array if a
            single kernel was shared by all views), in the training order.
        tasks_new : array_like of int, shape (n_new,)
            Task of each new sample, in ``0..T-1``.
        """
        T = self.n_tasks
        if self.kernel == "linear":
            assert self.task_weights is not None  # kept for linear features
            Xn = check_matrix(X_new, "X_new", n_cols=self.task_weights.shape[1])
            tn = _check_tasks(tasks_new, Xn.shape[0], T, "tasks_new")
            out = np.empty(Xn.shape[0])
            _decision_linear(Xn, tn, np.ascontiguousarray(self.task_weights), out)
            return out
        n = self.alpha.shape[0]
        a = self.alpha * self.y
        if isinstance(X_new, np.ndarray) and X_new.ndim == 2:
            Ks = [X_new]
        elif isinstance(X_new, (list, tuple)) or (isinstance(X_new, np.ndarray)
                                                  and X_new.ndim == 3):
            Ks = list(X_new)
        else:
            raise TypeError("X_new must be the cross-kernel(s) k_m(x_new, x_train): a list of "
                            "arrays of shape (n_new, n_train) for a model trained on "
                            "precomputed kernels")
        want = 1 if self.shared_kernel else self.n_views
        if len(Ks) != want:
            raise ValueError(f"X_new must hold {want} cross-kernel(s) (one per training "
                             f"kernel), got {len(Ks)}")
        Ks = [check_matrix(K, f"X_new[{k}]", n_cols=n) for k, K in enumerate(Ks)]
        n_new = Ks[0].shape[0]
        for k, K in enumerate(Ks):
            if K.shape[0] != n_new:
                raise ValueError(f"X_new[{k}] has {K.shape[0]} rows, X_new[0] has {n_new}")
        tn = _check_tasks(tasks_new, n_new, T, "tasks_new")
        if self.shared_kernel:
            return (Ks[0] * self.similarity[tn][:, self.tasks]) @ a
        out = np.zeros(n_new)
        for m in range(self.n_views):
            if self.theta[m] != 0.0:
                out += self.theta[m] * ((Ks[m] * self.G[m][tn][:, self.tasks]) @ a)
        return out

    def predict(self, X_new: Any, tasks_new: Any) -> np.ndarray:
        """Labels ``sign(f)`` in {-1, +1} (0 maps to +1)."""
        return np.where(self.decision_function(X_new, tasks_new) >= 0.0, 1.0, -1.0)


# ---------------------------------------------------------------------------
# Similarities in factor form
# ---------------------------------------------------------------------------


class FactoredSimilarities:
    r"""Task similarities given by factors: ``G_m = U_m U_m^T``, ``U_m`` of shape (T, r_m).

    PSD by construction (no eigendecomposition to check them). The factor
    columns of all views are stacked into one sparse ``U`` (T x R, only the
    nonzero entries kept, stored by task rows), so that the solver's
    coordinate step touches only the columns a task belongs to (see
    ``solvers._mtmkl_kernels``). The natural input for a task tree: one
    0/1 indicator per node (:meth:`from_groups`), ``G_node = 1_S 1_S^T``.

    Behaves like the stack of dense matrices where one is asked for:
    ``len``, ``G[m]`` (the dense T x T ``G_m``), iteration, ``shape``
    ``(M, T, T)`` and ``np.asarray(G)``.

    Parameters
    ----------
    factors : sequence of array_like, each (T,) or (T, r_m)
        One factor per view; a vector is one column (rank one). ``r_m = 0``
        (an empty factor, ``G_m = 0``) is allowed.
    """

    def __init__(self, factors: Any) -> None:
        if isinstance(factors, np.ndarray) and factors.ndim == 1:
            raise TypeError("factors must be a sequence of M factors U_m (T x r_m), got "
                            "one vector: wrap it in a list")
        mats = list(factors)
        if not mats:
            raise ValueError("factors must contain at least one factor U_m")
        T: int | None = None
        rows, cols, vals, view = [], [], [], []
        R = 0
        for m, U in enumerate(mats):
            U = np.asarray(U, dtype=float)
            if U.ndim == 1:
                U = U[:, None]
            if U.ndim != 2:
                raise ValueError(f"factors[{m}] must be a (T,) or (T, r) array, got shape "
                                 f"{U.shape}")
            if T is None:
                T = U.shape[0]
                if T < 1:
                    raise ValueError("factors[0] must have at least one row (one per task)")
            if U.shape[0] != T:
                raise ValueError(f"factors[{m}] must have {T} rows (one per task), got "
                                 f"shape {U.shape}")
            if not np.all(np.isfinite(U)):
                raise ValueError(f"factors[{m}] contains NaN or infinite values")
            big = float(np.max(np.abs(U))) if U.size else 0.0
            if big**2 > _MAX_ENTRY:
                raise ValueError(f"factors[{m}] has entries up to {big:.3g}: G_m = U_m U_m^T "
                                 f"would exceed {_MAX_ENTRY:g}; rescale it")
            t, c = np.nonzero(U)
            rows.append(t)
            cols.append(c + R)
            vals.append(U[t, c])
            view.append(np.full(U.shape[1], m, dtype=np.int64))
            R += U.shape[1]
        rows_a = np.concatenate(rows)
        order = np.lexsort((np.concatenate(cols), rows_a))
        assert T is not None  # at least one factor
        self._T, self._M, self._R = int(T), len(mats), R
        self.cols = np.ascontiguousarray(np.concatenate(cols)[order], dtype=np.int64)
        self.vals = np.ascontiguousarray(np.concatenate(vals)[order], dtype=float)
        self.indptr = np.zeros(self._T + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows_a, minlength=self._T), out=self.indptr[1:])
        self.view = np.ascontiguousarray(np.concatenate(view), dtype=np.int64)

    @classmethod
    def from_groups(cls, groups: Any, T: int) -> FactoredSimilarities:
        """One view per group of tasks ``S``: ``G_S = 1_S 1_S^T`` (a tree node's 0/1 matrix).

        Parameters
        ----------
        groups : sequence of array_like of int
            The task ids of each group (e.g. the leaves under each node), in ``0..T-1``.
        T : int
            Number of tasks.
        """
        T = check_int(T, "T", low=1)
        factors = []
        for k, g in enumerate(groups):
            idx = np.asarray(g)
            if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
                raise ValueError(f"groups[{k}] must be a 1-D array of task ids")
            if idx.size and (idx.min() < 0 or idx.max() >= T):
                raise ValueError(f"groups[{k}] must contain task ids in 0..{T - 1}")
            v = np.zeros(T)
            v[idx] = 1.0
            factors.append(v)
        return cls(factors)

    @property
    def n_views(self) -> int:
        return self._M

    @property
    def n_tasks(self) -> int:
        return self._T

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self._M, self._T, self._T)

    @property
    def nnz(self) -> int:
        """Nonzero entries of the stacked factor ``U`` (T x R)."""
        return int(self.vals.size)

    def factor(self, m: int) -> np.ndarray:
        """``U_m`` (T x r_m), dense."""
        cols = np.flatnonzero(self.view == m)
        U = np.zeros((self._T, cols.size))
        pos = np.full(self._R, -1, dtype=np.int64)
        pos[cols] = np.arange(cols.size)
        rows = np.repeat(np.arange(self._T), np.diff(self.indptr))
        keep = pos[self.cols] >= 0
        U[rows[keep], pos[self.cols[keep]]] = self.vals[keep]
        return U

    def weighted(self, theta: np.ndarray) -> np.ndarray:
        """``sum_m theta_m G_m`` (T x T), dense."""
        from scipy.sparse import csr_matrix

        U = csr_matrix((self.vals, self.cols, self.indptr), shape=(self._T, self._R))
        w = np.asarray(theta, dtype=float)[self.view]
        return np.asarray((U.multiply(w[None, :]) @ U.T).toarray())

    def __len__(self) -> int:
        return self._M

    def __getitem__(self, m: int) -> np.ndarray:
        m = int(m)
        if not -self._M <= m < self._M:
            raise IndexError(f"view index {m} out of range for {self._M} views")
        U = self.factor(m % self._M)
        return U @ U.T

    def __iter__(self):
        for m in range(self._M):
            yield self[m]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = np.stack([self[m] for m in range(self._M)])
        return out if dtype is None else out.astype(dtype)

    def to_dict(self) -> dict[str, Any]:
        """The stacked factor ``U`` (T x R) by task rows (CSR) and each column's view."""
        return {"n_tasks": self._T, "n_views": self._M, "indptr": self.indptr,
                "cols": self.cols, "vals": self.vals, "view": self.view}

    def __repr__(self) -> str:
        return (f"FactoredSimilarities(M={self._M}, T={self._T}, R={self._R}, "
                f"nnz={self.nnz})")


def _structured_factors(mats: list[np.ndarray]) -> FactoredSimilarities | None:
    """Factors of dense similarities when each is rank one or diagonal (O(T^2) per matrix).

    ``G = g g^T`` is recognised with ``g = G[:, k] / sqrt(G[k, k])``, ``k`` the
    largest diagonal entry, when ``G`` equals ``g g^T`` up to rounding
    (``1e-12`` of its largest entry); a nonnegative diagonal gives ``sqrt(diag)``
    columns. ``None`` if some matrix is neither (the dense path checks it).
    """
    factors = []
    for G in mats:
        scale = float(np.max(np.abs(G)))
        if scale == 0.0:
            factors.append(np.zeros((G.shape[0], 0)))
            continue
        diag = np.diag(G)
        k = int(np.argmax(diag))
        if diag[k] > 0.0:
            g = G[:, k] / math.sqrt(diag[k])
            if float(np.max(np.abs(G - np.outer(g, g)))) <= 1e-12 * scale:
                factors.append(g)
                continue
        if np.all(diag >= 0.0) and np.count_nonzero(G - np.diag(diag)) == 0:
            pos = np.flatnonzero(diag)
            U = np.zeros((G.shape[0], pos.size))
            U[pos, np.arange(pos.size)] = np.sqrt(diag[pos])
            factors.append(U)
            continue
        return None
    return FactoredSimilarities(factors)


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


@dataclass
class _Data:
    X: np.ndarray | None
    y: np.ndarray
    tau: np.ndarray
    G: np.ndarray | FactoredSimilarities  # (M, T, T) or factor form
    Ks: list[np.ndarray] | None  # precomputed kernels (1 shared or M)
    n: int
    T: int
    M: int

    @property
    def kind(self) -> str:
        return "linear" if self.Ks is None else "precomputed"

    @property
    def shared(self) -> bool:
        return self.Ks is None or len(self.Ks) == 1

    @property
    def factored(self) -> bool:
        return isinstance(self.G, FactoredSimilarities)

    @property
    def features(self) -> np.ndarray:
        """``X`` (linear kernel)."""
        assert self.X is not None
        return self.X

    @property
    def kernels(self) -> list[np.ndarray]:
        """``Ks`` (precomputed kernels)."""
        assert self.Ks is not None
        return self.Ks

    @property
    def factors(self) -> FactoredSimilarities:
        """``G`` in factor form."""
        assert isinstance(self.G, FactoredSimilarities)
        return self.G

    @property
    def dense_G(self) -> np.ndarray:
        """``G`` as (M, T, T) matrices."""
        assert not isinstance(self.G, FactoredSimilarities)
        return self.G

    @property
    def rank_bound(self) -> int:
        """An upper bound on the rank of ``Y K~_theta Y``: ``T d`` with linear features
        (``K~_theta = (X X^T) * Gtheta[tau, tau]``), ``n`` with precomputed kernels."""
        return self.n if self.Ks is not None else min(self.n, self.T * self.features.shape[1])


def _check_tasks(tasks: Any, n: int, T: int, name: str = "tasks") -> np.ndarray:
    if tasks is None:
        raise TypeError(f"{name} is required (one task id per sample), got None")
    arr = np.asarray(tasks)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of {n} task ids (one per sample), "
                         f"got shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise TypeError(f"{name} must contain integer task ids 0..T-1, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and (not np.all(np.isfinite(arr))
                                  or np.any(arr != np.round(arr))):
        raise ValueError(f"{name} must contain integer task ids, found non-integers")
    out = arr.astype(np.int64)
    bad = out[(out < 0) | (out >= T)]
    if bad.size:
        raise ValueError(f"{name} must contain task ids in 0..{T - 1} (G is {T} x {T}); "
                         f"found {np.unique(bad)[:5].tolist()}")
    return np.ascontiguousarray(out)


def _check_scale(A: Any, name: str) -> np.ndarray:
    """A finite matrix whose entries stay below ``_MAX_ENTRY`` (no overflow downstream)."""
    return check_magnitude(check_matrix(A, name), name, _MAX_ENTRY)


def _check_G(G: Any, structure: str = "dense", linear: bool = True
             ) -> np.ndarray | FactoredSimilarities:
    """The similarities as an (M, T, T) array, or in factor form (linear features, "auto").

    Factor input is PSD by construction; dense input is recognised as rank one
    or diagonal in O(T^2) per matrix (``structure="auto"``) and otherwise
    checked by an eigendecomposition (:func:`~solvers.validation.check_psd`).
    """
    if isinstance(G, FactoredSimilarities):
        if structure == "auto" and linear:
            return G
        return np.ascontiguousarray(np.asarray(G))
    if G is None:
        raise TypeError("G is required: a list of M task-similarity matrices (T x T)")
    if isinstance(G, np.ndarray):
        if G.ndim == 2:
            mats = [G]
        elif G.ndim == 3:
            mats = list(G)
        else:
            raise ValueError(f"G must be a list of M (T x T) matrices or an (M, T, T) array, "
                             f"got an array of shape {G.shape}")
    elif isinstance(G, (list, tuple)):
        mats = list(G)
    else:
        raise TypeError(f"G must be a list of M (T x T) matrices, got {type(G).__name__}")
    if not mats:
        raise ValueError("G must contain at least one task-similarity matrix")
    first = check_matrix(mats[0], "G[0]")
    T = first.shape[0]
    if structure == "auto":
        checked = []
        for m, g in enumerate(mats):
            g = _check_scale(g, f"G[{m}]")
            if g.shape[0] != g.shape[1]:
                raise ValueError(f"G[{m}] must be square, got shape {g.shape}")
            if g.shape[0] != T:
                raise ValueError(f"G[{m}] must be {T} x {T}, got shape {g.shape}")
            checked.append(g)
        F = _structured_factors(checked)
        if F is not None:
            # factor form when a coordinate step is cheaper: O(nnz_t d) against O(T d)
            if linear and 2 * F.nnz < T * (T + 1):
                return F
            return np.ascontiguousarray(np.stack([(g + g.T) / 2 for g in checked]))
        mats = checked
    out = [check_psd(_check_scale(g, f"G[{m}]"), f"G[{m}]", size=T)
           for m, g in enumerate(mats)]
    return np.ascontiguousarray(np.stack(out))


def _check_kernels(kernel: Any, n: int, M: int) -> list[np.ndarray] | None:
    if isinstance(kernel, str):
        check_choice(kernel, "kernel", (PARAMS.default("kernel"),))
        return None
    if isinstance(kernel, np.ndarray) and kernel.ndim == 2:
        mats = [kernel]
    elif isinstance(kernel, (list, tuple)) or (isinstance(kernel, np.ndarray)
                                               and kernel.ndim == 3):
        mats = list(kernel)
    else:
        raise TypeError('kernel must be "linear", one precomputed (n x n) kernel matrix, '
                        f"or a list of M of them; got {type(kernel).__name__}")
    if len(mats) not in (1, M):
        raise ValueError(f"kernel must be one precomputed kernel or a list of M={M} "
                         f"(one per matrix in G), got {len(mats)}")
    return [np.ascontiguousarray(check_psd(_check_scale(K, f"kernel[{k}]"), f"kernel[{k}]",
                                           size=n))
            for k, K in enumerate(mats)]


def _prepare(X: Any, y: Any, tasks: Any, G: Any, kernel: Any, structure: str = "dense"
             ) -> _Data:
    linear = isinstance(kernel, str)
    Gs = _check_G(G, structure, linear)
    M, T = Gs.shape[0], Gs.shape[1]
    if linear:
        check_choice(kernel, "kernel", (PARAMS.default("kernel"),))
        X = check_matrix(X, "X")
        n = X.shape[0]
        Ks = None
    else:
        y_arr = np.asarray(y) if y is not None else None
        if y_arr is None or y_arr.ndim != 1:
            raise ValueError("y must be a 1-D array of labels in {-1, +1}")
        n = y_arr.shape[0]
        if X is not None:
            X = check_matrix(X, "X", n_rows=n)
        Ks = _check_kernels(kernel, n, M)
    y = check_binary_labels(y, "y", size=n)
    tau = _check_tasks(tasks, n, T)
    return _Data(X=X, y=y, tau=tau, G=Gs, Ks=Ks, n=n, T=T, M=M)


def _check_p(p: Any) -> float:
    return PARAMS["p"].validate(p)


# ---------------------------------------------------------------------------
# Norms and the theta-step
# ---------------------------------------------------------------------------


def _pnorm(v: np.ndarray, p: float) -> float:
    v = np.abs(np.asarray(v, dtype=float))
    vmax = float(v.max()) if v.size else 0.0
    if vmax == 0.0:
        return 0.0
    if math.isinf(p):
        return vmax
    return vmax * float(np.sum((v / vmax) ** p)) ** (1.0 / p)


def _conjugate(p: float) -> float:
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def dual_norm(s: Any, p: float) -> float:
    """``||s||_{p*}`` with ``p* = p/(p-1)`` (the max norm at ``p = 1``, the sum at ``p = inf``).

    Parameters
    ----------
    s : array_like, shape (M,)
        The vector.
    p : float, >= 1
        The primal exponent (``inf`` allowed).

    Returns
    -------
    float
        ``||s||_{p*}``.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import mtmkl
    >>> mtmkl.dual_norm(np.array([3.0, 4.0]), 2.0), mtmkl.dual_norm(np.array([3.0, 4.0]), 1.0)
    (5.0, 4.0)
    """
    p = _check_p(p)
    s = check_array(s, "s", ndim=1)
    return _pnorm(s, _conjugate(p))


def uniform_theta(M: int, p: float) -> np.ndarray:
    """``theta_m = M^{-1/p}``: the uniform point of the unit p-sphere (E.1's start).

    Parameters
    ----------
    M : int, >= 1
        The number of views.
    p : float, >= 1
        The exponent of ``Theta_p`` (``inf``: every weight is 1).

    Returns
    -------
    ndarray, shape (M,)
        The uniform kernel weights.

    Examples
    --------
    >>> from solvers import mtmkl
    >>> mtmkl.uniform_theta(4, 2.0)
    array([0.5, 0.5, 0.5, 0.5])
    """
    M = check_int(M, "M", low=1)
    p = _check_p(p)
    return np.full(M, 1.0 if math.isinf(p) else M ** (-1.0 / p))


def _theta_step(a: np.ndarray, p: float) -> np.ndarray | None:
    a = np.maximum(np.asarray(a, dtype=float), 0.0)
    amax = float(a.max())
    if not amax > 0.0:
        return None
    if math.isinf(p):
        return np.ones_like(a)
    r = a / amax
    num = r ** (1.0 / (p + 1.0))
    den = float(np.sum(r ** (p / (p + 1.0)))) ** (1.0 / p)
    return num / den


def theta_step(norms: Any, p: float) -> np.ndarray:
    r"""The theta-step (E.1): ``argmin_{theta in Theta_p} 1/2 sum_m a_m / theta_m``.

    ``theta_m = a_m^{1/(p+1)} / (sum_m' a_m'^{p/(p+1)})^{1/p}`` with
    ``a_m = ||W_m||^2_{Q_m} = tr(W_m Q_m W_m^T)``, i.e. ``theta`` proportional to
    ``a^{1/(p+1)}`` on the unit p-sphere. The minimum value is
    ``1/2 ||a||_{p/(p+1)}``. For ``p = inf`` every weight is 1.

    Parameters
    ----------
    norms : array_like, shape (M,)
        ``a_m >= 0``, at least one positive.
    p : float, >= 1

    Returns
    -------
    ndarray, shape (M,)
        The optimal ``theta`` (``||theta||_p = 1``).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import mtmkl
    >>> mtmkl.theta_step(np.array([1.0, 4.0]), 1.0)  # proportional to sqrt(a) at p = 1
    array([0.33333333, 0.66666667])
    """
    p = _check_p(p)
    a = check_array(norms, "norms", ndim=1)
    if np.any(a < 0):
        raise ValueError("norms must be >= 0 (they are squared norms ||W_m||^2_{Q_m})")
    theta = _theta_step(a, p)
    if theta is None:
        raise ValueError("norms must contain at least one positive entry (W = 0 leaves "
                         "theta undetermined)")
    return theta


# ---------------------------------------------------------------------------
# Objectives
# ---------------------------------------------------------------------------


def _task_sum_matrix(data: _Data, a: np.ndarray) -> np.ndarray:
    """``Z[t] = sum_{i in task t} a_i x_i`` (T x d)."""
    Z = np.empty((data.T, data.features.shape[1]))
    _task_sums(data.X, data.tau, a, Z)
    return Z


def _pair_sums(data: _Data, a: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per kernel ``KA = K A_E`` (n x T) and ``B = A_E^T K A_E`` (T x T).

    ``A_E[i, t] = a_i [tau_i = t]``.
    """
    KAs, Bs = [], []
    for K in data.kernels:
        KA = np.empty((data.n, data.T))
        _kernel_task_products(K, data.tau, a, KA)
        B = np.empty((data.T, data.T))
        _task_sums(KA, data.tau, a, B)
        KAs.append(KA)
        Bs.append(B)
    return KAs, Bs


def _norms_from_pairs(G: np.ndarray, Bs: list[np.ndarray]) -> np.ndarray:
    """``s_m = <G_m, B>`` (shared kernel) or ``<G_m, B_m>``, clipped at 0."""
    if len(Bs) == 1:
        s = np.einsum("mst,st->m", G, Bs[0])
    else:
        s = np.array([float(np.sum(G[m] * Bs[m])) for m in range(G.shape[0])])
    return np.maximum(s, 0.0)


def _factored_V(F: FactoredSimilarities, Z: np.ndarray) -> np.ndarray:
    """``V = U^T Z`` (R x d)."""
    V = np.empty((F._R, Z.shape[1]))
    _factor_project(F.indptr, F.cols, F.vals, np.ascontiguousarray(Z), V)
    return V


def _factored_norms(F: FactoredSimilarities, V: np.ndarray) -> np.ndarray:
    """``s_m = tr(Z G_m Z^T) = sum_{r in view m} ||V_r||^2``."""
    return np.bincount(F.view, weights=np.einsum("rd,rd->r", V, V), minlength=F.n_views)


def _factored_weights(F: FactoredSimilarities, theta: np.ndarray, V: np.ndarray
                      ) -> np.ndarray:
    """``W[m, t] = theta_m (G_m Z)[t]`` from ``V = U^T Z``."""
    W = np.empty((F.n_views, F.n_tasks, V.shape[1]))
    _factor_weights(F.indptr, F.cols, F.vals, F.view, np.ascontiguousarray(theta, dtype=float),
                    V, W)
    return W


def _view_norms(data: _Data, alpha: np.ndarray) -> np.ndarray:
    a = alpha * data.y
    if data.factored:
        return _factored_norms(data.factors, _factored_V(data.factors, _task_sum_matrix(data, a)))
    if data.Ks is None:
        Z = _task_sum_matrix(data, a)
        ZZ = np.empty((data.T, data.T))
        _gram_rows(Z, ZZ)
        return _norms_from_pairs(data.dense_G, [ZZ])
    return _norms_from_pairs(data.dense_G, _pair_sums(data, a)[1])


def _check_alpha(alpha: Any, n: int, C: float | None) -> np.ndarray:
    alpha = check_vector(alpha, "alpha", size=n)
    if np.any(alpha < 0) or (C is not None and np.any(alpha > C)):
        raise ValueError("alpha must lie in [0, C]")
    return alpha


def view_norms(alpha: Any, X: Any, y: Any, tasks: Any, G: Any, *,
               kernel: Any = PARAMS.default("kernel")) -> np.ndarray:  # noqa: B008 (a str)
    """``s_m(alpha) = alpha^T Y K~_m Y alpha = tr(Z G_m Z^T)`` for every view m.

    Parameters
    ----------
    alpha : array_like, shape (n,)
        Dual variables.
    X : array_like, shape (n, d), or None
        Features (``None`` with precomputed kernels).
    y : array_like, shape (n,)
        Labels in {-1, +1}.
    tasks : array_like of int, shape (n,)
        Task id of every sample, in ``0..T-1``.
    G : list of M arrays (T, T), an array (M, T, T), or FactoredSimilarities
        The task similarity of each view.
    kernel : str or list of arrays
        ``"linear"`` or the precomputed kernels.

    Returns
    -------
    ndarray, shape (M,)
        ``s_m(alpha)`` for every view.
    """
    data = _prepare(X, y, tasks, G, kernel, "auto")
    return _view_norms(data, _check_alpha(alpha, data.n, None))


def dual_objective(alpha: Any, X: Any, y: Any, tasks: Any, G: Any, *, C: float | None = None,
                   p: float = PARAMS.default("p"),
                   kernel: Any = PARAMS.default("kernel")) -> float:  # noqa: B008 (a str)
    """Problem 3: ``sum alpha - 1/2 ||(s_m(alpha))_m||_{p*}``.

    With ``C`` given, ``alpha`` must lie in [0, C] (``ValueError`` otherwise).

    Parameters
    ----------
    alpha : array_like, shape (n,)
        Dual variables.
    X : array_like, shape (n, d), or None
        Features (``None`` with precomputed kernels).
    y : array_like, shape (n,)
        Labels in {-1, +1}.
    tasks : array_like of int, shape (n,)
        Task id of every sample, in ``0..T-1``.
    G : list of M arrays (T, T), an array (M, T, T), or FactoredSimilarities
        The task similarity of each view.
    C : float, optional
        The box bound; given, ``alpha`` must lie in ``[0, C]``.
    p : float, >= 1
        The exponent of ``Theta_p``.
    kernel : str or list of arrays
        ``"linear"`` or the precomputed kernels.

    Returns
    -------
    float
        The dual value, a lower bound of Problem 1 for every feasible ``alpha``.
    """
    data = _prepare(X, y, tasks, G, kernel, "auto")
    p = _check_p(p)
    if C is not None:
        C = PARAMS["C"].validate(C)
    alpha = _check_alpha(alpha, data.n, C)
    s = _view_norms(data, alpha)
    return float(alpha.sum()) - 0.5 * _pnorm(s, _conjugate(p))


def weights_from_dual(alpha: Any, theta: Any, X: Any, y: Any, tasks: Any, G: Any
                      ) -> np.ndarray:
    """The representer theorem (F.1): ``W[m, t] = theta_m sum_i G_m[tau(i), t] alpha_i y_i x_i``.

    Linear features only; returns an array of shape (M, T, d).

    Parameters
    ----------
    alpha : array_like, shape (n,)
        Dual variables.
    theta : array_like, shape (M,)
        Kernel weights.
    X : array_like, shape (n, d), or None
        Features (``None`` with precomputed kernels).
    y : array_like, shape (n,)
        Labels in {-1, +1}.
    tasks : array_like of int, shape (n,)
        Task id of every sample, in ``0..T-1``.
    G : list of M arrays (T, T), an array (M, T, T), or FactoredSimilarities
        The task similarity of each view.

    Returns
    -------
    ndarray, shape (M, T, d)
        ``W[m, t]``.
    """
    data = _prepare(X, y, tasks, G, "linear", "auto")
    alpha = _check_alpha(alpha, data.n, None)
    theta = check_vector(theta, "theta", size=data.M)
    Z = _task_sum_matrix(data, alpha * data.y)
    if data.factored:
        return _factored_weights(data.factors, theta, _factored_V(data.factors, Z))
    return theta[:, None, None] * np.einsum("mst,sd->mtd", data.G, Z)


def _check_theta_feasible(theta: Any, M: int, p: float) -> np.ndarray:
    theta = check_vector(theta, "theta", size=M)
    if np.any(theta < 0):
        raise ValueError("theta must be >= 0")
    if _pnorm(theta, p) > 1.0 + 1e-9:
        raise ValueError(f"theta must lie in Theta_p: ||theta||_{p:g} = "
                         f"{_pnorm(theta, p):.6g} > 1")
    return theta


def primal_objective(W: Any, theta: Any, X: Any, y: Any, tasks: Any, G: Any, C: float,
                     *, p: float = PARAMS.default("p")) -> float:
    r"""Problem 1 at ``(W, theta)`` (linear features).

    ``1/2 sum_m tr(W_m Q_m W_m^T) / theta_m + C sum_i max(0, 1 - y_i sum_m <w_{m tau(i)}, x_i>)``
    with ``Q_m = G_m^+``. Returns ``inf`` when some ``W_m`` leaves the range of
    ``G_m`` along the task axis or is nonzero with ``theta_m = 0`` (the paper's
    ``1/0 = inf``, ``0/0 = 0``).

    Parameters
    ----------
    W : array_like, shape (M, T, d)
        ``W[m, t] = w_mt``.
    theta : array_like, shape (M,)
        In Theta_p (``ValueError`` otherwise).
    X, y, tasks, G
        As in :func:`solve` (linear features).
    C : float, > 0
        Loss weight.
    p : float, >= 1
        The exponent of ``Theta_p``.

    Returns
    -------
    float
        The primal value (``inf`` in the cases above).
    """
    data = _prepare(X, y, tasks, G, "linear")
    p = _check_p(p)
    C = PARAMS["C"].validate(C)
    M, T, d = data.M, data.T, data.features.shape[1]
    W = check_array(W, "W", shape=(M, T, d))
    theta = _check_theta_feasible(theta, M, p)
    reg = 0.0
    for m in range(M):
        lam, U = np.linalg.eigh(data.G[m])
        keep = lam > 1e-10 * max(float(lam.max()), 0.0)
        Ur, lr = U[:, keep], lam[keep]
        Wm = W[m]
        coef = Ur.T @ Wm
        outside = Wm - Ur @ coef
        scale = max(1.0, float(np.linalg.norm(Wm)))
        if float(np.linalg.norm(outside)) > 1e-8 * scale:
            return math.inf
        val = float(np.sum(coef**2 / lr[:, None])) if lr.size else 0.0
        if theta[m] == 0.0:
            if float(np.linalg.norm(Wm)) > 0.0:
                return math.inf
            continue
        reg += val / theta[m]
    f = np.empty(data.n)
    _decision_linear(data.X, data.tau, np.ascontiguousarray(W.sum(axis=0)), f)
    return 0.5 * reg + C * float(np.sum(np.maximum(0.0, 1.0 - data.y * f)))


# ---------------------------------------------------------------------------
# Solver states: exact figures from alpha, incremental epochs
# ---------------------------------------------------------------------------


class _LinearState:
    """Linear features: keeps ``Wsum[t] = sum_m w_mt`` (T x d) for the epoch."""

    def __init__(self, data: _Data, alpha: np.ndarray, theta: np.ndarray) -> None:
        self.data = data
        self.alpha = alpha
        self.sqn = np.einsum("ij,ij->i", data.features, data.features)
        T, dim = data.T, data.features.shape[1]
        self.Z = np.empty((T, dim))
        self.ZZ = np.empty((T, T))
        self.Wsum = np.empty((T, dim))
        self.f = np.empty(data.n)
        self.set_theta(theta)
        self.refresh()

    def set_theta(self, theta: np.ndarray) -> None:
        self.theta = theta
        self.Gtheta = np.ascontiguousarray(np.einsum("m,mst->st", theta, self.data.G))

    def refresh(self) -> None:
        """Exact ``Z`` and ``s`` from alpha, then :meth:`sync`."""
        d = self.data
        _task_sums(d.X, d.tau, self.alpha * d.y, self.Z)
        _gram_rows(self.Z, self.ZZ)
        self.s = _norms_from_pairs(d.dense_G, [self.ZZ])
        self.sync()

    def update(self) -> None:
        """After an epoch (which keeps ``Wsum``, not ``Z``): :meth:`refresh`."""
        self.refresh()

    def sync(self) -> None:
        """``Wsum = Gtheta Z`` and the decision values at the current theta (E.5)."""
        _small_matmul(self.Gtheta, self.Z, self.Wsum)
        _decision_linear(self.data.X, self.data.tau, self.Wsum, self.f)

    def epoch(self, order: np.ndarray, C: float) -> int:
        d = self.data
        return int(_epoch_linear(d.X, d.y, d.tau, self.sqn, self.Gtheta, self.Wsum,
                                 self.alpha, order, C))

    def weights(self) -> np.ndarray:
        return self.theta[:, None, None] * np.einsum("mst,sd->mtd", self.data.G, self.Z)

    def qprod(self, v: np.ndarray) -> np.ndarray:
        """``Y K~_theta Y v``: ``y_i <(Gtheta Z_v)[tau_i], x_i>``, Z_v the task sums of v y x."""
        d = self.data
        Zv, Wv, out = np.empty_like(self.Z), np.empty_like(self.Z), np.empty(d.n)
        _task_sums(d.X, d.tau, v * d.y, Zv)
        _small_matmul(self.Gtheta, Zv, Wv)
        _decision_linear(d.X, d.tau, Wv, out)
        return d.y * out

    def qprod_rows(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``(Y K~_theta Y)[idx, idx] v``."""
        d = self.data
        Zv, Wv, out = np.empty_like(self.Z), np.empty_like(self.Z), np.empty(idx.size)
        _task_sums_rows(d.X, d.tau, v * d.y[idx], idx, Zv)
        _small_matmul(self.Gtheta, Zv, Wv)
        _decision_rows(d.X, d.y, d.tau, Wv, idx, out)
        return out

    def shift(self, idx: np.ndarray, delta: np.ndarray) -> None:
        """``alpha[idx] += delta`` with ``Z`` and ``Wsum`` (what an epoch reads) updated;
        ``s`` and ``f`` wait for :meth:`refresh`."""
        d = self.data
        self.alpha[idx] += delta
        dZ = np.empty_like(self.Z)
        _task_sums_rows(d.X, d.tau, delta * d.y[idx], idx, dZ)
        self.Z += dZ
        _small_matmul(self.Gtheta, self.Z, self.Wsum)


class _FactoredLinearState:
    """Linear features, similarities in factor form: keeps ``V = U^T Z`` (R x d).

    The same iterates as :class:`_LinearState` (``Wsum = Gtheta Z = U diag(theta) V``
    is formed only for the decision values after an epoch); a coordinate step
    costs O(nnz(U[tau_i]) d) instead of O(T d).
    """

    def __init__(self, data: _Data, alpha: np.ndarray, theta: np.ndarray) -> None:
        F = data.factors
        self.data = data
        self.F = F
        self.alpha = alpha
        self.sqn = np.einsum("ij,ij->i", data.features, data.features)
        T, dim = data.T, data.features.shape[1]
        self._rows = np.repeat(np.arange(T), np.diff(F.indptr))
        self.Z = np.empty((T, dim))
        self.V = np.empty((F._R, dim))
        self._Vv = np.empty((F._R, dim))  # scratch of qprod_rows
        self.Wsum = np.empty((T, dim))
        self.f = np.empty(data.n)
        self.set_theta(theta)
        self.refresh()

    def set_theta(self, theta: np.ndarray) -> None:
        F = self.F
        self.theta = theta
        self.wcol = np.ascontiguousarray(theta[F.view], dtype=float)
        # Gtheta[t, t] = sum_{r in row t} U[t, r]^2 theta_view[r]
        self.qdiag = np.bincount(self._rows, weights=F.vals**2 * self.wcol[F.cols],
                                 minlength=self.data.T)

    @property
    def Gtheta(self) -> np.ndarray:
        return self.F.weighted(self.theta)

    def refresh(self) -> None:
        """Exact ``Z``, ``V`` and ``s`` from alpha, then :meth:`sync`."""
        d, F = self.data, self.F
        _task_sums(d.X, d.tau, self.alpha * d.y, self.Z)
        _factor_project(F.indptr, F.cols, F.vals, self.Z, self.V)
        self.s = _factored_norms(F, self.V)
        self.sync()

    def update(self) -> None:
        """``s`` and :meth:`sync` from the ``V`` the epochs keep (no task sums over all
        samples; :meth:`refresh` recomputes ``V`` exactly)."""
        self.s = _factored_norms(self.F, self.V)
        self.sync()

    def update_rows(self, rows: np.ndarray) -> None:
        """``s`` and ``Wsum`` from the ``V`` the epochs keep, decision values on ``rows``
        only (the others keep their last values until :meth:`sync` or :meth:`refresh`)."""
        d, F = self.data, self.F
        self.s = _factored_norms(F, self.V)
        _factor_combine(F.indptr, F.cols, F.vals, self.wcol, self.V, self.Wsum)
        out = np.empty(rows.size)
        _decision_rows(d.X, d.y, d.tau, self.Wsum, rows, out)
        self.f[rows] = d.y[rows] * out

    def sync(self) -> None:
        """``Wsum = U diag(theta) V`` and the decision values at the current theta (E.5)."""
        F = self.F
        _factor_combine(F.indptr, F.cols, F.vals, self.wcol, self.V, self.Wsum)
        _decision_linear(self.data.X, self.data.tau, self.Wsum, self.f)

    def epoch(self, order: np.ndarray, C: float) -> int:
        d, F = self.data, self.F
        return int(_epoch_factored(d.X, d.y, d.tau, self.sqn, F.indptr, F.cols, F.vals,
                                   self.wcol, self.qdiag, self.V, self.alpha, order, C))

    def weights(self) -> np.ndarray | None:
        F = self.F
        if F.n_views * F.n_tasks * self.V.shape[1] > _MAX_W_ENTRIES:
            return None
        return _factored_weights(F, self.theta, self.V)

    def qprod(self, v: np.ndarray) -> np.ndarray:
        """``Y K~_theta Y v`` through the factors."""
        d, F = self.data, self.F
        Zv, Wv, out = np.empty_like(self.Z), np.empty_like(self.Z), np.empty(d.n)
        Vv = np.empty_like(self.V)
        _task_sums(d.X, d.tau, v * d.y, Zv)
        _factor_project(F.indptr, F.cols, F.vals, Zv, Vv)
        _factor_combine(F.indptr, F.cols, F.vals, self.wcol, Vv, Wv)
        _decision_linear(d.X, d.tau, Wv, out)
        return d.y * out

    def qprod_rows(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``(Y K~_theta Y)[idx, idx] v`` through the factors (one compiled pass each way)."""
        d, F = self.data, self.F
        out = np.empty(idx.size)
        _factor_qprod_rows(d.X, d.y, d.tau, F.indptr, F.cols, F.vals, self.wcol, v, idx,
                           self._Vv, out)
        return out

    def shift(self, idx: np.ndarray, delta: np.ndarray) -> None:
        """``alpha[idx] += delta`` with ``Z`` and ``V`` (what an epoch reads) updated;
        ``s`` and ``f`` wait for :meth:`refresh`."""
        d, F = self.data, self.F
        self.alpha[idx] += delta
        dZ, dV = np.empty_like(self.Z), np.empty_like(self.V)
        _task_sums_rows(d.X, d.tau, delta * d.y[idx], idx, dZ)
        _factor_project(F.indptr, F.cols, F.vals, dZ, dV)
        self.Z += dZ
        self.V += dV


class _KernelState:
    """Precomputed kernels: keeps the decision values ``f`` (n) for the epoch."""

    def __init__(self, data: _Data, alpha: np.ndarray, theta: np.ndarray) -> None:
        self.data = data
        self.alpha = alpha
        self.f = np.empty(data.n)
        self.Kt = np.empty((data.n, data.n))
        self.set_theta(theta)
        self.refresh()

    def set_theta(self, theta: np.ndarray) -> None:
        """``Ktheta = sum_m theta_m G_m[tau, tau] * K_m`` for the epoch."""
        d = self.data
        self.theta = theta
        self.Gtheta = np.ascontiguousarray(np.einsum("m,mst->st", theta, d.G))
        self.Kt[:, :] = 0.0
        if d.shared:
            _add_task_kernel(self.Kt, self.Gtheta, d.tau, d.kernels[0], 1.0)
        else:
            for m in range(d.M):
                if theta[m] != 0.0:
                    _add_task_kernel(self.Kt, d.dense_G[m], d.tau, d.kernels[m], float(theta[m]))

    def refresh(self) -> None:
        d = self.data
        self.KA, Bs = _pair_sums(d, self.alpha * d.y)
        self.s = _norms_from_pairs(d.dense_G, Bs)
        self.sync()

    def update(self) -> None:
        """After an epoch: :meth:`refresh` (``s`` needs the task-pair sums)."""
        self.refresh()

    def sync(self) -> None:
        """Exact decision values ``f_j = sum_m theta_m (K_m A_E G_m)[j, tau_j]`` (E.5)."""
        d = self.data
        self.f[:] = 0.0
        if d.shared:
            _task_decision(self.KA[0], self.Gtheta, d.tau, 1.0, self.f)
        else:
            for m in range(d.M):
                if self.theta[m] != 0.0:
                    _task_decision(self.KA[m], d.G[m], d.tau, float(self.theta[m]), self.f)

    def epoch(self, order: np.ndarray, C: float) -> int:
        return int(_epoch_kernel(self.Kt, self.data.y, self.f, self.alpha, order, C))

    def weights(self) -> None:
        return None

    def qprod(self, v: np.ndarray) -> np.ndarray:
        """``Y K~_theta Y v``."""
        y = self.data.y
        return y * (self.Kt @ (y * v))

    def qprod_rows(self, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``(Y K~_theta Y)[idx, idx] v``."""
        y = self.data.y[idx]
        return y * (self.Kt[np.ix_(idx, idx)] @ (y * v))

    def shift(self, idx: np.ndarray, delta: np.ndarray) -> None:
        """``alpha[idx] += delta`` with the decision values ``f`` (what an epoch reads)
        updated; ``s`` waits for :meth:`refresh`."""
        y = self.data.y
        self.alpha[idx] += delta
        self.f += self.Kt[:, idx] @ (delta * y[idx])


def _face_step(state, C: float, max_cg: int) -> int:
    r"""Conjugate gradients on the free face of the fixed-theta SVM dual (Algorithm 1's W-step).

    Maximises ``sum alpha - 1/2 alpha^T Q alpha``, ``Q = Y K~_theta Y``, over the
    coordinates not held at a bound by the gradient ``g = 1 - Q alpha``
    (``alpha_i = 0, g_i <= 0`` or ``alpha_i = C, g_i >= 0``), each step an exact
    line search along the conjugate direction ``p`` cut at the box; it stops at the
    first bound it reaches. Every step raises the dual. Along a direction with
    ``p^T Q p = 0`` (``Q`` is singular when there are more samples than feature
    dimensions) the dual is linear and the step goes to the bound at once, where
    coordinate ascent moves by ``g_i / q_ii`` per epoch (the gradient-projection /
    conjugate-gradient scheme of Moré & Toraldo, SIAM J. Optim. 1(1), 1991).
    Returns the number of ``Q`` products; ``state`` is refreshed.
    """
    a = state.alpha
    g = 1.0 - state.data.y * state.f
    free = ~(((a <= 0.0) & (g <= 0.0)) | ((a >= C) & (g >= 0.0)))
    r = np.where(free, g, 0.0)
    p = r.copy()
    rr = float(r @ r)
    products = 0
    for _ in range(max_cg):
        gp = float(g @ p)
        if not (rr > 0.0 and gp > 0.0):
            break
        Qp = state.qprod(p)
        products += 1
        curv = float(p @ Qp)
        up, down = p > 0.0, p < 0.0
        t_max = min(float(np.min((C - a[up]) / p[up], initial=math.inf)),
                    float(np.min(-a[down] / p[down], initial=math.inf)))
        t = t_max if curv <= 0.0 else min(gp / curv, t_max)
        if not (math.isfinite(t) and t > 0.0):
            break
        np.clip(a + t * p, 0.0, C, out=a)
        g -= t * Qp
        if t >= t_max:
            break
        r = np.where(free, g, 0.0)
        rr_new = float(r @ r)
        p = r + (rr_new / rr) * p
        rr = rr_new
    state.refresh()
    return products


def _newton_face_step(state, C: float, max_cg: int, max_free: int, refresh: bool = True,
                      free: np.ndarray | None = None) -> int:
    r"""A projected truncated-Newton step on the fixed-theta SVM dual (``method="newton"``).

    Maximises ``D_theta(alpha) = sum alpha - 1/2 alpha^T Q alpha``, ``Q = Y K~_theta Y``,
    over ``[0, C]^n``. Free coordinates ``F``: those not held at a bound by the gradient
    ``g = 1 - Q alpha`` (``alpha_i = 0, g_i <= 0`` or ``alpha_i = C, g_i >= 0`` are held).
    The direction ``d`` is at most ``max_cg`` conjugate-gradient steps on the Newton
    system ``Q_FF d = g_F`` from ``d = 0`` (a truncated Newton direction: an ascent
    direction after any number of steps; a conjugate direction of zero curvature, along
    which ``D_theta`` is linear, is followed to its farthest bound and ends the CG). Then
    a projected search ``alpha(t) = clip(alpha + t d, 0, C)``, ``t = 1, 1/2, ...`` but
    never below ``t_first`` (the largest ``t`` at which no coordinate is clipped: there
    the quadratic rises by at least ``t g^T d / 2``), takes the first ``t`` with
    ``D_theta(alpha(t)) >= D_theta(alpha) + 1e-4 g^T (alpha(t) - alpha)`` (the Armijo rule
    along the projection arc, Bertsekas, SIAM J. Control Optim. 20(2), 1982), the exact
    increase ``g_F^T delta - 1/2 delta^T Q_FF delta`` of the quadratic evaluated from
    ``delta = alpha(t) - alpha`` on ``F`` (``free``, when the caller has them from the
    state's exact gradient). Unlike :func:`_face_step` the step does not
    stop at the first bound: the projection lets many coordinates reach their bounds at
    once. With more than ``max_free`` free coordinates (a bound on the rank of ``Q``)
    ``Q_FF`` is singular, the ascent runs along flat directions to the box, and the step
    is :func:`_face_step`'s. Returns the number of ``Q`` products; ``state`` is refreshed,
    or with ``refresh=False`` only updated for the next epoch (:meth:`shift`; the epoch's
    refresh makes it exact).
    """
    data = state.data
    a = state.alpha
    if free is None:
        g = 1.0 - data.y * state.f
        idx = np.flatnonzero(~(((a <= 0.0) & (g <= 0.0)) | ((a >= C) & (g >= 0.0))))
    else:
        idx = free
    if idx.size > max_free:
        if not refresh:  # the face step reads the gradient of every sample
            state.refresh()
        return _face_step(state, C, _FACE_MAX_CG)
    if idx.size == 0:
        return 0
    gF, aF = 1.0 - data.y[idx] * state.f[idx], a[idx]
    dF = np.zeros(idx.size)
    r = gF.copy()
    direction = r.copy()
    rr = float(r @ r)
    products = 0
    for _ in range(max_cg):
        Hp = state.qprod_rows(direction, idx)
        products += 1
        curv = float(direction @ Hp)
        if not curv > 1e-13 * rr * max(1.0, float(np.max(np.abs(Hp)))):
            # D_theta is linear along the direction (Q is singular when there are more
            # free samples than feature dimensions): extend it to the farthest bound
            up, down = direction > 0.0, direction < 0.0
            reach = max(float(np.max((C - aF[up]) / direction[up], initial=0.0)),
                        float(np.max(-aF[down] / direction[down], initial=0.0)))
            dF += reach * direction
            break
        t = rr / curv
        dF += t * direction
        r -= t * Hp
        rr_new = float(r @ r)
        if not rr_new > 0.0:
            break
        direction = r + (rr_new / rr) * direction
        rr = rr_new
    # up to t_first no coordinate is clipped and the quadratic rises by at least
    # (t - t^2 / 2) g^T d >= t g^T d / 2 (d^T Q d <= g^T d for a CG iterate from 0): accepted
    up, down = dF > 0.0, dF < 0.0
    t_first = min(1.0, float(np.min((C - aF[up]) / dF[up], initial=math.inf)),
                  float(np.min(-aF[down] / dF[down], initial=math.inf)))
    t = 1.0
    for _ in range(_MAX_BACKTRACK):
        t = max(t, t_first)
        delta = np.clip(aF + t * dF, 0.0, C) - aF
        ascent = float(gF @ delta)
        if not ascent > 0.0:
            break
        products += 1
        if ascent - 0.5 * float(delta @ state.qprod_rows(delta, idx)) >= _ARMIJO * ascent:
            if refresh:
                a[idx] = aF + delta
                state.refresh()
            else:
                state.shift(idx, delta)
            return products
        if t <= t_first:
            break
        t *= _BACKTRACK
    if refresh:
        state.refresh()
    return products


def _similarity_factors(data: _Data) -> tuple[np.ndarray, np.ndarray]:
    """``(L, view)``: ``G_m = L[:, view == m] L[:, view == m]^T`` (the factors, or the
    eigenvectors of each ``G_m``'s positive eigenvalues scaled by their square roots)."""
    if data.factored:
        F = data.factors
        L = np.zeros((data.T, F.view.size))
        L[np.repeat(np.arange(data.T), np.diff(F.indptr)), F.cols] = F.vals
        return L, F.view
    blocks, views = [], []
    for m, Gm in enumerate(data.dense_G):
        ev, V = np.linalg.eigh(Gm)
        keep = ev > 1e-12 * max(float(ev.max()), 1.0)
        blocks.append(V[:, keep] * np.sqrt(ev[keep]))
        views.append(np.full(int(keep.sum()), m, dtype=np.int64))
    return np.hstack(blocks), np.concatenate(views)


def _feature_blocks(data: _Data, factors: tuple[np.ndarray, np.ndarray] | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(Psi, view)`` with ``K~_theta = Psi diag(theta[view]) Psi^T`` for linear features:
    ``Psi[i] = (L[tau_i, c] x_i)_c`` (n x R d, ``(L, view)`` of :func:`_similarity_factors`
    unless given) and ``view[c]`` the view of column block ``c``, repeated over the
    ``d`` features."""
    X = data.features
    L, view = _similarity_factors(data) if factors is None else factors
    Psi = (L[data.tau][:, :, None] * X[:, None, :]).reshape(X.shape[0], -1)
    return np.ascontiguousarray(Psi), np.repeat(view, X.shape[1])


def _ipm_features(data: _Data) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_feature_blocks` for ``method="ipm"``, which needs linear features and a
    feature dimension ``d sum_m rank(G_m)`` of at most ``_IPM_MAX_DIM`` (checked before
    the features are formed)."""
    if data.kind != "linear":
        raise ValueError("method='ipm' needs kernel='linear' (it works in the feature "
                         "space of the multitask kernel); use method='newton' or 'auto'")
    factors = _similarity_factors(data)
    dim = factors[0].shape[1] * data.features.shape[1]
    if dim > _IPM_MAX_DIM:
        raise ValueError(f"method='ipm' needs d * sum_m rank(G_m) <= {_IPM_MAX_DIM} (its "
                         f"Newton systems have that size); here it is {dim}: use "
                         "method='newton' or 'auto'")
    return _feature_blocks(data, factors)


def _svm_ipm(B: np.ndarray, C: float, tol: float) -> tuple[np.ndarray, int]:
    """The fixed-kernel SVM ``min 1/2 |w|^2 + C sum_i max(0, 1 - b_i^T w)`` (rows ``b_i``
    of ``B``) by the Mehrotra predictor-corrector of :mod:`solvers._ipm` (the WW-SVM's,
    here with ``k = 1`` and ``A = B``), each iteration one ``r x r`` Cholesky of
    ``I + B^T D B``. Stops when ``alpha = clip(lambda, 0, C)`` (the multipliers of the
    margin constraints, dual feasible) and its own weights ``B^T alpha`` have a relative
    gap ``<= tol`` (the pair the caller's certificate evaluates), or, where double
    precision ends the iteration first, with the best such ``alpha`` seen. Returns
    ``(alpha, iterations)``."""
    n, r = B.shape

    def A_mul(W: np.ndarray) -> tuple[np.ndarray, None]:
        return B @ W, None

    def AT_mul(lam: np.ndarray) -> np.ndarray:
        return B.T @ lam

    W = np.zeros((r, 1))
    xi, s_ = np.full((n, 1), 2.0), np.ones((n, 1))
    lam, mu = np.full((n, 1), 0.5 * C), np.full((n, 1), 0.5 * C)
    best, best_gap = np.zeros(n), math.inf
    for it in range(1, _IPM_MAX_ITER + 1):
        alpha = np.clip(lam[:, 0], 0.0, C)
        u = B.T @ alpha  # W(alpha): the weights the solver's certificate evaluates
        primal = 0.5 * float(u @ u) + C * float(np.maximum(0.0, 1.0 - B @ u).sum())
        gap = primal - (float(alpha.sum()) - 0.5 * float(u @ u))
        if gap < best_gap:
            best, best_gap = alpha, gap
        if gap <= tol * max(1.0, abs(primal)):
            return alpha, it - 1
        AW = B @ W
        r_w, r_xi, r_s = W - B.T @ lam, C - lam - mu, AW + xi - 1.0 - s_
        Dm = 1.0 / (xi / mu + s_ / lam)
        try:  # near the floor of double precision the system stops being usable
            L = sla.cho_factor(np.eye(r) + B.T @ (B * Dm), lower=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            return best, it - 1
        dW, dxi, dlam, dmu, ds, t = mehrotra_step((xi, s_, lam, mu, r_w, r_xi, r_s, Dm, L),
                                                  A_mul, AT_mul)
        if not (np.all(np.isfinite(dW)) and t > 1e-12):
            return best, it  # the steps stalled at the rounding level
        W, xi, s_ = W + t * dW, xi + t * dxi, s_ + t * ds
        lam, mu = lam + t * dlam, mu + t * dmu
    return best, _IPM_MAX_ITER


def _figures(state, C: float, p_conj: float) -> tuple[float, float, float]:
    """``(P(W(alpha, theta), theta), D(alpha), D_theta(alpha))`` at the state."""
    hinge = float(np.sum(np.maximum(0.0, 1.0 - state.data.y * state.f)))
    reg = 0.5 * float(state.theta @ state.s)
    asum = float(state.alpha.sum())
    return reg + C * hinge, asum - 0.5 * _pnorm(state.s, p_conj), asum - reg


# ---------------------------------------------------------------------------
# Public solver
# ---------------------------------------------------------------------------


@with_blas_policy
def solve(
    X: Any,
    y: Any,
    tasks: Any,
    G: Any,
    *,
    C: float = PARAMS.default("C"),
    p: float = PARAMS.default("p"),
    kernel: Any = PARAMS.default("kernel"),  # noqa: B008 (a str)
    method: str = PARAMS.default("method"),
    structure: str = PARAMS.default("structure"),
    fix_theta: bool = PARAMS.default("fix_theta"),
    theta0: Any = PARAMS.default("theta0"),  # noqa: B008 (None)
    tol: float = PARAMS.default("tol"),
    max_iter: int = PARAMS.default("max_iter"),
    seed: int = PARAMS.default("seed"),
    init: MTMKLResult | None = None,
    callback=None,
) -> MTMKLResult:
    r"""Train hinge-loss MT-MKL (Problem 1) by dual coordinate ascent (Algorithm E.1).

    Minimises ``1/2 sum_m tr(W_m Q_m W_m^T) / theta_m + C sum_i max(0, 1 - y_i f_{tau(i)}(x_i))``
    over ``W`` and ``theta >= 0``, ``||theta||_p <= 1``, with ``Q_m = G_m^+``.

    Parameters
    ----------
    X : array_like, shape (n, d), or None
        Features (``kernel="linear"``). With precomputed kernels ``X`` is not
        used and may be ``None`` (if given, it must have n rows).
    y : array_like, shape (n,)
        Labels in {-1, +1}.
    tasks : array_like of int, shape (n,)
        Task id of every sample, in ``0..T-1``. A task without samples is
        allowed (its weights come from the similarities alone).
    G : list of M arrays (T, T), an array (M, T, T), or FactoredSimilarities
        Kernel-side task similarities ``G_m = Q_m^{-1}``: symmetric PSD, may be
        singular. One (T, T) array means M = 1. In factor form
        ``G_m = U_m U_m^T`` (:class:`FactoredSimilarities`, e.g. a tree's node
        indicators) they are PSD by construction.
    C : float, > 0
        Loss weight.
    p : float, >= 1 (``inf`` allowed)
        Norm of the kernel-weight constraint ``||theta||_p <= 1``.
    kernel : "linear", array (n, n) or list of M arrays (n, n)
        ``"linear"``: ``phi_m(x) = x`` for every view. Otherwise precomputed
        PSD kernels ``k_m(x_i, x_j)``, one shared by all views or one per view.
    method : {"e1", "alternating", "auto", "newton", "ipm"}
        ``"e1"``: Algorithm E.1 (one coordinate-ascent epoch, then the
        theta-step (E.1) if the primal decreased). ``"alternating"``: Algorithm 1,
        an (almost) exact W-step before every theta-step. ``"newton"``: Algorithm 1
        whose W-step rounds are an epoch over a working set and a projected
        truncated-Newton step on the free coordinates. ``"auto"``: E.1 until
        the relative gap falls by less than half over 10 epochs, then the
        W-steps of ``"newton"``, and ``"ipm"``'s once a Newton W-step needs more
        than 50 epochs (where it applies); ``result.method`` names what ran. ``"ipm"``
        (``kernel="linear"``, ``d sum_m rank(G_m) <= 1000``): Algorithm 1 whose
        W-step is an interior-point method on the feature-space primal (above).
    structure : {"auto", "dense"}
        How the similarities enter the coordinate steps (the iterates are the
        same). ``"auto"`` (linear features): in factor form when given so or
        when every dense ``G_m`` is rank one or diagonal and the factor form
        makes a step cheaper, ``2 nnz(U) < T (T + 1)``; a step then costs
        O(nnz(U[tau_i]) d) instead of O(T d), and the dense matrices are
        checked in O(T^2) each instead of by an eigendecomposition.
        ``"dense"``: every ``G_m`` as a dense T x T matrix, checked to be PSD
        by its eigenvalues (the general path).
    fix_theta : bool
        Keep theta fixed (at ``theta0``, or uniform ``M^{-1/p}``): an SVM with
        the fixed kernel ``sum_m theta_m K~_m``, e.g. Vanilla MTL. The gap is
        then the fixed-theta problem's.
    theta0 : array_like, shape (M,), optional
        Nonnegative starting weights (rescaled onto the unit p-sphere unless
        theta is fixed, where they are used as given). Default ``M^{-1/p}``.
    tol : float
        Stop when ``gap / max(1, |primal|) <= tol`` (checked every epoch).
    max_iter : int
        Maximum outer iterations (epochs for ``"e1"``, theta-steps for
        ``"alternating"`` and ``"newton"``).
    seed : int
        Seed of the per-epoch random order of the samples.
    init : MTMKLResult, optional
        Warm start from a previous result on the same data: its ``alpha``
        (clipped to the new ``[0, C]``) and, unless ``theta0`` is given or theta is
        fixed, its ``theta`` (rescaled to the unit p-sphere).
    callback : callable, optional
        ``callback(state)`` once per outer iteration (``state.iterate`` holds
        ``theta``, ``alpha`` and, for linear features, ``W``); return ``False``
        to stop.

    Returns
    -------
    MTMKLResult
        ``theta``, ``alpha``, ``W`` (linear), ``similarity``, ``primal``,
        ``dual``, ``gap`` (certified), ``n_iter``, ``converged``, ``history``
        (extras: ``theta`` per iteration, ``theta_step`` (1 when taken),
        ``epochs`` (cumulative), ``n_sv``, ``n_at_C``, ``n_moved``).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import mtmkl
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((12, 3)); y = np.where(rng.standard_normal(12) > 0, 1.0, -1.0)
    >>> tasks = np.arange(12) % 2; G = [np.eye(2), np.ones((2, 2))]  # two task similarities
    >>> res = mtmkl.solve(X, y, tasks, G, C=1.0, tol=1e-6)
    >>> res.stop_reason, res.W.shape
    ('converged', (2, 2, 3))
    >>> round(float(np.linalg.norm(res.theta)), 6)  # theta on the unit 2-sphere
    1.0
    """
    v = PARAMS.validate(C=C, p=p, method=method, structure=structure, fix_theta=fix_theta,
                        tol=tol, max_iter=max_iter, seed=seed)
    C, p, method, structure, fix_theta, tol, max_iter, seed = (
        v["C"], v["p"], v["method"], v["structure"], v["fix_theta"], v["tol"], v["max_iter"],
        v["seed"])
    data = _prepare(X, y, tasks, G, kernel, structure)
    callback = check_callback(callback)
    n, M = data.n, data.M
    init = check_init(init, MTMKLResult, alpha=(n,), theta=(M,))
    theta0 = _check_theta0(theta0, M, fix_theta)
    theta = _start_theta(theta0, init, fix_theta, M, p)
    alpha = np.zeros(n) if init is None else np.clip(np.array(init.alpha, dtype=float), 0.0, C)
    state: _FactoredLinearState | _LinearState | _KernelState
    if data.factored:
        state = _FactoredLinearState(data, alpha, theta)
    else:
        state = (_LinearState if data.Ks is None else _KernelState)(data, alpha, theta)
    switch = SlowProgress(_SWITCH_WINDOW, _SWITCH_RATE, method == "auto" and not fix_theta)
    run = _Run(state, n, C, p, tol, np.random.default_rng(seed), switch,
               newton=method in ("newton", "auto"),
               features=_ipm_features(data) if method == "ipm" else None,
               escalate=method == "auto" and not fix_theta)
    ipm_at = 0
    mon = Monitor("mtmkl", tol=tol, max_iter=max_iter, callback=callback)
    for it in range(1, max_iter + 1):
        exact = not fix_theta and (method in _EXACT or run.switch.update(it))
        moved = run.w_step(exact)
        if run.features is not None and not ipm_at:
            ipm_at = it
        primal, dual, stepped = run.theta_step(fix_theta, method in _EXACT, mon, it)
        if mon.record(
            it, primal, dual, iterate=None if callback is None else _iterate(state, data),
            theta=state.theta.copy(), theta_step=int(stepped), epochs=run.epochs,
            n_sv=int(np.count_nonzero(state.alpha > 0)),
            n_at_C=int(np.count_nonzero(state.alpha >= C)), n_moved=moved,
        ):
            break
    ran = method
    if method == "auto":  # name what ran: E.1 alone, or E.1 then Algorithm 1's W-steps
        ran = f"e1+newton@{run.switch.at}" if run.switch.slow else "e1"
        ran += f"+ipm@{ipm_at}" if ipm_at else ""
    return MTMKLResult(
        **mon.result_fields(),
        method=ran,
        params=PARAMS.record(C=C, p=p, method=method, structure=structure,
                             fix_theta=fix_theta, tol=tol, max_iter=max_iter, seed=seed,
                             theta0=None if theta0 is None else [float(x) for x in theta0],
                             kernel=data.kind),
        theta=state.theta.copy(),
        alpha=state.alpha.copy(),
        W=state.weights(),
        task_weights=None if isinstance(state, _KernelState) else state.Wsum.copy(),
        similarity=np.array(state.Gtheta),
        view_norms=state.s.copy(),
        p=p,
        kernel=data.kind,
        y=data.y,
        tasks=data.tau,
        G=data.G,
        fixed_theta=fix_theta,
        shared_kernel=data.shared,
    )


def _check_theta0(theta0: Any, M: int, fix_theta: bool) -> np.ndarray | None:
    """``theta0`` validated: >= 0 with a positive entry, > 0 everywhere when learned."""
    if theta0 is None:
        return None
    theta0 = check_vector(theta0, "theta0", size=M)
    if np.any(theta0 < 0) or not np.any(theta0 > 0):
        raise ValueError("theta0 must be >= 0 with at least one positive entry")
    if not fix_theta and np.any(theta0 == 0):
        # a_m = theta_m^2 s_m: a zero weight is a fixed point of the theta-step, so
        # the run could never reach an optimum that uses that view.
        raise ValueError("theta0 must be > 0 in every entry when theta is learned (a zero "
                         "weight is a fixed point of the theta-step; use fix_theta=True "
                         "to keep it at zero)")
    return theta0


def _start_theta(theta0: np.ndarray | None, init: Any, fix_theta: bool, M: int,
                 p: float) -> np.ndarray:
    """The first kernel weights: ``theta0``, a warm start's, or uniform (unit p-norm
    when learned)."""
    if theta0 is not None:
        theta = theta0.copy()
    elif init is not None and not fix_theta and np.any(init.theta > 0):
        theta = np.array(init.theta, dtype=float)
        if np.any(theta <= 0):
            # zero weights (e.g. sparse p = 1 solutions) are fixed points of the
            # theta-step: restart them from halfway to the uniform weights.
            theta = 0.5 * (theta / _pnorm(theta, p) + uniform_theta(M, p))
    else:
        theta = uniform_theta(M, p)
    if not fix_theta:
        theta = theta / _pnorm(theta, p)
    return theta


class _Run:
    """One run's W-steps and theta-steps on ``state`` (E.1 and Algorithm 1)."""

    def __init__(self, state: Any, n: int, C: float, p: float, tol: float,
                 rng: np.random.Generator, switch: SlowProgress, newton: bool = False,
                 features: tuple[np.ndarray, np.ndarray] | None = None,
                 escalate: bool = False) -> None:
        self.state, self.n, self.C, self.p, self.tol, self.rng = state, n, C, p, tol, rng
        self.p_conj = _conjugate(p)
        self.switch = switch
        self.newton = newton
        self.features = features  # method="ipm": (Psi, view) of _feature_blocks
        self.escalate = escalate  # method="auto": may take ipm's W-steps (once)
        self.epochs = 0
        self.o, _, _ = _figures(state, C, self.p_conj)  # E.1 line 5: o = nC at alpha = 0

    def _epoch(self, rows: np.ndarray | None = None, exact: bool = True) -> int:
        """A coordinate-ascent epoch over all samples, or over ``rows`` (random order),
        then the state's figures recomputed exactly, or (``exact=False``, where the state
        can) from the weights the epoch kept."""
        order = self.rng.permutation(self.n if rows is None else rows).astype(np.int64)
        moved = self.state.epoch(order, self.C)
        self.epochs += 1
        if exact:
            self.state.refresh()
        elif rows is not None and hasattr(self.state, "update_rows"):
            self.state.update_rows(rows)
        else:
            self.state.update()
        return moved

    def _inner_gap(self) -> float:
        P_in, _, D_in = _figures(self.state, self.C, self.p_conj)
        return relative_gap(max(P_in - D_in, 0.0), P_in)

    def _scan(self) -> tuple[float, np.ndarray, np.ndarray]:
        """``(inner relative gap, free coordinates, working set)`` at the exact state, in
        one compiled pass over ``g = 1 - Q alpha`` (:func:`_kkt_scan`). The working set
        holds all samples but those held at a bound by a gradient larger than the
        largest KKT violation ``v`` (``alpha_i = 0`` with ``g_i < -v``, ``alpha_i = C``
        with ``g_i > v``): their coordinate steps are zero now and stay zero until ``g``
        moves by ``v``."""
        state = self.state
        free, work = np.empty(self.n, dtype=np.int64), np.empty(self.n, dtype=np.int64)
        hinge, _, n_free, n_work = _kkt_scan(state.data.y, state.f, state.alpha, self.C,
                                             free, work)
        reg = 0.5 * float(state.theta @ state.s)
        P_in = reg + self.C * hinge
        D_in = float(state.alpha.sum()) - reg
        return relative_gap(max(P_in - D_in, 0.0), P_in), free[:n_free], work[:n_work]

    def _scan_rows(self, rows: np.ndarray, held: np.ndarray, n_held: int
                   ) -> tuple[float, np.ndarray, np.ndarray]:
        """:meth:`_scan` over the working set ``rows`` alone (factor form, decision values
        exact on ``rows`` only). The samples outside it sit at a bound with a gradient
        pointing out of the box; those at ``C`` (``n_held`` of them, ``held`` the task sums
        of their ``y_i x_i``) add ``sum (1 - y_i f_i) = n_held - <Wsum, held>`` to the
        hinge as long as they stay so (the W-step's last refresh and the outer
        certificate use every sample)."""
        state = self.state
        free, work = np.empty(rows.size, dtype=np.int64), np.empty(rows.size, dtype=np.int64)
        hinge, _, n_free, n_work = _kkt_scan(state.data.y[rows], state.f[rows],
                                             state.alpha[rows], self.C, free, work)
        hinge += n_held - float(np.sum(state.Wsum * held))
        reg = 0.5 * float(state.theta @ state.s)
        P_in = reg + self.C * hinge
        D_in = float(state.alpha.sum()) - reg
        return (relative_gap(max(P_in - D_in, 0.0), P_in), rows[free[:n_free]],
                rows[work[:n_work]])

    def _hold(self, rows: np.ndarray, kept: np.ndarray, held: np.ndarray) -> int:
        """Adds the task sums of ``y_i x_i`` of the samples of ``rows`` not in ``kept``
        that sit at ``C`` to ``held``; returns how many there were."""
        state, d = self.state, self.state.data
        mask = np.ones(rows.size, dtype=bool)
        mask[np.searchsorted(rows, kept)] = False
        out = rows[mask]
        out = out[state.alpha[out] >= self.C]
        if out.size:
            add = np.empty_like(held)
            _task_sums_rows(d.X, d.tau, d.y[out], out, add)
            held += add
        return int(out.size)

    def w_step(self, exact: bool) -> int:
        """E.1's coordinate epoch, or (``exact``) Algorithm 1's W-step: epochs and
        conjugate gradients on the free face until the inner gap is below a tolerance
        tied to the outer one; with ``features`` (``method="ipm"``) the fixed-theta SVM
        solved by :func:`_svm_ipm` to ``_IPM_INNER x tol``. Returns the coordinates
        moved."""
        if self.features is not None:
            return self._ipm_w_step()
        if not exact:
            return self._epoch()
        inner_tol = max(0.1 * self.tol,
                        min(_INNER_TOL_MAX, _INNER_TOL_FACTOR * self.switch.last_rel))
        moved = 0
        if self.newton:
            # rounds: an epoch over the working set (the inner figures from the weights it
            # kept), then a Newton step that updates only what the next epoch reads
            partial = hasattr(self.state, "update_rows")
            rows = self._scan()[2]
            if partial:
                held = np.zeros_like(self.state.Wsum)
                n_held = self._hold(np.arange(self.n), rows, held)
            for done in range(_INNER_MAX_EPOCHS):
                if done == _IPM_AFTER_EPOCHS and self._take_ipm():
                    return moved + self._ipm_w_step()
                moved += self._epoch(rows, exact=False)
                if partial:
                    gap, free, kept = self._scan_rows(rows, held, n_held)
                    n_held += self._hold(rows, kept, held)
                    rows = kept
                else:
                    gap, free, rows = self._scan()
                if gap <= inner_tol:
                    break
                _newton_face_step(self.state, self.C, _NEWTON_MAX_CG,
                                  self.state.data.rank_bound, refresh=False, free=free)
            self.state.refresh()  # the theta-step and the certificate: the exact state
            return moved
        for _ in range(_INNER_MAX_EPOCHS):
            moved += self._epoch()
            if self._inner_gap() <= inner_tol:
                break
            # the epoch was not enough: conjugate gradients on the free face
            _face_step(self.state, self.C, _FACE_MAX_CG)
            if self._inner_gap() <= inner_tol:
                break
        return moved

    def _take_ipm(self) -> bool:
        """``method="auto"``: take ``method="ipm"``'s W-steps from now on, where it
        applies (asked once)."""
        if not self.escalate:
            return False
        self.escalate = False
        try:
            self.features = _ipm_features(self.state.data)
        except ValueError:  # a precomputed kernel, or a feature space beyond its limit
            return False
        return True

    def _ipm_w_step(self) -> int:
        """The fixed-theta SVM solved by :func:`_svm_ipm` in the feature space
        (``features``) to ``_IPM_INNER x tol``; returns the coordinates moved."""
        assert self.features is not None
        Psi, view = self.features
        state = self.state
        B = (state.data.y[:, None] * Psi) * np.sqrt(state.theta)[view]
        alpha, _ = _svm_ipm(B, self.C, _IPM_INNER * self.tol)
        moved = int(np.count_nonzero(alpha != state.alpha))
        state.alpha[:] = alpha
        state.refresh()
        return moved

    def theta_step(self, fix_theta: bool, always: bool, mon: Monitor, it: int
                   ) -> tuple[float, float, bool]:
        """``(primal, dual, stepped)`` after the theta-step (E.1 lines 12-16: only when
        the primal decreased since the last one; Algorithm 1 after every W-step); the
        figures before it are checked finite (``mon``, iteration ``it``)."""
        state = self.state
        primal, dual, dual_theta = _figures(state, self.C, self.p_conj)
        mon.check_finite(it, primal_objective=primal, dual_objective=dual)
        stepped = False
        if fix_theta:
            dual = dual_theta
        elif relative_gap(max(primal - dual, 0.0), primal) > self.tol:
            # a_m = ||W_m||^2_Q = theta_m^2 s_m
            o_old, self.o = self.o, primal
            if always or self.switch.slow or self.o < o_old:
                new = _theta_step(state.theta**2 * state.s, self.p)
                if new is not None:
                    state.set_theta(new)
                    state.sync()  # (E.5): W = theta_new Z G_m, decision values updated
                    primal, _, _ = _figures(state, self.C, self.p_conj)
                    stepped = True
        self.switch.last_rel = relative_gap(max(primal - dual, 0.0), primal)
        return primal, dual, stepped


def _iterate(state: Any, data: Any) -> dict[str, np.ndarray]:
    """What the callback sees of the iterate."""
    out = {"theta": state.theta.copy(), "alpha": state.alpha.copy()}
    if data.Ks is None:
        out["W"] = state.weights()
    return out


# ------------------------------------------------------------------ the saved model


def _saved_scores(sm: Any, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """``x^T sum_m w_{m,task}`` for each row."""
    return scores_per_task(X, sm.arrays["W"].sum(axis=0), tasks)


def _saved_predict(sm: Any, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """The class of the sign of the score."""
    return sign_classes(sm, _saved_scores(sm, X, tasks))


def _saved_prepare(_res: Any, _est: Any, _arrays: Any, names: dict[str, Any],
                   reference: Any) -> None:
    if reference is not None:
        raise ValueError("reference points are the metric learner's; this model has none")
    if names["class_names"] is None:  # the solver's labels are -1 / +1
        names["class_names"] = np.array([-1.0, 1.0])


#: How a fitted MT-MKL model is saved and predicts (:class:`solvers.saved.SavedForm`).
SAVED_FORM = SavedForm(
    arrays=array_specs(("W", "v m d", True)),
    names={"feature_names": "d", "class_names": "2", "task_names": "m"},
    features=("W", 2), decide=_saved_scores, predict=_saved_predict, per_task=True,
    prepare=_saved_prepare)
