r"""Figures of the convex ASO page and notebook (pure functions of data and results).

The learned structure of cASO is ``M = P diag(gamma) P^T`` (``tr M = h``,
``0 <= M <= I``), the task weights ``U = [u_1 ... u_m]`` and the shared
subspace ``Theta`` (top ``round(h)`` eigenvectors of ``M`` as rows). The
helpers below compute what the figures show (task cosines, principal angles,
each task's share inside the subspace, the M-step's parametric path
``gamma_i(t) = clip(sigma_i / sqrt(t) - eta, 0, 1)``) and draw it with the
shared builders of :mod:`explorer.figures`. Nothing here touches Streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ...figures import COLORS, bar_series, heatmap, readable, spectrum_figure

__all__ = [
    "angles_figure",
    "gamma_path",
    "gamma_path_figure",
    "m_spectrum_figure",
    "objective_time_figure",
    "oriented",
    "principal_angles",
    "similarity_figure",
    "subspace_share",
    "subspace_share_figure",
    "task_cosines",
    "task_order",
    "theta_figure",
    "u_spectrum_figure",
]


# ----------------------------------------------------------------------------- numbers


def task_cosines(U: np.ndarray) -> np.ndarray:
    """Cosine similarity of the task weight vectors (columns of ``U``).

    Parameters
    ----------
    U : ndarray, shape (d, m)

    Returns
    -------
    ndarray, shape (m, m)
        ``u_l^T u_k / (||u_l|| ||u_k||)``; a zero column has cosine 0 with
        everything (and 1 with itself).
    """
    U = np.asarray(U, dtype=float)
    norms = np.linalg.norm(U, axis=0)
    safe = np.where(norms > 0, norms, 1.0)
    Un = U / safe
    S = Un.T @ Un
    np.fill_diagonal(S, 1.0)
    return np.clip(S, -1.0, 1.0)


def task_order(U: np.ndarray) -> np.ndarray:
    """A task order that makes cosine-similarity heatmaps readable.

    Tasks are sorted by the angle of their coordinates in the plane of the two
    leading left singular vectors of ``U`` (tasks pointing the same way become
    neighbours; with a 2-D shared subspace the heatmap turns into smooth bands).
    """
    U = np.asarray(U, dtype=float)
    if U.shape[1] < 3 or U.shape[0] < 2:
        return np.arange(U.shape[1])
    P = np.linalg.svd(U, full_matrices=False)[0][:, :2]
    C = P.T @ U
    return np.argsort(np.arctan2(C[1], C[0]), kind="stable")


def principal_angles(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Principal angles in degrees between the row spaces of ``A`` and ``B``.

    Parameters
    ----------
    A : ndarray, shape (k1, d)
    B : ndarray, shape (k2, d)

    Returns
    -------
    ndarray, shape (min(k1, k2),)
        Increasing angles in [0, 90]: 0 where the spaces share a direction.
    """
    Qa, _ = np.linalg.qr(np.asarray(A, dtype=float).T)
    Qb, _ = np.linalg.qr(np.asarray(B, dtype=float).T)
    s = np.linalg.svd(Qa.T @ Qb, compute_uv=False)
    return np.degrees(np.arccos(np.clip(s, -1.0, 1.0)))


def subspace_share(U: np.ndarray, Theta: np.ndarray) -> np.ndarray:
    """Fraction of each task's squared weight inside the row space of ``Theta``.

    ``||Theta u_l||^2 / ||u_l||^2`` for orthonormal rows (0 for a zero task).
    """
    U = np.asarray(U, dtype=float)
    Q, _ = np.linalg.qr(np.asarray(Theta, dtype=float).T)
    inside = np.sum((Q.T @ U) ** 2, axis=0)
    total = np.sum(U * U, axis=0)
    return np.where(total > 0, inside / np.where(total > 0, total, 1.0), 0.0)


def oriented(Theta: np.ndarray) -> np.ndarray:
    """``Theta`` with each row's sign fixed so that its largest-magnitude entry is positive.

    Eigenvectors are defined up to sign; fixing it keeps the heatmap from
    flickering between re-solves.
    """
    T = np.array(Theta, dtype=float)
    for r in T:
        j = int(np.argmax(np.abs(r)))
        if r[j] < 0:
            r *= -1.0
    return T


