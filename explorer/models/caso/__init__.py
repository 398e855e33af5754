"""Convex relaxed alternating structure optimisation (cASO) for multitask learning."""

from __future__ import annotations

from solvers.params import ParamSpecs

from ...registry import Dataset, ModelEntry, Problem, ui_param
from . import data


def _targets(problem: Problem, loss: str):
    """Sign targets for the classification losses where the dataset provides them."""
    if loss != "squared" and "ys_sign" in problem.info:
        return problem.info["ys_sign"]
    return problem.data["ys"]


def _specs() -> ParamSpecs:
    from solvers import caso

    return caso.PARAMS


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           **params):
    from solvers import caso

    loss = params.get("loss", _specs().default("loss"))
    return caso.solve(problem.data["Xs"], _targets(problem, loss), tol=tol, max_iter=max_iter,
                      init=init, callback=callback, **params)


def _reference(problem: Problem, **params):
    from solvers.reference import caso as ref

    kw = {k: params.get(k, _specs().default(k)) for k in ("alpha", "eta", "h", "loss")}
    return ref.solve(problem.data["Xs"], _targets(problem, kw["loss"]), **kw)


def _cost(problem: Problem) -> int:
    # cvxpy's matrix_frac becomes one PSD cone of side d + m: its dimension drives Clarabel.
    Xs = problem.data["Xs"]
    k = Xs[0].shape[1] + len(Xs)
    return k * (k + 1) // 2


ENTRY = ModelEntry(
    name="caso",
    title="Convex ASO multitask learning",
    summary=(
        "Tasks share a low-dimensional predictive structure: the convex relaxation of "
        "alternating structure optimisation (Chen, Tang, Liu & Ye) learns the task weights U "
        "and a relaxed subspace projector M (trace h, 0 <= M <= I) jointly, penalising "
        "c tr(U^T (eta I + M)^{-1} U). Solved by accelerated projected gradient (APG, the "
        "paper's Algorithm 1) or block coordinate descent with the exact linear-time M-step "
        "(Algorithm 2), each certified by a duality gap."
    ),
    datasets={
        "subspace": Dataset(
            "subspace", "Synthetic tasks sharing a subspace", data.subspace,
            sizes={"d": (20, 2, 200), "m": (20, 1, 200), "n": (20, 2, 1000),
                   "h_true": (2, 1, 20), "noise": (0.5, 0.0, 2.0),
                   "specific": (0.1, 0.0, 2.0)},
            cost="explorer.models.caso.costs:SUBSPACE"),
        "digits": Dataset(
            "digits", "scikit-learn digits, 10 one-vs-rest tasks (PCA features)",
            data.digits_ovr, sizes={"n": (60, 10, 340), "d": (16, 2, 64)}, real=True,
            cost="explorer.models.caso.costs:DIGITS"),
    },
    params=(
        ui_param(_specs()["alpha"], low=1e-3, high=1e2, log=True),
        ui_param(_specs()["eta"], low=1e-2, high=1e2, log=True),
        ui_param(_specs()["h"], low=0.25, high=25.25),
        ui_param(_specs()["loss"]),
        ui_param(_specs()["method"]),
        ui_param(_specs()["m_step"]),
        ui_param(_specs()["restart"]),
        ui_param(_specs()["ustep"]),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=3_000,
    bench="explorer.models.caso.bench:run",
    page="explorer.models.caso.page:render",
    order=20,
    icon=":material/hub:",
    tol=_specs().default("tol"),
    max_iter=_specs().default("max_iter"),
    tiny={"d": 4, "m": 3, "n": 6, "h_true": 1},
)
