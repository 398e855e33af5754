"""Before/after of the triplet solver's timed paths, in alternating processes.

Two source trees of dualscope (say a copy of ``main`` and a branch) are compared on the
rows of the bench (:mod:`.bench`): the plain path on wine (k = 10, ratio 0.9) naive,
with RRPB and with RRPB+PGB, and the paper's Table-2 setting (:data:`.bench.PRACTICAL`:
the active set on the 0.99 path to the paper's termination rule) alone, with RRPB and
with RRPB+PGB on wine with all triplets and on digits (PCA 16, k = 10).

``python -m explorer.models.triplet_screening.beforeafter rows`` prints the CPU seconds
of each row in this process (the kernels loaded first, untimed) as JSON.
``python -m explorer.models.triplet_screening.beforeafter compare BEFORE AFTER
[--rounds N]`` runs ``rows`` in one process per tree and round, ``PYTHONPATH`` set to the
tree and each tree with its own numba cache (``NUMBA_CACHE_DIR``, warmed by an untimed
first run), the order alternating between rounds, and prints each row's median CPU
seconds and the ratio before / after (above 1: the second tree is faster). CPU time,
not wall time: the machines are shared; quote the load beside the table.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: The plain path's runs (wine, k = 10, ratio 0.9, tol 1e-6).
PLAIN = (("naive", None), ("RRPB", ("rrpb",)), ("RRPB+PGB", ("rrpb", "pgb")))
#: The Table-2 runs (label, screening) on each data set (label, name, PCA, k).
TABLE2 = (("ActiveSet", None), ("ActiveSet+RRPB", ("rrpb",)),
          ("ActiveSet+RRPB+PGB", ("rrpb", "pgb")))
TABLE2_SETS = (("wine", "wine", None, np.inf), ("digits", "digits", 16, 10))


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def rows() -> dict[str, list[float]]:
    """``{row: [CPU seconds, lambdas, iterations]}`` of every timed path, in this
    process (each data set's kernels loaded by the bench's untimed warm-up first)."""
    from solvers import triplet_screening as ts

    from ...datasets import load_real
    from .bench import PRACTICAL, _practical_warm_up, target_data, warm_up

    out: dict[str, list[float]] = {}
    X, y = load_real("wine")
    prob = ts.TripletProblem(X, y, k=10)
    warm_up(X, y)
    for label, scr in PLAIN:
        t, p = _cpu(functools.partial(ts.path, X, y, triplets=prob, tol=1e-6, n_lambdas=300,
                                      screening=scr))
        out[f"plain wine k=10 {label}"] = [t, len(p.lambdas), int(p.total_iterations)]
    for name, data, pca, k in TABLE2_SETS:
        X, y = target_data(data, pca)
        prob = ts.TripletProblem(X, y, k=k)
        _practical_warm_up(X, y)
        for label, scr in TABLE2:
            t, p = _cpu(functools.partial(ts.path, X, y, triplets=prob, n_lambdas=5000,
                                          screening=scr, **PRACTICAL))
            out[f"{name} {label}"] = [t, len(p.lambdas), int(p.total_iterations)]
    return out


def summarise(before: Sequence[dict], after: Sequence[dict]) -> list[tuple[str, float, float,
                                                                          float]]:
    """``(row, median CPU before, median CPU after, before / after)`` for each row of
    the runs (each a :func:`rows` result)."""
    table = []
    for row in before[0]:
        b = statistics.median(r[row][0] for r in before)
        a = statistics.median(r[row][0] for r in after)
        table.append((row, b, a, b / a))
    return table


def _run_tree(tree: str, cache: str) -> dict:
    env = {**os.environ, "PYTHONPATH": tree, "NUMBA_CACHE_DIR": cache}
    # the module's import name (``__name__`` is ``"__main__"`` when run with ``-m``)
    out = subprocess.run([sys.executable, "-m", __spec__.name, "rows"], env=env, check=True,
                         capture_output=True, text=True, cwd=tree).stdout
    return json.loads(out.strip().splitlines()[-1])


def compare(before: str, after: str, rounds: int = 3, cache_root: str | None = None
            ) -> list[tuple[str, float, float, float]]:
    """:func:`summarise` of ``rounds`` alternating runs of :func:`rows` in the trees
    ``before`` and ``after`` (each with its numba cache under ``cache_root``, warmed by
    one untimed run)."""
    root = Path(cache_root or os.environ.get("TMPDIR", "/tmp"))
    trees = {"before": before, "after": after}
    caches = {k: str(root / f"numba-beforeafter-{k}") for k in trees}
    for k, tree in trees.items():
        _run_tree(tree, caches[k])
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    for r in range(rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for k in order:
            runs[k].append(_run_tree(trees[k], caches[k]))
    return summarise(runs["before"], runs["after"])


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(prog="beforeafter", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("rows")
    c = sub.add_parser("compare")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    if args.cmd == "rows":
        print(json.dumps(rows()))
        return 0
    print(f"load {os.getloadavg()[0]:.2f}")
    for row, b, a, ratio in compare(args.before, args.after, args.rounds):
        print(f"{row:32s} {b:8.2f} {a:8.2f} {ratio:6.2f}x")
    print(f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
