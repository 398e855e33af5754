"""The sweep's cost guard: the number of points and every size combination through the
dataset's cost model, before any work (used by :func:`~explorer.sweep.run`,
:func:`~explorer.sweep.iter_rows`, ``dualscope sweep`` and the dashboard's Sweep panel)."""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

from .. import registry
from ..limits import CostError, check_sizes
from .backends import solves_at_once
from .spec import SweepSpec, _as_list, _path_param

__all__ = ["MAX_POINTS", "CostError", "SizeWarning", "check_points", "count_points",
           "guard_sweep"]

#: Most points one sweep may have without ``force`` (every point is planned, keyed and
#: kept in memory before the first solve).
MAX_POINTS = 100_000

_HINT = "pass --force (force=True from Python) to run it anyway"


class SizeWarning(UserWarning):
    """A size the cost guard lets through: above the dashboard's range but within the
    limits, or refused but run because of ``force``."""


def count_points(spec: SweepSpec) -> tuple[int, int]:
    """``(points, chains)`` of ``spec`` without planning it (the axes' lengths)."""
    entry = registry.get(spec.model)
    axes = {k: len(_as_list(v)) for k, v in spec.grid.items()}
    per_chain = 1
    path = _path_param(entry, spec)
    if path is not None:
        per_chain = axes.get(path, 1)
    n = math.prod(axes.values()) * math.prod(len(_as_list(v)) for v in spec.sizes.values()) \
        * max(len(_as_list(spec.seeds)), 1) * max(int(spec.cv or 0), 1)
    return n, n // max(per_chain, 1)


def check_points(spec: SweepSpec, *, force: bool = False) -> tuple[int, int]:
    """``(points, chains)`` of ``spec``; :class:`CostError` above :data:`MAX_POINTS`
    points unless ``force``."""
    n, n_chains = count_points(spec)
    if n > MAX_POINTS and not force:
        raise CostError(f"this sweep has {n:,} points (limit {MAX_POINTS:,}); {_HINT}")
    return n, n_chains


def guard_sweep(spec: SweepSpec, *, force: bool = False, backend: str | Any = "auto",
                workers: int | None = None, scheduler: Any = None,
                n_pending: int | None = None) -> None:
    """Refuse a sweep the cost model says is too big, unless ``force``.

    Raises :class:`CostError` (a ``ValueError``) when ``spec`` has more than
    :data:`MAX_POINTS` points, or when a size combination fails
    :func:`explorer.limits.check_sizes` (the guard of ``dualscope solve``: the dataset's
    cost model, :meth:`~explorer.registry.Dataset.estimate`, against
    :data:`explorer.limits.COMMAND_LINE`), the memory
    counted for as many solves as the backend runs at once
    (:func:`~explorer.sweep.solves_at_once`). The message names the size
    combination and gives the estimate. What passes with a note, or only because of
    ``force``, is a :class:`SizeWarning`.

    ``n_pending``: the points still to solve (default: all), as the ``auto`` backend
    chooses by it.

    Parameters
    ----------
    spec : SweepSpec
        The sweep.
    force : bool
        Run what the cost model refuses (with a :class:`SizeWarning`).
    backend, workers, scheduler
        As in :func:`~explorer.sweep.make_backend`.
    n_pending : int, optional
        See above.
    """
    n, n_chains = check_points(spec, force=force)
    from ..datasource import resolve  # imports datafiles: not at --help
    _name, ds = resolve(spec.model, spec.dataset)
    parallel = solves_at_once(backend, workers=workers, scheduler=scheduler,
                              n_pending=n if n_pending is None else n_pending,
                              n_chains=n_chains)
    axes = {k: _as_list(v) for k, v in spec.sizes.items()}
    unknown = [k for k in axes if k not in ds.sizes]
    if unknown:
        raise ValueError(f"dataset {ds.name!r} has no size {unknown[0]!r}; "
                         f"available: {list(ds.sizes)}")
    said: set[str] = set()
    for combo in itertools.product(*axes.values()):
        for _kind, text in check_sizes(ds, dict(zip(axes, combo, strict=True)), force=force,
                                       parallel=parallel, hint=_HINT):
            if text not in said:
                said.add(text)
                warnings.warn(text, SizeWarning, stacklevel=3)
