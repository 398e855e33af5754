"""Evaluation of MT-MKL runs: ROC / AUC per task and averaged, similarity agreement."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["FPR_GRID", "evaluate", "mean_roc", "similarity_correlation", "task_aucs"]

#: Common false-positive-rate grid of the task-averaged ROC curve.
FPR_GRID = np.linspace(0.0, 1.0, 201)


def task_aucs(scores: np.ndarray, y: np.ndarray, tasks: np.ndarray, T: int) -> np.ndarray:
    """ROC AUC of every task (``nan`` for a task whose test set lacks a class)."""
    from sklearn.metrics import roc_auc_score

    out = np.full(T, np.nan)
    for t in range(T):
        sel = tasks == t
        if np.unique(y[sel]).size == 2:
            out[t] = roc_auc_score(y[sel], scores[sel])
    return out


def mean_roc(scores: np.ndarray, y: np.ndarray, tasks: np.ndarray, T: int,
             grid: np.ndarray = FPR_GRID) -> np.ndarray:
    """Task-averaged ROC curve: each task's TPR interpolated on ``grid`` (vertical averaging)."""
    from sklearn.metrics import roc_curve

    curves = []
    for t in range(T):
        sel = tasks == t
        if np.unique(y[sel]).size < 2:
            continue
        fpr, tpr, _ = roc_curve(y[sel], scores[sel])
        curves.append(np.interp(grid, fpr, tpr))
    tpr = np.mean(curves, axis=0) if curves else np.full(grid.shape, np.nan)
    tpr[0] = 0.0 if curves else tpr[0]
    return tpr


def similarity_correlation(learned: np.ndarray, true: np.ndarray) -> float:
    """Pearson correlation of the off-diagonal entries of two task-similarity matrices."""
    iu = np.triu_indices(learned.shape[0], k=1)
    a, b = learned[iu], true[iu]
    if a.size < 2 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def evaluate(result: Any, problem: Any) -> dict[str, Any]:
    """Test-set scores of a linear-feature result on a problem with a test split.

    Returns ``aucs`` (per task), ``mean_auc``, ``fpr`` / ``tpr`` (mean ROC) and
    ``similarity_corr`` (learned ``sum_m theta_m G_m`` against the problem's
    reference similarity; only meaningful when the run used the problem's G).
    """
    info = problem.info
    T = int(info["T"])
    scores = result.decision_function(info["X_test"], info["tasks_test"])
    aucs = task_aucs(scores, info["y_test"], info["tasks_test"], T)
    out = {
        "aucs": aucs,
        "mean_auc": float(np.nanmean(aucs)),
        "fpr": FPR_GRID,
        "tpr": mean_roc(scores, info["y_test"], info["tasks_test"], T),
        "similarity_corr": float("nan"),
    }
    if "true_similarity" in info and result.similarity.shape == info["true_similarity"].shape:
        out["similarity_corr"] = similarity_correlation(result.similarity,
                                                        info["true_similarity"])
    return out
