"""The dashboard's "Sweep" panel: one or two parameters over a range, through :mod:`explorer.sweep`.

``render(entry, dataset, sizes, seed, params)`` is called by the page kit inside a
"Sweep" tab with the page's current dataset, sizes, data seed and parameters. The
user picks one or two parameters and their ranges (log-spaced where the parameter
spans decades), the number of data seeds and the backend (local processes by
default); the sweep runs through the same engine as ``dualscope sweep`` (warm-started
along the first continuous parameter), with a progress bar and a Stop button; a sweep
the engine's cost guard refuses (:func:`check_sweep`) is shown as that message and its
Run button is disabled. The
objective, the certified gap, the held-out score (where the model has one) and the
model's structure summary are drawn across the grid: lines for one parameter, heatmaps
for two. The table downloads as CSV.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import sweep
from .registry import ModelEntry, Param

__all__ = ["check_sweep", "render"]


def _key(entry: ModelEntry, name: str) -> str:
    return f"sweep_{entry.name}_{name}"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _sweepable(entry: ModelEntry) -> list[Param]:
    return [p for p in entry.params
            if p.values or (p.kind in ("float", "int")
                            and p.low is not None and p.high is not None)]


def _range_widgets(st: Any, entry: ModelEntry, p: Param, current: Any, col: Any) -> list[Any]:
    """Widgets for the values of one swept parameter; returns the values."""
    if p.values:
        return list(col.multiselect(f"{p.name} values", list(p.values), default=list(p.values),
                                    key=_key(entry, f"vals_{p.name}"), format_func=str))
    assert p.low is not None and p.high is not None  # sweepable: a bounded range (_sweepable)
    lo, hi = float(p.low), float(p.high)
    cur = float(current if current is not None else p.default)
    if p.log and cur > 0:
        a, b = max(lo, cur / 100.0), min(hi, cur * 100.0)
    else:
        a, b = lo, hi
    c1, c2, c3 = col.columns(3)
    a = c1.number_input(f"{p.name} from", min_value=lo, max_value=hi, value=a, format="%g",
                        key=_key(entry, f"lo_{p.name}"))
    b = c2.number_input(f"{p.name} to", min_value=lo, max_value=hi, value=b, format="%g",
                        key=_key(entry, f"hi_{p.name}"))
    n = int(c3.number_input("points", min_value=1, max_value=25, value=5, step=1,
                            key=_key(entry, f"n_{p.name}")))
    if p.log and a > 0 and b > 0:
        vals = np.geomspace(a, b, n)
    else:
        vals = np.linspace(a, b, n)
    if p.kind == "int":
        return sorted({int(np.rint(v)) for v in vals})
    return [float(v) for v in vals]


def check_sweep(spec: sweep.SweepSpec, *, backend: str, scheduler: str | None = None,
                workers: int | None = None) -> tuple[ValueError | None, list[str]]:
    """The cost guard's verdict on a planned sweep, before its Run button: ``(error,
    notes)``. ``error`` is the refusal of :func:`explorer.sweep.guard_sweep` (the guard of
    :func:`explorer.sweep.run` and ``dualscope sweep``: points, every size through the
    dataset's cost model, the memory of ``workers`` solving at once on ``backend``), or
    None; ``notes`` are the sizes it lets through with a note."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", sweep.SizeWarning)
        try:
            sweep.guard_sweep(spec, backend=backend, scheduler=scheduler, workers=workers)
        except ValueError as exc:
            return exc, []
    return None, [str(w.message) for w in caught if issubclass(w.category, sweep.SizeWarning)]


def _quantities(frame: Any) -> list[tuple[str, str, bool]]:
    """(column, title, log-scale) of the quantities drawn across the grid."""
    out = [("primal", "objective (primal)", False), ("gap", "certified duality gap", True)]
    if "score" in frame and frame["score"].notna().any():
        name = frame["score_name"].dropna().iloc[0]
        out.append(("score", f"held-out {name}", False))
    struct = [c for c in frame.columns if c.startswith(sweep.STRUCT_PREFIX)]
    if struct:
        out.append((struct[0], struct[0][len(sweep.STRUCT_PREFIX):].replace("_", " "), False))
    return out


