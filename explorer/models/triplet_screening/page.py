"""The safe triplet screening dashboard page."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import streamlit as st

from solvers import triplet_screening as ts

from ... import ui
from . import ENTRY, prepared
from .figures import (
    coincident,
    dynamic_heatmap,
    path_rates_figure,
    path_time_figure,
    radii_figure,
    range_heatmap,
    status_counts_figure,
    triplet_map_figure,
)

PROBLEM = (
    r"\min_{M\succeq 0}\ P_\lambda(M)=\sum_{t\in\mathcal T}\ell\bigl(\langle M,H_t\rangle\bigr)"
    r"+\frac\lambda2\|M\|_F^2"
    r"\\[2pt]"
    r"H_{ijl}=(x_i-x_l)(x_i-x_l)^\top-(x_i-x_j)(x_i-x_j)^\top"
    r"\\[8pt]"
    r"\max_{0\le\alpha\le1}\ D_\lambda(\alpha)=-\frac\gamma2\|\alpha\|^2+\mathbf 1^\top\alpha"
    r"\\[2pt]"
    r"-\frac1{2\lambda}\Bigl\|\Bigl[\sum_t\alpha_tH_t\Bigr]_+\Bigr\|_F^2"
    r"\\[2pt]"
    r"M_\lambda(\alpha)=\tfrac1\lambda\Bigl[\sum_t\alpha_tH_t\Bigr]_+,\quad"
    r"\alpha_t^\star=-\ell'(\langle M^\star,H_t\rangle)"
    r"\\[8pt]"
    r"M^\star\in\mathcal B(Q,r):"
    r"\\[2pt]"
    r"\langle Q,H_t\rangle+r\|H_t\|_F<1-\gamma\ \Rightarrow\ t\in\mathcal L^\star"
    r"\ (\alpha^\star_t=1)"
    r"\\[2pt]"
    r"\langle Q,H_t\rangle-r\|H_t\|_F>1\ \Rightarrow\ t\in\mathcal R^\star"
    r"\ (\alpha^\star_t=0)"
    r"\\[8pt]"
    r"\text{DGB: }Q=M,\ r=\sqrt{2\,\mathrm{gap}/\lambda}"
    r"\\[2pt]"
    r"\text{RRPB: }Q=\tfrac{\lambda_0+\lambda_1}{2\lambda_1}M_0,"
    r"\\[2pt]"
    r"r=\tfrac{|\lambda_0-\lambda_1|}{2\lambda_1}\|M_0\|_F"
    r"+\tfrac{|\lambda_0-\lambda_1|+\lambda_0+\lambda_1}{2\lambda_1}\,\varepsilon"
)

EXPLANATION = (
    "Each triplet (i, j, l) asks x_i to be closer to its same-class neighbour x_j than to the "
    "other-class x_l by a margin of 1 under the metric M. A sphere that provably contains the "
    "optimum M* bounds every margin ⟨M*, H_t⟩; a triplet whose bound lies below 1 − γ is fixed "
    "on the linear part of the loss (L̂), one above 1 has zero loss (R̂), and both leave the "
    "problem without changing its solution. Screening runs at iteration 0 (from the previous "
    "λ's solution when the page warm-starts: RRPB) and during the optimisation (dynamic "
    "screening: every 10 iterations as in the paper, or — the default — whenever the "
    "duality-gap ball has shrunk below the last screening sphere). The gap P − D certifies "
    "the reduced problem and the full one alike. "
    "λ is set relative to λ_max, above which every triplet is in L*."
)

FINDINGS = (
    "**Measured (`dualscope bench triplet_screening`, this 2-core machine, CPU time of the "
    "whole path, one run each).** Screening was safe on every check (random problems × every "
    "sphere and rule, path and dynamic, no triplet in the wrong set). The naive path is fast: "
    "its loss pass runs by anchor blocks (one anchor, its same-class points in rows, its "
    "other-class points in columns), 0.3–1.0 ns per triplet against ~106 ns for the authors' "
    "C++, so wine with k = ∞ (1,232,288 triplets) takes 1.0 s naive at relative gap 1e-6 "
    "(4.0 s with the pair-id pass of earlier rounds; the authors' C++: 254 s). Against that "
    "baseline the RRPB path is **1.16–1.21× faster** at 1e-6 and **1.46–1.59×** at 1e-9 "
    "(0.9 s and 1.2 s; the authors' C++ RRPB: 54.6 s at its 4.65× over its own naive pass), "
    "and RRPB+PGB (the default) as fast; "
    "wine k = 10: 1.8–1.9× (0.9 s at 1e-6, against 5.6–6.1 s for the authors' C++); digits "
    "(PCA 16–20, k = 10–20): 1.0–1.25× at 1e-6 and 1.1–1.45× at 1e-9. With the hinge "
    "loss (the paper's Appendix L.1; the dual method, its iterations in one compiled loop) "
    "RRPB makes the whole path of wine k = 10 2.5–2.6× faster (4.1–4.4 s against "
    "10.3–11.0 s naive). Screening leaves the "
    "blocks: what remains goes by pair ids at ~1.3 ns per triplet, so it must remove about "
    "half of the triplets (digits PCA 20) to four fifths (wine, k = ∞) before a loss pass "
    "gets cheaper, and the triplets left sit in most rows (73–100 % of them), so a "
    "block pass over just those rows would cost 73–100 % of one over all. A λ takes 4–13 "
    "iterations, one pass over all triplets screens them, and the per-pair forms (which "
    "screening shrinks little) are a third of the time; path screening runs only at the λ "
    "where it is predicted to pay (the notes list the others). "
    "Two exact options that are not screening go further (sidebar: loss pass; path "
    "section: start of each λ): the sorted loss pass (per anchor, the forms sorted and "
    "the triplets at α = 1 summed by prefix sums) and the secant start (each λ from the "
    "path extrapolated in log λ). Over three bench runs, sorted pass + secant start ran "
    "the wine k = ∞ path in 0.26–0.37 s at 1e-6 (3.3–3.9× the naive path) and "
    "0.67–0.93 s at 1e-9 (2.4–2.7×); RRPB + secant start: wine k = 10 3.0–3.4× at 1e-6, "
    "2.3–2.6× at 1e-9; digits (the better of the two per set) 1.5–1.8× at 1e-6, "
    "1.3–1.6× at 1e-9. "
    "What screening cannot remove — the d×d eigendecompositions, the per-pair forms, one "
    "pass per λ over all triplets to screen them — bounds the gain. Among the spheres, PGB "
    "equals RPB at an exact optimum (Thm 3.8), DGB is weaker (radius twice RPB's, Thm 3.9), "
    "and the SDLS rule costs much more time for little extra screening."
)

#: Spheres and rules compared along the path (RPB treats the previous solution as exact).
PATH_SPHERES = ("gb", "pgb", "dgb", "cdgb", "rpb", "rrpb")
#: Seconds a path run may take on the page before it stops (a partial path is shown).
PATH_BUDGET = 60.0
_PATH = "triplet_screening__path"
_PATH_CMP = "triplet_screening__path_comparison"

VARIANTS = {
    "naive": {"screening": "none", "active_set": False},
    "screened (RRPB+PGB)": {"screening": "rrpb+pgb", "active_set": False},
    "screened, no back-off (RRPB+PGB)": {"screening": "rrpb+pgb", "active_set": False,
                                         "backoff": False},
    "active set": {"screening": "none", "active_set": True, "method": "pgd"},
    "active set + screening (RRPB+PGB)": {"screening": "rrpb+pgb", "active_set": True,
                                          "method": "pgd"},
}
PATH_METHODS: dict[str, dict[str, Any]] = {
    "naive": {"screening": None, "active_set": False},
    "screened (RRPB+PGB)": {"screening": ("rrpb", "pgb"), "active_set": False},
    "screened, no back-off (RRPB+PGB)": {"screening": ("rrpb", "pgb"), "active_set": False,
                                         "backoff": False},
    "active set": {"screening": None, "active_set": True, "method": "pgd"},
    "active set + screening (RRPB+PGB)": {"screening": ("rrpb", "pgb"), "active_set": True,
                                          "method": "pgd"},
}


def _kinds(screening: str) -> tuple[str, ...] | None:
    return None if screening == "none" else tuple(screening.split("+"))


def _setup(problem, c):
    """``(TripletProblem, lam, lam_max)`` of the page's current settings."""
    p = c.params
    prob = prepared(problem, p["loss"], float(p["gamma"]), bool(p["diagonal"]))
    lmax = prob.lambda_max()
    return prob, float(p["lam_rel"]) * lmax, lmax


