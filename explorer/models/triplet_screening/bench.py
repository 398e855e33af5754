"""``dualscope bench triplet_screening``.

0. Screened vs naive paths on the issue-12 targets, CPU time of one run each at
   relative gap 1e-6 and 1e-9: wine with all triplets (features min-max scaled to
   [-1, 1] as the authors' data files, 1,232,288 triplets), wine k=10, digits (PCA
   to 16 and 20 dimensions, min-max scaled, k=10 and 20), with where the time goes
   (loss passes, screening bookkeeping, pair forms, eigendecompositions); a fourth
   run screens at every lambda and every iteration it can (no back-off), and its
   row carries the ceiling: the speed-up that path would have with free screening.
   Two more runs use the sorted loss pass (``evaluation="sorted"``: exact, not
   screening), naive and with RRPB, and three the secant warm start along the path
   (``warm_start="secant"``): naive, RRPB, and the sorted pass.
1. The whole regularisation path (``lam_t = 0.9 lam_{t-1}`` from ``lam_max``,
   the paper's termination rule) on wine with ``k = inf`` (1,232,288 triplets):
   naive, RRPB, RRPB+PGB, RRPB with the range extension, the active-set
   baseline, and active set + screening; total time (best of ``repeat``),
   speed-up over the naive path, screening rates, and the largest relative
   objective difference to the naive path (all reach the same optimum). Run at
   the project's relative gap ``1e-6`` and at ``1e-9`` (closer to the paper's
   absolute gap ``1e-6``, which means many more iterations per lambda).
2. Each sphere with each rule on a smaller path (wine, ``k = 10``): the mean
   path-screening rate and the time of the path that uses it (Figures 4-5).
3. The screened solver against cvxpy/Clarabel at about 5,000 triplets.
4. The hinge loss on a whole path (wine, k=10; the paper's Appendix L.1): the dual
   method naive, with PGB, RRPB and both.
5. The scikit-learn estimator (``SafeTripletMetricLearner``) at ``lam = 0.01 lam_max``:
   one solve from ``M = 0`` (``path=False``) against the fit along the path down to
   ``lam`` (``path=True``, both starts), fit time including the triplets' construction.
6. The paper's practical setting (its Table 2): the active-set method along the fine path
   ``lam_t = 0.99 lam_{t-1}`` (smoothed hinge, gamma = 0.05, relative gap 1e-6) alone, with
   RRPB and with RRPB+PGB, on wine with all triplets and digits (PCA 16, k = 10): total
   CPU time and number of lambdas, in the paper's layout and in detail, each run with the
   working set refreshed every 10 iterations (the paper's schedule) and with
   ``refresh="converged"``.
7. Growth of the practical path: CPU time against the number of points (triplets) and
   the dimension, with the fitted exponent.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from solvers import triplet_screening as ts
from solvers.reference import triplet_screening as ref

from ...benchkit import (
    BenchReport,
    BenchTable,
    best_of,
    cpu_time_without_jit,
    loglog_slope,
    rel_diff,
)
from ...datasets import load_real

PATH_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("naive", dict(screening=None)),
    ("RRPB", dict(screening=("rrpb",))),
    ("RRPB+PGB", dict(screening=("rrpb", "pgb"))),
    ("RRPB, range extension", dict(screening=("rrpb",), range_screening=True)),
    ("active set", dict(screening=None, active_set=True)),
    ("active set + RRPB", dict(screening=("rrpb",), active_set=True)),
    ("active set + RRPB+PGB", dict(screening=("rrpb", "pgb"), active_set=True)),
)


def _minmax(X: np.ndarray) -> np.ndarray:
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return 2.0 * (X - lo) / span - 1.0


def target_data(name: str, pca: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Raw scikit-learn ``name`` (optionally PCA to ``pca`` dimensions), min-max to [-1, 1]."""
    X, y = load_real(name, scale=False)
    if pca:
        from sklearn.decomposition import PCA

        X = PCA(pca, random_state=0).fit_transform(X)
    return _minmax(X), y