def _figures(frame: Any, names: list[str], log_axes: dict[str, bool]) -> list[Any]:
    import plotly.graph_objects as go

    ok = frame[frame["error"].isna()] if "error" in frame else frame
    ok = ok.assign(_unconv=~ok["converged"].fillna(False).astype(bool)
                   if "converged" in ok else False)
    figs = []
    for col, title, log in _quantities(ok):
        data = ok[[*names, "data_seed", col, "_unconv"]].dropna(subset=[col])
        # cross-validation folds: the mean over folds of each (point, seed); a point is
        # unconverged when any of its folds is
        data = data.groupby([*names, "data_seed"], sort=True, as_index=False).agg(
            {col: "mean", "_unconv": "max"})
        if data.empty:
            continue
        zero = None
        if log:  # exact zeros (gap below machine precision) drawn at the floor, marked
            from .figures import gap_floor

            floored, zero, _ = gap_floor(data[col].to_numpy(dtype=float))
            data[col] = floored
        fig = go.Figure()
        if len(names) == 1:
            x = names[0]
            for seed, part in data.groupby("data_seed", sort=True):
                part = part.sort_values(x)
                fig.add_trace(go.Scatter(x=part[x], y=part[col], mode="lines+markers",
                                         name=f"seed {seed}"))
            bad = data[data["_unconv"].astype(bool)]
            if len(bad):
                fig.add_trace(go.Scatter(x=bad[x], y=bad[col], mode="markers",
                                         name="not converged (stopped early)",
                                         marker={"symbol": "x-open", "size": 13,
                                                 "color": "#d62728"}))
            if zero is not None and zero.any():
                z0 = data[zero]
                fig.add_trace(go.Scatter(x=z0[x], y=z0[col], mode="markers",
                                         name="gap 0: below machine precision",
                                         marker={"symbol": "triangle-down", "size": 10,
                                                 "color": "#2ca02c"}))
            fig.update_xaxes(title_text=x, type="log" if log_axes.get(x) else None)
            fig.update_yaxes(title_text=title, type="log" if log else None)
            fig.update_layout(legend={"orientation": "h", "y": -0.3})
        else:
            x, y = names
            mean = data.groupby([y, x], sort=True)[col].mean().unstack(x)
            z = mean.to_numpy(dtype=float)
            if log:
                z = np.log10(np.maximum(z, 1e-300))
            fig.add_trace(go.Heatmap(
                z=z, x=[_fmt(v) for v in mean.columns], y=[_fmt(v) for v in mean.index],
                colorscale="Viridis",
                colorbar={"title": f"log10 {col}" if log else col}))
            unconv = data.groupby([y, x], sort=True)["_unconv"].max().unstack(x)
            by, bx = np.nonzero(unconv.fillna(False).to_numpy(dtype=bool))
            if by.size:  # unconverged cells crossed out
                fig.add_trace(go.Scatter(
                    x=[_fmt(mean.columns[i]) for i in bx], y=[_fmt(mean.index[j]) for j in by],
                    mode="markers", name="not converged (stopped early)", showlegend=True,
                    marker={"symbol": "x-open", "size": 14, "color": "#d62728"}))
                fig.update_layout(legend={"orientation": "h", "y": -0.3})
            fig.update_xaxes(title_text=x, type="category")
            fig.update_yaxes(title_text=y, type="category")
        seeds = data["data_seed"].nunique()
        fig.update_layout(title=f"{title} across the grid"
                          + (f" (mean of {seeds} seeds)" if len(names) == 2 and seeds > 1
                             else ""), height=340, margin={"t": 50, "b": 40})
        figs.append(fig)
    return figs


#: the certificate first: whether each point converged and its gap, then the swept values
_FIRST = ("converged", "gap", "rel_gap", "primal", "dual", "stop_reason")


def _table(frame: Any, names: list[str]) -> Any:
    """The table's columns: certificate, swept parameters, then the rest (dataset last)."""
    cols = [c for c in frame.columns if c not in ("key", "model", "path")]
    first = [c for c in _FIRST if c in cols] + [n for n in names if n in cols]
    late = [c for c in ("dataset", "sizes") if c in cols and c not in first]
    return frame[first + [c for c in cols if c not in first and c not in late] + late]