# ----------------------------------------------------------------------------- structure


def structure(problem, res, c) -> None:
    """Triplet status in the learned metric, counts and radii over the iterations, the path."""
    X, y = problem.data["X"], problem.data["y"]
    T = problem.data["triplets"]
    status = res.status()
    n_t = res.n_triplets
    nL, nR = int(res.screened_L.size), int(res.screened_R.size)
    st.markdown("**What to look for:** the red (L̂) and blue (R̂) bands of the status chart "
                "growing as the sphere around M* shrinks: each screened triplet leaves the "
                f"problem with its optimal α certified (here {res.screening_rate:.0%} of "
                f"{res.n_triplets:,}), and the solution is unchanged.")
    cols = st.columns(3) + st.columns(3)  # two rows: readable in a narrow window
    cols[0].metric("screened into L̂", f"{nL:,}")
    cols[1].metric("screened into R̂", f"{nR:,}")
    cols[2].metric("still active", f"{n_t - nL - nR:,}")
    cols[3].metric("screening rate", f"{res.screening_rate:.1%}")
    cols[4].metric("‖M − M*‖_F ≤", f"{res.radius:.2e}")
    st.caption(_backoff_line(res))
    left, right = st.columns([3, 2])
    with left:
        cap = st.slider("triplets drawn per status", 0, 200, 30, step=10, key="triplets_drawn",
                        help="a fixed random sample of each status (the full set has "
                             f"{n_t:,} triplets)")
        st.plotly_chart(triplet_map_figure(res.M, X, y, T, status, per_status=int(cap),
                                           class_names=problem.info.get("class_names")),
                        width="stretch")
    with right:
        st.plotly_chart(status_counts_figure(res.history, n_t), width="stretch")
        st.plotly_chart(radii_figure(res.screening_log, res.history, res.lam),
                        width="stretch")
    _caption(res, c)
    log = res.screening_log
    if len(log.get("sphere", ())):
        with st.expander("screening rounds (one row per round and sphere)"):
            st.dataframe({
                "iteration": np.asarray(log["iteration"]),
                "sphere": np.asarray(log["sphere"]).astype(str),
                "rule": np.asarray(log["rule"]).astype(str),
                "radius": np.asarray(log["radius"], dtype=float),
                "new into L̂": np.asarray(log["new_L"]),
                "new into R̂": np.asarray(log["new_R"]),
                "total L̂": np.asarray(log["total_L"]),
                "total R̂": np.asarray(log["total_R"]),
            }, hide_index=True)
    path_section(problem, res, c)


