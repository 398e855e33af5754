"""Parameter sweeps: grids, warm-started paths and cross-validation, serial or scaled out.

A sweep is the Cartesian product of model parameter values, dataset sizes, data
seeds and (optionally) cross-validation folds. Points that differ only along one
continuous parameter (the *path* parameter) form a **chain**: they are solved in
order of that parameter on the same problem instance, each warm-started from the
previous result (``init=``). Chains are independent and run in parallel on one of
three backends behind one interface:

``serial``
    in this process (the default for small grids);
``processes``
    local worker processes (:class:`concurrent.futures.ProcessPoolExecutor`, all cores);
``dask``
    a Dask distributed cluster, either an existing scheduler (``scheduler="tcp://host:port"``)
    or a :class:`distributed.LocalCluster` started for the sweep. Needs the ``distributed``
    extra (``pip install "dualscope[distributed]"``).

Each chain is computed by the same function :func:`run_chain` with one BLAS thread, so a
chain gives bit-identical rows on every backend. Every row carries the certificate of its
solve (``primal``, ``dual``, ``gap``, ``rel_gap``, ``converged``, ``stop_reason``,
``n_iter``, ``time``, ``warm``) and the exact point (model, dataset, sizes, data seed,
fold and every model parameter); a point that fails becomes a row whose ``error`` column
holds ``"ExceptionType: message"``. Tables are written as CSV or Parquet (by extension)
and are resumable: rows already in the output (keyed by the exact point, ``key`` column)
are skipped; rows that failed are retried.

Per-model extras come from the model's sweep hooks (:class:`SweepHooks`, the ``HOOKS``
object of ``explorer.models.<name>.sweep``): a held-out :class:`Score`, a
cross-validation ``split`` and a ``structure`` summary (columns ``struct_<name>``).

The package, file by file:

``spec``
    :class:`SweepSpec` (what to sweep) and :func:`plan` (its chains and point keys);
``hooks``
    the :class:`SweepHooks` protocol of the per-model hooks and :func:`split_tasks`;
``chain``
    :func:`run_chain`, the execution of one chain (the function every backend runs);
``backends``
    the serial, processes and Dask backends and :func:`make_backend`;
``table``
    CSV / Parquet reading and writing, :class:`SweepTable`;
``guard``
    the cost guard of every sweep (:func:`guard_sweep`: points, sizes, workers at once);
``run``
    :func:`run` and :func:`iter_rows` (a backend, resume, ``out`` kept current);
``cli``
    ``dualscope sweep`` (:func:`add_cli`, :func:`parse_values`).

Example
-------
>>> from explorer import sweep
>>> spec = sweep.SweepSpec("wwsvm", grid={"C": [0.1, 1, 10]}, seeds=[0, 1],
...                        sizes={"n": [200]})
>>> table = sweep.run(spec, backend="serial", progress=False)   # doctest: +SKIP
"""

from __future__ import annotations

from .. import registry
from .backends import (
    BACKENDS,
    SMALL_GRID,
    TABLE,
    Backend,
    BackendKind,
    ClusterLostError,
    DaskBackend,
    ProcessBackend,
    SerialBackend,
    available,
    make_backend,
    solves_at_once,
)
from .chain import iter_chain, run_chain
from .cli import add_cli, cmd_sweep, format_table, parse_values, spec_from_args
from .guard import MAX_POINTS, CostError, SizeWarning, guard_sweep
from .hooks import NO_HOOKS, ModelHooks, Score, SweepHooks, hooks_of, split_tasks
from .run import iter_rows, run
from .spec import CERTIFICATE, SIZE_PREFIX, STRUCT_PREFIX, Chain, SweepSpec, plan, point_key
from .table import SweepTable, TableError, TableWarning, load_table, read_table, write_table

__all__ = [
    "BACKENDS", "CERTIFICATE", "MAX_POINTS", "NO_HOOKS", "SIZE_PREFIX", "SMALL_GRID",
    "STRUCT_PREFIX", "TABLE", "Backend", "BackendKind", "Chain", "ClusterLostError",
    "CostError", "DaskBackend", "ModelHooks", "ProcessBackend", "Score", "SerialBackend",
    "SizeWarning", "SweepHooks", "SweepSpec", "SweepTable", "TableError", "TableWarning",
    "add_cli", "available", "cmd_sweep", "format_table", "guard_sweep", "hooks_of",
    "iter_chain", "iter_rows", "load_table", "make_backend", "parse_values", "plan",
    "point_key", "read_table", "registry", "run", "run_chain", "solves_at_once",
    "spec_from_args", "split_tasks", "write_table"
]
