r"""Robust temporal multitask regression: accelerated dual ascent (Kang & Liu) vs pure smoothing.

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

**The mu floor.** Both methods solve a problem smoothed with parameter ``mu``,
so their certified gap cannot go below a floor that shrinks with ``mu``. Each
run also certifies the *smoothed* problem (its gap, ``smoothed_gap``, goes to
zero); the difference ``floor = gap - smoothed_gap`` is the price of
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
from .apg import APG
from .base import IncompatibleWarmStart, Monitor, Result
from .prox import project_l2_ball, project_lq_ball, svt
from .validation import (
    check_bool,
    check_callback,
    check_choice,
    check_init,
    check_int,
    check_matrix,
    check_scalar,
    check_task_lists,
    check_tol_max_iter,
    check_vector,
)

__all__ = [
    "METHODS",
    "P_VALUES",
    "RobustMTLResult",
    "certificate",
    "dual_function",
    "dual_objective",
    "primal_objective",
    "project_dual",
    "solve",
]

METHODS = ("dual", "smoothing")
P_VALUES = (1, 2, math.inf)

#: Default iteration budgets (outer iterations for "dual", FISTA steps for "smoothing").
MAX_ITER = {"dual": 2000, "smoothing": 100_000}
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
        Smoothing parameter of the run.
    smoothed_gap : float
        Certified gap of the mu-smoothed problem at the returned point.
    floor : float
        ``gap - smoothed_gap``: the part of the certified gap caused by the
        smoothing (it does not shrink with more iterations, only with ``mu``).
    floor_reached : bool
        The run stopped because the smoothed problem was solved while the
        certified gap stayed above ``tol`` (decrease ``mu``).
    inner_iterations : int
        Total inner S-FISTA iterations (``"dual"``; equals ``n_iter`` for
        ``"smoothing"``): the number of singular value thresholdings.
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
        Xs = list(Xs)
        if len(Xs) != self.W.shape[1]:
            raise ValueError(f"Xs must have {self.W.shape[1]} tasks, got {len(Xs)}")
        return [np.asarray(X, dtype=float) @ self.W[:, i] for i, X in enumerate(Xs)]


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
    lam = check_scalar(lam, "lam", low=0.0, low_inclusive=True)
    zeta = check_scalar(zeta, "zeta", low=0.0, low_inclusive=True)
    rho = check_scalar(rho, "rho", low=0.0, low_inclusive=True)
    g = check_scalar(gamma, "gamma")
    if g <= 0.0:
        raise ValueError(
            f"gamma must be > 0, got {g:g}: the dual method needs the strong convexity "
            "gamma/2 ||W||_F^2, and the certificate needs gamma I + zeta L invertible"
        )
    return lam, g, zeta, rho, _check_p(p)


# ---------------------------------------------------------------------------
# The problem: data, quadratic form, norms
# ---------------------------------------------------------------------------


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
        self.xnorm2 = max(float(np.linalg.norm(X, 2)) ** 2 for X in Xs)

    # ---- per-task products
    def residuals(self, W: np.ndarray) -> np.ndarray:
        R = np.zeros((self.m, self.nmax))
        for i, X in enumerate(self.Xs):
            R[i, :X.shape[0]] = X @ W[:, i]
        R -= self.Y
        return R

    def V(self, theta: np.ndarray) -> np.ndarray:
        """``[X_1^T theta_1 ... X_m^T theta_m]`` (d x m)."""
        out = np.empty((self.d, self.m))
        for i, X in enumerate(self.Xs):
            out[:, i] = X.T @ theta[i, :X.shape[0]]
        return out

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
        if self.lam == 0.0:
            return np.zeros_like(A)
        norms = np.sqrt(np.einsum("ij,ij->i", A, A))
        return A * np.minimum(1.0, self.lam / np.maximum(norms, np.finfo(float).tiny))[:, None]

    def feasible_B(self, B: np.ndarray) -> np.ndarray:
        if self.rho == 0.0:
            return np.zeros_like(B)
        G = B.T @ B if self.m <= self.d else B @ B.T
        s = math.sqrt(max(float(np.linalg.eigvalsh(G)[-1]), 0.0))
        return B * (self.rho / s) if s > self.rho else B

    def project_spectral(self, B: np.ndarray) -> np.ndarray:
        """Projection onto ``{||B||_2 <= rho}`` (clip the singular values at ``rho``)."""
        if self.rho == 0.0:
            return np.zeros_like(B)
        U, s, Vt = np.linalg.svd(B, full_matrices=False)
        return self.feasible_B((U * np.minimum(s, self.rho)) @ Vt)

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
    Xs, ys = check_task_lists(Xs, ys)
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
    + zeta/2 sum_i ||w_i - w_{i+1}||^2 + rho ||W||_*`` (exact, no smoothing)."""
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
    """Project each ``theta_i`` onto the unit ball of the dual norm ``q`` (``1/p + 1/q = 1``)."""
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
        self.B: np.ndarray | None = None
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
            iterate = {"W": W.copy(), "theta": pb.unpad(theta)}
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
    lam: float = 3.0,
    gamma: float = 1.0,
    zeta: float = 1.0,
    rho: float = 3.0,
    p: float = 2,
    mu: float = 1e-3,
    method: str = "dual",
    tol: float = 1e-6,
    max_iter: int | None = None,
    init: RobustMTLResult | None = None,
    callback=None,
    restart: bool = False,
    check_every: int = 1,
    max_inner: int = 20_000,
    inner_rtol: float = 0.1,
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
        Ridge weight (strong convexity; the dual method needs it).
    p : {1, 2, inf}
        Loss norm (dual variables live in the unit ball of the dual norm).
    mu : float, > 0
        Smoothing parameter (of the l2,1 rows; for ``"smoothing"`` also of the
        losses). The certified gap cannot go below a floor that shrinks with
        ``mu``; the run stops there with ``floor_reached=True``.
    method : {"dual", "smoothing"}
        Accelerated dual ascent with S-FISTA inside (the paper's method) or
        pure smoothing with FISTA (the paper's baseline).
    tol : float
        Stop when the certified ``gap / max(1, |primal|) <= tol``.
    max_iter : int, optional
        Outer iterations (``"dual"``, default 2000) or FISTA steps
        (``"smoothing"``, default 100000).
    init : RobustMTLResult, optional
        Warm start from a previous result on the same data: ``W`` (and, for
        ``"dual"``, ``theta``). Parameters may differ.
    callback : callable, optional
        ``callback(state)`` once per recorded iteration (``state.iterate`` has
        ``W`` and ``theta``); return ``False`` to stop.
    restart : bool
        O'Donoghue--Candès adaptive momentum restart in every FISTA loop (outer,
        inner and the baseline's). Not in the paper (default ``False``); it
        speeds up both methods a lot.
    check_every : int
        ``"smoothing"`` only: evaluate the certificate (and call the callback)
        every ``check_every`` FISTA steps; it costs about one extra gradient.
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
        bound), ``gap``, ``n_iter``, ``converged``, ``floor_reached``,
        ``history`` (best-so-far ``primal``/``dual``) with extras
        ``inner_iters`` (S-FISTA iterations in the outer step), ``inner_total``,
        ``inner_gap``, ``step`` (``1/L`` of the outer step), ``L``,
        ``momentum`` (FISTA coefficient ``beta`` of the step), ``n_backtracks``,
        ``primal_iterate``, ``dual_iterate``, ``smoothed_gap``, ``floor``.
    """
    Xs, ys = check_task_lists(Xs, ys)
    lam, gamma, zeta, rho, p = _check_params(lam, gamma, zeta, rho, p)
    mu = check_scalar(mu, "mu", low=0.0)
    method = check_choice(method, "method", METHODS)
    if max_iter is None:
        max_iter = MAX_ITER[method]
    tol, max_iter = check_tol_max_iter(tol, max_iter)
    restart = check_bool(restart, "restart")
    check_every = check_int(check_every, "check_every", low=1)
    max_inner = check_int(max_inner, "max_inner", low=1)
    inner_rtol = check_scalar(inner_rtol, "inner_rtol", low=0.0, high=1.0)
    callback = check_callback(callback)
    pb = _Problem(Xs, ys, lam, gamma, zeta, rho, p, mu)
    init = check_init(init, RobustMTLResult, W=(pb.d, pb.m))
    if init is not None:
        lens = [len(t) for t in init.theta]
        if lens != [int(n) for n in pb.ns]:
            raise IncompatibleWarmStart(
                f"init does not match this problem: init.theta has lengths {lens}, "
                f"expected {[int(n) for n in pb.ns]}"
            )
    mon = Monitor(f"robust_mtl[{method}]", tol=tol, max_iter=max_iter, callback=callback)
    cert = _Certifier(pb, mon, tol, callback is not None)
    cert.mu = mu
    # The d x m SVDs are small: one BLAS thread (far faster on a shared machine).
    with single_threaded_blas(min(pb.d, pb.m)):
        if method == "dual":
            total = _solve_dual(pb, cert, init, max_iter, restart, max_inner, inner_rtol)
        else:
            total = _solve_smoothing(pb, cert, init, max_iter, restart, check_every)
    fields = mon.result_fields()
    out = cert.out
    return RobustMTLResult(
        **fields,
        method=method,
        params={"lam": lam, "gamma": gamma, "zeta": zeta, "rho": rho,
                "p": "inf" if p == math.inf else int(p), "mu": mu, "tol": tol,
                "max_iter": max_iter, "restart": restart},
        W=out["W"], theta=out["theta"], A=out["A"], B=out["B"], loss_norms=out["loss_norms"],
        mu=mu, smoothed_gap=out["smoothed_gap"], floor=out["floor"],
        floor_reached=fields["stop_reason"] == "floor",
        inner_iterations=int(total),
    )


def _solve_dual(pb: _Problem, cert: _Certifier, init, max_iter: int, restart: bool,
                max_inner: int, inner_rtol: float) -> int:
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
        W0, B0, nuc0, total0, _ = inner.solve(V0, W0, eps0, max_inner)
        _, A0, rows0 = pb.huber_rows(W0)
        gap0 = (pb.primal(W0, pb.residuals(W0), nuc0)[0]
                - pb.bound(pb.feasible_theta(theta0), V0, pb.feasible_A(A0), pb.feasible_B(B0))
                - pb.l21_floor(rows0))
        eps0 = min(eps0, max(inner_rtol * gap0, 1e-14 * max(1.0, float(init.primal))))
    st: dict[str, Any] = {"W": W0, "eps": eps0, "iters": 0, "total": total0}
    L_D = pb.xnorm2 / pb.gamma

    def evaluate(theta):
        V = pb.V(theta)
        W, B, nuc, k, igap = inner.solve(V, st["W"], st["eps"], max_inner)
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


def _solve_smoothing(pb: _Problem, cert: _Certifier, init, max_iter: int, restart: bool,
                     check_every: int) -> int:
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
        if not (it == 1 or it % check_every == 0 or it == max_iter):
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
    return cert.mon.n_iter


# --- BEGIN temporary PARAMS (issue-9) ---
# Minimal declaration of solve's parameters for solvers.estimators and the contract
# suite; the module's owner replaces it with the real one (same names as solve's).
from .params import MAX_ITER as _MAX_ITER_SPEC  # noqa: E402
from .params import TOL as _TOL_SPEC  # noqa: E402
from .params import ParamSpec as _PS  # noqa: E402
from .params import ParamSpecs as _PSs  # noqa: E402

PARAMS = _PSs(
    _PS("lam", 3.0, "l2,1 weight (row sparsity)", low=0.0, low_inclusive=True),
    _PS("gamma", 1.0, "ridge weight (strong convexity, > 0)", low=0.0),
    _PS("zeta", 1.0, "temporal smoothness weight", low=0.0, low_inclusive=True),
    _PS("rho", 3.0, "nuclear-norm weight (low rank)", low=0.0, low_inclusive=True),
    _PS("p", 2, "loss norm", choices=P_VALUES),
    _PS("mu", 1e-3, "smoothing parameter (the certified gap's floor shrinks with it)",
        low=0.0),
    _PS("method", "dual", "accelerated dual ascent (paper) or pure smoothing (baseline)",
        choices=METHODS),
    _TOL_SPEC,
    _PS("max_iter", None, "outer iterations (default: 2000 dual, 100000 smoothing)",
        kind="int", low=_MAX_ITER_SPEC.low, low_inclusive=True),
    _PS("restart", False, "adaptive momentum restart (not in the paper)"),
    _PS("check_every", 1, "smoothing: certify every this many FISTA steps", low=1,
        low_inclusive=True),
    _PS("max_inner", 20_000, "cap on the S-FISTA iterations of one inner solve", low=1,
        low_inclusive=True),
    _PS("inner_rtol", 0.1, "relative accuracy of each inner solve", low=0.0, high=1.0),
)
# --- END temporary PARAMS (issue-9) ---