TARGETS = (
    ("wine, all triplets", "wine", None, np.inf, 3.0),
    ("wine, k=10", "wine", None, 10, 1.5),
    ("digits PCA 16, k=10", "digits", 16, 10, 1.5),
    ("digits PCA 20, k=20", "digits", 20, 20, 1.5),
)
#: The kNN sets of TARGETS (label, dataset, PCA, k).
TARGETS_KNN = tuple(t[:4] for t in TARGETS if np.isfinite(t[3]))
#: The screened run that screens wherever it can (no back-off): its row carries the
#: ceiling of :func:`screening_ceiling`.
EVERY = "RRPB at every lambda"
#: The runs of table 0. Besides the paper's (naive, RRPB, RRPB+PGB) and EVERY: the sorted
#: loss pass (evaluation="sorted": not screening, an exact pass in O(n_j + n_l) per
#: anchor), naive and with RRPB (which screens only where it beats that pass), and the
#: secant start along the path (warm_start="secant").
SCREENED_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("naive", dict(screening=None)),
    ("RRPB", dict(screening=("rrpb",))),
    ("RRPB+PGB", dict(screening=("rrpb", "pgb"))),
    (EVERY, dict(screening=("rrpb",), backoff=False)),
    ("sorted pass", dict(screening=None, evaluation="sorted")),
    ("RRPB, sorted pass", dict(screening=("rrpb",), evaluation="sorted")),
    ("naive, secant start", dict(screening=None, warm_start="secant")),
    ("RRPB, secant start", dict(screening=("rrpb",), warm_start="secant")),
    ("sorted pass, secant start", dict(screening=None, evaluation="sorted",
                                       warm_start="secant")),
)


def warm_up(X: np.ndarray, y: np.ndarray, loss: str = "smoothed_hinge") -> None:
    """Load (or compile) every kernel the timed runs use: small screened paths that
    screen at every opportunity (k = 3: the pair-id path pass, and at tol 1e-9 enough
    screened for the pairs in use to take the per-pair route; all
    triplets of a subsample: the anchor-block pass), and a naive one, with the loss
    ``loss`` (and so its default method). (Without the tight tol, wine k = 10's RRPB
    path at 1e-9 compiled an evaluation inside its timed run.)"""
    ts.path(X[::6], y[::6], k=3, n_lambdas=6, loss=loss, screening=("rrpb", "pgb"),
            backoff=False, tol=1e-9)
    ts.path(X[::3][:120], y[::3][:120], k=np.inf, n_lambdas=4, loss=loss,
            screening=("rrpb",), backoff=False)
    ts.path(X[::6], y[::6], k=3, n_lambdas=3, loss=loss, screening=None)


def _timed_paths(X, y, prob, runs, tol: float, n_lambdas: int, progress, label: str,
                 **common) -> dict:
    """``{run label: (CPU seconds, path)}``: one path per run of ``runs``, one process,
    numba compilation excluded (:func:`cpu_time_without_jit`: a run that compiled a
    kernel is run and timed again, and the progress line says so)."""
    res = {}
    for run_label, kw in runs:
        t, p, compiled = cpu_time_without_jit(functools.partial(
            ts.path, X, y, triplets=prob, tol=tol, n_lambdas=n_lambdas, **common, **kw))
        res[run_label] = (t, p)
        again = f" (compiled {', '.join(compiled)} first: timed again)" if compiled else ""
        progress(f"{label} {run_label}: {t:.2f} s CPU{again}")
    return res


def _k_label(k: float) -> str:
    """``k`` as the tables print it (``inf``: all triplets)."""
    return "inf" if not np.isfinite(k) else str(int(k))


def _max_diff(p, p0) -> float:
    """Largest relative objective difference of two paths over their common lambdas."""
    n = min(len(p.lambdas), len(p0.lambdas))
    return max(rel_diff(a, b) for a, b in zip(p.primal[:n], p0.primal[:n], strict=True))


def screening_ceiling(t0: float, naive: dict, screened: dict) -> float:
    """The speed-up a screened path could reach at most if its screening were free and
    the loss passes over what it leaves cost per triplet what the naive path's cost (by
    anchor blocks, the cheapest pass we have): ``t0`` over the naive path's time with
    its loss passes scaled by the share of loss-pass visits the screened path keeps and
    its pair forms and eigendecompositions replaced by the screened path's (fewer pairs
    in use). ``naive``, ``screened``: the paths' profiles (:attr:`.PathResult.profile`);
    the naive path's rest (Python, step logic) is kept. A bound on what better screening
    bookkeeping or a faster pass over the remaining triplets can give on the same
    iterates, not a measurement."""
    parts = ("loss_pass", "pair_forms", "eig")
    rest = t0 - sum(naive[k] for k in parts)
    share = screened["loss_pass_visits"] / max(naive["loss_pass_visits"], 1.0)
    best = naive["loss_pass"] * share + screened["pair_forms"] + screened["eig"] + rest
    return t0 / best


