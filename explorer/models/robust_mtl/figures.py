r"""Figures of the robust temporal multitask page and notebook (pure functions of arrays).

The learned structure is ``W = [w_1 ... w_m]`` (features x time): row sparsity
from ``lam ||W||_{2,1}``, low rank from ``rho ||W||_*`` and slow drift from
``zeta/2 sum ||w_i - w_{i+1}||^2``. The helpers compute what the figures show
(task labels, numerical rank, selected rows, each task's noise norm under the
true weights, times and SVD counts to a certified precision) and draw it with
the shared builders of :mod:`explorer.figures`. Nothing here touches Streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ...figures import COLORS, comparison_figure, heatmap, lines_figure, readable, spectrum_figure

__all__ = [
    "comparison_rows",
    "floor_figure",
    "floor_vs_mu_figure",
    "inner_figure",
    "noise_norms",
    "numerical_rank",
    "objective_figure",
    "residuals_figure",
    "selected_rows",
    "singular_values_figure",
    "svd_cost_figure",
    "task_labels",
    "weights_heatmap",
]


# ----------------------------------------------------------------------------- numbers


def task_labels(m: int, names: Sequence[Any] | None = None) -> list[str]:
    """The tasks in time order: their names (a file's task or time values) when given,
    else ``t1 ... tm``."""
    if names is not None and len(names) == int(m):
        return [str(v.item() if isinstance(v, np.generic) else v) for v in names]
    return [f"t{i + 1}" for i in range(int(m))]


def selected_rows(W: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """Indices of the rows of ``W`` (features) whose norm exceeds ``threshold``.

    Parameters
    ----------
    W : ndarray, shape (d, m)
    threshold : float
        Absolute row-norm threshold. Pass the smoothing parameter ``mu``: the
        Huber smoothing of the l2,1 norm is quadratic below ``mu``, so rows the
        exact norm would set to zero keep a norm of order ``mu`` or less.
    """
    norms = np.linalg.norm(np.asarray(W, dtype=float), axis=1)
    return np.nonzero(norms > threshold)[0]


def numerical_rank(W: np.ndarray, rtol: float = 1e-3) -> int:
    """Singular values of ``W`` above ``rtol`` times the largest."""
    s = np.linalg.svd(np.asarray(W, dtype=float), compute_uv=False)
    return int(np.sum(s > rtol * s[0])) if s.size and s[0] > 0 else 0


def noise_norms(Xs: Sequence[np.ndarray], ys: Sequence[np.ndarray], W_true: np.ndarray,
                p: float) -> np.ndarray:
    """``||X_i w_i^true - y_i||_p`` per task: the realised noise of the generator.

    Parameters
    ----------
    Xs, ys : sequences of arrays
        The tasks' data.
    W_true : ndarray, shape (d, m)
        The generator's weights.
    p : float
        The loss norm (1, 2 or inf).
    """
    return np.array([np.linalg.norm(X @ W_true[:, i] - y, ord=p)
                     for i, (X, y) in enumerate(zip(Xs, ys, strict=True))])


def comparison_rows(runs: Mapping[str, Any], targets: Sequence[float] = (1e-4, 1e-5, 1e-6)
                    ) -> list[dict[str, Any]]:
    """Per run: time, outer iterations and SVDs to each certified relative gap, and the floor.

    ``SVDs`` are singular value thresholdings: inner S-FISTA steps of the dual
    method, FISTA steps of the smoothing baseline (``history.inner_total``), a
    machine-independent cost. ``None`` where a run never reached the target.
    """
    rows = []
    for label, r in runs.items():
        h = r.history
        row: dict[str, Any] = {"method": label, "floor": r.floor,
                               "floor reached": bool(r.floor_reached)}
        for tg in targets:
            hit = np.nonzero(h.rel_gap <= tg)[0]
            if hit.size:
                k = int(hit[0])
                row[f"time to {tg:g} [s]"] = round(float(h.time[k]), 4)
                row[f"iterations to {tg:g}"] = int(h.iteration[k])
                row[f"SVDs to {tg:g}"] = int(h.inner_total[k])
            else:
                row[f"time to {tg:g} [s]"] = None
                row[f"iterations to {tg:g}"] = None
                row[f"SVDs to {tg:g}"] = None
        rows.append(row)
    return rows


# ----------------------------------------------------------------------------- figures


def weights_heatmap(W: np.ndarray, *, features: Sequence[str] | None = None,
                    title: str = "learned W (features x time)", zmax: float | None = None,
                    height: int = 420, tasks: Sequence[Any] | None = None) -> go.Figure:
    """``W`` as a heatmap, rows = features, columns = tasks in time order.

    Zero rows (features the l2,1 norm dropped) are white; the drift along each
    row is the temporal structure. ``zmax`` fixes a symmetric colour range (to
    compare two heatmaps).
    """
    W = np.asarray(W, dtype=float)
    d, m = W.shape
    z = float(np.abs(W).max()) if zmax is None else float(zmax)
    z = z if z > 0 else 1.0
    ylab = list(features) if features is not None else [f"x{j + 1}" for j in range(d)]
    return heatmap(W, x=task_labels(m, tasks), y=ylab, title=title, zmid=0.0, zmin=-z, zmax=z,
                   xlabel="task (time)", ylabel="feature", height=height)


def singular_values_figure(W: np.ndarray, W_true: np.ndarray | None = None,
                           height: int = 320) -> go.Figure:
    """Singular values of the learned ``W`` (and of the generator's, if given)."""
    vals = {"learned W": np.linalg.svd(np.asarray(W, dtype=float), compute_uv=False)}
    if W_true is not None:
        vals["true W"] = np.linalg.svd(np.asarray(W_true, dtype=float), compute_uv=False)
    title = f"singular values of W (rank at 1e-3: {numerical_rank(W)}"
    if W_true is not None:
        title += f"; true rank {numerical_rank(W_true)}"
    return spectrum_figure(vals, title=title + ")", height=height)


def residuals_figure(loss_norms: np.ndarray, p: float, *, noise: np.ndarray | None = None,
                     sigmas: np.ndarray | None = None, ns: Sequence[int] | None = None,
                     height: int = 340, tasks: Sequence[Any] | None = None) -> go.Figure:
    """Per task (time order): the fitted ``||X_i w_i - y_i||_p`` against the noise level.

    Parameters
    ----------
    loss_norms : ndarray, shape (m,)
        The fitted residual norms.
    p : float
        The loss norm.
    noise : ndarray, optional
        ``||X_i w_i^true - y_i||_p`` (the realised noise, see :func:`noise_norms`).
    sigmas, ns : optional
        The generator's noise standard deviations and the task sizes; for p = 2
        ``sigma_i sqrt(n_i)`` (the expected noise norm) is drawn as a line.
    """
    loss_norms = np.asarray(loss_norms, dtype=float)
    m = loss_norms.size
    x = task_labels(m, tasks)
    fig = go.Figure()
    pname = "inf" if p == math.inf else f"{int(p)}"
    fig.add_trace(go.Bar(x=x, y=loss_norms, name=f"fitted ||X_i w_i − y_i||_{pname}",
                         marker_color=COLORS["series"][0]))
    if noise is not None:
        fig.add_trace(go.Bar(x=x, y=np.asarray(noise, dtype=float),
                             name=f"noise ||X_i w_i^true − y_i||_{pname}",
                             marker_color=COLORS["series"][1]))
    if sigmas is not None and ns is not None and p == 2:
        fig.add_trace(go.Scatter(x=x, y=np.asarray(sigmas) * np.sqrt(np.asarray(ns)),
                                 name="σ_i √n_i (expected noise norm)", mode="lines+markers",
                                 line={"color": COLORS["reference"], "dash": "dash"}))
    fig.update_xaxes(title_text="task (time)")
    fig.update_yaxes(title_text="residual norm")
    fig.update_layout(height=height, barmode="group",
                      title="per-task residual norms against the noise level",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.25})
    return readable(fig)


def floor_figure(history: Any, tol_abs: float | None = None, height: int = 320) -> go.Figure:
    """Certified gap, the smoothed problem's gap and the mu floor against iteration.

    The certified gap (best primal minus best dual) can only go down to the
    floor ``gap - smoothed_gap``: what the smoothing with parameter ``mu``
    costs at the current point. ``tol_abs`` (``tol * max(1, |primal|)``) is drawn
    as a horizontal line.
    """
    fig = lines_figure(history.iteration,
                       {"certified gap": history.gap,
                        "smoothed problem's gap": history.smoothed_gap,
                        "floor (price of mu)": history.floor},
                       xlabel="iteration", ylabel="gap", log_y=True,
                       title="certified gap = smoothed gap + floor", height=height)
    return _with_tol_line(fig, tol_abs)


def certificate_figure(history: Any, tol_abs: float | None = None,
                       height: int = 320) -> go.Figure:
    """The floor-free method's certified gap (best bracket and current iterate) per iteration."""
    fig = lines_figure(history.steps,
                       {"certified gap (best bracket)": history.gap,
                        "gap at the current iterate":
                            np.maximum(np.asarray(history.primal_iterate)
                                       - np.asarray(history.dual_iterate), 0.0)},
                       xlabel="FISTA step", ylabel="gap", log_y=True,
                       title="certified gap of exact_dual (no smoothing floor)", height=height)
    return _with_tol_line(fig, tol_abs)


def inner_figure(history: Any, height: int = 300) -> go.Figure:
    """Inner S-FISTA iterations per outer step and the outer FISTA momentum."""
    fig = lines_figure(history.iteration,
                       {"inner iterations (SVDs) per outer step": history.inner_iters},
                       xlabel="outer iteration", ylabel="inner iterations", height=height,
                       title="inner work and momentum of the outer FISTA")
    fig.add_trace(go.Scatter(x=np.asarray(history.iteration), y=np.asarray(history.momentum),
                             name="momentum β_k", yaxis="y2", mode="lines",
                             line={"color": COLORS["series"][1], "dash": "dot"}))
    fig.update_layout(yaxis2={"title": "β_k", "overlaying": "y", "side": "right",
                              "range": [0, 1]},
                      legend={"orientation": "h", "y": -0.3})
    return readable(fig)


def objective_figure(runs: Mapping[str, Any], *, x: str = "time",
                     reference: float | None = None, height: int = 340) -> go.Figure:
    """Best certified primal objective of several runs against ``x`` (time or iteration)."""
    hist = {k: (r.history if hasattr(r, "history") else r) for k, r in runs.items()}
    fig = comparison_figure(hist, x=x, y="primal", reference=reference, height=height,
                            title=f"objective vs {x}")
    vals = np.concatenate([np.asarray(h.primal, dtype=float)[len(h.primal) // 10:]
                           for h in hist.values() if len(h.primal)])
    if vals.size:
        lo = min(float(vals.min()), reference if reference is not None else math.inf)
        hi = float(np.percentile(vals, 90))
        if hi > lo:
            fig.update_yaxes(range=[lo - 0.05 * (hi - lo), hi])
    fig.update_yaxes(title_text="primal J(W)")
    return readable(fig)


def svd_cost_figure(runs: Mapping[str, Any], height: int = 340) -> go.Figure:
    """Certified gap against singular value thresholdings (a machine-independent cost)."""
    hist = {k: (r.history if hasattr(r, "history") else r) for k, r in runs.items()}
    fig = comparison_figure(hist, x="inner_total", y="gap", height=height,
                            title="gap vs SVDs (spectral decompositions of a d x m matrix)")
    fig.update_xaxes(title_text="SVDs: spectral-ball projections and certificates of "
                                "exact_dual, inner steps of dual ascent, steps of smoothing",
                     type="log")
    return readable(fig)


def floor_vs_mu_figure(rows: Sequence[Mapping[str, Any]], bounds: Mapping[str, Any] | None = None,
                       height: int = 360) -> go.Figure:
    """Final certified gap and floor of each run against mu (log-log), per method.

    ``rows`` are dicts with ``mu``, ``method``, ``gap`` and ``floor``;
    ``bounds`` maps a label to a function ``mu -> bound`` drawn as a dashed line.
    """
    fig = go.Figure()
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for i, meth in enumerate(methods):
        rr = sorted((r for r in rows if r["method"] == meth), key=lambda r: r["mu"])
        mus = [r["mu"] for r in rr]
        color = COLORS["series"][i % 10]
        fig.add_trace(go.Scatter(x=mus, y=[max(r["gap"], 1e-300) for r in rr],
                                 name=f"{meth}: certified gap", mode="lines+markers",
                                 line={"color": color}))
        fig.add_trace(go.Scatter(x=mus, y=[max(r["floor"], 1e-300) for r in rr],
                                 name=f"{meth}: floor", mode="lines+markers",
                                 line={"color": color, "dash": "dot"}))
    if rows:
        grid = np.geomspace(min(r["mu"] for r in rows), max(r["mu"] for r in rows), 20)
        for j, (label, fn) in enumerate((bounds or {}).items()):
            fig.add_trace(go.Scatter(x=grid, y=[fn(mu) for mu in grid], name=label,
                                     mode="lines", line={"color": COLORS["series"][7 + j % 3],
                                                         "dash": "dash"}))
    fig.update_xaxes(type="log", title_text="mu", exponentformat="power")
    fig.update_yaxes(type="log", title_text="gap", exponentformat="power")
    fig.update_layout(height=height, title="final certified gap and its floor against mu",
                      margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.25})
    return readable(fig)


def _with_tol_line(fig: go.Figure, tol_abs: float | None) -> go.Figure:
    """``fig`` with a dotted line at the absolute tolerance (when one is given)."""
    if tol_abs is not None and tol_abs > 0:
        fig.add_hline(y=tol_abs, line_dash="dot", line_color=COLORS["reference"],
                      annotation_text="tol")
    return readable(fig)
