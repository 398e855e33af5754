"""The three backends behind one interface: ``imap(chains)`` yields each chain's rows.

``serial``
    in this process (rows stream point by point);
``processes``
    local worker processes (:class:`concurrent.futures.ProcessPoolExecutor`, forkserver);
``dask``
    a Dask distributed cluster: an existing scheduler (``tcp://host:port``), a
    :class:`distributed.Client`, or a ``LocalCluster`` started for the sweep (needs the
    ``distributed`` extra).

Every backend runs :func:`explorer.sweep.chain.run_chain`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any

from .. import registry
from .chain import iter_chain, run_chain
from .spec import Chain

__all__ = ["BACKENDS", "SMALL_GRID", "DaskBackend", "ProcessBackend", "SerialBackend",
           "make_backend"]

#: Backend names accepted by :func:`explorer.sweep.run` and the CLI.
BACKENDS = ("auto", "serial", "processes", "dask")
#: ``auto`` runs serially up to this many pending points (or when there is one chain).
SMALL_GRID = 8


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


