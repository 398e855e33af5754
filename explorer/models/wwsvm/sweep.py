"""Sweep hooks of the Weston–Watkins SVM: held-out accuracy, k-fold split, support
summary, and the grid of the sweep backends' benchmark.

Used by :mod:`explorer.sweep` (found through :meth:`explorer.registry.ModelEntry.hooks`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...registry import Problem
from ...sweep.hooks import ModelHooks, Score, kfold


class WWSVMHooks(ModelHooks):
    """k-fold split of the rows, held-out accuracy, support-vector fractions."""

    cross_validation = True

    def split(self, problem: Problem, n_folds: int, fold: int, seed: int = 0) -> Problem:
        """Fold ``fold`` of a shuffled ``n_folds``-fold split: train on the rest, hold it out.

        The held-out rows go to ``info["X_test"]`` / ``info["y_test"]``.
        """
        X, y = problem.data["X"], np.asarray(problem.data["y"])
        X = sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X)  # sparse stays sparse
        train, test = kfold(np.random.default_rng(seed), X.shape[0], n_folds, fold)
        info = dict(problem.info, X_test=X[test], y_test=y[test])
        return replace(problem, data=dict(problem.data, X=X[train], y=y[train]), info=info,
                       description=f"{problem.description} (fold {fold + 1}/{n_folds})")

    def score(self, problem: Problem, result: Any) -> Score | None:
        """``accuracy`` (:mod:`solvers.scoring`) of ``argmax_j (X W + b)_j`` on the held-out
        rows (None without a test split)."""
        from solvers.scoring import score_predictions

        if "X_test" not in problem.info:
            return None
        classes = np.unique(np.asarray(problem.data["y"]))
        X_test = problem.info["X_test"]
        S = np.asarray((X_test if sp.issparse(X_test) else np.asarray(X_test)) @ result.W)
        b = getattr(result, "intercept", None)
        S = S if b is None else S + np.asarray(b)
        pred = classes[np.argmax(S, axis=1)]
        first = score_predictions("classification", np.asarray(problem.info["y_test"]), pred)[0]
        return Score(first.name, first.value)

    def structure(self, problem: Problem, result: Any) -> dict[str, float]:
        """Fraction of support vectors (any dual > 0) and of bounded ones (a dual at C)."""
        A = np.asarray(result.alpha)
        C = float(result.params.get("C", np.max(A, initial=0.0)))
        return {"support_fraction": float(np.mean(np.any(A > 0, axis=1))),
                "bound_fraction": float(np.mean(np.any(A >= C * (1 - 1e-12), axis=1)))}

    def bench_grid(self, quick: bool = False) -> dict[str, Any]:
        """``C`` on 8 log-spaced values in [0.01, 10] (a warm-started path) x the Walrus
        and iterative block solvers x 3 data seeds on the default dataset (``blobs``): 48
        points in 6 chains.

        Parameters
        ----------
        quick : bool
            300 samples and 300 iterations instead of 1000 and 1000 (same 48 points).

        Returns
        -------
        dict
            The keywords of an :class:`explorer.sweep.SweepSpec` (all but ``model``).
        """
        return {"grid": {"C": [float(c) for c in np.geomspace(0.01, 10.0, 8)],
                         "method": ["walrus", "iterative"]},
                "sizes": {"n": [300 if quick else 1000], "k": [5], "d": [10]},
                "seeds": [0, 1, 2], "tol": 1e-6, "max_iter": 300 if quick else 1000}


#: The hooks :mod:`explorer.sweep` uses.
HOOKS = WWSVMHooks()
