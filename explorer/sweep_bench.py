"""Benchmark of the sweep backends: wall time of one grid on each.

``python -m explorer.sweep_bench [--quick] [--model NAME] [--json PATH]``

The grid is the ``bench_grid`` of a model's sweep hooks (:mod:`explorer.sweep.hooks`):
the first registry entry that offers one, or ``--model``. The Weston–Watkins SVM's is
``C`` on 8 log-spaced values (a warm-started path) x 2 methods x 3 data seeds = 48
points in 6 chains. It runs, in one process and one after the other: in-process
(serial), local processes with 1 and with 2 workers, and a Dask ``LocalCluster`` of 2
single-threaded worker processes on the loopback interface.
Reported: wall time (worker start-up included), its ratio to 1 local worker, the parent's
CPU time (``time.process_time``) and the summed solver time of the rows (the work done,
which grows when workers compete for cores), and the largest relative difference of the
objectives to the serial table (the backends must agree to 1e-12).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import registry, sweep
from .benchkit import BenchReport, BenchTable

__all__ = ["grid_spec", "main", "run"]


def grid_spec(quick: bool = False, model: str | None = None) -> sweep.SweepSpec:
    """The benchmark's grid: the ``bench_grid`` of ``model``'s sweep hooks.

    Parameters
    ----------
    quick : bool
        The model's quick grid (smaller data, same points).
    model : str, optional
        A registry name (default: the first entry whose hooks offer a grid).

    Returns
    -------
    SweepSpec
        The grid.

    Raises
    ------
    ValueError
        When ``model`` (or every model) offers no benchmark grid.
    """
    entries = registry.entries() if model is None else [registry.get(model)]
    for entry in entries:
        grid = sweep.hooks_of(entry).bench_grid(quick)
        if grid is not None:
            return sweep.SweepSpec(model=entry.name, **grid)
    raise ValueError(f"model {model!r} offers no sweep benchmark grid" if model else
                     "no model's sweep hooks offer a benchmark grid (bench_grid)")


def _warmup_spec(spec: sweep.SweepSpec) -> sweep.SweepSpec:
    """A few iterations of every non-float grid value (each method's kernels), the first
    value of each float axis and the first seed: loads the kernels before any timing."""
    entry = registry.get(spec.model)
    grid = {name: list(values) if entry.param(name).kind != "float" else list(values)[:1]
            for name, values in spec.grid.items()}
    return replace(spec, grid=grid, seeds=list(spec.seeds)[:1], max_iter=5)


def _describe(spec: sweep.SweepSpec) -> str:
    """The grid in words: ``wwsvm, C path of 8 x 2 methods x 3 seeds, n=300 k=5 d=10``."""
    entry = registry.get(spec.model)
    axes = [f"{name} path of {len(values)}" if entry.param(name).kind == "float"
            else f"{len(values)} {name}s" for name, values in spec.grid.items()]
    sizes = " ".join(f"{k}={v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v}"
                     for k, v in spec.sizes.items())
    return ", ".join([spec.model, " x ".join([*axes, f"{len(spec.seeds)} seeds"]),
                      *([sizes] if sizes else [])])


def _max_rel(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> float:
    if [r["key"] for r in a] != [r["key"] for r in b]:
        return float("inf")
    return max(abs(x["primal"] - y["primal"]) / max(1.0, abs(y["primal"]))
               for x, y in zip(a, b, strict=True))


def run(quick: bool = False, progress: Callable[[str], Any] = print,
        model: str | None = None) -> BenchReport:
    """Run the grid of :func:`grid_spec` on every backend.

    Parameters
    ----------
    quick : bool
        The quick grid.
    progress : callable
        Called with one line of text per backend.
    model : str, optional
        The model whose grid runs (default: the first that offers one).

    Returns
    -------
    BenchReport
        One table: a row per backend.
    """
    spec = grid_spec(quick, model)
    n = sum(len(c.keys) for c in sweep.plan(spec))
    runs: list[tuple[str, dict[str, Any]]] = [("serial (in-process)", dict(backend="serial")),
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
    sweep.run(_warmup_spec(spec), backend="serial", progress=False)
    table = BenchTable(
        f"Sweep backends: {n}-point grid ({_describe(spec)})",
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
    p.add_argument("--quick", action="store_true", help="smaller data (same points)")
    p.add_argument("--model", help="the model whose benchmark grid runs (default: the "
                                   "first whose sweep hooks offer one)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    report = run(quick=args.quick, model=args.model, progress=lambda m: print(
        f"[{time.perf_counter() - t0:6.1f} s] {m}", file=sys.stderr, flush=True))
    print(report.to_markdown())
    if args.json:
        report.write_json(args.json)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
