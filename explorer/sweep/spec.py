"""The sweep's specification and its plan: which points, grouped into warm-started chains.

:class:`SweepSpec` says what to sweep; :func:`plan` expands it into :class:`Chain` objects
(points on one problem instance, ordered along the path parameter), each point keyed by
:func:`point_key` (the resume key of the table).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import registry
from .hooks import hooks_of

__all__ = ["CERTIFICATE", "SIZE_PREFIX", "STRUCT_PREFIX", "Chain", "SweepSpec", "plan",
           "point_key"]

#: Certificate columns every row carries.
CERTIFICATE = ("primal", "dual", "gap", "rel_gap", "converged", "stop_reason", "n_iter",
               "time", "warm")
#: Column prefix of the dataset sizes (``size_n``).
SIZE_PREFIX = "size_"
#: Column prefix of the model's structure summary (``struct_<name>``).
STRUCT_PREFIX = "struct_"


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
    """One unit of work: points on one problem instance, solved in order (picklable).

    Attributes
    ----------
    index : int
        The chain's place in the plan.
    model, dataset : str
        What is solved.
    sizes : Mapping[str, Any]
        The dataset's sizes.
    seed : int
        The data seed.
    fold, cv : int or None, int
        The held-out fold of ``cv`` folds (None, 0: no cross-validation).
    points : tuple of Mapping
        The parameters of each point, in solve order.
    keys : tuple of str
        The :func:`point_key` of each point.
    steps : tuple of int
        Each point's step along the chain.
    tol, max_iter : float, int
        The stopping rule of every solve.
    path : str or None
        The parameter the chain follows.
    warm : bool
        Warm-start each point from the previous one.
    """

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
    """The exact point as a canonical JSON string (the resume key).

    Parameters
    ----------
    model, dataset : str
        The model and its dataset.
    sizes : Mapping[str, Any]
        The dataset's sizes.
    seed : int
        The data seed.
    fold : int or None
        The held-out fold.
    cv : int
        The number of folds (0: none).
    params : Mapping[str, Any]
        The solver parameters.
    tol, max_iter : float, int
        The stopping rule.

    Returns
    -------
    str
        JSON with sorted keys: equal points give equal strings.

    Examples
    --------
    >>> from explorer.sweep import point_key
    >>> a = point_key("wwsvm", "blobs", {"n": 30}, 0, None, 0, {"C": 1.0, "seed": 2},
    ...               1e-6, 100)
    >>> a == point_key("wwsvm", "blobs", {"n": 30}, 0, None, 0, {"seed": 2, "C": 1.0},
    ...                1e-6, 100)  # the order of the keywords does not matter
    True
    """
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
    return (logs or axes)[0] if axes else None


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
    """The chains of a sweep, in a deterministic order (raises on unknown names).

    Parameters
    ----------
    spec : SweepSpec
        The sweep.

    Returns
    -------
    list of Chain
        Every point of the grid, in chains along ``spec``'s path parameter.

    Examples
    --------
    >>> from explorer.sweep import SweepSpec, plan
    >>> spec = SweepSpec("wwsvm", grid={"C": [0.1, 1.0, 10.0]}, seeds=[0, 1])
    >>> chains = plan(spec)
    >>> len(chains), [len(c.points) for c in chains]  # one C path per seed
    (2, [3, 3])
    """
    entry = registry.get(spec.model)
    from ..datasource import resolve  # imports datafiles: not at --help
    ds_name, ds = resolve(entry.name, spec.dataset)
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
        if not hooks_of(entry).cross_validation:
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