def gamma_path(sigma: Any, eta: float, t: Any) -> np.ndarray:
    """``gamma_i(t) = clip(sigma_i / sqrt(t) - eta, 0, 1)`` for every ``t`` (rows) and ``i``.

    Parameters
    ----------
    sigma : array_like, shape (d,)
        Singular values of ``U`` (zero beyond its rank).
    eta : float
    t : array_like, shape (T,)
        Positive values of the parameter.

    Returns
    -------
    ndarray, shape (T, d)
    """
    sigma = np.asarray(sigma, dtype=float)
    t = np.asarray(t, dtype=float)
    return np.clip(sigma[None, :] / np.sqrt(t)[:, None] - eta, 0.0, 1.0)


def _root(sigma: np.ndarray, eta: float, h: float) -> float:
    """``t*`` with ``sum_i gamma_i(t*) = h`` (geometric bisection; NaN if rank <= h)."""
    pos = sigma[sigma > 0]
    if pos.size <= h:
        return float("nan")
    lo = float(np.min(pos)) ** 2 / (eta + 1.0) ** 2 * 0.5  # all at 1: sum = rank > h
    hi = float(np.max(pos)) ** 2 / eta ** 2 * 2.0  # all at 0: sum = 0 < h
    for _ in range(200):
        mid = np.sqrt(lo * hi)
        if np.sum(np.clip(pos / np.sqrt(mid) - eta, 0.0, 1.0)) > h:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi))


# ----------------------------------------------------------------------------- figures


def m_spectrum_figure(gamma: np.ndarray, h: float, *, height: int = 300) -> go.Figure:
    """Eigenvalues of ``M`` (the relaxed structure) with ``h = tr M`` marked."""
    g = np.asarray(gamma, dtype=float)
    k = int(np.sum(g > 1e-9))
    fig = spectrum_figure({"γ_i (eigenvalues of M)": g}, marker=float(h),
                          marker_label=f"h = {h:g}", height=height,
                          title=f"eigenvalues of M (Σ = {g.sum():.4g}, {k} non-zero)")
    fig.update_yaxes(range=[0, 1.05], title_text="γ_i")
    return readable(fig)


def u_spectrum_figure(U: np.ndarray, h: float, *, height: int = 300) -> go.Figure:
    """Singular values of ``U`` with ``round(h)`` marked (the directions ``Theta`` keeps)."""
    s = np.linalg.svd(np.asarray(U, dtype=float), compute_uv=False)
    k = max(1, int(np.floor(h + 0.5)))
    share = float(np.sum(s[:k] ** 2) / max(np.sum(s ** 2), 1e-300))
    fig = spectrum_figure({"σ_i(U)": s}, marker=float(k), height=height,
                          marker_label=f"round(h) = {k}",
                          title=f"singular values of U (top {k}: {100 * share:.1f}% of ‖U‖²)")
    fig.update_yaxes(title_text="σ_i")
    return readable(fig)


def similarity_figure(S: np.ndarray, labels: Sequence[str], *, title: str,
                      order: npt.ArrayLike | None = None, height: int = 360) -> go.Figure:
    """A task-by-task cosine similarity heatmap on a fixed [-1, 1] colour scale.

    ``order`` (e.g. :func:`task_order`) permutes rows and columns alike.
    """
    S = np.asarray(S, dtype=float)
    idx = np.arange(S.shape[0]) if order is None else np.asarray(order, dtype=int)
    S = S[np.ix_(idx, idx)]
    lab = [str(labels[i]) for i in idx]
    fig = heatmap(S, x=lab, y=lab, zmin=-1.0, zmax=1.0, zmid=0.0, title=title, height=height)
    show = len(lab) <= 24
    fig.update_xaxes(type="category", showticklabels=show)
    fig.update_yaxes(type="category", showticklabels=show)
    return readable(fig)


def theta_figure(Theta: np.ndarray, features: Sequence[str], *, title: str = "",
                 height: int = 300) -> go.Figure:
    """The shared subspace: rows of ``Theta`` (orthonormal directions) against the features."""
    T = oriented(Theta)
    k = T.shape[0]
    rows = [f"θ{j + 1}" for j in range(k)]
    zmax = float(np.max(np.abs(T))) if T.size else 1.0
    fig = heatmap(T, x=[str(f) for f in features], y=rows, zmin=-zmax, zmax=zmax,
                  title=title or f"shared subspace Θ ({k} × {T.shape[1]}, rows = top "
                                 "eigenvectors of M)",
                  xlabel="feature", height=max(height, 120 + 28 * k))
    fig.update_xaxes(type="category", showticklabels=len(features) <= 40)
    fig.update_yaxes(type="category")
    return readable(fig)


