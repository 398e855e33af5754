"""The ``dualscope`` command line.

Subcommands::

    dualscope app [--port N]                 launch the dashboard
    dualscope list                           models, datasets and parameters
    dualscope solve MODEL [options]          solve once, print the gap history
    dualscope check MODEL [options]          solve and cross-check against cvxpy
    dualscope bench MODEL [--quick]          the model's benchmark table

Options of ``solve`` / ``check``: ``--dataset NAME``, ``--size KEY=VALUE``
(repeatable), ``--set PARAM=VALUE`` (repeatable), ``--seed``, ``--tol``,
``--max-iter``, ``--json PATH``. Models plug in through
:mod:`explorer.registry`; this file never names one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from . import registry

__all__ = ["main"]


def _err(msg: str) -> None:
    print(f"dualscope: {msg}", file=sys.stderr)


def _parse_pairs(pairs: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{what} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _build(entry: registry.ModelEntry, args: argparse.Namespace
           ) -> tuple[registry.Problem, dict[str, Any]]:
    ds_name = args.dataset or entry.default_dataset
    if ds_name not in entry.datasets:
        raise ValueError(f"model {entry.name} has no dataset {ds_name!r}; "
                         f"available: {list(entry.datasets)}")
    ds = entry.datasets[ds_name]
    sizes = {}
    for key, text in _parse_pairs(args.size, "--size").items():
        if key not in ds.sizes:
            raise ValueError(f"dataset {ds_name!r} has no size {key!r}; available: "
                             f"{list(ds.sizes)}")
        default = ds.sizes[key][0]
        sizes[key] = type(default)(float(text)) if isinstance(default, int) else float(text)
    problem = ds(seed=args.seed, **sizes)
    params = entry.default_params()
    for key, text in _parse_pairs(args.set, "--set").items():
        params[key] = entry.param(key).parse(text)
    return problem, params


def _progress_printer(quiet: bool):
    state = {"last": -math.inf, "count": 0}

    def cb(s) -> None:
        state["count"] += 1
        now = time.perf_counter()
        if quiet:
            return
        if state["count"] <= 5 or now - state["last"] >= 0.5:
            state["last"] = now
            print(f"{s.iteration:>7d} {s.time:>9.3f} {s.primal:>16.9g} {s.dual:>16.9g} "
                  f"{s.gap:>11.3e} {s.rel_gap:>11.3e}", flush=True)

    return cb


def _header() -> None:
    print(f"{'iter':>7} {'time[s]':>9} {'primal':>16} {'dual':>16} {'gap':>11} {'rel_gap':>11}")


def _summary(res) -> None:
    h = res.history
    print(f"{res.n_iter:>7d} {res.time:>9.3f} {res.primal:>16.9g} {res.dual:>16.9g} "
          f"{res.gap:>11.3e} {res.rel_gap:>11.3e}   (final)")
    status = "converged" if res.converged else "NOT converged"
    print(f"{status}: {res.n_iter} iterations in {res.time:.3f} s, method={res.method}, "
          f"certified gap {res.gap:.3e} (relative {res.rel_gap:.2e}); "
          f"{len(h)} history rows")


def cmd_solve(args: argparse.Namespace, *, check: bool = False) -> int:
    entry = registry.get(args.model)
    problem, params = _build(entry, args)
    tol = args.tol if args.tol is not None else (min(entry.tol, 1e-8) if check else entry.tol)
    max_iter = args.max_iter if args.max_iter is not None else entry.max_iter * (
        10 if check else 1)
    print(f"{entry.title} on {problem.name}: {problem.description}")
    print("parameters: " + ", ".join(f"{k}={v}" for k, v in params.items())
          + f", tol={tol:g}, max_iter={max_iter}")
    if check:
        refusal = entry.reference_refusal(problem)
        if refusal:
            _err(refusal)
            return 2
    _header()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = entry.solve(problem, tol=tol, max_iter=max_iter,
                          callback=_progress_printer(args.quiet), **params)
    for w in caught:
        _err(f"warning: {w.message}")
    _summary(res)
    out: dict[str, Any] = {
        "model": entry.name, "dataset": problem.name, "description": problem.description,
        "seed": args.seed, "tol": tol, "max_iter": max_iter, "params": params,
        "result": res.to_dict(),
    }
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
        Path(args.json).write_text(json.dumps(out, indent=2, default=str), encoding="utf-8")
        print(f"wrote {args.json}")
    return code


def cmd_bench(args: argparse.Namespace) -> int:
    entry = registry.get(args.model)
    t0 = time.perf_counter()

    def progress(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = entry.run_bench(quick=args.quick, progress=progress)
    print(report.to_markdown())
    if args.json:
        report.write_json(args.json)
        print(f"\nwrote {args.json}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for e in registry.entries():
        print(f"{e.name}: {e.title}")
        print("  datasets: " + ", ".join(
            f"{d.name}({', '.join(f'{k}={v[0]}' for k, v in d.sizes.items())})"
            for d in e.datasets.values()))
        print("  params:   " + ", ".join(
            f"{p.name}={p.default}" + (f" {list(p.choices)}" if p.choices else "")
            for p in e.params))
    return 0


def app_path() -> Path:
    """The Streamlit script inside the installed package."""
    return Path(__file__).resolve().parent / "app_main.py"


def cmd_app(args: argparse.Namespace) -> int:
    try:
        import plotly  # noqa: F401
        import streamlit  # noqa: F401
    except ImportError:
        _err('the dashboard needs the app extra: pip install "dualscope[app]"')
        return 2
    # explorer.serve = `streamlit run app_main.py` with the kernels warming from the start
    cmd = [sys.executable, "-m", "explorer.serve",
           "--server.port", str(args.port), "--browser.gatherUsageStats", "false"]
    if args.headless:
        cmd += ["--server.headless", "true"]
    print("starting: " + " ".join(cmd), flush=True)
    env = dict(os.environ)
    return subprocess.call(cmd, env=env)


def make_parser() -> argparse.ArgumentParser:
    models = [e.name for e in registry.entries()]
    p = argparse.ArgumentParser(
        prog="dualscope",
        description="Certified solvers for structured convex learning models, "
                    "with a live dashboard.")
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("app", help="launch the Streamlit dashboard")
    a.add_argument("--port", type=int, default=8501)
    a.add_argument("--headless", action="store_true", help="do not open a browser")
    a.set_defaults(func=cmd_app)

    w = sub.add_parser("warmup", help="compile every model's numba kernels (once, after install)")
    w.set_defaults(func=lambda ns: __import__("explorer.warmup", fromlist=["main"]).main([]))

    lst = sub.add_parser("list", help="models, datasets and parameters")
    lst.set_defaults(func=cmd_list)

    for name, helptext in (("solve", "solve one model on a dataset, print the gap history"),
                           ("check", "solve and cross-check against the cvxpy reference")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("model", choices=models)
        s.add_argument("--dataset", help="dataset name (see `dualscope list`)")
        s.add_argument("--size", action="append", metavar="KEY=VALUE",
                       help="dataset size parameter, e.g. n=500 (repeatable)")
        s.add_argument("--set", action="append", metavar="PARAM=VALUE",
                       help="model parameter, e.g. C=0.5 (repeatable)")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--tol", type=float, default=None)
        s.add_argument("--max-iter", type=int, default=None)
        s.add_argument("--json", metavar="PATH", help="write parameters + history as JSON")
        s.add_argument("--quiet", action="store_true", help="only the final summary")
        s.set_defaults(func=cmd_solve if name == "solve" else
                       (lambda ns: cmd_solve(ns, check=True)))

    b = sub.add_parser("bench", help="benchmark: vs cvxpy and vs the paper's baseline")
    b.add_argument("model", choices=models)
    b.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    b.add_argument("--json", metavar="PATH", help="write the tables as JSON")
    b.set_defaults(func=cmd_bench)

    from . import sweep  # the sweep sub-command lives in explorer/sweep.py

    sweep.add_cli(sub, models)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError, KeyError) as exc:
        _err(str(exc).strip("'\""))
        return 2
    except KeyboardInterrupt:
        _err("interrupted")
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