@dataclass(frozen=True)
class _Choices:
    """What the panel's controls chose."""

    grid: dict[str, list[Any]]
    n_seeds: int
    backend: str
    scheduler: str | None
    tol: float
    max_iter: int
    cv: int


def render(entry: ModelEntry, dataset: str, sizes: dict, seed: int, params: dict) -> None:
    """Draw the Sweep panel of ``entry`` for the page's dataset, sizes, seed and parameters."""
    import streamlit as st

    st.caption("Sweep one or two parameters over a range (and several data seeds) through "
               "`explorer.sweep`, the engine of `dualscope sweep`: points along the first "
               "continuous parameter are warm-started in order; every point carries its "
               "certified duality gap.")
    ch = _controls(st, entry, params)
    if ch is None:
        return
    spec = sweep.SweepSpec(
        model=entry.name, grid=ch.grid, sizes={k: [v] for k, v in sizes.items()},
        seeds=list(range(int(seed), int(seed) + ch.n_seeds)), dataset=dataset,
        fixed={k: v for k, v in params.items() if k not in ch.grid}, cv=ch.cv, tol=ch.tol,
        max_iter=ch.max_iter)
    n_points = math.prod(len(v) for v in ch.grid.values()) * ch.n_seeds * max(ch.cv, 1)
    workers = os.cpu_count()
    refused, notes = check_sweep(spec, backend=ch.backend, scheduler=ch.scheduler,
                                 workers=workers)
    if refused is not None:
        from .ui.panels import show_error

        show_error(refused, "start this sweep")
    for note in notes:
        st.caption(note)
    b1, b2, b3 = st.columns([1, 1, 3])
    run_clicked = b1.button("Run sweep", key=_key(entry, "run"), type="primary",
                            disabled=refused is not None)
    stop_clicked = b2.button("Stop", key=_key(entry, "stop"))
    b3.caption(f"{n_points} points")
    state_key = _key(entry, "result")
    # Stop: the click reruns the script. With fast reruns the new run starts while the old
    # one is still waiting for its next row: flag it; at that row the old run cancels the
    # pending work (its rows so far stay in session state and are shown).
    running = st.session_state.get(state_key)
    if stop_clicked and running and running.get("running"):
        running["cancel"] = True
        running["stopped"] = True
    if run_clicked and refused is None:
        _run(st, entry, spec, ch, n_points, workers, state_key)
    stored = st.session_state.get(state_key)
    if not stored:
        return
    if not stored["rows"]:
        if stored.get("stopped"):
            st.caption("Stopped before any point finished.")
        return
    _show(st, entry, stored)


def _controls(st: Any, entry: ModelEntry, params: dict) -> _Choices | None:
    """The panel's controls; None (with a note) until they describe a sweep."""
    candidates = _sweepable(entry)
    if not candidates:
        st.info("This model has no parameter to sweep.")
        return None
    names_all = [p.name for p in candidates]
    first = next((p.name for p in candidates if p.kind == "float"), names_all[0])
    chosen = st.multiselect("Parameters to sweep (one or two)", names_all, default=[first],
                            max_selections=2, key=_key(entry, "params"))
    if not chosen:
        st.info("Choose one or two parameters.")
        return None
    grid = {name: _range_widgets(st, entry, entry.param(name), params.get(name), st)
            for name in chosen}
    c1, c2, c3 = st.columns(3)
    n_seeds = int(c1.number_input("data seeds", min_value=1, max_value=10, value=1, step=1,
                                  key=_key(entry, "seeds")))
    kinds = {kind.name: kind for kind in sweep.backends.available()}
    backend = c2.selectbox("run on", list(kinds), key=_key(entry, "backend"),
                           help="; ".join(f"{k.name}: {k.help}" for k in kinds.values()))
    scheduler = None
    if kinds[backend].remote:
        scheduler = st.text_input("Dask scheduler (empty: local cluster)", value="",
                                  key=_key(entry, "scheduler")).strip() or None
    t1, t2, _ = st.columns(3)
    tol = float(t1.number_input("tolerance (relative gap)", min_value=1e-14, max_value=1e-1,
                                value=float(entry.tol), format="%g", key=_key(entry, "tol")))
    max_iter = int(t2.number_input("iteration budget", min_value=1, max_value=10_000_000,
                                   value=int(entry.max_iter), step=100,
                                   key=_key(entry, "max_iter")))
    cv = 0
    if sweep.hooks_of(entry).cross_validation:
        cv = int(c3.number_input(
            "cross-validation folds", min_value=0, max_value=10, value=0, step=1,
            key=_key(entry, "cv"), help="0: no cross-validation; K >= 2: each point is "
            "solved on K training folds and scored on the held-out fold"))
        if cv == 1:
            st.info("Cross-validation needs at least 2 folds (0 turns it off).")
            return None
    empty = [n for n, v in grid.items() if not v]
    if empty:
        st.info(f"Choose at least one value of {', '.join(empty)}.")
        return None
    return _Choices(grid, n_seeds, backend, scheduler, tol, max_iter, cv)


