r"""Robust temporal multitask regression: a floor-free exact-dual method (default), and the
paper's accelerated dual ascent (Kang & Liu) and pure-smoothing baseline.

Model: ``m`` tasks ordered in time, task ``i`` with ``X_i`` (n_i x d) and ``y_i``
(n_i), weights ``W = [w_1 ... w_m]`` (d x m)::

    J(W) = sum_i ||X_i w_i - y_i||_p                    robust, non-squared loss
         + lam ||W||_{2,1}                              row sparsity (sum of row norms)
         + gamma/2 ||W||_F^2                            strong convexity
         + zeta/2 sum_{i=1}^{m-1} ||w_i - w_{i+1}||^2   temporal smoothness
         + rho ||W||_*                                  low rank

with ``p`` in {1, 2, inf}. The quadratic part is ``1/2 tr(W M W^T)``,
``M = gamma I + zeta L``, ``L`` the Laplacian of the path graph of the tasks.

Dual (``1/p + 1/q = 1``, one ``theta_i`` in the unit q-ball per task)::

    max_theta D(theta) = min_W { R(W) + sum_i <theta_i, X_i w_i - y_i> },
    R(W) = lam ||W||_{2,1} + 1/2 tr(W M W^T) + rho ||W||_*,
    grad D(theta) = [X_i w_i(theta) - y_i]_i,   L_D = max_i ||X_i||_2^2 / gamma.

**Certificate.** ``J(W)`` is evaluated exactly. Writing ``lam ||W||_{2,1} =
max <A, W>`` over row norms ``<= lam`` and ``rho ||W||_* = max <B, W>`` over
spectral norm ``<= rho``, and minimising the quadratic, gives for every
feasible ``(theta, A, B)``::

    D(theta) >= LB(theta, A, B) = -sum_i theta_i^T y_i
                                  - 1/2 tr((V + A + B) M^{-1} (V + A + B)^T),
    V = [X_1^T theta_1 ... X_m^T theta_m],

a true lower bound on ``min J`` (:func:`dual_objective`). ``A`` and ``B`` are
built from the current (inner) iterate -- ``A`` from the Huber gradient of the
rows, ``B`` from the singular value thresholding step -- and rescaled into
feasibility. ``gap = J(W) - LB >= 0`` bounds the suboptimality of ``W``.

**The mu floor.** The paper's two methods ("dual", "smoothing") solve a problem
smoothed with parameter ``mu``, so their certified gap cannot go below a floor
that shrinks with ``mu``. Each run also certifies the *smoothed* problem (its
gap, ``smoothed_gap``, goes to zero); the difference ``floor = gap - smoothed_gap`` is the price of
smoothing at the current point and is reported every iteration. For the dual
method it equals ``lam sum_{||w_r|| < mu} ||w_r|| (1 - ||w_r|| / mu) <= lam d
mu / 4`` (rows that are zero at the optimum keep a norm of order ``mu``). The
baseline adds ``sum_i (||r_i||_p - <theta_i, r_i>)`` for its smoothed losses;
for p = 2 that term vanishes whenever ``||r_i|| >= mu`` (the Huber function is
then exact up to a constant), for p = 1 and p = inf it does not. When the
smoothed gap is below ``tol / 10`` or below 1% of the floor (more iterations
could then lower the certified gap by at most about 1%) while the certified gap
is still above ``tol``, the run stops (``floor_reached=True``, ``converged=False``, a
:class:`~solvers.base.ConvergenceWarning` says to decrease ``mu``). The
history's ``primal`` and ``dual`` are the best values so far (the returned
``W`` is the best primal point, ``theta, A, B`` the best dual point); the
current ones are the extras ``primal_iterate`` and ``dual_iterate``.

**method="exact_dual"** (the default; not in the paper): accelerated projected
gradient on the certificate's own dual. ``LB(theta, A, B)`` above is a concave
quadratic; by Fenchel duality (``gamma > 0``, so strong duality holds) its maximum
over the product of the unit q-balls, the row balls ``||A_r|| <= lam`` and the
spectral ball ``||B||_2 <= rho`` equals ``min J``. Nothing is smoothed, so there
is no floor: the certified gap goes to 0. With ``T_i = ||X_i||_2 theta_i`` every
block of the linear map ``(T, A, B) -> V + A + B`` has norm 1 and the gradient
``(R(W) / ||X_i||, W, W)``, ``W = -(V + A + B) M^{-1}``, is Lipschitz with
constant ``Lambda <= 1/gamma`` in the block metric ``diag(w_j)``, ``sum_j 1/w_j =
1`` (equal blocks for p = 2; ``theta`` gets 2/3 of the step for p = 1 and inf,
where its box / l1-ball dual is the slow block); ``Lambda`` is estimated by power
iteration. FISTA (Beck & Teboulle, SIAM J. Imaging Sci. 2009: ``O(1/k^2)`` on the
dual) with O'Donoghue--Candès gradient restart (Found. Comput. Math. 2015: linear
convergence under quadratic growth, observed here) and the exact projections
(:func:`solvers.prox.project_lq_ball`, :func:`solvers.prox.project_row_ball`,
:func:`solvers.prox.project_spectral_ball` by the eigen-decomposition of the
``m x m`` Gram matrix). Every iterate is exactly feasible, so every ``LB`` is a
true lower bound; the primal point is ``W = -(V + A + B) M^{-1}`` (the inner
minimiser, ``||W - W*||^2 <= 2 (D* - LB) / gamma``), plus a second candidate with
the structure the multipliers identify (rows whose ``A_r`` is strictly inside its
ball set to zero, ``W`` projected onto the singular subspaces where ``B`` is
saturated at ``rho``), both evaluated exactly. The iterations run in a compiled
kernel (``solvers._robust_mtl_kernels``); the certificate is evaluated every
10 to 100 iterations (so that it costs about 20% of the run).

**method="dual"** (the paper's Algorithm 1 + 2): FISTA ascent on ``theta`` with
backtracking (``solvers.apg.APG`` on ``-D``, first ``L = L_D / 20``, factor
``tau = 2``) and projection onto the unit q-balls
(``solvers.prox.project_lq_ball``: l2 rescaling for p = 2, box for p = 1,
Condat's l1 projection for p = inf). Each evaluation of ``D`` solves the inner
problem for fixed ``theta`` with S-FISTA (Algorithm 2, the same engine with
``fixed_step=True``): the rows of the l2,1 norm are Huber-smoothed (Theorem 2,
parameter ``mu``), the nuclear norm is kept as a prox (singular value
thresholding, :func:`solvers.prox.svt`), constant step ``1/L`` with ``L = 4
zeta + gamma + lam/mu``, warm-started from the previous ``W``. An inner solve
stops on its own smoothed duality gap, below ``inner_rtol`` times the smaller
of the last outer smoothed gap and the line-search term ``L/2 ||theta_k -
nu_k||^2`` (the accuracy an inexact oracle needs). Once the backtracking ``L``
reaches ``L_D`` (Theorem 4), the step is accepted: with exact inner solves the
test always passes there. Besides ``W(theta_k)``, the certificate's primal side
also evaluates the running average of the inner solutions at the search points
(weights ``1/t_k``, Tseng's primal averaging): ``J`` is exact anywhere, and for
p = 1 and inf, where ``W(theta_k)`` converges slowly, the average is often better.

**method="smoothing"** (the paper's baseline): the loss norms are smoothed too
(Moreau envelope with the same ``mu``: Theorem 2's Huber function for p = 2,
an entrywise Huber for p = 1, the envelope of the max norm for p = inf), and
FISTA with singular value thresholding and constant step
``1/L``, ``L = (max_i ||X_i||_2^2 + lam)/mu + gamma + 4 zeta`` (Theorem 3),
minimises the whole smoothed objective. Its certificate takes
``theta_i = grad of the smoothed loss`` (always in the unit q-ball).

``restart=True`` adds O'Donoghue--Candès adaptive momentum restarts to every
FISTA loop of either method (not in the paper; it speeds both up a lot).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._blas import single_threaded_blas
from ._robust_mtl_kernels import exact_dual_steps
from .apg import APG
from .base import IncompatibleWarmStart, Monitor, Result
from .params import TOL, ParamSpec, ParamSpecs
from .prox import (
    project_l2_ball,
    project_lq_ball,
    project_row_ball,
    project_spectral_ball,
    svt,
)
from .saved import SavedForm, array_specs, scores_per_task
from .validation import (
    DATA_MAX_ABS,
    check_callback,
    check_init,
    check_int,
    check_matrix,
    check_scalar,
    check_task_lists,
    check_vector,
)

__all__ = [
    "METHODS",
    "PARAMS",
    "P_VALUES",
    "RobustMTLResult",
    "certificate",
    "dual_function",
    "dual_objective",
    "primal_objective",
    "project_dual",
    "solve",
]

#: The parameters of :func:`solve`, declared once (defaults, ranges, choices, help).
PARAMS = ParamSpecs(
    ParamSpec("lam", 3.0, "l2,1 weight (row sparsity)", low=0.0, low_inclusive=True),
    ParamSpec("gamma", 1.0, "ridge weight (strong convexity, > 0)", low=0.0),
    ParamSpec("zeta", 1.0, "temporal smoothness weight", low=0.0, low_inclusive=True),
    ParamSpec("rho", 3.0, "nuclear-norm weight (low rank)", low=0.0, low_inclusive=True),
    ParamSpec("p", 2, "loss norm", choices=(2, 1, math.inf)),
    ParamSpec("method", "exact_dual",
              "exact_dual: accelerated projected gradient on the exact dual (floor-free, "
              "default); dual: the paper's accelerated dual ascent; smoothing: the paper's "
              "pure-smoothing baseline", choices=("exact_dual", "dual", "smoothing")),
    ParamSpec("mu", 1e-3, "smoothing parameter of the dual and smoothing methods: their "
              "certified gap cannot go below a floor that shrinks with mu (about lam d mu / 4 "
              "at most); smaller mu is slower", low=0.0),
    TOL,
    ParamSpec("max_iter", None, "outer-iteration budget (default per method: exact_dual "
              "10000 blocks of FISTA steps between certificates, dual 2000 outer "
              "iterations, smoothing 100000 FISTA steps)", kind="int", low=1,
              low_inclusive=True),
    ParamSpec("max_svd", None, "total work budget: spectral decompositions of a d x m "
              "matrix (projections, thresholdings, certificates); default scaled to the "
              "problem size (100000 at the page's default size, at least 2000)", kind="int",
              low=1, low_inclusive=True),
    ParamSpec("restart", False, "adaptive momentum restart in the paper's methods (not in the "
              "paper; exact_dual always restarts)"),
    ParamSpec("check_every", 0, "certify (and call the callback) every this many iterations "
              "(0: per method: dual and smoothing 1, exact_dual adaptive, 10 to 100, so that "
              "certificates cost about 20% of the run)", kind="int", low=0,
              low_inclusive=True),
    ParamSpec("max_inner", 20_000, "dual: cap on the S-FISTA iterations of one inner solve",
              kind="int", low=1, low_inclusive=True),
    ParamSpec("inner_rtol", 0.1, "dual: inner solves stop at this fraction of the outer "
              "progress", low=0.0, high=1.0),
)
METHODS = PARAMS["method"].choices
P_VALUES = (1, 2, math.inf)

#: Default iteration budgets (outer iterations: blocks of FISTA steps between two
#: certificates for "exact_dual", outer iterations for "dual", FISTA steps for
#: "smoothing"); the total SVD budget ``max_svd`` bounds every method.
MAX_ITER = {"exact_dual": 10_000, "dual": 2000, "smoothing": 100_000}
#: Default total work budget (see :func:`_default_svd_budget`).
_WORK_BUDGET = 2 * 10**9
_SVD_BUDGET_MIN, _SVD_BUDGET_MAX = 2000, 100_000
#: Default certification period per method.
CHECK_EVERY = {"exact_dual": 0, "dual": 1, "smoothing": 1}
#: exact_dual with check_every=0: the certification period adapts within these bounds.
_PERIOD_MIN, _PERIOD_MAX = 10, 100
#: The run stops at the smoothing floor once the smoothed gap is below this fraction of tol.
_FLOOR_FRACTION = 0.1
#: ... or once it is below this fraction of the floor itself (the gap has stalled).
_FLOOR_STALL = 0.01
#: Outer FISTA on theta: first Lipschitz guess L_D * _L0_FRACTION, backtracking factor tau.
_L0_FRACTION = 0.05
_TAU = 2.0


@dataclass(frozen=True, eq=False, kw_only=True)
class RobustMTLResult(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    W : ndarray, shape (d, m)
        Task weights, one column per task (time step).
    theta : tuple of ndarray
        Dual variables, ``theta[i]`` of length ``n_i`` in the unit q-ball.
    A, B : ndarray, shape (d, m)
        The certificate's multipliers of the l2,1 norm (row norms ``<= lam``)
        and of the nuclear norm (spectral norm ``<= rho``):
        ``dual == dual_objective(theta, A, B, ...)``.
    loss_norms : ndarray, shape (m,)
        ``||X_i w_i - y_i||_p`` per task.
    mu : float
        Smoothing parameter of the run (not used by ``"exact_dual"``).
    smoothed_gap : float
        Certified gap of the mu-smoothed problem at the returned point (for
        ``"exact_dual"``, which smooths nothing, the certified gap itself).
    floor : float
        ``gap - smoothed_gap``: the part of the certified gap caused by the
        smoothing (it does not shrink with more iterations, only with ``mu``);
        0 for ``"exact_dual"``.
    floor_reached : bool
        The run stopped because the smoothed problem was solved while the
        certified gap stayed above ``tol`` (decrease ``mu``).
    inner_iterations : int
        Spectral decompositions (SVDs or Gram eigen-decompositions of a d x m
        matrix) used by the run, the work unit of all three methods: inner
        S-FISTA steps for ``"dual"``, FISTA steps for ``"smoothing"``,
        projections plus certificates for ``"exact_dual"``.
    """

    W: np.ndarray
    theta: tuple
    A: np.ndarray
    B: np.ndarray
    loss_norms: np.ndarray
    mu: float
    smoothed_gap: float
    floor: float
    floor_reached: bool
    inner_iterations: int

    def predict(self, Xs: Any) -> list[np.ndarray]:
        """Predictions ``X_i w_i`` for a list of per-task design matrices."""
        try:
            Xs = list(Xs)
        except TypeError as exc:
            raise TypeError("Xs must be a sequence of one design matrix per task") from exc
        if len(Xs) != self.W.shape[1]:
            raise ValueError(f"Xs must have {self.W.shape[1]} tasks, got {len(Xs)}")
        d = self.W.shape[0]
        return [check_matrix(X, f"Xs[{i}]", n_cols=d) @ self.W[:, i]
                for i, X in enumerate(Xs)]


