"""The panels of a model page: metrics, comparison, cvxpy reference, export."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st

from .. import figures
from ..numfmt import BELOW_PRECISION, gap_text
from ..registry import ModelEntry, Problem
from .fmt import certificate_digits, fmt_time
from .state import Stored, demand_store, page_state

__all__ = [
    "comparison_panel",
    "default_variants",
    "export_panel",
    "metrics_row",
    "on_demand",
    "reference_panel",
    "show_error",
    "stored_comparison",
    "stored_reference",
]

#: the exceptions a panel shows as a message (anything else is a bug and propagates)
PANEL_ERRORS = (ValueError, TypeError, ArithmeticError, LookupError,
                MemoryError, RuntimeError, OSError)


def show_error(exc: BaseException, what: str = "solve") -> None:
    """An error as a message (never a traceback)."""
    name = type(exc).__name__
    st.error(f"Could not {what}: {name}: {exc}", icon=":material/error:")


def on_demand(state_key: str, key: Any, compute: Callable[[], Any], *, label: str,
              button_key: str, icon: str, what: str, subject: str = "The results",
              stale_ok: bool = True) -> Any | None:
    """A costly computation behind a button, kept in the session with the settings it used.

    Clicking ``label`` runs ``compute()`` (its errors are shown as a message and the
    last value stays on screen) and stores its value with ``key``. Returns the stored
    value, or None before the first run; a value computed for other settings (``key``
    changed) is returned with a caption saying so, or not at all when ``stale_ok`` is False.
    """
    store = demand_store()
    if st.button(label, key=button_key, icon=icon):
        try:
            with st.spinner(what + " …"):
                value = compute()
            store[state_key] = Stored(key, value)
        except PANEL_ERRORS as exc:  # shown; the previous value stays below
            show_error(exc, what)
    stored = store.get(state_key)
    if stored is None:
        return None
    if stored.key != key:
        if not stale_ok:
            return None
        st.caption(f"{subject} below are for earlier settings; run again to refresh.")
    return stored.value


def _compare_key(entry: ModelEntry) -> str:
    return f"{entry.name}.compare"


def _reference_key(entry: ModelEntry, c: Any) -> tuple:
    return (c.problem_key(entry), tuple(sorted(c.model_params().items())))


def stored_comparison(entry: ModelEntry) -> dict[str, Any] | None:
    """The runs of the last comparison (label -> result), or None."""
    cmp = demand_store().get(_compare_key(entry))
    return dict(cmp.value["runs"]) if cmp else None


def stored_reference(entry: ModelEntry, c: Any) -> Any | None:
    """The cvxpy reference computed for exactly these controls, or None."""
    ref = page_state(entry.name).reference
    return ref.value if ref is not None and ref.key == _reference_key(entry, c) else None


def _zero_note(gap: float) -> dict[str, Any]:
    """A metric's note under an exactly-zero gap: it is below machine precision."""
    if gap_text(gap) != BELOW_PRECISION:
        return {}
    return {"delta": BELOW_PRECISION, "delta_color": "off", "delta_arrow": "off"}


def metrics_row(res: Any, warm: bool, gap_label: str = "gap") -> None:
    """The certificate (primal, dual, gap with enough digits to see them differ) and costs."""
    digits = certificate_digits(res.primal, res.dual)
    cols = st.columns([3, 3, 2])
    cols[0].metric("primal", f"{res.primal:.{digits}g}")
    cols[1].metric("dual (lower bound)", f"{res.dual:.{digits}g}")
    cols[2].metric(gap_label, gap_text(res.gap, short=True),  # the note: under rel. gap
                   help="primal − dual, in the objective's units: a bound on the distance "
                        "of the primal value to the optimum")
    cols = st.columns([3, 3, 2])
    cols[0].metric("relative gap", gap_text(res.rel_gap, ".2e", short=True),
                   **_zero_note(res.rel_gap),
                   help="gap / max(1, |primal|): the stopping criterion")
    cols[1].metric("iterations", f"{res.n_iter}")
    compile_time = float(getattr(res, "compile_time", 0.0) or 0.0)
    cols[2].metric("time", fmt_time(res.time),
                   help="solver time; numba compilation and cache loading excluded")
    badge = ":green-badge[converged]" if res.converged else ":orange-badge[not converged]"
    reason = getattr(res, "stop_reason", "")
    if not res.converged and reason:
        badge += f" :orange-badge[stopped: {reason}]"
    warm_txt = ":blue-badge[warm start]" if warm else ":gray-badge[cold start]"
    extra = (f" · (+{compile_time:.1f} s one-time compilation, not counted)"
             if compile_time >= 0.05 else "")
    st.markdown(f"{badge} {warm_txt} method **{res.method}**{extra}")