def _targets_table(tols, progress, targets=TARGETS, n_lambdas: int = 300) -> BenchTable:
    table = BenchTable(
        "Screened vs naive regularisation path (ratio 0.9, lam_max to the paper's "
        "termination rule), CPU time of one run",
        ["dataset", "triplets", "tol", "method", "lambdas", "iterations", "CPU [s]",
         "speed-up vs naive", "target", "ceiling: free screening", "triplets visited [M]",
         "loss passes [s]", "screening [s]", "pair forms [s]", "eig [s]",
         "max rel. obj. diff vs naive"],
    )
    # the targets are screening's: runs without screening carry none
    screens = {label: kw.get("screening") is not None for label, kw in SCREENED_RUNS}
    for label, name, pca, k, target in targets:
        X, y = target_data(name, pca)
        prob = ts.TripletProblem(X, y, k=k)
        warm_up(X, y)
        for tol in tols:
            res = _timed_paths(X, y, prob, SCREENED_RUNS, tol, n_lambdas, progress,
                               f"{label} tol={tol:g}")
            t0, p0 = res["naive"]
            for run_label, (t, p) in res.items():
                diff = _max_diff(p, p0)
                pr = p.profile
                ceiling = (screening_ceiling(t0, p0.profile, pr) if run_label == EVERY
                           else float("nan"))
                table.add(label, prob.n_triplets, tol, run_label, len(p.lambdas),
                          p.total_iterations, t, t0 / t,
                          f">= {target:g}x" if screens[run_label] else "",
                          ceiling,
                          pr["triplets_visited"] / 1e6, pr["loss_pass"], pr["screening"],
                          pr["pair_forms"], pr["eig"], diff)
    table.notes.append(
        "CPU time (time.process_time) of the whole path, one run per method in one "
        "process, so the ratios are measured under the same load; numba compilation "
        "excluded (a run that compiled a kernel is timed again). Profile columns: thread "
        "CPU seconds of the loss passes over the remaining triplets, screening bookkeeping "
        "(path scan and status update, rules, compaction, the screened-triplet check), "
        "per-pair forms and weighted sums, and d x d eigendecompositions; the rest is "
        "Python and the step logic. An evaluation (forms, loss pass, weighted sum) is one "
        "compiled call; the loss pass over all triplets (naive, and screened before or "
        "without screening) runs by anchor blocks, the remaining triplets after screening "
        "by pair ids. Runs of iterations with no screening event in between are one "
        "compiled call too; their thread time is split by the CPU cycle counter. Every "
        "path, naive too, starts each lambda from the previous lambda's last evaluation "
        "at its solution (lambda enters only through lam ||M||^2 / 2), not a new pass. "
        "Path screening: one fused pass per lambda (RRPB sphere rule, status update, "
        "L-hat pair counts, compaction of the triplets and of the pairs in use), by "
        "anchor blocks (SIMD rule loop) for these triplet sets, run only at the lambdas "
        "where it is predicted to pay (the visits it saves over the last solve's "
        "evaluations against a loss pass over all triplets by anchor blocks, for the "
        "share a sample of 1,024 triplets screens, at least 1.5x its fitted cost; the "
        "others are in the path's notes); pair forms through the "
        "points (no stored pair differences), every pair out of use dropped; dynamic "
        "screening adaptive (DGB inside the loss pass when the gap ball has shrunk), "
        "backing off when it does not pay. 'RRPB at every lambda': backoff=False, path "
        "and dynamic screening wherever they can run, whatever they cost; its 'ceiling: "
        "free screening' is the speed-up that path would have if its screening cost "
        "nothing and the loss passes over the triplets it leaves cost per triplet what "
        "the naive path's do (screening_ceiling: a bound from the measured parts, not a "
        "measurement). 'sorted pass': the naive optimisation with evaluation='sorted' "
        "(per anchor, the forms of its pairs sorted and each row's triplets at alpha = 1 "
        "summed by prefix sums, those in the curved piece visited; exact, not screening; "
        "only where the triplets are stored in anchor blocks, else the same as naive); "
        "its triplets visited count the triplets the passes account for. 'RRPB, sorted "
        "pass': RRPB screening where it beats that pass. '..., secant start': "
        "warm_start='secant', each lambda from the path extrapolated in log lambda, "
        "[2 M_{t-1} - M_{t-2}]_+ (a predictor step; one loss pass per lambda more); "
        "screening's own gain is RRPB, secant start against naive, secant start.")
    return table


HINGE_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("naive", dict(screening=None)),
    ("PGB", dict(screening=("pgb",))),
    ("RRPB", dict(screening=("rrpb",))),
    ("RRPB+PGB", dict(screening=("rrpb", "pgb"))),
)


