r"""Convex relaxed alternating structure optimisation (cASO), certified.

Multitask learning with a shared low-dimensional structure (Chen, Tang, Liu &
Ye). Task ``l`` has data ``X_l`` (n_l x d) and targets ``y_l`` (n_l); the
weight vectors form ``U = [u_1 ... u_m]`` (d x m) and ``M`` (d x d) is the
relaxed shared structure::

    min_{U, M}  F(U, M) = sum_l (1/n_l) sum_i L(u_l^T x_i^l, y_i^l)
                          + c tr(U^T (eta I + M)^{-1} U)
    subject to  M in Mset = {M symmetric : tr(M) = h, 0 <= M <= I},

with ``c = alpha * eta * (1 + eta)``, ``alpha > 0``, ``eta > 0`` and
``0 < h <= d`` (``h`` may be fractional). Losses: ``squared``
``(z - y)^2``, ``hinge`` ``max(0, 1 - y z)`` and ``logistic``
``log(1 + exp(-y z))`` (labels in {-1, +1} for the last two). No offsets.
After solving, ``Theta`` holds the top ``round(h)`` eigenvectors of ``M`` as
rows and ``V = Theta U``.

Algorithms (``method=``)
------------------------
``"apg"`` (the paper's Algorithm 1, appendices A and B.2): accelerated
projected gradient on the pair ``(U, M)`` with the shared engine
:class:`solvers.apg.APG` (FISTA, doubling line search of Eq. (37)). The
smooth part is ``c tr(U^T A^{-1} U)`` (+ the squared or logistic loss),
``A = eta I + M``, with ``grad_U = 2c A^{-1} U`` and
``grad_M = -c A^{-1} U U^T A^{-1}``. The proximal step projects ``M`` onto
``Mset`` (:func:`solvers.prox.project_fantope`: eigenvalues onto the bounded
simplex) and, for the hinge loss, applies the exact per-task prox of Eq. (74)
(box-constrained dual solved by coordinate ascent). The extrapolated point
can leave the domain ``eta I + M > 0`` when ``eta < 1``; the smooth part
then reports ``inf`` and the engine restarts the momentum.

``"apg_precond"``: Algorithm 1 with three standard changes for ill-conditioned
data (unscaled features make ``X_l^T X_l / n_l`` span many orders of magnitude,
and Algorithm 1's single step ``1 / L`` is then set by the largest curvature):

- a fixed variable metric on the ``U`` block (variable-metric forward-backward,
  Chouzenoux, Pesquet & Repetti 2014), per task
  ``H_l = kappa X_l^T X_l / n_l + (2c / (eta + 1)) I`` (``kappa = 2`` squared,
  ``1/4`` logistic: the loss Hessian or its bound, plus the smallest curvature of
  the regulariser). It is run as a change of variables ``u_l = R_l^{-1} v_l``
  (``H_l = R_l^T R_l``), so the engine stays Euclidean: in ``v`` the smooth part's
  ``U``-block curvature lies in ``[eta / (eta + 1), (eta + 1) / eta]`` for every
  feasible ``M``; the ``M`` block and its projection onto ``Mset`` are unchanged
  (the smooth losses have no prox on ``U``). The hinge loss keeps the identity metric
  (its prox, Eq. (74), is Euclidean; the smooth part is the regulariser alone);
- gradient-based adaptive restart (O'Donoghue & Candès 2015);
- a step that can grow: ``L <- 0.9 L`` before each line search of Eq. (37)
  (TFOCS's line-search increase, Becker, Candès & Grant 2011).

The certificate is the same as Algorithm 1's (computed from ``U``).

``"bcd"`` (Algorithm 2, appendix B.1): block coordinate descent. U-step with
``M`` fixed, per task: squared loss solves
``(X^T X / n + c A^{-1}) u = X^T y / n``, in the variables ``v = A^{-1/2} u``
(a d x d system) or, when ``n < d``, as ``u = A X^T a`` with the n x n system
``(X A X^T + n c I) a = y`` (push-through identity; ``solve(ustep=...)``);
hinge loss solves the dual ``max_{0 <= b <= 1/n} sum b - z^T A z / (4c)``,
``z = sum_i b_i y_i x_i``, ``u = A z / (2c)`` by coordinate ascent; logistic
loss runs Newton's method (its systems in the same two forms). M-step with
``U`` fixed: with ``U U^T = P diag(sigma^2) P^T``, ``M = P diag(gamma) P^T`` where gamma solves
``min sum sigma_i^2 / (eta + gamma_i)``, ``sum gamma = h``, ``0 <= gamma <= 1``
(Eq. (71)): ``gamma_i = clip(sigma_i / sqrt(t) - eta, 0, 1)`` with ``t`` found
by appendix C's median search (``m_step="median"``, Algorithm 3 with its
typos fixed) or by a sort-based sweep (``m_step="sort"``). When ``m < d`` the
eigenpairs of ``U U^T`` come from the thin SVD of ``U`` and ``M`` is kept as
its eigenpairs (the ``d - m`` directions outside the range of ``U`` share one
eigenvalue).

Certificate
-----------
``phi(U) = min_{M in Mset} tr(U^T (eta I + M)^{-1} U)`` is what the M-step
computes; the primal value is ``P(U) = loss(U) + c phi(U) <= F(U, M)`` for
every feasible ``M``. With per-task dual vectors ``theta_l`` and
``V = [X_1^T theta_1, ..., X_m^T theta_m]``::

    D(theta) = sum_l -l_l*(-theta_l) - 1/(4c) (eta ||V||_F^2 + s_h(V V^T)),

``s_h`` = sum of the ``h`` largest eigenvalues (fractional ``h``: the
``floor(h)`` largest plus ``h - floor(h)`` times the next). Per task,
``-l*(-theta) = theta^T y - (n/4) ||theta||^2`` (squared),
``sum_i y_i theta_i`` if ``0 <= y_i theta_i <= 1/n`` (hinge), and
``-(1/n) sum_i [p_i log p_i + (1 - p_i) log(1 - p_i)]``, ``p_i = n y_i theta_i``
in [0, 1] (logistic). The smooth losses use ``theta = -grad loss`` at ``U``;
the hinge loss uses the dual variables of the U-step (BCD) or of the last
prox (APG), which are feasible by construction. ``gap = P(U) - D(theta)``
bounds the suboptimality of ``U`` (and of ``(U, M)`` with the returned ``M``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import expit, xlogy

from . import _caso_kernels as _k
from ._blas import single_threaded_blas
from .apg import APG
from .base import Monitor, NumericalError, Result
from .params import MAX_ITER, TOL, ParamSpec, ParamSpecs
from .prox import project_fantope, sym
from .saved import SavedForm, array_specs, scores_per_task, sign_classes
from .validation import (
    DATA_MAX_ABS,
    check_array,
    check_binary_labels,
    check_callback,
    check_choice,
    check_init,
    check_matrix,
    check_scalar,
    check_task_lists,
)

__all__ = [
    "LOSSES",
    "METHODS",
    "M_STEPS",
    "PARAMS",
    "USTEPS",
    "CASOResult",
    "dual_objective",
    "hinge_prox",
    "m_step",
    "m_step_gamma",
    "objective",
    "primal_objective",
    "solve",
    "subspace_dim",
    "sum_largest",
]

#: The parameters of :func:`solve`, declared once (defaults, ranges, choices, help).
#: ``alpha`` and ``eta`` are bounded to [1e-8, 1e8]: far outside it
#: ``c = alpha eta (1 + eta)`` under- or overflows (``eta = 1e-300`` divides by zero
#: in the M-step, ``eta = 1e300`` makes ``c`` infinite); inside it every
#: method/loss pair was checked to run without breakdown.
PARAMS = ParamSpecs(
    ParamSpec("alpha", 0.1, "regularisation weight (c = alpha eta (1 + eta))",
              low=1e-8, high=1e8, low_inclusive=True),
    ParamSpec("eta", 1.0, "eta > 0: from trace-norm-like (small) to ridge-like (large)",
              low=1e-8, high=1e8, low_inclusive=True),
    ParamSpec("h", 2.0, "trace of M: relaxed dimension of the shared subspace, 0 < h <= d "
              "(fractional values allowed)", low=0.0),
    ParamSpec("loss", "squared", "loss function", choices=("squared", "hinge", "logistic")),
    ParamSpec("method", "bcd", "algorithm: APG (Algorithm 1), APG with a per-task metric, "
              "adaptive restart and a growing step (apg_precond), or BCD (Algorithm 2; usually "
              "much faster, the default)", choices=("apg", "apg_precond", "bcd")),
    TOL,
    replace(MAX_ITER, default=5000),
    ParamSpec("m_step", "median", "M-step search (appendix C median search or sort)",
              choices=("median", "sort")),
    ParamSpec("restart", False, "APG: adaptive momentum restart (not in Algorithm 1; "
              "apg_precond always restarts)"),
    ParamSpec("ustep", "auto", "BCD's U-step systems (squared/logistic loss): n_l x n_l "
              "(kernel), d x d (primal), or kernel for tasks with n_l < d (auto); same "
              "iterates up to rounding", choices=("auto", "kernel", "primal")),
)
LOSSES = PARAMS["loss"].choices
METHODS = PARAMS["method"].choices
M_STEPS = PARAMS["m_step"].choices
#: Forms of BCD's squared-loss U-step (``solve(ustep=...)``).
USTEPS = PARAMS["ustep"].choices

#: BCD's hinge U-step (dual coordinate ascent) follows the accuracy reached so far:
#: largest margin violation <= clip(_INNER_FACTOR * relative gap, _INNER_MIN, _INNER_MAX).
_INNER_FACTOR = 1e-3
_INNER_MIN = 1e-12
_INNER_MAX = 1e-4
_INNER_SWEEPS = 2000
#: APG's hinge prox (Eq. (74)) is solved to this margin violation: its dual variables are
#: the certificate's dual point, and a looser prox (tied to the gap) stalls the gap at
#: small eta (c small amplifies the dual's error by 1 / (4c)).
_PROX_TOL = 1e-10
#: ``method="apg_precond"``: ``L`` is multiplied by this before each line search, so the
#: step can grow back (TFOCS's line-search increase parameter).
_PRECOND_SHRINK = 0.9
# ---------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, kw_only=True)
class CASOResult(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    U : ndarray, shape (d, m)
        Task weight vectors as columns; task ``l`` predicts ``X @ U[:, l]``.
    M : ndarray, shape (d, d)
        The shared structure: the exact minimiser of ``F(U, M)`` over ``Mset``
        for the returned ``U`` (for BCD the algorithm's own last M-step), so
        ``objective(U, M) == primal``.
    Theta : ndarray, shape (k, d)
        Top ``k = max(1, round(h))`` eigenvectors of ``M`` as rows.
    V : ndarray, shape (k, m)
        ``Theta @ U``: task coordinates in the shared subspace.
    gamma : ndarray, shape (d,)
        Eigenvalues of ``M`` in decreasing order (in [0, 1], summing to ``h``).
    dual_vars : tuple of ndarray
        The dual point ``theta_l`` (one vector of length ``n_l`` per task) of
        the certificate.
    loss : str
        The loss function.
    c : float
        ``alpha * eta * (1 + eta)``.
    """

    U: np.ndarray
    M: np.ndarray
    Theta: np.ndarray
    V: np.ndarray
    gamma: np.ndarray
    dual_vars: tuple
    loss: str
    c: float

    def decision_function(self, X: Any, task: int) -> np.ndarray:
        """Scores ``X @ U[:, task]`` of one task."""
        X = check_matrix(X, "X", n_cols=self.U.shape[0])
        if not (isinstance(task, (int, np.integer)) and 0 <= int(task) < self.U.shape[1]):
            raise ValueError(f"task must be an integer in [0, {self.U.shape[1] - 1}], got {task!r}")
        return X @ self.U[:, int(task)]

    def predict(self, X: Any, task: int) -> np.ndarray:
        """Predictions of one task: scores (squared loss) or signs in {-1, +1}."""
        s = self.decision_function(X, task)
        if self.loss == "squared":
            return s
        return np.where(s >= 0.0, 1.0, -1.0)


