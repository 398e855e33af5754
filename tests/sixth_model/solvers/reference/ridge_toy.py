"""cvxpy reference of :mod:`solvers.ridge_toy`: the same objective, solved by Clarabel."""

from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np

from solvers.reference._common import ReferenceResult, solve_problem


def solve(X: Any, y: Any, lam: float = 1.0) -> ReferenceResult:
    """``min_w 1/2 ||X w - y||^2 + lam/2 ||w||^2`` in cvxpy."""
    X = np.asarray(X, dtype=float)
    w = cp.Variable(X.shape[1])
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(X @ w - y)
                                  + 0.5 * lam * cp.sum_squares(w)))
    value, seconds = solve_problem(prob)
    return ReferenceResult(value=value, arrays={"w": w.value}, time=seconds)
