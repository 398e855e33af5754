"""The ``dualscope`` command line.

Subcommands::

    dualscope app [--port N] [--host H]      launch the dashboard (binds to 127.0.0.1)
    dualscope list                           models, datasets, sizes and parameters
    dualscope solve MODEL [options]          solve once, print the gap history
    dualscope check MODEL [options]          solve and cross-check against cvxpy
    dualscope predict --model M --data PATH  apply a saved model to a data file
    dualscope bench MODEL [--quick|--real]   the model's benchmark tables
    dualscope docs build|open                build or open the documentation site

Options of ``solve`` / ``check``: ``--dataset NAME``, ``--size KEY=VALUE``
(repeatable; each size must lie in the dataset's range, ``--force`` exceeds it
and prints an estimate of memory and time), ``--set PARAM=VALUE`` (repeatable),
``--seed``, ``--tol``, ``--max-iter``, ``--json PATH``; a data file instead of a
dataset: ``--data PATH`` with ``--label``, ``--task``, ``--time``, ``--test PATH`` or
``--test-size F``, ``--format`` (:mod:`explorer.datafiles`), and ``--save MODEL.npz``
for ``dualscope predict --model MODEL.npz --data PATH [--out PRED.csv]``. Every
subcommand takes ``--debug``.

Error contract: no input makes the CLI print a Python traceback. Every error
is one line ``dualscope: ...`` on stderr and exit status 2 (130 on Ctrl-C);
``--debug`` prints the traceback as well. Output paths are checked before any
work starts. Warnings (the solvers' and third-party ones such as cvxpy's) are
printed once each as one line ``dualscope: warning: ...``.

Adding a subcommand: append a :class:`Subcommand` to :data:`SUBCOMMANDS` (or
call :func:`register`); it gets ``--debug``, the output-path checks of the
options named in ``outputs``, the warning handling and the error contract for
free. Models plug in through :mod:`explorer.registry`; this file never names one.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from . import registry
from .cliargs import (
    CLIError,
    Terminated,
    parse_number,
    parse_pairs,
    parse_size,
    prep_options,
    preprocessing_of,
)
from .limits import CostError, check_sizes
from .numfmt import gap_text

__all__ = ["SUBCOMMANDS", "CLIError", "CostError", "Subcommand", "Terminated", "check_output_path",
           "check_sizes", "guard_sizes", "main", "parse_number", "parse_pairs", "parse_size",
           "register"]


class _UsageError(CLIError):
    """A command-line syntax error reported by argparse."""


def _err(msg: str) -> None:
    print(f"dualscope: {msg}", file=sys.stderr, flush=True)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- errors


def describe_error(exc: BaseException) -> str:
    """The one-line message printed for ``exc`` (without the ``dualscope:`` prefix).

    The contract's errors (``ValueError``, ``TypeError``, ``KeyError``,
    :class:`solvers.NumericalError`) are printed as their message, verbatim
    (a ``KeyError``'s message is its argument, not its quoted ``repr``).
    Foreign numerical errors are named; anything else is an internal error.
    """
    # a NumericalError comes from an imported solvers.base; a usage error imports nothing
    base = sys.modules.get("solvers.base")
    numerical = (base.NumericalError,) if base is not None else ()

    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        msg = exc.args[0]
    elif isinstance(exc, OSError) and exc.strerror:
        msg = exc.strerror + (f": {exc.filename!r}" if exc.filename else "")
    else:
        msg = str(exc)
    msg = _one_line(msg) or type(exc).__name__
    debug_hint = "rerun with --debug for the traceback"
    if isinstance(exc, (CLIError, *numerical)):
        return msg
    if isinstance(exc, np.linalg.LinAlgError):
        return (f"linear-algebra failure ({msg}); the data or parameters are numerically "
                f"extreme ({debug_hint})")
    if isinstance(exc, ValueError | TypeError | KeyError):
        return msg
    if isinstance(exc, ArithmeticError):  # ZeroDivisionError, OverflowError, FloatingPointError
        return (f"numerical failure: {type(exc).__name__}: {msg}; the data or parameters "
                f"are numerically extreme ({debug_hint})")
    if isinstance(exc, MemoryError):
        return (f"out of memory{': ' + msg if msg != 'MemoryError' else ''}; "
                "reduce the --size values")
    if isinstance(exc, OSError):
        return msg
    if type(exc).__module__.split(".")[0] in ("cvxpy", "clarabel"):
        return (f"the cvxpy reference failed: {type(exc).__name__}: {msg} ({debug_hint})")
    if len(msg) > 300:  # e.g. a compiler's multi-page message, folded into one line
        msg = msg[:297] + "..."
    return (f"internal error: {type(exc).__name__}: {msg} ({debug_hint}, and please report "
            "it)")


# ------------------------------------------------------------------------- warnings


@contextlib.contextmanager
def _readable_warnings() -> Iterator[None]:
    """Print every distinct warning once as ``dualscope: warning: ...`` (no source line)."""
    seen: set[str] = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = _one_line(str(message))
        if category is not UserWarning:
            text = f"{text} [{category.__name__}]"
        if text not in seen:
            seen.add(text)
            _err(f"warning: {text}")

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        for quiet in (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                      ResourceWarning):  # Python hides these by default: so do we
            warnings.filterwarnings("ignore", category=quiet)
        warnings.showwarning = show
        yield


# ---------------------------------------------------------------------- arguments


def check_output_path(path: str, option: str = "--json") -> Path:
    """Check that ``path`` can be written as a file, before any work starts.

    Refuses a missing parent directory, a directory given as the file and an
    unwritable location (probed by opening the file for appending; a file
    created by the probe is removed again).
    """
    if not str(path).strip():
        raise CLIError(f"{option} is empty; give a file name")
    p = Path(path).expanduser()
    if p.is_dir():
        raise CLIError(f"{option} {path!r} is a directory; give a file name, "
                       f"e.g. {str(p / 'out.json')!r}")
    parent = p.parent
    if not parent.exists():
        raise CLIError(f"{option} {path!r}: the directory {str(parent)!r} does not exist")
    if not parent.is_dir():
        raise CLIError(f"{option} {path!r}: {str(parent)!r} is not a directory")
    existed = p.exists()
    if existed and not p.is_file():
        raise CLIError(f"{option} {path!r} is not a regular file (a FIFO, device or "
                       "socket); give a file name")
    try:
        with open(p, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise CLIError(f"{option} {path!r} is not writable ({exc.strerror or exc})") from None
    if not existed:
        with contextlib.suppress(OSError):
            p.unlink()
    return p


def _parse_param(p: registry.Param, key: str, text: str) -> Any:
    if p.kind in ("float", "int"):
        try:
            float(text)
        except ValueError:
            kind = "an integer" if p.kind == "int" else "a number"
            raise CLIError(f"--set {key}: {key} must be {kind}, got {text!r}") from None
        if p.kind == "int":
            text = str(parse_number(text, f"--set {key}", integer=True))
    return p.parse(text)


def _parse_sizes(ds: registry.Dataset, pairs: list[str] | None, *, force: bool
                 ) -> dict[str, Any]:
    sizes: dict[str, Any] = {}
    for key, text in parse_pairs(pairs, "--size").items():
        sizes[key] = parse_size(ds, key, text)
    guard_sizes(ds, sizes, force=force)
    return sizes


def guard_sizes(ds: registry.Dataset, sizes: dict[str, Any], *, force: bool) -> None:
    """:func:`check_sizes` for one solve: its messages printed on stderr."""
    for kind, text in check_sizes(ds, sizes, force=force):
        _err(f"{kind}: {text}")


def _build(entry: registry.ModelEntry, args: argparse.Namespace
           ) -> tuple[registry.Problem, dict[str, Any]]:
    if getattr(args, "data", None):
        return _build_from_file(entry, args)
    for opt in ("label", "task", "time", "test", "test_size", "format", "scale", "categorical",
                "missing", "features", "ignore"):
        if getattr(args, opt, None) is not None:
            raise CLIError(f"--{opt.replace('_', '-')} applies to --data PATH (a data file)")
    try:
        ds_name, ds = entry.dataset(args.dataset)
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    sizes = _parse_sizes(ds, args.size, force=args.force)
    params = entry.default_params()
    for key, text in parse_pairs(args.set, "--set").items():
        params[key] = _parse_param(entry.param(key), key, text)
    problem = ds(seed=args.seed, **sizes)
    return problem, params


def _build_from_file(entry: registry.ModelEntry, args: argparse.Namespace
                     ) -> tuple[registry.Problem, dict[str, Any]]:
    """The problem of ``--data PATH`` (``--label``/``--task``/``--time``/``--test``...)."""
    from . import datafiles

    if args.dataset:
        raise CLIError("give --dataset NAME or --data PATH, not both")
    if args.size:
        raise CLIError("--size applies to the built-in datasets, not to --data PATH")
    params = entry.default_params()
    for key, text in parse_pairs(args.set, "--set").items():
        params[key] = _parse_param(entry.param(key), key, text)
    problem = datafiles.load_problem(
        entry.name, args.data, fmt=args.format, label=args.label, task=args.task,
        time=args.time, test=args.test, test_size=args.test_size, seed=args.seed,
        max_bytes=math.inf if args.force else datafiles.MAX_FILE_BYTES, prep=preprocessing_of(args))
    return problem, params


def _save_model(entry: registry.ModelEntry, problem: registry.Problem, res: Any,
                params: dict[str, Any], path: str) -> None:
    """``--save``: the fitted model with the data's names (:mod:`solvers.saved`)."""
    from . import datafiles

    datafiles.fitted_model(entry.name, problem, res, params).save(path)
    print(f"saved the fitted model to {path}")


# ------------------------------------------------------------------------ solve


def _row(s) -> str:
    """One history row (an :class:`~solvers.base.IterationState` or a result)."""
    it = getattr(s, "iteration", None)
    it = s.n_iter if it is None else it
    return (f"{it:>7d} {s.time:>9.3f} {s.primal:>16.9g} {s.dual:>16.9g} "
            f"{gap_text(s.gap, width=11, short=True)} "
            f"{gap_text(s.rel_gap, width=11, short=True)}")


class _ProgressPrinter:
    """The solve callback printing history rows: the first five, then at most two a
    second; ``shown`` is the last row printed as ``(iteration, primal, dual)``."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.last = -math.inf
        self.count = 0
        self.shown: tuple[int, float, float] | None = None

    def __call__(self, s: Any) -> None:
        self.count += 1
        now = time.perf_counter()
        if self.quiet:
            return
        if self.count <= 5 or now - self.last >= 0.5:
            self.last = now
            self.shown = (s.iteration, s.primal, s.dual)
            print(_row(s), flush=True)


def _header() -> None:
    print(f"{'iter':>7} {'time[s]':>9} {'primal':>16} {'dual':>16} {'gap':>11} {'rel_gap':>11}")


def _summary(res, printer: Any = None, problem: registry.Problem | None = None,
             entry: registry.ModelEntry | None = None) -> None:
    """The final row (unless ``printer`` already printed it) and a status line; an
    unconverged run on a file says what may help (scaling, another method)."""
    h = res.history
    if printer is None or printer.shown != (res.n_iter, res.primal, res.dual):
        print(_row(res) + "   (final)")
    status = "converged" if res.converged else "NOT converged"
    if res.stop_reason == "max_iter":
        status += f" (stopped at max_iter; {'; '.join(_advice(res, problem, entry))})"
    print(f"{status}: {res.n_iter} iterations in {res.time:.3f} s, method={res.method}, "
          f"certified gap {gap_text(res.gap)} (relative {gap_text(res.rel_gap, '.2e')}); "
          f"{len(h)} history rows")


def _advice(res: Any, problem: registry.Problem | None,
            entry: registry.ModelEntry | None) -> list[str]:
    """What may help an unconverged run: scaling when the file's feature scales differ by
    more than 100x, another method of the model, more iterations."""
    out = []
    info = problem.info if problem is not None else {}
    ratio = info.get("feature_scale_ratio")
    prep = info.get("preprocessing")
    if ratio is not None and ratio > 100 and (prep is None or prep.options.scale == "none"):
        out.append(f"the feature scales differ by {ratio:,.0f}x: rerun with --scale standard "
                   "(or maxabs for a sparse file)")
    if entry is not None:
        try:
            choices = entry.param("method").choices or ()
        except (KeyError, ValueError, AttributeError):
            choices = ()
        others = [m for m in choices if m != getattr(res, "method", None)]
        if others:
            out.append(f"try --set method={'auto' if 'auto' in others else others[0]} "
                       f"(methods: {', '.join(choices)})")
    out.append(f"or --max-iter {4 * res.n_iter} to go further")
    return out


def _tol_max_iter(entry: registry.ModelEntry, args: argparse.Namespace, check: bool
                  ) -> tuple[float, int]:
    from solvers.params import MAX_ITER, TOL

    tol = args.tol if args.tol is not None else (min(entry.tol, 1e-8) if check else entry.tol)
    max_iter = args.max_iter if args.max_iter is not None else entry.max_iter * (
        10 if check else 1)
    return TOL.validate(tol), MAX_ITER.validate(max_iter)


def cmd_solve(args: argparse.Namespace, *, check: bool = False) -> int:
    entry = registry.get(args.model)
    tol, max_iter = _tol_max_iter(entry, args, check)
    from solvers.validation import check_int

    check_int(args.seed, "--seed", low=0, high=2**32 - 1)
    problem, params = _build(entry, args)
    print(f"{entry.title} on {problem.name}: {problem.description}")
    fp = problem.info.get("preprocessing")
    prep_text = fp.describe() if fp is not None else None
    if prep_text:
        print(f"preprocessing: {prep_text}")
    ratio = problem.info.get("feature_scale_ratio")
    if ratio is not None and ratio > 100 and (fp is None or fp.options.scale == "none"):
        print(f"note: the feature scales differ by {ratio:,.0f}x; --scale standard (maxabs "
              "for a sparse file) usually gives a better-conditioned problem")
    print("parameters: " + ", ".join(f"{k}={v}" for k, v in params.items())
          + f", tol={tol:g}, max_iter={max_iter}")
    if check:
        refusal = entry.reference_refusal(problem)
        if refusal:
            raise CLIError(refusal)
    _header()
    printer = _ProgressPrinter(args.quiet)
    res = entry.solve(problem, tol=tol, max_iter=max_iter, callback=printer, **params)
    _summary(res, printer, problem, entry)
    out: dict[str, Any] = {
        "model": entry.name, "dataset": problem.name, "description": problem.description,
        "seed": args.seed, "tol": tol, "max_iter": max_iter, "params": params,
        "result": res.to_dict(),
    }
    if prep_text:
        out["preprocessing"] = prep_text
    code = 0
    if check:
        print("running the cvxpy reference (Clarabel) ...", flush=True)
        ref = entry.reference(problem, **params)
        scale = max(1.0, abs(ref.value))
        rel = abs(res.primal - ref.value) / scale
        slack = 1e-7 * scale
        bound_ok = res.dual <= ref.value + slack and res.primal >= ref.value - slack
        agree = rel <= 1e-6
        print(f"cvxpy optimum   {ref.value:.12g}  ({ref.time:.2f} s)")
        print(f"dualscope primal {res.primal:.12g}  ({res.time:.3f} s, "
              f"{ref.time / max(res.time, 1e-9):.1f}x faster)")
        print(f"dualscope dual   {res.dual:.12g}")
        print(f"relative difference {rel:.2e} (required <= 1e-6): "
              f"{'OK' if agree else 'FAIL'}")
        print(f"certificate dual <= cvxpy optimum <= primal: {'OK' if bound_ok else 'FAIL'}")
        out["reference"] = {"value": ref.value, "time": ref.time, "rel_diff": rel,
                            "agree": agree, "bound_ok": bound_ok}
        code = 0 if (agree and bound_ok) else 1
    if args.json:
        from solvers.saved import RUN_KEY

        from .datafiles import held_out_scores

        scores = held_out_scores(entry.name, problem, res, params)
        if scores is not None:
            out["held_out"] = {s.name: s.value for s in scores}

        from . import datafiles

        # the learned model as `solvers.saved` writes it: load_model(args.json) reads it
        out[RUN_KEY] = datafiles.fitted_model(entry.name, problem, res, params).to_json()
        from solvers.fileio import write_atomic

        write_atomic(Path(args.json).expanduser(), json.dumps(out, indent=2, default=str))
        print(f"wrote {args.json}")
    if getattr(args, "save", None):
        _save_model(entry, problem, res, params, args.save)
    _held_out(entry, problem, res, params)
    return code


def cmd_check(args: argparse.Namespace) -> int:
    return cmd_solve(args, check=True)


def _held_out(entry: registry.ModelEntry, problem: registry.Problem, res: Any,
              params: dict[str, Any]) -> dict[str, float] | None:
    """Print (and return) the held-out scores of a file problem with a test part: the
    saved model's predictions on the held-out rows (as ``dualscope predict`` makes them)
    scored by :mod:`solvers.scoring`."""
    from .datafiles import held_out_scores

    scores = held_out_scores(entry.name, problem, res, params)
    if scores is None:
        return None
    print("held-out " + ", ".join(str(s) for s in scores))
    return {s.name: s.value for s in scores}


# ------------------------------------------------------------------------ predict


def cmd_predict(args: argparse.Namespace) -> int:
    """``dualscope predict --model m.npz --data new.csv [--out pred.csv]``."""
    from solvers import saved

    from . import datafiles

    sm = saved.load_model(args.model)
    feats = sm.feature_names
    fp = sm.preprocessing
    fmt = datafiles.detect_format(args.data, args.format)
    table_feats = feats is not None and fmt in datafiles.NAMED_COLUMNS and fp is None
    if args.task and args.time:
        raise CLIError("give --task or --time, not both (--time COL: the time column that "
                       "orders the tasks)")
    table = datafiles.read_table(
        args.data, fmt=args.format,
        label=args.label or (sm.label_name if fp is not None
                             and fmt in datafiles.NAMED_COLUMNS else None),
        task=args.task or args.time or (sm.task_name if sm.task_name not in (None, "qid",
                                                                             "cell") else None),
        need_label=False,
        features=[str(f) for f in feats] if table_feats and feats is not None else None,
        n_features=sm.n_features if fmt == "svmlight" else None, zero_based=sm.zero_based,
        fitted=fp)
    if fp is not None:
        print(f"preprocessing (as fitted): {fp.describe()}", file=sys.stderr)
    if table.d != sm.n_features:
        raise CLIError(f"{table.name}: {table.d} features, the model {args.model} has "
                       f"{sm.n_features}")
    tasks = table.tasks if table.tasks is not None else table.time
    if sm.needs_tasks and tasks is None:
        raise CLIError(f"{table.name}: model {sm.model} needs each row's task (--task COL)")
    X = table.X  # sparse CSR as read: the saved model densifies only where it must
    try:
        pred = sm.predict(X, tasks if sm.needs_tasks else None)
    except ValueError as exc:
        raise CLIError(f"{table.name}: {exc}") from None
    import csv
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = ([sm.task_name or "task"] if sm.needs_tasks else []) + ["prediction"]
    w.writerow(cols)
    # rows dropped for missing values (--missing drop) get an empty prediction: one output
    # row per data row of the file
    n_file = int(table.extra.get("n_file", len(pred)))
    at = dict(zip((int(r) for r in table.extra.get("rows", range(len(pred)))), range(len(pred)),
                  strict=True))
    for r in range(n_file):
        i = at.get(r)
        if i is None:
            w.writerow([""] * len(cols))
            continue
        row = [_plain(tasks[i])] if sm.needs_tasks and tasks is not None else []
        w.writerow([*row, _plain(v) if (v := pred[i]) is not None else ""])
    if args.out:
        from solvers.fileio import write_atomic

        write_atomic(Path(args.out).expanduser(), buf.getvalue())
        print(f"wrote {len(pred)} predictions to {args.out}")
    else:
        sys.stdout.write(buf.getvalue())
    if n_file > len(pred):
        print(f"{n_file - len(pred)} rows with missing values were not predicted (empty "
              "prediction)", file=sys.stderr)
    if table.y is not None:
        from solvers.scoring import score_predictions

        scores = score_predictions(sm.kind, table.y, pred)
        msg = ", ".join(f"{s.name} {s.value:.6g}" for s in scores)
        print(f"{table.name} has labels ({table.label_name}): {msg}", file=sys.stderr)
    return 0


def _plain(v: Any) -> Any:
    v = v.item() if isinstance(v, np.generic) else v
    return int(v) if isinstance(v, float) and v.is_integer() else v


def cmd_bench(args: argparse.Namespace) -> int:
    entry = registry.get(args.model)
    t0 = time.perf_counter()

    def progress(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = entry.run_bench(quick=args.quick, progress=progress, real=args.real)
    print(report.to_markdown())
    if args.json:
        report.write_json(args.json)
        print(f"\nwrote {args.json}")
    return 0


# ------------------------------------------------------------------------- list


def param_range(p: registry.Param) -> str:
    """The admissible values of ``p`` in words (the solver's spec when it has one)."""
    if p.spec is not None:
        return p.spec.describe()
    if p.kind == "choice":
        return "one of " + ", ".join(repr(c) for c in p.choices)
    if p.kind == "bool":
        return "true/false"
    if p.low is not None and p.high is not None:
        return f"dashboard range [{p.low:g}, {p.high:g}]{' (log)' if p.log else ''}"
    return "see the solver's docstring"


def _first_line(text: str) -> str:
    return _one_line(text.split(". ")[0]) if text else ""


def _file_formats() -> str:
    from .datafiles import FORMATS

    return ", ".join(f"{f} ({' '.join(x)})" for f, x in FORMATS.items())


def _file_roles(model: str) -> str:
    from .datafiles import roles

    return roles(model).describe()


#: The conventions of ``dualscope list``, printed above the listing.
LIST_LEGEND = """\
Conventions: a size reads NAME=DEFAULT [LOW, HIGH] (set it with --size NAME=VALUE).
On a real data set, a count whose range starts at 0 means "all" when it is 0 (n=0:
every sample, k=0: every neighbour); such a default is shown as NAME=0 (all).
A parameter reads NAME=DEFAULT and its range: [a, b] includes the ends, (a, b) not."""


def _size_text(d: registry.Dataset, key: str, spec: tuple[Any, Any, Any]) -> str:
    default, low, high = spec
    all_at_zero = d.real and isinstance(low, int) and low == 0 and default == 0
    return f"{key}={default}{' (all)' if all_at_zero else ''} [{low}, {high}]"


def cmd_list(args: argparse.Namespace) -> int:
    print(LIST_LEGEND)
    for e in registry.entries():
        print(f"{e.name}: {e.title}")
        print("  datasets (size=default [low, high]):")
        for d in e.datasets.values():
            sizes = ", ".join(_size_text(d, k, v) for k, v in d.sizes.items())
            print(f"    {d.name}: {d.title}" + (f"; {sizes}" if sizes else ""))
        print(f"  files (--data PATH): {_file_formats()}; needs "
              f"{_file_roles(e.name)}")
        print(f"  parameters (--set NAME=VALUE; also --tol, default {e.tol:g}, and "
              f"--max-iter, default {e.max_iter}):")
        for p in e.params:
            print(f"    {p.name}={p.default}  {param_range(p)}"
                  + (f"  -- {_first_line(p.help)}" if p.help else ""))
    return 0


# -------------------------------------------------------------------------- app


def app_command(args: argparse.Namespace) -> list[str]:
    """The ``streamlit run`` command line of ``dualscope app`` (binds to ``args.host``).

    ``explorer.serve`` is ``streamlit run app_main.py`` with the kernels warming from the
    server's start."""
    cmd = [sys.executable, "-m", "explorer.serve",
           "--server.address", args.host, "--server.port", str(args.port),
           "--browser.gatherUsageStats", "false"]
    if args.headless:
        cmd += ["--server.headless", "true"]
    return cmd


def cmd_app(args: argparse.Namespace) -> int:
    from solvers.validation import check_int

    check_int(args.port, "--port", low=1, high=65535)
    if not args.host.strip():
        raise CLIError("--host must be a host name or address, got ''")
    try:
        import plotly  # noqa: F401
        import streamlit  # noqa: F401
    except ImportError:
        raise CLIError('the dashboard needs the app extra: pip install "dualscope[app]"'
                       ) from None
    cmd = app_command(args)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        _err(f"warning: --host {args.host}: the dashboard is reachable from other machines; "
             "anyone who reaches the port can start heavy computations")
    print("starting: " + " ".join(cmd), flush=True)
    return subprocess.call(cmd, env=dict(os.environ))


# -------------------------------------------------------------------- the parser


@dataclass(frozen=True)
class Subcommand:
    """One ``dualscope`` subcommand.

    Attributes
    ----------
    name, help : str
    configure : callable
        ``configure(parser)`` adds the subcommand's arguments.
    run : callable
        ``run(args) -> int`` (exit status); raise ``ValueError``/``CLIError``
        for user errors, they become one line and exit status 2.
    outputs : tuple of str
        ``dest`` names of output-path options, checked writable before ``run``.
    kinds : Mapping[str, OutputKind]
        The kind of file each output is (:mod:`explorer.outputs`): an existing file
        there that is not one is refused before ``run`` unless ``--force``.
    inputs : tuple of str
        ``dest`` names of input-file options: no output may name one of those files
        (unless ``--force``).
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    outputs: tuple[str, ...] = ()
    kinds: Mapping[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()


def _models() -> list[str]:
    return [e.name for e in registry.entries()]


def _configure_app(a: argparse.ArgumentParser) -> None:
    a.add_argument("--port", type=int, default=8501)
    a.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default 127.0.0.1: this machine only; "
                        "0.0.0.0 exposes the dashboard to the network)")
    a.add_argument("--headless", action="store_true", help="do not open a browser")


def _configure_solve(s: argparse.ArgumentParser) -> None:
    s.add_argument("model", choices=_models())
    s.add_argument("--dataset", help="dataset name (see `dualscope list`)")
    s.add_argument("--size", action="append", metavar="KEY=VALUE",
                   help="dataset size parameter, e.g. n=500 (repeatable; within the "
                        "range shown by `dualscope list`)")
    s.add_argument("--force", action="store_true",
                   help="accept sizes outside the dataset's range (prints an estimate), a "
                        "file beyond the size budget, and --json/--save over a file that "
                        "is not of their kind")
    s.add_argument("--set", action="append", metavar="PARAM=VALUE",
                   help="model parameter, e.g. C=0.5 (repeatable)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--tol", type=float, default=None)
    s.add_argument("--max-iter", type=int, default=None)
    s.add_argument("--json", metavar="PATH",
                   help="write parameters, certificate, history and the learned model (as "
                        "--save writes it; solvers.saved.load_model reads it) as JSON")
    s.add_argument("--quiet", action="store_true", help="only the final summary")
    f = s.add_argument_group("your data file (instead of --dataset; see `dualscope list`)")
    f.add_argument("--data", metavar="PATH",
                   help="CSV/TSV, LIBSVM/svmlight (.svm, .libsvm, .txt, .gz), .npz, Parquet "
                        "or MALSAR .mat")
    f.add_argument("--format", help="file format, overriding the extension "
                                    "(csv, tsv, svmlight, npz, parquet, mat)")
    f.add_argument("--label", metavar="COL", help="label column (default: the last)")
    f.add_argument("--task", metavar="COL",
                   help="task column of the multitask models (default: a column 'task')")
    f.add_argument("--time", metavar="COL",
                   help="time column (robust_mtl: the tasks' time order)")
    f.add_argument("--test", metavar="PATH", help="held-out file (same columns)")
    f.add_argument("--test-size", type=float, metavar="F",
                   help="hold out a random fraction F of the rows (of each task)")
    f.add_argument("--save", metavar="MODEL.npz",
                   help="save the fitted model (.npz or .json) for `dualscope predict`")
    prep_options(s)


def _configure_predict(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, metavar="MODEL.npz",
                   help="a model saved by `dualscope solve ... --save` (.npz or .json)")
    p.add_argument("--data", required=True, metavar="PATH", help="the rows to predict")
    p.add_argument("--format", help="file format, overriding the extension")
    p.add_argument("--label", metavar="COL",
                   help="label column, if the file has one (scored, not used)")
    p.add_argument("--task", metavar="COL", help="task column (default: the training one)")
    p.add_argument("--time", metavar="COL",
                   help="time column naming each row's task (robust_mtl fitted with --time; "
                        "default: the training one)")
    p.add_argument("--out", metavar="PATH", help="write the predictions as CSV "
                                                 "(default: standard output)")
    p.add_argument("--force", action="store_true",
                   help="overwrite --out even if it is not a predictions file written by "
                        "dualscope (never needed for one that is)")


def _configure_bench(b: argparse.ArgumentParser) -> None:
    b.add_argument("model", choices=_models())
    b.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    b.add_argument("--real", action="store_true",
                   help="only the real-data tables (School, the Debian file; their paths: "
                        "$DUALSCOPE_SCHOOL, $DUALSCOPE_DEBIAN_TRAIN or ../shared/data)")
    b.add_argument("--json", metavar="PATH", help="write the tables as JSON")


class _kinds(dict):
    """``dest -> OutputKind`` of :mod:`explorer.outputs`, imported when first looked up
    (``dualscope --help`` imports no solver)."""

    def __init__(self, **names: str) -> None:
        super().__init__(names)

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self:
            return default
        from . import outputs

        return getattr(outputs, dict.__getitem__(self, key))


#: The subcommands, in help order. Append a :class:`Subcommand` to add one.
def _configure_warmup(p: argparse.ArgumentParser) -> None:
    p.add_argument("models", nargs="*", metavar="MODEL", help="only these models")
    p.add_argument("--verify", action="store_true",
                   help="then check every kernel family against its numpy reference")
    p.add_argument("--clear", action="store_true",
                   help="first delete the solvers' numba cache files (they compile anew)")


def _cmd_warmup(ns: argparse.Namespace) -> int:
    from . import warmup

    argv = list(ns.models) + (["--verify"] if ns.verify else []) + (
        ["--clear"] if ns.clear else [])
    return warmup.main(argv)


SUBCOMMANDS: list[Subcommand] = [
    Subcommand("app", "launch the Streamlit dashboard (on 127.0.0.1 unless --host)",
               _configure_app, cmd_app),
    Subcommand("list", "models, datasets (with size ranges) and parameters (with ranges)",
               lambda p: None, cmd_list),
    Subcommand("solve", "solve one model on a dataset, print the gap history",
               _configure_solve, cmd_solve, outputs=("json", "save"),
               kinds=_kinds(json="RUN_JSON", save="SAVED_MODEL"), inputs=("data", "test")),
    Subcommand("check", "solve and cross-check against the cvxpy reference",
               _configure_solve, cmd_check, outputs=("json", "save"),
               kinds=_kinds(json="RUN_JSON", save="SAVED_MODEL"), inputs=("data", "test")),
    Subcommand("predict", "apply a saved model (solve --save) to a data file",
               _configure_predict, cmd_predict, outputs=("out",),
               kinds=_kinds(out="PREDICTIONS"), inputs=("model", "data")),
    Subcommand("bench", "benchmark: vs cvxpy and vs the paper's baseline",
               _configure_bench, cmd_bench, outputs=("json",),
               kinds=_kinds(json="BENCH_JSON")),
    Subcommand("warmup", "compile every model's numba kernels (once, after install)",
               _configure_warmup, _cmd_warmup),
    Subcommand("docs", "build the documentation site (sphinx-build -W) or open it",
               lambda p: __import__("explorer.docs").docs.configure(p),
               lambda ns: __import__("explorer.docs").docs.run(ns)),
]


def register(sub: Subcommand) -> None:
    """Add (or replace, by name) a subcommand."""
    for i, s in enumerate(SUBCOMMANDS):
        if s.name == sub.name:
            SUBCOMMANDS[i] = sub
            return
    SUBCOMMANDS.append(sub)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (``dualscope: error: ...``), not usage + exit."""

    def error(self, message: str):  # type: ignore[override]
        raise _UsageError(f"{_one_line(message)} (see '{self.prog} --help')")


class _LazySubcommands(argparse._SubParsersAction):
    """Sub-command parsers whose arguments are added when the sub-command is chosen.

    ``dualscope --help`` and a mistyped command therefore import no model, solver or
    plotting library (the model choices come from :func:`explorer.registry.entries`,
    which imports every model)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[str, Callable[[], None]] = {}

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[override]
        build = self.pending.pop(values[0], None) if values else None
        if build is not None:
            build()
        super().__call__(parser, namespace, values, option_string)


def make_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print the Python traceback of an error")
    p = _Parser(
        prog="dualscope", parents=[common],
        description="Certified solvers for structured convex learning models, "
                    "with a live dashboard.")
    sub = cast(_LazySubcommands, p.add_subparsers(
        dest="command", required=True, parser_class=_Parser, action=_LazySubcommands))
    for s in SUBCOMMANDS:
        sp = sub.add_parser(s.name, help=s.help, description=s.help, parents=[common])
        sp.set_defaults(_subcommand=s)
        sub.pending[s.name] = functools.partial(s.configure, sp)

    # the sweep sub-command lives in explorer/sweep.py (it registers its own parser); it
    # gets --debug, the --out check and the error contract like the others. Its parser is
    # built when chosen (its model choices import every model); until then a placeholder
    # built without models gives the help line.
    from . import sweep

    def build_sweep(models: list[str] | tuple[str, ...], into: Any) -> argparse.ArgumentParser:
        sp = sweep.add_cli(into, models)
        sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="print the Python traceback of an error")
        sp.set_defaults(_subcommand=Subcommand("sweep", sp.description or "", lambda _: None,
                                               lambda a: a.func(a), outputs=("out",)))
        return sp

    build_sweep((), sub)

    def configure_sweep() -> None:
        scratch = _Parser(add_help=False).add_subparsers(prog=p.prog, parser_class=_Parser)
        # built by ``scratch``, whose parser class is _Parser
        sub._name_parser_map["sweep"] = cast(_Parser, build_sweep(_models(), scratch))

    sub.pending["sweep"] = configure_sweep
    return p


def _check_outputs(sub: Subcommand, args: argparse.Namespace) -> None:
    """Before any work: each output of ``sub`` is writable, names no input file and no
    existing file of another kind (:func:`explorer.outputs.guard_output`)."""
    inputs = [("--" + d.replace("_", "-"), getattr(args, d, None)) for d in sub.inputs]
    force = bool(getattr(args, "force", False))
    given: dict[str, str] = {}
    for dest in sub.outputs:
        value = getattr(args, dest, None)
        if value is None:
            continue
        option = "--" + dest.replace("_", "-")
        check_output_path(value, option)
        if sub.kinds or sub.inputs:
            from .outputs import guard_output, same_file

            for other, path in given.items():
                if os.path.abspath(os.path.expanduser(str(path))) == os.path.abspath(
                        os.path.expanduser(str(value))) or same_file(path, value):
                    raise CLIError(f"{other} and {option} name the same file {value!r}; "
                                   "give each output its own file")
            guard_output(value, kind=sub.kinds.get(dest), inputs=inputs, force=force,
                         option=option, error=CLIError)
        given[option] = value


def _debug_requested(argv: list[str] | None) -> bool:
    return "--debug" in (sys.argv[1:] if argv is None else argv)


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (never raises but ``SystemExit(0)``
    for ``--help``)."""
    debug = _debug_requested(argv)
    try:
        with _readable_warnings():
            args = make_parser().parse_args(argv)
            debug = bool(getattr(args, "debug", debug))
            sub: Subcommand = args._subcommand
            _check_outputs(sub, args)
            return int(sub.run(args) or 0)
    except Terminated:
        _err("terminated (SIGTERM)")
        return 143
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:  # `dualscope list | head`: the reader left, stop quietly
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 141
    except SystemExit as exc:  # --help / --version (argparse errors are _UsageError)
        if exc.code in (0, None):
            raise
        _err(f"exit requested with status {exc.code}")
        return 2
    except Exception as exc:  # the contract: one line, exit 2, no traceback
        if debug:
            traceback.print_exc()
        msg = describe_error(exc)
        _err(f"error: {msg}" if isinstance(exc, _UsageError) else msg)
        return 2


if __name__ == "__main__":  # pragma: no cover
    # `python -m explorer.cli`: run the imported module, whose CLIError the subcommand
    # modules (explorer.sweep) raise, not this __main__ copy of it
    from explorer.cli import main as _main

    sys.exit(_main())