def _hinge_table(progress, name: str = "wine", pca: int | None = None, k: float = 10,
                 tol: float = 1e-6, n_lambdas: int = 300) -> BenchTable:
    """The hinge loss on a whole path (the paper's Appendix L.1, Figure 7): the dual
    method (accelerated projected gradient on the box-constrained dual) with and
    without screening."""
    X, y = target_data(name, pca)
    prob = ts.TripletProblem(X, y, k=k, loss="hinge")
    warm_up(X, y, loss="hinge")
    ks = _k_label(k)
    table = BenchTable(
        f"Hinge loss, regularisation path on {name} (k={ks}, {prob.n_triplets:,} triplets; "
        f"the paper's Appendix L.1), ratio 0.9, relative gap tol {tol:g}, CPU time of one run",
        ["method", "lambdas", "iterations", "lambdas at max_iter", "CPU [s]",
         "speed-up vs naive", "triplets visited [M]", "final screening rate",
         "max rel. obj. diff vs naive"],
    )
    res = _timed_paths(X, y, prob, HINGE_RUNS, tol, n_lambdas, progress,
                       f"hinge {name} k={ks} tol={tol:g}", loss="hinge")
    t0, p0 = res["naive"]
    for label, (t, p) in res.items():
        table.add(label, len(p.lambdas), p.total_iterations, int(np.sum(~p.converged)), t,
                  t0 / t, p.profile["triplets_visited"] / 1e6,
                  float(np.mean(p.rate_final[1:])) if len(p.lambdas) > 1 else 0.0,
                  _max_diff(p, p0))
    table.notes.append(
        f"lam from {p0.lambdas[0]:.3g} (lam_max) to {p0.lambdas[-1]:.3g} (naive), stopped "
        f"by '{p0.terminated_by}'; max_iter 5000 per lambda. method='dual' (the hinge's "
        "default): each lambda starts from the previous lambda's dual iterate, and the "
        "APG step may grow back at every iteration (L <- 0.9 L before the line search). "
        "Features min-max scaled to [-1, 1].")
    return table


def _path_table(name: str, k: float, tol: float, repeat: int, progress, n_lambdas: int = 300
                ) -> BenchTable:
    X, y = load_real(name)
    prob = ts.TripletProblem(X, y, k=k)
    warm_up(X, y)
    ts.path(X[::6], y[::6], k=3, n_lambdas=3, active_set=True)  # and the active-set loop
    ks = _k_label(k)
    table = BenchTable(
        f"Regularisation path on {name} (k={ks}, {prob.n_triplets:,} triplets, d={X.shape[1]}), "
        f"ratio 0.9, relative gap tol {tol:g}",
        ["method", "lambdas", "iterations", "time [s]", "speed-up vs naive",
         "speed-up vs active set", "triplet visits [M]", "visits: naive / this",
         "path screening rate", "final screening rate", "max rel. obj. diff vs naive"],
    )
    results = {}
    for label, kw in PATH_RUNS:
        t, p = best_of(functools.partial(ts.path, X, y, triplets=prob, tol=tol,
                                         n_lambdas=n_lambdas, **kw), repeat)
        results[label] = (t, p)
        progress(f"{name} k={ks} tol={tol:g} {label}: {t:.2f} s, {len(p.lambdas)} lambdas, "
                 f"{p.total_iterations} iterations")
    t0, p0 = results["naive"]
    ta = results["active set"][0]
    v0 = float(p0.triplet_visits.sum())
    for label, (t, p) in results.items():
        n = min(len(p.lambdas), len(p0.lambdas))
        diff = max(rel_diff(a, b) for a, b in zip(p.primal[:n], p0.primal[:n], strict=True))
        v = float(p.triplet_visits.sum())
        table.add(label, len(p.lambdas), p.total_iterations, t, t0 / t, ta / t, v / 1e6, v0 / v,
                  float(np.mean(p.rate_path[1:])), float(np.mean(p.rate_final[1:])), diff)
    p = results["RRPB+PGB"][1]
    table.notes.append(
        f"lam from {p.lambdas[0]:.3g} (lam_max) to {p.lambdas[-1]:.3g}, stopped by "
        f"'{p.terminated_by}'. Time: best of {repeat}, whole path including screening. "
        "Rates: fraction of all triplets screened at the start of each lambda (path "
        "screening) and at its end (after dynamic screening), mean "
        "over the path (lam_max excluded). Triplet visits: triplets touched by loss passes and "
        "screening rules, the part of the cost that screening removes (the paper's per-"
        "triplet O(d^2) work); the per-pair forms (O(pairs d^2)), the d x d eigen-"
        "decompositions and Python overhead per iteration remain.")
    return table


