"""Shared plotly figure builders: pure functions of results and histories.

Model-specific figures live in ``explorer/models/<model>/figures.py`` and use
these for the common panels (convergence, method comparison, heatmaps,
spectra). Nothing here touches Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import SimpleNamespace
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = [
    "BELOW_PRECISION",
    "COLORS",
    "bar_series",
    "comparison_figure",
    "convergence_figure",
    "decimate",
    "gap_floor",
    "heatmap",
    "lines_figure",
    "readable",
    "spectrum_figure",
    "wrap_title",
]

def _notebook_renderer() -> None:
    """In a Jupyter kernel, render figures as plotly JSON *and* self-contained HTML.

    JupyterLab draws the JSON (``plotly_mimetype``); ``nbconvert --to html`` and other
    viewers without the plotly extension use the HTML, which embeds plotly.js once per
    notebook (``notebook``: works offline, no CDN). Skipped when the user chose a
    renderer (``PLOTLY_RENDERER``) or outside a kernel.
    """
    import os
    import sys

    if os.environ.get("PLOTLY_RENDERER") or "ipykernel" not in sys.modules:
        return
    import plotly.io as pio

    pio.renderers.default = "plotly_mimetype+notebook"


_notebook_renderer()

#: Characters per line of a chart title (a chart in a half-width column at 800 px).
TITLE_CHARS = 28


def wrap_title(text: str, width: int = TITLE_CHARS) -> str:
    """``text`` broken into lines of at most ``width`` characters (plotly ``<br>``).

    Plotly does not wrap titles: a long one runs past a narrow chart and is cut.
    Existing ``<br>`` breaks are kept; a single word longer than ``width`` stays whole.
    """
    if not text or len(text) <= width:
        return text
    if "<br>" in text:
        return "<br>".join(wrap_title(part, width) for part in text.split("<br>"))
    lines: list[str] = []
    line = ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "<br>".join(lines)


def readable(fig: go.Figure, width: int = TITLE_CHARS,
             legend_width: int | None = None) -> go.Figure:
    """Wrap the figure's title and subplot titles so nothing is cut on a narrow screen.

    The top margin grows with the title's lines; subplot titles of a grid with several
    columns wrap at a proportionally shorter width; with ``legend_width``, trace names
    (legend entries) longer than that wrap too (for charts in a narrow column). Returns
    ``fig`` (changed in place).
    """
    subtitles = [a for a in fig.layout.annotations or ()
                 if a.showarrow is False and a.yanchor == "bottom" and a.xref == "paper"
                 and a.yref == "paper" and a.text]
    cols = len({round(float(a.x), 2) for a in subtitles if a.x is not None}) or 1
    sub_lines = 0
    for ann in subtitles:
        ann.text = wrap_title(ann.text, 2 * width if cols == 1 else max(24, width // cols))
        ann.font.size = 13
        if float(ann.y or 0) >= 0.99:  # a title above the top row
            sub_lines = max(sub_lines, ann.text.count("<br>") + 1)
    if legend_width:  # long legend entries (a horizontal legend does not wrap them)
        for tr in fig.data:
            name = getattr(tr, "name", None)
            if name and len(name) > legend_width:
                tr.name = wrap_title(name, legend_width)
    title = fig.layout.title.text
    if title:
        wrapped = wrap_title(title, width)
        lines = wrapped.count("<br>") + 1
        # the title's lines, and the top row's subplot titles below them, in the margin
        top = 12 + 19 * lines + 17 * sub_lines
        # plotly puts a top-anchored title's first line ~13 px above the anchor (font
        # 14), the other lines below it: the anchor 19 px down starts the text at ~6 px
        height = float(fig.layout.height or 450)
        fig.update_layout(title={"text": wrapped, "font": {"size": 14}, "yref": "container",
                                 "y": 1.0 - 19.0 / height, "yanchor": "top"},
                          margin={"t": max(fig.layout.margin.t or 0, top)})
    return fig


#: One colour per role, used consistently across pages (a list of colours for a palette).
COLORS: dict[str, Any] = {
    "primal": "#1f77b4",
    "dual": "#ff7f0e",
    "gap": "#2ca02c",
    "reference": "#d62728",
    "series": ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
               "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"],
}


#: histories longer than this are drawn decimated (the browser's drawing time grows
#: with the points; a gap curve needs a few hundred to look the same)
MAX_POINTS = 400


def decimate(history: Any, max_points: int = MAX_POINTS,
             extra: Sequence[str] = ()) -> Any:
    """A light view of a history for drawing: at most ``max_points`` rows.

    Keeps the first and the last row and evenly spaced rows in between; the columns
    iteration, time, primal, dual, gap (and ``extra``) are sliced alike. Short
    histories are returned unchanged.
    """
    it = np.asarray(history.iteration)
    n = it.size
    if n <= max_points:
        return history
    idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(int))
    out = {}
    for name in ("iteration", "time", "primal", "dual", "gap", *extra):
        out[name] = np.asarray(getattr(history, name))[idx]
    return SimpleNamespace(**out)


def _positive(a: np.ndarray) -> np.ndarray:
    """Values for a log axis: non-positive entries become NaN (not drawn)."""
    a = np.asarray(a, dtype=float)
    return np.where(a > 0, a, np.nan)


#: Legend name of the markers drawn for an exactly-zero gap on a log axis.
BELOW_PRECISION = "gap 0: below machine precision"


def gap_floor(gap: np.ndarray, scale: np.ndarray | float = 1.0
              ) -> tuple[np.ndarray, np.ndarray, float]:
    """A gap series for a log axis, with its exact zeros kept visible.

    Returns ``(y, zero, floor)``: ``y`` is ``gap`` with every entry ``<= 0`` (an exact
    zero, or a rounding-level negative difference: the primal and dual values agree to
    the last bit) replaced by ``floor``, machine epsilon times ``max(1, |scale|)`` — the
    resolution of the objective's value — and ``zero`` marks those entries. Non-finite
    entries stay NaN (not drawn).
    """
    g = np.asarray(gap, dtype=float)
    sc = np.maximum(1.0, np.abs(np.asarray(scale, dtype=float)))
    floor = float(np.finfo(float).eps * (np.nanmax(sc) if np.size(sc) else 1.0))
    zero = np.isfinite(g) & (g <= 0.0)
    y = np.where(zero, floor, np.where(np.isfinite(g), g, np.nan))
    return y, zero, floor


def _zero_markers(xs: np.ndarray, y: np.ndarray, zero: np.ndarray, *, color: str,
                  showlegend: bool, group: str = "gap0") -> go.Scatter | None:
    """Markers at the exactly-zero gaps (drawn at the machine-precision floor)."""
    if not zero.any():
        return None
    return go.Scatter(x=np.asarray(xs)[zero], y=y[zero], mode="markers",
                      name=BELOW_PRECISION, legendgroup=group, showlegend=showlegend,
                      marker={"symbol": "triangle-down", "size": 9, "color": color},
                      hovertemplate="gap 0: below machine precision<extra></extra>")


def convergence_figure(
    history: Any,
    *,
    reference: float | None = None,
    title: str = "",
    gap_label: str = "duality gap",
    height: int | None = None,
    x: str = "both",
) -> go.Figure:
    """Primal, dual and gap against iteration and/or time; gap on a log axis.

    Parameters
    ----------
    history : History-like
        Anything with ``iteration``, ``time``, ``primal``, ``dual``, ``gap`` arrays.
    reference : float, optional
        cvxpy's optimal value, drawn as a horizontal line on the objective plots.
    gap_label : str
        Name of the gap series ("duality gap", or "gap estimate" where the spec
        allows only an estimate).
    x : {"both", "iteration", "time"}
        ``"both"``: a 2 × 2 grid (objective and gap, against iteration and time);
        otherwise one row (objective, gap) against that axis — half the axes and
        traces for the browser to draw.
    """
    if x not in ("both", "iteration", "time"):
        raise ValueError(f"x must be 'both', 'iteration' or 'time', got {x!r}")
    history = decimate(history)
    columns = {"iteration": np.asarray(history.iteration), "time": np.asarray(history.time)}
    axes = ["iteration", "time"] if x == "both" else [x]
    if x == "both":
        fig = make_subplots(
            rows=2, cols=2, shared_xaxes="columns", vertical_spacing=0.08,
            horizontal_spacing=0.08,
            subplot_titles=("objective vs iteration", "objective vs time",
                            f"{gap_label} vs iteration", f"{gap_label} vs time"),
        )
        cells = {"iteration": ((1, 1), (2, 1)), "time": ((1, 2), (2, 2))}
    else:
        fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                            subplot_titles=(f"objective vs {x}", f"{gap_label} vs {x}"))
        cells = {x: ((1, 1), (1, 2))}
    for k, name in enumerate(axes):
        xs = columns[name]
        show = k == 0
        (r_obj, c_obj), (r_gap, c_gap) = cells[name]
        fig.add_trace(go.Scatter(x=xs, y=history.primal, name="primal", mode="lines",
                                 line={"color": COLORS["primal"]}, showlegend=show,
                                 legendgroup="primal"), row=r_obj, col=c_obj)
        fig.add_trace(go.Scatter(x=xs, y=history.dual, name="dual", mode="lines",
                                 line={"color": COLORS["dual"]}, showlegend=show,
                                 legendgroup="dual"), row=r_obj, col=c_obj)
        gy, zero, _ = gap_floor(history.gap, history.primal)
        fig.add_trace(go.Scatter(x=xs, y=gy, name=gap_label,
                                 mode="lines", line={"color": COLORS["gap"]},
                                 showlegend=show, legendgroup="gap"), row=r_gap, col=c_gap)
        zt = _zero_markers(xs, gy, zero, color=COLORS["gap"], showlegend=show)
        if zt is not None:
            fig.add_trace(zt, row=r_gap, col=c_gap)
        if reference is not None and len(xs):
            fig.add_trace(go.Scatter(x=[xs[0], xs[-1]], y=[reference, reference],
                                     name="cvxpy optimum", mode="lines",
                                     line={"color": COLORS["reference"], "dash": "dash"},
                                     showlegend=show, legendgroup="ref"),
                          row=r_obj, col=c_obj)
        fig.update_yaxes(type="log", row=r_gap, col=c_gap, exponentformat="power",
                         title_text=gap_label, title_standoff=4)
        fig.update_yaxes(title_text="objective", row=r_obj, col=c_obj, title_standoff=4)
        label = "iteration" if name == "iteration" else "time [s]"
        fig.update_xaxes(title_text=label, row=r_gap, col=c_gap)
        if x != "both":
            fig.update_xaxes(title_text=label, row=r_obj, col=c_obj)
    _objective_range(fig, history, [cells[a][0] for a in axes])
    fig.update_layout(height=height or (480 if x == "both" else 340), title=title or None,
                      margin={"l": 10, "r": 10, "t": 50 if title else 30, "b": 10},
                      legend={"orientation": "h", "y": -0.12 if x == "both" else -0.25})
    return readable(fig)


def _objective_range(fig: go.Figure, history: Any,
                     cells: Sequence[tuple[int, int]] = ((1, 1), (1, 2))) -> None:
    """Zoom the objective panels on the last 90 % of the run (first iterates dwarf the rest)."""
    p = np.asarray(history.primal, dtype=float)
    d = np.asarray(history.dual, dtype=float)
    if p.size < 3:
        return
    start = max(1, p.size // 10)
    vals = np.concatenate([p[start:], d[start:]])
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return
    lo, hi = float(vals.min()), float(vals.max())
    pad = 0.05 * (hi - lo) if hi > lo else 0.05 * max(1.0, abs(hi))
    for row, col in cells:
        fig.update_yaxes(range=[lo - pad, hi + pad], row=row, col=col)


def comparison_figure(
    runs: Mapping[str, Any],
    *,
    x: str = "time",
    y: str = "gap",
    reference: float | None = None,
    title: str = "",
    height: int = 380,
) -> go.Figure:
    """Several runs on the same problem: ``y`` (gap on a log axis, or objective) vs ``x``.

    ``runs`` maps a label to a History-like object.
    """
    fig = go.Figure()
    zeros = False
    for i, (label, h) in enumerate(runs.items()):
        h = decimate(h, extra=[a for a in (x, y) if a not in ("gap", "rel_gap")])
        xs = np.asarray(getattr(h, x))
        zero = None
        color = COLORS["series"][i % 10]
        if y == "gap":
            ys, zero, _ = gap_floor(h.gap, h.primal)
        elif y == "rel_gap":
            ys, zero, _ = gap_floor(np.asarray(h.gap, dtype=float)
                                    / np.maximum(1.0, np.abs(h.primal)))
        else:
            ys = np.asarray(getattr(h, y))
        fig.add_trace(go.Scatter(x=xs, y=ys, name=label, mode="lines",
                                 line={"color": color}))
        if zero is not None:
            zt = _zero_markers(xs, ys, zero, color=color, showlegend=not zeros)
            if zt is not None:
                zeros = True
                fig.add_trace(zt)
    if reference is not None and y not in ("gap", "rel_gap"):
        fig.add_hline(y=reference, line_dash="dash", line_color=COLORS["reference"],
                      annotation_text="cvxpy optimum")
    fig.update_xaxes(title_text="time [s]" if x == "time" else x)
    fig.update_yaxes(title_text={"gap": "duality gap", "rel_gap": "relative gap"}.get(y, y))
    if y in ("gap", "rel_gap"):
        fig.update_yaxes(type="log", exponentformat="power")
    fig.update_layout(height=height, title=title or None,
                      margin={"l": 10, "r": 10, "t": 40 if title else 20, "b": 10})
    return readable(fig)


def lines_figure(
    x: Sequence[float] | np.ndarray,
    series: Mapping[str, Sequence[float] | np.ndarray],
    *,
    xlabel: str = "iteration",
    ylabel: str = "",
    log_y: bool = False,
    stacked: bool = False,
    title: str = "",
    height: int = 320,
) -> go.Figure:
    """Named series against a common x (optionally stacked areas or a log y axis)."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(series.items()):
        ys = np.asarray(ys, dtype=float)
        fig.add_trace(go.Scatter(
            x=np.asarray(x), y=_positive(ys) if log_y else ys, name=name, mode="lines",
            line={"color": COLORS["series"][i % 10]},
            stackgroup="one" if stacked else None,
        ))
    fig.update_xaxes(title_text=xlabel)
    fig.update_yaxes(title_text=ylabel)
    if log_y:
        fig.update_yaxes(type="log", exponentformat="power")
    fig.update_layout(height=height, title=title or None,
                      margin={"l": 10, "r": 10, "t": 40 if title else 20, "b": 10})
    return readable(fig)


