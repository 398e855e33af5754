"""Figures of the MT-MKL page and notebook (pure functions of the tree and of results).

The task tree is described as in :mod:`explorer.models.mtmkl.data`: ``parent``
(``-1`` at the root), ``leaves_under`` (the tasks below each node), ``depth_of``
(0 at the root) and ``node_names``. One node is one view ``m``: its 0/1
similarity ``G_m`` and its learned weight ``theta_m``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go

from ...figures import COLORS, heatmap, readable

__all__ = [
    "auc_figure",
    "leaf_order",
    "roc_difference_figure",
    "roc_figure",
    "similarity_pair",
    "task_labels",
    "theta_history_figure",
    "tree_figure",
    "tree_layout",
]


def _children(parent: np.ndarray) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in range(len(parent))]
    for k, q in enumerate(parent):
        if q >= 0:
            kids[int(q)].append(k)
    return kids


def leaf_order(parent: npt.ArrayLike, leaves_under: Sequence[np.ndarray], T: int) -> np.ndarray:
    """The tasks in depth-first (dendrogram) order of the tree.

    Sorting the similarity matrices by this order makes every subtree a
    contiguous diagonal block. Tasks that no leaf node names are appended.

    Parameters
    ----------
    parent : sequence of int
        Parent of every node, ``-1`` at the root.
    leaves_under : sequence of arrays
        Tasks below every node.
    T : int
        Number of tasks.

    Returns
    -------
    ndarray of int, shape (T,)
    """
    par = np.asarray(parent)
    kids = _children(par)
    roots = [k for k in range(len(par)) if par[k] < 0]
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        k = stack.pop()
        if not kids[k]:
            order.extend(int(t) for t in leaves_under[k] if int(t) not in order)
        stack.extend(reversed(kids[k]))
    order += [t for t in range(T) if t not in order]
    return np.asarray(order, dtype=np.int64)


def task_labels(leaves_under: Sequence[np.ndarray], names: Sequence[str], T: int) -> list[str]:
    """A label per task: the name of its leaf node (``"task t"`` when there is none)."""
    out = [f"task {t}" for t in range(T)]
    for leaves, name in zip(leaves_under, names, strict=True):
        if len(leaves) == 1:
            out[int(leaves[0])] = str(name)
    return out


def tree_layout(parent: npt.ArrayLike, leaves_under: Sequence[np.ndarray], depth_of: npt.ArrayLike,
                T: int) -> tuple[np.ndarray, np.ndarray]:
    """Node coordinates: x = mean position of the node's leaves, y = minus its depth.

    Leaves are spaced evenly in :func:`leaf_order`, so parents sit above the
    middle of their subtrees.

    Returns
    -------
    x, y : ndarray, shape (n_nodes,)
    """
    pos = np.empty(T)
    pos[leaf_order(parent, leaves_under, T)] = np.arange(T)
    x = np.array([float(pos[np.asarray(lv, dtype=int)].mean()) if len(lv) else 0.0
                  for lv in leaves_under])
    return x, -np.asarray(depth_of, dtype=float)


def tree_figure(parent: npt.ArrayLike, leaves_under: Sequence[np.ndarray],
                depth_of: npt.ArrayLike, theta: np.ndarray, *, p: float,
                names: Sequence[str] | None = None, title: str = "",
                height: int = 440) -> go.Figure:
    """The task tree with every node's weight ``theta_m`` as its size and colour.

    Parameters
    ----------
    parent, leaves_under, depth_of : tree description (see the module docstring)
    theta : ndarray, shape (n_nodes,)
        Node (view) weights, in the order of ``parent``.
    p : float
        The norm of ``||theta||_p <= 1``, printed with the weights: for p > 1
        the weights do not sum to 1.
    names : sequence of str, optional
        Node names for the hover text.
    """
    par = np.asarray(parent)
    theta = np.asarray(theta, dtype=float)
    if theta.shape[0] != par.shape[0]:
        raise ValueError(f"theta has {theta.shape[0]} entries but the tree has "
                         f"{par.shape[0]} nodes")
    T = int(max(int(np.max(lv)) for lv in leaves_under if len(lv)) + 1)
    x, y = tree_layout(par, leaves_under, depth_of, T)
    names = list(names) if names is not None else [f"node {k}" for k in range(len(par))]
    ex, ey = [], []
    for k, q in enumerate(par):
        if q >= 0:
            ex += [x[q], x[k], None]
            ey += [y[q], y[k], None]
    fig = go.Figure(go.Scatter(x=ex, y=ey, mode="lines", hoverinfo="skip", showlegend=False,
                               line={"color": "#bbbbbb", "width": 1}))
    tmax = float(theta.max()) if theta.size and theta.max() > 0 else 1.0
    size = 6 + 26 * np.sqrt(np.clip(theta, 0.0, None) / tmax)
    hover = [f"{names[k]}<br>θ = {theta[k]:.4g}<br>tasks: "
             + ", ".join(str(int(t)) for t in leaves_under[k][:12])
             + (" …" if len(leaves_under[k]) > 12 else "") for k in range(len(par))]
    fig.add_trace(go.Scatter(
        x=x, y=y, mode="markers", showlegend=False, hovertext=hover, hoverinfo="text",
        marker={"size": size, "color": theta, "colorscale": "Viridis", "cmin": 0.0,
                "cmax": tmax, "line": {"color": "black", "width": 0.5},
                "colorbar": {"title": {"text": "θ_m"}, "thickness": 12}},
    ))
    if len(par) <= 31:  # small trees: print the weights
        fig.add_trace(go.Scatter(x=x, y=y - 0.32, mode="text", showlegend=False,
                                 text=[f"{v:.2g}" for v in theta], hoverinfo="skip",
                                 textfont={"size": 10}))
    pn = _pnorm(theta, p)
    head = (f"learned node weights θ (p = {p:g}: ‖θ‖_{p:g} = {pn:.3g}, Σθ = {theta.sum():.3g}, "
            f"{int(np.count_nonzero(theta > 1e-6 * tmax))}/{theta.size} non-zero)")
    fig.update_layout(height=height, title=title or head,
                      margin={"l": 10, "r": 10, "t": 50, "b": 10}, plot_bgcolor="white")
    levels = sorted(set(int(v) for v in np.asarray(depth_of)))
    fig.update_yaxes(tickvals=[-v for v in levels], ticktext=[f"depth {v}" for v in levels],
                     showgrid=False, zeroline=False, range=[min(y) - 0.6, 0.5],
                     title_text="tree level")
    fig.update_xaxes(showticklabels=False, showgrid=False, zeroline=False)
    return readable(fig)


def _pnorm(v: np.ndarray, p: float) -> float:
    v = np.abs(np.asarray(v, dtype=float))
    if v.size == 0 or v.max() == 0:
        return 0.0
    if np.isinf(p):
        return float(v.max())
    return float(v.max() * np.sum((v / v.max()) ** p) ** (1.0 / p))


def similarity_pair(learned: np.ndarray, true: np.ndarray, order: npt.ArrayLike,
                    labels: Sequence[str], *, corr: float | None = None,
                    true_title: str = "true similarity (dot products of the leaves' μ)",
                    height: int = 380) -> tuple[go.Figure, go.Figure]:
    """The learned ``sum_m theta_m G_m`` and the true similarity as heatmaps in one ordering.

    Parameters
    ----------
    learned, true : ndarray, shape (T, T)
    order : sequence of int
        Task order for rows and columns (e.g. :func:`leaf_order`).
    labels : sequence of str
        One label per task (in task-id order).
    corr : float, optional
        Their correlation, printed in the learned map's title.
    """
    idx = np.asarray(order, dtype=int)
    lab = [str(labels[t]) for t in idx]
    extra = "" if corr is None or not np.isfinite(corr) else f", corr. with true {corr:.3f}"
    a = heatmap(np.asarray(learned)[np.ix_(idx, idx)], x=lab, y=lab,
                colorscale="Viridis", zmid=None,
                title=f"learned similarity Σ θ_m G_m{extra}", height=height)
    b = heatmap(np.asarray(true)[np.ix_(idx, idx)], x=lab, y=lab, colorscale="Viridis",
                zmid=None, title=true_title, height=height)
    # every task labelled up to 32 tasks, every step-th one beyond (small, rotated on x)
    step = max(1, -(-len(lab) // 32))
    ticks = {"tickmode": "array", "tickvals": list(lab[::step]), "ticktext": list(lab[::step]),
             "tickfont": {"size": 8 if len(lab) > 16 else 10}, "type": "category"}
    for f in (a, b):
        f.update_xaxes(title_text="task", tickangle=-90, **ticks)
        f.update_yaxes(title_text="task", **ticks)
    return a, b


def theta_history_figure(history: Any, depth_of: npt.ArrayLike,
                         names: Sequence[str] | None = None, *, p: float | None = None,
                         height: int = 340) -> go.Figure:
    """``theta_m`` per outer iteration, one line per node, coloured by its depth in the tree.

    Epochs where the theta-step was taken (``history.theta_step``) are marked on the x axis.
    """
    th = np.asarray(history.theta, dtype=float)
    if th.ndim == 1:
        th = th[:, None]
    it = np.asarray(history.iteration)
    depth = np.asarray(depth_of)
    names = list(names) if names is not None else [f"node {k}" for k in range(th.shape[1])]
    fig = go.Figure()
    seen: set[int] = set()
    for m in range(th.shape[1]):
        lev = int(depth[m]) if m < depth.size else 0
        fig.add_trace(go.Scatter(
            x=it, y=th[:, m], mode="lines", name=f"depth {lev}", legendgroup=f"d{lev}",
            showlegend=lev not in seen, hovertext=names[m], hoverinfo="text+x+y",
            line={"color": COLORS["series"][lev % 10], "width": 1.2},
        ))
        seen.add(lev)
    steps = np.asarray(getattr(history, "theta_step", np.zeros(it.size)), dtype=bool)
    if steps.any():
        fig.add_trace(go.Scatter(x=it[steps], y=np.zeros(int(steps.sum())), mode="markers",
                                 name="θ-step taken", marker={"symbol": "triangle-up",
                                                              "color": "black", "size": 6}))
    fig.update_xaxes(title_text="outer iteration (epoch for E.1)")
    fig.update_yaxes(title_text="θ_m" + (f"  (‖θ‖_{p:g} = 1)" if p is not None else ""))
    fig.update_layout(height=height, title="node weights over the iterations",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return readable(fig)


def roc_figure(runs: Mapping[str, Mapping[str, Any]], *, height: int = 420) -> go.Figure:
    """Mean (task-averaged) ROC curves, the mean AUC in each legend entry.

    ``runs`` maps a method label to a dict with ``fpr``, ``tpr`` and ``mean_auc``
    (as :func:`explorer.models.mtmkl.metrics.evaluate` returns).
    """
    fig = go.Figure()
    for i, (label, v) in enumerate(runs.items()):
        fig.add_trace(go.Scatter(x=v["fpr"], y=v["tpr"], mode="lines",
                                 name=f"{label} (AUC {v['mean_auc']:.4f})",
                                 line={"color": COLORS["series"][i % 10]}))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="chance",
                             line={"color": "#999999", "dash": "dot"}))
    fig.update_xaxes(title_text="false positive rate", range=[0, 1])
    fig.update_yaxes(title_text="true positive rate (mean over tasks)", range=[0, 1])
    fig.update_layout(height=height, title="mean ROC on held-out data",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"x": 0.55, "y": 0.05})
    return readable(fig)


def roc_difference_figure(runs: Mapping[str, Mapping[str, Any]], baseline: str = "Union", *,
                          height: int = 320) -> go.Figure:
    """Each method's mean ROC minus the ``baseline``'s: the small differences made visible."""
    base = np.asarray(runs[baseline]["tpr"], dtype=float)
    fig = go.Figure()
    for i, (label, v) in enumerate(runs.items()):
        fig.add_trace(go.Scatter(x=v["fpr"], y=np.asarray(v["tpr"], dtype=float) - base,
                                 mode="lines", name=label,
                                 line={"color": COLORS["series"][i % 10],
                                       "dash": "dot" if label == baseline else None}))
    fig.update_xaxes(title_text="false positive rate", range=[0, 1])
    fig.update_yaxes(title_text=f"TPR − TPR({baseline})", zeroline=True)
    fig.update_layout(height=height, title=f"mean ROC minus {baseline}'s",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return readable(fig)


def auc_figure(runs: Mapping[str, Mapping[str, Any]], *, height: int = 420) -> go.Figure:
    """Per-task test AUC of every method (box and points), the mean as a diamond."""
    fig = go.Figure()
    for i, (label, v) in enumerate(runs.items()):
        aucs = np.asarray(v["aucs"], dtype=float)
        aucs = aucs[np.isfinite(aucs)]
        c = COLORS["series"][i % 10]
        fig.add_trace(go.Box(y=aucs, name=label, boxpoints="all", jitter=0.4, pointpos=0,
                             marker={"color": c, "size": 4}, line={"color": c},
                             showlegend=False))
        fig.add_trace(go.Scatter(x=[label], y=[float(np.mean(aucs)) if aucs.size else np.nan],
                                 mode="markers", showlegend=False, hoverinfo="y",
                                 marker={"symbol": "diamond", "size": 11, "color": "black"}))
    fig.add_hline(y=0.5, line_dash="dot", line_color="#999999")
    fig.update_yaxes(title_text="test AUC per task")
    fig.update_layout(height=height, title="AUC per task (◆ mean)",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return readable(fig)
