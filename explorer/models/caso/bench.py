"""``dualscope bench caso``.

1. APG and BCD against cvxpy/Clarabel on synthetic shared-subspace tasks
   (alpha = 0.1, eta = 1, h = 3): cvxpy's optimum first, then each method run
   to a certified relative gap <= 1e-6 (hence an objective within 1e-6 of the
   optimum); the wall-time ratios, at the issue's d=50, m=100, n_l=100
   (cvxpy needs minutes and ~7 GB there: matrix_frac is one PSD cone of side
   d + m = 150).
2. APG (Algorithm 1), APG with adaptive restart, ``apg_precond`` (per-task
   metric, restart, growing step) and BCD (Algorithm 2) at d=50, m=100,
   n_l=100: time and iterations to the same relative gaps,
   read from one run's history (best of ``repeat`` runs by final time).
3. The M-step (Eq. (71)): appendix C's median search against the sort-based
   sweep, time per call for growing d.
4. Real data: School (MALSAR's ``school.mat``, 139 schools as tasks, 75 % of each
   school, default parameters) to a certified 1e-6: cvxpy/Clarabel, BCD, the paper's
   APG, APG with adaptive restart and ``apg_precond``, CPU seconds in one process
   (``$DUALSCOPE_SCHOOL`` or ``../shared/data/school.mat``; skipped when absent).
"""

from __future__ import annotations

import functools
import time
import warnings
from typing import Any

import numpy as np

from solvers import _blas, caso
from solvers.reference import caso as ref

from ...benchkit import (
    BenchReport,
    BenchTable,
    best_of,
    load_average,
    loglog_slope,
    rel_diff,
    school_path,
    school_problem,
    time_to_target,
)
from .data import subspace

TARGETS = (1e-3, 1e-4, 1e-6)
PARAMS: dict[str, Any] = {"alpha": 0.1, "eta": 1.0, "h": 3.0}


def _problem(d: int, m: int, n: int, loss: str, seed: int = 1):
    p = subspace(seed=seed, d=d, m=m, n=n, h_true=3)
    ys = p.data["ys"] if loss == "squared" else p.info["ys_sign"]
    return p.data["Xs"], ys