def default_variants(entry: ModelEntry) -> dict[str, dict[str, Any]]:
    """One variant per value of the ``method`` parameter (if the model has one)."""
    try:
        return {str(m): {"method": m} for m in entry.param("method").choices}
    except KeyError:
        return {}


def comparison_panel(entry: ModelEntry, problem: Problem, c: Any,
                     variants: dict[str, dict[str, Any]] | None = None) -> None:
    """Solver variants on the same problem, all from a cold start: gap vs time and iteration.

    ``variants`` maps a label to parameter overrides (default: one per ``method``),
    e.g. ``{"naive": {"screening": None}, "screened": {"screening": ("rrpb", "pgb")}}``.
    """
    variants = default_variants(entry) if variants is None else variants
    if not variants:
        return
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

    cmp = on_demand(_compare_key(entry), key, run, label="Run comparison",
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
        # the certificate first, then the costs
        rows.append({"method": m, "converged": r.converged, "gap": gap_text(r.gap, ".2e"),
                     "primal": r.primal, "iterations": r.n_iter,
                     "time [s]": round(r.time, 4),
                     "compile [s]": round(float(getattr(r, "compile_time", 0.0)), 2)})
    st.dataframe(rows, hide_index=True, width="stretch", column_config={
        "primal": st.column_config.NumberColumn(format="%.10g")})
    st.caption("time excludes numba compilation (shown separately in 'compile').")


def reference_panel(entry: ModelEntry, problem: Problem, c: Any, res: Any | None) -> None:
    """cvxpy's optimal value on request; refused with a message above the size limit."""
    ps = page_state(entry.name)
    key = _reference_key(entry, c)
    refusal = entry.reference_refusal(problem)
    if refusal:
        st.info(refusal, icon=":material/block:")
        return
    if st.button("Compute the cvxpy reference", key="run_reference",
                 icon=":material/verified:"):
        from cvxpy.error import SolverError

        try:
            with st.spinner("cvxpy / Clarabel …"):
                ref = entry.reference(problem, **c.model_params())
            ps.reference = Stored(key, ref)
        except (*PANEL_ERRORS, SolverError) as exc:  # shown; no reference value displayed
            show_error(exc, "run cvxpy")
    stored = ps.reference
    if stored is None or stored.key != key:
        return
    ref = stored.value
    cols = st.columns(4)
    cols[0].metric("cvxpy optimum", f"{ref.value:.10g}")
    cols[1].metric("cvxpy time", f"{ref.time:.2f} s")
    if res is not None:
        rel = abs(res.primal - ref.value) / max(1.0, abs(ref.value))
        cols[2].metric("relative difference", f"{rel:.1e}")
        slack = 1e-7 * max(1.0, abs(ref.value))
        inside = res.dual - slack <= ref.value <= res.primal + slack
        cols[3].metric("inside [dual, primal]", "yes" if inside else "NO")


def export_panel(entry: ModelEntry, problem: Problem, c: Any, res: Any) -> None:
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
    sm, model_error = None, None
    try:  # the learned model, as `dualscope solve --json` writes it (one builder)
        from solvers.saved import RUN_KEY

        from ..datafiles import fitted_model

        sm = fitted_model(entry.name, problem, res, c.params)
        payload[RUN_KEY] = sm.to_json()
    except PANEL_ERRORS as exc:  # the run's download below still works, without it
        model_error = exc
    st.download_button("Download this run (parameters, history and the learned model, JSON)",
                       json.dumps(payload, indent=1, default=str),
                       file_name=f"dualscope_{entry.name}_{c.dataset}.json",
                       mime="application/json", icon=":material/download:",
                       key="download_run")
    st.caption("The page state lives in the URL: copy the address bar to share this "
               "configuration." + (" An uploaded file is not part of it: a shared link "
                                   "does not carry the file." if getattr(c, "upload", "")
                                   else ""))
    if model_error is not None:
        show_error(model_error, "prepare the model download")
        return
    try:
        from .upload import model_downloads

        model_downloads(entry, problem, res, sm)
    except PANEL_ERRORS as exc:  # the run's download above still works
        show_error(exc, "prepare the model download")
