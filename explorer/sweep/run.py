"""Running a sweep: the pending chains on a backend, rows collected, ``out`` kept current."""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections.abc import Callable, Generator, Iterable
from pathlib import Path
from typing import Any

from ..outputs import OutputKind, guard_output
from .backends import ClusterLostError, make_backend
from .guard import check_points, guard_sweep
from .spec import Chain, SweepSpec, plan
from .table import SweepTable, TableError, TableWarning, load_table, write_table

__all__ = ["iter_rows", "run"]


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
              scheduler: Any = None, done: Iterable[str] = (), force: bool = False
              ) -> Generator[dict[str, Any], None, None]:
    """Rows of the pending points of ``spec`` as they finish (any order).

    ``done``: keys to skip. A chain whose first points are done restarts cold at its
    first pending point. Closing the generator cancels the work not yet started.

    Before any work (when called, not at the first row), the sweep passes the cost guard
    (:func:`~explorer.sweep.guard_sweep`: at most
    :data:`~explorer.sweep.MAX_POINTS` points, every size combination through the
    dataset's cost model, the memory counted for the backend's workers at once); it
    raises :class:`~explorer.sweep.CostError` (a ``ValueError``) unless ``force``.

    Parameters
    ----------
    spec : SweepSpec
        The sweep.
    backend, workers, scheduler
        As in :func:`run`.
    done : iterable of str
        The :func:`~explorer.sweep.point_key` of the points to skip.
    force : bool
        Run a sweep the cost guard refuses.

    Yields
    ------
    dict
        One row per point (as :func:`~explorer.sweep.iter_chain`).
    """
    check_points(spec, force=force)  # before planning: a plan holds every point
    chains = _pending(plan(spec), set(done))
    guard_sweep(spec, force=force, backend=backend, workers=workers, scheduler=scheduler,
                n_pending=sum(len(c.keys) for c in chains))
    return _stream(chains, backend, workers, scheduler)


def _pending(chains: list[Chain], done: set[str]) -> list[Chain]:
    out = []
    for c in chains:
        keep = [i for i, k in enumerate(c.keys) if k not in done]
        if not keep:
            continue
        if len(keep) < len(c.keys):
            first = keep[0]
            idx = [i for i in range(first, len(c.keys)) if c.keys[i] not in done]
            c = Chain(**{**c.__dict__, "points": tuple(c.points[i] for i in idx),
                         "keys": tuple(c.keys[i] for i in idx),
                         "steps": tuple(c.steps[i] for i in idx)})
        out.append(c)
    return out


def _stream(chains: list[Chain], backend: str | Any, workers: int | None, scheduler: Any
            ) -> Generator[dict[str, Any], None, None]:
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


#: A sweep table as an output kind (:mod:`explorer.outputs`): what ``load_table`` reads.
SWEEP_TABLE = OutputKind("a dualscope sweep table", load_table)


def _inputs(spec: SweepSpec) -> list[tuple[str, str | None]]:
    """The data files a sweep reads (a ``file:`` dataset and its test file)."""
    from ..datafiles import FILE_PREFIX, parse_file_spec

    if not str(spec.dataset).startswith(FILE_PREFIX):
        return []
    path, opts = parse_file_spec(str(spec.dataset))
    return [("--data", path), ("--test", opts.get("test"))]


def _previous_rows(out: Path, *, resume: bool, force: bool,
                   inputs: Iterable[tuple[str, str | None]] = ()) -> list[dict[str, Any]]:
    """The finished rows of ``out`` to keep (validated; each row dropped is a warning).

    ``out`` must not be an input and, if it exists, must be a sweep table
    (:func:`explorer.outputs.guard_output`; :class:`TableError` otherwise, unless
    ``force``)."""
    found = guard_output(out, kind=SWEEP_TABLE, inputs=inputs, force=force, option="--out",
                         error=TableError, warning=TableWarning)
    if found is None:
        return []
    for msg in found.dropped:
        warnings.warn(msg, TableWarning, stacklevel=3)
    return [r for r in found.rows if not r.get("error")] if resume else []


def run(spec: SweepSpec, *, backend: str | Any = "auto", workers: int | None = None,
        scheduler: Any = None, out: str | os.PathLike | None = None, resume: bool = True,
        progress: bool = True, should_stop: Callable[[], bool] | None = None,
        on_row: Callable[[dict[str, Any]], Any] | None = None,
        flush_every: float = 2.0, force: bool = False) -> SweepTable:
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
    force : bool
        Overwrite ``out`` even if it is not a dualscope sweep table (refused otherwise,
        with :class:`~explorer.sweep.TableError`, before any work), and run a sweep
        the cost guard refuses (see :func:`iter_rows`; refused otherwise, with
        :class:`~explorer.sweep.CostError`, a ``ValueError``, before any work).

    flush_every : float
        Seconds between two writes of ``out``.

    Returns
    -------
    SweepTable
        Every row of ``spec`` (those resumed from ``out`` included).

    Examples
    --------
    >>> from explorer.sweep import SweepSpec, run
    >>> spec = SweepSpec("wwsvm", grid={"C": [0.1, 1.0]}, sizes={"n": 30, "k": 3, "d": 3})
    >>> table = run(spec, backend="serial", progress=False)
    >>> [(row["C"], row["stop_reason"]) for row in table]
    [(0.1, 'converged'), (1.0, 'converged')]
    """
    check_points(spec, force=force)  # before planning: a plan holds every point
    chains = plan(spec)
    order = {k: (c.index, s) for c in chains for k, s in zip(c.keys, c.steps, strict=True)}
    previous = _previous_rows(Path(out), resume=resume, force=force,
                              inputs=_inputs(spec)) if out is not None else []
    done = {r["key"] for r in previous if r.get("key") in order}
    rows: dict[str, dict[str, Any]] = {r["key"]: r for r in previous if r.get("key")}
    pending = sum(1 for k in order if k not in done)

    def table() -> SweepTable:
        inside = sorted((r for k, r in rows.items() if k in order), key=lambda r: order[r["key"]])
        outside = [r for k, r in rows.items() if k not in order]
        return SweepTable(inside + outside)

    gen = iter_rows(spec, backend=backend, workers=workers, scheduler=scheduler, done=done,
                    force=force)
    bar = _Progress(pending, progress, f"sweep {spec.model}")
    last_flush = time.perf_counter()
    lost: ClusterLostError | None = None
    new = 0
    try:
        for row in gen:
            new += 1
            rows[row["key"]] = row
            bar.update(1)
            if on_row is not None:
                on_row(row)
            if out is not None and time.perf_counter() - last_flush > flush_every:
                write_table(table(), out)
                last_flush = time.perf_counter()
            if should_stop is not None and should_stop():
                break
    except ClusterLostError as exc:
        lost = exc
    finally:
        gen.close()
        bar.close()
        if out is not None and rows:
            write_table(table(), out)
    if lost is not None:
        finished = sum(1 for k in rows if k in order)
        if out is None:
            kept = (f"{new} row(s) had finished, but no output file was given: pass --out "
                    "FILE to make a sweep resumable")
        elif finished:
            kept = (f"the {finished} finished row(s) are kept in {out}; rerun the same "
                    "command to resume from them (with a live --scheduler, or another "
                    "--backend)")
        else:
            kept = ("no row had finished; rerun the same command once the scheduler is "
                    "back (or with another --backend)")
        raise ClusterLostError(f"{lost}; {kept}", lost.address) from None
    return table()


