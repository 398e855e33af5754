"""Dataset instances for the pages, cached across reruns and sessions, bounded by memory."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..registry import Problem

__all__ = ["ProblemCache", "nbytes"]

#: Total bytes of problems kept (default 512 MiB; ``DUALSCOPE_PROBLEM_CACHE_MB``).
CACHE_BYTES = int(float(os.environ.get("DUALSCOPE_PROBLEM_CACHE_MB", "512")) * 2**20)


def nbytes(obj: Any, _depth: int = 0) -> int:
    """Bytes held by the numpy arrays inside ``obj`` (problems, mappings, sequences)."""
    if _depth > 6:
        return 0
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, Problem):
        return nbytes(obj.data, _depth + 1) + nbytes(obj.info, _depth + 1)
    if isinstance(obj, Mapping):
        return sum(nbytes(v, _depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v, _depth + 1) for v in obj)
    return 0


class ProblemCache:
    """Least-recently-used problems, evicted when their arrays exceed ``max_bytes``.

    The newest problem is always kept (even alone above the bound). Thread-safe:
    Streamlit serves sessions from several threads. The same object is handed out
    on every hit, so models may keep per-instance preparations keyed by identity;
    problems are read-only.
    """

    def __init__(self, max_bytes: int = CACHE_BYTES):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[tuple, tuple[Problem, int]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def total(self) -> int:
        return sum(b for _, b in self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: tuple, make: Any) -> Problem:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]
        problem = make()  # outside the lock: builds may take a while
        size = nbytes(problem)
        with self._lock:
            self._items[key] = (problem, size)
            self._items.move_to_end(key)
            while len(self._items) > 1 and self.total > self.max_bytes:
                self._items.popitem(last=False)
        return problem


_CACHE = ProblemCache()