def _sphere_rule_table(progress, n_lambdas: int) -> BenchTable:
    X, y = load_real("wine")
    prob = ts.TripletProblem(X, y, k=10)
    table = BenchTable(
        f"Spheres and rules on a path (wine, k=10, {prob.n_triplets:,} triplets, "
        f"{n_lambdas} lambdas at most, tol 1e-9)",
        ["sphere", "rule", "path screening rate (alone)", "final rate (used)",
         "time [s]", "speed-up vs naive"],
    )
    kw: dict[str, Any] = dict(triplets=prob, tol=1e-9, n_lambdas=n_lambdas)
    t0, _ = best_of(lambda: ts.path(X, y, screening=None, **kw), 2)
    specs = [(s, r) for s in ("gb", "pgb", "dgb", "cdgb", "rpb", "rrpb")
             for r in ("sphere", "linear", "sdls")]
    cmp_ = ts.path(X, y, screening=None, compare=specs, **kw)
    for s, r in specs:
        rate = float(np.nanmean(cmp_.compare_rates[f"{s}:{r}"][1:]))
        if s == "rpb":
            table.add(s, r, rate, float("nan"), float("nan"), float("nan"))
            continue
        # backoff=False: every sphere and rule screens at every opportunity (with back-off
        # the small problem's rounds are skipped and the rates would read 0)
        t, p = best_of(functools.partial(ts.path, X, y, screening=(s,), rule=r, backoff=False,
                                         **kw), 1)
        progress(f"wine k=10 {s}+{r}: {t:.2f} s")
        table.add(s, r, rate, float(np.mean(p.rate_final[1:])), t, t0 / t)
    table.notes.append(
        f"Naive path: {t0:.2f} s. 'used': screening with that sphere and rule alone, back-off "
        "off (each round runs however little it can save). 'alone' = the sphere and rule "
        "evaluated on all triplets at "
        "the start of each lambda from the previous solution (the paper's Figs. 4-5); RPB "
        "treats the previous (approximate) solution as the exact optimum, so it is a "
        "theoretical comparison and never used to screen. At lambda_t the reference of "
        "GB/PGB/DGB/CDGB is the warm start M_{t-1} evaluated at lambda_t.")
    return table


def _vs_cvxpy(progress, repeat: int, k: int = 5, rels=(0.1, 0.01)) -> BenchTable:
    X, y = load_real("wine")
    table = BenchTable(
        f"Screened solver (RRPB+PGB) vs cvxpy/Clarabel, wine k={k}",
        ["loss", "lam / lam_max", "triplets", "solver", "time [s]", "iterations",
         "objective", "rel. diff vs cvxpy", "certified rel. gap", "screening rate",
         "speed-up"],
    )
    for loss in ("smoothed_hinge", "hinge"):
        prob = ts.TripletProblem(X, y, k=k, loss=loss)
        for rel in rels:
            lam = rel * ts.lambda_max(X, y, triplets=prob.triplets)
            progress(f"cvxpy/Clarabel wine k={k} {loss} lam={rel:g} lam_max ...")
            c = ref.solve(X, y, lam, triplets=prob)
            t, r = best_of(functools.partial(
                ts.solve, X, y, lam, triplets=prob, loss=prob.loss, tol=1e-9,
                max_iter=200_000), repeat)
            progress(f"  cvxpy {c.time:.2f} s, ours {t:.3f} s ({r.method})")
            table.add(loss, rel, prob.n_triplets, "cvxpy (Clarabel)", c.time, float("nan"),
                      c.value, 0.0, float("nan"), float("nan"), 1.0)
            table.add(loss, rel, prob.n_triplets, f"{r.method} + screening (tol 1e-9)", t,
                      r.n_iter, r.primal, rel_diff(r.primal, c.value), r.rel_gap,
                      r.screening_rate, c.time / t)
    table.notes.append(
        "The solver stops on its own certificate (relative gap <= 1e-9), so its objective is "
        "within 1e-9 of the optimum; smoothed hinge: primal projected gradient with the BB "
        "step; hinge: accelerated projected gradient on the dual. Time: best of "
        f"{repeat}; lam_max of the k={k} triplet set.")
    return table


ESTIMATOR_FITS = (
    ("path=False (one solve from M = 0)", dict(path=False)),
    ("path=True, previous start", dict(path=True)),
    ("path=True, secant start", dict(path=True, path_start="secant")),
)


def _estimator_table(progress, sets, tols=(1e-6, 1e-9), rel: float = 0.01) -> BenchTable:
    """The metric learner's fit time with and without the path (CPU time of one fit
    after an untimed one, numba compilation excluded)."""
    from solvers.estimators import SafeTripletMetricLearner

    table = BenchTable(
        f"SafeTripletMetricLearner at lam = {rel:g} lam_max: one solve against the path "
        "(CPU time of one fit)",
        ["dataset", "triplets", "tol", "fit", "lambdas", "iterations", "CPU [s]",
         "rel. gap", "rel. obj. diff vs path=False"],
    )
    for label, name, pca, k in sets:
        X, y = target_data(name, pca)
        lam = rel * ts.lambda_max(X, y, k=k)
        for tol in tols:
            base = None
            for fit_label, kw in ESTIMATOR_FITS:
                est = SafeTripletMetricLearner(lam=lam, k=k, tol=tol, **kw)
                est.fit(X, y)  # first-call costs (imports, caches) out of the timed fit
                t, est, compiled = cpu_time_without_jit(functools.partial(est.fit, X, y))
                again = " (compiled first: timed again)" if compiled else ""
                progress(f"estimator {label} tol={tol:g} {fit_label}: {t:.2f} s CPU{again}")
                base = est.primal_ if base is None else base
                path = getattr(est, "path_", None) if kw["path"] else None
                table.add(label, est.n_triplets_, tol, fit_label,
                          1 if path is None else path["lambdas"].size,
                          est.n_iter_ if path is None else int(path["n_iter"].sum()), t,
                          est.dual_gap_ / max(1.0, abs(est.primal_)),
                          rel_diff(est.primal_, base))
    table.notes.append(
        "CPU time of the second of two fits. Fit time includes validation and building "
        "the triplets and their pair forms (once per fit). path=True: "
        "solvers.triplet_screening.path on geometric_grid(lam_max, lam, 0.9), RRPB path "
        "screening where it pays; the "
        "secant start extrapolates the path in log lambda. Every fit is certified to tol; "
        "the objectives differ by at most the sum of the certified gaps.")
    return table


