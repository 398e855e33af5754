"""The problem a page solves: a built-in dataset's instance or this session's upload."""

from __future__ import annotations

from typing import Any

from ..registry import ModelEntry, Problem
from . import problems
from .upload import uploaded_problem

__all__ = ["get_problem"]


def get_problem(entry: ModelEntry, c: Any) -> Problem:
    """The dataset instance for these controls (cached across reruns and sessions; an
    uploaded file's problem lives in this session only, see :mod:`.upload`)."""
    if getattr(c, "source", None) is not None:
        return uploaded_problem(entry, c)
    key = (entry.name, c.dataset, tuple(sorted(c.sizes.items())), c.data_seed)
    return problems._CACHE.get(key, lambda: entry.datasets[c.dataset](seed=c.data_seed, **c.sizes))
