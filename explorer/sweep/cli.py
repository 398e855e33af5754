"""``dualscope sweep MODEL``: arguments to a :class:`~explorer.sweep.SweepSpec`, the
run, and the text table."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .. import registry
from ..cliargs import (
    CLIError,
    parse_number,
    parse_pairs,
    parse_size,
    prep_options,
    preprocessing_of,
)
from .backends import BACKENDS
from .guard import MAX_POINTS, guard_sweep
from .hooks import hooks_of
from .run import run
from .spec import CERTIFICATE, STRUCT_PREFIX, SweepSpec, plan
from .table import _coerce, _columns

__all__ = ["add_cli", "cmd_sweep", "format_table", "parse_values", "spec_from_args"]


#: Data seeds are 32-bit (the generators' ``np.random.default_rng`` accepts any, the
#: solvers' ``seed`` does not).
MAX_SEED = 2**32 - 1


def _fail(what: str, exc: Exception) -> ValueError:
    msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return ValueError(msg if msg.startswith(what) else f"{what}: {msg}")


def parse_values(param: registry.Param | None, text: str, cast: Callable | None = None, *,
                 what: str = "--grid", max_n: int | None = MAX_POINTS, integer: bool = False
                 ) -> list[Any]:
    """Values of a grid axis: ``a,b,c`` or ``geom:LOW:HIGH:N`` / ``lin:LOW:HIGH:N``.

    ``param`` parses (and validates) each value; without one, ``cast`` does (``integer``:
    a range's values are rounded to integers first). Every error
    is a ``ValueError`` whose message starts with ``what`` (the option, e.g.
    ``--grid C``): a value that is not a number or not admissible, no value at all, a
    repeated value, a range of more than ``max_n`` points (None: no limit).

    Parameters
    ----------
    param : registry.Param or None
        The parameter (it parses and validates).
    text : str
        The values.
    cast : callable, optional
        The parser without a ``param``.
    what : str
        The start of every error message.
    max_n : int or None
        The largest range.
    integer : bool
        Round a range's values to integers.

    Returns
    -------
    list
        The values, in the order given.

    Examples
    --------
    >>> from explorer import registry
    >>> from explorer.sweep import parse_values
    >>> C = registry.get("wwsvm").param("C")
    >>> parse_values(C, "geom:0.01:100:5")
    [0.01, 0.1, 1.0, 10.0, 100.0]
    >>> parse_values(None, "1,2,3", int)
    [1, 2, 3]
    >>> parse_values(C, "1,1")
    Traceback (most recent call last):
        ...
    ValueError: --grid: ...
    """
    text = text.strip()
    if not text:
        raise ValueError(f"{what}: no values (give V1,V2,... or geom:LOW:HIGH:N or "
                         "lin:LOW:HIGH:N)")

    def one(v: str) -> Any:
        try:
            if param is not None and param.kind in ("float", "int"):
                x = parse_number(v, what, integer=param.kind == "int")
                return param.parse(repr(x) if isinstance(x, float) else str(x))
            if param is not None:
                return param.parse(v)
            return (cast or _coerce)(v)
        except (CLIError, ValueError, TypeError, KeyError) as exc:
            raise _fail(what, exc) from None

    head, _, rest = text.partition(":")
    if head in ("geom", "lin", "log") and rest:
        parts = rest.split(":")
        if len(parts) != 3:
            raise ValueError(f"{what}: range {text!r}: expected {head}:LOW:HIGH:N")
        try:
            lo = parse_number(parts[0], f"{what}: range {text!r}: LOW", integer=False)
            hi = parse_number(parts[1], f"{what}: range {text!r}: HIGH", integer=False)
            n = int(parse_number(parts[2], f"{what}: range {text!r}: N", integer=True))
        except CLIError as exc:
            raise ValueError(str(exc)) from None
        if n < 1:
            raise ValueError(f"{what}: range {text!r}: N must be >= 1")
        if max_n is not None and n > max_n:
            raise ValueError(f"{what}: range {text!r} has {n:,} points (limit {max_n:,}); "
                             "pass --force to run it anyway")
        if head == "lin":
            vals = np.linspace(lo, hi, n)
        else:
            if lo <= 0 or hi <= 0:
                raise ValueError(f"{what}: range {text!r}: a geometric range needs "
                                 "LOW, HIGH > 0")
            vals = np.geomspace(lo, hi, n)
        whole = param.kind == "int" if param is not None else integer
        out = []
        for v in vals:  # rounding to integers may repeat a value: once each
            x = one(str(round(v)) if whole else repr(float(v)))
            if x not in out:
                out.append(x)
        return out
    else:
        items = [v.strip() for v in text.split(",")]
        if not all(items):
            raise ValueError(f"{what}: an empty value in {text!r}")
        out = [one(v) for v in items]
    seen: list[Any] = []
    for v in out:
        if v in seen:
            raise ValueError(f"{what}: the value {v!r} is given twice")
        seen.append(v)
    return out


def _parse_seeds(text: str) -> list[int]:
    items = [s.strip() for s in str(text).split(",")]
    if not all(items):
        raise CLIError(f"--seeds: an empty value in {text!r} (give e.g. 0,1,2)")
    seeds = [int(parse_number(s, "--seeds", integer=True)) for s in items]
    for s in seeds:
        if not 0 <= s <= MAX_SEED:
            raise CLIError(f"--seeds: {s} is outside [0, {MAX_SEED}]")
    if len(set(seeds)) < len(seeds):
        raise CLIError(f"--seeds: a seed is given twice in {text!r}")
    return seeds


def _check_options(args: argparse.Namespace) -> tuple[float | None, int | None]:
    """The run options: ``--workers``, ``--cv``, ``--tol``, ``--max-iter``, ``--scheduler``."""
    from solvers.params import MAX_ITER, TOL

    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be >= 1, got {args.workers}")
    if args.cv < 0 or args.cv == 1:
        raise CLIError(f"--cv must be 0 (no cross-validation) or at least 2 folds, "
                       f"got {args.cv}")
    out = []
    for name, spec, value in (("--tol", TOL, args.tol), ("--max-iter", MAX_ITER,
                                                          args.max_iter)):
        try:
            out.append(None if value is None else spec.validate(value))
        except (ValueError, TypeError) as exc:
            raise _fail(name, exc) from None
    if args.scheduler is not None and not args.scheduler.strip():
        raise CLIError("--scheduler is empty; give an address such as tcp://HOST:PORT")
    if args.scheduler is not None and args.backend not in ("auto", "dask"):
        raise CLIError(f"--scheduler needs --backend dask (or auto), got --backend "
                       f"{args.backend}")
    return out[0], out[1]


def spec_from_args(args: argparse.Namespace) -> SweepSpec:
    """The :class:`SweepSpec` of parsed ``dualscope sweep`` arguments.

    Every value is checked here, before any work, and every error names its option.
    The sweep passes :func:`~explorer.sweep.guard_sweep`, the guard of
    :func:`~explorer.sweep.run` (every size combination through the guard of
    ``dualscope solve``, the memory counted for the backend's workers at once, and at
    most :data:`~explorer.sweep.MAX_POINTS` points); ``--force`` lifts it.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``dualscope sweep`` arguments.

    Returns
    -------
    SweepSpec
        The sweep.
    """
    force = bool(getattr(args, "force", False))
    tol, max_iter = _check_options(args)
    entry = registry.get(args.model)
    file_dataset = _file_dataset(args)  # a bad file: its own message, naming the file
    try:
        from ..datasource import resolve  # imports datafiles: not at --help
        ds_name, ds = resolve(entry.name, file_dataset or args.dataset)
    except ValueError as exc:
        raise _fail("--dataset", exc) from None
    max_n = None if force else MAX_POINTS

    def param(option: str, name: str) -> registry.Param:
        try:
            return entry.param(name)
        except KeyError as exc:
            raise _fail(f"{option} {name}", exc) from None

    grid = {k: parse_values(param("--grid", k), v, what=f"--grid {k}", max_n=max_n)
            for k, v in parse_pairs(args.grid, "--grid").items()}
    sizes = {k: parse_values(None, v, cast=lambda t, k=k: parse_size(ds, k, t),
                             what=f"--size {k}", max_n=max_n,
                             integer=isinstance(ds.sizes.get(k, (0.0,))[0], int))
             for k, v in parse_pairs(args.size, "--size").items()}
    fixed = {}
    for k, v in parse_pairs(args.set, "--set").items():
        values = parse_values(param("--set", k), v, what=f"--set {k}")
        if len(values) != 1:
            raise CLIError(f"--set {k} takes one value, got {v!r} (a list is a --grid axis)")
        fixed[k] = values[0]
    both = sorted(set(grid) & set(fixed))
    if both:
        raise CLIError(f"--grid and --set both give {', '.join(both)}")
    seeds = _parse_seeds(args.seeds)
    if args.cv and not hooks_of(entry).cross_validation:
        raise CLIError(f"--cv: model {entry.name} has no cross-validation split (its "
                       "held-out score, if any, uses the dataset's own test split)")
    if args.path not in (None, "") and args.path not in grid:
        raise CLIError(f"--path {args.path!r} is not a --grid axis (axes: {list(grid)})")
    spec = SweepSpec(model=entry.name, grid=grid, sizes=sizes, seeds=seeds, dataset=ds_name,
                     fixed=fixed, cv=args.cv, path=args.path, descending=args.descending,
                     tol=tol, max_iter=max_iter, warm=not args.cold)
    guard_sweep(spec, force=force, backend=args.backend, workers=args.workers,
                scheduler=args.scheduler)
    return spec


def _file_dataset(args: argparse.Namespace) -> str | None:
    """The dataset name of ``--data PATH`` and its options (None without ``--data``)."""
    from ..datafiles import file_spec, read_table

    opts = {"fmt": args.format, "label": args.label, "task": args.task, "time": args.time,
            "test": args.test, "test_size": args.test_size}
    prep = preprocessing_of(args)
    if prep is not None:
        opts.update(prep.to_spec())
    if not args.data:
        given = [k for k, v in opts.items() if v is not None]
        if given:
            raise ValueError(f"--{given[0].replace('_', '-').replace('fmt', 'format')} "
                             "applies to --data PATH (a data file)")
        return None
    if args.dataset:
        raise ValueError("give --dataset NAME or --data PATH, not both")
    if args.size:
        raise ValueError("--size applies to the built-in datasets, not to --data PATH")
    read_table(args.data, fmt=args.format, label=args.label, task=args.task,
               time=args.time, prep=prep)  # a bad file: its message now, not one per point
    return file_spec(args.data, **opts)


def format_table(rows: Sequence[Mapping[str, Any]], spec: SweepSpec) -> str:
    """A compact text table: the varying columns and the certificate.

    Parameters
    ----------
    rows : sequence of Mapping
        The sweep's rows.
    spec : SweepSpec
        The sweep.

    Returns
    -------
    str
        The table, one line per row.
    """
    if not rows:
        return "(no rows)"
    varying = [c for c in _columns(rows)
               if c not in CERTIFICATE and c not in ("key", "error", "chain", "step",
                                                       "path", "score_name", "score", "score_error",
                                                       "model")
               and not c.startswith(STRUCT_PREFIX)
               and len({repr(r.get(c)) for r in rows}) > 1]
    cols = [*varying, "primal", "gap", "rel_gap", "converged", "n_iter", "time", "warm"]
    if any(r.get("score") is not None for r in rows):
        cols.append("score")

    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.6g}" if math.isfinite(v) else str(v)
        return str(v)

    body = [[cell(r.get(c)) for c in cols] + ([r["error"]] if r.get("error") else [])
            for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    for b in body:
        line = "  ".join(x.rjust(w) for x, w in zip(b, widths, strict=False))
        lines.append(line + (f"  ERROR {b[-1]}" if len(b) > len(cols) else ""))
    return "\n".join(lines)


def cmd_sweep(args: argparse.Namespace) -> int:
    """``dualscope sweep MODEL``: run a sweep, print its table, write ``--out``.

    Signals (``_signals``): Ctrl-C or SIGTERM stop the sweep, keep the finished rows
    in ``--out`` and end the workers, the forkserver and the resource tracker; a second
    Ctrl-C or SIGTERM meanwhile exits at once.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed ``dualscope sweep`` arguments.

    Returns
    -------
    int
        The exit status: 0 when every point solved, 1 when a point failed, 2 when the
        backend is unavailable.
    """
    try:
        with _signals(args.out), _quiet_dask_logs(args.backend == "dask"
                                                  or args.scheduler is not None):
            return _cmd_sweep(args)
    except ConnectionError as exc:  # the scheduler is unreachable
        print(f"dualscope: {exc}", file=sys.stderr)
        return 2
    except (ImportError, OSError) as exc:  # no dask / pyarrow
        print(f"dualscope: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


@contextlib.contextmanager
def _signals(out: str | None) -> Iterator[None]:
    """Ctrl-C and SIGTERM during a sweep (in the main thread; elsewhere nothing changes).

    The first SIGINT raises ``KeyboardInterrupt``, SIGTERM :class:`explorer.cliargs.Terminated`
    (a ``KeyboardInterrupt``): the sweep unwinds, its rows are written to ``out``, the
    workers are ended (:meth:`~explorer.sweep.ProcessBackend.terminate`), then
    the forkserver and the resource tracker
    (:func:`~explorer.sweep.backends.stop_helpers`). From the first signal on, another
    SIGINT or SIGTERM exits at once (status 130 / 143): it kills those helper processes
    and leaves ``out`` as last written (writes are atomic).
    """
    import signal
    import threading

    from ..cliargs import Terminated
    from .backends import helper_pids, stop_helpers

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def exit_now(signum: int, _frame: Any) -> None:
        for pid in helper_pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        kept = f"; the rows written so far are in {out}" if out else ""
        with contextlib.suppress(Exception):
            os.write(2, f"\ndualscope: {signal.Signals(signum).name} again: exiting now"
                        f"{kept}\n".encode())
        os._exit(130 if signum == signal.SIGINT else 143)

    received: list[int] = []

    def first(signum: int, _frame: Any) -> None:
        received.append(signum)
        signal.signal(signal.SIGINT, exit_now)
        signal.signal(signal.SIGTERM, exit_now)
        raise KeyboardInterrupt if signum == signal.SIGINT else Terminated()

    old = {s: signal.signal(s, first) for s in (signal.SIGINT, signal.SIGTERM)}
    stopped = False
    try:
        yield
    except KeyboardInterrupt:
        stopped = True
        raise
    finally:
        if stopped:  # the handlers stay exit_now until the process ends
            stop_helpers()
            if received:
                # the work is over and the process is about to exit: a Ctrl-C from now on
                # is ignored. A Python handler would be reset to the default action during
                # interpreter shutdown (CPython keeps only SIG_IGN), and a Ctrl-C landing
                # there would kill the process by signal instead of the exit status 130.
                signal.signal(signal.SIGINT, signal.SIG_IGN)
        else:
            for s, h in old.items():
                signal.signal(s, h)


@contextlib.contextmanager
def _quiet_dask_logs(dask: bool) -> Iterator[None]:
    """Dask's client logs a lost scheduler with tracebacks; the sweep says it in one line
    (:class:`ClusterLostError`), so its loggers only pass critical records meanwhile
    (``dask``: import it first: it sets its loggers' levels on import)."""
    if dask:
        with contextlib.suppress(ImportError):
            import distributed  # noqa: F401
    names = [n for n in list(logging.root.manager.loggerDict)
             if n.split(".")[0] in ("distributed", "tornado", "asyncio")]
    loggers = [logging.getLogger(n) for n in ("distributed", "tornado", "asyncio", *names)]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _cmd_sweep(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    chains = plan(spec)
    n = sum(len(c.keys) for c in chains)
    shown = spec.dataset
    if shown and shown.startswith("file:"):
        shown = "file " + shown.rsplit("/", 1)[-1].split("?")[0]
    print(f"sweep {spec.model} on {shown}: {n} points in {len(chains)} chain(s)"
          + (f", warm-started along {chains[0].path}" if chains and chains[0].path else ""),
          flush=True)
    table = run(spec, backend=args.backend, workers=args.workers, scheduler=args.scheduler,
                out=args.out, resume=not args.no_resume, progress=not args.quiet,
                force=args.force)
    print(format_table(table, spec))
    errors = len(table.errors())
    unscored = [r for r in table if r.get("score_error")]
    if unscored:
        reasons = "; ".join(list(dict.fromkeys(r["score_error"] for r in unscored))[:3])
        print(f"dualscope: warning: {len(unscored)} row(s) without a held-out score: "
              f"{reasons}", file=sys.stderr)
    print(f"{len(table)} rows, {sum(bool(r.get('converged')) for r in table)} converged, "
          f"{errors} error(s)" + (f"; wrote {args.out}" if args.out else ""))
    return 1 if errors else 0


def add_cli(subparsers: Any, models: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Register ``sweep`` on the ``dualscope`` sub-command parser.

    Parameters
    ----------
    subparsers : argparse subparsers action
        What ``ArgumentParser.add_subparsers`` returned.
    models : sequence of str, optional
        The model choices (default: every registered model).

    Returns
    -------
    argparse.ArgumentParser
        The ``sweep`` parser.
    """
    if models is None:
        models = [e.name for e in registry.entries()]
    s = subparsers.add_parser(
        "sweep", help="grid / path / seeds / cross-validation sweep (serial, processes, dask)",
        description="Sweep a model over a grid of parameters, dataset sizes and data seeds. "
                    "Points differing only in one continuous parameter form a warm-started "
                    "path; independent chains run in parallel.")
    s.add_argument("model", choices=list(models))
    s.add_argument("--grid", action="append", metavar="PARAM=V1,V2,...",
                   help="a grid axis; values a,b,c or geom:LOW:HIGH:N or lin:LOW:HIGH:N "
                        "(repeatable)")
    s.add_argument("--set", action="append", metavar="PARAM=VALUE",
                   help="a fixed model parameter (repeatable)")
    s.add_argument("--size", action="append", metavar="KEY=V[,V2...]",
                   help="dataset size (several values: an axis) (repeatable)")
    s.add_argument("--dataset", help="dataset name (see `dualscope list`)")
    s.add_argument("--seeds", default="0", help="data seeds, e.g. 0,1,2 (default 0)")
    f = s.add_argument_group("your data file (instead of --dataset)")
    f.add_argument("--data", metavar="PATH", help="CSV/TSV, LIBSVM/svmlight, .npz, Parquet or "
                                                  "MALSAR .mat (see `dualscope list`)")
    f.add_argument("--format", help="file format, overriding the extension")
    f.add_argument("--label", metavar="COL", help="label column (default: the last)")
    f.add_argument("--task", metavar="COL", help="task column (default: a column 'task')")
    f.add_argument("--time", metavar="COL", help="time column (robust_mtl's task order)")
    f.add_argument("--test", metavar="PATH", help="held-out file: a score per point")
    f.add_argument("--test-size", type=float, metavar="F",
                   help="hold out a fraction F of the rows (drawn per data seed)")

    prep_options(s)
    s.add_argument("--cv", type=int, default=0, metavar="K",
                   help="K-fold cross-validation (held-out score per fold)")
    s.add_argument("--path", default=None,
                   help="the warm-start path parameter (default: the first float grid axis; "
                        "'' for none)")
    s.add_argument("--descending", action="store_true",
                   help="solve paths from the largest value down")
    s.add_argument("--cold", action="store_true", help="no warm starts along paths")
    s.add_argument("--tol", type=float, default=None)
    s.add_argument("--max-iter", type=int, default=None)
    s.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="auto: serial for small grids, else local processes")
    s.add_argument("--workers", type=int, default=None, help="processes / local Dask workers")
    s.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="an existing Dask scheduler (implies --backend dask)")
    s.add_argument("--out", default=None, metavar="PATH",
                   help="table (.csv or .parquet); resumed if it exists")
    s.add_argument("--no-resume", action="store_true", help="recompute rows already in --out")
    s.add_argument("--force", action="store_true",
                   help="run sizes outside the dataset's ranges or above the memory limit, "
                        f"more than {MAX_POINTS:,} points, and overwrite an --out file that "
                        "is not a dualscope sweep table")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_sweep)
    return s