def angles_figure(angles: np.ndarray, *, height: int = 300) -> go.Figure:
    """Principal angles between the learned and the true shared subspace (degrees)."""
    a = np.asarray(angles, dtype=float)
    fig = bar_series([f"{j + 1}" for j in range(a.size)], {"angle [°]": a}, ylabel="degrees",
                     height=height,
                     title=f"principal angles, learned vs true subspace (largest {a.max():.1f}°)"
                     if a.size else "principal angles")
    fig.update_yaxes(range=[0, 90])
    fig.update_xaxes(title_text="principal angle index", type="category")
    return readable(fig)


def subspace_share_figure(U: np.ndarray, Theta: np.ndarray, labels: Sequence[str], *,
                          height: int = 300) -> go.Figure:
    """Per task, the fraction ``||Theta u_l||^2 / ||u_l||^2`` of its weight in the subspace."""
    share = subspace_share(U, Theta)
    title = f"each task's weight inside the shared subspace (mean {share.mean():.3f})"
    fig = bar_series([str(v) for v in labels], {"‖Θu_l‖² / ‖u_l‖²": share},
                     height=height, ylabel="share", title=title)
    fig.update_yaxes(range=[0, 1.02])
    fig.update_xaxes(type="category", title_text="task")
    return readable(fig)


def gamma_path_figure(sigma: Any, eta: float, h: float, *, gamma: Any = None,
                      n_points: int = 400, max_lines: int = 8,
                      height: int = 420) -> go.Figure:
    """The M-step's parametric solution: ``gamma_i(t)`` and ``Gamma(t) = sum_i gamma_i(t)``.

    Top panel: ``gamma_i(t) = clip(sigma_i / sqrt(t) - eta, 0, 1)`` for the
    ``max_lines`` largest ``sigma_i`` (each leaves 1 at ``t_i^l =
    sigma_i^2 / (eta + 1)^2`` and reaches 0 at ``t_i^u = sigma_i^2 / eta^2``).
    Bottom panel: ``Gamma(t)``, non-increasing, with the level ``h`` and the
    root ``t*`` where ``Gamma(t*) = h``. ``gamma`` (optional, e.g. the
    solver's M-step) is drawn as markers at ``t*``.

    Parameters
    ----------
    sigma : array_like, shape (d,)
    eta, h : float
    gamma : array_like, optional
        Eigenvalues of ``M`` in the order of ``sigma``.
    """
    sigma = np.asarray(sigma, dtype=float)
    t_star = _root(sigma, eta, h)
    order = np.argsort(-sigma, kind="stable")[:max_lines]
    pos = sigma[order][sigma[order] > 0]
    if pos.size:
        t_lo = float(pos.min()) ** 2 / (eta + 1.0) ** 2 / 4.0
        t_hi = float(pos.max()) ** 2 / eta ** 2 * 4.0
    else:
        t_lo, t_hi = 1e-3, 1.0
    if np.isfinite(t_star):
        t_lo, t_hi = min(t_lo, t_star / 4.0), max(t_hi, 4.0 * t_star)
    t = np.geomspace(t_lo, t_hi, n_points)
    if np.isfinite(t_star):
        t = np.unique(np.concatenate([t, [t_star]]))
    G = gamma_path(sigma, eta, t)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14,
                        subplot_titles=("γ_i(t) = clip(σ_i/√t − η, 0, 1)",
                                        "Γ(t) = Σ_i γ_i(t) and the level h"))
    for n, i in enumerate(order):
        fig.add_trace(go.Scatter(x=t, y=G[:, i], mode="lines", name=f"γ_{n + 1}",
                                 line={"color": COLORS["series"][n % 10]}), row=1, col=1)
    fig.add_trace(go.Scatter(x=t, y=G.sum(axis=1), mode="lines", name="Γ(t)",
                             line={"color": "black"}), row=2, col=1)
    fig.add_trace(go.Scatter(x=[t[0], t[-1]], y=[h, h], mode="lines", name=f"h = {h:g}",
                             line={"color": COLORS["reference"], "dash": "dash"}), row=2, col=1)
    title = "M-step: the parametric solution"
    if np.isfinite(t_star):
        title += f", root t* = {t_star:.4g}"
        for r in (1, 2):
            fig.add_vline(x=t_star, line_dash="dot", line_color=COLORS["reference"], row=r,
                          col=1)
        if gamma is not None:
            g = np.asarray(gamma, dtype=float)
            fig.add_trace(go.Scatter(x=np.full(order.size, t_star), y=g[order],
                                     mode="markers", name="solver's γ_i",
                                     marker={"color": "black", "symbol": "x", "size": 9}),
                          row=1, col=1)
    else:
        title += " (rank(U) ≤ h: the non-zero directions take γ = 1)"
    # the lower panel carries the shared t axis: no tick labels under the upper one
    fig.update_xaxes(type="log", exponentformat="power", showticklabels=False, row=1, col=1)
    fig.update_xaxes(type="log", exponentformat="power", title_text="t", row=2, col=1)
    fig.update_yaxes(range=[-0.03, 1.03], title_text="γ_i(t)", row=1, col=1)
    fig.update_yaxes(title_text="Γ(t)", row=2, col=1)
    fig.update_layout(height=height, title=title,
                      margin={"l": 10, "r": 10, "t": 60, "b": 10})
    return readable(fig)


