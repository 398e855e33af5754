"""Compile (or load from numba's on-disk cache) every model's kernels ahead of use.

A first solve after install compiles the numba kernels it touches (seconds per
page); a later process loads them from numba's on-disk cache (a fraction of that). This
module solves every model on its default dataset — once per value of each
choice parameter (``method``, ``loss``, ``variant``, …), and for the combinations an
entry lists in ``warm_combos``, so every code path's kernels are compiled — with a
loose tolerance, with a callback and without one (compiled solver loops run only
without). ``tests/test_warmup.py`` checks that no pair of choice values compiles
anything afterwards.

- ``dualscope warmup`` / ``python -m explorer.warmup``: run once after install
  (compiles into the cache; prints the seconds per model).
- The dashboard calls :func:`start_background` when its process starts, so the
  kernels are loaded while the user reads the home page (``DUALSCOPE_WARMUP=0``
  turns that off).

Warm-up solves never raise: a model whose warm-up fails is reported and skipped.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from .registry import ModelEntry, entries

__all__ = ["preload", "start_background", "status", "warm", "warm_entry"]

#: Iterations of each warm-up solve (enough to run every kernel once).
_ITERATIONS = 30
#: Relative tolerance of the warm-up solves without a callback.
_LOOSE_TOL = 0.5

_lock = threading.Lock()
_thread: threading.Thread | None = None
_status: dict[str, Any] = {"state": "idle", "seconds": {}, "errors": {}}


def _variants(entry: ModelEntry) -> list[dict[str, Any]]:
    """The default parameters, each choice parameter's other values one at a time, then
    the entry's :attr:`~.registry.ModelEntry.warm_combos`."""
    base = entry.default_params()
    out = [base]
    for p in entry.params:
        out += [dict(base, **{p.name: v}) for v in p.values if v != p.default]
    return out + [dict(base, **combo) for combo in entry.warm_combos]


def warm_entry(entry: ModelEntry, *, quiet: bool = True) -> float:
    """Solve ``entry`` on its default dataset once per variant; returns the seconds spent.

    ``quiet`` silences the solvers' warnings (only from the main thread:
    :func:`warnings.catch_warnings` is not thread-safe).
    """
    import contextlib
    import warnings

    t0 = time.perf_counter()
    problem = entry.datasets[entry.default_dataset](seed=0)
    limit = min(entry.max_iter, _ITERATIONS)

    def enough(state: Any) -> bool:
        # a callback stop is a requested stop: no ConvergenceWarning, from any thread
        return state.iteration < limit

    for params in _variants(entry):
        with warnings.catch_warnings() if quiet else contextlib.nullcontext():
            if quiet:
                warnings.simplefilter("ignore")
            try:
                entry.solve(problem, tol=1e-3, max_iter=entry.max_iter, init=None,
                            callback=enough, **params)
            except ValueError:
                # a method that refuses this dataset (MT-MKL's ipm beyond its size)
                # compiles nothing: nothing to warm
                continue
            # without a callback too: solvers run their compiled loops (the triplet
            # model's bursts) only then, as the dashboard's comparisons and paths do. A
            # compiled loop compiles whole at its first call, so a loose tolerance
            # suffices, and it stops these solves before max_iter: with max_iter as the
            # stop they warned (ConvergenceWarning) into the dashboard's terminal, where
            # the background warm-up cannot silence them (catch_warnings is not
            # thread-safe). tests/test_warmup.py checks that nothing is left to compile.
            entry.solve(problem, tol=_LOOSE_TOL, max_iter=entry.max_iter, init=None,
                        callback=None, **params)
    return time.perf_counter() - t0


def warm(models: Iterable[str] | None = None,
         progress: Callable[[str], Any] | None = None, *, quiet: bool = True
         ) -> dict[str, float]:
    """Warm every model (or those named); returns seconds per model (errors reported)."""
    wanted = None if models is None else set(models)
    seconds: dict[str, float] = {}
    for entry in entries():
        if wanted is not None and entry.name not in wanted:
            continue
        try:
            seconds[entry.name] = warm_entry(entry, quiet=quiet)
            _status["seconds"][entry.name] = seconds[entry.name]
            if progress:
                progress(f"{entry.name}: {seconds[entry.name]:.1f} s")
        except (ValueError, TypeError, ArithmeticError, RuntimeError, OSError) as exc:
            _status["errors"][entry.name] = f"{type(exc).__name__}: {exc}"
            if progress:
                progress(f"{entry.name}: warm-up failed ({type(exc).__name__}: {exc})")
    return seconds