def _run(st: Any, entry: ModelEntry, spec: sweep.SweepSpec, ch: _Choices, n_points: int,
         workers: int | None, state_key: str) -> None:
    """Run the sweep with a progress bar; its rows go to session state as they arrive."""
    rows: list[dict[str, Any]] = []
    stored = {"rows": rows, "names": list(ch.grid), "running": True, "stopped": False,
              "backend": ch.backend, "seconds": 0.0, "n_points": n_points,
              "log": {n: entry.param(n).log for n in ch.grid}}
    st.session_state[state_key] = stored
    bar = st.progress(0.0, text=f"0 / {n_points} points")
    t0 = time.perf_counter()

    def on_row(row: dict[str, Any]) -> None:
        rows.append(row)  # stored in session state as it arrives (a safe point)
        stored["seconds"] = time.perf_counter() - t0
        bar.progress(len(rows) / n_points, text=f"{len(rows)} / {n_points} points")

    finished = False
    try:
        with warnings.catch_warnings():  # the guard's notes are shown above
            warnings.simplefilter("ignore", sweep.SizeWarning)
            sweep.run(spec, backend=ch.backend, scheduler=ch.scheduler, progress=False,
                      on_row=on_row, workers=workers,
                      should_stop=lambda: bool(stored.get("cancel")))
        finished = True
    except (ValueError, TypeError, KeyError, ImportError, OSError) as exc:
        finished = True
        st.warning(f"sweep failed: {type(exc).__name__}: {exc}")
    finally:
        stored["running"] = False
        stored["stopped"] = stored["stopped"] or not finished
    bar.empty()


def _show(st: Any, entry: ModelEntry, stored: dict[str, Any]) -> None:
    frame = sweep.SweepTable(stored["rows"]).to_frame()
    names = [n for n in stored["names"] if n in frame]
    sort_cols = [c for c in ("chain", "step") if c in frame]
    frame = frame.sort_values(sort_cols).reset_index(drop=True)
    n_err = int(frame["error"].notna().sum()) if "error" in frame else 0
    status = ("stopped" if stored.get("stopped") else
              "running in another run of the page" if stored.get("running") else "done")
    st.caption(f"{len(frame)} rows of {stored['n_points']} ({status}, {n_err} failed, "
               f"{int(frame['converged'].fillna(False).astype(bool).sum())} converged) on "
               f"{stored['backend']} in {stored['seconds']:.1f} s")
    if n_err:
        bad = frame[frame["error"].notna()]
        st.warning("Failed points: " + "; ".join(
            f"{', '.join(f'{n}={_fmt(r[n])}' for n in names)}: {r['error']}"
            for _, r in bad.head(5).iterrows()))
    figs = _figures(frame, names, stored.get("log", {}))
    cols = st.columns(2)
    for i, fig in enumerate(figs):
        cols[i % 2].plotly_chart(fig, width="stretch")
    st.dataframe(_table(frame, names), hide_index=True)
    st.download_button("Download table (CSV)", frame.to_csv(index=False).encode(),
                       file_name=f"sweep_{entry.name}.csv", mime="text/csv",
                       key=_key(entry, "download"))
