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

Per-model extras come from the model's sweep hooks (:meth:`ModelEntry.hooks`): a
held-out ``score(problem, result)`` (named by ``SCORE``), a cross-validation
``split(problem, n_folds, fold, seed)`` and a ``structure(problem, result)`` summary
(dict, columns ``struct_<name>``).

Example
-------
>>> from explorer import sweep
>>> spec = sweep.SweepSpec("wwsvm", grid={"C": [0.1, 1, 10]}, seeds=[0, 1],
...                        sizes={"n": [200]})
>>> table = sweep.run(spec, backend="serial", progress=False)   # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import itertools
import json
import math
import os
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import registry

__all__ = [
    "BACKENDS", "CERTIFICATE", "Chain", "SweepSpec", "SweepTable", "add_cli", "iter_rows",
    "make_backend", "parse_values", "plan", "read_table", "run", "run_chain", "split_tasks",
    "write_table",
]

#: Backend names accepted by :func:`run` and the CLI.
BACKENDS = ("auto", "serial", "processes", "dask")
#: Certificate columns every row carries.
CERTIFICATE = ("primal", "dual", "gap", "rel_gap", "converged", "stop_reason", "n_iter",
               "time", "warm")
#: ``auto`` runs serially up to this many pending points (or when there is one chain).
SMALL_GRID = 8
SIZE_PREFIX = "size_"
STRUCT_PREFIX = "struct_"


# --------------------------------------------------------------------------- spec, plan

@dataclass(frozen=True)
class SweepSpec:
    """What to sweep.

    Attributes
    ----------
    model : str
        Registered model name.
    grid : Mapping[str, Sequence]
        Model parameter -> values (the axes of the grid). Parameters not listed take
        ``fixed`` values, else the model's defaults.
    sizes : Mapping[str, Sequence or scalar]
        Dataset size keyword -> value(s) (a list is an axis of the grid).
    seeds : Sequence[int]
        Data seeds (an axis).
    dataset : str, optional
        Dataset name (default: the model's first).
    fixed : Mapping[str, Any]
        Other model parameters held fixed.
    cv : int
        Number of cross-validation folds (0: none; needs the model's ``split`` hook).
        Folds are an axis; each fold is its own certified solve.
    path : str, optional
        The continuous parameter along which chains are warm-started (default: the
        first float parameter of ``grid`` with several values, preferring one on a log
        scale, i.e. a regularisation weight). ``""`` disables paths.
    descending : bool
        Solve chains from the largest path value down (e.g. a regularisation path
        from ``lambda_max``).
    tol, max_iter : optional
        Solver tolerance and iteration budget (default: the model's).
    warm : bool
        Warm-start along chains (False: every point cold, chains still ordered).
    """

    model: str
    grid: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    sizes: Mapping[str, Any] = field(default_factory=dict)
    seeds: Sequence[int] = (0,)
    dataset: str | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)
    cv: int = 0
    path: str | None = None
    descending: bool = False
    tol: float | None = None
    max_iter: int | None = None
    warm: bool = True


@dataclass(frozen=True)
class Chain:
    """One unit of work: points on one problem instance, solved in order (picklable)."""

    index: int
    model: str
    dataset: str
    sizes: Mapping[str, Any]
    seed: int
    fold: int | None
    cv: int
    points: tuple[Mapping[str, Any], ...]
    keys: tuple[str, ...]
    steps: tuple[int, ...]
    tol: float
    max_iter: int
    path: str | None
    warm: bool


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def point_key(model: str, dataset: str, sizes: Mapping[str, Any], seed: int,
              fold: int | None, cv: int, params: Mapping[str, Any], tol: float,
              max_iter: int) -> str:
    """The exact point as a canonical JSON string (the resume key)."""
    return json.dumps(
        {"model": model, "dataset": dataset, "sizes": {k: _jsonable(v) for k, v in sizes.items()},
         "seed": int(seed), "fold": fold, "cv": int(cv),
         "params": {k: _jsonable(v) for k, v in params.items()},
         "tol": float(tol), "max_iter": int(max_iter)},
        sort_keys=True, default=repr)