def objective_time_figure(runs: Mapping[str, Any], *, reference: float | None = None,
                          height: int = 380) -> go.Figure:
    """Objective against time for several runs on the same problem.

    Left: the primal ``P(U_k)`` (solid) and the objective ``F(U_k, M_k)`` at
    the algorithm's own iterate (dotted, ``history.objective_iterate`` where
    recorded). Right: ``P(U_k) - D_best`` on a log axis, where ``D_best`` is
    the best certified lower bound over all runs: an upper bound on each run's
    suboptimality.

    ``runs`` maps a label to a result with ``history``.
    """
    hist = {k: r.history for k, r in runs.items()}
    d_best = max(float(np.max(h.dual)) for h in hist.values())
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=("objective vs time",
                                        "P(U_k) − best lower bound vs time"))
    lo, hi = np.inf, -np.inf
    for i, (label, h) in enumerate(hist.items()):
        color = COLORS["series"][i % 10]
        t = np.asarray(h.time)
        p = np.asarray(h.primal, dtype=float)
        fig.add_trace(go.Scatter(x=t, y=p, name=f"{label}: P(U_k)", mode="lines",
                                 line={"color": color}, legendgroup=label), row=1, col=1)
        if "objective_iterate" in h.extras:
            f = np.asarray(h.objective_iterate, dtype=float)
            if np.max(np.abs(f - p)) > 1e-12 * max(1.0, float(np.max(np.abs(p)))):
                fig.add_trace(go.Scatter(x=t, y=f, name=f"{label}: F(U_k, M_k)", mode="lines",
                                         line={"color": color, "dash": "dot"},
                                         legendgroup=label), row=1, col=1)
        sub = p - d_best
        fig.add_trace(go.Scatter(x=t, y=np.where(sub > 0, sub, np.nan), mode="lines",
                                 line={"color": color}, legendgroup=label, showlegend=False,
                                 name=label), row=1, col=2)
        start = max(1, p.size // 10)
        tail = p[start:] if p.size > 2 else p
        tail = tail[np.isfinite(tail)]
        if tail.size:
            lo, hi = min(lo, float(tail.min())), max(hi, float(tail.max()))
    if reference is not None:
        fig.add_hline(y=reference, line_dash="dash", line_color=COLORS["reference"],
                      annotation_text="cvxpy optimum", row=1, col=1)
    if np.isfinite(lo):
        pad = 0.05 * (hi - lo) if hi > lo else 0.05 * max(1.0, abs(hi))
        fig.update_yaxes(range=[lo - pad, hi + pad], row=1, col=1)
    fig.update_yaxes(type="log", exponentformat="power", row=1, col=2,
                     title_text="P(U_k) − lower bound")
    fig.update_yaxes(title_text="objective", row=1, col=1)
    fig.update_xaxes(title_text="time [s]")
    fig.update_layout(height=height, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      legend={"orientation": "h", "y": -0.2})
    return readable(fig)
