"""Convex relaxed alternating structure optimisation (cASO) for multitask learning."""

from __future__ import annotations

from ...registry import Dataset, ModelEntry, Param, Problem
from . import data


def _targets(problem: Problem, loss: str):
    """Sign targets for the classification losses where the dataset provides them."""
    if loss != "squared" and "ys_sign" in problem.info:
        return problem.info["ys_sign"]
    return problem.data["ys"]


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           alpha: float = 0.1, eta: float = 1.0, h: float = 2.0, loss: str = "squared",
           method: str = "apg", m_step: str = "median", restart: bool = False):
    from solvers import caso

    return caso.solve(problem.data["Xs"], _targets(problem, loss), alpha=alpha, eta=eta, h=h,
                      loss=loss, method=method, tol=tol, max_iter=max_iter, m_step=m_step,
                      restart=restart, init=init, callback=callback)


def _reference(problem: Problem, *, alpha: float = 0.1, eta: float = 1.0, h: float = 2.0,
               loss: str = "squared", **_ignored):
    from solvers.reference import caso as ref

    return ref.solve(problem.data["Xs"], _targets(problem, loss), alpha=alpha, eta=eta, h=h,
                     loss=loss)


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
            memory="explorer.estimates:caso_subspace_memory",
            seconds="explorer.estimates:caso_subspace_seconds"),
        "digits": Dataset(
            "digits", "scikit-learn digits, 10 one-vs-rest tasks (PCA features)",
            data.digits_ovr, sizes={"n": (60, 10, 340), "d": (16, 2, 64)}, real=True,
            memory="explorer.estimates:caso_digits_memory",
            seconds="explorer.estimates:caso_digits_seconds"),
    },
    params=(
        Param("alpha", 0.1, "regularisation weight (c = alpha eta (1 + eta))",
              low=1e-3, high=1e2, log=True),
        Param("eta", 1.0, "eta > 0: from trace-norm-like (small) to ridge-like (large)",
              low=1e-2, high=1e2, log=True),
        Param("h", 2.0, "trace of M: relaxed dimension of the shared subspace, 0 < h <= d "
              "(fractional values allowed)", low=0.25, high=25.25),
        Param("loss", "squared", "loss function", kind="choice",
              choices=("squared", "hinge", "logistic")),
        Param("method", "bcd", "algorithm: APG (Algorithm 1) or BCD (Algorithm 2; usually "
              "much faster, the default)", kind="choice", choices=("apg", "bcd")),
        Param("m_step", "median", "M-step search (appendix C median search or sort)",
              kind="choice", choices=("median", "sort")),
        Param("restart", False, "APG: adaptive momentum restart (not in Algorithm 1)",
              kind="bool"),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=3_000,
    bench="explorer.models.caso.bench:run",
    page="explorer.models.caso.page:render",
    order=20,
    icon=":material/hub:",
    tol=1e-6,
    max_iter=5000,
)
