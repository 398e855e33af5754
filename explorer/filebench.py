"""Benchmarks from files: reading each format, and the models on real benchmark files.

``python -m explorer.filebench [--quick] [--data DIR] [--json PATH]``:

1. **Formats**: a table of ``rows`` x 20 features (+ label and task columns) written as
   CSV, TSV, CSV.gz, svmlight, svmlight.gz, .npz, Parquet and .mat; each read by
   :func:`explorer.datafiles.read_table` in a fresh process: CPU seconds
   (``time.process_time``), the peak resident memory above the process's size before the
   read (Linux ``VmHWM`` after resetting it through ``/proc/self/clear_refs``, against
   ``VmRSS``) and what the result keeps.
2. **School** (MALSAR's ``school.mat``, 139 schools as tasks): every model whose file
   roles take a task column (convex ASO, robust temporal MTL with the schools in file
   order as "time", MT-MKL with a score above the median as its binary label), as
   :func:`explorer.benchkit.school_problem` builds it (a quarter of each school's students
   held out); CPU seconds, certificate, held-out score against a per-school baseline
   (the held-out MSE of predicting each school's mean training score).
3. **Debian sections** (``debian_sections_{train,test}.svm.gz``, sparse TF-IDF): the
   class-label model that takes sparse features (WW-SVM) on every row, and the model whose
   roles accept triplets (the metric learner) on a truncated SVD of the first rows (its
   metric is d x d).

Numbers depend on the machine; the report prints them with the sizes used.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .benchkit import SHARED_DATA

__all__ = ["bench_debian", "bench_formats", "bench_school", "main"]


_READ_ONE = r"""
import json, sys, time
from explorer import datafiles
import pandas, sklearn.datasets, scipy.io, pyarrow.parquet  # imports outside the measure
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
def rss_mb():
    return status("VmRSS")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak (VmHWM) to the current size: the imports' peak is gone
base = rss_mb()
t0 = time.process_time()
t = datafiles.read_table(sys.argv[1], task="task" if sys.argv[2] == "1" else None)
cpu = time.process_time() - t0
peak = status("VmHWM")
print(json.dumps({"cpu": cpu, "peak_mb": max(0.0, peak - base), "kept_mb": rss_mb() - base,
                  "n": t.n, "d": t.d, "sparse": t.sparse}))
"""


def _write_all(folder: str, rows: int, d: int = 20, seed: int = 0) -> dict[str, str]:
    import gzip

    import pandas as pd
    from scipy.io import savemat
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, d))
    y = rng.integers(0, 3, size=rows)
    task = rng.integers(0, 10, size=rows)
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(d)])
    df["task"] = task
    df["label"] = y
    p = {k: os.path.join(folder, f"t.{k}") for k in ("csv", "tsv", "svm", "npz", "parquet",
                                                    "mat")}
    df.to_csv(p["csv"], index=False)
    df.to_csv(p["tsv"], index=False, sep="\t")
    dump_svmlight_file(X, y, p["svm"], zero_based=True, query_id=task)
    np.savez(p["npz"], X=X, y=y, tasks=task)
    df.to_parquet(p["parquet"])
    savemat(p["mat"], {"X": X, "Y": y.reshape(-1, 1)})
    for k in ("csv", "svm"):
        with open(p[k], "rb") as src, gzip.open(p[k] + ".gz", "wb", compresslevel=6) as dst:
            dst.write(src.read())
        p[k + ".gz"] = p[k] + ".gz"
    return p


def bench_formats(rows: int = 100_000, progress: Any = print) -> list[dict[str, Any]]:
    """Read time and memory of each format at ``rows`` rows (one fresh process per read)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="dualscope_filebench_") as tmp:
        paths = _write_all(tmp, rows)
        env = dict(os.environ)
        for fmt, path in paths.items():
            task = "1" if fmt in ("csv", "tsv", "parquet", "csv.gz") else "0"
            r = subprocess.run([sys.executable, "-c", _READ_ONE, path, task], env=env,
                               capture_output=True, text=True, check=True)
            rec = json.loads(r.stdout.strip().splitlines()[-1])
            rec.update(format=fmt, file_mb=os.path.getsize(path) / 1024**2, rows=rows)
            progress(f"{fmt}: {rec['cpu']:.2f} s CPU, +{rec['peak_mb']:.0f} MB peak")
            out.append(rec)
    return out