# ---------------------------------------------------------------------------
# Data and losses (tasks stored concatenated)
# ---------------------------------------------------------------------------


class _Tasks:
    """Concatenated task data with fast per-task products."""

    def __init__(self, Xs: list[np.ndarray], ys: list[np.ndarray]) -> None:
        self.m = len(Xs)
        self.d = Xs[0].shape[1]
        self.n = np.array([X.shape[0] for X in Xs], dtype=np.int64)
        self.offs = np.concatenate([[0], np.cumsum(self.n)]).astype(np.int64)
        self.X = np.ascontiguousarray(np.vstack(Xs))
        self.y = np.ascontiguousarray(np.concatenate(ys))
        self.w = np.repeat(1.0 / self.n, self.n)
        self.task = np.repeat(np.arange(self.m), self.n)
        self.sqn = np.einsum("ij,ij->i", self.X, self.X)
        self.equal = bool(np.all(self.n == self.n[0]))
        # the (m, n, d) view when every task has n rows; an empty placeholder otherwise
        self.X3 = (self.X.reshape(self.m, int(self.n[0]), self.d) if self.equal
                   else np.empty((0, 0, self.d)))
        self.Xs = [self.X[self.offs[t]:self.offs[t + 1]] for t in range(self.m)]

    def scores(self, U: np.ndarray) -> np.ndarray:
        """``z`` with ``z_i = x_i^T u_{task(i)}`` (length N)."""
        if self.equal:
            return np.matmul(self.X3, U.T[:, :, None]).ravel()
        return _k.task_scores(self.X, self.offs, np.ascontiguousarray(U.T))

    def back(self, r: np.ndarray) -> np.ndarray:
        """``V`` (d x m) with ``V[:, l] = X_l^T r_l``."""
        if self.equal:
            R = r.reshape(self.m, int(self.n[0]), 1)
            return np.matmul(self.X3.transpose(0, 2, 1), R)[:, :, 0].T
        return _k.task_back(self.X, self.offs, np.ascontiguousarray(r, dtype=float)).T

    def split(self, v: np.ndarray) -> tuple[np.ndarray, ...]:
        return tuple(v[self.offs[t]:self.offs[t + 1]].copy() for t in range(self.m))

    def per_task_sum(self, v: np.ndarray) -> np.ndarray:
        return np.add.reduceat(v, self.offs[:-1]) if v.size else np.zeros(self.m)


def _loss_value(loss: str, z: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * _loss_terms(loss, z, y)))


