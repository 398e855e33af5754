"""Ridge regression's benchmark: gradient descent against Clarabel on one instance."""

from __future__ import annotations

from typing import Any

from ...benchkit import BenchReport, BenchTable


def run(quick: bool = False, progress: Any = print) -> BenchReport:
    """One row: iterations, relative gap and the cvxpy value."""
    from . import ENTRY

    problem = ENTRY.datasets["synthetic"](n=40 if quick else 400)
    res = ENTRY.solve(problem, tol=1e-8, max_iter=5000)
    ref = ENTRY.reference(problem)
    table = BenchTable("Ridge regression (toy)", ["iterations", "rel gap", "cvxpy value"])
    table.add(res.n_iter, f"{res.rel_gap:.1e}", f"{ref.value:.6g}")
    return BenchReport(model=ENTRY.name, tables=[table])
