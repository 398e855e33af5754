"""Held-out scores, one set per kind of model, the same names everywhere.

================== ============================================================
kind               scores (name: meaning)
================== ============================================================
``classification`` ``accuracy``, ``balanced_accuracy`` (mean per-class recall)
``regression``     ``mse``, ``mae``, ``r2``
``metric``         ``nn_accuracy`` (label of the nearest training point in the
                   learned metric), ``balanced_accuracy``
================== ============================================================

A saved model's kind is :attr:`solvers.saved.SavedModel.kind` (its model's
:class:`~solvers.saved.SavedForm` says it); :func:`score_predictions` scores its
predictions against the true labels (class names compared as the user's values, so
``3``, ``3.0`` and ``"3"`` agree). Used by ``dualscope solve --test/--test-size``,
``dualscope predict`` and the pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["KINDS", "Score", "score_predictions"]

KINDS = ("classification", "regression", "metric")


@dataclass(frozen=True)
class Score:
    """One held-out score: its name and value.

    Attributes
    ----------
    name : str
        ``accuracy``, ``balanced_accuracy``, ``mse``, ``mae``, ``r2`` or ``nn_accuracy``.
    value : float
        The score.
    """

    name: str
    value: float

    def __str__(self) -> str:
        return f"{self.name} {self.value:.6g}"


def _label(v: Any) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v)


def score_predictions(kind: str, y_true: Any, y_pred: Any) -> tuple[Score, ...]:
    """The scores of ``kind`` (see the module docstring) of ``y_pred`` against ``y_true``.

    Parameters
    ----------
    kind : {"classification", "regression", "metric"}
        The kind of model (:attr:`solvers.saved.SavedModel.kind`).
    y_true, y_pred : array-like
        The held-out labels and the predictions, one per row.

    Returns
    -------
    tuple of Score
        The kind's scores, the first one the headline (``accuracy``, ``mse`` or
        ``nn_accuracy``).

    Examples
    --------
    >>> from solvers.scoring import score_predictions
    >>> [str(s) for s in score_predictions("classification", ["a", "b", "b"], ["a", "b", "a"])]
    ['accuracy 0.666667', 'balanced_accuracy 0.75']
    """
    from sklearn import metrics

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    yt, yp = np.asarray(y_true).ravel(), np.asarray(y_pred).ravel()
    if yt.shape != yp.shape:
        raise ValueError(f"y_true has {yt.size} entries, y_pred {yp.size}")
    if kind == "regression":
        t, p = yt.astype(np.float64), yp.astype(np.float64)
        return (Score("mse", float(metrics.mean_squared_error(t, p))),
                Score("mae", float(metrics.mean_absolute_error(t, p))),
                Score("r2", float(metrics.r2_score(t, p)) if t.size > 1 else float("nan")))
    t = np.asarray([_label(v) for v in yt])
    p = np.asarray([_label(v) for v in yp])
    first = "nn_accuracy" if kind == "metric" else "accuracy"
    import warnings

    with warnings.catch_warnings():  # a class absent from y_true: its recall is not counted
        warnings.simplefilter("ignore")
        bal = float(metrics.balanced_accuracy_score(t, p))
    return (Score(first, float(np.mean(t == p))), Score("balanced_accuracy", bal))
