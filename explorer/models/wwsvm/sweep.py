"""Sweep hooks of the Weston–Watkins SVM: held-out accuracy, k-fold split, support summary.

Used by :mod:`explorer.sweep` (found through :meth:`explorer.registry.ModelEntry.hooks`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ...registry import Problem
from ...sweep.hooks import ModelHooks, Score, kfold


class WWSVMHooks(ModelHooks):
    """k-fold split of the rows, held-out accuracy, support-vector fractions."""

    cross_validation = True

    def split(self, problem: Problem, n_folds: int, fold: int, seed: int = 0) -> Problem:
        """Fold ``fold`` of a shuffled ``n_folds``-fold split: train on the rest, hold it out.

        The held-out rows go to ``info["X_test"]`` / ``info["y_test"]``.
        """
        X, y = np.asarray(problem.data["X"]), np.asarray(problem.data["y"])
        train, test = kfold(np.random.default_rng(seed), X.shape[0], n_folds, fold)
        info = dict(problem.info, X_test=X[test], y_test=y[test])
        return replace(problem, data=dict(problem.data, X=X[train], y=y[train]), info=info,
                       description=f"{problem.description} (fold {fold + 1}/{n_folds})")

    def score(self, problem: Problem, result: Any) -> Score | None:
        """``accuracy`` of ``argmax_j (X W)_j`` on the held-out rows (None without a test
        split)."""
        if "X_test" not in problem.info:
            return None
        classes = np.unique(np.asarray(problem.data["y"]))
        pred = classes[np.argmax(np.asarray(problem.info["X_test"]) @ result.W, axis=1)]
        return Score("accuracy", float(np.mean(pred == np.asarray(problem.info["y_test"]))))

    def structure(self, problem: Problem, result: Any) -> dict[str, float]:
        """Fraction of support vectors (any dual > 0) and of bounded ones (a dual at C)."""
        A = np.asarray(result.alpha)
        C = float(result.params.get("C", np.max(A, initial=0.0)))
        return {"support_fraction": float(np.mean(np.any(A > 0, axis=1))),
                "bound_fraction": float(np.mean(np.any(A >= C * (1 - 1e-12), axis=1)))}


#: The hooks :mod:`explorer.sweep` uses.
HOOKS = WWSVMHooks()
