"""Per-model sweep hooks behind one typed protocol.

A model plugs extras into its sweep rows through an object implementing
:class:`SweepHooks`, exported as ``HOOKS`` by its hooks module
(``explorer.models.<name>.sweep``, see :meth:`explorer.registry.ModelEntry.hooks`):

``cross_validation``
    whether ``split`` exists (``--cv K`` is refused otherwise);
``split(problem, n_folds, fold, seed)``
    the problem with fold ``fold`` of ``n_folds`` held out (training rows in ``data``,
    held-out rows in ``info``);
``score(problem, result)``
    the held-out :class:`Score` of a solve, or None when the problem has no held-out rows;
``structure(problem, result)``
    a summary of the solution (numbers; columns ``struct_<name>``);
``bench_grid(quick)``
    the keywords of a :class:`~explorer.sweep.SweepSpec` of this model (all but
    ``model``) that ``python -m explorer.sweep_bench`` runs on every backend, or None.

:class:`ModelHooks` is a base with the "nothing" defaults; a model overrides what it has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import registry

__all__ = ["NO_HOOKS", "ModelHooks", "Score", "SweepHooks", "hooks_of", "kfold",
           "split_tasks"]


@dataclass(frozen=True)
class Score:
    """A held-out score: its name (:mod:`solvers.scoring`'s, e.g. ``"accuracy"``,
    ``"mse"``) and value.

    Attributes
    ----------
    name : str
        The score's name.
    value : float
        Its value.
    """

    name: str
    value: float


@runtime_checkable
class SweepHooks(Protocol):
    """What the sweep asks of a model (see the module docstring)."""

    cross_validation: bool

    def split(self, problem: registry.Problem, n_folds: int, fold: int, seed: int = 0
              ) -> registry.Problem:
        """``problem`` with fold ``fold`` of ``n_folds`` held out."""
        ...

    def score(self, problem: registry.Problem, result: Any) -> Score | None:
        """The held-out score of ``result`` (None: no held-out rows)."""
        ...

    def structure(self, problem: registry.Problem, result: Any) -> Mapping[str, float]:
        """A summary of the solution (column ``struct_<name>`` per item)."""
        ...

    def bench_grid(self, quick: bool = False) -> Mapping[str, Any] | None:
        """The sweep-backend benchmark's grid (``SweepSpec`` keywords but ``model``;
        None: the model offers none)."""
        ...


class ModelHooks:
    """Hooks with nothing: no cross-validation, no score, no structure summary, no
    benchmark grid.

    Subclass it and override what the model has (set ``cross_validation = True`` with
    ``split``).
    """

    cross_validation: bool = False

    def split(self, problem: registry.Problem, n_folds: int, fold: int, seed: int = 0
              ) -> registry.Problem:
        raise ValueError(f"dataset {problem.name!r}: this model has no cross-validation "
                         "split")

    def score(self, problem: registry.Problem, result: Any) -> Score | None:
        return None

    def structure(self, problem: registry.Problem, result: Any) -> Mapping[str, float]:
        return {}

    def bench_grid(self, quick: bool = False) -> Mapping[str, Any] | None:
        return None


#: The hooks of a model without a hooks module.
NO_HOOKS: SweepHooks = ModelHooks()


def hooks_of(entry: registry.ModelEntry) -> SweepHooks:
    """The sweep hooks of ``entry`` (``HOOKS`` of its hooks module; :data:`NO_HOOKS`
    without one).

    Parameters
    ----------
    entry : registry.ModelEntry
        A model.

    Returns
    -------
    SweepHooks
        Its held-out score, split and structure summary.
    """
    module = entry.hooks()
    if module is None:
        return NO_HOOKS
    hooks = getattr(module, "HOOKS", None)
    if not isinstance(hooks, SweepHooks):
        raise TypeError(f"{module.__name__}.HOOKS must implement explorer.sweep.SweepHooks "
                        f"(got {type(hooks).__name__})")
    return hooks


def kfold(rng: np.random.Generator, n_rows: int, n_folds: int, fold: int, what: str = "data"
          ) -> tuple[np.ndarray, np.ndarray]:
    """``(train, test)`` row indices of fold ``fold`` of a shuffled ``n_folds``-fold split.

    Raises ``ValueError`` naming ``cv`` when there are fewer rows than folds (some folds
    would hold out nothing, and their score could not be computed).
    """
    if n_rows < n_folds:
        raise ValueError(f"cv={n_folds} folds need at least {n_folds} rows; the {what} has "
                         f"{n_rows}")
    order = rng.permutation(n_rows)
    test = np.sort(np.array_split(order, n_folds)[fold])
    return np.setdiff1d(np.arange(n_rows), test), test


def split_tasks(problem: Any, n_folds: int, fold: int, seed: int = 0) -> Any:
    """Cross-validation fold of a multitask problem (``data = {"Xs": [...], "ys": [...]}``).

    Each task's rows are shuffled (``seed``) and cut into ``n_folds`` parts; part ``fold``
    is held out. The training rows stay in ``data``; the held-out rows go to
    ``info["Xs_test"]`` / ``info["ys_test"]``. Per-task arrays in ``info`` with one entry
    per row (e.g. sign targets) are split the same way (``info[key + "_test"]``).
    Sweep hooks of multitask models call this from their ``split``.

    Parameters
    ----------
    problem : Problem
        A multitask problem.
    n_folds : int, >= 2
        The number of folds.
    fold : int, in [0, n_folds)
        The fold held out.
    seed : int
        The shuffle's seed.

    Returns
    -------
    Problem
        A new problem (``problem`` is not changed).
    """
    Xs, ys = problem.data["Xs"], problem.data["ys"]
    rng = np.random.default_rng(seed)
    parts = [kfold(rng, np.asarray(X).shape[0], n_folds, fold, what=f"task {t + 1}")
             for t, X in enumerate(Xs)]

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
