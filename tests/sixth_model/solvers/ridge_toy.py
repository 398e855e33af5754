r"""Ridge regression: a toy model that follows ``CONTRIBUTING.md``'s checklist.

Primal (a least-squares fit with a ridge penalty)::

    P(w) = 1/2 ||X w - y||^2 + lam/2 ||w||^2

Dual (Fenchel; every ``a`` is feasible)::

    D(a) = a^T y - 1/2 ||a||^2 - 1/(2 lam) ||X^T a||^2,    w(a) = X^T a / lam

``P(w) - D(y - X w)`` bounds the suboptimality of ``w``. The method is gradient descent
on ``P`` with step ``1 / (||X||_2^2 + lam)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers.base import Monitor, Result
from solvers.params import MAX_ITER, TOL, ParamSpec, ParamSpecs
from solvers.saved import SavedForm, array_specs
from solvers.validation import check_callback, check_init, check_matrix, check_vector

PARAMS = ParamSpecs(
    ParamSpec("lam", 1.0, "ridge weight (> 0)", low=0.0),
    TOL,
    MAX_ITER,
)


@dataclass(frozen=True)
class RidgeResult(Result):
    """Result of :func:`solve`: ``w`` (d,) and the dual point ``a`` (n,)."""

    w: np.ndarray = field(default_factory=lambda: np.zeros(0))
    a: np.ndarray = field(default_factory=lambda: np.zeros(0))


def primal_objective(X: np.ndarray, y: np.ndarray, w: np.ndarray, lam: float) -> float:
    """``1/2 ||X w - y||^2 + lam/2 ||w||^2``."""
    r = X @ w - y
    return float(0.5 * r @ r + 0.5 * lam * w @ w)


def dual_objective(X: np.ndarray, y: np.ndarray, a: np.ndarray, lam: float) -> float:
    """``a^T y - 1/2 ||a||^2 - 1/(2 lam) ||X^T a||^2``."""
    z = X.T @ a
    return float(a @ y - 0.5 * a @ a - 0.5 / lam * z @ z)


def solve(X: Any, y: Any, lam: float = PARAMS.default("lam"), *,
          tol: float = PARAMS.default("tol"), max_iter: int = PARAMS.default("max_iter"),
          init: RidgeResult | None = None, callback: Any = None) -> RidgeResult:
    """Gradient descent on ``P`` certified by ``D(y - X w)`` (see the module docstring)."""
    v = PARAMS.validate(lam=lam, tol=tol, max_iter=max_iter)
    X = check_matrix(X, "X")
    y = check_vector(y, "y", size=X.shape[0])
    callback = check_callback(callback)
    init = check_init(init, RidgeResult, w=(X.shape[1],))
    w = np.zeros(X.shape[1]) if init is None else np.array(init.w, dtype=float)
    step = 1.0 / (np.linalg.norm(X, 2) ** 2 + v["lam"])
    mon = Monitor("ridge_toy", tol=v["tol"], max_iter=v["max_iter"], callback=callback)
    a = y - X @ w
    for it in range(1, v["max_iter"] + 1):
        w = w - step * (v["lam"] * w - X.T @ a)
        a = y - X @ w
        if mon.record(it, primal_objective(X, y, w, v["lam"]),
                      dual_objective(X, y, a, v["lam"]), iterate={"w": w}):
            break
    return RidgeResult(**mon.result_fields(), method="gd", params=PARAMS.record(**v),
                       w=w, a=a)


def _saved_predict(sm: Any, X: np.ndarray, _tasks: Any) -> np.ndarray:
    return X @ sm.arrays["w"]


#: How a fitted ridge model is saved and predicts.
SAVED_FORM = SavedForm(arrays=array_specs(("w", "d", True)),
                       names={"feature_names": "d", "class_names": None, "task_names": None},
                       features=("w", 0), decide=_saved_predict)