#: The paper's practical setting (its Table 2): the active-set method on the fine path.
PRACTICAL: dict[str, Any] = dict(ratio=0.99, gamma=0.05, tol=1e-6, active_set=True)
PRACTICAL_RUNS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ActiveSet", dict(screening=None)),
    ("ActiveSet+RRPB", dict(screening=("rrpb",))),
    ("ActiveSet+RRPB+PGB", dict(screening=("rrpb", "pgb"))),
)
#: The paper's Table 2 (total CPU seconds of the authors' code along the path; its data
#: sets, not wine or digits): method -> seconds per data set, for the speed-ups the
#: practical tables quote beside ours.
PAPER_TABLE2: dict[str, tuple[Any, ...]] = {
    "datasets": ("phishing", "SensIT", "a9a", "mnist", "cifar10", "rcv"),
    "ActiveSet": (7989.5, 16352.1, 758.7, 3788.1, 11085.7, 94996.3),
    "ActiveSet+RRPB": (2126.2, 3555.6, 70.1, 871.1, 1431.3, 43174.9),
    "ActiveSet+RRPB+PGB": (2133.2, 3046.9, 72.1, 897.9, 1279.7, 38231.1),
}


def paper_speedups() -> str:
    """The speed-ups over ActiveSet alone in the paper's Table 2, one line."""
    base = PAPER_TABLE2["ActiveSet"]
    parts = []
    for method in ("ActiveSet+RRPB", "ActiveSet+RRPB+PGB"):
        r = [b / t for b, t in zip(base, PAPER_TABLE2[method], strict=True)]
        parts.append(f"{method} " + " / ".join(f"{v:.2f}x" for v in r)
                     + f" (range {min(r):.2f}-{max(r):.2f}x)")
    return ("The paper's Table 2 (" + ", ".join(PAPER_TABLE2["datasets"])
            + "; the authors' code; wine and digits are not among its data sets): "
            + "; ".join(parts) + ".")


#: (label, dataset, PCA, k, target of ActiveSet+RRPB against ActiveSet alone)
PRACTICAL_SETS = (
    ("wine, all triplets", "wine", None, np.inf, 6.0),
    ("digits PCA 16, k=10", "digits", 16, 10, 3.6),
)
#: The active set's refresh schedules compared, each as (label, ``refresh``): every 10
#: iterations (the paper's schedule) and also as soon as the working set's own problem
#: meets tol where that pays (``refresh="converged"``).
BOOKKEEPING = (
    ("every10", "every10"),
    ("converged", "converged"),
)
#: The modes of the Table-2 layouts: (main mode, mode of the speed-ups in brackets, or
#: None).
WIDE_MODES: tuple[tuple[int, int | None], ...] = ((0, None), (1, 0))


def _practical_warm_up(X: np.ndarray, y: np.ndarray) -> None:
    """The kernels of the active-set paths, screened and not (small paths, untimed)."""
    for scr in (None, ("rrpb", "pgb")):
        ts.path(X[::6], y[::6], k=3, n_lambdas=20, screening=scr, **PRACTICAL)
        ts.path(X[::3][:120], y[::3][:120], k=np.inf, n_lambdas=8, screening=scr,
                **PRACTICAL)


def _practical_runs(X, y, prob, n_lambdas: int, progress, label: str,
                    bookkeeping=BOOKKEEPING) -> dict:
    """``{(schedule label, run label): (CPU seconds, path)}`` in one process; each
    refresh schedule passed to :func:`solvers.triplet_screening.path`."""
    res = {}
    for mode, schedule in bookkeeping:
        for run_label, kw in PRACTICAL_RUNS:
            t, p, compiled = cpu_time_without_jit(functools.partial(
                ts.path, X, y, triplets=prob, n_lambdas=n_lambdas, refresh=schedule, **PRACTICAL,
                **kw))
            res[mode, run_label] = (t, p)
            again = " (compiled first: timed again)" if compiled else ""
            progress(f"practical {label} {run_label} [{mode}]: {t:.2f} s CPU, "
                     f"{len(p.lambdas)} lambdas{again}")
    return res


