"""``dualscope bench wwsvm``.

1. Walrus against cvxpy/Clarabel at n=5000, d=50, k=10 (Gaussian blobs, spread 0.5
   and 1): cvxpy's optimum once, then Walrus to a relative gap of 1e-6 (hence an
   objective within 1e-6 of the optimum), with the free-block acceleration (the
   default) and without it (the paper's sweeps alone); CPU seconds
   (``time.process_time``, the machine is shared), ratios from one run.
2. Walrus against the Shark-style iterative block solver for k in
   {10, 100, 1000}: time to reach gap <= delta * first gap for
   delta in {0.1, 0.01, 0.001} (the paper's stopping rule), one run per
   method with the time read from the history, best of ``repeat`` runs; and the
   CPU time of one Walrus epoch at each k (partial selection in the exact block
   solver keeps it about linear in k).
3. Overlapping classes at any C: blobs n=4000, d=20, k=8, spread 1 and 2,
   C in {1, 3.7, 10, 100}, and random labels (n=2000, d=30, k=8, relative gap
   1e-8): the primal interior-point method (``method="ipm"``) against Clarabel,
   next to Walrus within the default ``max_iter``.
4. Sparse text: synthetic text-like CSR data (n=20k, d=50k, k=20) and, when the
   file is present, the Debian-sections TF-IDF set (``DUALSCOPE_DEBIAN_TRAIN`` or
   ``../shared/data/debian_sections_train.svm.gz`` next to the repository; its
   ``_test`` part for accuracy) at C in {0.1, 1, 10}: Walrus to a relative gap of
   1e-6 and to the authors' rule (gap <= 0.0009 x first gap) against scikit-learn's
   ``LinearSVC`` (Crammer-Singer and one-vs-rest, both without intercept like the
   WW-SVM here); peak memory of the solve (tracemalloc, a separate untimed run)
   against the CSR matrix's bytes.
5. Growth: Walrus CPU time to the authors' rule against n and d (blobs), with
   the fitted exponent of a log-log fit.

``real`` (``dualscope bench wwsvm --real``) runs only the real-data tables: the
Debian-sections train part at C in {1, 10}, Walrus, ``method="catalyst"`` and
``method="auto"`` (Walrus continued by Catalyst) certified to
a relative gap of 1e-6 against ``LinearSVC`` one-vs-rest at its default tolerance and at
tol 1e-6, all in one process, and the certified runs' tails read from their own histories
(how far the dual and the primal candidate still were from the final certificate at each
gap reached).
"""

from __future__ import annotations

import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from solvers import ConvergenceWarning, wwsvm
from solvers.reference import wwsvm as ref

from ...benchkit import (
    BenchReport,
    BenchTable,
    debian_path,
    load_average,
    loglog_slope,
    rel_diff,
    time_to_target,
)
from .data import blobs, random_labels, text_like

DELTAS = (0.1, 0.01, 0.001)


def _cpu(fn, repeat: int = 1):
    """Best CPU seconds of ``repeat`` runs of ``fn`` and its last value."""
    best, value = np.inf, None
    for _ in range(max(1, repeat)):
        t0 = time.process_time()
        value = fn()
        best = min(best, time.process_time() - t0)
    return float(best), value


