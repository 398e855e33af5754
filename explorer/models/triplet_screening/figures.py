"""Figures of the safe triplet screening page (pure functions of data, results and paths).

Status codes follow :meth:`solvers.triplet_screening.TripletResult.status`:
0 still active, 1 screened into L-hat (margin certified below ``1 - gamma``:
linear loss, ``alpha = 1``), 2 screened into R-hat (margin certified above 1:
zero loss, ``alpha = 0``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...figures import COLORS, heatmap, lines_figure, readable

__all__ = [
    "CLASS_COLORS",
    "STATUS",
    "coincident",
    "dynamic_heatmap",
    "embedding",
    "path_rates_figure",
    "path_time_figure",
    "radii_figure",
    "range_heatmap",
    "status_counts",
    "status_counts_figure",
    "triplet_map_figure",
]

#: (code, label, colour) of the three triplet states, in drawing order.
STATUS = (
    (1, "screened into L̂ (loss linear, α = 1)", "#d62728"),
    (2, "screened into R̂ (zero loss, α = 0)", "#1f77b4"),
    (0, "still active", "#444444"),
)
#: Light class colours (the strong colours are reserved for the triplet states).
CLASS_COLORS = ["#fdb462", "#b3de69", "#bebada", "#80b1d3", "#fccde5", "#8dd3c7",
                "#ffed6f", "#bc80bd", "#ccebc5", "#d9d9d9"]
#: One colour per sphere (same on every figure).
SPHERE_COLORS = {"gb": "#7f7f7f", "pgb": "#ff7f0e", "dgb": "#2ca02c", "cdgb": "#9467bd",
                 "rpb": "#8c564b", "rrpb": "#1f77b4", "rrpb-range": "#17becf"}
RULE_DASH = {"sphere": "solid", "linear": "dash", "sdls": "dot"}


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(height=height, title=title or None,
                      margin={"l": 10, "r": 10, "t": 40 if title else 20, "b": 10})
    return readable(fig)


def _lam_axis(fig: go.Figure, **kw: Any) -> None:
    """λ/λ_max on a log axis, decreasing to the right (the path's direction)."""
    fig.update_xaxes(type="log", autorange="reversed", title_text="λ / λ_max",
                     exponentformat="power", **kw)


# ----------------------------------------------------------------------------- one solve


def embedding(M: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``X L`` with ``M = L L^T`` on the two strongest directions of ``M``.

    Parameters
    ----------
    M : ndarray, shape (d, d) or (d,)
        The learned PSD metric, or a nonnegative diagonal.
    X : ndarray, shape (n, d)

    Returns
    -------
    Z : ndarray, shape (n, 2)
        Coordinates whose Euclidean distances are the metric's distances restricted
        to its top-2 eigendirections.
    share : ndarray, shape (2,)
        Fraction of ``trace(M)`` carried by each of the two directions.
    """
    M = np.asarray(M, dtype=float)
    X = np.asarray(X, dtype=float)
    if M.ndim == 1:
        w = np.maximum(M, 0.0)
        order = np.argsort(w)[::-1][:2]
        Z = X[:, order] * np.sqrt(w[order])
    else:
        w, V = np.linalg.eigh(0.5 * (M + M.T))
        w = np.maximum(w, 0.0)
        order = np.argsort(w)[::-1][:2]
        Z = X @ (V[:, order] * np.sqrt(w[order]))
    if Z.shape[1] < 2:
        Z = np.column_stack([Z, np.zeros(X.shape[0])])
    tr = float(np.sum(w))
    share = np.zeros(2)
    share[: order.size] = w[order] / tr if tr > 0 else 0.0
    return Z, share


def _sample(idx: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    if idx.size <= cap:
        return idx
    return np.sort(rng.choice(idx, size=cap, replace=False))


def triplet_map_figure(M: np.ndarray, X: np.ndarray, y: np.ndarray, T: np.ndarray,
                       status: np.ndarray, *, per_status: int = 30, seed: int = 0,
                       height: int = 520, class_names: Any = None) -> go.Figure:
    """The data under the learned metric with a capped sample of triplets by status.

    Each drawn triplet ``(i, j, l)`` is a path ``x_j — x_i — x_l`` through its anchor:
    solid to the same-class point ``j`` (pulled in), dotted to the other-class point
    ``l`` (pushed out), coloured by its screening status. At most ``per_status``
    triplets of each status are drawn (a fixed random sample). ``class_names``: the
    file's class values (``class_names[code]``), else the codes.
    """
    Z, share = embedding(M, X)
    y = np.asarray(y)
    T = np.asarray(T)
    status = np.asarray(status)
    rng = np.random.default_rng(seed)
    fig = go.Figure()
    classes = np.unique(y)
    for c_i, c in enumerate(classes):
        m = y == c
        if class_names is not None and 0 <= int(c) < len(class_names):
            v = class_names[int(c)]
            c = v.item() if isinstance(v, np.generic) else v
        fig.add_trace(go.Scatter(
            x=Z[m, 0], y=Z[m, 1], mode="markers", name=f"class {c}",
            marker={"color": CLASS_COLORS[c_i % len(CLASS_COLORS)], "size": 8,
                    "line": {"color": "#888", "width": 0.5}},
            legendgroup="classes", hovertemplate=f"class {c}<extra></extra>"))
    counts = {}
    for code, label, color in STATUS:
        idx = np.flatnonzero(status == code)
        counts[code] = idx.size
        pick = _sample(idx, per_status, rng)
        if pick.size == 0:
            continue
        i, j, lo = T[pick, 0], T[pick, 1], T[pick, 2]
        nan = np.full(pick.size, np.nan)
        for part, other, dash in ((j, "same", "solid"), (lo, "other", "dot")):
            xs = np.column_stack([Z[i, 0], Z[part, 0], nan]).ravel()
            ys = np.column_stack([Z[i, 1], Z[part, 1], nan]).ravel()
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines", name=f"{label} ({idx.size:,})",
                legendgroup=f"s{code}", showlegend=other == "same",
                line={"color": color, "width": 1.2, "dash": dash}, opacity=0.75,
                hoverinfo="skip"))
        fig.add_trace(go.Scatter(
            x=Z[i, 0], y=Z[i, 1], mode="markers", legendgroup=f"s{code}", showlegend=False,
            marker={"color": color, "size": 5, "symbol": "circle"}, hoverinfo="skip"))
    n_t = status.size
    title = f"triplets under the learned metric ({min(per_status, n_t)} per status drawn)"
    fig.update_xaxes(title_text=f"direction 1 ({share[0]:.0%} of tr M)", zeroline=False)
    fig.update_yaxes(title_text=f"direction 2 ({share[1]:.0%} of tr M)", zeroline=False,
                     scaleanchor="x")
    fig.update_layout(legend={"orientation": "h", "y": -0.15})
    return _layout(fig, title, height)


def status_counts(history: Any) -> dict[str, np.ndarray]:
    """Screened / active counts per certified iteration from a result's history."""
    nL = np.asarray(history.n_L, dtype=float)
    nR = np.asarray(history.n_R, dtype=float)
    un = np.asarray(history.n_unscreened, dtype=float)
    out = {STATUS[0][1]: nL, STATUS[1][1]: nR}
    work = np.asarray(history.n_work, dtype=float)
    if np.any(work < un):  # active-set heuristic: some unscreened triplets sit outside
        out["active (working set)"] = work
        out["unscreened, outside the active set"] = un - work
    else:
        out[STATUS[2][1]] = un
    return out


def status_counts_figure(history: Any, n_triplets: int, height: int = 340) -> go.Figure:
    """Stacked counts of screened-into-L̂, screened-into-R̂ and active triplets per iteration."""
    series = status_counts(history)
    fig = lines_figure(history.iteration, series, xlabel="iteration", ylabel="triplets",
                       stacked=True, height=height,
                       title=f"triplet status per iteration ({n_triplets:,} in all)")
    colors = [STATUS[0][2], STATUS[1][2], STATUS[2][2], "#bbbbbb"]
    for tr, col in zip(fig.data, colors, strict=False):
        tr.line.color = col
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return readable(fig, legend_width=24)  # drawn in the page's narrow right column


def radii_figure(log: Mapping[str, np.ndarray], history: Any, lam: float,
                 height: int = 340) -> go.Figure:
    """Radius of every sphere at each screening round, and the certified radius per iteration.

    The line is ``sqrt(2 gap / λ)`` from the history: the DGB radius, which RRPB with
    ``λ1 = λ0`` equals; markers are the radii the screening rounds used (at iteration 0
    RRPB is built from the previous λ's solution when the solve is warm-started).
    """
    fig = go.Figure()
    it = np.asarray(history.iteration)
    gap = np.maximum(np.asarray(history.gap, dtype=float), 0.0)
    r = np.sqrt(2.0 * gap / lam)
    fig.add_trace(go.Scatter(x=it, y=np.where(r > 0, r, np.nan), mode="lines",
                             name="√(2 gap / λ) (DGB = RRPB with λ₁ = λ₀)",
                             line={"color": COLORS["gap"], "width": 1.5}))
    if log and len(log.get("sphere", ())):
        spheres = np.asarray(log["sphere"]).astype(str)
        radius = np.asarray(log["radius"], dtype=float)
        its = np.asarray(log["iteration"])
        for kind in dict.fromkeys(spheres):
            m = (spheres == kind) & np.isfinite(radius) & (radius > 0)
            if not m.any():
                continue
            fig.add_trace(go.Scatter(
                x=its[m], y=radius[m], mode="markers+lines", name=f"{kind.upper()} radius",
                marker={"size": 9, "color": SPHERE_COLORS.get(kind, "#000")},
                line={"dash": "dot", "color": SPHERE_COLORS.get(kind, "#000")}))
    fig.update_yaxes(type="log", exponentformat="power", title_text="radius (Frobenius)")
    fig.update_xaxes(title_text="iteration")
    fig.update_layout(legend={"orientation": "h", "y": -0.25})
    return readable(_layout(fig, "sphere radii per screening round", height), legend_width=24)


# ----------------------------------------------------------------------------- the path


def path_rates_figure(lam_rel: np.ndarray, compare: Mapping[str, np.ndarray],
                      used: Mapping[str, np.ndarray] | None = None, *,
                      height: int = 400) -> go.Figure:
    """Figures 4–5 (top): regularisation-path screening rate per λ, per sphere and rule.

    One panel per rule, one colour per sphere.

    Parameters
    ----------
    lam_rel : ndarray
        ``λ / λ_max`` of each path point.
    compare : mapping
        ``"sphere:rule"`` -> fraction screened by that sphere and rule alone at the
        start of each λ (NaN where undefined, e.g. at λ_max).
    used : mapping, optional
        Extra named series drawn in every panel (e.g. the rates the solver reached
        with its own spheres).
    """
    x = np.asarray(lam_rel, dtype=float)
    rules = list(dict.fromkeys(k.partition(":")[2] for k in compare)) or ["sphere"]
    fig = make_subplots(rows=1, cols=len(rules), shared_yaxes=True,
                        subplot_titles=[f"{r} rule" for r in rules],
                        horizontal_spacing=0.04)
    for key, v in compare.items():
        kind, _, rule = key.partition(":")
        col = rules.index(rule) + 1
        fig.add_trace(go.Scatter(
            x=x, y=np.asarray(v, dtype=float), mode="lines", name=kind.upper(),
            legendgroup=kind, showlegend=col == 1,
            line={"color": SPHERE_COLORS.get(kind, "#000"), "width": 1.8,
                  "dash": "dash" if kind == "rpb" else "solid"}), row=1, col=col)
    symbols = ["x", "circle-open"]
    for i, (name, v) in enumerate((used or {}).items()):
        for col in range(1, len(rules) + 1):
            fig.add_trace(go.Scatter(
                x=x, y=np.asarray(v, dtype=float), mode="markers", name=name,
                legendgroup=name, showlegend=col == 1,
                marker={"size": 6, "color": "black", "symbol": symbols[i % 2]}),
                row=1, col=col)
    _lam_axis(fig)
    fig.update_xaxes(title_text="λ / λ_max")
    fig.update_yaxes(range=[-0.02, 1.02])
    fig.update_yaxes(title_text="screening rate", row=1, col=1)
    fig.update_layout(legend={"orientation": "h", "y": -0.22})
    _layout(fig, "regularisation-path screening rate (paper's Figs. 4–5)", height)
    fig.update_layout(margin={"t": 70})
    return readable(fig)


def coincident(series: Mapping[str, np.ndarray], rtol: float = 1e-9) -> list[list[str]]:
    """Groups of series that are identical (NaN-aware): curves hidden under each other."""
    keys = list(series)
    seen: set[str] = set()
    out = []
    for a_i, a in enumerate(keys):
        if a in seen:
            continue
        va = np.asarray(series[a], dtype=float)
        group = [a]
        for b in keys[a_i + 1:]:
            vb = np.asarray(series[b], dtype=float)
            if b not in seen and va.shape == vb.shape and np.allclose(
                    va, vb, rtol=rtol, atol=0.0, equal_nan=True):
                group.append(b)
                seen.add(b)
        if len(group) > 1:
            out.append(group)
    return out


def _tick(v: float) -> str:
    return f"{v:.2g}"


def range_heatmap(rate: np.ndarray, lam_rel: np.ndarray, height: int = 420) -> go.Figure:
    """Figure 6: range-based screening rate at λ (rows) from the reference at λ0 (columns)."""
    labels = [_tick(v) for v in lam_rel]
    fig = heatmap(rate, x=labels, y=labels, colorscale="Viridis", zmid=None, zmin=0.0,
                  zmax=1.0, xlabel="reference λ0 / λ_max", ylabel="λ / λ_max",
                  title="range-based screening rate (paper's Fig. 6)", height=height)
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category")
    return readable(fig)


def dynamic_heatmap(dynamic: np.ndarray, lam_rel: np.ndarray, height: int = 320) -> go.Figure:
    """Figure 5 (left): screening rate after each dynamic round (rows) for each λ."""
    D = np.asarray(dynamic, dtype=float)
    fig = heatmap(D.T if D.size else np.zeros((1, len(lam_rel))),
                  x=[_tick(v) for v in lam_rel],
                  y=[str(10 * (k + 1)) for k in range(max(D.shape[1] if D.ndim == 2 else 1,
                                                          1))],
                  colorscale="Viridis", zmid=None, zmin=0.0, zmax=1.0,
                  xlabel="λ / λ_max", ylabel="iteration of the round",
                  title="dynamic screening rate per round (paper's Fig. 5)", height=height)
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="category", autorange=True)
    return readable(fig)


def path_time_figure(lam_rel: Sequence[float] | np.ndarray,
                     times: Mapping[str, np.ndarray], *, ratio_to: str | None = None,
                     height: int = 360) -> go.Figure:
    """Seconds per λ along the path for several methods (or their ratio to one of them)."""
    x = np.asarray(lam_rel, dtype=float)
    if ratio_to is not None:
        base = np.asarray(times[ratio_to], dtype=float)
        n = base.size
        series = {k: np.asarray(v, dtype=float)[:n] / base[: len(v)]
                  for k, v in times.items() if k != ratio_to}
        title, ylabel = f"time per λ relative to {ratio_to}", f"time / time of {ratio_to}"
    else:
        series = {k: np.asarray(v, dtype=float) for k, v in times.items()}
        title, ylabel = "seconds per λ along the path", "seconds"
    n = min([x.size] + [v.size for v in series.values()])
    fig = lines_figure(x[:n], {k: v[:n] for k, v in series.items()}, xlabel="λ / λ_max",
                       ylabel=ylabel, log_y=True, title=title, height=height)
    order = list(times)
    for tr in fig.data:  # the same colour for a method in both views
        tr.line.color = COLORS["series"][order.index(tr.name) % 10]
    _lam_axis(fig)
    fig.update_layout(legend={"orientation": "h", "y": -0.3})
    if ratio_to is not None:
        fig.add_hline(y=1.0, line_dash="dash", line_color=COLORS["reference"])
    return readable(fig)
