"""Robust temporal multitask regression: accelerated dual ascent vs pure smoothing."""

from __future__ import annotations

import math

from ...registry import Dataset, ModelEntry, Param, Problem
from . import data


def _p(value):
    return math.inf if str(value).lower() in ("inf", "infinity") else value


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           lam: float = 3.0, gamma: float = 1.0, zeta: float = 1.0, rho: float = 3.0,
           p=2, mu: float = 1e-3, method: str = "dual", restart: bool = False):
    from solvers import robust_mtl

    if method == "dual":
        # max_iter counts outer iterations for the dual method (each runs an inner S-FISTA);
        # the CLI's budget is sized for the baseline's single FISTA steps.
        max_iter = max(1, min(max_iter, robust_mtl.MAX_ITER["dual"] * 10))
    if init is not None and (init.W.shape != (problem.data["Xs"][0].shape[1],
                                              len(problem.data["Xs"]))):
        init = None
    return robust_mtl.solve(problem.data["Xs"], problem.data["ys"], lam=lam, gamma=gamma,
                            zeta=zeta, rho=rho, p=_p(p), mu=mu, method=method, tol=tol,
                            max_iter=max_iter, init=init, callback=callback, restart=restart)


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


def _bench(quick: bool = False, progress=print):
    from .bench import run

    return run(quick=quick, progress=progress)


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
                   "rank": (3, 1, 20), "outliers": (0.0, 0.0, 0.3)}),
        "diabetes": Dataset(
            "diabetes", "scikit-learn diabetes split by age (an illustration)",
            data.diabetes_in_time, sizes={"m": (8, 2, 40)}, real=True),
    },
    params=(
        Param("lam", 3.0, "l2,1 weight (row sparsity)", low=0.0, high=100.0, log=True),
        Param("rho", 3.0, "nuclear-norm weight (low rank)", low=0.0, high=100.0, log=True),
        Param("gamma", 1.0, "ridge weight (strong convexity, > 0)", low=1e-3, high=100.0,
              log=True),
        Param("zeta", 1.0, "temporal smoothness weight", low=0.0, high=100.0, log=True),
        Param("p", 2, "loss norm", kind="choice", choices=(2, 1, math.inf)),
        Param("mu", 1e-3, "smoothing parameter (sets the gap floor)", low=1e-6, high=1e-1,
              log=True),
        Param("method", "dual", "accelerated dual ascent (paper) or pure smoothing (baseline)",
              kind="choice", choices=("dual", "smoothing")),
        Param("restart", False, "adaptive momentum restart (not in the paper)", kind="bool"),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=6_000,
    bench=_bench,
    page="explorer.models.robust_mtl.page:render",
    order=30,
    icon=":material/timeline:",
    tol=1e-6,
    max_iter=100_000,
)