def _practical_tables(progress, sets=PRACTICAL_SETS, n_lambdas: int = 5000
                      ) -> list[BenchTable]:
    """The paper's Table 2 setting: the paper's layout (methods by data set, total CPU
    and number of lambdas) and the detail (profile, the two refresh schedules, the
    speed-up a free screening would give)."""
    modes = [m[0] for m in BOOKKEEPING]
    detail = BenchTable(
        "Active-set method on the fine path (the paper's Table 2 setting: ratio 0.99 from "
        "lam_max to the paper's termination rule, smoothed hinge gamma 0.05, relative gap "
        "1e-6), CPU time of one run",
        ["dataset", "triplets", "method", "refresh", "lambdas", "iterations",
         "CPU [s]", "speed-up vs ActiveSet", "target", "CPU previous mode / this",
         "ceiling: free screening", "loss-pass visits [M]", "triplets visited [M]",
         "loss passes [s]", "screening [s]", "pair forms [s]", "eig [s]",
         "max rel. obj. diff vs ActiveSet"],
    )
    wide_cols = ["method"]
    for label, *_ in sets:
        wide_cols += [f"{label}: CPU [s]", f"{label}: speed-up", f"{label}: lambdas"]
    wides = [BenchTable("Total CPU time with the active-set method (the paper's Table 2 "
                        f"layout; refresh='{modes[m]}'"
                        + ("" if b is None else f"; the speed-ups with '{modes[b]}' in "
                           "brackets") + ")", wide_cols) for m, b in WIDE_MODES]
    cells: list[dict[str, list[Any]]] = [{r: [r] for r, _ in PRACTICAL_RUNS}
                                         for _ in WIDE_MODES]
    for label, name, pca, k, target in sets:
        X, y = target_data(name, pca)
        prob = ts.TripletProblem(X, y, k=k)
        _practical_warm_up(X, y)
        res = _practical_runs(X, y, prob, n_lambdas, progress, label)
        for i, mode in enumerate(modes):
            t0, p0 = res[mode, "ActiveSet"]
            for run_label, _ in PRACTICAL_RUNS:
                t, p = res[mode, run_label]
                pr = p.profile
                screens = run_label != "ActiveSet"
                detail.add(label, prob.n_triplets, run_label, mode, len(p.lambdas),
                           p.total_iterations, t, t0 / t,
                           f">= {target:g}x" if screens and run_label.endswith("RRPB")
                           else "",
                           res[modes[i - 1], run_label][0] / t if i else float("nan"),
                           t0 / max(t - pr["screening"], 1e-12) if screens
                           else float("nan"),
                           pr["loss_pass_visits"] / 1e6, pr["triplets_visited"] / 1e6,
                           pr["loss_pass"], pr["screening"], pr["pair_forms"], pr["eig"],
                           _max_diff(p, p0))
        for (m, b), cell in zip(WIDE_MODES, cells, strict=True):
            t0 = res[modes[m], "ActiveSet"][0]
            for run_label, _ in PRACTICAL_RUNS:
                t, p = res[modes[m], run_label]
                gain = f"{t0 / t:.2f}x"
                if b is not None:
                    gain += f" ({res[modes[b], 'ActiveSet'][0] / res[modes[b], run_label][0]:.2f}x)"
                cell[run_label] += [t, gain, len(p.lambdas)]
    for wide, cell in zip(wides, cells, strict=True):
        for row in cell.values():
            wide.add(*row)
    common = (
        "CPU time (time.process_time) of the whole path, every run in one process (ratios "
        "under the same load), numba compilation excluded (a run that compiled a kernel is "
        "timed again). The active set's working set: the remaining triplets with positive "
        "loss, refreshed (and the solve certified) every 10 iterations; each lambda starts "
        "from the previous solution. RRPB: path screening at each lambda where it is "
        "predicted to pay (the path's notes list the others); PGB: dynamic rounds under "
        "back-off.")
    for wide in wides:
        wide.notes.append(common)
    wides[0].notes.append(paper_speedups())
    wides[1].notes.append(
        "refresh='converged': the working set is also refreshed (and the solve certified) "
        "as soon as its own problem meets tol, when the cost model predicts that refresh "
        "costs less than the steps it saves ('the overall optimality is confirmed when "
        "the iteration converges', the paper's section 5.3). Both the active set alone "
        "and the screened runs use it; in brackets the speed-ups of the every-10 schedule "
        "(the table above). Compare the CPU columns of the two tables for what the "
        "schedule itself gives each method.")
    detail.notes.append(
        common + " 'ceiling: free screening': ActiveSet's CPU time over the run's without "
        "its screening time (path scan, rules, status updates, compaction): the speed-up "
        "the run would have if screening cost nothing, from the measured parts, not a "
        "measurement; the rest of each iteration (pair forms, d x d eigendecompositions) "
        "is shared by all methods and bounds every speed-up. The iterations between "
        "refreshes run in one compiled call per refresh period. refresh='converged' "
        "gives other iterates and the same optimum within tol (see the objective "
        "difference).")
    return [*wides, detail]


