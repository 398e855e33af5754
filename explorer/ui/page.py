"""The standard model page, drawn from a registry entry (see :func:`model_page`)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from ..registry import ModelEntry, Problem
from .controls import Controls, Limits, sidebar_controls
from .fmt import pretty
from .guards import cost_guard
from .history import enable_history
from .panels import (
    PANEL_ERRORS,
    comparison_panel,
    export_panel,
    metrics_row,
    reference_panel,
    show_error,
)
from .solve import LivePanel, solve_with_warm_start
from .source import get_problem
from .state import LastRun, page_state

__all__ = ["Guard", "model_page", "sweep_panel", "with_defaults"]

#: ``guard(controls) -> message | None``: a cost estimate above the page's limits
#: (:data:`explorer.limits.PAGE`); the page then asks for confirmation.
Guard = Callable[[Controls], "str | None"]

_SWEEP_MODULE = "explorer.sweep_panel"


def sweep_panel() -> Any | None:
    """The ``explorer.sweep_panel`` module when it is installed, else None."""
    try:
        if importlib.util.find_spec(_SWEEP_MODULE) is None:
            return None
    except (ImportError, ValueError):
        return None
    return importlib.import_module(_SWEEP_MODULE)


def with_defaults(entry: ModelEntry, defaults: Mapping[str, Any] | None) -> ModelEntry:
    """``entry`` with the defaults of some parameters replaced (the page's own defaults)."""
    if not defaults:
        return entry
    unknown = set(defaults) - {p.name for p in entry.params}
    if unknown:
        raise KeyError(f"model {entry.name!r} has no parameter(s) {sorted(unknown)}")
    params = tuple(dataclasses.replace(p, default=defaults[p.name]) if p.name in defaults
                   else p for p in entry.params)
    return dataclasses.replace(entry, params=params)


def _continue(entry: ModelEntry, problem: Problem, c: Controls, res: Any,
              live: LivePanel) -> bool:
    """A run that stopped at ``max_iter``: a button that continues from where it stopped.

    The continuation is a warm start from the stopped iterate with the same settings and
    another ``max_iter`` iterations; its result replaces the stopped one (True: rerun).
    """
    if res.converged or getattr(res, "stop_reason", "") != "max_iter":
        return False
    st.info(f"The solver stopped at the iteration budget (max_iter = {c.max_iter:,}) "
            f"with relative gap {res.rel_gap:.1e} > tol = {c.tol:g}. Continue from this "
            "iterate (a warm start, same settings), or raise *max_iter* in the sidebar.",
            icon=":material/pause_circle:")
    if not st.button(f"Continue for another {c.max_iter:,} iterations",
                     key="continue_solve", icon=":material/resume:"):
        return False
    ps = page_state(entry.name)
    try:
        more, _ = solve_with_warm_start(entry, problem, c, callback=live.callback)
    except PANEL_ERRORS as exc:  # the message; the stopped result stays on screen
        show_error(exc, "continue the solve")
        return False
    ps.last = LastRun(c.problem_key(entry), c, more, problem, True)
    return True


def _confirmed(entry: ModelEntry, c: Controls, guard: Guard | None) -> bool:
    """False (after drawing the estimate and a confirm button) when the guard objects."""
    if c.from_file:
        from .upload import file_guard

        guard = file_guard(entry)  # from the real size of the file's problem
    msg = (guard or cost_guard(entry))(c)
    if not msg:
        return True
    ps = page_state(entry.name)
    key = c.problem_key(entry)  # confirmed sizes stay confirmed while parameters move
    if key in ps.confirmed:
        return True
    st.warning(msg, icon=":material/hourglass_top:")
    if st.button("Solve anyway", key="confirm_cost", icon=":material/play_arrow:"):
        ps.confirmed.add(key)
        return True
    return False


def _tabs(entry: ModelEntry, problem: Problem, res: Any, c: Controls,
          structure: Callable[[Problem, Any, Controls], None],
          comparison: Callable[[Problem, Any, Controls], None] | None,
          variants: dict[str, dict[str, Any]] | None) -> None:
    """Structure / Comparison / cvxpy reference / (Sweep) / Export.

    Runs as a fragment: a button in a tab reruns the tabs only, not the solve.
    """
    sweep = sweep_panel()
    names = ["Structure", "Comparison", "cvxpy reference"] + (["Sweep"] if sweep else [])
    tabs = st.tabs([*names, "Export"])
    with tabs[0]:
        try:
            structure(problem, res, c)
        except PANEL_ERRORS as exc:  # the message replaces the structure panel
            show_error(exc, "draw the structure panel")
    with tabs[1]:
        comparison_panel(entry, problem, c, variants=variants)
        if comparison is not None:
            try:
                comparison(problem, res, c)
            except PANEL_ERRORS as exc:  # the message replaces the extra comparison
                show_error(exc, "draw the comparison")
    with tabs[2]:
        reference_panel(entry, problem, c, res)
    if sweep:
        with tabs[3]:
            try:
                with contextlib.ExitStack() as stack:
                    dataset = c.dataset
                    if c.from_file:  # the sweep's workers read the upload's file, kept
                        from .upload import sweep_upload_spec  # until the sweep ends

                        dataset = stack.enter_context(sweep_upload_spec(entry, c))
                    sweep.render(entry, dataset, dict(c.sizes), c.data_seed, dict(c.params))
            except PANEL_ERRORS as exc:  # the message replaces the sweep panel
                show_error(exc, "run the sweep")
    with tabs[-1]:
        export_panel(entry, problem, c, res)


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
    limits: Limits | None = None,
    guard: Guard | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> None:
    """Draw the standard model page.

    Sidebar controls (dataset and its sizes, the model parameters on log-scale
    sliders where they span decades, the method, tolerance and iteration budget, all
    bound to the URL query and checked with a visible message), the problem
    statement, a live convergence panel, the certificate, and tabs with the model's
    structure panel, the baseline-vs-method comparison, the cvxpy reference on request,
    the sweep (when :mod:`explorer.sweep_panel` exists) and the JSON download. Moving a
    control re-solves warm-started from the last solution of the same problem. Errors
    (a dataset that cannot be built, a solver error) are shown as messages and the last
    good result stays on screen.

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
        ``comparison(problem, result, controls)`` drawn under the variants comparison.
    fixed : dict, optional
        Parameters the page pins (no widget).
    limits : callable, optional
        Dependent limits of the controls (see :data:`explorer.ui.controls.Limits`).
    guard : callable, optional
        ``guard(controls) -> message | None``: a cost estimate; when it returns a
        message the page asks for confirmation before solving (default:
        :func:`explorer.ui.guards.cost_guard`, the dataset's cost model).
    defaults : dict, optional
        The page's own defaults of some parameters (the values that show the paper's
        point on this page's datasets); the solver's defaults (the CLI's) stay as they are.
    """
    entry = with_defaults(entry, defaults)
    st.title(entry.title)
    enable_history()
    c = sidebar_controls(entry, fixed=fixed, limits=limits)
    for note in c.notes:
        st.warning(note.text(), icon=":material/link_off:")
    st.markdown(pretty(entry.summary))
    st.latex(latex)
    if explanation:
        st.caption(explanation)

    ps = page_state(entry.name)
    problem, error, what = None, None, "solve"
    try:
        if c.from_file and c.source is None:  # "your file" chosen, nothing uploaded yet
            st.info("Choose a data file in the sidebar (your file).", icon=":material/upload:")
        elif _confirmed(entry, c, guard):
            problem = get_problem(entry, c)
    except PANEL_ERRORS as exc:  # the message, and the last good result below
        error, what = exc, "read the file" if c.from_file else "build the dataset"
    if problem is not None:
        st.caption(f"**{problem.name}** — {problem.description}")
        if c.from_file:
            from .upload import preview

            preview(problem)

    reference = None
    if ps.reference is not None and ps.reference.key == (
            c.problem_key(entry), tuple(sorted(c.model_params().items()))):
        reference = ps.reference.value.value

    head, pick = st.columns([1, 1], vertical_alignment="bottom")  # the picker fits at 800 px
    head.subheader("Convergence")
    # one axis at a time by default: half the axes and traces for the browser to redraw
    axis = pick.segmented_control("against", ["iteration", "time", "both"],
                                  default="iteration", key="convergence_axis",
                                  label_visibility="collapsed") or "iteration"
    live = LivePanel(gap_label=gap_label, x=axis)
    res, warm = None, False
    last = ps.last
    if problem is not None:
        if last is not None and last.problem_key == c.problem_key(entry) and last.controls == c:
            # Nothing about the solve changed (a button or a display control caused this
            # rerun): show the stored, certified result instead of re-solving it.
            res, warm = last.result, last.warm
        else:
            try:
                res, warm = solve_with_warm_start(entry, problem, c, callback=live.callback)
            except PANEL_ERRORS as exc:  # the message, and the last good result below
                error = exc
    if res is not None:
        # A safe point: the run finished, keep it for warm starts and for errors later.
        ps.last = LastRun(c.problem_key(entry), c, res, problem, warm)
    else:
        if error is not None:
            show_error(error, what)
        if c.source is not None and (
                ps.last is None or ps.last.problem_key != c.problem_key(entry)):
            # a file that failed: the previous result (another file or a built-in dataset)
            # is not shown under its name
            live.box.warning("Nothing was solved for this file: fix it or its options in "
                             "the sidebar.", icon=":material/error:")
            return
        if ps.last is None:
            live.box.info("Nothing solved yet: change the settings above.",
                          icon=":material/info:")
            return
        st.caption("Showing the last successful run.")
        res, problem, c, warm = ps.last.result, ps.last.problem, ps.last.controls, \
            ps.last.warm
        reference = None
    live.final(res.history, reference=reference)
    metrics_row(res, warm, gap_label="gap" if gap_label == "duality gap" else gap_label)
    _held_out_row(entry, problem, res, c)
    if problem is not None and error is None and _continue(entry, problem, c, res, live):
        st.rerun()
    assert problem is not None  # a result is shown only with the problem it solved
    st.fragment(_tabs)(entry, problem, res, c, structure, comparison, variants)


def _held_out_row(entry: ModelEntry, problem: Problem | None, res: Any, c: Controls) -> None:
    """The held-out scores of a file problem with a held-out part (:mod:`solvers.scoring`,
    the same names and values as ``dualscope solve --test-size`` prints)."""
    if problem is None or problem.info.get("test_table") is None:
        return
    from ..datafiles import held_out_scores

    try:
        scores = held_out_scores(entry.name, problem, res, c.model_params())
    except ValueError as exc:
        st.caption(f"held-out score not available: {exc}")
        return
    if scores:
        cols = st.columns(len(scores))
        for col, sc in zip(cols, scores, strict=True):
            col.metric(f"held-out {sc.name}", f"{sc.value:.4g}")
