"""Sweep hooks of cASO: cross-validation split, held-out error, shared-structure dimension."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import Problem
from ...sweep.hooks import ModelHooks, Score, split_tasks


class CASOHooks(ModelHooks):
    """Per-task k-fold split, held-out error of ``x^T u_t``, ranks of ``U`` and ``M``."""

    cross_validation = True

    def split(self, problem: Problem, n_folds: int, fold: int, seed: int = 0) -> Problem:
        """Hold out fold ``fold`` of every task's rows (``info["Xs_test"]``, ...)."""
        return split_tasks(problem, n_folds, fold, seed)

    def score(self, problem: Problem, result: Any) -> Score | None:
        """The first :mod:`solvers.scoring` score of ``x^T u_t`` on all tasks' test rows.

        Squared loss: ``mse`` (a regression); hinge / logistic: ``accuracy`` of the signs
        against the sign targets (a classification).
        """
        from solvers.scoring import score_predictions

        if "Xs_test" not in problem.info:
            return None
        U = np.asarray(result.U)
        pred = np.concatenate([np.asarray(X) @ U[:, t]
                               for t, X in enumerate(problem.info["Xs_test"])])
        if result.loss == "squared":
            first = score_predictions("regression", np.concatenate(
                [np.asarray(y, dtype=float) for y in problem.info["ys_test"]]), pred)[0]
        else:
            signs = problem.info.get("ys_sign_test", problem.info["ys_test"])
            first = score_predictions("classification", np.concatenate(
                [np.asarray(y) for y in signs]), np.where(pred > 0, 1.0, -1.0))[0]
        return Score(first.name, first.value)

    def structure(self, problem: Problem, result: Any) -> dict[str, float]:
        """Numerical rank of ``U`` and the number of eigenvalues of ``M`` above 1/2."""
        s = np.linalg.svd(np.asarray(result.U), compute_uv=False)
        w = np.linalg.eigvalsh(np.asarray(result.M))
        return {"rank_U": int(np.sum(s > 1e-6 * max(s.max(initial=0.0), 1e-300))),
                "M_eigs_above_half": int(np.sum(w > 0.5))}


#: The hooks :mod:`explorer.sweep` uses.
HOOKS = CASOHooks()