#: The page's defaults: screen on every round, so the screening sets show (the solver's
#: own default, back-off on, skips rounds that cost more than they save).
PAGE_DEFAULTS = {"backoff": False}


def _backoff_line(res) -> str:
    """One line: is the back-off on, what it does, and what it did to this run."""
    notes = "; ".join(getattr(res, "notes", ()))
    if not res.params.get("backoff", True):
        return ("Back-off off (this page's default): every screening round runs, so the "
                "sets above show what the spheres certify; turn *backoff* on to skip rounds "
                "that cost more loss-pass work than they can save (the solver's default, "
                "faster on small problems).")
    return ("Back-off on: screening rounds that would cost more than the loss passes they "
            "can save are skipped" + (f" — here: {notes}" if notes else "") + " (turn "
            "*backoff* off to screen anyway).")


def _caption(res, c) -> None:
    st.caption(
        f"λ = {ui.fmt(float(c.params['lam_rel']))} λ_max = {res.lam:.4g}; screening "
        f"**{res.params.get('screening')}** with the **{res.params.get('rule')}** rule. "
        "Left: the data mapped by X L with M = L Lᵀ, on M's two strongest directions, so "
        "distances in the picture are distances under the learned metric (restricted to "
        "those directions). Each drawn triplet (i, j, l) is a path through its anchor x_i "
        "(dot): solid to the same-class x_j, dotted to the other-class x_l. L̂ triplets are "
        "certified violated at the optimum (margin < 1 − γ: linear loss), R̂ triplets "
        "certified satisfied (margin > 1: zero loss); the rest stay in the optimisation. "
        "Right: the counts per iteration (screening at iteration 0, then whenever the "
        "gap ball has shrunk, or every 10 iterations) and the radius of each sphere "
        "when it was used; √(2 gap/λ) bounds "
        "‖M − M*‖ at every iteration. Move λ to watch the next solve start from this "
        "one: RRPB screens at iteration 0 from the previous λ's solution.")