#: Growth table: subsample shares of digits (points, so triplets) and PCA dimensions.
GROWTH_N = (0.25, 0.5, 1.0)
GROWTH_D = (8, 16, 32)


def _growth_table(progress, name: str = "digits", k: float = 10, shares=GROWTH_N,
                  dims=GROWTH_D, n_lambdas: int = 150, pca: int | None = 16) -> BenchTable:
    """CPU time of the practical path against the number of points (and triplets) at
    PCA ``pca``, and against the PCA dimension on all points, with fitted exponents."""
    table = BenchTable(
        f"Growth of the active-set path on {name} (k={_k_label(k)}, ratio 0.99, "
        f"{n_lambdas} lambdas, relative gap 1e-6), CPU time of one run",
        ["varied", "n", "d", "triplets", "method", "iterations", "CPU [s]",
         "CPU per iteration [ms]", "fitted exponent (CPU vs varied)"],
    )
    runs = PRACTICAL_RUNS[:2]
    for varied, grid in (("n", shares), ("d", dims)):
        rows: dict[str, list[Any]] = {r: [] for r, _ in runs}
        for v in grid:
            X, y = target_data(name, pca if varied == "n" else v)
            if varied == "n":
                keep = np.random.default_rng(0).permutation(X.shape[0])[
                    : round(v * X.shape[0])]
                X, y = X[np.sort(keep)], y[np.sort(keep)]
            prob = ts.TripletProblem(X, y, k=k)
            for run_label, kw in runs:
                t, p, _ = cpu_time_without_jit(functools.partial(
                    ts.path, X, y, triplets=prob, n_lambdas=n_lambdas, termination=False,
                    **PRACTICAL, **kw))
                x = prob.n_triplets if varied == "n" else X.shape[1]
                rows[run_label].append((x, X.shape[0], X.shape[1], prob.n_triplets, t,
                                        p.total_iterations))
                progress(f"growth {name} {varied}={X.shape[0] if varied == 'n' else v} "
                         f"{run_label}: {t:.2f} s CPU")
        for run_label, rs in rows.items():
            ex = loglog_slope([r[0] for r in rs], [r[4] for r in rs])
            for _x, n, d, n_t, t, its in rs:
                table.add("triplets" if varied == "n" else "d", n, d, n_t, run_label, its, t,
                          1e3 * t / max(its, 1), ex)
    table.notes.append(
        "CPU time (time.process_time), numba compilation excluded; a fixed number of "
        "lambdas (termination rule off) so that the paths cover the same lambda range. "
        "'triplets': random subsets of the points (k-NN triplets, so triplets grow with "
        f"n) at {f'PCA {pca}' if pca else 'the raw features'}; 'd': PCA dimension on all "
        "points. Fitted exponent: least-squares "
        "slope of log CPU against log triplets (or log d), one per method and table part.")
    return table


def run(quick: bool = False, progress=print) -> BenchReport:
    report = BenchReport("triplet_screening")
    if quick:
        report.tables.append(_targets_table((1e-6,), progress, targets=(
            ("iris, k=10", "iris", None, 10, 1.0),), n_lambdas=40))
        report.tables.append(_path_table("iris", 10, 1e-6, 1, progress, n_lambdas=40))
        report.tables.append(_vs_cvxpy(progress, 1, k=3, rels=(0.01,)))
        report.tables.append(_hinge_table(progress, "iris", n_lambdas=30))
        report.tables.append(_estimator_table(progress, (("iris, k=10", "iris", None, 10),),
                                              tols=(1e-6,)))
        report.tables.extend(_practical_tables(progress, sets=(
            ("iris, k=10", "iris", None, 10, 1.0),), n_lambdas=60))
        report.tables.append(_growth_table(progress, "iris", shares=(0.5, 1.0),
                                           dims=(2, 4), n_lambdas=20, pca=None))
    else:
        report.tables.append(_targets_table((1e-6, 1e-9), progress))
        report.tables.append(_path_table("wine", np.inf, 1e-6, 1, progress))
        report.tables.append(_sphere_rule_table(progress, 40))
        report.tables.append(_vs_cvxpy(progress, 3))
        report.tables.append(_hinge_table(progress))
        report.tables.append(_estimator_table(progress, TARGETS_KNN))
        report.tables.extend(_practical_tables(progress))
        report.tables.append(_growth_table(progress))
    return report


__all__ = ["run", "target_data", "warm_up"]
