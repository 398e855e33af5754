"""One BLAS/LAPACK thread for the small dense algebra inside the solvers.

The models' dense operations are small (d x d eigendecompositions, d x m SVDs,
triangular solves with d up to a few hundred). Multithreaded OpenBLAS is no faster
at these sizes and, measured on the 2-core development machine while other
processes ran, 20-250x slower (thread synchronisation under contention). Solvers
wrap their loops in :func:`single_threaded_blas`. ``threadpoolctl`` ships with
scikit-learn (a dependency); without it this is a no-op, so only speed depends on it.
"""

from __future__ import annotations

import contextlib
from functools import cache

__all__ = ["SMALL_DENSE", "single_threaded_blas"]

#: Up to this size (the relevant matrix dimension) a solve runs single-threaded.
SMALL_DENSE = 256


@cache
def _controller():
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover - optional, speed only
        return None
    return ThreadpoolController()


def single_threaded_blas(size: int = 0, max_size: int = SMALL_DENSE):
    """Context manager limiting BLAS to one thread when ``size <= max_size``."""
    ctl = _controller() if size <= max_size else None
    if ctl is None:
        return contextlib.nullcontext()
    return ctl.limit(limits=1, user_api="blas")