def heatmap(
    Z: np.ndarray,
    *,
    x: Sequence[Any] | None = None,
    y: Sequence[Any] | None = None,
    title: str = "",
    colorscale: str = "RdBu",
    zmid: float | None = 0.0,
    zmin: float | None = None,
    zmax: float | None = None,
    xlabel: str = "",
    ylabel: str = "",
    text_auto: bool = False,
    height: int = 360,
) -> go.Figure:
    """A labelled heatmap (diverging around ``zmid`` by default)."""
    Z = np.asarray(Z, dtype=float)
    hm = go.Heatmap(z=Z, x=None if x is None else list(x), y=None if y is None else list(y),
                    colorscale=colorscale, zmid=zmid, zmin=zmin, zmax=zmax,
                    texttemplate="%{z:.2g}" if text_auto else None)
    fig = go.Figure(hm)
    fig.update_yaxes(autorange="reversed", title_text=ylabel)
    fig.update_xaxes(title_text=xlabel)
    fig.update_layout(height=height, title=title or None,
                      margin={"l": 10, "r": 10, "t": 40 if title else 20, "b": 10})
    return readable(fig)


def spectrum_figure(
    values: Mapping[str, np.ndarray],
    *,
    marker: float | None = None,
    marker_label: str = "",
    title: str = "",
    log_y: bool = False,
    height: int = 300,
    ylabel: str = "value",
) -> go.Figure:
    """Sorted spectra as grouped bars; an optional vertical marker (e.g. at h)."""
    fig = go.Figure()
    for i, (name, v) in enumerate(values.items()):
        v = np.sort(np.asarray(v, dtype=float))[::-1]
        fig.add_trace(go.Bar(x=np.arange(1, v.size + 1), y=_positive(v) if log_y else v,
                             name=name, marker_color=COLORS["series"][i % 10]))
    if marker is not None:
        fig.add_vline(x=marker + 0.5, line_dash="dash", line_color=COLORS["reference"],
                      annotation_text=marker_label)
    fig.update_xaxes(title_text="index (descending)")
    fig.update_yaxes(title_text=ylabel)
    if log_y:
        fig.update_yaxes(type="log", exponentformat="power")
    fig.update_layout(height=height, title=title or None, barmode="group",
                      margin={"l": 10, "r": 10, "t": 40 if title else 20, "b": 10})
    return readable(fig)


def bar_series(
    labels: Sequence[Any],
    series: Mapping[str, Sequence[float] | np.ndarray],
    *,
    ylabel: str = "",
    title: str = "",
    height: int = 300,
) -> go.Figure:
    """Grouped bars: one group per label, one bar per named series."""
    fig = go.Figure()
    for i, (name, v) in enumerate(series.items()):
        fig.add_trace(go.Bar(x=[str(s) for s in labels], y=np.asarray(v, dtype=float),
                             name=name, marker_color=COLORS["series"][i % 10]))
    fig.update_yaxes(title_text=ylabel)
    fig.update_layout(height=height, title=title or None, barmode="group",
                      margin={"l": 10, "r": 10, "t": 40 if title else 20, "b": 10})
    return readable(fig)
