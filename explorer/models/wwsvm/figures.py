"""Figures of the Weston–Watkins SVM page (pure functions of data and results)."""

from __future__ import annotations

from typing import Any

import numpy as np
import plotly.graph_objects as go

from ...figures import COLORS, bar_series, heatmap, lines_figure, readable

__all__ = ["confusion_figure", "decision_regions", "dual_counts_figure", "violations_figure"]


def _offsets(W: np.ndarray, intercept: np.ndarray | None) -> np.ndarray:
    return np.zeros(W.shape[1]) if intercept is None else np.asarray(intercept, dtype=float)


def decision_regions(W: np.ndarray, X: np.ndarray, y: np.ndarray, alpha: np.ndarray | None = None,
                     *, intercept: np.ndarray | None = None, resolution: int = 160,
                     height: int = 460, class_names: Any = None,
                     feature_names: Any = None) -> go.Figure:
    """Class regions ``argmax_j (x^T w_j + b_j)`` over the data's bounding box (2-D only).

    ``intercept``: the offsets ``b`` (none: the paper's model, every boundary passes
    through the origin). Support vectors (any ``alpha_ij > 0``) have a black outline.
    ``class_names`` / ``feature_names``: a file's names for the legend and the axes.
    """
    if X.shape[1] != 2:
        raise ValueError("decision regions need 2-D data")
    k = W.shape[1]
    labels = _class_labels(k, class_names)
    axes = [str(v) for v in feature_names] if feature_names is not None and \
        len(feature_names) == 2 else ["x1", "x2"]
    pad = 0.1 * (X.max(axis=0) - X.min(axis=0) + 1e-9)
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    gx = np.linspace(lo[0], hi[0], resolution)
    gy = np.linspace(lo[1], hi[1], resolution)
    GX, GY = np.meshgrid(gx, gy)
    b = _offsets(W, intercept)
    Z = np.argmax(np.column_stack([GX.ravel(), GY.ravel()]) @ W + b, axis=1).reshape(GX.shape)
    colors = COLORS["series"]
    scale = []
    for j in range(k):
        c = colors[j % 10]
        scale += [[j / k, c], [(j + 1) / k, c]]
    fig = go.Figure(go.Heatmap(x=gx, y=gy, z=Z, colorscale=scale, zmin=-0.5, zmax=k - 0.5,
                               opacity=0.25, showscale=False, hoverinfo="skip"))
    sv = np.zeros(X.shape[0], dtype=bool) if alpha is None else alpha.max(axis=1) > 0
    for j in range(k):
        m = y == j
        fig.add_trace(go.Scatter(
            x=X[m, 0], y=X[m, 1], mode="markers", name=f"class {labels[j]}",
            marker={"color": colors[j % 10], "size": 7,
                    "line": {"color": np.where(sv[m], "black", "white").tolist(),
                             "width": np.where(sv[m], 1.5, 0.5).tolist()}},
        ))
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      title=f"decision regions ({int(sv.sum())} support vectors outlined"
                            + ("" if intercept is None or not np.any(b) else ", with offsets")
                            + ")")
    fig.update_xaxes(range=[lo[0], hi[0]], title_text=axes[0])
    fig.update_yaxes(range=[lo[1], hi[1]], title_text=axes[1], scaleanchor="x")
    return readable(fig)


def _class_labels(k: int, names: Any) -> list[str]:
    """The class names (the file's values) or the codes ``0..k-1``."""
    if names is None or len(names) != k:
        return [str(j) for j in range(k)]
    return [str(v.item() if isinstance(v, np.generic) else v) for v in names]


def confusion_figure(W: np.ndarray, X: np.ndarray, y: np.ndarray, height: int = 380, *,
                     intercept: np.ndarray | None = None, class_names: Any = None
                     ) -> go.Figure:
    """Training confusion matrix (rows: true class, columns: predicted), the axes labelled
    with ``class_names`` (the file's values) when given."""
    k = W.shape[1]
    pred = np.argmax(np.asarray(X @ W) + _offsets(W, intercept), axis=1)
    Cm = np.zeros((k, k), dtype=int)
    np.add.at(Cm, (y, pred), 1)
    acc = float(np.trace(Cm)) / max(1, len(y))
    labels = _class_labels(k, class_names)
    return heatmap(Cm, x=labels, y=labels,
                   colorscale="Blues", zmid=None, zmin=0, xlabel="predicted", ylabel="true",
                   text_auto=True, title=f"training confusion matrix (accuracy {acc:.3f})",
                   height=height)


def violations_figure(W: np.ndarray, X: np.ndarray, y: np.ndarray, *,
                      intercept: np.ndarray | None = None, class_names: Any = None
                      ) -> go.Figure:
    """Per true class: margin-violating pairs (hinge > 0) and their mean hinge loss."""
    k = W.shape[1]
    S = np.asarray(X @ W) + _offsets(W, intercept)
    n = X.shape[0]
    H = np.maximum(0.0, 1.0 - (S[np.arange(n), y][:, None] - S))
    H[np.arange(n), y] = 0.0
    counts = [int(np.count_nonzero(H[y == j])) for j in range(k)]
    mean = [float(H[y == j].sum() / max(1, np.count_nonzero(H[y == j]))) for j in range(k)]
    fig = bar_series(_class_labels(k, class_names),
                     {"violated pairs (j != y_i)": counts, "mean hinge of violated": mean},
                     title="margin violations per true class",
                     ylabel="pairs / mean hinge")
    fig.update_xaxes(title_text="true class")
    return fig


def dual_counts_figure(history) -> go.Figure:
    """Dual variables at 0, free (strictly inside), and at C, per epoch."""
    return lines_figure(history.iteration,
                        {"at 0": history.n_zero, "free": history.n_free,
                         "at C": history.n_at_C},
                        xlabel="epoch", ylabel="dual variables", stacked=True,
                        title="dual variables at 0 / free / at C")
