"""Multi-task multiple kernel learning: lp-norm MKL over task-similarity matrices."""

from __future__ import annotations

import numpy as np

from ...registry import Dataset, ModelEntry, Param, Problem
from . import data


def _variant(problem: Problem, variant: str) -> tuple[list, bool]:
    from .baselines import variant_similarities

    T = int(problem.info.get("T", np.asarray(problem.data["G"][0]).shape[0]))
    return variant_similarities(problem.data["G"], T, variant)


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           C: float = 1e-3, p: float = 2.0, method: str = "e1", variant: str = "mt-mkl",
           seed: int = 0):
    from solvers import mtmkl

    G, fixed = _variant(problem, variant)
    d = problem.data
    return mtmkl.solve(d["X"], d["y"], d["tasks"], G, C=C, p=p, method=method,
                       fix_theta=fixed, tol=tol, max_iter=max_iter, seed=seed, init=init,
                       callback=callback)


def _reference(problem: Problem, *, C: float = 1e-3, p: float = 2.0, variant: str = "mt-mkl",
               **_ignored):
    from solvers.reference import mtmkl as ref

    G, fixed = _variant(problem, variant)
    d = problem.data
    return ref.solve(d["X"], d["y"], d["tasks"], G, C=C, p=p, fix_theta=fixed)


def _cost(problem: Problem) -> int:
    """Size proxy of the cvxpy program: ``n M + d (M + T)``.

    Measured here with Clarabel on the hierarchy (d = 100): depth 5 (n = 640,
    M = 63, proxy ~50k) about 7 s, depth 6 (n = 1280, M = 127, ~180k) about 30 s.
    """
    n, d = problem.data["X"].shape
    M = len(problem.data["G"])
    T = np.asarray(problem.data["G"][0]).shape[0]
    return n * M + d * (M + T)


ENTRY = ModelEntry(
    name="mtmkl",
    title="Multi-task MKL (lp-norm over task similarities)",
    summary=(
        "Hinge-loss multi-task learning whose task-similarity matrices (one per node of a "
        "task tree) are weighted by lp-norm multiple kernel learning (Widmer, Kloft & "
        "Rätsch). Trained by dual coordinate ascent with the closed-form theta-step "
        "(Algorithm E.1); the duality gap of the fully dualised problem certifies every "
        "epoch. Baselines: Union, Individual and Vanilla MTL (uniform fixed weights)."
    ),
    datasets={
        "hierarchy": Dataset(
            "hierarchy", "Paper's tree of sign-mutated task vectors (section 4)",
            data.hierarchy,
            # sigma defaults to 10, half the paper's 20: at 20 every method is near chance
            # (mean AUC ~0.54) and the differences are within the seed-to-seed spread
            # (`dualscope bench mtmkl`); the paper's value is one slider move away.
            sizes={"depth": (5, 1, 7), "d": (100, 2, 1000), "flips": (5, 0, 50),
                   "n_train": (10, 1, 500), "n_test": (1000, 10, 5000),
                   "sigma": (10.0, 0.5, 50.5)},
            memory="explorer.estimates:mtmkl_hierarchy_memory",
            seconds="explorer.estimates:mtmkl_hierarchy_seconds"),
        "digits": Dataset(
            "digits", "scikit-learn digits: 10 one-vs-rest tasks, Ward tree of class means",
            data.digits_tree, sizes={"n_train": (10, 1, 80), "n_test": (0, 0, 1000)},
            real=True,
            memory="explorer.estimates:mtmkl_digits_memory",
            seconds="explorer.estimates:mtmkl_digits_seconds"),
    },
    params=(
        Param("C", 1e-3, "loss weight", low=1e-6, high=1e3, log=True),
        Param("p", 2.0, "norm of the kernel-weight constraint ||theta||_p <= 1", low=1.0,
              high=5.0),
        Param("method", "e1", "Algorithm E.1 (interleaved) or Algorithm 1 (exact W-step)",
              kind="choice", choices=("e1", "alternating")),
        Param("variant", "mt-mkl", "MT-MKL or one of the paper's baselines", kind="choice",
              choices=("mt-mkl", "vanilla", "union", "individual")),
        Param("seed", 0, "seed of the sample order", kind="int", low=0, high=10_000),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=100_000,
    bench="explorer.models.mtmkl.bench:run",
    page="explorer.models.mtmkl.page:render",
    order=50,
    icon=":material/account_tree:",
    tol=1e-6,
    max_iter=20_000,
)