def _warm_up() -> None:
    Xs, ys = _problem(3, 2, 5, "hinge")
    for method in caso.METHODS:
        for loss in ("squared", "hinge"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                caso.solve(Xs, ys, loss=loss, method=method, max_iter=3)


def _vs_cvxpy(size: tuple[int, int, int], losses: tuple[str, ...], repeat: int, progress,
              note: str | None) -> BenchTable:
    d, m, n = size
    table = BenchTable(
        f"APG and BCD vs cvxpy/Clarabel, d={d}, m={m}, n_l={n} (synthetic, alpha=0.1, eta=1, "
        "h=3)",
        ["loss", "solver", "time [s]", "iterations", "objective", "rel. diff vs cvxpy",
         "certified rel. gap", "speed-up vs cvxpy"],
    )
    for loss in losses:
        Xs, ys = _problem(d, m, n, loss)
        progress(f"cvxpy/Clarabel, {loss} loss, d={d}, m={m}, n={n} ...")
        r = ref.solve(Xs, ys, loss=loss, **PARAMS)
        progress(f"cvxpy done in {r.time:.1f} s (status {r.status})")
        table.notes.append(f"{loss}: Clarabel status {r.status!r}.")
        table.add(loss, "cvxpy (Clarabel)", r.time, float("nan"), r.value, 0.0, float("nan"),
                  1.0)
        scale = 1e-9 * max(1.0, abs(r.value))
        for method in caso.METHODS:
            def run(method=method, Xs=Xs, ys=ys, loss=loss):
                return caso.solve(Xs, ys, loss=loss, method=method, tol=1e-6,
                                  max_iter=100_000, **PARAMS)

            t, res = best_of(run, repeat)
            progress(f"{method}: {t:.3f} s, {res.n_iter} iterations")
            inside = res.dual <= r.value + scale and r.value <= res.primal + scale
            table.add(loss, f"{method} (tol=1e-6)", t, res.n_iter, res.primal,
                      rel_diff(res.primal, r.value), res.rel_gap, r.time / t)
            table.notes.append(
                f"{loss}/{method}: cvxpy's optimum inside the certified [dual, primal]: "
                f"{inside}; converged: {res.converged}.")
    table.notes.append(
        "Each method stops on its own certificate (relative gap <= 1e-6, hence objective "
        f"within 1e-6 of the optimum); time is the best of {repeat} runs.")
    if note:
        table.notes.append(note)
    return table


VARIANTS = (("apg", False, "APG (Algorithm 1)"), ("apg", True, "APG + adaptive restart"),
            ("apg_precond", False, "APG, metric + restart + growing step"),
            ("bcd", False, "BCD (Algorithm 2)"))


def _apg_vs_bcd(size: tuple[int, int, int], cases: tuple[tuple[str, float], ...],
                max_iter: int, repeat: int, progress) -> BenchTable:
    d, m, n = size
    cols = ["loss", "eta", "method"]
    for tg in TARGETS:
        cols += [f"iters to {tg:g}", f"time to {tg:g} [s]"]
    cols += ["final rel. gap", "time to 1e-6 / BCD's"]
    table = BenchTable(
        f"APG vs BCD, d={d}, m={m}, n_l={n} (synthetic, alpha=0.1, h=3; targets are "
        "certified relative gaps)", cols)
    for loss, eta in cases:
        Xs, ys = _problem(d, m, n, loss)
        rows = {}
        for method, restart, label in VARIANTS:
            def run(method=method, restart=restart, Xs=Xs, ys=ys, loss=loss, eta=eta):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return caso.solve(Xs, ys, loss=loss, method=method, restart=restart,
                                      alpha=0.1, eta=eta, h=3.0, tol=min(TARGETS),
                                      max_iter=max_iter)

            t0 = time.perf_counter()
            res = run()
            reps = repeat if time.perf_counter() - t0 < 5.0 else 1
            if reps > 1:
                _, res2 = best_of(run, reps - 1)
                if res2.time < res.time:
                    res = res2
            hits = [time_to_target(res.history, target_rel_gap=tg) for tg in TARGETS]
            rows[label] = (hits, res)
            progress(f"{loss} eta={eta} {label}: " + ", ".join(
                f"{tg:g}: {it} it / {t:.2f} s" for tg, (t, it) in zip(TARGETS, hits,
                                                                      strict=True)))
        t_bcd = rows["BCD (Algorithm 2)"][0][-1][0]
        for label, (hits, res) in rows.items():
            vals = []
            for t, it in hits:
                vals += [it if it >= 0 else float("nan"), t]
            t_me = hits[-1][0]
            speed = t_me / t_bcd if label != "BCD (Algorithm 2)" else 1.0
            table.add(loss, eta, label, *vals, res.rel_gap, speed)
    table.notes.append(
        f"One run per method (best of {repeat} by final time when a run takes < 5 s), "
        f"max_iter={max_iter}; '—' = target not reached within max_iter. Times include the "
        "certificate (one d x d eigendecomposition per iteration). The last column is "
        "(this method's time to 1e-6) / (BCD's time to 1e-6).")
    return table


def _m_step_table(dims: tuple[int, ...], progress) -> BenchTable:
    table = BenchTable(
        "M-step (Eq. 71): appendix C median search vs sort-based sweep (eta=1, h=d/10, "
        "Cauchy-distributed singular values)",
        ["d", "median search [ms]", "sort sweep [ms]", "ratio sort/median", "max |diff|"])
    rng = np.random.default_rng(0)
    for d in dims:
        sigma = np.abs(rng.standard_cauchy(size=d))
        h = d / 10.0
        reps = max(3, 200_000 // d)
        t_med, g1 = best_of(functools.partial(caso.m_step_gamma, sigma, 1.0, h,
                                              method="median"), reps)
        t_srt, g2 = best_of(functools.partial(caso.m_step_gamma, sigma, 1.0, h, method="sort"),
                            reps)
        table.add(d, 1e3 * t_med, 1e3 * t_srt, t_srt / t_med, float(np.max(np.abs(g1 - g2))))
        progress(f"M-step d={d}: median {1e3 * t_med:.3f} ms, sort {1e3 * t_srt:.3f} ms")
    table.notes.append("Best of many calls, validation included; both are exact (the "
                       "difference is rounding).")
    return table


def _cpu_solve(Xs, ys, ustep: str, threads: int | None = 1):
    with _blas.blas_threads(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        res = caso.solve(Xs, ys, loss="squared", method="bcd", tol=1e-6, max_iter=100_000,
                         ustep=ustep, **PARAMS)
        return time.process_time() - t0, res


def _growth(axes: dict[str, list[tuple[int, int, int]]], compare_max_d: int,
            progress) -> tuple[BenchTable, BenchTable]:
    table = BenchTable(
        "Growth: BCD, squared loss, tol 1e-6 (synthetic, alpha=0.1, eta=1, h=3): kernel "
        "(n_l x n_l) U-step vs the d x d form of Algorithm 2",
        ["axis", "d", "m", "n_l", "iterations", "CPU kernel [s]", "CPU d x d form [s]",
         "ratio", "rel. objective diff"])
    slopes = BenchTable("Growth exponents (least-squares slope of log CPU time vs log size)",
                        ["axis", "sizes", "exponent, kernel form", "exponent, d x d form"])
    for axis, sizes in axes.items():
        t_new, t_old, vals = [], [], []
        for d, m, n in sizes:
            Xs, ys = _problem(d, m, n, "squared")
            t1, r1 = _cpu_solve(Xs, ys, "auto")
            t_new.append(t1)
            row = [axis, d, m, n, r1.n_iter, t1]
            if d <= compare_max_d:
                t0, r0 = _cpu_solve(Xs, ys, "primal")
                t_old.append(t0)
                row += [t0, t0 / t1, rel_diff(r1.primal, r0.primal)]
            else:
                row += [float("nan")] * 3
            vals.append({"d": d, "m": m, "n_l": n}[axis])
            table.add(*row)
            progress(f"growth {axis}: d={d} m={m} n={n}: {t1:.3f} s CPU")
        old = (loglog_slope(vals[:len(t_old)], t_old) if len(t_old) >= 2 else float("nan"))
        slopes.add(axis, ", ".join(map(str, vals)), loglog_slope(vals, t_new), old)
    table.notes.append(
        "'auto' takes the kernel form for tasks with n_l < d and the d x d form otherwise "
        "(n_l >= d rows time the same code twice). Both forms give the same iterates up to "
        "rounding; '—': the d x d form was not run at that size. One run each, CPU seconds; "
        "the machine may be shared.")
    return table, slopes


def _before_after(size: tuple[int, int, int], big: tuple[int, int, int] | None,
                  progress) -> BenchTable:
    d, m, n = size
    table = BenchTable(
        f"Before/after: BCD, squared loss, tol 1e-6, d={d}, m={m}, n_l={n}",
        ["U-step form", "BLAS threads", "d", "CPU [s]", "wall [s]", "iterations",
         "objective", "rel. objective diff", "CPU / new"])
    Xs, ys = _problem(d, m, n, "squared")
    rows = []
    for label, ustep, threads in (("kernel (n_l x n_l, default)", "auto", 1),
                                  ("d x d (Algorithm 2)", "primal", 1),
                                  ("d x d (Algorithm 2)", "primal", None)):
        w0 = time.perf_counter()
        t, res = _cpu_solve(Xs, ys, ustep, threads)
        rows.append((label, "1" if threads == 1 else "BLAS default", d, t,
                     time.perf_counter() - w0, res.n_iter, res.primal))
        progress(f"before/after {label}, threads {threads}: {t:.2f} s CPU")
    t_new, f_new = rows[0][3], rows[0][6]
    for row in rows:
        table.add(*row, rel_diff(row[6], f_new), row[3] / t_new)
    if big is not None:
        Xs, ys = _problem(*big, "squared")
        w0 = time.perf_counter()
        t, res = _cpu_solve(Xs, ys, "auto")
        table.add("kernel (n_l x n_l, default)", "1", big[0], t, time.perf_counter() - w0,
                  res.n_iter, res.primal, float("nan"), float("nan"))
        table.notes.append(f"Last row: d={big[0]}, m={big[1]}, n_l={big[2]}.")
        progress(f"d={big[0]}: {t:.2f} s CPU")
    table.notes.append(
        "The d x d rows are Algorithm 2's U-step form (ustep='primal'), with the current "
        "M-step; 'BLAS default' runs them under BLAS's own thread count (the policy before "
        "every solve was limited to one thread). CPU seconds of one run each after a "
        "warm-up; the machine may be shared.")
    return table


def _school(path: str, clarabel: bool, max_iter: int, progress) -> BenchTable:
    """School to a certified 1e-6, every method and Clarabel in this process (CPU time)."""
    problem = school_problem("caso", path)
    Xs, ys = problem.data["Xs"], problem.data["ys"]
    kw = caso.PARAMS.defaults()
    kw = {k: kw[k] for k in ("alpha", "eta", "h", "loss")}
    d, m, N = Xs[0].shape[1], len(Xs), sum(len(y) for y in ys)
    table = BenchTable(
        f"Real data: School ({m} tasks, d={d}, {N} training rows; alpha={kw['alpha']:g}, "
        f"eta={kw['eta']:g}, h={kw['h']:g}, squared loss), certified relative gap 1e-6",
        ["solver", "iterations", "CPU [s]", "objective", "rel. diff vs Clarabel",
         "certified rel. gap", "converged", "CPU / BCD's", "Clarabel CPU / this"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in caso.METHODS:  # compile / load every kernel first (not timed)
            caso.solve(Xs, ys, method=method, max_iter=3, **kw)
    opt, t_ref = float("nan"), float("nan")
    if clarabel:
        progress("School: cvxpy/Clarabel ...")
        t0 = time.process_time()
        r = ref.solve(Xs, ys, **kw)
        t_ref, opt = time.process_time() - t0, r.value
        table.notes.append(f"Clarabel status {r.status!r}, wall {r.time:.1f} s; its CPU "
                           "includes cvxpy's canonicalisation.")
        progress(f"Clarabel: {t_ref:.1f} s CPU, objective {opt:.9g}")
    rows = []
    for label, method, restart, budget in (
            ("BCD (Algorithm 2)", "bcd", False, 100_000),
            ("APG (Algorithm 1, as in the paper)", "apg", False, max_iter),
            ("APG + adaptive restart", "apg", True, max_iter),
            ("apg_precond (metric + restart + growing step)", "apg_precond", False, 100_000)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            res = caso.solve(Xs, ys, method=method, restart=restart, tol=1e-6,
                             max_iter=budget, **kw)
            t = time.process_time() - t0
        rows.append((label, res, t))
        progress(f"School {label}: {res.n_iter} it, {t:.3f} s CPU, rel gap {res.rel_gap:.2e}")
    t_bcd = rows[0][2]
    if clarabel:
        table.add("cvxpy (Clarabel)", float("nan"), t_ref, opt, 0.0, float("nan"),
                  float("nan"), t_ref / t_bcd, 1.0)
    for label, res, t in rows:
        table.add(label, res.n_iter, t, res.primal,
                  rel_diff(res.primal, opt) if clarabel else float("nan"), res.rel_gap,
                  res.converged, t / t_bcd, t_ref / t)
    table.notes.append(
        f"One run each in one process after a warm-up (time.process_time, numba compilation "
        f"excluded); the paper's APG and APG + restart have max_iter={max_iter}, the others "
        f"stop on their certificate. {load_average()} at the end of the table.")
    return table


def run(quick: bool = False, progress=print) -> BenchReport:
    report = BenchReport("caso")
    _warm_up()
    if quick:
        report.tables.append(_vs_cvxpy((10, 20, 20), ("squared", "hinge"), 1, progress, None))
        report.tables.append(_apg_vs_bcd((20, 30, 30), (("squared", 1.0), ("hinge", 1.0)),
                                         2000, 1, progress))
        report.tables.append(_m_step_table((1_000, 100_000), progress))
        report.tables.extend(_growth({"d": [(10, 6, 8), (20, 6, 8), (40, 6, 8)],
                                      "m": [(20, 4, 8), (20, 8, 8)],
                                      "n_l": [(20, 6, 8), (20, 6, 16)]}, 40, progress))
        report.tables.append(_before_after((40, 6, 8), None, progress))
        path = school_path()
        if path is not None:
            report.tables.append(_school(path, False, 300, progress))
    else:
        note = (
            "cvxpy's matrix_frac becomes one PSD cone of side d + m = 150 (11,325 entries); "
            "Clarabel's peak memory was about 7 GB at this size.")
        report.tables.append(_vs_cvxpy((50, 100, 100), ("squared", "hinge"), 3, progress,
                                       note))
        report.tables.append(_apg_vs_bcd(
            (50, 100, 100),
            (("squared", 1.0), ("squared", 0.1), ("hinge", 1.0), ("hinge", 0.1),
             ("logistic", 1.0), ("logistic", 0.1)),
            3000, 2, progress))
        report.tables.append(_m_step_table((100, 1_000, 10_000, 100_000, 1_000_000), progress))
        report.tables.extend(_growth(
            {"d": [(50, 50, 100), (100, 50, 100), (200, 50, 100), (400, 50, 100),
                   (1000, 50, 100)],
             "m": [(200, 25, 100), (200, 50, 100), (200, 100, 100), (200, 200, 100)],
             "n_l": [(200, 50, 25), (200, 50, 50), (200, 50, 100), (200, 50, 150)]},
            400, progress))
        report.tables.append(_before_after((400, 50, 100), (1000, 50, 100), progress))
        path = school_path()
        if path is not None:
            report.tables.append(_school(path, True, 5000, progress))
    return report


def real(progress=print) -> BenchReport:
    """The real-data table alone (``dualscope bench caso --real``): School, every method
    and Clarabel in one process."""
    report = BenchReport("caso")
    path = school_path()
    if path is None:
        progress("school.mat not found (set DUALSCOPE_SCHOOL): no real-data table")
        return report
    _warm_up()
    report.tables.append(_school(path, True, 5000, progress))
    return report


__all__ = ["real", "run"]
