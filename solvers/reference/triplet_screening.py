"""cvxpy reference for RTLM (same objective as :mod:`solvers.triplet_screening`).

    min_{M PSD}  sum_t loss(<M, H_t>) + lam/2 ||M||_F^2,
    <M, H_t> = a_t^T M a_t - b_t^T M b_t,

with the hinge ``pos(1 - x)`` or the smoothed hinge written as
``huber(pos(1 - x), gamma) / (2 gamma)`` (0 above 1, quadratic on
``[1 - gamma, 1]``, ``1 - x - gamma/2`` below). ``diagonal=True`` uses a
nonnegative diagonal ``M``. The margins are affine in ``M`` through the
per-pair quadratic forms and a sparse (+1, -1) triplet-pair incidence matrix.
``alpha`` is the KKT map ``-loss'(<M, H_t>)`` at the returned ``M``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..triplet_screening import TripletProblem
from ..validation import check_scalar
from ._common import ReferenceResult, as_array, solve_problem

__all__ = ["solve"]


def solve(X: Any, y: Any, lam: float, *, triplets: Any = None, k: float = 10,
          loss: str = "smoothed_hinge", gamma: float = 0.05, diagonal: bool = False,
          solver: str = "CLARABEL") -> ReferenceResult:
    """Solve the RTLM primal with cvxpy; returns ``value``, ``M``, ``alpha``."""
    import cvxpy as cp
    import scipy.sparse as sp

    lam = check_scalar(lam, "lam", low=0.0)
    prob = triplets if isinstance(triplets, TripletProblem) else TripletProblem(
        X, y, triplets=triplets, k=k, loss=loss, gamma=gamma, diagonal=diagonal)
    data = prob.data
    d = data.d
    n_t = data.n_t
    rows = np.concatenate([np.arange(n_t), np.arange(n_t)])
    cols = np.concatenate([data.pa, data.pb])
    vals = np.concatenate([np.ones(n_t), -np.ones(n_t)])
    E = sp.csr_matrix((vals, (rows, cols)), shape=(n_t, data.n_pairs))
    F = data.F
    if prob.diagonal:
        M = cp.Variable(d, nonneg=True)
        q = F @ M
    else:
        M = cp.Variable((d, d), PSD=True)
        q = cp.sum(cp.multiply(F @ M, F), axis=1)
    margins = E @ q
    u = 1.0 - margins
    if prob.hinge:
        data_term = cp.sum(cp.pos(u))
    else:
        # cvxpy takes a float threshold; its annotation says int
        data_term = cp.sum(cp.huber(cp.pos(u), prob.gamma)) / (2.0 * prob.gamma)  # type: ignore[arg-type]
    objective = data_term + 0.5 * lam * cp.sum_squares(M)
    problem = cp.Problem(cp.Minimize(objective))
    value, elapsed = solve_problem(problem, solver=solver)
    Mv = as_array(M.value)
    if not prob.diagonal:
        Mv = 0.5 * (Mv + Mv.T)
    else:
        Mv = np.maximum(Mv, 0.0)
    return ReferenceResult(
        value=value,
        arrays={"M": Mv, "alpha": prob.kkt_alpha(Mv)},
        time=elapsed,
        solver=solver,
        status=problem.status,
    )