# ---------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------


def _check_p(p: Any) -> float:
    if isinstance(p, str) and p.strip().lower() in ("inf", "infinity"):
        p = math.inf
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, float, np.integer,
                                                              np.floating)):
        raise TypeError(f"p must be 1, 2 or inf, got {type(p).__name__} {p!r}")
    p = float(p)
    if p not in (1.0, 2.0, math.inf):
        raise ValueError(f"p must be 1, 2 or inf (the loss norm), got {p:g}")
    return p


def _dual_q(p: float) -> float:
    return math.inf if p == 1.0 else (1.0 if p == math.inf else 2.0)


def _check_params(lam: Any, gamma: Any, zeta: Any, rho: Any, p: Any
                  ) -> tuple[float, float, float, float, float]:
    v = PARAMS.validate(lam=lam, zeta=zeta, rho=rho)
    g = check_scalar(gamma, "gamma")
    if g <= 0.0:
        raise ValueError(
            f"gamma must be > 0, got {g:g}: the dual methods need the strong convexity "
            "gamma/2 ||W||_F^2, and the certificate needs gamma I + zeta L invertible"
        )
    return v["lam"], g, v["zeta"], v["rho"], _check_p(p)


def _check_data(Xs: Any, ys: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-task data as float64 copies; entries above ``DATA_MAX_ABS`` raise, because the
    solvers square the data (``||X_i||^2``, Gram matrices)."""
    return check_task_lists(Xs, ys, max_abs=DATA_MAX_ABS)


# ---------------------------------------------------------------------------
# The problem: data, quadratic form, norms
# ---------------------------------------------------------------------------


def _spectral_norms(Xs: list[np.ndarray], X3: np.ndarray | None) -> np.ndarray:
    """``||X_i||_2`` per task: square root of the top eigenvalue of the smaller Gram matrix.

    ``X X^T`` (n x n) or ``X^T X`` (d x d), whichever is smaller: O(n d min(n, d))
    for the product and O(min(n, d)^3) for the symmetric eigenvalues, batched over
    the tasks when they have equal sizes.
    """
    if X3 is not None:
        Gs = [np.matmul(X3, X3.transpose(0, 2, 1)) if X3.shape[1] <= X3.shape[2]
              else np.matmul(X3.transpose(0, 2, 1), X3)]
    else:
        Gs = [(X @ X.T if X.shape[0] <= X.shape[1] else X.T @ X)[None] for X in Xs]
    top = np.concatenate([np.linalg.eigvalsh(G)[:, -1] for G in Gs])
    return np.sqrt(np.maximum(top, 0.0))


class _Problem:
    """Data and parameters of one instance, with the operators both methods use.

    Per-task vectors (residuals, ``theta``) are stored as one ``(m, n_max)``
    array, zero-padded after ``n_i``. The padding is exact: padded residuals
    are 0, so the padded ``theta`` entries stay 0 under every projection used
    and contribute nothing to norms, ``V`` or ``theta^T y``.
    """

    def __init__(self, Xs: list[np.ndarray], ys: list[np.ndarray], lam: float, gamma: float,
                 zeta: float, rho: float, p: float, mu: float) -> None:
        self.Xs = Xs
        self.m = m = len(Xs)
        self.d = Xs[0].shape[1]
        self.ns = np.array([X.shape[0] for X in Xs])
        self.nmax = int(self.ns.max())
        self.Y = np.zeros((m, self.nmax))
        self.mask = np.zeros((m, self.nmax), dtype=bool)
        for i, y in enumerate(ys):
            self.Y[i, :y.shape[0]] = y
            self.mask[i, :y.shape[0]] = True
        self.lam, self.gamma, self.zeta, self.rho = lam, gamma, zeta, rho
        self.p, self.q, self.mu = p, _dual_q(p), mu
        Lap = np.zeros((m, m))
        if m > 1:
            idx = np.arange(m - 1)
            Lap[idx, idx] += 1.0
            Lap[idx + 1, idx + 1] += 1.0
            Lap[idx, idx + 1] -= 1.0
            Lap[idx + 1, idx] -= 1.0
        ev, Q = np.linalg.eigh(gamma * np.eye(m) + zeta * Lap)
        # tr(C M^{-1} C^T) = ||C Q diag(ev)^{-1/2}||_F^2 with M = Q diag(ev) Q^T, ev >= gamma.
        self.Qs = Q / np.sqrt(np.maximum(ev, gamma))
        self.Minv = (Q / np.maximum(ev, gamma)) @ Q.T
        # Equal task sizes: one batched product (m, n, d) instead of a loop over tasks.
        self.X3 = np.stack(Xs) if bool(np.all(self.ns == self.nmax)) else None
        #: spectral norm of every task's design matrix (1 for an all-zero matrix)
        self.snorm = _spectral_norms(Xs, self.X3)
        self.xnorm2 = float(self.snorm.max()) ** 2
        self.snorm[self.snorm == 0.0] = 1.0

    # ---- per-task products
    def residuals(self, W: np.ndarray) -> np.ndarray:
        if self.X3 is not None:
            return np.matmul(self.X3, W.T[:, :, None])[:, :, 0] - self.Y
        R = np.zeros((self.m, self.nmax))
        for i, X in enumerate(self.Xs):
            R[i, :X.shape[0]] = X @ W[:, i]
        R -= self.Y
        return R

    def V(self, theta: np.ndarray) -> np.ndarray:
        """``[X_1^T theta_1 ... X_m^T theta_m]`` (d x m)."""
        if self.X3 is not None:
            return np.matmul(theta[:, None, :], self.X3)[:, 0, :].T
        out = np.empty((self.d, self.m))
        for i, X in enumerate(self.Xs):
            out[:, i] = X.T @ theta[i, :X.shape[0]]
        return out

    def padded_X(self) -> np.ndarray:
        """The design matrices as one zero-padded ``(m, n_max, d)`` array."""
        X3 = np.zeros((self.m, self.nmax, self.d))
        for i, X in enumerate(self.Xs):
            X3[i, :X.shape[0]] = X
        return X3

    def unpad(self, T: np.ndarray) -> list[np.ndarray]:
        return [T[i, :n].copy() for i, n in enumerate(self.ns)]

    def pad(self, parts: list[np.ndarray]) -> np.ndarray:
        T = np.zeros((self.m, self.nmax))
        for i, t in enumerate(parts):
            T[i, :t.shape[0]] = t
        return T

    def loss_norms(self, R: np.ndarray) -> np.ndarray:
        return np.linalg.norm(R, ord=self.p, axis=1)

    # ---- the quadratic part and the regularisers
    def mul_M(self, W: np.ndarray) -> np.ndarray:
        """``W M = gamma W + zeta W L`` (path Laplacian, by differences)."""
        out = self.gamma * W
        if self.zeta > 0.0 and self.m > 1:
            D = self.zeta * (W[:, 1:] - W[:, :-1])
            out[:, 1:] += D
            out[:, :-1] -= D
        return out

    def quad(self, W: np.ndarray) -> float:
        """``gamma/2 ||W||_F^2 + zeta/2 sum ||w_i - w_{i+1}||^2``."""
        val = 0.5 * self.gamma * float(np.vdot(W, W))
        if self.zeta > 0.0 and self.m > 1:
            D = W[:, 1:] - W[:, :-1]
            val += 0.5 * self.zeta * float(np.vdot(D, D))
        return val

    def minv_sq(self, C: np.ndarray) -> float:
        """``tr(C M^{-1} C^T)``."""
        CQ = C @ self.Qs
        return float(np.vdot(CQ, CQ))

    def huber_rows(self, W: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """``lam sum_r h_mu(||W_r||)`` (Theorem 2), its gradient ``A`` and the row norms."""
        norms = np.sqrt(np.einsum("ij,ij->i", W, W))
        if self.lam == 0.0:
            return 0.0, np.zeros_like(W), norms
        mu = self.mu
        big = np.maximum(norms, mu)
        # h_mu(t) = t^2 / (2 mu) for t <= mu, t - mu/2 otherwise; = t^2/(2 big) + (big - mu)/2
        val = float(np.sum(norms * norms / (2.0 * big) + 0.5 * (big - mu)))
        return self.lam * val, W * (self.lam / big)[:, None], norms

    def nuclear(self, W: np.ndarray) -> float:
        if self.rho == 0.0:
            return 0.0
        return float(np.linalg.svd(W, compute_uv=False).sum())

    def project(self, T: np.ndarray) -> np.ndarray:
        """Projection of every task's ``theta_i`` onto its unit q-ball."""
        if self.q == 2.0:
            return project_l2_ball(T, 1.0, axis=1)
        if self.q == math.inf:
            return project_lq_ball(T, self.q)
        out = np.empty_like(T)
        for i in range(self.m):
            out[i] = project_lq_ball(T[i], self.q)
        return out

    # ---- certificate pieces
    def feasible_theta(self, T: np.ndarray) -> np.ndarray:
        """Rescale each ``theta_i`` into the closed unit q-ball (rounding safety)."""
        nrm = np.linalg.norm(T, ord=self.q, axis=1)
        return T / np.maximum(nrm, 1.0)[:, None]

    def feasible_A(self, A: np.ndarray) -> np.ndarray:
        return project_row_ball(A, self.lam)

    def feasible_B(self, B: np.ndarray) -> np.ndarray:
        if self.rho == 0.0:
            return np.zeros_like(B)
        G = B.T @ B if self.m <= self.d else B @ B.T
        s = math.sqrt(max(float(np.linalg.eigvalsh(G)[-1]), 0.0))
        return B * (self.rho / s) if s > self.rho else B

    def project_spectral(self, B: np.ndarray) -> np.ndarray:
        """Projection onto ``{||B||_2 <= rho}`` (clip the singular values at ``rho``)."""
        return self.feasible_B(project_spectral_ball(B, self.rho))

    def bound(self, theta: np.ndarray, V: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
        """``-sum_i theta_i^T y_i - 1/2 tr((V + A + B) M^{-1} (V + A + B)^T)``."""
        return -float(np.vdot(theta, self.Y)) - 0.5 * self.minv_sq(V + A + B)

    def primal(self, W: np.ndarray, R: np.ndarray, nuc: float | None = None
               ) -> tuple[float, np.ndarray]:
        norms = self.loss_norms(R)
        l21 = float(np.sqrt(np.einsum("ij,ij->i", W, W)).sum())
        nuc = self.nuclear(W) if nuc is None else nuc
        return float(norms.sum()) + self.lam * l21 + self.quad(W) + self.rho * nuc, norms

    def l21_floor(self, row_norms: np.ndarray) -> float:
        """``lam sum_{||w_r|| < mu} ||w_r|| (1 - ||w_r||/mu)``: the l2,1 smoothing floor."""
        if self.lam == 0.0:
            return 0.0
        r = row_norms[row_norms < self.mu]
        return self.lam * float(np.sum(r * (1.0 - r / self.mu)))

    def smooth_loss(self, R: np.ndarray) -> tuple[float, np.ndarray]:
        """Moreau envelope ``sum_i max_{||t||_q <= 1} <t, r_i> - mu/2 ||t||^2`` and maximiser."""
        theta = self.project(R / self.mu)
        return float(np.vdot(theta, R)) - 0.5 * self.mu * float(np.vdot(theta, theta)), theta


# ---------------------------------------------------------------------------
# Public objective functions
# ---------------------------------------------------------------------------


def _problem_from(Xs: Any, ys: Any, lam: Any, gamma: Any, zeta: Any, rho: Any, p: Any,
                  mu: float = 1.0) -> _Problem:
    Xs, ys = _check_data(Xs, ys)
    lam, gamma, zeta, rho, p = _check_params(lam, gamma, zeta, rho, p)
    return _Problem(Xs, ys, lam, gamma, zeta, rho, p, mu)


def _check_W(W: Any, pb: _Problem, name: str = "W") -> np.ndarray:
    return check_matrix(W, name, n_rows=pb.d, n_cols=pb.m)


def _check_theta(theta: Any, pb: _Problem, *, tol: float = 1e-9) -> np.ndarray:
    if isinstance(theta, np.ndarray) and theta.ndim != 2:
        raise ValueError(f"theta must be a sequence of {pb.m} vectors, got shape {theta.shape}")
    try:
        parts = list(theta)
    except TypeError as exc:
        raise TypeError("theta must be a sequence of one vector per task") from exc
    if len(parts) != pb.m:
        raise ValueError(f"theta must have one vector per task ({pb.m}), got {len(parts)}")
    out = []
    for i, t in enumerate(parts):
        t = check_vector(t, f"theta[{i}]", size=int(pb.ns[i]))
        nrm = float(np.linalg.norm(t, pb.q))
        if nrm > 1.0 + tol:
            raise ValueError(
                f"theta[{i}] is outside the unit {pb.q:g}-ball (norm {nrm:.6g}); "
                "project it with project_dual first"
            )
        out.append(t)
    return pb.pad(out)


def primal_objective(W: Any, Xs: Any, ys: Any, *, lam: float, gamma: float, zeta: float,
                     rho: float, p: float = 2) -> float:
    """``J(W) = sum_i ||X_i w_i - y_i||_p + lam ||W||_{2,1} + gamma/2 ||W||_F^2
    + zeta/2 sum_i ||w_i - w_{i+1}||^2 + rho ||W||_*`` (exact, no smoothing).

    Parameters
    ----------
    W : array_like, shape (d, m)
        One weight column per task.
    Xs, ys : list of array_like
        Per task ``i``: samples ``(n_i, d)`` and targets ``(n_i,)``.
    lam, gamma, zeta, rho : float, >= 0
        The weights of ``||W||_{2,1}``, ``||W||_F^2 / 2``, the temporal smoothness term
        and ``||W||_*``.
    p : float, >= 1
        The residual norm of each task (the dual variables lie in the unit ball of its
        dual norm ``q``).

    Returns
    -------
    float
        J(W).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import robust_mtl
    >>> Xs = [np.eye(2), np.eye(2)]; ys = [np.array([3.0, 4.0]), np.zeros(2)]
    >>> robust_mtl.primal_objective(np.zeros((2, 2)), Xs, ys, lam=1.0, gamma=1.0,
    ...                             zeta=1.0, rho=1.0)  # ||(3, 4)||_2 + 0
    5.0
    """
    pb = _problem_from(Xs, ys, lam, gamma, zeta, rho, p)
    W = _check_W(W, pb)
    return pb.primal(W, pb.residuals(W))[0]


def dual_objective(theta: Any, A: Any, B: Any, Xs: Any, ys: Any, *, lam: float, gamma: float,
                   zeta: float, rho: float, p: float = 2) -> float:
    """The certified lower bound ``LB(theta, A, B) <= min_W J(W)``.

    ``LB = -sum_i theta_i^T y_i - 1/2 tr((V + A + B)(gamma I + zeta L)^{-1}(V + A + B)^T)``,
    ``V = [X_i^T theta_i]``, valid whenever ``||theta_i||_q <= 1``, every row
    of ``A`` has norm ``<= lam`` and ``B`` has spectral norm ``<= rho``
    (``A`` or ``B`` may be None for zero). Raises ``ValueError`` for an
    infeasible point (beyond a 1e-9 relative rounding slack).

    Parameters
    ----------
    theta : sequence of array_like
        One dual vector per task, ``theta[i]`` of length ``n_i``.
    A : array_like, shape (d, m), or None
        The dual point of ``lam ||W||_{2,1}``.
    B : array_like, shape (d, m), or None
        The dual point of ``rho ||W||_*``.
    Xs, ys : list of array_like
        Per task ``i``: samples ``(n_i, d)`` and targets ``(n_i,)``.
    lam, gamma, zeta, rho : float, >= 0
        The weights of ``||W||_{2,1}``, ``||W||_F^2 / 2``, the temporal smoothness term
        and ``||W||_*``.
    p : float, >= 1
        The residual norm of each task (the dual variables lie in the unit ball of its
        dual norm ``q``).

    Returns
    -------
    float
        ``LB(theta, A, B)``, a lower bound of ``min J``.
    """
    pb = _problem_from(Xs, ys, lam, gamma, zeta, rho, p)
    th = _check_theta(theta, pb)
    A = np.zeros((pb.d, pb.m)) if A is None else _check_W(A, pb, "A")
    B = np.zeros((pb.d, pb.m)) if B is None else _check_W(B, pb, "B")
    rows = float(np.sqrt(np.einsum("ij,ij->i", A, A)).max())
    if rows > pb.lam * (1 + 1e-9) + 1e-300:
        raise ValueError(f"A has a row of norm {rows:.6g} > lam={pb.lam:g}: infeasible")
    spec = float(np.linalg.norm(B, 2))
    if spec > pb.rho * (1 + 1e-9) + 1e-300:
        raise ValueError(f"B has spectral norm {spec:.6g} > rho={pb.rho:g}: infeasible")
    return pb.bound(th, pb.V(th), A, B)


def project_dual(theta: Any, p: float = 2) -> list[np.ndarray]:
    """Project each ``theta_i`` onto the unit ball of the dual norm ``q`` (``1/p + 1/q = 1``).

    Parameters
    ----------
    theta : sequence of array_like
        One dual vector per task.
    p : float, >= 1
        The primal residual norm.

    Returns
    -------
    list of ndarray
        The projected vectors (the nearest points in the ``q``-norm unit ball).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import robust_mtl
    >>> robust_mtl.project_dual([np.array([3.0, 4.0])])[0]  # onto the Euclidean ball
    array([0.6, 0.8])
    """
    q = _dual_q(_check_p(p))
    return [project_lq_ball(check_vector(t, f"theta[{i}]"), q) for i, t in enumerate(theta)]


def certificate(W: Any, theta: Any, Xs: Any, ys: Any, *, lam: float, gamma: float, zeta: float,
                rho: float, p: float = 2, polish: int = 300) -> dict[str, Any]:
    """Certified bracket ``[dual, primal]`` of ``min J`` from any ``W`` and feasible ``theta``.

    ``primal = J(W)``. For the lower bound, ``A`` and ``B`` start from the split
    of ``G = -(W M + V)`` suggested by ``W`` (``A_r = lam W_r / ||W_r||``, ``B``
    the projection of ``G - A`` onto the spectral ball) and are then improved
    by ``polish`` projected FISTA steps on ``max_{A, B} -1/2 ||V + A + B||_{M^-1}^2``
    (the inner dual; its maximum is ``D(theta)``). Every ``(A, B)`` visited is
    feasible, so ``dual = dual_objective(theta, A, B) <= min J`` whatever ``W``
    and ``theta`` are. Returns a dict with ``primal``, ``dual``, ``gap``, ``A``, ``B``.

    Parameters
    ----------
    W : array_like, shape (d, m)
        Any primal point.
    theta : sequence of array_like
        A feasible dual point (one vector per task, ``||theta_i||_q <= 1``).
    Xs, ys : list of array_like
        Per task ``i``: samples ``(n_i, d)`` and targets ``(n_i,)``.
    lam, gamma, zeta, rho : float, >= 0
        The weights of ``||W||_{2,1}``, ``||W||_F^2 / 2``, the temporal smoothness term
        and ``||W||_*``.
    p : float, >= 1
        The residual norm of each task (the dual variables lie in the unit ball of its
        dual norm ``q``).
    polish : int, >= 0
        Projected FISTA steps on ``(A, B)``.

    Returns
    -------
    dict
        ``primal``, ``dual``, ``gap`` (floats), ``A``, ``B`` (arrays ``(d, m)``).
    """
    pb = _problem_from(Xs, ys, lam, gamma, zeta, rho, p)
    W = _check_W(W, pb)
    th = pb.feasible_theta(_check_theta(theta, pb))
    polish = check_int(polish, "polish", low=0)
    V = pb.V(th)
    G = -(pb.mul_M(W) + V)
    norms = np.sqrt(np.einsum("ij,ij->i", W, W))
    A = pb.feasible_A(W * (pb.lam / np.maximum(norms, np.finfo(float).tiny))[:, None])
    B = pb.project_spectral(G - A)
    best = (pb.bound(th, V, A, B), A, B)
    if polish > 0 and (pb.lam > 0 or pb.rho > 0):

        def vg(AB):
            C = V + AB[0] + AB[1]
            CM = C @ pb.Minv
            return 0.5 * float(np.vdot(C, CM)), (CM, CM)

        def prox(AB, _step):
            return pb.feasible_A(AB[0]), pb.project_spectral(AB[1])

        apg = APG(vg, prox, (A, B), L0=2.0 * float(np.abs(pb.Minv).sum(axis=1).max()),
                  fixed_step=True)
        for _ in range(polish):
            A, B = apg.step()
        B = pb.feasible_B(B)
        val = pb.bound(th, V, A, B)
        if val > best[0]:
            best = (val, A, B)
    primal = pb.primal(W, pb.residuals(W))[0]
    dual, A, B = best
    return {"primal": primal, "dual": dual, "gap": max(primal - dual, 0.0), "A": A, "B": B}


# ---------------------------------------------------------------------------
# Inner solver (Algorithm 2): S-FISTA for fixed theta
# ---------------------------------------------------------------------------


class _SVTProx:
    """Prox of ``rho ||.||_*`` (singular value thresholding) that keeps the multiplier.

    After ``Z = prox(Y, step)``, ``B = (Y - Z) / step`` lies in ``rho d||Z||_*``
    (so its spectral norm is ``<= rho``) and ``nuc = ||Z||_*``.
    """

    def __init__(self, rho: float) -> None:
        self.rho = rho
        self.B = np.zeros((0, 0))  # the multiplier of the last call (none made yet)
        self.nuc = 0.0

    def __call__(self, Y: np.ndarray, step: float) -> np.ndarray:
        if self.rho == 0.0:
            self.B, self.nuc = np.zeros_like(Y), 0.0
            return Y
        Z, s = svt(Y, self.rho * step, return_sv=True)
        self.B = (Y - Z) / step
        self.nuc = float(s.sum())
        return Z


class _Inner:
    """S-FISTA on ``lam H_mu(W) + 1/2 tr(W M W^T) + <V, W> + rho ||W||_*`` (step ``1/L``)."""

    def __init__(self, pb: _Problem, restart: bool) -> None:
        self.pb = pb
        self.restart = restart
        self.L = 4.0 * pb.zeta + pb.gamma + (pb.lam / pb.mu if pb.lam > 0 else 0.0)

    def solve(self, V: np.ndarray, W0: np.ndarray, eps: float, max_inner: int
              ) -> tuple[np.ndarray, np.ndarray, float, int, float]:
        """Return ``W``, ``B``, ``||W||_*``, iterations, smoothed inner gap."""
        pb = self.pb

        def vg(W):
            hval, A, _ = pb.huber_rows(W)
            WM = pb.mul_M(W)
            return hval + 0.5 * float(np.vdot(W, WM)) + float(np.vdot(V, W)), A + WM + V

        prox = _SVTProx(pb.rho)
        apg = APG(vg, prox, W0, L0=self.L, fixed_step=True, adaptive_restart=self.restart)
        gap = math.inf
        k = 0
        W = W0
        while k < max_inner:
            k += 1
            W = apg.step()
            gap, scale = self.gap(V, W, prox.B, prox.nuc)
            if gap <= max(eps, 1e-13 * scale):
                break
        return W, prox.B, prox.nuc, k, gap

    def gap(self, V: np.ndarray, W: np.ndarray, B: np.ndarray, nuc: float
            ) -> tuple[float, float]:
        """Smoothed inner gap ``P_in(W) - (-1/2 ||V+A+B||_{M^-1}^2 - mu/(2 lam) ||A||^2)``."""
        pb = self.pb
        hval, A, _ = pb.huber_rows(W)
        lin = float(np.vdot(V, W))
        primal = hval + pb.quad(W) + lin + pb.rho * nuc
        q = 0.5 * pb.minv_sq(V + A + B)
        dual = -q
        if pb.lam > 0.0:
            dual -= 0.5 * pb.mu / pb.lam * float(np.vdot(A, A))
        return primal - dual, max(1.0, abs(lin), q)


def dual_function(theta: Any, Xs: Any, ys: Any, *, lam: float, gamma: float, zeta: float,
                  rho: float, p: float = 2, mu: float = 1e-6, tol: float = 1e-12,
                  max_inner: int = 100_000, W0: Any = None) -> dict[str, Any]:
    """Evaluate the dual function at a feasible ``theta`` with the inner S-FISTA (Algorithm 2).

    ``D(theta) = min_W lam ||W||_{2,1} + 1/2 tr(W M W^T) + rho ||W||_* + sum_i <theta_i,
    X_i w_i - y_i>``, solved with the rows of the l2,1 norm Huber-smoothed
    (parameter ``mu``) until the smoothed inner gap is below ``tol``.

    Returns a dict: ``W`` (the inner minimiser ``W(theta)``), ``value`` (the
    smoothed inner objective at ``W``, an upper estimate of ``D_mu(theta)``),
    ``lower`` (the certified lower bound ``dual_objective(theta, A, B) <=
    D(theta)`` from the final iterate), ``gradient`` (``[X_i w_i - y_i]``, the
    list of gradients of ``D``), ``inner_gap`` and ``n_iter``.

    Parameters
    ----------
    theta : sequence of array_like
        A feasible dual point (one vector per task).
    Xs, ys : list of array_like
        Per task ``i``: samples ``(n_i, d)`` and targets ``(n_i,)``.
    lam, gamma, zeta, rho : float, >= 0
        The weights of ``||W||_{2,1}``, ``||W||_F^2 / 2``, the temporal smoothness term
        and ``||W||_*``.
    p : float, >= 1
        The residual norm of each task (the dual variables lie in the unit ball of its
        dual norm ``q``).
    mu : float, > 0
        The Huber smoothing of the rows of ``||W||_{2,1}``.
    tol : float, > 0
        The inner gap to reach.
    max_inner : int
        Budget of inner S-FISTA iterations.
    W0 : array_like, shape (d, m), optional
        The inner start (default zero).

    Returns
    -------
    dict
        ``W``, ``value``, ``lower``, ``gradient``, ``inner_gap``, ``n_iter`` (above).
    """
    pb = _problem_from(Xs, ys, lam, gamma, zeta, rho, p, mu=check_scalar(mu, "mu", low=0.0))
    th = _check_theta(theta, pb)
    tol = check_scalar(tol, "tol", low=0.0)
    max_inner = check_int(max_inner, "max_inner", low=1)
    W0 = np.zeros((pb.d, pb.m)) if W0 is None else _check_W(W0, pb, "W0")
    V = pb.V(th)
    W, B, nuc, k, igap = _Inner(pb, restart=True).solve(V, W0, tol, max_inner)
    A = pb.feasible_A(pb.huber_rows(W)[1])
    value = (pb.huber_rows(W)[0] + pb.quad(W) + pb.rho * nuc + float(np.vdot(V, W))
             - float(np.vdot(th, pb.Y)))
    R = pb.residuals(W)
    return {"W": W, "value": value, "lower": pb.bound(th, V, A, pb.feasible_B(B)),
            "gradient": pb.unpad(R), "inner_gap": igap, "n_iter": k}


def _default_svd_budget(pb: _Problem) -> int:
    """The default total SVD budget: about ``_WORK_BUDGET`` flop-like units of work.

    One step of any method costs about ``d m min(d, m)`` (a spectral decomposition
    of the ``d x m`` iterate) plus ``d sum_i n_i`` (products with every ``X_i``);
    the budget is that many steps, between ``_SVD_BUDGET_MIN`` and ``_SVD_BUDGET_MAX``
    (a few seconds at the page's default size, bounded at the dashboard's largest).
    """
    unit = pb.d * pb.m * min(pb.d, pb.m) + pb.d * int(pb.ns.sum())
    return int(min(_SVD_BUDGET_MAX, max(_SVD_BUDGET_MIN, _WORK_BUDGET // max(unit, 1))))


def _left(mon: Monitor, cap: int) -> int:
    """Inner iterations allowed now: the cap, within what is left of the SVD budget (>= 1)."""
    if mon.budget is None:
        return cap
    return max(1, min(cap, int(mon.budget - mon.work)))


# ---------------------------------------------------------------------------
# Bookkeeping: best certified bracket, the smoothing floor, honest warnings
# ---------------------------------------------------------------------------


class _Certifier:
    """Certificate at every recorded iterate; keeps the best primal point and dual point.

    The history's ``primal`` / ``dual`` are the best values so far (each a
    true bound); ``primal_iterate`` / ``dual_iterate`` are the current ones.
    """

    def __init__(self, pb: _Problem, mon: Monitor, tol: float, want_iterate: bool) -> None:
        self.pb, self.mon, self.tol, self.want_iterate = pb, mon, tol, want_iterate
        self.primal, self.dual = math.inf, -math.inf
        self.out: dict[str, Any] = {}
        self.mu = 0.0  # the smoothing parameter, set by ``solve``

    def offer_primal(self, W: np.ndarray) -> None:
        """Another primal candidate: kept if ``J(W)`` beats the best so far."""
        primal, norms = self.pb.primal(W, self.pb.residuals(W))
        if primal < self.primal:
            self.primal = primal
            self.out["W"], self.out["loss_norms"] = W, norms

    def record(self, it: int, W: np.ndarray, theta: np.ndarray, R: np.ndarray, A: np.ndarray,
               B: np.ndarray, nuc: float | None, smooth_terms: float, **extras: Any) -> bool:
        pb, out = self.pb, self.out
        theta = pb.feasible_theta(theta)
        A = pb.feasible_A(A)
        B = pb.feasible_B(B)
        primal, norms = pb.primal(W, R, nuc)
        dual = pb.bound(theta, pb.V(theta), A, B)
        gap_now = max(primal - dual, 0.0)
        # The smoothed problem's gap at this iterate: remove what smoothing costs here.
        smoothed_gap = max(gap_now - smooth_terms, 0.0)
        out["smoothed_gap"] = smoothed_gap
        out["floor"] = gap_now - smoothed_gap
        if primal < self.primal:
            self.primal = primal
            out["W"], out["loss_norms"] = W, norms
        if dual > self.dual:
            self.dual = dual
            out["theta"], out["A"], out["B"] = pb.unpad(theta), A, B
        iterate = None
        if self.want_iterate:
            iterate = {"W": W.copy(), "theta": pb.unpad(theta), "A": A.copy(), "B": B.copy()}
        stop = self.mon.record(it, self.primal, self.dual, iterate=iterate,
                               primal_iterate=primal, dual_iterate=dual,
                               smoothed_gap=smoothed_gap, floor=out["floor"], **extras)
        scale = max(1.0, abs(self.primal))
        if (not stop and self.primal - self.dual > self.tol * scale
                and smoothed_gap <= max(_FLOOR_FRACTION * self.tol * scale,
                                        _FLOOR_STALL * out["floor"])):
            last = self.primal - self.dual
            self.mon.stop(
                "floor",
                f"the certified gap stalled at {last:.3e}: this is the smoothing floor of "
                f"mu={self.mu:g} (the smoothed problem is solved: its gap is below tol/10 or "
                "1% of the floor); decrease mu for a tighter certificate.",
            )
            stop = True
        return stop


# ---------------------------------------------------------------------------
# Public solver
# ---------------------------------------------------------------------------


def solve(
    Xs: Any,
    ys: Any,
    *,
    lam: float = PARAMS.default("lam"),
    gamma: float = PARAMS.default("gamma"),
    zeta: float = PARAMS.default("zeta"),
    rho: float = PARAMS.default("rho"),
    p: float = PARAMS.default("p"),
    mu: float = PARAMS.default("mu"),
    method: str = PARAMS.default("method"),
    tol: float = PARAMS.default("tol"),
    max_iter: int | None = PARAMS.default("max_iter"),
    max_svd: int = PARAMS.default("max_svd"),
    init: RobustMTLResult | None = None,
    callback=None,
    restart: bool = PARAMS.default("restart"),
    check_every: int = PARAMS.default("check_every"),
    max_inner: int = PARAMS.default("max_inner"),
    inner_rtol: float = PARAMS.default("inner_rtol"),
) -> RobustMTLResult:
    r"""Robust temporal multitask regression with a certified duality gap.

    Minimises ``J(W) = sum_i ||X_i w_i - y_i||_p + lam ||W||_{2,1} + gamma/2 ||W||_F^2
    + zeta/2 sum_i ||w_i - w_{i+1}||^2 + rho ||W||_*``.

    Parameters
    ----------
    Xs : sequence of array_like, each (n_i, d)
        Design matrices of the ``m`` tasks, in time order.
    ys : sequence of array_like, each (n_i,)
        Targets.
    lam, zeta, rho : float, >= 0
        Weights of the l2,1 norm, the temporal smoothness and the nuclear norm.
    gamma : float, > 0
        Ridge weight (strong convexity; the dual methods need it).
    p : {2, 1, inf}
        Loss norm (dual variables live in the unit ball of the dual norm).
    mu : float, > 0
        Smoothing parameter of ``"dual"`` (the l2,1 rows) and ``"smoothing"``
        (also the losses); ignored by ``"exact_dual"``. The certified gap of
        those two methods cannot go below a floor that shrinks with ``mu``;
        the run stops there (``stop_reason="floor"``).
    method : {"exact_dual", "dual", "smoothing"}
        ``"exact_dual"`` (default): accelerated projected gradient with
        adaptive restart on the exact, unsmoothed dual ``LB(theta, A, B)``, no
        floor. ``"dual"``: the paper's accelerated dual ascent with S-FISTA
        inside. ``"smoothing"``: the paper's pure-smoothing baseline.
    tol : float
        Stop when the certified ``gap / max(1, |primal|) <= tol``.
    max_iter : int, optional
        Outer iterations: blocks of FISTA steps between two certificates
        (``"exact_dual"``, default 10000; the first block is one step, then
        ``check_every`` steps), outer iterations (``"dual"``, default 2000) or
        FISTA steps (``"smoothing"``, default 100000). The callback is called
        once per outer iteration.
    max_svd : int, optional
        Total work budget of every method, in spectral decompositions of a
        ``d x m`` matrix (the dominant cost of all three: projections onto the
        spectral ball, singular value thresholdings, the certificate's nuclear
        norms). When it runs out the run stops with ``stop_reason="budget"``.
        Default: scaled to the problem size, ``2e9 / (d m min(d, m) + d sum_i
        n_i)`` clipped to [2000, 100000] (100000 at the page's default size).
    init : RobustMTLResult, optional
        Warm start from a previous result on the same data (any method):
        ``W``, ``theta``, ``A``, ``B``. Parameters may differ.
    callback : callable, optional
        ``callback(state)`` once per recorded iteration (``state.iterate`` has ``W``,
        ``theta`` and the certificate's ``A``, ``B``); return ``False`` to stop.
    restart : bool
        O'Donoghue--Candès adaptive momentum restart in every FISTA loop of
        ``"dual"`` and ``"smoothing"`` (not in the paper; default ``False``).
        ``"exact_dual"`` always restarts.
    check_every : int
        Evaluate the certificate (and call the callback) every ``check_every``
        FISTA steps (``"exact_dual"``: the length of an outer iteration;
        ``"smoothing"``); ``0`` (default) picks 1 for ``"dual"`` and
        ``"smoothing"``; ``"exact_dual"`` then adapts it (10 to 100 steps) so
        that the certificate costs about 20% of the run.
    max_inner : int
        Cap on the S-FISTA iterations of one inner solve (``"dual"``).
    inner_rtol : float
        ``"dual"``: each inner solve stops when its smoothed gap is below
        ``inner_rtol * min(smoothed gap, L/2 ||theta_k - nu_k||^2)`` of the
        previous outer step (the accuracy the outer line search needs).

    Returns
    -------
    RobustMTLResult
        ``W``, ``theta``, ``A``, ``B``, ``primal``, ``dual`` (a true lower
        bound), ``gap``, ``n_iter``, ``converged``, ``stop_reason``,
        ``floor_reached``, ``inner_iterations`` (spectral decompositions used),
        ``history`` (best-so-far ``primal``/``dual``) with extras
        ``inner_iters``, ``inner_total`` (cumulative spectral decompositions),
        ``inner_gap``, ``step``, ``L``, ``momentum``, ``n_backtracks``,
        ``primal_iterate``, ``dual_iterate``, ``smoothed_gap``, ``floor``
        (``"exact_dual"``: ``inner_iters`` = FISTA steps of the outer iteration,
        ``steps`` cumulative FISTA steps, ``restarts`` momentum restarts).

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import robust_mtl
    >>> rng = np.random.default_rng(0)
    >>> Xs = [rng.standard_normal((8, 4)) for _ in range(3)]
    >>> ys = [rng.standard_normal(8) for _ in range(3)]
    >>> res = robust_mtl.solve(Xs, ys, lam=0.3, rho=0.3, tol=1e-6)
    >>> res.stop_reason, res.W.shape
    ('converged', (4, 3))
    >>> bool(res.primal - res.dual <= 1e-6 * max(1.0, abs(res.primal)))
    True
    """
    Xs, ys = _check_data(Xs, ys)
    lam, gamma, zeta, rho, p = _check_params(lam, gamma, zeta, rho, p)
    v = PARAMS.validate(mu=mu, method=method, tol=tol, restart=restart,
                        check_every=check_every, max_inner=max_inner, inner_rtol=inner_rtol)
    method = v["method"]
    if max_iter is None:
        max_iter = MAX_ITER[method]
    max_iter = PARAMS["max_iter"].validate(max_iter)
    tol, mu = v["tol"], v["mu"]
    check_every = v["check_every"] or CHECK_EVERY[method]  # 0: exact_dual adapts it
    callback = check_callback(callback)
    with single_threaded_blas():  # the BLAS thread policy (solvers._blas)
        pb = _Problem(Xs, ys, lam, gamma, zeta, rho, p, mu)
        max_svd = (_default_svd_budget(pb) if max_svd is None
                   else PARAMS["max_svd"].validate(max_svd))
        init = check_init(init, RobustMTLResult, W=(pb.d, pb.m))
        if init is not None:
            lens = [len(t) for t in init.theta]
            if lens != [int(n) for n in pb.ns]:
                raise IncompatibleWarmStart(
                    f"init does not match this problem: init.theta has lengths {lens}, "
                    f"expected {[int(n) for n in pb.ns]}"
                )
        mon = Monitor(f"robust_mtl[{method}]", tol=tol, max_iter=max_iter, callback=callback,
                      budget=max_svd, budget_unit="SVDs (max_svd)")
        cert = _Certifier(pb, mon, tol, callback is not None)
        cert.mu = mu
        if method == "exact_dual":
            total = _solve_exact_dual(pb, cert, mon, init, max_iter, check_every)
        elif method == "dual":
            total = _solve_dual(pb, cert, mon, init, max_iter, v["restart"], v["max_inner"],
                                v["inner_rtol"])
        else:
            total = _solve_smoothing(pb, cert, mon, init, max_iter, v["restart"], check_every)
    fields = mon.result_fields()
    out = cert.out
    return RobustMTLResult(
        **fields,
        method=method,
        params=PARAMS.record(lam=lam, gamma=gamma, zeta=zeta, rho=rho,
                             p="inf" if p == math.inf else int(p), mu=mu, method=method,
                             tol=tol, max_iter=max_iter, max_svd=max_svd,
                             restart=v["restart"], check_every=check_every,
                             max_inner=v["max_inner"], inner_rtol=v["inner_rtol"]),
        W=out["W"], theta=out["theta"], A=out["A"], B=out["B"], loss_norms=out["loss_norms"],
        mu=mu, smoothed_gap=out["smoothed_gap"], floor=out["floor"],
        floor_reached=fields["stop_reason"] == "floor",
        inner_iterations=int(total),
    )


def _solve_dual(pb: _Problem, cert: _Certifier, mon: Monitor, init, max_iter: int,
                restart: bool, max_inner: int, inner_rtol: float) -> int:
    """Algorithm 1 (FISTA ascent on theta, backtracking) around Algorithm 2 (S-FISTA)."""
    inner = _Inner(pb, restart)
    if init is None:
        theta0 = np.zeros((pb.m, pb.nmax))
        W0 = np.zeros((pb.d, pb.m))
    else:
        theta0 = pb.project(pb.pad([np.asarray(t, dtype=float) for t in init.theta]))
        W0 = np.array(init.W, dtype=float)
    # The first inner solves only need a loose accuracy; later ones follow the outer progress.
    eps0 = 1e-2 * max(1.0, float(np.abs(pb.Y).sum()))
    total0 = 0
    if init is not None:
        # A warm start may sit near the optimum: the first outer steps are then small, and
        # inner solves as loose as a cold start's would fail the line search's test by their
        # own error alone (L would climb to L_D and stay there). Measure the smoothed gap at
        # the starting point once and ask the inner solves for a fraction of it, as the
        # outer loop does after every step.
        V0 = pb.V(theta0)
        W0, B0, nuc0, total0, _ = inner.solve(V0, W0, eps0, _left(mon, max_inner))
        mon.charge(total0)
        _, A0, rows0 = pb.huber_rows(W0)
        gap0 = (pb.primal(W0, pb.residuals(W0), nuc0)[0]
                - pb.bound(pb.feasible_theta(theta0), V0, pb.feasible_A(A0), pb.feasible_B(B0))
                - pb.l21_floor(rows0))
        eps0 = min(eps0, max(inner_rtol * gap0, 1e-14 * max(1.0, float(init.primal))))
    st: dict[str, Any] = {"W": W0, "eps": eps0, "iters": 0, "total": total0}
    L_D = pb.xnorm2 / pb.gamma

    def evaluate(theta):
        V = pb.V(theta)
        W, B, nuc, k, igap = inner.solve(V, st["W"], st["eps"], _left(mon, max_inner))
        mon.charge(k)
        st["W"] = W
        st["iters"] += k
        st["total"] += k
        R = pb.residuals(W)
        # J_mu(W; theta): D_mu(theta) up to the inner gap.
        val = (pb.huber_rows(W)[0] + pb.quad(W) + pb.rho * nuc + float(np.vdot(V, W))
               - float(np.vdot(theta, pb.Y)))
        st["last"] = (theta, W, B, nuc, R, igap)
        return val, R

    def value_and_grad(theta):  # of f = -D_mu
        val, R = evaluate(theta)
        st["S"], st["fS"], st["gS"], st["WS"] = theta, -val, -R, st["W"]
        return -val, -R

    def value(theta):
        fZ = -evaluate(theta)[0]
        if apg.L >= L_D:
            # Theorem 4: L_D is a Lipschitz constant of grad D, so with exact inner solves
            # the sufficient-decrease test passes here; a failure can only come from the
            # inexact inner solves. Accept the step rather than backtrack forever.
            D = theta - st["S"]
            fZ = min(fZ, st["fS"] + float(np.vdot(st["gS"], D)) + 0.5 * apg.L * float(
                np.vdot(D, D)))
        return fZ

    L0 = max(L_D * _L0_FRACTION, 1e-12)
    if init is not None and init.method == "dual" and len(init.history):
        # Start the line search where the previous run's ended (same data, nearby parameters).
        L0 = min(max(L0, float(init.history.L[-1])), max(L_D, L0))
    apg = APG(value_and_grad, lambda T, _step: pb.project(T), theta0, value=value,
              L0=L0, backtrack=_TAU, adaptive_restart=restart)
    for it in range(1, max_iter + 1):
        st["iters"] = 0
        apg.step()
        theta, W, B, nuc, R, igap = st["last"]
        # A second primal candidate: the running average of the inner solutions at the
        # search points with FISTA's weights 1/t_k (Tseng's primal averaging; it resets with
        # the momentum). J is exact at any W, so the certificate stays valid; for p = 1 and
        # inf, where W(theta_k) converges slowly, it often gives the better upper bound.
        g = 1.0 / apg.t_prev
        st["Wbar"] = st["WS"] if g >= 1.0 else (1.0 - g) * st["Wbar"] + g * st["WS"]
        cert.offer_primal(st["Wbar"])
        _, A, rows = pb.huber_rows(W)
        stop = cert.record(
            it, W, theta, R, A, B, nuc, pb.l21_floor(rows),
            inner_iters=st["iters"], inner_total=st["total"], inner_gap=igap,
            step=1.0 / apg.L, L=apg.L, momentum=apg.beta, n_backtracks=apg.n_backtracks,
        )
        if stop:
            break
        # Inexact oracle for the outer FISTA: the next inner solves must be accurate to a
        # fraction of the line-search test's quadratic term and of the smoothed gap.
        step_sq = float(np.vdot(apg.x - st["S"], apg.x - st["S"]))
        target = inner_rtol * min(cert.out["smoothed_gap"], 0.5 * apg.L * step_sq)
        st["eps"] = min(st["eps"], max(target, 1e-14 * max(1.0, abs(cert.primal))))
    return st["total"]


# ---------------------------------------------------------------------------
# The floor-free method: accelerated projected gradient on the exact dual
# ---------------------------------------------------------------------------


def _block_weights(pb: _Problem) -> np.ndarray:
    """Weights ``w_j`` of the blocks (theta, A, B) with ``sum_j 1 / w_j = 1`` (active blocks).

    For p = 2 the blocks share equally. For p = 1 and inf (box and l1-ball duals,
    where ``theta`` is the slow block) ``theta`` gets ``1/w = 2/3`` and the other
    active blocks share the rest: measured on the page's problems this saves
    20-35% of the iterations there and costs 5-25% for p = 2, hence per p.
    """
    active = np.array([True, pb.lam > 0.0, pb.rho > 0.0])
    others = int(active[1:].sum())
    if others == 0:
        return np.array([1.0, np.inf, np.inf])
    share_t = 1.0 / (1 + others) if pb.q == 2.0 else 2.0 / 3.0
    w = np.full(3, np.inf)
    w[0] = 1.0 / share_t
    w[1:][active[1:]] = others / (1.0 - share_t)
    return w


def _step_sizes(pb: _Problem, iters: int = 50) -> np.ndarray:
    """Block step sizes ``1 / (Lambda w_j)`` of the preconditioned FISTA on ``-LB``.

    With ``D = diag(w_j^{-1/2})`` (blockwise) and ``K (T, A, B) = V(T / s) + A +
    B``, the Hessian of ``-LB`` satisfies ``K^T M^{-1} K <= Lambda diag(w_j)`` for
    ``Lambda = ||D K^T M^{-1} K D||``; since every block of ``K`` has norm 1 and
    ``sum_j 1/w_j = 1``, ``Lambda <= 1 / gamma``. ``Lambda`` is estimated by power
    iteration (converging from below), enlarged by 5% and capped at ``1/gamma``:
    typically 15% longer steps than the bound gives. Inactive blocks get 0.
    """
    w = _block_weights(pb)
    bound = 1.0 / pb.gamma
    s = pb.snorm[:, None]
    dw = np.where(np.isfinite(w), 1.0 / np.sqrt(w), 0.0)
    rng = np.random.default_rng(0)
    T = rng.standard_normal((pb.m, pb.nmax)) * pb.mask
    A = rng.standard_normal((pb.d, pb.m)) * dw[1]
    B = rng.standard_normal((pb.d, pb.m)) * dw[2]
    est = prev = 0.0
    for _ in range(iters):
        nrm = math.sqrt(float(np.vdot(T, T) + np.vdot(A, A) + np.vdot(B, B)))
        if not nrm > 0.0:
            break
        T, A, B = T / nrm, A / nrm, B / nrm
        W = (pb.V(T * dw[0] / s) + A * dw[1] + B * dw[2]) @ pb.Minv
        T, A, B = (pb.residuals(W) + pb.Y) * dw[0] / s, W * dw[1], W * dw[2]
        est = float(np.vdot(T, T) + np.vdot(A, A) + np.vdot(B, B)) ** 0.5
        if abs(est - prev) <= 1e-4 * est:
            break
        prev = est
    lam_ = min(bound, 1.05 * est) if est > 0.0 else bound
    return np.where(np.isfinite(w), 1.0 / (lam_ * w), 0.0)


def _solve_exact_dual(pb: _Problem, cert: _Certifier, mon: Monitor, init, max_iter: int,
                      check_every: int) -> int:
    """FISTA with adaptive restart on the certificate's own concave dual ``LB(theta, A, B)``.

    Variables ``T_i = s_i theta_i`` (``s_i = ||X_i||_2``: every block of the
    linear map ``(T, A, B) -> V + A + B`` then has norm 1), ``A`` and ``B``; block
    steps from :func:`_step_sizes`. Returns the number of spectral decompositions
    used (one projection onto the spectral ball per iteration, two SVDs per
    certificate; none when ``rho = 0``).
    """
    s = pb.snorm
    steps = _step_sizes(pb)
    # inactive blocks (lam = 0 or rho = 0) stay 0; their step only enters the restart test
    steps = np.where(steps > 0.0, steps, 1.0)
    step = float(steps[0])
    q = pb.q

    def project_T(T: np.ndarray) -> np.ndarray:
        if q == 2.0:
            nrm = np.sqrt(np.einsum("ij,ij->i", T, T))
            return T * (s / np.maximum(nrm, s))[:, None]
        if q == math.inf:
            return np.clip(T, -s[:, None], s[:, None])
        out = np.empty_like(T)
        for i in range(pb.m):
            out[i] = project_lq_ball(T[i], 1.0, float(s[i]))
        return out

    if init is None:
        T = np.zeros((pb.m, pb.nmax))
        A = np.zeros((pb.d, pb.m))
        B = np.zeros((pb.d, pb.m))
    else:
        T = project_T(pb.pad([np.asarray(t, dtype=float) for t in init.theta]) * s[:, None])
        A = pb.feasible_A(np.array(init.A, dtype=float))
        B = project_spectral_ball(np.array(init.B, dtype=float), pb.rho)
    C = pb.V(T / s[:, None]) + A + B
    Tp, Ap, Bp, Cp = T.copy(), A.copy(), B.copy(), C.copy()
    X3 = pb.X3 if pb.X3 is not None else pb.padded_X()
    Y = np.ascontiguousarray(pb.Y)
    q_code = {2.0: 2, math.inf: 0, 1.0: 1}[q]
    t_k = 1.0
    n_svd = 0
    n_restarts = 0
    it = 0
    per_step = 1 if pb.rho > 0.0 else 0
    auto = check_every == 0
    period = _certification_period(pb) if auto else check_every
    for block in range(1, max_iter + 1):
        # One outer iteration: a block of FISTA steps between two certificates (the
        # first block is one step, so that a warm start at the optimum stops at once).
        n = period if it > 0 else 1
        if mon.budget is not None and per_step:
            n = max(1, min(n, int(mon.budget - mon.work)))
        t_k, restarts, rows_free, Bpre, sv, Q = exact_dual_steps(
            X3, Y, s, pb.Minv, pb.lam, pb.rho, q_code, steps, n, T, A, B, C, Tp, Ap, Bp, Cp, t_k)
        it += n
        n_restarts += int(restarts)
        n_svd += n * per_step
        mon.charge(n * per_step)
        W = -(C @ pb.Minv)
        # Second primal candidate: W with the structure the dual multipliers identify
        # (rows whose A_r is strictly inside the lam-ball are zero at the optimum, and W
        # lives in the singular subspaces where B is saturated at rho). J is exact at any W.
        cand = W
        if pb.rho > 0.0:
            sat = sv >= pb.rho
            Q1 = Q[:, sat]
            if pb.d >= pb.m:  # Q holds right singular vectors of Bpre
                U1 = (Bpre @ Q1) / sv[sat]
                cand = U1 @ (U1.T @ cand @ Q1) @ Q1.T
            else:
                V1 = (Bpre.T @ Q1) / sv[sat]
                cand = Q1 @ (Q1.T @ cand @ V1) @ V1.T
        if pb.lam > 0.0:
            cand = cand * (~rows_free)[:, None]
        cert.offer_primal(cand)
        extra = 2 if pb.rho > 0.0 else 0
        n_svd += extra
        mon.charge(extra)
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t_k * t_k))
        stop = cert.record(block, W, T / s[:, None], pb.residuals(W), A, B, None, 0.0,
                           inner_iters=n, steps=it, inner_total=n_svd, inner_gap=0.0, step=step,
                           L=1.0 / step, momentum=(t_k - 1.0) / t_next, n_backtracks=0,
                           restarts=n_restarts)
        if stop:
            break
    return n_svd


def _certification_period(pb: _Problem) -> int:
    """FISTA steps between two certificates of ``exact_dual`` (``check_every=0``).

    Certify about every ``4 c_cert / c_step`` steps, so that certificates (two SVDs,
    products with X and a fixed Python overhead) cost about 20% of the run. The costs
    come from a flop model of the problem's sizes, not from clocks: the iterates, and
    so the result, are the same on every run and every machine.
    """
    d, m = pb.d, pb.m
    data = 4.0 * float(np.sum(pb.ns)) * d
    svd = 8.0 * d * m * min(d, m)
    step = data + (svd if pb.rho > 0.0 else 0.0) + 20.0 * d * m
    cert = data + 3.0 * svd + 2.0e5
    return int(min(_PERIOD_MAX, max(_PERIOD_MIN, 4.0 * cert / step)))


def _solve_smoothing(pb: _Problem, cert: _Certifier, mon: Monitor, init, max_iter: int,
                     restart: bool, check_every: int) -> int:
    """The baseline: FISTA with SVT on the fully smoothed objective J_mu (constant step)."""
    W0 = np.zeros((pb.d, pb.m)) if init is None else np.array(init.W, dtype=float)

    def vg(W):
        R = pb.residuals(W)
        lval, theta = pb.smooth_loss(R)
        hval, A, _ = pb.huber_rows(W)
        WM = pb.mul_M(W)
        return lval + hval + 0.5 * float(np.vdot(W, WM)), pb.V(theta) + A + WM

    prox = _SVTProx(pb.rho)
    # Theorem 3: the smoothed losses are (max_i ||X_i||^2 / mu)-smooth, the rows lam/mu.
    L = (pb.xnorm2 + pb.lam) / pb.mu + pb.gamma + 4.0 * pb.zeta
    apg = APG(vg, prox, W0, L0=L, fixed_step=True, adaptive_restart=restart)
    it = 0
    for it in range(1, max_iter + 1):
        W = apg.step()
        budget_out = mon.charge(1)
        if not (it == 1 or it % check_every == 0 or it == max_iter or budget_out):
            continue
        R = pb.residuals(W)
        _, theta = pb.smooth_loss(R)
        _, A, rows = pb.huber_rows(W)
        # What smoothing costs at this point: sum_i (||r_i||_p - <theta_i, r_i>) for the
        # losses (Moreau envelope) plus the l2,1 rows' floor.
        loss_floor = float(pb.loss_norms(R).sum() - np.vdot(theta, R))
        if cert.record(
            it, W, theta, R, A, prox.B, prox.nuc, loss_floor + pb.l21_floor(rows),
            inner_iters=1, inner_total=it, inner_gap=0.0, step=1.0 / L, L=L,
            momentum=apg.beta, n_backtracks=0,
        ):
            break
    return it


# ------------------------------------------------------------------ the saved model


def _saved_scores(sm: Any, X: np.ndarray, tasks: np.ndarray) -> np.ndarray:
    """``x^T w_task`` for each row (regression: the prediction)."""
    return scores_per_task(X, sm.arrays["W"].T, tasks)


#: How a fitted robust MTL model is saved and predicts (:class:`solvers.saved.SavedForm`).
SAVED_FORM = SavedForm(
    arrays=array_specs(("W", "d m", True)),
    names={"feature_names": "d", "class_names": None, "task_names": "m"},
    features=("W", 0), decide=_saved_scores, per_task=True, kind="regression")
