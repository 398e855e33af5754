"""The paper's baselines (section 4), all with the one solver :func:`solvers.mtmkl.solve`.

* ``mt-mkl``: the problem's task-similarity matrices, theta learned (Algorithm E.1).
* ``vanilla``: the same matrices with theta fixed at the uniform point
  ``M^{-1/p}`` of the unit p-sphere (regularised MTL, no kernel learning).
* ``union``: one task (``G = all ones``): all data pooled into one classifier.
* ``individual``: independent tasks (``G = identity``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from solvers import mtmkl

from .metrics import evaluate

__all__ = ["VARIANTS", "compare", "fit", "variant_similarities"]

VARIANTS = ("mt-mkl", "vanilla", "union", "individual")


def variant_similarities(G: Any, T: int, variant: str) -> tuple[Any, bool]:
    """``(G, fix_theta)`` of a variant on a problem with T tasks and matrices ``G``.

    MT-MKL and Vanilla keep the problem's ``G`` as given (a
    :class:`solvers.mtmkl.FactoredSimilarities` stays in factor form, so the solver
    neither densifies nor re-detects its structure); Union and Individual are one dense
    matrix.
    """
    if variant == "mt-mkl":
        return G, False
    if variant == "vanilla":
        return G, True
    if variant == "union":
        return [np.ones((T, T))], True
    if variant == "individual":
        return [np.eye(T)], True
    raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")


def fit(problem: Any, variant: str = "mt-mkl", **kwargs: Any) -> mtmkl.MTMKLResult:
    """Solve one variant; ``kwargs`` go to :func:`solvers.mtmkl.solve` (C, p, tol, ...)."""
    d = problem.data
    T = int(problem.info.get("T", np.asarray(d["G"][0]).shape[0]))
    G, fixed = variant_similarities(d["G"], T, variant)
    return mtmkl.solve(d["X"], d["y"], d["tasks"], G, fix_theta=fixed, **kwargs)


def compare(problem: Any, *, C: float, ps: tuple[float, ...] = (1.0, 2.0, 3.0),
            p_vanilla: float = 2.0, tol: float = 1e-6, max_iter: int = 10_000,
            seed: int = 0) -> dict[str, dict[str, Any]]:
    """The paper's comparison: Union, Individual, Vanilla and MT-MKL for each ``p``.

    Returns ``label -> {"result", "aucs", "mean_auc", "fpr", "tpr", "similarity_corr"}``.
    """
    runs: dict[str, Any] = {}
    common = {"C": C, "tol": tol, "max_iter": max_iter, "seed": seed}
    runs["Union"] = fit(problem, "union", p=p_vanilla, **common)
    runs["Individual"] = fit(problem, "individual", p=p_vanilla, **common)
    runs["Vanilla MTL"] = fit(problem, "vanilla", p=p_vanilla, **common)
    for p in ps:
        runs[f"MT-MKL p={p:g}"] = fit(problem, "mt-mkl", p=p, **common)
    return {label: {"result": res, **evaluate(res, problem)} for label, res in runs.items()}
