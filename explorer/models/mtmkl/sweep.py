"""Sweep hooks of MT-MKL: mean test AUC (the paper's table) and a kernel-weight summary.

Used by :mod:`explorer.sweep`; the datasets carry their own test split, so there is no
cross-validation split.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...registry import Problem
from .metrics import evaluate

#: Name of the held-out score.
SCORE = "mean_auc"


def score(problem: Problem, result: Any) -> float | None:
    """Task-averaged ROC AUC on the dataset's test split (None without one)."""
    if "X_test" not in problem.info:
        return None
    return float(evaluate(result, problem)["mean_auc"])


def structure(problem: Problem, result: Any) -> dict[str, float]:
    """Largest kernel weight and the effective number of kernels ``(sum t)^2 / sum t^2``."""
    t = np.asarray(result.theta, dtype=float)
    return {"theta_max": float(t.max()),
            "kernels_effective": float(t.sum() ** 2 / max(float(t @ t), 1e-300))}
