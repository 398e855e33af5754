"""Sweep hooks of robust temporal MTL: cross-validation split, robust held-out error,
row sparsity and rank of the task weights."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import Problem
from ...sweep.hooks import ModelHooks, Score, split_tasks


class RobustMTLHooks(ModelHooks):
    """Per-task k-fold split, held-out mean squared error, sparsity and rank."""

    cross_validation = True

    def split(self, problem: Problem, n_folds: int, fold: int, seed: int = 0) -> Problem:
        """Hold out fold ``fold`` of every task's rows (``info["Xs_test"]``, ...)."""
        return split_tasks(problem, n_folds, fold, seed)

    def score(self, problem: Problem, result: Any) -> Score | None:
        """``mse`` (the first :mod:`solvers.scoring` regression score) of ``x^T w_t`` on
        all tasks' held-out rows."""
        from solvers.scoring import score_predictions

        if "Xs_test" not in problem.info:
            return None
        W = np.asarray(result.W)
        info = problem.info
        pred = np.concatenate([np.asarray(X) @ W[:, t] for t, X in enumerate(info["Xs_test"])])
        y = np.concatenate([np.asarray(v, dtype=float) for v in info["ys_test"]])
        first = score_predictions("regression", y, pred)[0]
        return Score(first.name, first.value)

    def structure(self, problem: Problem, result: Any) -> dict[str, float]:
        """Non-zero rows and numerical rank of ``W`` (relative threshold 1e-6)."""
        W = np.asarray(result.W)
        rows = np.linalg.norm(W, axis=1)
        s = np.linalg.svd(W, compute_uv=False)
        scale = max(float(s.max(initial=0.0)), 1e-300)
        return {"nonzero_rows": int(np.sum(rows > 1e-6 * scale)),
                "rank": int(np.sum(s > 1e-6 * scale))}


#: The hooks :mod:`explorer.sweep` uses.
HOOKS = RobustMTLHooks()
