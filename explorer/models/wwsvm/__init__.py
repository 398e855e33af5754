"""Weston–Watkins multiclass SVM with the exact Walrus block solver."""

from __future__ import annotations

import numpy as np

from solvers.params import ParamSpecs

from ...registry import Dataset, ModelEntry, Problem, ui_param
from . import data


def _specs() -> ParamSpecs:
    from solvers import wwsvm

    return wwsvm.PARAMS


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           **params):
    from solvers import wwsvm

    return wwsvm.solve(problem.data["X"], problem.data["y"], tol=tol, max_iter=max_iter,
                       init=init, callback=callback, **params)


def _reference(problem: Problem, *, C: float = _specs().default("C"),
               fit_intercept: bool = _specs().default("fit_intercept"),
               intercept_scaling: float = _specs().default("intercept_scaling"), **_ignored):
    from solvers.reference import wwsvm as ref

    return ref.solve(problem.data["X"], problem.data["y"], C, fit_intercept=fit_intercept,
                     intercept_scaling=intercept_scaling)


def _cost(problem: Problem) -> int:
    X = problem.data["X"]
    k = int(np.unique(problem.data["y"]).size)
    return X.shape[0] * k + X.shape[1] * k


ENTRY = ModelEntry(
    name="wwsvm",
    title="Weston–Watkins SVM (Walrus)",
    summary=(
        "Multiclass linear SVM with the Weston–Watkins hinge loss, trained by dual block "
        "coordinate descent. Each block subproblem is solved exactly by the Walrus sweep "
        "(Wang & Scott, ICML 2021) instead of Shark's iterative inner loop."
    ),
    datasets={
        "blobs": Dataset("blobs", "Gaussian blobs", data.blobs,
                         sizes={"n": (300, 20, 5000), "k": (4, 2, 10), "d": (2, 2, 100),
                                "spread": (1.0, 0.2, 4.0)},
                         cost="explorer.models.wwsvm.costs:BLOBS"),
        "digits": Dataset("digits", "scikit-learn digits (64-D, 10 classes)",
                          data.real("digits"), sizes={"n": (600, 0, 1797)}, real=True,
                          cost="explorer.models.wwsvm.costs:DIGITS"),
        "wine": Dataset("wine", "scikit-learn wine (13-D, 3 classes)", data.real("wine"),
                        sizes={"n": (0, 0, 178)}, real=True,
                        cost="explorer.models.wwsvm.costs:WINE"),
        "iris": Dataset("iris", "scikit-learn iris (4-D, 3 classes)", data.real("iris"),
                        sizes={"n": (0, 0, 150)}, real=True,
                        cost="explorer.models.wwsvm.costs:IRIS"),
    },
    params=(
        ui_param(_specs()["C"], low=1e-3, high=1e3, log=True),
        ui_param(_specs()["method"]),
        ui_param(_specs()["seed"], high=10_000),
        ui_param(_specs()["accelerate"]),
        ui_param(_specs()["stopping"]),
        ui_param(_specs()["ratio"], low=1e-4, high=0.1, log=True),
        ui_param(_specs()["fit_intercept"]),
        ui_param(_specs()["intercept_scaling"], low=0.1, high=100.0, log=True),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=8_000,
    bench="explorer.models.wwsvm.bench:run",
    page="explorer.models.wwsvm.page:render",
    order=10,
    icon=":material/scatter_plot:",
    tol=1e-6,
    max_iter=1000,
    tiny={"n": 30, "k": 3, "d": 3},
)
