"""Streamlit page kit shared by every model page.

A model page is a few lines::

    def render():
        ui.model_page(ENTRY, latex=PROBLEM, structure=structure_panel)

Modules: :mod:`.controls` (sidebar controls bound to the URL query, with visible
messages for invalid URL values and dependent limits), :mod:`.state` (typed session
state), :mod:`.problems` (the memory-bounded dataset cache), :mod:`.solve` (live
panel, warm starts), :mod:`.panels` (metrics, comparison, cvxpy reference, export,
on-demand computations) and :mod:`.page` (:func:`model_page`).
"""

from __future__ import annotations

from .controls import TOL_OPTIONS, Controls, Limits, UrlNote, param_widget, sidebar_controls
from .fmt import certificate_digits, fmt, fmt_time, log_options, pretty
from .guards import cost_guard
from .page import Guard, model_page, sweep_panel
from .panels import (
    PANEL_ERRORS,
    comparison_panel,
    default_variants,
    export_panel,
    metrics_row,
    on_demand,
    reference_panel,
    show_error,
    stored_comparison,
    stored_reference,
)
from .problems import ProblemCache
from .solve import LivePanel, solve_with_warm_start
from .source import get_problem
from .state import LastRun, PageState, Stored, page_state

__all__ = [
    "PANEL_ERRORS",
    "TOL_OPTIONS",
    "Controls",
    "Guard",
    "LastRun",
    "Limits",
    "LivePanel",
    "PageState",
    "ProblemCache",
    "Stored",
    "UrlNote",
    "certificate_digits",
    "comparison_panel",
    "cost_guard",
    "default_variants",
    "export_panel",
    "fmt",
    "fmt_time",
    "get_problem",
    "log_options",
    "metrics_row",
    "model_page",
    "on_demand",
    "page_state",
    "param_widget",
    "pretty",
    "reference_panel",
    "show_error",
    "sidebar_controls",
    "solve_with_warm_start",
    "stored_comparison",
    "stored_reference",
    "sweep_panel",
]