def path_section(problem, res, c) -> None:
    """The regularisation path behind a button: rates per sphere/rule, range heatmap."""
    st.markdown("#### Along the regularisation path")
    prob, lam, lmax = _setup(problem, c)
    p = c.params
    setting = st.radio(
        "path setting", list(PATH_SETTINGS), key="path_setting", horizontal=True,
        help="the sidebar's solver on the ratio below, or the paper's practical setting "
             "(its Table 2): the active-set method (working set = triplets with positive "
             "loss, refreshed every 10 iterations) on the fine path λ_t = 0.99 λ_(t-1), "
             "with the sidebar's screening, loss and γ (the paper: smoothed hinge, γ = 0.05)")
    practical = PATH_SETTINGS[setting]
    a, b, w_, d_ = st.columns(4)
    ratio = a.select_slider("path ratio λ_t / λ_(t-1)", [0.7, 0.8, 0.9, 0.95, 0.99], 0.9,
                            key="path_ratio", disabled=practical is not None)
    if practical is not None:
        ratio = practical["ratio"]
    n_max = b.slider("at most this many λ", 5, 200, 60, key="path_lambdas")
    warm = w_.selectbox("start of each λ", list(ts.WARM_STARTS), key="path_warm",
                        help="previous: the last λ's solution (the paper); secant: the path "
                             "extrapolated in log λ, [2 M_(t-1) - M_(t-2)]_+ on the ratio's "
                             "steps (fewer iterations, one more loss pass per λ)")
    rules = d_.multiselect("rules to compare", list(ts.RULES), ["sphere", "linear"],
                           key="path_rules",
                           help="SDLS solves a 1-D dual per candidate triplet: slow on "
                                "large problems")
    kinds = _kinds(p["screening"])
    st.markdown(
        f"From λ_max = {lmax:.4g} down to the current λ = {lam:.4g} (or the paper's "
        "termination rule), warm-started, screening with "
        f"**{p['screening']}** / **{p['rule']}**"
        + (f", active-set method, ratio {ratio:g} (the paper's practical setting)"
           if practical is not None else "")
        + "; at each λ every sphere and rule is also "
        f"evaluated alone from the previous solution (RPB treats it as exact: theory only). "
        f"Stops after {PATH_BUDGET:.0f} s.")
    key = (c.problem_key(ENTRY), tuple(sorted(c.model_params().items())), c.tol, c.max_iter,
           ratio, n_max, warm, tuple(rules), setting)
    def run() -> dict:
        specs = [(s, r) for s in PATH_SPHERES for r in rules]
        solver: dict[str, Any] = ({} if practical is None
                                  else {"active_set": True, "method": "pgd"})
        pr, elapsed = _run_path(problem, c, ratio=ratio, n_lambdas=n_max, screening=kinds,
                                compare=specs, warm_start=warm, **solver)
        eps = np.sqrt(2.0 * np.maximum(pr.gap, 0.0) / pr.lambdas)
        rates = prob.range_rate_matrix(list(pr.Ms), list(pr.lambdas), list(eps))
        return {"path": pr, "range": rates, "elapsed": elapsed}

    stored = ui.on_demand(_PATH, key, run, label="Run the regularisation path",
                          button_key="run_path", icon=":material/timeline:",
                          what="run the regularisation path", subject="The path results")
    if stored is None:
        return
    pr = stored["path"]
    lam_rel = pr.lambdas / pr.lam_max
    used = {"used by the solver: at the start of each λ": pr.rate_path,
            "used by the solver: at the end (with dynamic screening)": pr.rate_final}
    st.plotly_chart(path_rates_figure(lam_rel, dict(pr.compare_rates),
                                      used if pr.params.get("screening") != "none" else None),
                    width="stretch")
    st.caption(_rates_caption(pr))
    left, right = st.columns(2)
    left.plotly_chart(range_heatmap(stored["range"], lam_rel), width="stretch")
    left.caption("Fraction of triplets the range of Theorem 4.1, computed once from the RRPB "
                 "reference at λ0 (column), screens at λ (row): inside its interval a "
                 "triplet needs no rule evaluation at all.")
    if pr.dynamic_rates.size and np.isfinite(pr.dynamic_rates).any():
        right.plotly_chart(dynamic_heatmap(pr.dynamic_rates, lam_rel), width="stretch")
    else:
        right.info("No dynamic screening rounds on this path (every λ converged within 10 "
                   "iterations, or screening is off).", icon=":material/info:")
    st.caption(
        f"{len(pr.lambdas)} λ from λ_max to {lam_rel[-1]:.3g} λ_max ("
        + _STOPS.get(pr.terminated_by, pr.terminated_by) + "), "
        f"{pr.total_iterations} iterations, {stored['elapsed']:.2f} s "
        "(the per-sphere comparison included); "
        + ("active-set method (working set refreshed every 10 iterations"
           + (" and as soon as it is solved, when that pays"
              if pr.params.get("refresh") == "converged" else "") + "), "
           if pr.params.get("active_set") else "")
        + f"ratio {ratio:g}; each λ started "
        + ("from the path extrapolated in log λ (secant)"
           if pr.params.get("warm_start") == "secant" else "from the previous λ's solution")
        + ".")


