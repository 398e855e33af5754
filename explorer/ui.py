"""Streamlit page kit shared by every model page.

A model page is a few lines::

    def render():
        ui.model_page(ENTRY, latex=PROBLEM, structure=structure_panel)

:func:`model_page` draws the standard page from the model's registry entry:
sidebar controls (dataset and its sizes, the model parameters on log-scale
sliders where they span decades, the method, tolerance and iteration budget,
all bound to the URL query so a configuration can be shared), the problem
statement, a live convergence panel streamed from the solver callback, the
model's structure panel, the baseline-vs-method comparison, the cvxpy
reference on request (refused above the entry's size limit) and the JSON
download. Moving a control re-solves warm-started from the last solution of
the same problem. Errors are shown as messages and the last good result stays
on screen.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np
import streamlit as st

from . import figures
from .registry import ModelEntry, Param, Problem

__all__ = [
    "Controls",
    "fmt",
    "log_options",
    "model_page",
    "show_error",
    "stored_comparison",
    "stored_reference",
]

TOL_OPTIONS = [10.0 ** -e for e in range(2, 13)]
_LIVE_EVERY = 0.25  # seconds between live chart refreshes


# ----------------------------------------------------------------------------- helpers


def fmt(x: Any) -> str:
    """Compact number for labels: 0.001 -> 1e-3, 2.0 -> 2, 0.5 -> 0.5."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if x == 0 or not math.isfinite(x):
            return str(x)
        e = math.floor(math.log10(abs(x)))
        if -3 <= e <= 3:
            return f"{x:g}"
        m = x / 10.0 ** e
        return f"{m:g}e{e}" if abs(m - 1) > 1e-12 else f"1e{e}"
    return str(x)


def log_options(low: float, high: float, default: float | None = None) -> list[float]:
    """1-2-5 steps per decade between ``low`` and ``high`` (plus ``default`` if off-grid)."""
    out = []
    e0 = math.floor(math.log10(low))
    e1 = math.ceil(math.log10(high))
    for e in range(e0, e1 + 1):
        for m in (1.0, 2.0, 5.0):
            v = float(f"{m * 10.0 ** e:.12g}")
            if low * (1 - 1e-12) <= v <= high * (1 + 1e-12):
                out.append(v)
    if default is not None and all(abs(v - default) > 1e-12 * abs(default) for v in out):
        out.append(float(default))
        out.sort()
    return out


def show_error(exc: BaseException, what: str = "solve") -> None:
    """An error as a message (never a traceback)."""
    name = type(exc).__name__
    st.error(f"Could not {what}: {name}: {exc}", icon=":material/error:")


def on_demand(state_key: str, key: Any, compute: Callable[[], Any], *, label: str,
              button_key: str, icon: str, what: str, subject: str = "The results",
              stale_ok: bool = True) -> Any | None:
    """A costly computation behind a button, kept in the session with the settings it used.

    Clicking ``label`` runs ``compute()`` (errors are shown as messages, the last value
    stays) and stores its value with ``key``. Returns the stored value, or None before the
    first run; a value computed for other settings (``key`` changed) is returned with a
    caption saying so, or not at all when ``stale_ok`` is False.
    """
    if st.button(label, key=button_key, icon=icon):
        try:
            with st.spinner(what + " …"):
                value = compute()
            st.session_state[state_key] = {"key": key, "value": value}
        except Exception as exc:  # shown, never raised
            show_error(exc, what)
    stored = st.session_state.get(state_key)
    if stored is None:
        return None
    if stored["key"] != key:
        if not stale_ok:
            return None
        st.caption(f"{subject} below are for earlier settings; run again to refresh.")
    return stored["value"]


def _state(entry: ModelEntry, name: str, default: Any = None) -> Any:
    return st.session_state.get(f"{entry.name}__{name}", default)


def _set_state(entry: ModelEntry, name: str, value: Any) -> None:
    st.session_state[f"{entry.name}__{name}"] = value


def stored_comparison(entry: ModelEntry) -> dict[str, Any] | None:
    """The runs of the last comparison (label -> result), or None."""
    cmp = _state(entry, "compare")
    return dict(cmp["value"]["runs"]) if cmp else None


