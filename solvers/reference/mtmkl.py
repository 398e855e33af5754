r"""cvxpy reference for MT-MKL (same objective as :mod:`solvers.mtmkl`).

Factor every task similarity ``G_m = R_m R_m^T`` with ``R_m`` (T x r_m) of full
column rank (eigenvectors of the positive eigenvalues times their square
roots; for similarities given in factor form, their factors ``U_m``: any ``R``
with ``R R^T = G_m`` gives the same minimum of ``||A_m||_F^2`` over
``A_m R_m^T = W_m``) and parametrise ``W_m = A_m R_m^T`` (the range of ``G_m`` along the
task axis, where ``Q_m = G_m^+``). Then ``||W_m||^2_{Q_m} = ||A_m||_F^2`` and
Problem 1 reads, jointly convex in ``(A, theta, xi)``::

    min  1/2 sum_m quad_over_lin(A_m, theta_m) + C sum_i xi_i
    s.t. xi_i >= 1 - y_i sum_m <w_{m tau(i)}, phi_m(x_i)>,  xi >= 0,
         theta >= 0,  ||theta||_p <= 1.

Precomputed kernels are factored too: ``K_m = L_m L_m^T`` (the empirical
kernel map, Remark E.3), so ``phi_m(x_i) = L_m[i]`` and the same program
applies. With ``fix_theta`` the weights are constants (``A_m = 0`` where
``theta_m = 0``). The multipliers of the margin constraints are ``alpha``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..mtmkl import PARAMS, FactoredSimilarities, _check_p, _pnorm, _prepare, uniform_theta
from ..validation import check_bool, check_scalar, check_vector
from ._common import ReferenceResult, as_array, solve_problem

__all__ = ["factor_psd", "solve"]


def factor_psd(A: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """``R`` with ``R R^T = A`` and full column rank (eigenvalues > rtol * max kept)."""
    lam, U = np.linalg.eigh((A + A.T) / 2)
    keep = lam > rtol * max(float(lam.max()), 0.0)
    if not np.any(keep):
        return np.zeros((A.shape[0], 0))
    return U[:, keep] * np.sqrt(lam[keep])


def solve(
    X: Any,
    y: Any,
    tasks: Any,
    G: Any,
    *,
    C: float = PARAMS.default("C"),
    p: float = PARAMS.default("p"),
    kernel: Any = PARAMS.default("kernel"),  # noqa: B008 (a str)
    fix_theta: bool = PARAMS.default("fix_theta"),
    theta0: Any = PARAMS.default("theta0"),  # noqa: B008 (None)
    solver: str = "CLARABEL",
) -> ReferenceResult:
    """Solve Problem 1 with cvxpy; returns ``value``, ``theta`` (M), ``alpha`` (n), ``W`` (M, T, d).

    ``W`` is ``None`` for precomputed kernels. Parameters as in
    :func:`solvers.mtmkl.solve`.
    """
    import cvxpy as cp

    data = _prepare(X, y, tasks, G, kernel, "auto")
    C = check_scalar(C, "C", low=0.0)
    p = _check_p(p)
    fix_theta = check_bool(fix_theta, "fix_theta")
    n, T, M = data.n, data.T, data.M
    if theta0 is not None:
        theta0 = check_vector(theta0, "theta0", size=M)
        if np.any(theta0 < 0) or not np.any(theta0 > 0):
            raise ValueError("theta0 must be >= 0 with at least one positive entry")
    if data.Ks is None:
        assert data.X is not None  # linear kernel: the features are given
        feats = [data.X]
    else:
        feats = [factor_psd(K) for K in data.Ks]
    G = data.G
    if isinstance(G, FactoredSimilarities):
        Rs = [G.factor(m) for m in range(M)]
    else:
        Rs = [factor_psd(Gm) for Gm in G]

    fixed = None
    if fix_theta:
        fixed = theta0 if theta0 is not None else uniform_theta(M, p)
        theta = None
    else:
        theta = cp.Variable(M, nonneg=True)
    shared = len(feats) == 1
    reg = 0
    A_vars: list[Any] = []
    V_terms: list[Any] = []
    for m in range(M):
        F = feats[0] if shared else feats[m]
        R = Rs[m]
        if R.shape[1] == 0 or F.shape[1] == 0 or (fixed is not None and fixed[m] == 0.0):
            A_vars.append(None)
            continue
        A = cp.Variable((F.shape[1], R.shape[1]))
        A_vars.append(A)
        V_terms.append((m, A @ R.T))  # task-side weights V_m = A_m R_m^T (e x T)
        if fixed is not None:
            reg = reg + cp.sum_squares(A) / fixed[m]
        else:
            assert theta is not None
            reg = reg + cp.quad_over_lin(A, theta[m])
    cons = []
    f = 0
    if shared and V_terms:
        # one auxiliary V = sum_m V_m keeps the margin rows short: f_i = <V[:, tau_i], x_i>
        V = cp.Variable(V_terms[0][1].shape)
        cons.append(V == sum(term for _, term in V_terms))
        f = cp.sum(cp.multiply(feats[0], V.T[data.tau, :]), axis=1)
    else:
        for m, term in V_terms:
            V = cp.Variable(term.shape)
            cons.append(V == term)
            f = f + cp.sum(cp.multiply(feats[m], V.T[data.tau, :]), axis=1)
    xi = cp.Variable(n, nonneg=True)
    margin = xi >= 1 - cp.multiply(data.y, f)
    cons.append(margin)
    if theta is not None:
        # cvxpy takes any p >= 1 here; its annotation says int
        cons.append(cp.norm(theta, "inf" if np.isinf(p) else p) <= 1)  # type: ignore[arg-type]
    problem = cp.Problem(cp.Minimize(0.5 * reg + C * cp.sum(xi)), cons)
    value, elapsed = solve_problem(problem, solver=solver)
    if fixed is not None:
        th = fixed.copy()
    else:
        assert theta is not None
        th = np.maximum(as_array(theta.value), 0.0)
    if theta is not None and _pnorm(th, p) > 1.0:
        th = th / _pnorm(th, p)
    alpha = np.clip(as_array(margin.dual_value), 0.0, C)
    W = None
    if data.Ks is None:
        d = feats[0].shape[1]
        W = np.zeros((M, T, d))
        for m, A in enumerate(A_vars):
            if A is not None:
                W[m] = Rs[m] @ as_array(A.value).T
    return ReferenceResult(
        value=value,
        arrays={"theta": th, "alpha": alpha, "W": W},
        time=elapsed,
        solver=solver,
        status=problem.status,
    )