#: The path section's settings: the sidebar's solver on the chosen ratio, or the paper's
#: practical setting (its Table 2: the active-set method on the fine path, ratio 0.99).
PATH_SETTINGS = {
    "sidebar's solver": None,
    "paper's practical setting: active set, ratio 0.99": {"ratio": 0.99},
}


#: Why a page path ended (``PathResult.terminated_by`` of a path on a given grid;
#: "lambdas": the grid ends at the current λ or at the "at most this many λ" limit).
_STOPS = {"rule": "stopped by the paper's termination rule",
          "lambdas": "the end of the grid",
          "callback": f"stopped at the {PATH_BUDGET:.0f} s budget"}


def _rates_caption(pr) -> str:
    """What the rates figure shows, which curves coincide, and the best usable sphere."""
    rates = dict(pr.compare_rates)
    rules = list(dict.fromkeys(k.partition(":")[2] for k in rates))
    parts = []
    for rule in rules:
        sub = {k.partition(":")[0].upper(): v for k, v in rates.items()
               if k.endswith(":" + rule)}
        groups = coincident(sub)
        if groups:
            parts.append(f"{rule} rule: " + ", ".join(" = ".join(g) for g in groups))
    if len(rules) > 1:
        spheres = list(dict.fromkeys(k.partition(":")[0] for k in rates))
        same_rules = [s.upper() for s in spheres
                      if len(coincident({r: rates[f"{s}:{r}"] for r in rules
                                         if f"{s}:{r}" in rates})) == 1
                      and len(coincident({r: rates[f"{s}:{r}"] for r in rules
                                          if f"{s}:{r}" in rates})[0]) == len(rules)]
        if same_rules:
            parts.append("every rule gives the same rates for " + ", ".join(same_rules))
    mean = {k: float(np.nanmean(v[1:])) for k, v in rates.items()
            if v.size > 1 and not k.startswith("rpb") and np.isfinite(v[1:]).any()}
    best = max(mean, key=lambda k: mean[k]) if mean else None
    return (
        "Each sphere and rule evaluated alone at the start of each λ from the previous λ's "
        "solution; RPB (dashed) treats that solution as the exact optimum, a theoretical "
        "comparison. Black markers: the rate the solver reached with its own spheres, at the "
        "start of each λ (×) and after dynamic screening (○). "
        + (f"Identical curves (drawn on top of each other) — {'; '.join(parts)}. "
           if parts else "")
        + (f"Highest mean rate of a usable sphere: {best.replace(':', ' + ').upper()} "
           f"({mean[best]:.1%})." if best else ""))


