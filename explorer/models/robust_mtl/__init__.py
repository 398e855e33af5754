"""Robust temporal multitask regression: accelerated dual ascent vs pure smoothing."""

from __future__ import annotations

import math

from ...registry import Dataset, ModelEntry, Param, Problem
from . import data

#: Default smoothing parameter of the page and the CLI (the solver's own default is 1e-3).
#: At the default data (m=12, d=30, n=40, lam=rho=3) the certified gap's floor at
#: mu=1e-3 is about 2e-5 of the objective, far above tol=1e-6, and the primal value is
#: 1.6e-5 (relative) above cvxpy's optimum. mu=3e-5 brings the floor to about 3e-7 of the
#: objective, below tol: the default run converges with an honest certificate (about a
#: second), and ``dualscope check`` (tol 1e-8, stops at the floor) agrees with cvxpy to
#: about 3e-7.
MU_DEFAULT = 3e-5


def _p(value):
    return math.inf if str(value).lower() in ("inf", "infinity") else value


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           lam: float = 3.0, gamma: float = 1.0, zeta: float = 1.0, rho: float = 3.0,
           p=2, mu: float = MU_DEFAULT, method: str = "dual", restart: bool = False):
    """The registry's solve: ``max_iter`` is a budget of singular value thresholdings.

    One unit of cost for both methods: FISTA steps of the smoothing baseline, inner
    S-FISTA steps (summed over the outer iterations) of the dual method, each one
    SVD of the d x m iterate. The dual method stops after the outer iteration that
    exhausts the budget (with a ConvergenceWarning, like ``max_iter``). The baseline
    evaluates its certificate every 10 steps.
    """
    import warnings

    from solvers import robust_mtl
    from solvers.base import ConvergenceWarning

    if init is not None and (init.W.shape != (problem.data["Xs"][0].shape[1],
                                              len(problem.data["Xs"]))):
        init = None
    budget = {"hit": False}
    if method == "dual":
        svds = int(max_iter)
        user_callback = callback

        def budgeted(state):
            answer = None if user_callback is None else user_callback(state)
            if state.extras["inner_total"] >= svds:
                budget["hit"] = answer is not False
                return False
            return answer

        callback = budgeted
        max_iter = robust_mtl.MAX_ITER["dual"] * 10
    # The baseline certifies every 10 FISTA steps (as in the benchmark): certifying every
    # step would roughly double its cost, while the dual method certifies once per outer
    # iteration.
    extra = {"check_every": 10} if method == "smoothing" else {}
    res = robust_mtl.solve(problem.data["Xs"], problem.data["ys"], lam=lam, gamma=gamma,
                           zeta=zeta, rho=rho, p=_p(p), mu=mu, method=method, tol=tol,
                           max_iter=max_iter, init=init, callback=callback, restart=restart,
                           **extra)
    if budget["hit"] and not res.converged:
        warnings.warn(
            f"robust_mtl[dual]: stopped after {res.inner_iterations} inner S-FISTA steps "
            f"(budget max_iter={svds} SVDs) with duality gap {res.gap:.3e} above tol={tol:g}; "
            "increase max_iter or tol.", ConvergenceWarning, stacklevel=2)
    return res


def _reference(problem: Problem, *, lam: float = 3.0, gamma: float = 1.0, zeta: float = 1.0,
               rho: float = 3.0, p=2, **_ignored):
    from solvers.reference import robust_mtl as ref

    return ref.solve(problem.data["Xs"], problem.data["ys"], lam=lam, gamma=gamma, zeta=zeta,
                     rho=rho, p=_p(p))


def _cost(problem: Problem) -> int:
    # cvxpy/Clarabel: the nuclear norm becomes a (d + m) x (d + m) PSD cone, the losses
    # sum_i n_i cone entries; the PSD cone dominates (about 4 s at d + m = 50,
    # about 50 s at d + m = 100 on the reference machine).
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
        "temporal smoothness. Kang & Liu's accelerated dual ascent (FISTA on the dual "
        "variables, S-FISTA with singular value thresholding inside) against the pure "
        "smoothing baseline; both certified by a Fenchel duality gap whose floor shrinks "
        "with the smoothing parameter mu."
    ),
    datasets={
        "temporal": Dataset(
            "temporal", "Synthetic temporal tasks (sparse rows, low rank, drift, outliers)",
            data.temporal_tasks,
            sizes={"m": (12, 2, 100), "d": (30, 2, 400), "n": (40, 5, 400),
                   "rank": (3, 1, 20), "outliers": (0.0, 0.0, 0.3)},
            memory="explorer.estimates:robust_temporal_memory",
            seconds="explorer.estimates:robust_temporal_seconds"),
        "diabetes": Dataset(
            "diabetes", "scikit-learn diabetes split by age (an illustration)",
            data.diabetes_in_time, sizes={"m": (8, 2, 40)}, real=True,
            memory="explorer.estimates:robust_diabetes_memory",
            seconds="explorer.estimates:robust_diabetes_seconds"),
    },
    params=(
        Param("lam", 3.0, "l2,1 weight (row sparsity)", low=1e-3, high=100.0, log=True),
        Param("rho", 3.0, "nuclear-norm weight (low rank)", low=1e-3, high=100.0, log=True),
        Param("gamma", 1.0, "ridge weight (strong convexity, > 0)", low=1e-3, high=100.0,
              log=True),
        Param("zeta", 1.0, "temporal smoothness weight", low=1e-3, high=100.0, log=True),
        Param("p", 2, "loss norm", kind="choice", choices=(2, 1, math.inf)),
        Param("mu", MU_DEFAULT, "smoothing parameter: the certified gap cannot go below a "
              "floor that shrinks with mu (about lam d mu / 4 at most), smaller mu is slower",
              low=1e-6, high=1e-1, log=True),
        Param("method", "dual", "accelerated dual ascent (paper) or pure smoothing (baseline)",
              kind="choice", choices=("dual", "smoothing")),
        Param("restart", False, "adaptive momentum restart (not in the paper)", kind="bool"),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=6_000,
    bench="explorer.models.robust_mtl.bench:run",
    page="explorer.models.robust_mtl.page:render",
    order=30,
    icon=":material/timeline:",
    tol=1e-6,
    max_iter=50_000,
)