def _as_list(v: Any) -> list[Any]:
    if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
        return [v]
    return list(v)


def _path_param(entry: registry.ModelEntry, spec: SweepSpec) -> str | None:
    if spec.path == "":
        return None
    if spec.path is not None:
        if spec.path not in spec.grid:
            raise ValueError(f"path parameter {spec.path!r} is not an axis of the grid "
                             f"(axes: {list(spec.grid)})")
        entry.param(spec.path)
        return spec.path
    axes = [name for name, values in spec.grid.items()
            if entry.param(name).kind == "float" and len(_as_list(values)) > 1]
    # prefer a parameter that spans decades (a regularisation weight) over a shape parameter
    logs = [name for name in axes if entry.param(name).log]
    return (logs or axes or [None])[0]


def _sort_value(v: Any) -> tuple[int, Any]:
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


def _cast_like(default: Any, v: Any) -> Any:
    """A size value with the type of its default (so ``n=60`` and ``n=60.0`` are one point)."""
    if isinstance(default, bool) or not isinstance(v, (int, float, np.number)):
        return v
    if isinstance(default, int):
        return int(v) if float(v).is_integer() else float(v)
    if isinstance(default, float):
        return float(v)
    return v


def _cast_param(p: registry.Param, v: Any) -> Any:
    """A grid value in the parameter's kind (``C=1`` and ``C=1.0`` are one point)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if p.kind == "float" and isinstance(v, (int, float, np.number)):
        return float(v)
    if p.kind == "int" and isinstance(v, (int, np.integer)):
        return int(v)
    return _jsonable(v)


def plan(spec: SweepSpec) -> list[Chain]:
    """The chains of a sweep, in a deterministic order (raises on unknown names)."""
    entry = registry.get(spec.model)
    ds_name, ds = entry.dataset(spec.dataset)
    for name in list(spec.grid) + list(spec.fixed):
        entry.param(name)  # KeyError naming the available parameters
    for name in spec.sizes:
        if name not in ds.sizes:
            raise ValueError(f"dataset {ds_name!r} has no size {name!r}; "
                             f"available: {list(ds.sizes)}")
    overlap = set(spec.grid) & set(spec.fixed)
    if overlap:
        raise ValueError(f"parameter(s) {sorted(overlap)} both on the grid and fixed")
    if spec.cv:
        if int(spec.cv) < 2:
            raise ValueError(f"cv must be 0 (none) or at least 2 folds, got {spec.cv}")
        hooks = entry.hooks()
        if hooks is None or not hasattr(hooks, "split"):
            raise ValueError(f"model {entry.name} has no cross-validation split; its held-out "
                             "score (if any) uses the dataset's own test split")
    seeds = [int(s) for s in _as_list(spec.seeds)] or [0]
    tol = float(spec.tol if spec.tol is not None else entry.tol)
    max_iter = int(spec.max_iter if spec.max_iter is not None else entry.max_iter)
    path = _path_param(entry, spec)

    base_sizes = {k: v[0] for k, v in ds.sizes.items()}
    size_axes = {k: [_cast_like(base_sizes[k], x) for x in _as_list(v)]
                 for k, v in spec.sizes.items()}
    grid_axes = {k: [_cast_param(entry.param(k), x) for x in _as_list(v)]
                 for k, v in spec.grid.items()}
    other = {k: v for k, v in grid_axes.items() if k != path}
    path_values = sorted(grid_axes[path], key=_sort_value, reverse=spec.descending) \
        if path else [None]
    defaults = entry.default_params()
    fixed_params = {k: _cast_param(entry.param(k), v) for k, v in spec.fixed.items()}
    folds: list[int | None] = list(range(int(spec.cv))) if spec.cv else [None]

    chains: list[Chain] = []
    for size_combo in itertools.product(*size_axes.values()):
        sizes = dict(base_sizes, **dict(zip(size_axes, size_combo, strict=True)))
        for seed in seeds:
            for fold in folds:
                for combo in itertools.product(*other.values()):
                    fixed = dict(defaults, **fixed_params,
                                 **dict(zip(other, combo, strict=True)))
                    points, keys, steps = [], [], []
                    for step, pv in enumerate(path_values):
                        params = dict(fixed) if path is None else dict(fixed, **{path: pv})
                        points.append(params)
                        keys.append(point_key(entry.name, ds_name, sizes, seed, fold,
                                              int(spec.cv), params, tol, max_iter))
                        steps.append(step)
                    chains.append(Chain(
                        index=len(chains), model=entry.name, dataset=ds_name, sizes=sizes,
                        seed=seed, fold=fold, cv=int(spec.cv), points=tuple(points),
                        keys=tuple(keys), steps=tuple(steps), tol=tol, max_iter=max_iter,
                        path=path, warm=bool(spec.warm)))
    return chains


# --------------------------------------------------------------------------- one chain

def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().strip("'\"")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _base_row(chain: Chain, i: int) -> dict[str, Any]:
    row: dict[str, Any] = {"model": chain.model, "dataset": chain.dataset,
                           "data_seed": chain.seed, "fold": chain.fold}
    for k, v in chain.sizes.items():
        row[SIZE_PREFIX + k] = _jsonable(v)
    for k, v in chain.points[i].items():
        row[k] = _jsonable(v)
    row.update(tol=chain.tol, max_iter=chain.max_iter, chain=chain.index,
               step=chain.steps[i], path=chain.path or "")
    for k in CERTIFICATE:
        row[k] = None
    row.update(score_name=None, score=None, error=None, key=chain.keys[i])
    return row


def iter_chain(chain: Chain) -> Iterator[dict[str, Any]]:
    """Solve the points of ``chain`` in order, warm-starting each from the last success.

    Yields one row per point. Never raises for a failing point: its row carries the
    error. BLAS runs single-threaded so that the arithmetic, hence every objective,
    is the same on every backend.
    """
    from solvers._blas import single_threaded_blas
    from solvers.base import ConvergenceWarning

    entry = registry.get(chain.model)
    hooks = entry.hooks()
    problem = None
    try:
        problem = entry.datasets[chain.dataset](seed=chain.seed, **chain.sizes)
        if chain.fold is not None:
            problem = hooks.split(problem, chain.cv, chain.fold, seed=chain.seed)
    except Exception as exc:  # the data cannot be built: every point says why
        for i in range(len(chain.points)):
            row = _base_row(chain, i)
            row["error"] = _error_text(exc)
            yield row
        return
    previous = None
    for i, params in enumerate(chain.points):
        row = _base_row(chain, i)
        init = previous if chain.warm else None
        try:
            # the row's converged / stop_reason say what the warning would say; the
            # warnings filters are process-global, so only the main thread touches them
            # (Dask runs tasks in worker threads)
            with _quiet(ConvergenceWarning), single_threaded_blas():
                res = _solve(entry, problem, chain, params, init)
            if isinstance(res, tuple):
                res, init = res
            row.update(primal=float(res.primal), dual=float(res.dual), gap=float(res.gap),
                       rel_gap=float(res.rel_gap), converged=bool(res.converged),
                       stop_reason=str(res.stop_reason), n_iter=int(res.n_iter),
                       time=float(res.time), warm=init is not None)
            previous = res
            _extras(hooks, problem, res, row)
        except Exception as exc:
            row["error"] = _error_text(exc)
            row["warm"] = init is not None
        yield row


@contextlib.contextmanager
def _quiet(category: type[Warning]) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        yield


def _solve(entry, problem, chain: Chain, params, init):
    from solvers.base import IncompatibleWarmStart

    try:
        return entry.solve(problem, tol=chain.tol, max_iter=chain.max_iter, init=init,
                           **params)
    except IncompatibleWarmStart:
        if init is None:
            raise
        return entry.solve(problem, tol=chain.tol, max_iter=chain.max_iter, init=None,
                           **params), None


def _extras(hooks: Any, problem: Any, res: Any, row: dict[str, Any]) -> None:
    if hooks is None:
        return
    if hasattr(hooks, "score"):
        value = hooks.score(problem, res)
        name = getattr(hooks, "SCORE", "score")
        if isinstance(value, tuple):  # (name, value): the score depends on the point
            name, value = value
        if value is not None:
            row["score_name"] = name
            row["score"] = float(value)
    if hasattr(hooks, "structure"):
        for k, v in hooks.structure(problem, res).items():
            row[STRUCT_PREFIX + k] = _jsonable(v)


def run_chain(chain: Chain) -> list[dict[str, Any]]:
    """All rows of ``chain`` (the function every backend runs)."""
    return list(iter_chain(chain))


def split_tasks(problem: Any, n_folds: int, fold: int, seed: int = 0) -> Any:
    """Cross-validation fold of a multitask problem (``data = {"Xs": [...], "ys": [...]}``).

    Each task's rows are shuffled (``seed``) and cut into ``n_folds`` parts; part ``fold``
    is held out. The training rows stay in ``data``; the held-out rows go to
    ``info["Xs_test"]`` / ``info["ys_test"]``. Per-task arrays in ``info`` with one entry
    per row (e.g. sign targets) are split the same way (``info[key + "_test"]``).
    Sweep hooks of multitask models call this from their ``split``.
    """
    from dataclasses import replace

    Xs, ys = problem.data["Xs"], problem.data["ys"]
    rng = np.random.default_rng(seed)
    parts = []
    for X in Xs:
        order = rng.permutation(np.asarray(X).shape[0])
        test = np.sort(np.array_split(order, n_folds)[fold])
        parts.append((np.setdiff1d(np.arange(order.size), test), test))

    def cut(arrays):
        return ([np.asarray(a)[tr] for a, (tr, _) in zip(arrays, parts, strict=True)],
                [np.asarray(a)[te] for a, (_, te) in zip(arrays, parts, strict=True)])

    Xtr, Xte = cut(Xs)
    ytr, yte = cut(ys)
    info = dict(problem.info, Xs_test=Xte, ys_test=yte)
    for key, value in problem.info.items():
        if (isinstance(value, (list, tuple)) and len(value) == len(Xs)
                and all(np.ndim(v) >= 1 and np.shape(v)[0] == np.shape(X)[0]
                        for v, X in zip(value, Xs, strict=True))):
            info[key], info[key + "_test"] = cut(value)
    return replace(problem, data=dict(problem.data, Xs=Xtr, ys=ytr), info=info,
                   description=f"{problem.description} (fold {fold + 1}/{n_folds})")


# --------------------------------------------------------------------------- backends

class SerialBackend:
    """In this process, one point at a time (rows stream as each point finishes)."""

    name = "serial"
    workers = 1

    def imap(self, chains: Sequence[Chain]) -> Iterator[list[dict[str, Any]]]:
        for chain in chains:
            for row in iter_chain(chain):
                yield [row]

    def close(self) -> None:
        pass


@contextlib.contextmanager
def _main_not_needed() -> Iterator[None]:
    """Hide ``__main__`` from ``multiprocessing`` while worker processes start.

    forkserver/spawn children re-import the parent's main module unless it is guarded;
    inside Streamlit ``__main__`` is the app script itself, so every worker would run the
    page. The work sent to workers lives in this module and never needs ``__main__``.
    """
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _preload() -> list[str]:
    """Modules the forkserver imports once for all workers: this one, the model packages
    and the solver modules this process has loaded (seconds per worker otherwise)."""
    registry.entries()
    names = ["explorer.sweep"]
    for name in sorted(sys.modules):
        parts = name.split(".")
        if (parts[:2] == ["explorer", "models"] and len(parts) == 3) or (
                parts[0] == "solvers" and len(parts) == 2 and not parts[1].startswith("_")):
            names.append(name)
    return names


class ProcessBackend:
    """Local worker processes (:class:`~concurrent.futures.ProcessPoolExecutor`)."""

    name = "processes"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = int(workers or os.cpu_count() or 1)
        self._pool = None

    def imap(self, chains: Sequence[Chain]) -> Iterator[list[dict[str, Any]]]:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        if not chains:
            return
        # forkserver: no fork of a threaded parent (Streamlit, Dask), cheaper than spawn
        # The server preloads this module, so workers start with it imported.
        if "forkserver" in mp.get_all_start_methods():
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(_preload())
        else:  # pragma: no cover - platforms without forkserver
            ctx = mp.get_context("spawn")
        self._pool = ProcessPoolExecutor(max_workers=min(self.workers, len(chains)),
                                         mp_context=ctx)
        with _main_not_needed():  # workers start (synchronously) during submit
            futures = [self._pool.submit(run_chain, c) for c in chains]
        try:
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class DaskBackend:
    """Dask distributed: ``client.submit`` per chain, results ``as_completed``.

    ``scheduler``: address of an existing scheduler (``tcp://host:port``), or a
    :class:`distributed.Client` to use as is; None starts a ``LocalCluster`` on the
    loopback interface with ``workers`` single-threaded workers (``processes=False``:
    threads in this process) for the duration of the sweep.
    """

    name = "dask"

    def __init__(self, scheduler: Any = None, workers: int | None = None,
                 processes: bool = True) -> None:
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise ImportError('the dask backend needs the distributed extra: '
                              'pip install "dualscope[distributed]"') from exc
        self.scheduler = scheduler
        self.workers = int(workers or os.cpu_count() or 1)
        self.processes = processes
        self._client = None
        self._own: list[Any] = []
        self._futures: list[Any] = []

    def client(self) -> Any:
        from distributed import Client, LocalCluster

        if self._client is None:
            if self.scheduler is None:
                # loopback only; processes=False communicates in-process (inproc://)
                where = {"host": "127.0.0.1"} if self.processes else {}
                with _main_not_needed():
                    cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                           processes=self.processes, dashboard_address=None,
                                           **where)
                self._own.append(cluster)
                self._client = Client(cluster)
                self._own.insert(0, self._client)
            elif isinstance(self.scheduler, str):
                self._client = Client(self.scheduler, timeout=15)
                self._own.append(self._client)
            else:
                self._client = self.scheduler
        return self._client

    def imap(self, chains: Sequence[Chain]) -> Iterator[list[dict[str, Any]]]:
        from distributed import as_completed

        if not chains:
            return
        client = self.client()
        self._futures = [client.submit(run_chain, c, pure=False) for c in chains]
        try:
            for fut in as_completed(self._futures):
                yield fut.result()
        finally:
            self.close()

    def close(self) -> None:
        for fut in self._futures:
            fut.cancel()
        self._futures = []
        for obj in self._own:
            with contextlib.suppress(Exception):
                obj.close()
        self._own = []
        self._client = None


def make_backend(backend: str | Any = "auto", *, workers: int | None = None,
                 scheduler: Any = None, n_pending: int = 0, n_chains: int = 0) -> Any:
    """A backend object from a name (``auto``: serial for small grids, else processes)."""
    if not isinstance(backend, str):
        return backend
    if scheduler is not None and backend in ("auto", "dask"):
        return DaskBackend(scheduler, workers)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    if scheduler is not None:
        raise ValueError("a scheduler address needs the dask backend")
    if backend == "auto":
        backend = "serial" if (n_pending <= SMALL_GRID or n_chains <= 1
                               or (workers or os.cpu_count() or 1) <= 1) else "processes"
    if backend == "serial":
        return SerialBackend()
    if backend == "processes":
        return ProcessBackend(workers)
    return DaskBackend(None, workers)


# --------------------------------------------------------------------------- tables

def _coerce(text: str) -> Any:
    if text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    cols: dict[str, None] = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, None)
    # certificate and bookkeeping last, in a fixed order
    tail = [*CERTIFICATE, "score_name", "score"]
    struct = [c for c in cols if c.startswith(STRUCT_PREFIX)]
    end = ["error", "key"]
    head = [c for c in cols if c not in tail and c not in end and c not in struct]
    return head + [c for c in tail if c in cols] + struct + [c for c in end if c in cols]


def read_table(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of a sweep table written by :func:`write_table` (CSV or Parquet)."""
    path = Path(path)
    if path.suffix.lower() in (".parquet", ".pq"):
        pq = _pyarrow()
        return pq.read_table(path).to_pylist()
    with path.open(newline="", encoding="utf-8") as fh:
        return [{k: _coerce(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def _pyarrow():
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("writing or reading Parquet needs pyarrow (pip install pyarrow); "
                          "or use a .csv output") from exc
    return pq


def write_table(rows: Sequence[Mapping[str, Any]], path: str | os.PathLike) -> None:
    """Write rows as CSV (exact float repr) or Parquet (``.parquet``), atomically."""
    path = Path(path)
    cols = _columns(rows)
    tmp = path.with_name(path.name + ".tmp")
    if path.suffix.lower() in (".parquet", ".pq"):
        pq = _pyarrow()
        import pyarrow as pa

        data = {}
        for c in cols:
            vals = [r.get(c) for r in rows]
            kinds = {type(v) for v in vals if v is not None}
            if kinds <= {int, float} and float in kinds:
                vals = [None if v is None else float(v) for v in vals]
            elif len(kinds) > 1:
                vals = [None if v is None else _fmt(v) for v in vals]
            data[c] = vals
        pq.write_table(pa.table(data), tmp)
    else:
        with tmp.open("w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(cols)
            for r in rows:
                w.writerow([_fmt(r.get(c)) for c in cols])
    os.replace(tmp, path)


class SweepTable(list):
    """The rows of a sweep (a list of dicts) with conveniences."""

    def ok(self) -> SweepTable:
        """Rows without error."""
        return SweepTable(r for r in self if not r.get("error"))

    def errors(self) -> SweepTable:
        return SweepTable(r for r in self if r.get("error"))

    def to_frame(self):
        """A pandas DataFrame (pandas needed)."""
        import pandas as pd

        return pd.DataFrame(list(self), columns=_columns(self))


# --------------------------------------------------------------------------- running

class _Progress:
    def __init__(self, total: int, enabled: bool, desc: str) -> None:
        self.total, self.done, self.enabled = total, 0, enabled and total > 0
        self._bar = None
        self._last = 0.0
        if self.enabled:
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(total=total, desc=desc, unit="row", file=sys.stderr)
            except ImportError:
                self._t0 = time.perf_counter()

    def update(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.perf_counter()
        if now - self._last > 0.5 or self.done == self.total:
            self._last = now
            print(f"\r{self.done}/{self.total} rows ({now - self._t0:.1f} s)", end="",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            print(file=sys.stderr)


def iter_rows(spec: SweepSpec, *, backend: str | Any = "auto", workers: int | None = None,
              scheduler: Any = None, done: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
    """Rows of the pending points of ``spec`` as they finish (any order).

    ``done``: keys to skip. A chain whose first points are done restarts cold at its
    first pending point. Closing the generator cancels the work not yet started.
    """
    done = set(done)
    chains = []
    for c in plan(spec):
        keep = [i for i, k in enumerate(c.keys) if k not in done]
        if not keep:
            continue
        if len(keep) < len(c.keys):
            first = keep[0]
            idx = [i for i in range(first, len(c.keys)) if c.keys[i] not in done]
            c = Chain(**{**c.__dict__, "points": tuple(c.points[i] for i in idx),
                         "keys": tuple(c.keys[i] for i in idx),
                         "steps": tuple(c.steps[i] for i in idx)})
        chains.append(c)
    n_pending = sum(len(c.keys) for c in chains)
    be = make_backend(backend, workers=workers, scheduler=scheduler, n_pending=n_pending,
                      n_chains=len(chains))
    gen = be.imap(chains)
    try:
        for rows in gen:
            yield from rows
    finally:
        gen.close()
        be.close()


def run(spec: SweepSpec, *, backend: str | Any = "auto", workers: int | None = None,
        scheduler: Any = None, out: str | os.PathLike | None = None, resume: bool = True,
        progress: bool = True, should_stop: Callable[[], bool] | None = None,
        on_row: Callable[[dict[str, Any]], Any] | None = None,
        flush_every: float = 2.0) -> SweepTable:
    """Run a sweep and return its table in plan order (chain, step).

    Parameters
    ----------
    spec : SweepSpec
    backend : {"auto", "serial", "processes", "dask"} or a backend object
    workers : int, optional
        Local processes / LocalCluster workers (default: all cores).
    scheduler : str or distributed.Client, optional
        An existing Dask scheduler (implies the dask backend).
    out : path, optional
        ``.csv`` or ``.parquet``: written as rows arrive (atomically) and at the end.
    resume : bool
        Skip the points already in ``out`` without error (keyed by the exact point).
    progress : bool
        A progress bar over rows on stderr.
    should_stop : callable, optional
        Polled as rows arrive; True cancels the remaining work (rows so far are kept).
    on_row : callable, optional
        Called with every new row.
    """
    chains = plan(spec)
    order = {k: (c.index, s) for c in chains for k, s in zip(c.keys, c.steps, strict=True)}
    previous: list[dict[str, Any]] = []
    if out is not None and resume and Path(out).exists():
        previous = [r for r in read_table(out) if not r.get("error")]
    done = {r["key"] for r in previous if r.get("key") in order}
    rows: dict[str, dict[str, Any]] = {r["key"]: r for r in previous if r.get("key")}
    pending = sum(1 for k in order if k not in done)
    bar = _Progress(pending, progress, f"sweep {spec.model}")
    last_flush = time.perf_counter()

    def table() -> SweepTable:
        inside = sorted((r for k, r in rows.items() if k in order), key=lambda r: order[r["key"]])
        outside = [r for k, r in rows.items() if k not in order]
        return SweepTable(inside + outside)

    gen = iter_rows(spec, backend=backend, workers=workers, scheduler=scheduler, done=done)
    try:
        for row in gen:
            rows[row["key"]] = row
            bar.update(1)
            if on_row is not None:
                on_row(row)
            if out is not None and time.perf_counter() - last_flush > flush_every:
                write_table(table(), out)
                last_flush = time.perf_counter()
            if should_stop is not None and should_stop():
                break
    finally:
        gen.close()
        bar.close()
        if out is not None and rows:
            write_table(table(), out)
    return table()


# --------------------------------------------------------------------------- values, CLI

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


def _pairs(items: list[str] | None, what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{what} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def spec_from_args(args: argparse.Namespace) -> SweepSpec:
    """The :class:`SweepSpec` of parsed ``dualscope sweep`` arguments."""
    entry = registry.get(args.model)
    ds_name, ds = entry.dataset(args.dataset)
    grid = {k: parse_values(entry.param(k), v) for k, v in _pairs(args.grid, "--grid").items()}
    sizes = {}
    for k, v in _pairs(args.size, "--size").items():
        if k not in ds.sizes:
            raise ValueError(f"dataset {ds_name!r} has no size {k!r}; available: "
                             f"{list(ds.sizes)}")
        default = ds.sizes[k][0]
        cast = (lambda t: int(float(t))) if isinstance(default, int) else float
        sizes[k] = parse_values(None, v, cast=cast)
    fixed = {k: entry.param(k).parse(v) for k, v in _pairs(args.set, "--set").items()}
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