def preload() -> None:
    """Import what a first page visit needs: solvers, plotly, the kit, every page module."""
    import importlib

    import plotly.graph_objects  # noqa: F401

    from . import ui  # noqa: F401

    for e in entries():
        importlib.import_module(e.page.partition(":")[0])


def _run_background(first: str | None, preload_modules: bool = False) -> None:
    _status["state"] = "running"
    if preload_modules:
        preload()
    order = [e.name for e in entries()]
    if first in order:
        order.remove(first)
        order.insert(0, first)
    try:
        warm(order, quiet=False)
        bad = verify_report(print_to=None)
        if bad:
            _status["state"] = "failed: " + bad
            print(f"dualscope: {bad}", file=sys.stderr, flush=True)
        else:
            _status["state"] = "done"
    except BaseException as exc:  # a daemon thread: record, never crash the app
        _status["state"] = f"failed: {type(exc).__name__}: {exc}"


def start_background(first: str | None = None, *, preload: bool = False) -> bool:
    """Warm all models in a daemon thread, once per process; True if it started now.

    ``preload`` first imports the page modules and their dependencies (at server start,
    before any browser connects).

    :func:`warnings.catch_warnings` is not thread-safe, so background warm-up solves do
    not silence warnings (a warm-up ConvergenceWarning may reach the server log).
    """
    global _thread
    with _lock:
        if _thread is not None or os.environ.get("DUALSCOPE_WARMUP", "1") == "0":
            return False
        _thread = threading.Thread(target=_run_background, args=(first, preload),
                                   daemon=True, name="dualscope-warmup")
        _thread.start()
        return True


def status() -> dict[str, Any]:
    """``{"state": idle|running|done, "seconds": {...}, "errors": {...}}``."""
    return dict(_status)


def verify_report(print_to: Any = sys.stdout) -> str:
    """Run every kernel family's known-answer check (:mod:`solvers.kernel_checks`).

    Prints one line per family to ``print_to`` (nothing when ``None``) and returns ""
    when every check passed, else one line naming the bad kernels and the cache folder.
    """
    from solvers import _jitcache, kernel_checks

    checks = kernel_checks.verify()
    by_family: dict[str, list[Any]] = {}
    for c in checks:
        by_family.setdefault(c.family, []).append(c)
    for fam, cs in by_family.items():
        bad = [c for c in cs if not c.ok]
        if print_to is not None:
            if bad:
                print(f"verify {fam}: BAD " + "; ".join(f"{c.kernel}: {c.message}"
                                                      for c in bad), file=print_to)
            else:
                worst = max(c.error / max(c.tol, 1e-300) if c.tol else c.error for c in cs)
                print(f"verify {fam}: {len(cs)} checks ok (worst {worst:.2g} of tolerance)",
                      file=print_to)
    bad = kernel_checks.failures(checks)
    if not bad:
        return ""
    dirs = ", ".join(_jitcache.cache_dirs()) or "in memory"
    return ("compiled kernels failed their known-answer check ("
            + ", ".join(f"{c.family}.{c.kernel}" for c in bad)
            + f"); numba cache: {dirs}; clear it with `dualscope warmup --clear`")


def main(argv: list[str] | None = None) -> int:
    """``dualscope warmup [MODEL ...] [--verify] [--clear]``: compile every model's
    kernels into the cache; ``--clear`` first deletes the solvers' cache files,
    ``--verify`` then checks every kernel family against its numpy reference."""
    args = list(argv if argv is not None else sys.argv[1:])
    verify_after = "--verify" in args
    clear_first = "--clear" in args
    names = [a for a in args if a not in ("--verify", "--clear")] or None
    if clear_first:
        from solvers import _jitcache

        n = _jitcache.clear()
        print(f"warmup: removed {n} cache file(s) from "
              f"{', '.join(_jitcache.cache_dirs())}", flush=True)
    t0 = time.perf_counter()
    seconds = warm(names, progress=lambda s: print("warmup " + s, flush=True))
    print(f"warmup: {len(seconds)} model(s) in {time.perf_counter() - t0:.1f} s "
          "(numba kernels compiled into the on-disk cache)", flush=True)
    status = 0 if not _status["errors"] else 1
    if verify_after:
        bad = verify_report()
        if bad:
            print(f"dualscope: {bad}", file=sys.stderr, flush=True)
            return 1
        print("verify: every kernel family matches its numpy reference", flush=True)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