def _solve_cpu(entry: Any, problem: Any, *, tol: float = 1e-6, max_iter: int = 5000,
               **params: Any) -> tuple[Any, float]:
    import warnings

    kw = {**entry.default_params(), **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        entry.solve(problem, tol=1e-2, max_iter=3, **kw)  # compile the kernels (not timed)
    t0 = time.process_time()
    res = entry.solve(problem, tol=tol, max_iter=max_iter, **kw)
    return res, time.process_time() - t0


def _entries_whose_roles(pick: Callable[[Any], bool]) -> list[Any]:
    """The registry entries (in registry order) whose file roles satisfy ``pick``."""
    from . import datafiles, registry

    return [e for e in registry.entries() if pick(datafiles.roles(e.name))]


def _task_mean_mse(problem: Any) -> float | None:
    """The held-out MSE of predicting each task's mean training target.

    Parameters
    ----------
    problem : Problem
        A multitask problem (``data["ys"]``) with held-out targets (``info["ys_test"]``).

    Returns
    -------
    float or None
        The baseline; None when the problem has no per-task held-out targets.
    """
    ys_test = problem.info.get("ys_test")
    ys = problem.data.get("ys")
    if ys_test is None or ys is None:
        return None
    return float(np.mean(np.concatenate(
        [(np.asarray(y) - np.mean(ytr)) ** 2 for y, ytr in zip(ys_test, ys, strict=True)])))


def bench_school(path: str | os.PathLike, *, seed: int = 0, progress: Any = print
                 ) -> list[dict[str, Any]]:
    """The multitask models on School with a quarter of each school held out.

    Parameters
    ----------
    path : str or os.PathLike
        MALSAR's ``school.mat``.
    seed : int
        The split's seed.
    progress : callable
        Called with one line of text per model.

    Returns
    -------
    list of dict
        One row per model whose file roles take tasks (registry order).
    """
    from . import datafiles
    from .benchkit import school_problem
    from .sweep.hooks import hooks_of

    t0 = time.process_time()
    table = datafiles.read_table(path)
    load = time.process_time() - t0
    tasks = 0 if table.tasks is None else int(np.unique(table.tasks).size)
    rows = []
    for entry in _entries_whose_roles(lambda r: r.tasks):
        problem = school_problem(entry.name, table, seed=seed)
        n_test = int(problem.info["test_table"].n)
        res, cpu = _solve_cpu(entry, problem)
        score = hooks_of(entry).score(problem, res)
        rec = {"model": entry.name, "n_train": table.n - n_test, "n_test": n_test,
               "tasks": tasks, "d": table.d, "cpu": cpu, "load_cpu": load,
               "n_iter": int(res.n_iter), "rel_gap": float(res.rel_gap),
               "converged": bool(res.converged), "method": res.method,
               "score_name": None if score is None else score.name,
               "score": None if score is None else float(score.value),
               "baseline_mse_task_mean": _task_mean_mse(problem)}
        progress(f"school {entry.name}: {cpu:.2f} s CPU, rel gap {res.rel_gap:.1e}, "
                 f"{rec['score_name']} {rec['score']}")
        rows.append(rec)
    return rows


def _debian_classifier(entry: Any, train: Any, test: Any, load: float, progress: Any
                       ) -> dict[str, Any]:
    """``entry`` (sparse features, class labels) on every Debian training row, scored on
    the test rows of the classes it saw."""
    from dataclasses import replace

    from . import datafiles
    from .sweep.hooks import hooks_of

    keep = np.isin(test.y, np.unique(train.y))
    te = replace(test, X=test.X[keep], y=test.y[keep])
    problem = datafiles.problem_from_table(entry.name, train, te)
    res, cpu = _solve_cpu(entry, problem, tol=1e-4, max_iter=500)
    rec = {"model": entry.name, "n_train": train.n, "n_test": te.n, "d": train.d,
           "sparse_input": True, "cpu": cpu, "load_cpu": load, "n_iter": int(res.n_iter),
           "rel_gap": float(res.rel_gap), "converged": bool(res.converged)}
    score = hooks_of(entry).score(problem, res)
    if score is not None:
        rec[score.name] = float(score.value)
    progress(f"debian {entry.name} on {train.n} rows: {cpu:.1f} s CPU, rel gap "
             f"{res.rel_gap:.1e}" + ("" if score is None else f", {score.name} "
                                                               f"{score.value:.3f}"))
    return rec


def _debian_metric(entry: Any, train: Any, *, n_svd_rows: int, svd: int, n_metric: int,
                   progress: Any) -> dict[str, Any]:
    """``entry`` (triplets from the labels) on the first ``n_metric`` Debian rows
    projected on ``svd`` components of a truncated SVD of the first ``n_svd_rows``."""
    from dataclasses import replace

    from sklearn.decomposition import TruncatedSVD

    from . import datafiles

    sub = replace(train, X=train.X[:n_metric], y=train.y[:n_metric])
    comp = TruncatedSVD(svd, random_state=0).fit(train.X[:n_svd_rows])
    sub = replace(sub, X=np.ascontiguousarray(comp.transform(sub.X)),
                  feature_names=tuple(f"svd{j}" for j in range(svd)))
    problem = datafiles.problem_from_table(entry.name, sub, None, k=3)
    res, cpu = _solve_cpu(entry, problem)
    # fields only a triplet model's problem and result carry
    n_triplets = problem.info.get("n_triplets")
    rate = getattr(res, "screening_rate", None)
    progress(f"debian {entry.name} on {sub.n} rows x {svd} SVD components: {cpu:.1f} s "
             f"CPU, rel gap {res.rel_gap:.1e}" + ("" if rate is None else
                                                   f", screened {rate:.2f}"))
    return {"model": entry.name, "n_train": sub.n, "d": svd,
            "n_triplets": None if n_triplets is None else int(n_triplets), "cpu": cpu,
            "n_iter": int(res.n_iter), "rel_gap": float(res.rel_gap),
            "converged": bool(res.converged),
            "screening_rate": None if rate is None else float(rate)}


def bench_debian(folder: str | os.PathLike, *, n_train: int = 2000, svd: int = 50,
                 n_metric: int = 600, progress: Any = print) -> list[dict[str, Any]]:
    """The sparse classifier on the Debian files; the metric learner on SVD components.

    The first registry entry whose file roles take class labels and sparse features is
    solved on every training row and scored on the test rows of known classes; the first
    whose roles accept triplets learns a metric on the first ``n_metric`` rows projected
    on ``svd`` components of a truncated SVD of the first ``n_train`` rows. A role that
    no model has gives no row.

    Parameters
    ----------
    folder : str or os.PathLike
        The folder of ``debian_sections_{train,test}.svm.gz``.
    n_train : int
        The rows the SVD is fitted on.
    svd : int
        The number of SVD components.
    n_metric : int
        The rows of the metric learner's problem.
    progress : callable
        Called with one line of text per step.

    Returns
    -------
    list of dict
        One row per model benchmarked.
    """
    from . import datafiles

    folder = Path(folder)
    t0 = time.process_time()
    train = datafiles.read_table(folder / "debian_sections_train.svm.gz")
    test = datafiles.read_table(folder / "debian_sections_test.svm.gz", n_features=train.d)
    load = time.process_time() - t0
    if train.y is None or test.y is None:
        raise datafiles.DataFileError(f"{folder}: the Debian files carry no labels")
    progress(f"debian: read {train.n:,} + {test.n:,} rows x {train.d:,} in {load:.1f} s CPU")
    rows = [_debian_classifier(e, train, test, load, progress) for e in
            _entries_whose_roles(lambda r: r.labels == "classes" and r.sparse)[:1]]
    rows += [_debian_metric(e, train, n_svd_rows=n_train, svd=svd, n_metric=n_metric,
                            progress=progress)
             for e in _entries_whose_roles(lambda r: r.triplets)[:1]]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m explorer.filebench", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="10,000 rows; School only")
    ap.add_argument("--data", default=str(SHARED_DATA), help="folder of school.mat and the "
                                                         "Debian files")
    ap.add_argument("--json", help="write the tables as JSON")
    ap.add_argument("--skip", action="append", default=[],
                    choices=["formats", "school", "debian"])
    args = ap.parse_args(argv)
    report: dict[str, Any] = {}

    def progress(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if "formats" not in args.skip:
        report["formats"] = bench_formats(10_000 if args.quick else 100_000, progress)
    school = Path(args.data) / "school.mat"
    if "school" not in args.skip and school.exists():
        report["school"] = bench_school(school, progress=progress)
    if "debian" not in args.skip and not args.quick and \
            (Path(args.data) / "debian_sections_train.svm.gz").exists():
        report["debian"] = bench_debian(args.data, progress=progress)
    for name, rows in report.items():
        print(f"\n## {name}\n")
        cols = list(dict.fromkeys(k for r in rows for k in r))
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
        for r in rows:
            print("| " + " | ".join(f"{r[c]:.4g}" if isinstance(r.get(c), float)
                                    else str(r.get(c, "")) for c in cols) + " |")
    if args.json:
        from solvers.fileio import write_atomic

        write_atomic(args.json, json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