def _run_path(problem, c, *, ratio: float, n_lambdas: int, screening, compare=(),
              active_set: bool | None = None, method: str | None = None,
              backoff: bool | None = None, termination: bool = True,
              budget: float = PATH_BUDGET, warm_start: str = "previous"):
    """``ts.path`` for the page's problem from λ_max down the ``ratio`` grid to the current
    λ exactly (:func:`ts.geometric_grid`, at most ``n_lambdas`` values), with a time budget
    (``active_set``, ``method``, ``backoff``: the sidebar's unless given; the sidebar's
    active-set ``refresh`` and loss pass ``evaluation``)."""
    prob, lam, lmax = _setup(problem, c)
    p = c.params
    t0 = time.perf_counter()
    bar = st.progress(0.0, text="λ_max")
    grid = ts.geometric_grid(lmax, lam, ratio)[:n_lambdas]

    def progress(t, lam_t, _res):
        bar.progress(min(1.0, (t + 1) / grid.size), text=f"λ {t + 1}: {lam_t:.4g}")
        return time.perf_counter() - t0 < budget

    pr = ts.path(problem.data["X"], problem.data["y"], triplets=prob, loss=p["loss"],
                 gamma=float(p["gamma"]), diagonal=bool(p["diagonal"]), lambdas=grid,
                 screening=screening,
                 rule=p["rule"], compare=compare,
                 active_set=bool(p["active_set"]) if active_set is None else active_set,
                 method=p["method"] if method is None else method,
                 backoff=bool(p["backoff"]) if backoff is None else backoff,
                 refresh=p["refresh"], evaluation=p["evaluation"], warm_start=warm_start,
                 tol=c.tol,
                 max_iter=c.max_iter, termination=termination, callback=progress)
    bar.empty()
    return pr, time.perf_counter() - t0


# ----------------------------------------------------------------------------- comparison


def _where(profile) -> dict:
    """Where the time goes (CPU ms): loss passes, screening bookkeeping, pair forms, eig."""
    return {"loss passes [ms]": round(1e3 * profile.get("loss_pass", 0.0), 2),
            "screening [ms]": round(1e3 * profile.get("screening", 0.0), 2),
            "pair forms [ms]": round(1e3 * profile.get("pair_forms", 0.0), 2),
            "eig [ms]": round(1e3 * profile.get("eig", 0.0), 2)}