def _vs_cvxpy(n: int, d: int, k: int, spreads: tuple[float, ...], progress,
              repeat: int = 3) -> BenchTable:
    C = 1.0
    table = BenchTable(
        f"Walrus vs cvxpy/Clarabel, n={n}, d={d}, k={k}, C={C:g} (Gaussian blobs), CPU time",
        ["spread", "solver", "CPU [s]", "epochs", "objective", "rel. diff vs cvxpy",
         "certified rel. gap", "speed-up vs cvxpy", "certificates", "Newton steps"],
    )
    for spread in spreads:
        prob = blobs(seed=1, n=n, k=k, d=d, spread=spread)
        X, y = prob.data["X"], prob.data["y"]
        progress(f"cvxpy/Clarabel on n={n}, d={d}, k={k}, spread={spread} ...")
        t_ref, r = _cpu(lambda X=X, y=y: ref.solve(X, y, C))
        progress(f"cvxpy done in {t_ref:.1f} s CPU")
        wwsvm.solve(X[:50], y[:50], C, max_iter=2)  # compile / load the cache
        table.add(spread, "cvxpy (Clarabel)", t_ref, float("nan"), r.value, 0.0,
                  float("nan"), 1.0, float("nan"), float("nan"))
        for label, accelerate, rep in (("walrus + free-block steps (default)", True, repeat),
                                       ("walrus, paper's sweeps only", False, 1)):
            def run(X=X, y=y, accelerate=accelerate):
                return wwsvm.solve(X, y, C, tol=1e-6, max_iter=200_000,
                                   accelerate=accelerate)

            t, res = _cpu(run, rep)
            progress(f"{label}: {t:.3f} s CPU, {res.n_iter} epochs")
            scale = 1e-9 * max(1.0, abs(r.value))
            inside = res.dual <= r.value + scale and r.value <= res.primal + scale
            table.add(spread, label, t, res.n_iter, res.primal, rel_diff(res.primal, r.value),
                      res.rel_gap, t_ref / t, res.n_certificates, res.n_accel_steps)
            table.notes.append(
                f"spread {spread}, {label}: training accuracy "
                f"{np.mean(res.predict(X) == y):.3f}; cvxpy's optimum inside the certified "
                f"[dual, primal]: {inside}; certificate in {res.n_certificates} of "
                f"{res.n_iter} epochs."
            )
    table.notes.append(
        "Walrus stops on its own certificate (relative gap <= 1e-6, hence objective within "
        f"1e-6 of the optimum); CPU time is the best of {repeat} runs (1 run without the "
        "acceleration), cvxpy one run. Without the acceleration dual BCD needs many more "
        "epochs when the classes overlap (spread 1): the free dual block is a quadratic "
        "with a large condition number."
    )
    return table


def _vs_iterative(n: int, d: int, ks: tuple[int, ...], repeat: int, progress
                  ) -> tuple[BenchTable, BenchTable]:
    cols = ["k", "n", "method", "epochs to 1e-3"]
    cols += [f"time to {dl:g} [s]" for dl in DELTAS]
    cols += ["speed-up at 1e-3"]
    table = BenchTable(
        f"Walrus vs Shark-style iterative block solver (blobs n={n}, d={d}, spread 1.0, C=1)",
        cols,
    )
    epochs = BenchTable(
        f"Walrus epoch CPU time against k (blobs n={n}, d={d}, spread 1.0, C=1)",
        ["k", "epochs", "certificates", "CPU per epoch [ms]", "vs k=100"],
    )
    per_epoch = {}
    for k in ks:
        prob = blobs(seed=2, n=n, k=k, d=d, spread=1.0)
        X, y = prob.data["X"], prob.data["y"]
        times = {}
        for method in wwsvm.BLOCK_METHODS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                wwsvm.solve(X[:50], y[:50], method=method, max_iter=2)

            def run(method=method, X=X, y=y):
                return wwsvm.solve(
                    X, y, 1.0, method=method, tol=1e-12, max_iter=10_000, accelerate=False,
                    callback=lambda s: s.extras["gap_ratio"] > min(DELTAS),
                )

            cpu, res = _cpu(run, repeat)
            ts = [time_to_target(res.history, target_ratio=dl) for dl in DELTAS]
            times[method] = ts
            if method == "walrus":
                per_epoch[k] = cpu / res.n_iter
                epochs.add(k, res.n_iter, res.n_certificates, 1e3 * per_epoch[k], float("nan"))
            progress(f"k={k} {method}: " + ", ".join(f"{t:.3f}s" for t, _ in ts))
        for method in wwsvm.BLOCK_METHODS:
            ts = times[method]
            speed = times["iterative"][-1][0] / times["walrus"][-1][0] if method == "walrus" \
                else 1.0
            table.add(k, n, method, ts[-1][1], *[t for t, _ in ts], speed)
    if 100 in per_epoch:
        for row in epochs.rows:
            row[-1] = per_epoch[row[0]] / per_epoch[100]
    table.notes.append(
        "The paper's comparison: both block solvers in the same sweeps, without the "
        "free-block steps. One run per method (best of "
        f"{repeat}); wall time read from the history when gap <= delta x first-epoch gap. "
        "The baseline's inner tolerance follows the accuracy reached (see solvers.wwsvm)."
    )
    epochs.notes.append(
        "CPU seconds of the Walrus run (sweeps only) to gap <= 0.001 x first gap (best of "
        f"{repeat}) divided by its epochs, certificates included (computed every epoch for "
        "the first 5 epochs, then every 1-5 epochs as the gap's trend allows). The exact "
        "block solver selects only the largest entries of v (about 13 of 999 end up "
        "nonzero at k=1000) instead of sorting them all."
    )
    return table, epochs