def stored_reference(entry: ModelEntry, c: Controls) -> Any | None:
    """The cvxpy reference computed for exactly these controls, or None."""
    ref = _state(entry, "ref")
    key = (c.problem_key(entry), tuple(sorted(c.model_params().items())))
    return ref["ref"] if ref and ref["key"] == key else None


# ----------------------------------------------------------------------------- controls


@dataclass
class Controls:
    """Everything the sidebar decided, in one place."""

    dataset: str
    sizes: dict[str, Any]
    data_seed: int
    params: dict[str, Any]
    tol: float
    max_iter: int
    extras: dict[str, Any] = field(default_factory=dict)

    def problem_key(self, entry: ModelEntry) -> tuple:
        return (entry.name, self.dataset, tuple(sorted(self.sizes.items())), self.data_seed)

    def model_params(self, exclude: tuple[str, ...] = ("method",)) -> dict[str, Any]:
        return {k: v for k, v in self.params.items() if k not in exclude}


def param_widget(p: Param, key: str, container: Any = None) -> Any:
    """The widget of one :class:`~explorer.registry.Param`, bound to the URL query."""
    c = container or st
    common = {"key": key, "help": p.help or None, "bind": "query-params"}
    if p.kind == "choice":
        opts = list(p.choices)
        return c.selectbox(p.name, opts, index=opts.index(p.default), **common)
    if p.kind == "bool":
        return c.toggle(p.name, value=bool(p.default), **common)
    if p.kind == "int":
        lo = int(p.low if p.low is not None else 0)
        hi = int(p.high if p.high is not None else max(10, 10 * int(p.default)))
        if hi - lo <= 200:
            return c.slider(p.name, lo, hi, int(p.default), **common)
        return c.number_input(p.name, lo, hi, int(p.default), step=1, **common)
    if p.log:
        opts = log_options(p.low, p.high, p.default)
        default = min(opts, key=lambda v: abs(math.log(v) - math.log(p.default)))
        return c.select_slider(p.name, opts, value=default, format_func=fmt, **common)
    lo = float(p.low if p.low is not None else 0.0)
    hi = float(p.high if p.high is not None else 1.0)
    step = float(p.step) if p.step else (hi - lo) / 100
    return c.slider(p.name, lo, hi, float(p.default), step=step, **common)


def sidebar_controls(entry: ModelEntry, *, fixed: dict[str, Any] | None = None) -> Controls:
    """Draw the sidebar; return the chosen configuration.

    ``fixed`` pins parameters that the page sets itself (they get no widget).
    """
    fixed = fixed or {}
    sb = st.sidebar
    sb.subheader("Data")
    names = list(entry.datasets)
    # no format_func: a bound selectbox writes its displayed text into the URL, and the
    # URL should carry the short name (``?dataset=digits``)
    ds = sb.selectbox("dataset", names, index=0, key="dataset", bind="query-params")
    dataset = entry.datasets[ds]
    sb.caption(dataset.title)
    pnames = {p.name for p in entry.params}
    # Datasets share size names (n, d, ...): on a switch, or when a kept value is out
    # of the new dataset's range, start from the new dataset's defaults.
    switched = _state(entry, "dataset") not in (None, ds)
    _set_state(entry, "dataset", ds)
    sizes = {}
    for name, (default, low, high) in dataset.sizes.items():
        key = f"data_{name}" if name in pnames or name in ("tol", "max_iter") else name
        kept = st.session_state.get(key)
        if kept is not None and (switched or not low <= kept <= high):
            st.session_state[key] = default
        label = f"{name} (0 = all)" if dataset.real and name == "n" else name
        if isinstance(default, int):
            sizes[name] = int(sb.slider(label, int(low), int(high), int(default), key=key,
                                        bind="query-params"))
        else:
            step = float(high - low) / 100
            sizes[name] = float(sb.slider(label, float(low), float(high), float(default),
                                          step=step, key=key, bind="query-params"))
    data_seed = int(sb.number_input("data seed", 0, 10_000, 0, key="data_seed",
                                    bind="query-params"))
    sb.subheader("Model")
    params = {}
    for p in entry.params:
        if p.name in fixed:
            params[p.name] = fixed[p.name]
        else:
            params[p.name] = param_widget(p, p.name, sb)
    sb.subheader("Solver")
    tol_default = min(TOL_OPTIONS, key=lambda v: abs(math.log(v) - math.log(entry.tol)))
    tol = sb.select_slider("tol (relative gap)", TOL_OPTIONS, value=tol_default, format_func=fmt,
                           key="tol", bind="query-params")
    max_iter = int(sb.number_input("max_iter", 1, 1_000_000, int(entry.max_iter), step=10,
                                   key="max_iter", bind="query-params"))
    return Controls(ds, sizes, data_seed, params, float(tol), max_iter)


