"""Ridge regression: the toy sixth model's registry entry."""

from __future__ import annotations

from solvers.params import ParamSpecs

from ...estimates import BASE, Cost
from ...registry import Dataset, ModelEntry, Problem, ui_param
from . import data


def _specs() -> ParamSpecs:
    from solvers import ridge_toy

    return ridge_toy.PARAMS


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           **params):
    from solvers import ridge_toy

    return ridge_toy.solve(problem.data["X"], problem.data["y"], tol=tol, max_iter=max_iter,
                           init=init, callback=callback, **params)


def _reference(problem: Problem, **params):
    from solvers.reference import ridge_toy as ref

    return ref.solve(problem.data["X"], problem.data["y"], lam=params.get("lam", 1.0))


COST = Cost(memory=lambda s: 8.0 * 4 * int(s["n"]) * int(s["d"]) + BASE,
            iterations=lambda s: 200.0,
            per_iteration=lambda s: 1e-5 + 1e-9 * int(s["n"]) * int(s["d"]), max_iter=1000)

ENTRY = ModelEntry(
    name="ridge_toy",
    title="Ridge regression (toy)",
    summary="Least squares with a ridge penalty, certified by its Fenchel dual.",
    datasets={
        "synthetic": Dataset("synthetic", "Gaussian features, linear targets", data.synthetic,
                             sizes={"n": (40, 5, 2000), "d": (5, 1, 200),
                                    "noise": (0.1, 0.0, 1.0)}, cost=COST),
    },
    params=(ui_param(_specs()["lam"], low=1e-3, high=1e3, log=True),),
    solve=_solve,
    reference=_reference,
    reference_cost=lambda problem: problem.data["X"].size,
    reference_limit=100_000,
    bench="explorer.models.ridge_toy.bench:run",
    page="explorer.models.ridge_toy.page:render",
    order=99,
    tol=1e-8,
    max_iter=5000,
    tiny={"n": 12, "d": 3},
)
