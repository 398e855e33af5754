"""Benchmark of the sweep backends: wall time of one 48-point grid on each.

``python -m explorer.sweep_bench [--quick] [--json PATH]``

The grid: Weston–Watkins SVM, ``C`` on 8 log-spaced values (a warm-started path)
x 2 methods x 3 data seeds = 48 points in 6 chains. It runs, in one process and one
after the other: in-process (serial), local processes with 1 and with 2 workers, and a
Dask ``LocalCluster`` of 2 single-threaded worker processes on the loopback interface.
Reported: wall time (worker start-up included), its ratio to 1 local worker, the parent's
CPU time (``time.process_time``) and the summed solver time of the rows (the work done,
which grows when workers compete for cores), and the largest relative difference of the
objectives to the serial table (the backends must agree to 1e-12).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from . import sweep
from .benchkit import BenchReport, BenchTable

__all__ = ["grid_spec", "main", "run"]


def grid_spec(quick: bool = False) -> sweep.SweepSpec:
    """The benchmark's 48-point grid (``quick``: smaller data, same 48 points)."""
    return sweep.SweepSpec(
        model="wwsvm",
        grid={"C": [float(c) for c in np.geomspace(0.01, 10.0, 8)],
              "method": ["walrus", "iterative"]},
        sizes={"n": [300 if quick else 1000], "k": [5], "d": [10]},
        seeds=[0, 1, 2], tol=1e-6, max_iter=300 if quick else 1000)


def _max_rel(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float:
    if [r["key"] for r in a] != [r["key"] for r in b]:
        return float("inf")
    return max(abs(x["primal"] - y["primal"]) / max(1.0, abs(y["primal"]))
               for x, y in zip(a, b, strict=True))


def run(quick: bool = False, progress=print) -> BenchReport:
    """Run the grid on every backend; return the report."""
    spec = grid_spec(quick)
    n = sum(len(c.keys) for c in sweep.plan(spec))
    runs = [("serial (in-process)", dict(backend="serial")),
            ("local processes, 1 worker", dict(backend="processes", workers=1)),
            ("local processes, 2 workers", dict(backend="processes", workers=2))]
    try:
        import distributed  # noqa: F401

        runs.append(("Dask LocalCluster, 2 worker processes",
                     dict(backend="dask", workers=2)))
    except ImportError:
        progress("distributed not installed: the Dask row is skipped "
                 '(pip install "dualscope[distributed]")')
    # numba cache loaded once in this process before anything is timed
    sweep.run(sweep.SweepSpec("wwsvm", grid={"C": [1.0], "method": ["walrus", "iterative"]},
                              sizes={"n": [50]}, max_iter=5), backend="serial", progress=False)
    table = BenchTable(
        f"Sweep backends: {n}-point grid (wwsvm, C path of 8 x 2 methods x 3 seeds, "
        f"{spec.sizes['n'][0]} samples)",
        ["backend", "wall [s]", "vs 1 worker", "parent CPU [s]", "solver time [s]",
         "rows", "errors", "max rel diff vs serial"])
    results = {}
    for label, kw in runs:
        progress(f"{label} ...")
        c0, t0 = time.process_time(), time.perf_counter()
        tab = sweep.run(spec, progress=False, **kw)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        results[label] = (wall, cpu, tab)
    base = results["local processes, 1 worker"][0]
    serial = results["serial (in-process)"][2]
    for label, (wall, cpu, tab) in results.items():
        table.add(label, wall, base / wall, cpu, sum(r["time"] or 0.0 for r in tab), len(tab),
                  len(tab.errors()), _max_rel(tab, serial))
    table.notes.append("One run on this machine (2 cores shared with other jobs); wall time "
                       "includes starting the workers. 'vs 1 worker' = wall(1 worker) / wall.")
    table.notes.append("Solver time is the sum of the rows' Result.time (JIT excluded); when it "
                       "grows on 2 workers, the workers competed for cores.")
    return BenchReport("sweep", tables=[table])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m explorer.sweep_bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="smaller data (same 48 points)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    report = run(quick=args.quick, progress=lambda m: print(
        f"[{time.perf_counter() - t0:6.1f} s] {m}", file=sys.stderr, flush=True))
    print(report.to_markdown())
    if args.json:
        report.write_json(args.json)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