@st.cache_resource(max_entries=24, show_spinner=False)
def _make_problem(model: str, dataset: str, sizes: tuple, seed: int) -> Problem:
    from .registry import get

    return get(model).datasets[dataset](seed=seed, **dict(sizes))


def get_problem(entry: ModelEntry, c: Controls) -> Problem:
    """The dataset instance for these controls (cached across reruns and sessions).

    ``cache_resource`` hands out the same object on every hit (no copy), so models
    may keep per-instance preparations keyed by identity. Problems are read-only.
    """
    return _make_problem(entry.name, c.dataset, tuple(sorted(c.sizes.items())), c.data_seed)


# ----------------------------------------------------------------------------- solving


class LivePanel:
    """A placeholder that redraws the convergence figure while the solver runs."""

    def __init__(self, gap_label: str = "duality gap", reference: float | None = None):
        self.box = st.empty()
        self.gap_label = gap_label
        self.reference = reference
        self.rows: dict[str, list[float]] = {k: [] for k in
                                             ("iteration", "time", "primal", "dual", "gap")}
        self._last = -math.inf
        self.status = None

    def callback(self, state) -> None:
        for k in self.rows:
            self.rows[k].append(getattr(state, k))
        now = time.perf_counter()
        if now - self._last >= _LIVE_EVERY or len(self.rows["iteration"]) == 1:
            self._last = now
            h = SimpleNamespace(**{k: np.asarray(v) for k, v in self.rows.items()})
            fig = figures.convergence_figure(h, gap_label=self.gap_label,
                                             title=f"solving … iteration {state.iteration}, "
                                                   f"relative gap {state.rel_gap:.2e}")
            self.box.plotly_chart(fig, width="stretch")

    def final(self, history: Any, reference: float | None = None, title: str = "") -> None:
        fig = figures.convergence_figure(history, gap_label=self.gap_label,
                                         reference=reference, title=title)
        self.box.plotly_chart(fig, width="stretch")


def solve_with_warm_start(entry: ModelEntry, problem: Problem, c: Controls,
                          callback: Callable | None = None) -> tuple[Any, bool]:
    """Solve, warm-started from the last result on the same problem if there is one."""
    last = _state(entry, "last")
    init = None
    if last is not None and last["problem_key"] == c.problem_key(entry):
        init = last["result"]
    try:
        res = entry.solve(problem, tol=c.tol, max_iter=c.max_iter, init=init,
                          callback=callback, **c.params)
    except (ValueError, TypeError) as exc:
        if init is None or "init" not in str(exc):
            raise
        init = None  # the previous solution does not fit (e.g. another method's state)
        res = entry.solve(problem, tol=c.tol, max_iter=c.max_iter, init=None,
                          callback=callback, **c.params)
    return res, init is not None


# ----------------------------------------------------------------------------- panels


def metrics_row(res: Any, warm: bool, gap_label: str = "gap") -> None:
    cols = st.columns(6)
    cols[0].metric("primal", f"{res.primal:.8g}")
    cols[1].metric("dual (lower bound)", f"{res.dual:.8g}")
    cols[2].metric(gap_label, f"{res.gap:.2e}")
    cols[3].metric("relative gap", f"{res.rel_gap:.2e}")
    cols[4].metric("iterations", f"{res.n_iter}")
    cols[5].metric("time", f"{res.time:.3f} s")
    badge = ":green-badge[converged]" if res.converged else ":orange-badge[not converged]"
    warm_txt = ":blue-badge[warm start]" if warm else ":gray-badge[cold start]"
    st.markdown(f"{badge} {warm_txt} method **{res.method}**")


