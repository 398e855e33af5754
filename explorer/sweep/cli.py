"""``dualscope sweep MODEL``: arguments to a :class:`~explorer.sweep.spec.SweepSpec`, the
run, and the text table."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import registry
from ..cli import parse_pairs
from .backends import BACKENDS
from .run import run
from .spec import CERTIFICATE, STRUCT_PREFIX, SweepSpec, plan
from .table import _coerce, _columns

__all__ = ["add_cli", "cmd_sweep", "format_table", "parse_values", "spec_from_args"]


def parse_values(param: registry.Param | None, text: str, cast: Callable | None = None
                 ) -> list[Any]:
    """Values of a grid axis: ``a,b,c`` or ``geom:LOW:HIGH:N`` / ``lin:LOW:HIGH:N``."""
    text = text.strip()
    one = param.parse if param is not None else (cast or _coerce)
    head, _, rest = text.partition(":")
    if head in ("geom", "lin", "log") and rest:
        parts = rest.split(":")
        if len(parts) != 3:
            raise ValueError(f"range {text!r}: expected {head}:LOW:HIGH:N")
        lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
        if n < 1:
            raise ValueError(f"range {text!r}: N must be >= 1")
        if head == "lin":
            vals = np.linspace(lo, hi, n)
        else:
            if lo <= 0 or hi <= 0:
                raise ValueError(f"range {text!r}: a geometric range needs LOW, HIGH > 0")
            vals = np.geomspace(lo, hi, n)
        return [one(repr(float(v))) if (param is None or param.kind == "float")
                else one(str(round(v))) for v in vals]
    return [one(v.strip()) for v in text.split(",") if v.strip()]


def spec_from_args(args: argparse.Namespace) -> SweepSpec:
    """The :class:`SweepSpec` of parsed ``dualscope sweep`` arguments."""
    entry = registry.get(args.model)
    ds_name, ds = entry.dataset(args.dataset)
    grid = {k: parse_values(entry.param(k), v) for k, v in parse_pairs(args.grid, "--grid").items()}
    sizes = {}
    for k, v in parse_pairs(args.size, "--size").items():
        if k not in ds.sizes:
            raise ValueError(f"dataset {ds_name!r} has no size {k!r}; available: "
                             f"{list(ds.sizes)}")
        default = ds.sizes[k][0]
        cast = (lambda t: int(float(t))) if isinstance(default, int) else float
        sizes[k] = parse_values(None, v, cast=cast)
    fixed = {k: entry.param(k).parse(v) for k, v in parse_pairs(args.set, "--set").items()}
    seeds = [int(s) for s in str(args.seeds).split(",") if s.strip()]
    return SweepSpec(model=entry.name, grid=grid, sizes=sizes, seeds=seeds, dataset=ds_name,
                     fixed=fixed, cv=args.cv, path=args.path, descending=args.descending,
                     tol=args.tol, max_iter=args.max_iter, warm=not args.cold)


def format_table(rows: Sequence[Mapping[str, Any]], spec: SweepSpec) -> str:
    """A compact text table: the varying columns and the certificate."""
    if not rows:
        return "(no rows)"
    varying = [c for c in _columns(rows)
               if c not in CERTIFICATE and c not in ("key", "error", "chain", "step",
                                                       "path", "score_name", "score", "model")
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
    """``dualscope sweep MODEL``: run a sweep, print its table, write ``--out``."""
    try:
        return _cmd_sweep(args)
    except (ImportError, OSError) as exc:  # no dask / pyarrow; scheduler unreachable
        print(f"dualscope: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


def _cmd_sweep(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    chains = plan(spec)
    n = sum(len(c.keys) for c in chains)
    print(f"sweep {spec.model} on {spec.dataset}: {n} points in {len(chains)} chain(s)"
          + (f", warm-started along {chains[0].path}" if chains and chains[0].path else ""),
          flush=True)
    table = run(spec, backend=args.backend, workers=args.workers, scheduler=args.scheduler,
                out=args.out, resume=not args.no_resume, progress=not args.quiet)
    print(format_table(table, spec))
    errors = len(table.errors())
    print(f"{len(table)} rows, {sum(bool(r.get('converged')) for r in table)} converged, "
          f"{errors} error(s)" + (f"; wrote {args.out}" if args.out else ""))
    return 1 if errors else 0


def add_cli(subparsers: Any, models: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Register ``sweep`` on the ``dualscope`` sub-command parser."""
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
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=cmd_sweep)
    return s