def _overlap(problems, Cs, tol: float, title: str, progress) -> BenchTable:
    table = BenchTable(
        title,
        ["data", "C", "Clarabel CPU [s]", "ipm CPU [s]", "ipm iterations", "ipm rel. gap",
         "speed-up vs Clarabel", "objective rel. diff", "walrus rel. gap (max_iter=1000)",
         "walrus converged"],
    )
    wwsvm.solve(np.eye(3), [0, 1, 2], method="ipm", max_iter=2)
    for label, prob in problems:
        X, y = prob.data["X"], prob.data["y"]
        for C in Cs:
            t_ref, r = _cpu(lambda X=X, y=y, C=C: ref.solve(X, y, C))
            t_ipm, res = _cpu(lambda X=X, y=y, C=C: wwsvm.solve(X, y, C, method="ipm", tol=tol))
            w = wwsvm.solve(X, y, C, tol=tol)
            progress(f"{label} C={C:g}: Clarabel {t_ref:.2f} s, ipm {t_ipm:.3f} s "
                     f"({res.n_iter} it), walrus rel. gap {w.rel_gap:.1e}")
            table.add(label, C, t_ref, t_ipm, res.n_iter, res.rel_gap, t_ref / t_ipm,
                      rel_diff(res.primal, r.value), w.rel_gap, w.converged)
    table.notes.append(
        f"ipm stops on its own certificate (relative gap <= {tol:g}); CPU seconds of one "
        "run each in this process (time.process_time; the machine is shared). The last two "
        "columns: Walrus (dual sweeps + free-block steps) within the default max_iter=1000 "
        "epochs at the same tol.")
    return table


def _csr_bytes(X) -> int:
    return int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)


