"""Sweep hooks of MT-MKL: mean test AUC (the paper's table) and a kernel-weight summary.

Used by :mod:`explorer.sweep`; the datasets carry their own test split, so there is no
cross-validation split.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import Problem
from ...sweep.hooks import ModelHooks, Score
from .metrics import evaluate


class MTMKLHooks(ModelHooks):
    """Mean test AUC on the dataset's own test split; kernel-weight summary."""

    def score(self, problem: Problem, result: Any) -> Score | None:
        """``mean_auc``: task-averaged ROC AUC on the dataset's test split (None without
        one)."""
        if "X_test" not in problem.info:
            return None
        return Score("mean_auc", float(evaluate(result, problem)["mean_auc"]))

    def structure(self, problem: Problem, result: Any) -> dict[str, float]:
        """Largest kernel weight and the effective number of kernels ``(sum t)^2 / sum t^2``."""
        t = np.asarray(result.theta, dtype=float)
        return {"theta_max": float(t.max()),
                "kernels_effective": float(t.sum() ** 2 / max(float(t @ t), 1e-300))}


#: The hooks :mod:`explorer.sweep` uses.
HOOKS = MTMKLHooks()
