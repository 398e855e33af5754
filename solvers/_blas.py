"""The BLAS/LAPACK thread policy of every solver.

Policy: a solve runs its dense linear algebra on **one BLAS thread, at every
problem size**. Every solver wraps its work in :func:`single_threaded_blas` or is
decorated with :func:`with_blas_policy` (the sweep runner wraps each point too);
nothing else in ``solvers/`` sets BLAS threads. The solvers' dense operations
are many mid-sized products, solves and eigendecompositions inside an iterative
loop, where thread start-up and synchronisation cost more than they save (and
far more when other processes share the cores); parallelism belongs one level
up (independent solves, sweep points). A size-dependent exception is added
here, once, only when a benchmark shows threads winning at that size.

``THREADS`` is the number of threads inside a solve (``1``); ``None`` leaves
BLAS's own default. Benchmarks may change it with :func:`blas_threads` to measure
the alternative; solvers never do. ``threadpoolctl`` ships with scikit-learn (a
dependency); without it the policy is a no-op, so only speed depends on it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from functools import cache, wraps
from typing import TypeVar

_F = TypeVar("_F", bound=Callable)

__all__ = ["THREADS", "blas_threads", "single_threaded_blas", "with_blas_policy"]

#: BLAS threads inside a solve (``None``: BLAS's default, for benchmarks only).
THREADS: int | None = 1


@cache
def _controller():
    """The thread pools the policy limits. A controller knows the libraries loaded when it
    is made, so SciPy's BLAS/LAPACK is loaded first: besides NumPy's, SciPy ships its own
    OpenBLAS, which ``scipy.linalg`` and the compiled kernels' linear algebra (numba
    calls SciPy's BLAS and LAPACK) use, and which is often loaded only during the first
    solve."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - optional, speed only
        return None
    import scipy.linalg  # noqa: F401  (loads SciPy's BLAS/LAPACK)
    return ThreadpoolController()


def single_threaded_blas() -> contextlib.AbstractContextManager:
    """Context manager applying the policy: BLAS limited to ``THREADS`` threads."""
    ctl = _controller()
    if ctl is None or THREADS is None:
        return contextlib.nullcontext()
    return ctl.limit(limits=THREADS, user_api="blas")


@contextlib.contextmanager
def blas_threads(threads: int | None) -> Iterator[None]:
    """Temporarily set ``THREADS`` (benchmarks comparing policies; not for solvers)."""
    global THREADS
    old = THREADS
    THREADS = threads
    try:
        yield
    finally:
        THREADS = old


def with_blas_policy(fn: _F) -> _F:
    """Decorator: run ``fn`` inside :func:`single_threaded_blas`."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        with single_threaded_blas():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
