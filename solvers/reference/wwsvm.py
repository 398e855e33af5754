"""cvxpy reference for the Weston–Watkins SVM (same objective as :mod:`solvers.wwsvm`).

    min_{W, Xi}  1/2 ||W||_F^2 + C sum_{i, j != y_i} Xi_ij
    s.t.  Xi_ij >= 1 - (w_{y_i} - w_j)^T x_i,  Xi_ij >= 0   (j != y_i)

The multipliers of the margin constraints are the dual variables ``alpha``.
``X`` may be a scipy.sparse matrix. With ``fit_intercept`` the samples get the
constant feature ``intercept_scaling`` (regularised like the others, as in
:func:`solvers.wwsvm.solve`) and the offsets are ``intercept_scaling`` times its
weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..validation import check_scalar
from ..wwsvm import _check_data, _split_bias, _with_bias
from ._common import ReferenceResult, as_array, solve_problem

__all__ = ["solve"]


def solve(X: Any, y: Any, C: float = 1.0, *, fit_intercept: bool = False,
          intercept_scaling: float = 1.0, solver: str = "CLARABEL") -> ReferenceResult:
    """Solve the WW-SVM primal with cvxpy.

    Returns ``value``, ``W`` (d x k), ``intercept`` (k,), ``alpha`` (n x k).
    """
    import cvxpy as cp

    X, y, k = _check_data(X, y)
    C = check_scalar(C, "C", low=0.0)
    bias = check_scalar(intercept_scaling, "intercept_scaling", low=0.0) if fit_intercept \
        else 0.0
    if bias:
        X = _with_bias(X, bias)
    n, d = X.shape
    Y = np.zeros((n, k))
    Y[np.arange(n), y] = 1.0
    mask = 1.0 - Y
    W = cp.Variable((d, k))
    Xi = cp.Variable((n, k), nonneg=True)
    S = X @ W
    sy = cp.sum(cp.multiply(Y, S), axis=1, keepdims=True)
    margin_con = cp.multiply(mask, Xi) >= cp.multiply(mask, 1.0 - (sy @ np.ones((1, k)) - S))
    objective = 0.5 * cp.sum_squares(W) + C * cp.sum(cp.multiply(mask, Xi))
    problem = cp.Problem(cp.Minimize(objective), [margin_con])
    value, elapsed = solve_problem(problem, solver=solver)
    alpha = np.clip(as_array(margin_con.dual_value) * mask, 0.0, C)
    W_out, intercept = _split_bias(as_array(W.value), bias)
    return ReferenceResult(
        value=value,
        arrays={"W": W_out, "intercept": intercept, "alpha": alpha},
        time=elapsed,
        solver=solver,
        status=problem.status,
    )
