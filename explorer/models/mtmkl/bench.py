"""``dualscope bench mtmkl``.

1. The solver against cvxpy/Clarabel on the paper's 32-task problem (depth-5
   tree, 63 node similarities, d = 100, 10 + 10 training points per task):
   cvxpy's optimum first, then Algorithm E.1 and Algorithm 1 ("alternating",
   the exact-W-step wrapper) stopped on their own certificate (relative gap
   <= 1e-8, hence objective within 1e-8 of the optimum); best of 3 wall
   times, p in {1, 2, 3}, C in {1e-3 (all alpha at C), 0.1 (many free alpha)}.
2. Time per epoch as n grows (the same tree, more training points per task):
   linear form (w kept per task) and kernel form (decision values kept per
   sample, precomputed linear kernel), a fixed number of epochs each.
3. Factor form against the general dense path (``structure="dense"``, the
   solver as it was before the factor form), same problem and run, CPU time
   (``time.process_time``, numba compilation excluded): the ratio and the
   equal objectives; the dense path is skipped where its (M, T, T) array
   exceeds a memory budget.
4. Growth: CPU time against the number of tasks (tree depth), the samples per
   task and the dimension d, with the fitted log-log exponent of each series.
5. The paper's experiment: mean AUC over the 32 tasks (test sets of 1000 + 1000
   per task) of Union, Individual, Vanilla MTL and MT-MKL p in {1, 2, 3}, over
   several data seeds, at the paper's noise (sigma = 20) and at half of it,
   with the correlation of the learned similarity ``sum_m theta_m G_m`` with the
   true one (dot products of the leaves' mu).
6. Real data: School (MALSAR's ``school.mat``, 139 schools as tasks, 75 % of each
   school, label = score above the training median, the flat hierarchy of 140
   views) and a penguins-like problem (233 rows x 4 unscaled features, 3 tasks):
   Clarabel, Algorithm E.1 (the paper's), Algorithm 1 (with its conjugate-gradient face
   step, and ``method="newton"``, with the projected Newton W-step) and ``method="auto"`` to
   certified relative gaps 1e-6 and 1e-8, CPU seconds in one process
   (``$DUALSCOPE_SCHOOL`` or ``../shared/data/school.mat``; School rows skipped when
   absent).
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from solvers import mtmkl
from solvers.reference import mtmkl as ref

from ...benchkit import (
    BenchReport,
    BenchTable,
    best_of,
    cpu_time_without_jit,
    load_average,
    loglog_slope,
    rel_diff,
    school_path,
    school_problem,
)
from .baselines import compare
from .data import hierarchy

#: Largest (M, T, T) similarity stack the dense path is run on (bytes).
_DENSE_BUDGET = 600 * 2**20

C_DEFAULT = 1e-3
#: At C = 1e-3 (the best test AUC) every alpha sits at C after one epoch; the epoch
#: timing uses a C where samples keep moving.
C_EPOCH = 0.1


def _vs_cvxpy(depth: int, ps: tuple[float, ...], Cs: tuple[float, ...], repeat: int, progress
              ) -> BenchTable:
    prob = hierarchy(seed=0, depth=depth, n_test=10)
    d = prob.data
    X, y, tasks, G = d["X"], d["y"], d["tasks"], d["G"]
    T = prob.info["T"]
    table = BenchTable(
        f"MT-MKL vs cvxpy/Clarabel: paper's problem, {T} tasks, M={len(G)} node similarities, "
        f"n={X.shape[0]}, d={X.shape[1]}",
        ["C", "p", "solver", "time [s]", "epochs", "theta-steps", "objective",
         "rel. diff vs cvxpy", "certified rel. gap", "speed-up vs cvxpy"],
    )
    mtmkl.solve(X[:40], y[:40], tasks[:40], G, C=C_DEFAULT, max_iter=2)  # compile / load
    for C in Cs:
        for p in ps:
            progress(f"cvxpy/Clarabel, C={C:g}, p={p:g} ...")
            r = ref.solve(X, y, tasks, G, C=C, p=p)
            progress(f"cvxpy done in {r.time:.1f} s")
            table.add(C, p, "cvxpy (Clarabel)", r.time, float("nan"), float("nan"), r.value,
                      0.0, float("nan"), 1.0)
            for method, label in (("e1", "Algorithm E.1"),
                                  ("alternating", "Algorithm 1 (wrapper)")):
                def run(method=method, p=p, C=C):
                    return mtmkl.solve(X, y, tasks, G, C=C, p=p, method=method, tol=1e-8,
                                       max_iter=1_000_000)

                t, res = best_of(run, repeat)
                epochs = int(res.history.epochs[-1])
                progress(f"C={C:g} p={p:g} {method}: {t:.3f} s, {epochs} epochs")
                scale = 1e-9 * max(1.0, abs(r.value))
                inside = res.dual <= r.value + scale and r.value <= res.primal + scale
                table.add(C, p, label, t, epochs, int(res.history.theta_step.sum()),
                          res.primal, rel_diff(res.primal, r.value), res.rel_gap, r.time / t)
                if not inside:
                    table.notes.append(f"C={C:g} p={p:g} {method}: cvxpy's optimum NOT inside "
                                       "the certified interval")
    table.notes.append(
        "Both solvers stop on their own certificate, P(W(alpha, theta), theta) - D(alpha) "
        "(Problem 3), relative gap <= 1e-8; cvxpy's optimum lay inside every certified "
        "[dual, primal] interval unless noted. Times: best of "
        f"{repeat}. Features in units of the noise (x / sigma), see the data module."
    )
    return table


def _per_epoch(n_trains: tuple[int, ...], kernel_max_n: int, epochs: int, progress
               ) -> BenchTable:
    table = BenchTable(
        f"Time per epoch as n grows (32 tasks, M=63, d=100, p=2, C={C_EPOCH:g}; "
        f"{epochs} epochs, median)",
        ["n", "form", "time/epoch [ms]", "per sample [us]", "moving samples (last epoch)"],
    )
    for n_train in n_trains:
        prob = hierarchy(seed=0, depth=5, n_train=n_train, n_test=1)
        d = prob.data
        X, y, tasks, G = d["X"], d["y"], d["tasks"], d["G"]
        n = X.shape[0]
        forms: list[tuple[str, object, object]] = [("linear, factor form (V = U^T Z)", X, "linear")]
        if n <= kernel_max_n:
            forms.append(("kernel (f per sample)", None, X @ X.T))
        for label, feats, kernel in forms:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = mtmkl.solve(feats, y, tasks, G, C=C_EPOCH, kernel=kernel, tol=1e-15,
                                  max_iter=epochs)
            dt = np.diff(np.concatenate([[0.0], res.history.time]))
            med = float(np.median(dt))
            progress(f"n={n} {label}: {1e3 * med:.2f} ms/epoch")
            table.add(n, label, 1e3 * med, 1e6 * med / n, int(res.history.n_moved[-1]))
    table.notes.append(
        "An epoch includes the certificate (primal, Problem-3 dual, theta-step). Linear "
        "form (the tree's node indicators in factor form): O((depth + 1) d) per visited "
        "sample plus the same when alpha_i moves; kernel form: O(n) per "
        "moving sample, so O(n^2) per epoch."
    )
    return table


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seconds, value, _ = cpu_time_without_jit(fn)
    return seconds, value


def _warm_up() -> None:
    """Compile / load the kernels and import what the paths use, outside the timings."""
    d = hierarchy(seed=0, depth=2, d=5, n_train=2, n_test=1).data
    for G, structure in ((d["G"], "auto"), (list(d["G"]), "dense")):
        _cpu(functools.partial(mtmkl.solve, d["X"], d["y"], d["tasks"], G,
                               structure=structure, max_iter=3))


def _dense_fits(depth: int) -> bool:
    T = 2**depth
    return (2 * T - 1) * T * T * 8 <= _DENSE_BUDGET


def _structure_ratio(depths: tuple[int, ...], Cs: tuple[float, ...], progress) -> BenchTable:
    table = BenchTable(
        "Factor form vs the general dense path (hierarchy, d=100, 10+10 points per task, "
        "p=2, tol=1e-6; CPU seconds, one run each)",
        ["depth", "tasks", "views M", "n", "C", "path", "CPU [s]", "epochs", "objective",
         "rel. diff vs dense", "dense / this"],
    )
    _warm_up()
    for depth in depths:
        prob = hierarchy(seed=0, depth=depth, n_test=1)
        d = prob.data
        X, y, tasks, F = d["X"], d["y"], d["tasks"], d["G"]
        dense = list(F) if _dense_fits(depth) else None
        for C in Cs:
            runs = [("factor form (FactoredSimilarities)", F, "auto")]
            if dense is not None:
                runs += [("dense 0/1 input, recognised (auto)", dense, "auto"),
                         ("general dense path (structure=dense)", dense, "dense")]
            out = []
            for label, G, structure in runs:
                def run(G=G, structure=structure, C=C, X=X, y=y, tasks=tasks):
                    return mtmkl.solve(X, y, tasks, G, C=C, structure=structure, tol=1e-6,
                                       max_iter=1_000_000)

                t, res = _cpu(run)
                progress(f"depth={depth} C={C:g} {label}: {t:.3f} s CPU, {res.n_iter} epochs")
                out.append((label, t, res))
            t_dense = out[-1][1] if dense is not None else float("nan")
            P_dense = out[-1][2].primal if dense is not None else float("nan")
            for label, t, res in out:
                table.add(depth, 2**depth, len(F), X.shape[0], C, label, t,
                          int(res.history.epochs[-1]), res.primal,
                          rel_diff(res.primal, P_dense), t_dense / t)
    table.notes.append(
        "The general dense path keeps every G_m as a dense T x T matrix (checked PSD by an "
        "eigendecomposition; a step updates all T task weights; W by the (M, T, T) x (T, d) "
        "contraction): the solver before the factor form. The factor form keeps V = U^T Z "
        "(a step touches the depth+1 nodes above its task). Same iterates, so the same epochs "
        "and objective. '—': the dense (M, T, T) stack exceeds "
        f"{_DENSE_BUDGET / 2**20:.0f} MB (depth 10: 17 GB), not run."
    )
    return table


def _growth(series: dict[str, list[dict]], C: float, progress) -> tuple[BenchTable, BenchTable]:
    table = BenchTable(
        f"Growth: CPU time vs tasks, samples per task and d (p=2, C={C:g}, tol=1e-6)",
        ["series", "path", "tasks", "n", "d", "CPU [s]", "epochs", "objective"],
    )
    fits = BenchTable("Growth: fitted log-log exponents (time ~ x^k)",
                      ["series", "x", "path", "range", "exponent k"])
    _warm_up()
    for name, points in series.items():
        for path in ("auto", "dense"):
            xs, ts = [], []
            for pt in points:
                depth = pt["depth"]
                if path == "dense" and not _dense_fits(depth):
                    continue
                if path == "dense" and pt.get("no_dense"):
                    continue
                prob = hierarchy(seed=0, depth=depth, d=pt["d"], n_train=pt["n_train"],
                                 n_test=1)
                d = prob.data
                G = d["G"] if path == "auto" else list(d["G"])

                def run(d=d, G=G, path=path):
                    return mtmkl.solve(d["X"], d["y"], d["tasks"], G, C=C, structure=path,
                                       tol=1e-6, max_iter=1_000_000)

                t, res = _cpu(run)
                label = "factor form" if path == "auto" else "general dense"
                progress(f"growth {name} {label} depth={depth} n_train={pt['n_train']} "
                         f"d={pt['d']}: {t:.3f} s")
                table.add(name, label, 2**depth, d["X"].shape[0], pt["d"], t,
                          int(res.history.epochs[-1]), res.primal)
                xs.append({"tasks": 2**depth, "n": d["X"].shape[0], "d": pt["d"]}[name])
                ts.append(t)
            if len(xs) >= 2:
                fits.add(name, name, "factor form" if path == "auto" else "general dense",
                         f"{min(xs):,}..{max(xs):,}", loglog_slope(xs, ts))
    fits.notes.append("Least-squares slope of log(CPU time) on log(x) over the series' points "
                      "(the quick bench's sub-millisecond times make its slopes noisy).")
    return table, fits


def _growth_series(quick: bool) -> dict[str, list[dict]]:
    if quick:
        return {"tasks": [{"depth": k, "d": 100, "n_train": 10} for k in (3, 4, 5)],
                "n": [{"depth": 3, "d": 100, "n_train": m} for m in (10, 40)],
                "d": [{"depth": 3, "d": m, "n_train": 10} for m in (50, 200)]}
    return {"tasks": [{"depth": k, "d": 100, "n_train": 10} for k in range(3, 11)],
            "n": [{"depth": 5, "d": 100, "n_train": m} for m in (10, 40, 160, 640)],
            "d": [{"depth": 5, "d": m, "n_train": 10} for m in (25, 100, 400, 1600)]}


def _auc(sigmas: tuple[float, ...], seeds: int, n_test: int, progress) -> BenchTable:
    table = BenchTable(
        f"Paper's experiment: mean AUC over 32 tasks, {seeds} data seeds (mean ± std), "
        f"C={C_DEFAULT:g}, {n_test}+{n_test} test points per task",
        ["sigma", "method", "mean AUC", "std over seeds", "wins vs Union", "corr(learned, true)",
         "solve time [s]"],
    )
    for sigma in sigmas:
        acc: dict[str, list[tuple[float, float, float]]] = {}
        for seed in range(seeds):
            prob = hierarchy(seed=seed, sigma=sigma, n_test=n_test)
            out = compare(prob, C=C_DEFAULT, tol=1e-6, max_iter=100_000)
            for label, v in out.items():
                acc.setdefault(label, []).append(
                    (v["mean_auc"], v["similarity_corr"], v["result"].time))
            progress(f"sigma={sigma:g} seed {seed}: " + ", ".join(
                f"{k} {v['mean_auc']:.4f}" for k, v in out.items()))
        union = np.array([a for a, _, _ in acc["Union"]])
        for label, rows in acc.items():
            a = np.array([r[0] for r in rows])
            corr = np.array([r[1] for r in rows])
            wins = f"{int(np.sum(a > union))}/{seeds}" if label != "Union" else "—"
            table.add(sigma, label, float(a.mean()), float(a.std()), wins,
                      float(np.nanmean(corr)) if np.any(np.isfinite(corr)) else float("nan"),
                      float(np.mean([r[2] for r in rows])))
    table.notes.append(
        "sigma = 20 is the paper's noise: every method is close to chance there (the Bayes "
        "AUC with the true mu is Phi(||mu|| / (sigma sqrt 2)) = 0.64) and the differences "
        "between Union, Vanilla and MT-MKL are of the order of the seed-to-seed spread. "
        "Correlations are over the off-diagonal entries; Union and Individual have no "
        "learned similarity."
    )
    return table


def penguins_like(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """233 rows x 4 unscaled features shaped like palmerpenguins (bill length and depth,
    flipper length in mm, body mass in g; species means and spreads), the 3 species as
    tasks, the sex as the label, the flat hierarchy (all tasks, then each alone)."""
    rng = np.random.default_rng(seed)
    mu = np.array([[38.8, 18.3, 190.0, 3700.0], [48.8, 18.4, 196.0, 3730.0],
                   [47.5, 15.0, 217.0, 5080.0]])
    sd = np.array([2.7, 1.2, 6.5, 460.0])
    X, y, t = [], [], []
    for s, n in enumerate((101, 56, 76)):
        sex = rng.choice([-1.0, 1.0], size=n)
        X.append(mu[s] + sd * rng.normal(size=(n, 4)) + 0.6 * sd * sex[:, None])
        y.append(sex)
        t.append(np.full(n, s))
    G = [np.ones((3, 3))] + [np.diag(np.eye(3)[k]) for k in range(3)]
    return np.vstack(X), np.concatenate(y), np.concatenate(t), G


def _real_data(clarabel: bool, tols: tuple[float, ...], e1_budget: int, progress
               ) -> BenchTable:
    """School and the penguins-like problem: every method and Clarabel, CPU in one process."""
    table = BenchTable(
        "Real data: Algorithm E.1, Algorithm 1, newton and auto against Clarabel (C=1e-3, p=2, "
        "flat hierarchy), certified relative gaps",
        ["data", "solver", "tol", "method that ran", "iterations", "epochs", "CPU [s]",
         "objective", "rel. diff vs Clarabel", "certified rel. gap", "converged",
         "Clarabel CPU / this"])
    problems = []
    path = school_path()
    if path is not None:
        d = school_problem("mtmkl", path).data
        problems.append(("School", d["X"], d["y"], d["tasks"], d["G"]))
    else:
        table.notes.append("School rows skipped: school.mat not found (set DUALSCOPE_SCHOOL).")
    problems.append(("penguins-like 233 x 4", *penguins_like()))
    for name, X, y, tasks, G in problems:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ipm_applies = True
            for method in mtmkl.METHODS:  # compile / load the kernels (not timed)
                try:
                    mtmkl.solve(X, y, tasks, G, method=method, max_iter=3)
                except ValueError:  # ipm: the feature space is beyond its size limit
                    if method != "ipm":
                        raise
                    ipm_applies = False
                    table.notes.append(f"{name}: method='ipm' does not apply (d times the "
                                       "similarities' ranks is beyond its limit).")
        opt, t_ref = float("nan"), float("nan")
        if clarabel:
            t0 = time.process_time()
            r = ref.solve(X, y, tasks, G)
            t_ref, opt = time.process_time() - t0, r.value
            table.add(name, "cvxpy (Clarabel)", float("nan"), "—", float("nan"),
                      float("nan"), t_ref, opt, 0.0, float("nan"), float("nan"), 1.0)
            progress(f"{name}: Clarabel {t_ref:.2f} s CPU, objective {opt:.9g}")
        for tol in tols:
            runs = (("E.1 (the paper's)", "e1"), ("Algorithm 1", "alternating"),
                    ("Algorithm 1, Newton W-step", "newton"), ("auto", "auto"),
                    ("Algorithm 1, interior-point W-step", "ipm"))
            for label, method in runs:
                if method == "ipm" and not ipm_applies:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.process_time()
                    res = mtmkl.solve(X, y, tasks, G, method=method, tol=tol,
                                      max_iter=e1_budget)
                    t = time.process_time() - t0
                table.add(name, label, tol, res.method, res.n_iter,
                          int(res.history.epochs[-1]), t, res.primal,
                          rel_diff(res.primal, opt) if clarabel else float("nan"),
                          res.rel_gap, res.converged, t_ref / t)
                progress(f"{name} {label} tol={tol:g}: {res.n_iter} it, {t:.3f} s CPU, "
                         f"rel gap {res.rel_gap:.1e} ({res.method})")
    table.notes.append(
        f"One run each in one process after a warm-up (time.process_time, numba compilation "
        f"excluded), max_iter={e1_budget}; Clarabel's CPU includes cvxpy's canonicalisation. "
        f"'epochs' counts coordinate-ascent epochs (Algorithm 1's inner ones included). "
        f"{load_average()} at the end of the table.")
    return table


def run(quick: bool = False, progress=print) -> BenchReport:
    report = BenchReport("mtmkl")
    if quick:
        report.tables.append(_vs_cvxpy(3, (2.0,), (C_DEFAULT, 0.1), 1, progress))
        report.tables.append(_per_epoch((10, 40), 1000, 5, progress))
        report.tables.append(_structure_ratio((3, 5), (C_DEFAULT,), progress))
        report.tables.extend(_growth(_growth_series(True), C_DEFAULT, progress))
        report.tables.append(_auc((20.0,), 1, 200, progress))
        report.tables.append(_real_data(False, (1e-6,), 2000, progress))
    else:
        report.tables.append(_vs_cvxpy(5, (1.0, 2.0, 3.0), (C_DEFAULT, 0.1), 3, progress))
        report.tables.append(_per_epoch((10, 40, 160, 640, 2560), 2600, 20, progress))
        report.tables.append(_structure_ratio((5, 7, 10), (C_DEFAULT, C_EPOCH), progress))
        report.tables.extend(_growth(_growth_series(False), C_DEFAULT, progress))
        report.tables.append(_auc((20.0, 10.0), 5, 1000, progress))
        report.tables.append(_real_data(True, (1e-6, 1e-8), 20_000, progress))
    return report


def real(progress=print) -> BenchReport:
    """The real-data table alone (``dualscope bench mtmkl --real``): School at 1e-6 and
    1e-8 and the penguins-like problem, every method and Clarabel in one process."""
    report = BenchReport("mtmkl")
    report.tables.append(_real_data(True, (1e-6, 1e-8), 20_000, progress))
    return report


__all__ = ["real", "run"]
