"""cvxpy reference for robust temporal multitask regression (same objective as
:mod:`solvers.robust_mtl`)::

    min_W  sum_i ||X_i w_i - y_i||_p + lam ||W||_{2,1} + gamma/2 ||W||_F^2
           + zeta/2 sum_{i=1}^{m-1} ||w_i - w_{i+1}||^2 + rho ||W||_*

written verbatim (``norm``, mixed norm, ``normNuc``). The residuals are
introduced as variables ``z_i = X_i w_i - y_i``; the multipliers of these
equalities are the dual variables ``theta_i`` (in the unit q-ball).
"""

from __future__ import annotations

import math
from typing import Any

from ..robust_mtl import _problem_from, project_dual
from ._common import ReferenceResult, as_array, solve_problem

__all__ = ["solve"]


def solve(Xs: Any, ys: Any, *, lam: float = 1.0, gamma: float = 0.1, zeta: float = 1.0,
          rho: float = 1.0, p: float = 2, solver: str = "CLARABEL") -> ReferenceResult:
    """Solve the robust temporal MTL primal with cvxpy.

    Returns ``value``, ``W`` (d x m) and ``theta`` (list of n_i vectors, the
    multipliers of ``z_i = X_i w_i - y_i``, projected onto the unit q-ball).
    """
    import cvxpy as cp

    pb = _problem_from(Xs, ys, lam, gamma, zeta, rho, p)
    d, m = pb.d, pb.m
    W = cp.Variable((d, m))
    zs = [cp.Variable(int(n)) for n in pb.ns]
    cons = [zs[i] == pb.Xs[i] @ W[:, i] - pb.Y[i, :n] for i, n in enumerate(pb.ns)]
    pnorm = "inf" if pb.p == math.inf else int(pb.p)
    obj = sum(cp.norm(z, pnorm) for z in zs)
    if pb.lam > 0:
        obj = obj + pb.lam * cp.sum(cp.norm(W, 2, axis=1))
    obj = obj + 0.5 * pb.gamma * cp.sum_squares(W)
    if pb.zeta > 0 and m > 1:
        obj = obj + 0.5 * pb.zeta * cp.sum_squares(W[:, 1:] - W[:, :-1])
    if pb.rho > 0:
        obj = obj + pb.rho * cp.normNuc(W)
    problem = cp.Problem(cp.Minimize(obj), cons)
    value, elapsed = solve_problem(problem, solver=solver)
    # cvxpy's Lagrangian is f + nu^T (lhs - rhs) with lhs - rhs = z - r, so theta = -nu.
    theta = [-as_array(c.dual_value).reshape(-1) for c in cons]
    theta = project_dual(theta, pb.p)
    return ReferenceResult(
        value=value,
        arrays={"W": as_array(W.value), "theta": theta},
        time=elapsed,
        solver=solver,
        status=problem.status,
    )
