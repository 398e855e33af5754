"""The three backends behind one interface: ``imap(chains)`` yields each chain's rows.

``serial``
    in this process (rows stream point by point);
``processes``
    local worker processes (:class:`concurrent.futures.ProcessPoolExecutor`, forkserver);
``dask``
    a Dask distributed cluster: an existing scheduler (``tcp://host:port``), a
    :class:`distributed.Client`, or a ``LocalCluster`` started for the sweep (needs the
    ``distributed`` extra).

Every backend runs :func:`explorer.sweep.run_chain`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import types
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .. import registry
from .chain import iter_chain, run_chain
from .spec import Chain

__all__ = ["BACKENDS", "SMALL_GRID", "TABLE", "Backend", "BackendKind", "ClusterLostError",
           "DaskBackend", "ProcessBackend", "SerialBackend", "available", "helper_pids",
           "make_backend", "solves_at_once", "stop_helpers"]


@runtime_checkable
class Backend(Protocol):
    """What a sweep runs its chains on.

    ``name`` names it in the table's ``backend`` column and messages; ``workers`` is how
    many chains it solves at once on this machine (the memory guard's factor);
    ``imap(chains)`` yields each chain's rows (a list of dicts) as the chain finishes, in
    any order; ``close()`` releases what it started (workers, clusters).
    """

    name: str
    workers: int

    def imap(self, chains: Sequence[Chain]) -> Generator[list[dict[str, Any]], None, None]: ...

    def close(self) -> None: ...
#: ``auto`` runs serially up to this many pending points (or when there is one chain).
SMALL_GRID = 8
#: Seconds a Dask cluster may have no worker before the sweep gives up on it.
NO_WORKER_GRACE = 60.0


class ClusterLostError(ConnectionError):
    """The Dask scheduler, or every worker, went away during a sweep.

    ``address`` names the scheduler. The rows finished before are kept by
    :func:`explorer.sweep.run` (written to ``out``); rerunning resumes from them.
    """

    def __init__(self, message: str, address: str) -> None:
        super().__init__(message)
        self.address = address


class SerialBackend:
    """In this process, one point at a time (rows stream as each point finishes)."""

    name = "serial"
    workers = 1

    def imap(self, chains: Sequence[Chain]) -> Generator[list[dict[str, Any]], None, None]:
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
    """Local worker processes (:class:`~concurrent.futures.ProcessPoolExecutor`).

    Parameters
    ----------
    workers : int, optional
        The number of processes (default: the number of cores).
    """

    name = "processes"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = int(workers or os.cpu_count() or 1)
        self._pool: Any = None

    def imap(self, chains: Sequence[Chain]) -> Generator[list[dict[str, Any]], None, None]:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        if not chains:
            return
        # forkserver: no fork of a threaded parent (Streamlit, Dask), cheaper than spawn
        # The server preloads this module, so workers start with it imported.
        ctx: Any
        if "forkserver" in mp.get_all_start_methods():
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(_preload())
        else:  # pragma: no cover - platforms without forkserver
            ctx = mp.get_context("spawn")
        self._pool = ProcessPoolExecutor(max_workers=min(self.workers, len(chains)),
                                         mp_context=ctx, initializer=_worker_init)
        finished = False
        try:
            with _main_not_needed():  # workers start (synchronously) during submit
                futures = [self._pool.submit(run_chain, c) for c in chains]
            for fut in as_completed(futures):
                yield fut.result()
            finished = True
        finally:
            # stopped early (Ctrl-C, SIGTERM, an error, the consumer closing us): the
            # running chains are ended now, not waited for at the interpreter's exit
            self.close() if finished else self.terminate()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def terminate(self, grace: float = 1.0) -> None:
        """Cancel the pending chains and end the worker processes: SIGTERM, then SIGKILL
        after ``grace`` seconds; returns once they are gone (a few seconds at most)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            with contextlib.suppress(Exception):
                p.terminate()
        deadline = time.monotonic() + grace
        for p in procs:
            with contextlib.suppress(Exception):
                p.join(max(0.0, deadline - time.monotonic()))
                if p.is_alive():
                    p.kill()
                    p.join(2.0)


def _worker_init() -> None:
    """In each worker: ignore Ctrl-C (SIGINT reaches the whole foreground process group);
    the sweep's own process decides, and ends the workers itself
    (:meth:`ProcessBackend.terminate`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def helper_pids() -> list[int]:
    """Process ids of the helpers ``multiprocessing`` started for this process: its worker
    processes, the forkserver and the resource tracker."""
    import multiprocessing as mp
    from multiprocessing import forkserver, resource_tracker

    pids = []
    with contextlib.suppress(Exception):
        pids += [p.pid for p in mp.active_children() if p.pid]
    with contextlib.suppress(Exception):
        fs: Any = forkserver._forkserver  # type: ignore[attr-defined]
        pids.append(fs._forkserver_pid)
    with contextlib.suppress(Exception):
        rt: Any = resource_tracker._resource_tracker  # type: ignore[attr-defined]
        pids.append(rt._pid)
    return [p for p in pids if p]


def stop_helpers(timeout: float = 2.0) -> None:
    """End the forkserver and the resource tracker (after the workers: they hold the
    tracker's pipe). The forkserver is asked to stop (its "alive" pipe closed) and killed
    after ``timeout``; the resource tracker stops when its pipe closes (killed after
    ``timeout``). ``multiprocessing`` starts new ones if they are needed again."""
    from multiprocessing import forkserver, resource_tracker

    for p in (x for x in __import__("multiprocessing").active_children()):
        with contextlib.suppress(Exception):
            p.kill()
            p.join(timeout)
    fs: Any = getattr(forkserver, "_forkserver", None)
    pid = getattr(fs, "_forkserver_pid", None)
    if pid:
        _end_helper(pid, getattr(fs, "_forkserver_alive_fd", None), timeout)
        with contextlib.suppress(Exception):
            if fs._forkserver_address and not fs._forkserver_address.startswith("\0"):
                os.unlink(fs._forkserver_address)
        fs._forkserver_pid = fs._forkserver_alive_fd = fs._forkserver_address = None
    rt: Any = getattr(resource_tracker, "_resource_tracker", None)
    pid = getattr(rt, "_pid", None)
    if pid:
        _end_helper(pid, getattr(rt, "_fd", None), timeout)
        rt._fd = rt._pid = None


def _end_helper(pid: int, fd: int | None, timeout: float) -> None:
    """End a multiprocessing helper process (the forkserver or the resource tracker):
    close our end of its pipe (it exits on EOF), then reap it, killing it if needed."""
    import signal

    if fd is not None:
        with contextlib.suppress(Exception):
            os.close(fd)
    _reap(pid, timeout, signal.SIGKILL)


def _reap(pid: int, timeout: float, sig: int) -> None:
    """Wait up to ``timeout`` s for child ``pid`` to exit, then send ``sig`` and reap it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        os.kill(pid, sig)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)


class DaskBackend:
    """Dask distributed: ``client.submit`` per chain, results ``as_completed``.

    ``scheduler``: address of an existing scheduler (``tcp://host:port``), or a
    :class:`distributed.Client` to use as is; None starts a ``LocalCluster`` on the
    loopback interface with ``workers`` single-threaded workers (``processes=False``:
    threads in this process) for the duration of the sweep.

    Parameters
    ----------
    scheduler : str or distributed.Client, optional
        See above.
    workers : int, optional
        The workers of a local cluster.
    processes : bool
        Local workers in processes rather than threads.
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
        self._client: Any = None
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
                try:
                    self._client = Client(self.scheduler, timeout=15)
                except (OSError, TimeoutError, ValueError) as exc:
                    raise ConnectionError(f"cannot reach the Dask scheduler {self.scheduler!r} "
                                          f"(--scheduler): {exc}") from None
                self._own.append(self._client)
            else:
                self._client = self.scheduler
        return self._client

    def address(self) -> str:
        """The scheduler's address (``tcp://host:port``), as well as it is known."""
        if isinstance(self.scheduler, str):
            return self.scheduler
        with contextlib.suppress(Exception):
            return str(self._client.scheduler.address)
        return "the Dask scheduler"

    def imap(self, chains: Sequence[Chain]) -> Generator[list[dict[str, Any]], None, None]:
        """Rows of each chain as it finishes.

        A chain whose worker died too often (``KilledWorker``) becomes error rows; a lost
        scheduler, or a cluster with no worker for ``NO_WORKER_GRACE`` seconds, is a
        :class:`ClusterLostError` naming the scheduler.
        """
        from distributed import TimeoutError as DaskTimeout
        from distributed import wait

        if not chains:
            return
        client = self.client()
        of = {}
        for c in chains:
            of[client.submit(run_chain, c, pure=False)] = c
        self._futures = list(of)
        pending = set(of)
        idle_since = None
        try:
            while pending:
                try:
                    done, pending = wait(pending, timeout=2.0, return_when="FIRST_COMPLETED")
                except (DaskTimeout, TimeoutError):
                    done = set()
                except Exception as exc:
                    raise self._lost(exc) from None
                for fut in done:
                    yield self._rows(fut, of[fut])
                if done:
                    idle_since = None
                    continue
                try:
                    n_workers = len(client.scheduler_info().get("workers", {}))
                except Exception as exc:
                    raise self._lost(exc) from None
                now = time.monotonic()
                if n_workers:
                    idle_since = None
                elif idle_since is None:
                    idle_since = now
                elif now - idle_since > NO_WORKER_GRACE:
                    raise ClusterLostError(
                        f"the Dask scheduler {self.address()} has had no worker for "
                        f"{NO_WORKER_GRACE:.0f} s", self.address())
        finally:
            self.close()

    def _rows(self, fut: Any, chain: Chain) -> list[dict[str, Any]]:
        from distributed import KilledWorker

        try:
            return fut.result()
        except KilledWorker as exc:  # the chain's worker died (memory, a signal): its rows
            return _error_rows(chain, exc)
        except Exception as exc:
            if fut.status in ("cancelled", "lost") or _is_connection_error(exc):
                raise self._lost(exc) from None
            raise

    def _lost(self, exc: BaseException) -> ClusterLostError:
        reason = getattr(exc, "reason", None) or type(exc).__name__
        return ClusterLostError(f"lost the connection to the Dask scheduler "
                                f"{self.address()} ({reason})", self.address())

    def close(self) -> None:
        for fut in self._futures:
            fut.cancel()
        self._futures = []
        for obj in self._own:
            with contextlib.suppress(Exception):
                obj.close()
        self._own = []
        self._client = None


def _has_distributed() -> bool:
    import importlib.util

    return importlib.util.find_spec("distributed") is not None


@dataclass(frozen=True)
class BackendKind:
    """A row of :data:`TABLE`: a backend's name, what it does, whether it can run here
    and its factory.

    Attributes
    ----------
    name : str
        The backend's name (``--backend``).
    help : str
        What it does, for the CLI and the sweep panel.
    make : callable
        ``make(workers, scheduler) -> Backend``.
    ready : callable
        ``ready() -> bool``: it can run in this environment.
    remote : bool
        It takes a scheduler address.
    """

    name: str
    help: str
    make: Callable[[int | None, Any], Backend]
    ready: Callable[[], bool] = lambda: True
    remote: bool = False  # takes a scheduler address


class BackendTable(dict[str, BackendKind]):
    """Backend name -> :class:`BackendKind`: what :func:`make_backend`, the CLI and the
    dashboard's sweep panel offer (``auto`` chooses between ``serial`` and
    ``processes``, see :func:`make_backend`)."""


#: The backends: ``processes``, ``serial`` and ``dask``.
TABLE = BackendTable({
    "processes": BackendKind("processes", "local worker processes (all cores)",
                             lambda workers, _scheduler: ProcessBackend(workers)),
    "serial": BackendKind("serial", "this process, one point at a time",
                          lambda _workers, _scheduler: SerialBackend()),
    "dask": BackendKind("dask", "Dask distributed (a local cluster, or a scheduler address)",
                        lambda workers, scheduler: DaskBackend(scheduler, workers),
                        ready=_has_distributed, remote=True),
})
#: Backend names accepted by :func:`explorer.sweep.run` and the CLI.
BACKENDS = ("auto", *TABLE)


def available() -> list[BackendKind]:
    """The backends of :data:`TABLE` that can run in this environment.

    Returns
    -------
    list of BackendKind
        In the table's order (``dask`` only with the ``distributed`` extra).
    """
    return [kind for kind in TABLE.values() if kind.ready()]


def _is_connection_error(exc: BaseException) -> bool:
    from asyncio import CancelledError

    return isinstance(exc, (CancelledError, OSError, TimeoutError)) or \
        type(exc).__name__ in ("CommClosedError", "FutureCancelledError")


def _error_rows(chain: Chain, exc: BaseException) -> list[dict[str, Any]]:
    from .chain import _base_row, _error_text

    rows = []
    for i in range(len(chain.points)):
        row = _base_row(chain, i)
        row["error"] = _error_text(exc)
        rows.append(row)
    return rows


def _backend_name(backend: str, *, workers: int | None, scheduler: Any, n_pending: int,
                  n_chains: int) -> str:
    """The backend a name stands for (``auto``: serial for small grids, else processes)."""
    if scheduler is not None and backend in ("auto", "dask"):
        return "dask"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    if scheduler is not None:
        raise ValueError("a scheduler address needs the dask backend")
    if backend == "auto":
        return "serial" if (n_pending <= SMALL_GRID or n_chains <= 1
                            or (workers or os.cpu_count() or 1) <= 1) else "processes"
    return backend


def make_backend(backend: str | Backend = "auto", *, workers: int | None = None,
                 scheduler: Any = None, n_pending: int = 0, n_chains: int = 0) -> Backend:
    """A backend from a name of :data:`TABLE` (``auto``: serial for small grids, else
    processes), or ``backend`` itself when it is already one (any :class:`Backend`).

    Parameters
    ----------
    backend : {"auto", "serial", "processes", "dask"} or Backend
        The name (an object is returned as is).
    workers : int, optional
        Local processes / cluster workers.
    scheduler : str or distributed.Client, optional
        An existing Dask scheduler (implies ``"dask"``).
    n_pending, n_chains : int
        The points and chains to run (``auto`` chooses by them).

    Returns
    -------
    Backend
        The backend.
    """
    if not isinstance(backend, str):
        return backend
    name = _backend_name(backend, workers=workers, scheduler=scheduler, n_pending=n_pending,
                         n_chains=n_chains)
    return TABLE[name].make(workers, scheduler)


def solves_at_once(backend: str | Any = "auto", *, workers: int | None = None,
                   scheduler: Any = None, n_pending: int = 0, n_chains: int = 0) -> int:
    """How many solves the backend runs at once on this machine (the factor of the memory
    guard): 1 for serial, the worker count (at most one per chain) for local processes or
    a local Dask cluster, 1 for an existing Dask scheduler (its workers run elsewhere,
    each on its own memory); a backend object: its ``workers`` attribute (default 1).

    Parameters
    ----------
    backend, workers, scheduler, n_pending, n_chains
        As in :func:`make_backend`.

    Returns
    -------
    int
        The number of concurrent solves (at least 1).
    """
    if not isinstance(backend, str):
        if getattr(backend, "scheduler", None) is not None:
            return 1
        n = int(getattr(backend, "workers", 1) or 1)
    else:
        name = _backend_name(backend, workers=workers, scheduler=scheduler,
                             n_pending=n_pending, n_chains=n_chains)
        if name == "serial" or scheduler is not None:
            return 1
        n = int(workers or os.cpu_count() or 1)
    return max(1, min(n, n_chains)) if n_chains else max(n, 1)