def _loss_terms(loss: str, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    if loss == "squared":
        return (z - y) ** 2
    if loss == "hinge":
        return np.maximum(0.0, 1.0 - y * z)
    return np.logaddexp(0.0, -y * z)


def _loss_grad(loss: str, z: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Gradient of the (smooth) weighted loss with respect to the scores."""
    if loss == "squared":
        return 2.0 * w * (z - y)
    return -w * y * expit(-y * z)


def _conj_value(loss: str, theta: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """``sum_l -l_l*(-theta_l)`` (``-inf`` outside the conjugate's domain)."""
    if loss == "squared":
        return float(theta @ y - 0.25 * np.sum(theta * theta / w))
    p = theta * y / w
    tol = 1e-12
    if np.any(p < -tol) or np.any(p > 1.0 + tol):
        return -math.inf
    p = np.clip(p, 0.0, 1.0)
    if loss == "hinge":
        return float(np.sum(w * p))
    return float(-np.sum(w * (xlogy(p, p) + xlogy(1.0 - p, 1.0 - p))))


# ---------------------------------------------------------------------------
# The M-step and the spectral pieces of the certificate
# ---------------------------------------------------------------------------


def subspace_dim(h: float) -> int:
    """Dimension ``k = max(1, round(h))`` of the shared subspace ``Theta`` (halves round up).

    Parameters
    ----------
    h : float, > 0
        The trace bound of ``M``.

    Returns
    -------
    int
        The subspace dimension.

    Examples
    --------
    >>> from solvers import caso
    >>> caso.subspace_dim(1.5), caso.subspace_dim(0.2)
    (2, 1)
    """
    h = check_scalar(h, "h", low=0.0)
    return max(1, math.floor(h + 0.5))


def sum_largest(eigs: Any, h: float) -> float:
    """``s_h``: sum of the ``floor(h)`` largest values plus ``(h - floor(h))`` times the next.

    This is ``max {sum_i g_i e_i : sum g = h, 0 <= g <= 1}``, the support
    function of the bounded simplex (``max_{M in Mset} tr(M S)`` for a
    symmetric ``S`` with eigenvalues ``eigs``).

    Parameters
    ----------
    eigs : array_like, shape (d,)
        The values (eigenvalues of ``S``).
    h : float, in [0, d]
        How many of the largest values count (a fractional last one).

    Returns
    -------
    float
        ``s_h(eigs)``.

    Examples
    --------
    >>> from solvers import caso
    >>> caso.sum_largest([3.0, 2.0, 1.0], 1.5)  # 3 + 0.5 * 2
    4.0
    """
    e = np.sort(check_array(eigs, "eigs", ndim=None).ravel())[::-1]
    h = check_scalar(h, "h", low=0.0, low_inclusive=True, high=float(e.size))
    k = math.floor(h)
    out = float(np.sum(e[:k]))
    if k < e.size and h > k:
        out += (h - k) * float(e[k])
    return out


def m_step_gamma(sigma: Any, eta: float, h: float, *,
                 method: str = PARAMS.default("m_step")) -> np.ndarray:
    """Solve Eq. (71): ``min sum_i sigma_i^2 / (eta + gamma_i)`` over the bounded simplex.

    Constraints ``sum_i gamma_i = h``, ``0 <= gamma_i <= 1``. The solution is
    ``gamma_i = clip(sigma_i / sqrt(t) - eta, 0, 1)`` with ``t`` such that the
    constraint holds (Eqs. (78)–(82)); directions with ``sigma_i = 0`` share
    whatever mass the others leave (evenly).

    Parameters
    ----------
    sigma : array_like, shape (d,)
        Non-negative singular values.
    eta : float, > 0
    h : float, in (0, d]
    method : {"median", "sort"}
        Appendix C's median search (expected linear time) or a sort-based
        breakpoint sweep (O(d log d)).

    Returns
    -------
    ndarray, shape (d,)
        ``gamma``, the eigenvalues of the optimal ``M`` along the singular vectors.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import caso
    >>> caso.m_step_gamma(np.array([3.0, 1.0, 0.0]), eta=1.0, h=1.0)
    array([1., 0., 0.])
    """
    sigma = check_array(sigma, "sigma", ndim=1)
    if np.any(sigma < 0):
        raise ValueError("sigma must be non-negative")
    eta = PARAMS["eta"].validate(eta)
    h = check_scalar(h, "h", low=0.0, high=float(sigma.size))
    method = check_choice(method, "method", M_STEPS)
    return _gamma(sigma, eta, h, method)


def _gamma(sigma: np.ndarray, eta: float, h: float, method: str) -> np.ndarray:
    # gamma(sigma) = gamma(c sigma) for every c > 0 (the threshold sqrt(t) scales with
    # sigma), so work with sigma / max(sigma): sigma_i^2 can neither underflow to 0 (a
    # division by zero for sigma ~ 1e-300) nor overflow (sigma ~ 1e200).
    fn = _k.gamma_median if method == "median" else _k.gamma_sort
    sigma = np.ascontiguousarray(sigma, dtype=np.float64)
    top = float(sigma.max()) if sigma.size else 0.0
    if top > 0.0:
        sigma = sigma / top
    gamma, _ = fn(sigma, float(eta), float(h))
    return gamma


class _Structure:
    """``M = P diag(g) P^T + g0 (I - P P^T)``: eigenpairs of a matrix in ``Mset``.

    ``P`` (d x r) has orthonormal columns, ``g`` (r,) the eigenvalues on them in
    decreasing order and ``g0`` the eigenvalue on their orthogonal complement
    (``0`` when ``r == d``). Powers of ``A = eta I + M`` are formed in O(d^2 r).
    """

    __slots__ = ("P", "d", "g", "g0")

    def __init__(self, P: np.ndarray, g: np.ndarray, g0: float = 0.0) -> None:
        self.P, self.g, self.g0, self.d = P, g, float(g0), P.shape[0]

    def power(self, eta: float, p: float) -> np.ndarray:
        """``(eta I + M)^p`` as a dense symmetric matrix."""
        P = self.P
        if P.shape[1] == self.d:
            return sym((P * (eta + self.g) ** p) @ P.T)
        a0 = (eta + self.g0) ** p
        out = (P * ((eta + self.g) ** p - a0)) @ P.T
        out[np.diag_indices(self.d)] += a0
        return sym(out)

    def times(self, X: np.ndarray, eta: float, p: float = 1.0) -> np.ndarray:
        """``X (eta I + M)^p`` in O(rows d |S|), ``S`` the directions where ``g != g0``."""
        keep = self.g != self.g0
        Ps = self.P[:, keep]
        a0 = (eta + self.g0) ** p
        return a0 * X + ((X @ Ps) * ((eta + self.g[keep]) ** p - a0)) @ Ps.T

    def dense(self) -> np.ndarray:
        """``M`` as a dense matrix."""
        return self.power(0.0, 1.0) if self.g0 > 0.0 or self.P.shape[1] < self.d else sym(
            (self.P * self.g) @ self.P.T)

    def gamma(self) -> np.ndarray:
        """All ``d`` eigenvalues of ``M`` in decreasing order."""
        return np.concatenate([self.g, np.full(self.d - self.g.size, self.g0)])

    def basis(self, k: int) -> np.ndarray:
        """Eigenvectors (d x k) of the ``k`` largest eigenvalues of ``M``."""
        r = self.P.shape[1]
        if k <= r:
            return self.P[:, :k]
        Q, _ = np.linalg.qr(self.P, mode="complete")  # completes P to a basis of R^d
        return np.concatenate([self.P, Q[:, r:k]], axis=1)


def _m_step_structure(U: np.ndarray, eta: float, h: float, method: str
                      ) -> tuple[_Structure, float]:
    """``(structure, phi)``: exact minimiser of ``tr(U^T (eta I + M)^{-1} U)`` over Mset.

    With ``U U^T = P diag(lambda) P^T`` the minimiser shares ``P`` and takes
    ``gamma = m_step_gamma(sqrt(lambda))``. For ``m < d`` the eigenpairs come
    from the thin SVD of ``U`` (O(d m^2)): the remaining ``d - m`` eigenvalues of
    ``U U^T`` are 0 and share one value of ``gamma`` (the complement's ``g0``).
    """
    d, m = U.shape
    if m < d:
        P, s, _ = np.linalg.svd(U, full_matrices=False)
        lam = s * s
    else:
        lam, P = np.linalg.eigh(U @ U.T)
        lam = lam[::-1]
        P = P[:, ::-1]
    r = lam.size
    top = lam[0] if r else 0.0
    lam = np.where(lam > d * np.finfo(float).eps * max(top, 0.0), lam, 0.0)
    sigma = np.concatenate([np.sqrt(lam), np.zeros(d - r)])
    gamma = _gamma(sigma, eta, h, method)
    phi = float(np.sum(lam / (eta + gamma[:r])))
    return _Structure(P, gamma[:r].copy(), float(gamma[r]) if r < d else 0.0), phi


def _m_step(U: np.ndarray, eta: float, h: float, method: str
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """``(M, gamma, P, phi)``: exact minimiser of ``tr(U^T (eta I + M)^{-1} U)`` over Mset.

    ``gamma`` (decreasing) and the columns of ``P`` (d x d) are the eigenpairs of ``M``.
    """
    st, phi = _m_step_structure(U, eta, h, method)
    return st.dense(), st.gamma(), st.basis(st.d), phi


def m_step(U: Any, eta: float, h: float, *, method: str = PARAMS.default("m_step")
           ) -> tuple[np.ndarray, float]:
    """The exact M-step: ``argmin_{M in Mset} tr(U^T (eta I + M)^{-1} U)`` and its value.

    Parameters
    ----------
    U : array_like, shape (d, m)
    eta : float, > 0
    h : float, in (0, d]
    method : {"median", "sort"}

    Returns
    -------
    M : ndarray, shape (d, d)
    phi : float
        ``min_{M in Mset} tr(U^T (eta I + M)^{-1} U)``.
    """
    U = check_matrix(U, "U")
    eta = PARAMS["eta"].validate(eta)
    h = check_scalar(h, "h", low=0.0, high=float(U.shape[0]))
    method = check_choice(method, "method", M_STEPS)
    M, _, _, phi = _m_step(U, eta, h, method)
    return M, phi


def _phi_conj(V: np.ndarray, eta: float, h: float) -> float:
    """``max_{M in Mset} tr(V^T (eta I + M) V) = eta ||V||^2 + s_h(V V^T)``."""
    d, m = V.shape
    G = V @ V.T if d <= m else V.T @ V
    eig = np.linalg.eigvalsh(G)
    if d > m:  # V V^T has d - m further zero eigenvalues
        eig = np.concatenate([eig, np.zeros(d - m)])
    return eta * float(np.sum(V * V)) + sum_largest(np.maximum(eig, 0.0), h)


# ---------------------------------------------------------------------------
# Validation and public objective functions
# ---------------------------------------------------------------------------


def _check_problem(Xs, ys, alpha, eta, h, loss):
    v = PARAMS.validate(loss=loss, alpha=alpha, eta=eta, h=h)
    loss, alpha, eta, h = v["loss"], v["alpha"], v["eta"], v["h"]
    Xs, ys = check_task_lists(Xs, ys, max_abs=DATA_MAX_ABS)
    if loss != "squared":
        ys = [check_binary_labels(y, f"ys[{t}]") for t, y in enumerate(ys)]
    d = Xs[0].shape[1]
    if h > d:
        raise ValueError(f"h must lie in (0, {d}] (d = n_features={d}), got {h:g}")
    return _Tasks(Xs, ys), alpha, eta, h, loss


def _check_M(M: Any, d: int, h: float, tol: float = 1e-7) -> np.ndarray:
    M = check_matrix(M, "M", n_rows=d, n_cols=d)
    if not np.allclose(M, M.T, rtol=0.0, atol=tol):
        raise ValueError("M must be symmetric")
    e = np.linalg.eigvalsh(sym(M))
    if e[0] < -tol or e[-1] > 1.0 + tol or abs(e.sum() - h) > tol * max(1.0, d):
        raise ValueError(
            f"M must lie in {{tr M = h, 0 <= M <= I}} with h={h:g}; its eigenvalues span "
            f"[{e[0]:.3g}, {e[-1]:.3g}] and sum to {e.sum():.6g}"
        )
    return sym(M)


def objective(U: Any, M: Any, Xs: Any, ys: Any, *, alpha: float = PARAMS.default("alpha"),
              eta: float = PARAMS.default("eta"), h: float = PARAMS.default("h"),
              loss: str = PARAMS.default("loss")) -> float:
    """``F(U, M) = sum_l mean loss_l + c tr(U^T (eta I + M)^{-1} U)`` for a feasible ``M``.

    Raises ``ValueError`` if ``M`` is not in ``{tr M = h, 0 <= M <= I}``.

    Parameters
    ----------
    U : array_like, shape (d, m)
        One weight column per task.
    M : array_like, shape (d, d)
        A point of the constraint set.
    Xs, ys : list of array_like
        Per task ``l``: samples ``(n_l, d)`` and targets ``(n_l,)`` (labels in {-1, +1}
        for the hinge and logistic losses).
    alpha, eta, h : float
        The regularisation weight, the smoothing ``eta > 0`` and the trace bound
        ``h in (0, d]`` (``c = alpha eta (1 + eta)``).
    loss : {"squared", "hinge", "logistic"}
        The per-task loss.

    Returns
    -------
    float
        F(U, M), an upper bound of the optimal value.
    """
    data, alpha, eta, h, loss = _check_problem(Xs, ys, alpha, eta, h, loss)
    U = check_matrix(U, "U", n_rows=data.d, n_cols=data.m)
    M = _check_M(M, data.d, h)
    c = alpha * eta * (1.0 + eta)
    A = eta * np.eye(data.d) + M
    Lc = np.linalg.cholesky(A)
    Y = solve_triangular(Lc, U, lower=True)
    return _loss_value(loss, data.scores(U), data.y, data.w) + c * float(np.sum(Y * Y))


def primal_objective(U: Any, Xs: Any, ys: Any, *, alpha: float = PARAMS.default("alpha"),
                     eta: float = PARAMS.default("eta"), h: float = PARAMS.default("h"),
                     loss: str = PARAMS.default("loss")) -> float:
    """``P(U) = min_{M in Mset} F(U, M) = sum_l mean loss_l + c phi(U)`` (exact M-step).

    Parameters
    ----------
    U : array_like, shape (d, m)
        One weight column per task.
    Xs, ys : list of array_like
        Per task ``l``: samples ``(n_l, d)`` and targets ``(n_l,)`` (labels in {-1, +1}
        for the hinge and logistic losses).
    alpha, eta, h : float
        The regularisation weight, the smoothing ``eta > 0`` and the trace bound
        ``h in (0, d]`` (``c = alpha eta (1 + eta)``).
    loss : {"squared", "hinge", "logistic"}
        The per-task loss.

    Returns
    -------
    float
        P(U).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import caso
    >>> Xs = [np.eye(2), np.eye(2)]; ys = [np.ones(2), -np.ones(2)]
    >>> caso.primal_objective(np.zeros((2, 2)), Xs, ys, h=1.0)  # mean squared loss 1 per task
    2.0
    """
    data, alpha, eta, h, loss = _check_problem(Xs, ys, alpha, eta, h, loss)
    U = check_matrix(U, "U", n_rows=data.d, n_cols=data.m)
    c = alpha * eta * (1.0 + eta)
    _, _, _, phi = _m_step(U, eta, h, "sort")
    return _loss_value(loss, data.scores(U), data.y, data.w) + c * phi


def _dual_value(data: _Tasks, theta: np.ndarray, c: float, eta: float, h: float, loss: str
                ) -> float:
    V = data.back(theta)
    return _conj_value(loss, theta, data.y, data.w) - _phi_conj(V, eta, h) / (4.0 * c)


def dual_objective(thetas: Any, Xs: Any, ys: Any, *, alpha: float = PARAMS.default("alpha"),
                   eta: float = PARAMS.default("eta"), h: float = PARAMS.default("h"),
                   loss: str = PARAMS.default("loss")) -> float:
    """``D(theta) = sum_l -l_l*(-theta_l) - (eta ||V||^2 + s_h(V V^T)) / (4c)``.

    ``thetas`` is one vector per task (length ``n_l``), ``V = [X_l^T theta_l]``.
    For the hinge and logistic losses ``theta`` must satisfy
    ``0 <= y_i theta_i <= 1/n_l`` (else ``ValueError``). Any such ``theta``
    gives a lower bound on the optimal value.

    Parameters
    ----------
    thetas : sequence of array_like
        One dual vector per task, thetas[l] of length n_l.
    Xs, ys : list of array_like
        Per task ``l``: samples ``(n_l, d)`` and targets ``(n_l,)`` (labels in {-1, +1}
        for the hinge and logistic losses).
    alpha, eta, h : float
        The regularisation weight, the smoothing ``eta > 0`` and the trace bound
        ``h in (0, d]`` (``c = alpha eta (1 + eta)``).
    loss : {"squared", "hinge", "logistic"}
        The per-task loss.

    Returns
    -------
    float
        D(theta), a lower bound of the optimal value.
    """
    data, alpha, eta, h, loss = _check_problem(Xs, ys, alpha, eta, h, loss)
    try:
        thetas = list(thetas)
    except TypeError as exc:
        raise TypeError("thetas must be a sequence with one vector per task") from exc
    if len(thetas) != data.m:
        raise ValueError(f"thetas has {len(thetas)} entries but there are {data.m} tasks")
    theta = np.concatenate([
        check_array(t, f"thetas[{i}]", shape=(int(data.n[i]),)) for i, t in enumerate(thetas)
    ])
    c = alpha * eta * (1.0 + eta)
    val = _dual_value(data, theta, c, eta, h, loss)
    if not math.isfinite(val):
        raise ValueError("thetas is outside the dual domain: need 0 <= y_i theta_i <= 1/n_l")
    return val


def hinge_prox(V: Any, Xs: Any, ys: Any, step: float, *, tol: float = 1e-12,
               max_sweeps: int = 100_000) -> np.ndarray:
    """Exact prox of the hinge loss, per task (Eq. (74) without offset).

    Returns ``U`` whose column ``l`` solves
    ``min_u ||u - V[:, l]||^2 / (2 step) + (1/n_l) sum_i max(0, 1 - y_i x_i^T u)``
    (box-constrained dual by coordinate ascent to a violation below ``tol``).

    Parameters
    ----------
    V : array_like, shape (d, m)
        The points to map, one column per task.
    Xs, ys : list of array_like
        Per task: samples ``(n_l, d)`` and labels in {-1, +1}.
    step : float, > 0
        The prox step.
    tol : float, > 0
        Stop when the largest KKT violation of the box dual is below ``tol``.
    max_sweeps : int
        Budget of coordinate sweeps per task.

    Returns
    -------
    ndarray, shape (d, m)
        ``U``, the prox of ``V``.
    """
    Xs, ys = check_task_lists(Xs, ys)
    ys = [check_binary_labels(y, f"ys[{t}]") for t, y in enumerate(ys)]
    data = _Tasks(Xs, ys)
    V = check_matrix(V, "V", n_rows=data.d, n_cols=data.m)
    step = check_scalar(step, "step", low=0.0)
    tol = check_scalar(tol, "tol", low=0.0)
    B = np.zeros(data.X.shape[0])
    UT = np.empty((data.m, data.d))
    _hinge_prox_into(data, V, step, B, tol, int(max_sweeps), UT)
    return UT.T.copy()


def _hinge_prox_into(data, V, step, B, tol, max_sweeps, UT):
    # prox dual: u = v_l + step sum_i b_i y_i x_i, coordinate curvature step ||x_i||^2
    return _k.box_dual_cd(data.X, data.X, data.y, data.w, data.offs, step * data.sqn, step,
                          np.ascontiguousarray(V.T), B, tol, max_sweeps, UT)


# ---------------------------------------------------------------------------
# Certificate
# ---------------------------------------------------------------------------


class _Cert:
    """Primal and dual values at a point, with the optimal M for ``U``."""

    def __init__(self, data, U, theta, c, eta, h, loss, m_method):
        z = data.scores(U)
        self.structure, phi = _m_step_structure(U, eta, h, m_method)
        self.phi = phi
        self._M = None
        self.loss_value = _loss_value(loss, z, data.y, data.w)
        self.primal = self.loss_value + c * phi
        if theta is None:
            theta = -_loss_grad(loss, z, data.y, data.w)
        self.theta = theta
        self.dual = _dual_value(data, theta, c, eta, h, loss)

    @property
    def M(self) -> np.ndarray:
        if self._M is None:
            self._M = self.structure.dense()
        return self._M


def _inner_tol(rel_gap: float) -> float:
    return float(min(_INNER_MAX, max(_INNER_MIN, _INNER_FACTOR * rel_gap)))


# ---------------------------------------------------------------------------
# APG (Algorithm 1)
# ---------------------------------------------------------------------------


def _metric_factors(data: _Tasks, c: float, eta: float, loss: str) -> np.ndarray:
    """Inverse Cholesky factors of the per-task metric of ``method="apg_precond"``.

    ``H_l = kappa X_l^T X_l / n_l + (2c / (eta + 1)) I`` with ``kappa = 2`` (squared loss:
    the loss Hessian) or ``1/4`` (logistic loss: a bound on it); the second term is the
    smallest curvature ``2c A^{-1}`` of the regulariser (``A = eta I + M``,
    ``M <= I``). Returns ``Rinv`` (m x d x d) with ``H_l = R_l^T R_l``, ``Rinv_l = R_l^{-1}``.
    """
    d, m = data.d, data.m
    kappa = 2.0 if loss == "squared" else 0.25
    mu = 2.0 * c / (eta + 1.0)
    Rinv = np.empty((m, d, d))
    eye = np.eye(d)
    for t, Xl in enumerate(data.Xs):
        H = (kappa / float(data.n[t])) * (Xl.T @ Xl) + mu * eye
        Rl = np.linalg.cholesky(H).T  # upper: H = R^T R
        Rinv[t] = solve_triangular(Rl, eye, lower=False, check_finite=False)
    return Rinv


def _run_apg(data, c, eta, h, loss, U0, M0, B, mon, m_method, callback, max_iter, restart,
             precond=False):
    d = data.d
    eye = np.eye(d)
    smooth = loss != "hinge"
    state = {"sweeps": 0}
    # method="apg_precond", smooth losses: APG runs on (V, M) with U = R^{-1} V per task
    # (a fixed variable metric H_l = R_l^T R_l on the U block; g has no U part).
    Rinv = _metric_factors(data, c, eta, loss) if (precond and smooth) else None

    def to_u(V):
        return V if Rinv is None else np.einsum("lij,jl->il", Rinv, V)

    def parts(Z, need_grad):
        V, M = Z
        U = to_u(V)
        A = eta * eye + sym(M)
        try:
            Lc = np.linalg.cholesky(A)
        except np.linalg.LinAlgError:
            return math.inf, None  # outside the domain eta I + M > 0
        Y = solve_triangular(Lc, U, lower=True, check_finite=False)
        val = c * float(np.sum(Y * Y))
        z = None
        if smooth:
            z = data.scores(U)
            val += _loss_value(loss, z, data.y, data.w)
        if not math.isfinite(val):
            return math.inf, None
        if not need_grad:
            return val, None
        W = solve_triangular(Lc.T, Y, lower=False, check_finite=False)  # A^{-1} U
        gU = 2.0 * c * W
        if smooth:
            gU = gU + data.back(_loss_grad(loss, z, data.y, data.w))
        if Rinv is not None:
            gU = np.einsum("lji,jl->il", Rinv, gU)  # gradient in V: R^{-T} grad_U
        gM = -c * (W @ W.T)
        return val, (gU, gM)

    def value_and_grad(Z):
        return parts(Z, True)

    def value(Z):
        return parts(Z, False)[0]

    def prox(Vz, step):
        Uh, Mh = Vz
        M = project_fantope(Mh, h)
        if smooth:
            return (Uh, M)
        UT = np.empty((data.m, d))
        state["sweeps"] += _hinge_prox_into(data, Uh, float(step), B, _PROX_TOL,
                                            _INNER_SWEEPS, UT)
        return (UT.T.copy(), M)

    L0 = 2.0 * c / (eta + 1.0)
    V0 = U0
    if Rinv is not None:  # V = R U per task; the metric makes the U-block curvature ~ 1
        V0 = np.linalg.solve(Rinv, U0.T[:, :, None])[:, :, 0].T
        L0 = 1.0
    apg = APG(value_and_grad, prox, (V0, M0), value=value, L0=L0,
              adaptive_restart=restart or precond, shrink=_PRECOND_SHRINK if precond else 1.0)
    cert = None
    for it in range(1, max_iter + 1):
        state["sweeps"] = 0
        V, M_it = apg.step()
        U = to_u(V)
        theta = None if smooth else data.y * B
        cert = _Cert(data, U, theta, c, eta, h, loss, m_method)
        f_it = apg.fx  # f at (U, M_it), from the line search
        if not smooth:
            f_it += cert.loss_value
        if mon.record(
            it, cert.primal, cert.dual,
            iterate=({"U": U.copy(), "M": cert.M.copy(), "M_iterate": M_it.copy()}
                     if callback is not None else None),
            objective_iterate=f_it, L=apg.L, beta=apg.beta,
            n_backtracks=apg.n_backtracks, n_restarts=apg.n_restarts,
            inner=state["sweeps"],
        ):
            break
    return to_u(apg.x[0]), cert


# ---------------------------------------------------------------------------
# BCD (Algorithm 2)
# ---------------------------------------------------------------------------


def _kernel_tasks(data: _Tasks, mode: str) -> np.ndarray:
    """Tasks whose U-step systems are solved in the n_l x n_l form (``solve(ustep=...)``)."""
    if mode == "auto":
        return data.n < data.d
    return np.full(data.m, mode == "kernel")


class _SquaredSteps:
    """The squared-loss U-step: per task ``(G_l + c A^{-1}) u = r_l``, ``A = eta I + M``.

    ``G_l = X_l^T X_l / n_l`` and ``r_l = X_l^T y_l / n_l``. Two exact forms
    (the same ``u`` up to rounding):

    * ``"primal"``: with ``R = A^{1/2}`` and ``u = R v``, the d x d system
      ``(R G_l R + c I) v = R r_l`` (O(d^3) per task);
    * ``"kernel"``: by the push-through identity
      ``(c A^{-1} + X^T X / n)^{-1} X^T / n = A X^T (X A X^T + n c I)^{-1}``,
      ``u = A X_l^T a`` with ``(X_l A X_l^T + n_l c I) a = y_l``, an
      n_l x n_l system. With ``A = a0 I + P_S diag(g_S) P_S^T`` (the
      directions ``S`` where ``M``'s eigenvalue differs from its complement's),
      ``X_l A X_l^T = a0 X_l X_l^T + (X_l P_S) diag(g_S) (X_l P_S)^T``: one
      ``N x d x |S|`` product per iteration plus O(n_l^2 |S| + n_l^3) per task.

    ``mode="auto"`` uses the kernel form for tasks with ``n_l < d``.
    """

    def __init__(self, data: _Tasks, mode: str) -> None:
        self.data = data
        kern = _kernel_tasks(data, mode)
        self.kern = np.flatnonzero(kern)
        self.prim = np.flatnonzero(~kern)
        self.batched = data.equal
        if self.kern.size:
            if data.equal:
                X3 = data.X3[self.kern]
                self.XX = np.matmul(X3, X3.transpose(0, 2, 1))
            else:
                self.XX = [data.Xs[t] @ data.Xs[t].T for t in self.kern]
        if self.prim.size:
            self.G = np.empty((self.prim.size, data.d, data.d))
            self.r = np.empty((self.prim.size, data.d))
            for j, t in enumerate(self.prim):
                Xl = data.Xs[t]
                self.G[j] = Xl.T @ Xl / data.n[t]
                self.r[j] = Xl.T @ data.y[data.offs[t]:data.offs[t + 1]] / data.n[t]

    def __call__(self, st: _Structure, eta: float, c: float) -> np.ndarray:
        data = self.data
        U = np.empty((data.d, data.m))
        if self.prim.size:
            U[:, self.prim] = self._primal(st.power(eta, 0.5), c)
        if self.kern.size:
            U[:, self.kern] = self._kernel(st, eta, c)
        return U

    def _primal(self, R: np.ndarray, c: float) -> np.ndarray:
        # (G_l + c A^{-1}) u = r_l with u = R v, R = A^{1/2}: (R G_l R + c I) v = R r_l.
        d = self.data.d
        H = np.matmul(np.matmul(R, self.G), R)
        H[:, np.arange(d), np.arange(d)] += c
        rhs = (R @ self.r.T).T[..., None]
        v = np.linalg.solve(H, rhs)[:, :, 0]  # (tasks, d)
        return R @ v.T

    def _kernel(self, st: _Structure, eta: float, c: float) -> np.ndarray:
        data = self.data
        a0 = eta + st.g0
        gd = st.g - st.g0
        keep = gd != 0.0
        Ps, gs = st.P[:, keep], gd[keep]
        if self.batched:
            n = int(data.n[0])
            X3 = data.X3[self.kern]
            XP = np.matmul(X3, Ps)  # (tasks, n, s)
            K = a0 * self.XX + np.matmul(XP * gs, XP.transpose(0, 2, 1))
            K[:, np.arange(n), np.arange(n)] += n * c
            y3 = data.y.reshape(data.m, n)[self.kern]
            a = np.linalg.solve(K, y3[..., None])  # (tasks, n, 1)
            Xa = np.matmul(X3.transpose(0, 2, 1), a)[:, :, 0].T  # (d, tasks)
            Pa = np.matmul(XP.transpose(0, 2, 1), a)[:, :, 0].T  # (s, tasks)
            return a0 * Xa + Ps @ (gs[:, None] * Pa)
        out = np.empty((data.d, self.kern.size))
        for j, t in enumerate(self.kern):
            Xl = data.Xs[t]
            XP = Xl @ Ps
            K = a0 * self.XX[j] + (XP * gs) @ XP.T
            K[np.diag_indices(Xl.shape[0])] += data.n[t] * c
            a = np.linalg.solve(K, data.y[data.offs[t]:data.offs[t + 1]])
            out[:, j] = a0 * (Xl.T @ a) + Ps @ (gs * (XP.T @ a))
        return out


def _ustep_hinge(data, B, st, eta, c, tol):
    AX = st.times(data.X, eta)  # X A (A symmetric)
    qdiag = np.einsum("ij,ij->i", AX, data.X) / (2.0 * c)
    UT = np.empty((data.m, data.d))
    # U-step dual: u = A z / (2c), z = sum_i b_i y_i x_i, curvature x_i^T A x_i / (2c)
    sweeps = _k.box_dual_cd(data.X, np.ascontiguousarray(AX), data.y, data.w, data.offs, qdiag,
                            1.0 / (2.0 * c), np.zeros((data.m, data.d)), B, tol, _INNER_SWEEPS,
                            UT)
    return UT.T.copy(), sweeps


def _newton_steps(data, XR, g, dw, c, kern):
    """Newton directions ``-(B_l^T D_l B_l + 2c I)^{-1} g_l`` per task, ``B_l = X_l R``.

    ``kern[l]``: by the push-through identity with ``S_l = D_l^{1/2} B_l`` (n_l x d),
    ``(S^T S + 2c I)^{-1} g = (g - S^T (S S^T + 2c I)^{-1} S g) / (2c)``, an n_l x n_l
    system; else the d x d system.
    """
    d, m = data.d, data.m
    step = np.empty((d, m))
    if data.equal and (kern.all() or not kern.any()):
        n = int(data.n[0])
        S = np.sqrt(dw).reshape(m, n, 1) * XR.reshape(m, n, d)
        if kern[0]:
            K = np.matmul(S, S.transpose(0, 2, 1))
            K[:, np.arange(n), np.arange(n)] += 2.0 * c
            Sg = np.matmul(S, g.T[..., None])  # (m, n, 1)
            z = np.linalg.solve(K, Sg)
            return -(g - np.matmul(S.transpose(0, 2, 1), z)[:, :, 0].T) / (2.0 * c)
        H = np.matmul(S.transpose(0, 2, 1), S)
        H[:, np.arange(d), np.arange(d)] += 2.0 * c
        return -np.linalg.solve(H, g.T[..., None])[:, :, 0].T
    for t in range(m):
        lo, hi = data.offs[t], data.offs[t + 1]
        S = np.sqrt(dw[lo:hi, None]) * XR[lo:hi]
        if kern[t]:
            K = S @ S.T
            K[np.diag_indices(hi - lo)] += 2.0 * c
            step[:, t] = -(g[:, t] - S.T @ np.linalg.solve(K, S @ g[:, t])) / (2.0 * c)
        else:
            H = S.T @ S
            H[np.diag_indices(d)] += 2.0 * c
            step[:, t] = -np.linalg.solve(H, g[:, t])
    return step


def _ustep_logistic(data, U, st, eta, c, tol, kern):
    # Newton per task on  l(R v) + c ||v||^2  with u = R v, R = A^{1/2}, until the
    # summed Newton-decrement estimate of the remaining decrease is below ``tol``
    # (absolute, objective units); at least one step.
    m = data.m
    R = st.power(eta, 0.5)
    Vt = st.power(eta, -0.5) @ U  # (d, m)
    XR = st.times(data.X, eta, 0.5)  # rows x_i^T R, fixed during the U-step

    def task_obj(Vt):
        z = data.scores(R @ Vt)
        per = data.per_task_sum(data.w * _loss_terms("logistic", z, data.y))
        return per + c * np.sum(Vt * Vt, axis=0), z

    obj, z = task_obj(Vt)
    iters = 0
    for _ in range(100):
        g = R @ data.back(_loss_grad("logistic", z, data.y, data.w)) + 2.0 * c * Vt
        s = expit(-data.y * z)
        dw = data.w * s * (1.0 - s)
        step = _newton_steps(data, XR, g, dw, c, kern)
        dec = -np.sum(g * step, axis=0)  # squared Newton decrements per task
        # dec / 2 estimates the remaining decrease of each task's objective.
        if iters > 0 and 0.5 * float(np.sum(dec)) <= tol:
            break
        iters += 1
        size = np.ones(m)
        for _ in range(60):
            new_obj, new_z = task_obj(Vt + step * size)
            bad = new_obj > obj - 0.25 * size * dec
            if not np.any(bad):
                break
            size = np.where(bad, 0.5 * size, size)
        Vt = Vt + step * size
        obj, z = task_obj(Vt)
    return R @ Vt, iters


def _run_bcd(data, c, eta, h, loss, U0, M0, B, mon, m_method, callback, max_iter, restart,
             ustep="auto"):
    d = data.d
    if np.array_equal(M0, np.eye(d) * M0[0, 0]):  # the cold start (h / d) I
        st = _Structure(np.zeros((d, 0)), np.zeros(0), float(M0[0, 0]))
    else:
        gam, P = np.linalg.eigh(sym(M0))
        st = _Structure(P, np.clip(gam, 0.0, 1.0))
    U = U0
    squared = _SquaredSteps(data, ustep) if loss == "squared" else None
    kern = _kernel_tasks(data, ustep)
    tol_in = _INNER_MAX if loss == "hinge" else 1e-15
    cert = None
    for it in range(1, max_iter + 1):
        if loss == "squared":
            U, inner = squared(st, eta, c), 1
        elif loss == "hinge":
            U, inner = _ustep_hinge(data, B, st, eta, c, tol_in)
        else:
            U, inner = _ustep_logistic(data, U, st, eta, c, tol_in, kern)
        theta = data.y * B if loss == "hinge" else None
        cert = _Cert(data, U, theta, c, eta, h, loss, m_method)
        st = cert.structure  # the M-step (Algorithm 2, lines 7-9)
        gap = max(cert.primal - cert.dual, 0.0)
        scale = max(1.0, abs(cert.primal))
        tol_in = _inner_tol(gap / scale)
        if loss == "logistic":
            tol_in = max(1e-3 * gap, 1e-15 * scale)
        if mon.record(
            it, cert.primal, cert.dual,
            iterate=({"U": U.copy(), "M": cert.M.copy()} if callback is not None else None),
            objective_iterate=cert.primal, inner=inner,
        ):
            break
    return U, cert


# ---------------------------------------------------------------------------
# Public solver
# ---------------------------------------------------------------------------


def solve(
    Xs: Any,
    ys: Any,
    *,
    alpha: float = PARAMS.default("alpha"),
    eta: float = PARAMS.default("eta"),
    h: float = PARAMS.default("h"),
    loss: str = PARAMS.default("loss"),
    method: str = PARAMS.default("method"),
    tol: float = PARAMS.default("tol"),
    max_iter: int = PARAMS.default("max_iter"),
    m_step: str = PARAMS.default("m_step"),
    restart: bool = PARAMS.default("restart"),
    init: CASOResult | None = None,
    callback=None,
    ustep: str = PARAMS.default("ustep"),
) -> CASOResult:
    r"""Solve convex relaxed ASO with a certified duality gap.

    Minimises ``sum_l (1/n_l) sum_i L(u_l^T x_i^l, y_i^l) + c tr(U^T (eta I + M)^{-1} U)``
    over ``U`` (d x m) and ``M`` in ``{tr M = h, 0 <= M <= I}``, ``c = alpha eta (1 + eta)``.

    Parameters
    ----------
    Xs : sequence of array_like, each (n_l, d)
        One design matrix per task (tasks may differ in size, share ``d``).
    ys : sequence of array_like, each (n_l,)
        Targets; labels in {-1, +1} for ``hinge`` and ``logistic``.
    alpha, eta : float, > 0
        Regularisation weights (``c = alpha * eta * (1 + eta)``).
    h : float, in (0, d]
        Trace of ``M``: the (relaxed) dimension of the shared subspace.
    loss : {"squared", "hinge", "logistic"}
    method : {"apg", "apg_precond", "bcd"}
        Accelerated projected gradient (Algorithm 1, as the paper states it),
        the same iteration with a per-task metric on ``U``, adaptive restart and
        a step that can grow (``"apg_precond"``, see the module docstring), or
        block coordinate descent (Algorithm 2).
    tol : float
        Stop when ``gap / max(1, |primal|) <= tol``.
    max_iter : int
        Outer iterations (APG steps or BCD sweeps).
    m_step : {"median", "sort"}
        M-step solver (appendix C's median search or a sort-based sweep);
        used by BCD and by every certificate.
    restart : bool
        ``"apg"`` only: gradient-based adaptive momentum restart (O'Donoghue &
        Candès) on top of Algorithm 1 (which has none; default ``False``).
        ``"apg_precond"`` always restarts. Domain exits always restart the momentum.
    init : CASOResult, optional
        Warm start from a previous result on the same data (its ``U``, its
        ``M`` projected onto the new ``Mset``, and for the hinge loss its dual
        variables).
    callback : callable, optional
        ``callback(state)`` once per iteration (``state.iterate`` has ``U``,
        ``M`` and, for APG, ``M_iterate``); return ``False`` to stop.
    ustep : {"auto", "kernel", "primal"}
        BCD with the squared or logistic loss: how each task's U-step linear
        systems are solved (same iterates up to rounding). ``"kernel"``: n_l x n_l
        systems (squared: ``(X_l A X_l^T + n_l c I) a = y_l``,
        ``u = A X_l^T a``; logistic: each Newton system by the push-through
        identity); ``"primal"``: the d x d systems of Algorithm 2 in
        ``v = A^{-1/2} u``; ``"auto"`` (default): kernel for tasks with
        ``n_l < d``. Ignored for APG and the hinge loss.

    Returns
    -------
    CASOResult
        ``U``, ``M``, ``Theta``, ``V``, ``gamma``, ``dual_vars``, ``primal``,
        ``dual``, ``gap`` (certified), ``n_iter``, ``converged``, ``history``
        (extras: ``objective_iterate`` = F at the algorithm's own iterate,
        ``inner`` = inner sweeps / Newton steps; APG also ``L``, ``beta``,
        ``n_backtracks``, ``n_restarts``).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import caso
    >>> rng = np.random.default_rng(0)
    >>> Xs = [rng.standard_normal((6, 4)) for _ in range(3)]
    >>> ys = [rng.standard_normal(6) for _ in range(3)]
    >>> res = caso.solve(Xs, ys, h=1.0, tol=1e-6)
    >>> res.stop_reason, res.U.shape
    ('converged', (4, 3))
    >>> bool(res.primal - res.dual <= 1e-6 * max(1.0, abs(res.primal)))
    True
    """
    v = PARAMS.validate(method=method, m_step=m_step, tol=tol, max_iter=max_iter,
                        restart=restart, ustep=ustep)
    method, m_method, tol, max_iter, restart, ustep = (
        v["method"], v["m_step"], v["tol"], v["max_iter"], v["restart"], v["ustep"])
    data, alpha, eta, h, loss = _check_problem(Xs, ys, alpha, eta, h, loss)
    callback = check_callback(callback)
    d, m = data.d, data.m
    init = check_init(init, CASOResult, U=(d, m), M=(d, d))
    c = alpha * eta * (1.0 + eta)
    N = data.X.shape[0]

    with single_threaded_blas():  # the BLAS thread policy (solvers._blas)
        B = np.zeros(N)
        if init is None:
            U0 = np.zeros((d, m))
            M0 = np.eye(d) * (h / d)
        else:
            U0 = np.array(init.U, dtype=float)
            M0 = project_fantope(init.M, h)
            if loss == "hinge" and init.loss == "hinge" and len(init.dual_vars) == m and all(
                np.shape(t) == (int(n),) for t, n in zip(init.dual_vars, data.n, strict=True)
            ):
                B = np.clip(np.concatenate(init.dual_vars) * data.y, 0.0, data.w)

        mon = Monitor("caso", tol=tol, max_iter=max_iter, callback=callback)
        runner = _run_apg
        if method == "bcd":
            def runner(*args):
                return _run_bcd(*args, ustep=ustep)
        elif method == "apg_precond":
            def runner(*args):
                return _run_apg(*args, precond=True)
        try:
            U, cert = runner(data, c, eta, h, loss, U0, M0, B, mon, m_method, callback,
                             max_iter, restart)
        except NumericalError as exc:
            raise NumericalError(
                f"{exc} [caso: c = alpha eta (1 + eta) = {c:.3g} with alpha={alpha:g}, "
                f"eta={eta:g}: alpha or eta is too extreme for this data's scale]") from exc
        Theta = cert.structure.basis(subspace_dim(h)).T.copy()
        M = cert.M
    fields = mon.result_fields()
    return CASOResult(
        **fields,
        method=method,
        params=PARAMS.record(alpha=alpha, eta=eta, h=h, loss=loss, method=method, tol=tol,
                             max_iter=max_iter, m_step=m_method, restart=restart,
                             ustep=ustep),
        U=U,
        M=M,
        Theta=Theta,
        V=Theta @ U,
        gamma=cert.structure.gamma(),
        dual_vars=tuple(data.split(cert.theta)),
        loss=loss,
        c=c,
    )


# ------------------------------------------------------------------ the saved model


def _saved_scores(sm: Any, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """``x^T u_task`` for each row."""
    return scores_per_task(X, sm.arrays["U"].T, tasks)


def _saved_kind(sm: Any) -> str:
    """A regression with the squared loss and no class names, else a classification."""
    if sm.class_names is None and sm.params.get("loss") == "squared":
        return "regression"
    return "classification"


def _saved_predict(sm: Any, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """The score (a regression), else the class of its sign."""
    f = _saved_scores(sm, X, tasks)
    return f if _saved_kind(sm) == "regression" else sign_classes(sm, f)


def _saved_check(sm: Any, bad: Any, _sizes: Any) -> None:
    loss = sm.params.get("loss")
    if sm.class_names is None and loss not in (None, *LOSSES):
        raise bad("params.loss", f"unknown loss {loss!r}")


#: How a fitted cASO model is saved and predicts (:class:`solvers.saved.SavedForm`).
SAVED_FORM = SavedForm(
    arrays=array_specs(("U", "d m", True)),
    names={"feature_names": "d", "class_names": "2", "task_names": "m"},
    features=("U", 0), decide=_saved_scores, predict=_saved_predict, per_task=True,
    kind=_saved_kind, check=_saved_check)
