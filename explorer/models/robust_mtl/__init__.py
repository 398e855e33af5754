"""Robust temporal multitask regression: a floor-free exact-dual method (default) beside the
paper's accelerated dual ascent and its pure-smoothing baseline."""

from __future__ import annotations

import math

from solvers.params import ParamSpecs

from ...registry import Dataset, ModelEntry, Problem, ui_param
from . import data


def _specs() -> ParamSpecs:
    from solvers import robust_mtl

    return robust_mtl.PARAMS


def _p(value):
    return math.inf if str(value).lower() in ("inf", "infinity") else value


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None, **params):
    """The registry's solve: the solver's own parameters and total SVD budget (``max_svd``).

    The baseline certifies every 10 FISTA steps (certifying every step would roughly
    double its cost); the other methods use their own defaults.
    """
    from solvers import robust_mtl

    if init is not None and (init.W.shape != (problem.data["Xs"][0].shape[1],
                                              len(problem.data["Xs"]))):
        init = None
    if "p" in params:
        params["p"] = _p(params["p"])
    if params.get("method") == "smoothing":
        params.setdefault("check_every", 10)
    return robust_mtl.solve(problem.data["Xs"], problem.data["ys"], tol=tol,
                            max_iter=max_iter, init=init, callback=callback, **params)


def _reference(problem: Problem, **params):
    from solvers.reference import robust_mtl as ref

    kw = {k: params.get(k, _specs().default(k)) for k in ("lam", "gamma", "zeta", "rho", "p")}
    kw["p"] = _p(kw["p"])
    return ref.solve(problem.data["Xs"], problem.data["ys"], **kw)


def _cost(problem: Problem) -> int:
    # cvxpy/Clarabel: the nuclear norm becomes a (d + m) x (d + m) PSD cone, the losses
    # sum_i n_i cone entries; the PSD cone dominates: the size counted is its entries
    # plus the samples.
    Xs = problem.data["Xs"]
    d, m = Xs[0].shape[1], len(Xs)
    n = sum(X.shape[0] for X in Xs)
    return (d + m) ** 2 + n


ENTRY = ModelEntry(
    name="robust_mtl",
    title="Robust temporal multitask regression",
    summary=(
        "Time-ordered regression tasks with a non-squared (self-calibrating) loss "
        "sum_i ||X_i w_i - y_i||_p, row sparsity (l2,1), low rank (nuclear norm), ridge and "
        "temporal smoothness. The default solver runs accelerated projected gradient with "
        "restart on the exact (unsmoothed) dual and certifies to 1e-8; Kang & Liu's "
        "accelerated dual ascent (FISTA on the dual variables, S-FISTA with singular value "
        "thresholding inside) and their pure smoothing baseline are there for the paper's "
        "comparison: their Fenchel duality gap has a floor that shrinks with the smoothing "
        "parameter mu."
    ),
    datasets={
        "temporal": Dataset(
            "temporal", "Synthetic temporal tasks (sparse rows, low rank, drift, outliers)",
            data.temporal_tasks,
            sizes={"m": (12, 2, 50), "d": (30, 2, 250), "n": (40, 5, 200),
                   "rank": (3, 1, 20), "outliers": (0.0, 0.0, 0.3)},
            cost="explorer.models.robust_mtl.costs:TEMPORAL"),
        "diabetes": Dataset(
            "diabetes", "scikit-learn diabetes split by age (an illustration)",
            data.diabetes_in_time, sizes={"m": (8, 2, 40)}, real=True,
            cost="explorer.models.robust_mtl.costs:DIABETES"),
    },
    params=(
        ui_param(_specs()["lam"], low=1e-3, high=100.0, log=True),
        ui_param(_specs()["rho"], low=1e-3, high=100.0, log=True),
        ui_param(_specs()["gamma"], low=1e-3, high=100.0, log=True),
        ui_param(_specs()["zeta"], low=1e-3, high=100.0, log=True),
        ui_param(_specs()["p"]),
        ui_param(_specs()["method"]),
        ui_param(_specs()["mu"], low=1e-6, high=1e-1, log=True),
        ui_param(_specs()["restart"]),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=6_000,
    bench="explorer.models.robust_mtl.bench:run",
    page="explorer.models.robust_mtl.page:render",
    order=30,
    icon=":material/timeline:",
    tol=1e-8,
    max_iter=100_000,
    # the dual method's l_inf threshold (Condat) runs only with p = inf
    warm_combos=({"p": math.inf, "method": "dual"},),
    tiny={"m": 3, "d": 4, "n": 8, "rank": 1},
    tiny_params={"lam": 0.3, "rho": 0.3},  # the default weights zero every W
)