def _peak_memory(fn) -> int:
    """Peak bytes allocated (tracemalloc) while ``fn`` runs (an untimed, separate run)."""
    tracemalloc.start()
    try:
        fn()
        return int(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()


def _as_int32(X):
    X = sp.csr_matrix(X, copy=True)
    X.indices = X.indices.astype(np.int32)
    X.indptr = X.indptr.astype(np.int32)
    return X


def _sparse_rows(table: BenchTable, name: str, X, y, Xt, yt, Cs, progress, *,
                 max_iter: int, linearsvc: bool = True) -> None:
    from sklearn.svm import LinearSVC

    csr = _csr_bytes(X)
    wwsvm.solve(X[:50], y[:50], max_iter=2)
    X32 = _as_int32(X)
    for C in Cs:
        runs = []
        for label, kw in (("walrus, rel. gap 1e-6", {"tol": 1e-6}),
                          ("walrus, authors' rule (gap <= 0.0009 x first)",
                           {"stopping": "gap_ratio"})):
            t, res = _cpu(lambda kw=kw, C=C: wwsvm.solve(X, y, C, max_iter=max_iter, **kw))
            runs.append((label, t, res))
        t_cs = t_ovr = None
        if linearsvc:
            for label, mc in (("LinearSVC crammer_singer", "crammer_singer"),
                              ("LinearSVC one-vs-rest", "ovr")):
                t, est = _cpu(lambda mc=mc, C=C: LinearSVC(
                    C=C, multi_class=mc, fit_intercept=False, max_iter=1000).fit(X32, y))
                if mc == "ovr":
                    t_ovr = t
                else:
                    t_cs = t
                runs.append((label, t, est))
        mem = _peak_memory(lambda C=C: wwsvm.solve(X, y, C, max_iter=3, tol=1e-12))
        for label, t, obj in runs:
            is_ww = label.startswith("walrus")
            acc = float(np.mean(obj.predict(Xt) == yt)) if Xt is not None else float("nan")
            table.add(name, C, label, t, obj.n_iter if is_ww else int(np.max(obj.n_iter_)),
                      obj.primal if is_ww else float("nan"),
                      obj.rel_gap if is_ww else float("nan"),
                      bool(obj.converged) if is_ww else float("nan"), acc,
                      (t_cs / t) if is_ww and t_cs else float("nan"),
                      (t_ovr / t) if is_ww and t_ovr else float("nan"),
                      mem / csr if is_ww else float("nan"))
            progress(f"{name} C={C:g} {label}: {t:.2f} s")


def _sparse_table() -> BenchTable:
    return BenchTable(
        "Sparse text: Walrus (CSR kernel) against LinearSVC, CPU time",
        ["data", "C", "solver", "CPU [s]", "epochs / iterations", "WW primal",
         "certified rel. gap", "converged", "test accuracy", "CS LinearSVC / this",
         "OvR LinearSVC / this", "peak memory / CSR bytes"],
    )


def _text(quick: bool, progress) -> BenchTable:
    table = _sparse_table()
    n, d, k = (2000, 5000, 20) if quick else (20_000, 50_000, 20)
    n_test = n // 4
    prob = text_like(seed=0, n=n + n_test, d=d, k=k)
    X, y = prob.data["X"], prob.data["y"]
    progress(f"synthetic text-like n={n}, d={d}, k={k}, nnz={X[:n].nnz}")
    _sparse_rows(table, f"text-like n={n} d={d} k={k}", X[:n], y[:n], X[n:], y[n:], (1.0,),
                 progress, max_iter=5000, linearsvc=not quick)
    path = None if quick else debian_path()
    if path is not None:
        X, y, Xt, yt = _load_debian(path)
        progress(f"Debian sections {X.shape}, nnz={X.nnz}, "
                 f"{int(np.sum(np.diff(X.indptr) == 0))} all-zero rows")
        _sparse_rows(table, "Debian sections", X, y, Xt, yt, (0.1, 1.0, 10.0), progress,
                     max_iter=8000)
    else:
        table.notes.append("Debian-sections rows skipped (quick run or file not found; set "
                           "DUALSCOPE_DEBIAN_TRAIN).")
    table.notes.append(
        "Both LinearSVC fits and the WW-SVM here have no intercept; WW primal is the "
        "certified objective; CPU one run each in this process (time.process_time, the "
        "machine is shared). LinearSVC stops on its own tolerance (1e-4, max_iter 1000), "
        "not on a certificate. Peak memory: tracemalloc peak during a 3-epoch solve "
        "(everything the solver allocates: W, the working alpha and the result's frozen "
        "copy of it; the sparse certificate forms no n x k scores) over the "
        "CSR matrix's data + indices + indptr bytes.")
    return table


def _growth(quick: bool, progress) -> BenchTable:
    table = BenchTable(
        "Growth: Walrus CPU to the authors' rule (gap <= 0.0009 x first gap), blobs "
        "k=8, spread 1, C=1",
        ["vary", "n", "d", "CPU [s]", "epochs", "fitted exponent"],
    )
    ns = (1000, 2000, 4000) if quick else (5000, 10_000, 20_000, 40_000)
    ds = (10, 20, 40) if quick else (20, 40, 80, 160)
    for vary, sizes in (("n", [(n, 20) for n in ns]), ("d", [(10_000 if not quick else 1000,
                                                               d) for d in ds])):
        rows = []
        for n, d in sizes:
            prob = blobs(seed=3, n=n, k=8, d=d, spread=1.0)
            X, y = prob.data["X"], prob.data["y"]
            t, res = _cpu(lambda X=X, y=y: wwsvm.solve(X, y, 1.0, stopping="gap_ratio",
                                                       max_iter=5000))
            rows.append((n, d, t, res.n_iter))
            progress(f"growth n={n} d={d}: {t:.3f} s, {res.n_iter} epochs")
        slope = loglog_slope([r[0] if vary == "n" else r[1] for r in rows],
                             [r[2] for r in rows])
        for n, d, t, ep in rows:
            table.add(vary, n, d, t, ep, slope)
    table.notes.append("Exponent: slope of log CPU against log n (or log d), one run each.")
    return table


def _load_debian(path: str):
    """The Debian train part (CSR) and, when present, its test part in the same width."""
    from sklearn.datasets import load_svmlight_file

    X, y = load_svmlight_file(path)
    test = Path(path).with_name(Path(path).name.replace("_train", "_test"))
    Xt, yt = (load_svmlight_file(str(test), n_features=X.shape[1]) if test.is_file()
              else (None, None))
    return X.tocsr(), y, Xt, yt


def _tail_rows(table: BenchTable, C: float, res) -> None:
    """Where a certified run spent its epochs, from its history alone.

    With the final certificate ``[D_T, P_T]`` around the optimum, at the first epoch
    whose relative gap reached ``g``: the dual was at most ``P_T - D_t`` below the
    optimum and the primal candidate at least ``P_t - P_T`` above it. One row per gap
    reached, named by the method that ran.
    """
    h = res.history
    rel = h.gap / np.maximum(1.0, np.abs(h.primal))
    for g in (1e-3, 1e-4, 1e-5, 1e-6):
        hit = np.flatnonzero(rel <= g)
        if hit.size == 0:
            continue
        i = int(hit[0])
        dual_lag = float(res.primal - h.dual[i])
        primal_lag = float(h.primal[i] - res.primal)
        table.add(C, res.method, g, int(h.iteration[i]), float(h.time[i]),
                  float(h.gap[i]), dual_lag, primal_lag, primal_lag / max(dual_lag, 1e-300))


def _debian_real(path: str, Cs: tuple[float, ...], progress) -> list[BenchTable]:
    """Walrus certified to 1e-6 against LinearSVC one-vs-rest on the Debian train part."""
    from sklearn.svm import LinearSVC

    X, y, Xt, yt = _load_debian(path)
    X32 = _as_int32(X)
    n, d = X.shape
    k = int(np.unique(y).size)
    table = BenchTable(
        f"Real data: Debian sections (train part, n={n}, d={d}, k={k}, nnz={X.nnz}), "
        "Walrus and Catalyst-Walrus certified to a relative gap of 1e-6 against LinearSVC "
        "one-vs-rest, CPU time",
        ["C", "solver", "CPU [s]", "epochs / iterations", "WW primal", "certified rel. gap",
         "converged", "test accuracy", "CPU / OvR (tol 1e-6)"])
    tail = BenchTable(
        "Real data: Debian sections, the certified run's tail (from its history)",
        ["C", "method", "rel. gap reached", "epoch", "wall [s]", "gap",
         "dual below optimum <=",
         "primal above optimum >=", "primal lag / dual lag"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method in ("walrus", "catalyst"):  # compile / load the cache (not timed)
            wwsvm.solve(X[:50], y[:50], max_iter=4, method=method)
    for C in Cs:
        runs = []
        for label, kw in (("walrus, rel. gap 1e-6 (solve's default)", {"tol": 1e-6}),
                          ("walrus, authors' rule (gap <= 0.0009 x first)",
                           {"stopping": "gap_ratio"}),
                          ("catalyst, rel. gap 1e-6", {"tol": 1e-6, "method": "catalyst"}),
                          ("auto, rel. gap 1e-6 (the CLI's and the page's default)",
                           {"tol": 1e-6, "method": "auto"})):
            t, res = _cpu(lambda kw=kw, C=C: wwsvm.solve(X, y, C, max_iter=20_000, **kw))
            if kw.get("method") == "auto":
                label = f"{label}: {res.method}"
            runs.append((label, t, res))
            progress(f"Debian C={C:g} {label}: {t:.2f} s CPU, {res.n_iter} epochs, "
                     f"rel gap {res.rel_gap:.2e}")
        t_ovr = {}
        for tol in (1e-4, 1e-6):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t, est = _cpu(lambda tol=tol, C=C: LinearSVC(
                    C=C, fit_intercept=False, tol=tol, max_iter=1000).fit(X32, y))
            t_ovr[tol] = t
            runs.append((f"LinearSVC one-vs-rest, tol {tol:g}"
                         + (" (default)" if tol == 1e-4 else ""), t, est))
            progress(f"Debian C={C:g} LinearSVC OvR tol {tol:g}: {t:.2f} s CPU")
        for label, t, obj in runs:
            is_ww = label.startswith(("walrus", "catalyst", "auto"))
            acc = float(np.mean(obj.predict(Xt) == yt)) if Xt is not None else float("nan")
            table.add(C, label, t, obj.n_iter if is_ww else int(np.max(obj.n_iter_)),
                      obj.primal if is_ww else float("nan"),
                      obj.rel_gap if is_ww else float("nan"),
                      bool(obj.converged) if is_ww else float("nan"), acc, t / t_ovr[1e-6])
        _tail_rows(tail, C, runs[0][2])
        _tail_rows(tail, C, runs[2][2])
        _tail_rows(tail, C, runs[3][2])
    table.notes.append(
        "One run each in one process after a warm-up (time.process_time); WW-SVM and both "
        "LinearSVC fits without intercept; LinearSVC stops on its own tolerance, not on a "
        "certificate. The issue's targets (43): CPU / OvR (tol 1e-6) <= 2 at C = 1 and "
        f"<= 4 at C = 10, certified 1e-6. 'auto' names what ran ('walrus+catalyst@k': "
        f"Walrus handed over to Catalyst at epoch k). {load_average()} at the end of the "
        "table.")
    tail.notes.append(
        "The final certificate [D_T, P_T] brackets the optimum, so at the first epoch that "
        "reached each relative gap the dual was at most P_T - D_t below it and the "
        "certified primal candidate (walrus: the best of W(alpha) and the averaged W; "
        "catalyst: the best of the outer iterates and their average) at least P_t - P_T "
        "above it; a large last "
        "column means the run waits for the primal. Wall "
        "time from the history (the solver's clock; the machine may be shared).")
    return [table, tail]


def real(progress=print) -> BenchReport:
    """The real-data tables alone (``dualscope bench wwsvm --real``)."""
    report = BenchReport("wwsvm")
    path = debian_path()
    if path is None:
        table = _sparse_table()
        table.notes.append("Debian-sections file not found (set DUALSCOPE_DEBIAN_TRAIN).")
        report.tables.append(table)
        return report
    report.tables.extend(_debian_real(path, (1.0, 10.0), progress))
    return report


def run(quick: bool = False, progress=print) -> BenchReport:
    report = BenchReport("wwsvm")
    if quick:
        report.tables.append(_vs_cvxpy(500, 20, 5, (0.5,), progress, repeat=1))
        report.tables.extend(_vs_iterative(500, 20, (10, 100), 1, progress))
        report.tables.append(_overlap(
            [("blobs n=300 d=5 k=4 spread 2", blobs(seed=1, n=300, k=4, d=5, spread=2.0))],
            (1.0, 100.0), 1e-6, "Overlapping classes: ipm vs Clarabel (quick)", progress))
    else:
        report.tables.append(_vs_cvxpy(5000, 50, 10, (0.5, 1.0), progress))
        report.tables.extend(_vs_iterative(4000, 50, (10, 100, 1000), 2, progress))
        report.tables.append(_overlap(
            [(f"blobs n=4000 d=20 k=8 spread {s:g}", blobs(seed=1, n=4000, k=8, d=20,
                                                           spread=s)) for s in (1.0, 2.0)],
            (1.0, 3.7, 10.0, 100.0), 1e-6,
            "Overlapping classes at any C: ipm vs Clarabel, relative gap 1e-6", progress))
        report.tables.append(_overlap(
            [("random labels n=2000 d=30 k=8", random_labels(seed=0, n=2000, d=30, k=8))],
            (1.0,), 1e-8, "Random labels: ipm vs Clarabel, relative gap 1e-8", progress))
    report.tables.append(_text(quick, progress))
    report.tables.append(_growth(quick, progress))
    return report


__all__ = ["real", "run"]

