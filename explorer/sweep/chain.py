"""Chain execution: the points of one chain solved in order, each warm-started from the last.

:func:`run_chain` is the one function every backend runs, so a chain gives the same rows
(bit for bit) wherever it runs. A point that fails becomes a row whose ``error`` column
says why; the model's :class:`~explorer.sweep.SweepHooks` add the held-out score and
the structure summary.
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

from .. import registry
from .hooks import SweepHooks, hooks_of
from .spec import CERTIFICATE, SIZE_PREFIX, STRUCT_PREFIX, Chain, _jsonable

__all__ = ["ScoreError", "iter_chain", "run_chain"]


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip().strip("'\"")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _base_row(chain: Chain, i: int) -> dict[str, Any]:
    row: dict[str, Any] = {"model": chain.model, "dataset": chain.dataset,
                           "data_seed": chain.seed, "fold": chain.fold}
    for k, v in chain.sizes.items():
        row[SIZE_PREFIX + k] = _jsonable(v)
    for k, v in chain.points[i].items():
        row[k] = _jsonable(v)
    row.update(tol=chain.tol, max_iter=chain.max_iter, chain=chain.index,
               step=chain.steps[i], path=chain.path or "")
    for k in CERTIFICATE:
        row[k] = None
    row.update(score_name=None, score=None, error=None, key=chain.keys[i])
    return row


def iter_chain(chain: Chain) -> Iterator[dict[str, Any]]:
    """Solve the points of ``chain`` in order, warm-starting each from the last success.

    Yields one row per point. Never raises for a failing point: its row carries the
    error. BLAS runs single-threaded so that the arithmetic, hence every objective,
    is the same on every backend.

    Parameters
    ----------
    chain : Chain
        The points to solve.

    Yields
    ------
    dict
        The row of each point: its parameters, the certificate, the held-out score and
        the structure summary, or an ``error``.
    """
    from solvers._blas import single_threaded_blas
    from solvers.base import ConvergenceWarning

    entry = registry.get(chain.model)
    hooks = hooks_of(entry)
    problem = None
    try:
        from ..datasource import resolve  # imports datafiles: not at --help
        problem = resolve(entry.name, chain.dataset)[1](seed=chain.seed, **chain.sizes)
        if chain.fold is not None:
            problem = hooks.split(problem, chain.cv, chain.fold, seed=chain.seed)
            if problem.info.get("test_table") is not None:  # the fold's rows are held out now
                from dataclasses import replace

                problem = replace(problem, info={**problem.info, "test_table": None})
    except Exception as exc:  # the data cannot be built: every point says why
        for i in range(len(chain.points)):
            row = _base_row(chain, i)
            row["error"] = _error_text(exc)
            yield row
        return
    previous = None
    for i, params in enumerate(chain.points):
        row = _base_row(chain, i)
        init = previous if chain.warm else None
        try:
            # the row's converged / stop_reason say what the warning would say; the
            # warnings filters are process-global, so only the main thread touches them
            # (Dask runs tasks in worker threads)
            with _quiet(ConvergenceWarning), single_threaded_blas():
                res = _solve(entry, problem, chain, params, init)
            if isinstance(res, tuple):
                res, init = res
            row.update(primal=float(res.primal), dual=float(res.dual), gap=float(res.gap),
                       rel_gap=float(res.rel_gap), converged=bool(res.converged),
                       stop_reason=str(res.stop_reason), n_iter=int(res.n_iter),
                       time=float(res.time), warm=init is not None)
            previous = res
            _extras(hooks, problem, res, row)
        except Exception as exc:
            row["error"] = _error_text(exc)
            row["warm"] = init is not None
        yield row


@contextlib.contextmanager
def _quiet(category: type[Warning]) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category)
        yield


def _solve(entry, problem, chain: Chain, params, init):
    from solvers.base import IncompatibleWarmStart

    try:
        return entry.solve(problem, tol=chain.tol, max_iter=chain.max_iter, init=init,
                           **params)
    except IncompatibleWarmStart:
        if init is None:
            raise
        return entry.solve(problem, tol=chain.tol, max_iter=chain.max_iter, init=None,
                           **params), None


class ScoreError(ArithmeticError):
    """A held-out score that could not be computed (not a finite number)."""


def _extras(hooks: SweepHooks, problem: Any, res: Any, row: dict[str, Any]) -> None:
    """The model's held-out score and structure summary into ``row``.

    A score that cannot be computed (the hook raises, or gives a value that is not
    finite, e.g. a mean over no rows) leaves ``score`` empty and says why in
    ``score_error`` (with the warnings numpy gave on the way, which are not printed);
    the certificate of the row stands.
    """
    try:
        with _quiet_numerics() as caught:
            score = _file_score(row["model"], problem, res) or hooks.score(problem, res)
        if score is not None:
            row["score_name"] = score.name
            value = float(score.value)
            if not math.isfinite(value):
                why = "; ".join(dict.fromkeys(str(w.message) for w in caught))
                raise ScoreError(f"{score.name} is {value}" + (f" ({why})" if why else ""))
            row["score"] = value
    except Exception as exc:
        row["score"] = None
        row["score_error"] = _error_text(exc)
    for k, v in hooks.structure(problem, res).items():
        row[STRUCT_PREFIX + k] = _jsonable(v)


def _file_score(model: str, problem: Any, res: Any) -> Any:
    """A file problem's held-out score as ``dualscope solve --test-size`` prints it (the
    first of :func:`explorer.datafiles.held_out_scores`), or None."""
    if getattr(problem, "info", {}).get("test_table") is None:
        return None
    from ..datafiles import held_out_scores
    from .hooks import Score

    scores = held_out_scores(model, problem, res)
    return None if not scores else Score(scores[0].name, scores[0].value)


@contextlib.contextmanager
def _quiet_numerics() -> Iterator[list[warnings.WarningMessage]]:
    """No numpy floating-point warnings (per thread); in the main thread the warnings
    raised are recorded instead of printed (the filters are process-global)."""
    with np.errstate(all="ignore"):
        if threading.current_thread() is not threading.main_thread():
            yield []
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield caught


def run_chain(chain: Chain) -> list[dict[str, Any]]:
    """All rows of ``chain`` (the function the worker backends run).

    A worker first checks, once per process, the compiled kernels the chain's model
    runs against their numpy references (:func:`solvers.kernel_checks.ensure_verified`):
    a worker whose kernels came from a bad cache raises instead of writing rows.

    Parameters
    ----------
    chain : Chain
        The points to solve.

    Returns
    -------
    list of dict
        The rows of :func:`iter_chain`.
    """
    from solvers import kernel_checks

    kernel_checks.ensure_verified(kernel_checks.families_for(chain.model))
    return list(iter_chain(chain))