def comparison(problem, res, c) -> None:
    """Screening details of the single-λ variants and the path comparison (Table 2)."""
    runs = ui.stored_comparison(ENTRY)
    if runs and set(runs) <= set(VARIANTS):
        t0 = runs["naive"].time if "naive" in runs else float("nan")
        st.dataframe([{"method": m, "screening rate": round(r.screening_rate, 4),
                       "triplet visits": r.triplet_visits,
                       "speed-up vs naive": round(t0 / r.time, 2) if r.time > 0 else None,
                       **_where(r.profile), "notes": "; ".join(r.notes)}
                      for m, r in runs.items()], hide_index=True)
        st.caption("Single λ from a cold start: no previous solution, so RRPB is DGB and "
                   "only PGB and dynamic screening work. Screening backs off (see notes) "
                   "when a round would cost more than the loss passes it can save; the "
                   "'no back-off' row screens anyway. The path below shows "
                   "regularisation-path screening. With the hinge loss the non-active-set "
                   "variants use the dual solver (method auto), the active-set ones the "
                   "primal projected gradient.")
    st.markdown("#### The whole path: naive vs screened vs active set (the paper's Table 2)")
    a, b = st.columns(2)
    ratio = a.select_slider("path ratio", [0.7, 0.8, 0.9, 0.95, 0.99], 0.9,
                            key="cmp_path_ratio")
    n_max = b.slider("at most this many λ", 5, 200, 60, key="cmp_path_lambdas")
    key = (c.problem_key(ENTRY), tuple(sorted(c.model_params().items())), c.tol, c.max_iter,
           ratio, n_max)
    def run() -> dict:
        out: dict[str, Any] = {}
        n = n_max
        for label, kw in PATH_METHODS.items():
            pr, _ = _run_path(problem, c, ratio=ratio, n_lambdas=n, termination=not out,
                              budget=PATH_BUDGET / 2, **kw)
            out[label] = pr
            if len(out) == 1:
                n = len(pr.lambdas)  # the same λ grid for every method
        return out

    paths = ui.on_demand(_PATH_CMP, key, run, label="Run the path comparison",
                         button_key="run_path_comparison", icon=":material/leaderboard:",
                         what="run the path comparison", subject="The path comparison runs")
    if paths is None:
        st.caption(FINDINGS)
        return
    n = min(len(p.lambdas) for p in paths.values())
    base = paths["naive"]
    t_naive = float(base.time[:n].sum())
    t_as = float(paths["active set"].time[:n].sum())
    v_naive = float(base.triplet_visits[:n].sum())
    rows = []
    for label, pr in paths.items():
        t = float(pr.time[:n].sum())
        v = float(pr.triplet_visits[:n].sum())
        diff = float(np.max(np.abs(pr.primal[:n] - base.primal[:n])
                            / np.maximum(1.0, np.abs(base.primal[:n]))))
        rows.append({"method": label, "λ": n, "iterations": int(pr.n_iter[:n].sum()),
                     "time [s]": round(t, 4), "speed-up vs naive": round(t_naive / t, 2),
                     "speed-up vs active set": round(t_as / t, 2),
                     "triplet visits [M]": round(v / 1e6, 3),
                     "visits: naive / this": round(v_naive / v, 2),
                     "λ without path screening (back-off)": sum(
                         "path screening skipped" in note for note in pr.notes),
                     "mean final screening rate": round(float(np.mean(pr.rate_final[1:n]))
                                                        if n > 1 else 0.0, 4),
                     **_where(pr.profile),
                     "max rel. obj. diff vs naive": diff})
    st.dataframe(rows, hide_index=True)
    lam_rel = base.lambdas[:n] / base.lam_max
    times = {k: p.time[:n] for k, p in paths.items()}
    left, right = st.columns(2)
    left.plotly_chart(path_time_figure(lam_rel, times), width="stretch")
    right.plotly_chart(path_time_figure(lam_rel, times, ratio_to="naive"), width="stretch")
    st.caption(
        f"Same {n} λ for every method (from λ_max, ratio {ratio:g}), warm starts, the page's "
        "tolerance; times are per λ (screening included) on this machine, so they vary from "
        "run to run. Triplet visits count the triplets touched by loss passes and screening "
        "rules: the machine-independent part of the cost that screening removes.")
    st.caption(FINDINGS)


def render() -> None:
    ui.model_page(ENTRY, latex=PROBLEM, structure=structure, explanation=EXPLANATION,
                  variants=VARIANTS, comparison=comparison, defaults=PAGE_DEFAULTS)
