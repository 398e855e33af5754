"""cvxpy reference for convex relaxed ASO (same objective as :mod:`solvers.caso`).

    min_{U, M}  sum_l (1/n_l) sum_i L(u_l^T x_i^l, y_i^l) + c matrix_frac(U, eta I + M)
    s.t.        M >= 0,  I - M >= 0,  tr(M) = h          (Loewner order)

with ``c = alpha * eta * (1 + eta)`` and ``matrix_frac(U, P) = tr(U^T P^{-1} U)``
(cvxpy represents it by one Schur-complement PSD cone of size d + m).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..caso import PARAMS, _check_problem, subspace_dim
from ._common import ReferenceResult, as_array, solve_problem

__all__ = ["solve"]


def solve(Xs: Any, ys: Any, *, alpha: float = PARAMS.default("alpha"),
          eta: float = PARAMS.default("eta"), h: float = PARAMS.default("h"),
          loss: str = PARAMS.default("loss"), solver: str = "CLARABEL", **solver_opts: Any
          ) -> ReferenceResult:
    """Solve cASO with cvxpy; returns ``value`` and ``U``, ``M``, ``Theta``, ``V``."""
    import cvxpy as cp

    data, alpha, eta, h, loss = _check_problem(Xs, ys, alpha, eta, h, loss)
    d, m = data.d, data.m
    c = alpha * eta * (1.0 + eta)
    U = cp.Variable((d, m))
    M = cp.Variable((d, d), symmetric=True)
    terms = []
    for t, Xl in enumerate(data.Xs):
        yl = data.y[data.offs[t]:data.offs[t + 1]]
        z = Xl @ U[:, t]
        if loss == "squared":
            terms.append(cp.sum_squares(z - yl) / Xl.shape[0])
        elif loss == "hinge":
            terms.append(cp.sum(cp.pos(1 - cp.multiply(yl, z))) / Xl.shape[0])
        else:
            terms.append(cp.sum(cp.logistic(-cp.multiply(yl, z))) / Xl.shape[0])
    objective = cp.sum(cp.hstack(terms)) + c * cp.matrix_frac(U, eta * np.eye(d) + M)
    constraints = [M >> 0, np.eye(d) - M >> 0, cp.trace(M) == h]
    problem = cp.Problem(cp.Minimize(objective), constraints)
    value, elapsed = solve_problem(problem, solver=solver, **solver_opts)
    Uv = as_array(U.value)
    Mv = as_array(M.value)
    Mv = 0.5 * (Mv + Mv.T)
    w, P = np.linalg.eigh(Mv)
    Theta = P[:, ::-1][:, :subspace_dim(h)].T.copy()
    return ReferenceResult(
        value=value,
        arrays={"U": Uv, "M": Mv, "Theta": Theta, "V": Theta @ Uv, "gamma": w[::-1].copy()},
        time=elapsed,
        solver=solver,
        status=problem.status,
    )
