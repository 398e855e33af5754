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
        """Held-out error of ``x^T u_t`` over all tasks' test rows.

        Squared loss: mean squared error (``test_mse``); hinge / logistic: the fraction of
        wrong signs (``test_error``) against the sign targets.
        """
        if "Xs_test" not in problem.info:
            return None
        U = np.asarray(result.U)
        preds = [np.asarray(X) @ U[:, t] for t, X in enumerate(problem.info["Xs_test"])]
        if result.loss == "squared":
            err = np.concatenate([p - np.asarray(y) for p, y in
                                  zip(preds, problem.info["ys_test"], strict=True)])
            return Score("test_mse", float(np.mean(err ** 2)))
        signs = problem.info.get("ys_sign_test", problem.info["ys_test"])
        wrong = np.concatenate([np.sign(p) != np.asarray(y) for p, y in
                                zip(preds, signs, strict=True)])
        return Score("test_error", float(np.mean(wrong)))

    def structure(self, problem: Problem, result: Any) -> dict[str, float]:
        """Numerical rank of ``U`` and the number of eigenvalues of ``M`` above 1/2."""
        s = np.linalg.svd(np.asarray(result.U), compute_uv=False)
        w = np.linalg.eigvalsh(np.asarray(result.M))
        return {"rank_U": int(np.sum(s > 1e-6 * max(s.max(initial=0.0), 1e-300))),
                "M_eigs_above_half": int(np.sum(w > 0.5))}


#: The hooks :mod:`explorer.sweep` uses.
HOOKS = CASOHooks()