def default_variants(entry: ModelEntry) -> dict[str, dict[str, Any]]:
    """One variant per value of the ``method`` parameter (if the model has one)."""
    try:
        return {str(m): {"method": m} for m in entry.param("method").choices}
    except KeyError:
        return {}


def comparison_panel(entry: ModelEntry, problem: Problem, c: Controls,
                     variants: dict[str, dict[str, Any]] | None = None) -> None:
    """Solver variants on the same problem, all from a cold start: gap vs time and iteration.

    ``variants`` maps a label to parameter overrides (default: one per ``method``),
    e.g. ``{"naive": {"screening": None}, "screened": {"screening": ("rrpb", "pgb")}}``.
    """
    variants = default_variants(entry) if variants is None else variants
    overridden = {k for v in variants.values() for k in v}
    key = (c.problem_key(entry),
           tuple(sorted((k, v) for k, v in c.params.items() if k not in overridden)),
           c.tol, c.max_iter)
    st.markdown("Every variant from a cold start on the current problem, with the same "
                "tolerance and iteration budget: " + ", ".join(f"**{v}**" for v in variants))
    def run() -> dict[str, Any]:
        runs = {}
        for label, over in variants.items():
            params = dict(c.params, **over)
            runs[label] = entry.solve(problem, tol=c.tol, max_iter=c.max_iter,
                                      init=None, callback=None, **params)
        return {"runs": runs}

    if not variants:
        return
    cmp = on_demand(f"{entry.name}__compare", key, run, label="Run comparison",
                    button_key="run_comparison", icon=":material/compare:",
                    what="run the comparison", subject="The comparison runs")
    if cmp is None:
        return
    hist = {m: r.history for m, r in cmp["runs"].items()}
    left, right = st.columns(2)
    left.plotly_chart(figures.comparison_figure(hist, x="time", title="gap vs time"),
                      width="stretch")
    right.plotly_chart(figures.comparison_figure(hist, x="iteration",
                                                 title="gap vs iteration"), width="stretch")
    rows = []
    for m, r in cmp["runs"].items():
        rows.append({"method": m, "iterations": r.n_iter,
                     "time [s]": round(r.time, 4), "primal": r.primal, "gap": r.gap,
                     "converged": r.converged})
    st.dataframe(rows, hide_index=True)


def reference_panel(entry: ModelEntry, problem: Problem, c: Controls, res: Any | None) -> None:
    """cvxpy's optimal value on request; refused with a message above the size limit."""
    key = (c.problem_key(entry), tuple(sorted(c.model_params().items())))
    refusal = entry.reference_refusal(problem)
    if refusal:
        st.info(refusal, icon=":material/block:")
        return
    if st.button("Compute the cvxpy reference", key="run_reference",
                 icon=":material/verified:"):
        try:
            with st.spinner("cvxpy / Clarabel …"):
                ref = entry.reference(problem, **c.model_params())
            _set_state(entry, "ref", {"key": key, "ref": ref})
        except Exception as exc:
            show_error(exc, "run cvxpy")
    stored = _state(entry, "ref")
    if stored is None or stored["key"] != key:
        return
    ref = stored["ref"]
    cols = st.columns(4)
    cols[0].metric("cvxpy optimum", f"{ref.value:.10g}")
    cols[1].metric("cvxpy time", f"{ref.time:.2f} s")
    if res is not None:
        rel = abs(res.primal - ref.value) / max(1.0, abs(ref.value))
        cols[2].metric("relative difference", f"{rel:.1e}")
        slack = 1e-7 * max(1.0, abs(ref.value))
        inside = res.dual - slack <= ref.value <= res.primal + slack
        cols[3].metric("inside [dual, primal]", "yes" if inside else "NO")


