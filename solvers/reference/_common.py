"""Shared plumbing of the cvxpy references: solve, check status, package the result."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = ["ReferenceResult", "solve_problem"]


@dataclass(frozen=True, eq=False)
class ReferenceResult:
    """Optimal value and named arrays of a cvxpy reference solve.

    Attributes
    ----------
    value : float
        Optimal objective value reported by the conic solver.
    arrays : Mapping[str, ndarray]
        The model's named solution arrays, also reachable as attributes
        (``ref.W``).
    time : float
        Seconds spent in ``problem.solve`` (compilation included).
    solver : str
        Conic solver used.
    status : str
        cvxpy status string (always optimal or optimal_inaccurate).
    """

    value: float
    arrays: Mapping[str, Any] = field(default_factory=dict)
    time: float = 0.0
    solver: str = "CLARABEL"
    status: str = "optimal"

    def __post_init__(self) -> None:
        object.__setattr__(self, "arrays", MappingProxyType(dict(self.arrays)))

    def __getattr__(self, name: str) -> Any:
        arrays = self.__dict__.get("arrays", {})
        if name in arrays:
            return arrays[name]
        raise AttributeError(f"ReferenceResult has no array {name!r}; arrays: {sorted(arrays)}")


def solve_problem(problem, *, solver: str = "CLARABEL", **solver_opts: Any) -> tuple[float, float]:
    """Solve a cvxpy problem; return ``(optimal value, seconds)``.

    Raises ``RuntimeError`` naming the status when the solver does not report
    an optimal solution.
    """
    import cvxpy as cp

    opts: dict[str, Any] = {}
    if solver == "CLARABEL":
        opts.update(tol_gap_abs=1e-9, tol_gap_rel=1e-9, tol_feas=1e-9, max_iter=500)
    opts.update(solver_opts)
    t0 = time.perf_counter()
    try:
        problem.solve(solver=solver, **opts)
    except cp.error.SolverError as exc:
        raise RuntimeError(f"cvxpy reference: {solver} failed: {exc}") from exc
    elapsed = time.perf_counter() - t0
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise RuntimeError(f"cvxpy reference: {solver} returned status {problem.status!r}")
    return float(problem.value), elapsed


def as_array(expr_value: Any) -> np.ndarray:
    """A cvxpy variable's value as a float array (never None)."""
    if expr_value is None:
        raise RuntimeError("cvxpy reference: the solver returned no primal values")
    return np.asarray(expr_value, dtype=float)