def export_panel(entry: ModelEntry, problem: Problem, c: Controls, res: Any) -> None:
    payload = {
        "model": entry.name,
        "dataset": c.dataset,
        "description": problem.description,
        "sizes": c.sizes,
        "data_seed": c.data_seed,
        "params": c.params,
        "tol": c.tol,
        "max_iter": c.max_iter,
        "result": res.to_dict(),
    }
    st.download_button("Download this run (parameters + history, JSON)",
                       json.dumps(payload, indent=1, default=str),
                       file_name=f"dualscope_{entry.name}_{c.dataset}.json",
                       mime="application/json", icon=":material/download:",
                       key="download_run")
    st.caption("The page state lives in the URL: copy the address bar to share this "
               "configuration.")


# ----------------------------------------------------------------------------- the page


def model_page(
    entry: ModelEntry,
    *,
    latex: str,
    structure: Callable[[Problem, Any, Controls], None],
    explanation: str = "",
    gap_label: str = "duality gap",
    variants: dict[str, dict[str, Any]] | None = None,
    comparison: Callable[[Problem, Any, Controls], None] | None = None,
    fixed: dict[str, Any] | None = None,
) -> None:
    """Draw the standard model page (see the module docstring).

    Parameters
    ----------
    entry : ModelEntry
    latex : str
        The problem statement (KaTeX).
    structure : callable
        ``structure(problem, result, controls)`` draws the model's structure panel.
    explanation : str
        A caption under the summary.
    gap_label : str
        "duality gap", or e.g. "gap (estimate)" where the spec allows only an estimate.
    variants : dict, optional
        Comparison variants (label -> parameter overrides); default one per ``method``.
    comparison : callable, optional
        ``comparison(problem, result, controls)`` drawn under the variants comparison
        (e.g. baselines that are different models, scored on held-out data).
    fixed : dict, optional
        Parameters the page pins (no widget).
    """
    st.title(entry.title)
    c = sidebar_controls(entry, fixed=fixed)
    top_l, top_r = st.columns([3, 2])
    with top_l:
        st.latex(latex)
    with top_r:
        st.markdown(entry.summary)
        if explanation:
            st.caption(explanation)

    try:
        problem = get_problem(entry, c)
    except Exception as exc:
        show_error(exc, "build the dataset")
        return
    st.caption(f"**{problem.name}** — {problem.description}")

    stored_ref = _state(entry, "ref")
    ref_key = (c.problem_key(entry), tuple(sorted(c.model_params().items())))
    reference = stored_ref["ref"].value if stored_ref and stored_ref["key"] == ref_key else None

    st.subheader("Convergence")
    live = LivePanel(gap_label=gap_label)
    res, warm, error = None, False, None
    last = _state(entry, "last")
    if (last is not None and last["problem_key"] == c.problem_key(entry)
            and last["controls"] == c):
        # Nothing about the solve changed (a button or a display control caused this
        # rerun): show the stored, certified result instead of re-solving it.
        res, warm = last["result"], last.get("warm", False)
    else:
        try:
            res, warm = solve_with_warm_start(entry, problem, c, callback=live.callback)
        except Exception as exc:  # StopException / RerunException are BaseException
            error = exc
    if res is not None:
        # A safe point: the run finished, keep it for warm starts and for errors later.
        _set_state(entry, "last", {"problem_key": c.problem_key(entry), "result": res,
                                   "controls": c, "problem": problem, "warm": warm})
    else:
        show_error(error)
        last = _state(entry, "last")
        if last is None:
            return
        st.caption("Showing the last successful run.")
        res, problem, c = last["result"], last["problem"], last["controls"]
    live.final(res.history, reference=reference)
    metrics_row(res, warm, gap_label="gap" if gap_label == "duality gap" else gap_label)

    tabs = st.tabs(["Structure", "Comparison", "cvxpy reference", "Export"])
    with tabs[0]:
        try:
            structure(problem, res, c)
        except Exception as exc:
            show_error(exc, "draw the structure panel")
    with tabs[1]:
        comparison_panel(entry, problem, c, variants=variants)
        if comparison is not None:
            try:
                comparison(problem, res, c)
            except Exception as exc:
                show_error(exc, "draw the comparison")
    with tabs[2]:
        reference_panel(entry, problem, c, res)
    with tabs[3]:
        export_panel(entry, problem, c, res)
