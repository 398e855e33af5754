"""Shared solver machinery: results, histories, the run monitor, callbacks.

Every model in :mod:`solvers` returns a frozen :class:`Result` subclass whose
``history`` is a :class:`History` of numpy arrays. The per-iteration
bookkeeping (timing, duality-gap stopping, the user callback, the
``ConvergenceWarning`` on ``max_iter``, refusing NaN) lives once, in
:class:`Monitor`; a solver's outer loop only computes its primal and dual
values and calls :meth:`Monitor.record`.

Stopping rule (the product contract): stop when the relative duality gap ::

    gap / max(1, |primal|) <= tol,

or after ``max_iter`` outer iterations (``converged=False`` and a
:class:`ConvergenceWarning`), or when the callback returns ``False``
(``converged=False``, no warning: the caller asked for it).

Why a run stopped is first-class: :attr:`Result.stop_reason` is one of
:data:`STOP_REASONS` --

- ``"converged"``: the relative gap reached ``tol``;
- ``"max_iter"``: the outer-iteration budget ran out (warns);
- ``"callback"``: the user's callback returned ``False`` (no warning);
- ``"floor"``: the certificate cannot go lower for this problem as posed (e.g.
  a smoothing floor); the solver says why (warns);
- ``"budget"``: a total work budget (prox evaluations, SVDs, triplet visits, ...)
  ran out before ``max_iter`` (warns, naming the budget).

Times exclude JIT compilation: numba compiling or loading a kernel from its cache
inside a solve is measured separately (:attr:`Result.compile_time`) and subtracted
from :attr:`Result.time` and the history's ``time``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import FrameType, MappingProxyType
from typing import Any

import numpy as np
from numba import njit

__all__ = [
    "STOP_REASONS",
    "ConvergenceWarning",  # noqa: F822 (built on first use: module __getattr__)
    "History",
    "IncompatibleWarmStart",
    "IterationState",
    "Monitor",
    "NumericalError",
    "Result",
    "SlowProgress",
    "compile_seconds",
    "handover",
    "relative_gap",
]

#: Relative size of a "dual above primal" excess that is rounding, not a wrong bound.
_ROUNDING = 64 * np.finfo(float).eps

#: Every value :attr:`Result.stop_reason` can take.
STOP_REASONS = ("converged", "max_iter", "callback", "floor", "budget")


@functools.cache
def _convergence_warning() -> type[Warning]:
    """:class:`ConvergenceWarning`, created on first use: its base class comes from
    scikit-learn, whose import (about a second) ``import solvers`` does not pay."""
    from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

    class ConvergenceWarning(SklearnConvergenceWarning):
        """A solver stopped (``max_iter``, a work budget or a floor) before its gap reached
        ``tol``.

        Subclasses :class:`sklearn.exceptions.ConvergenceWarning`, so scikit-learn
        users' warning filters apply to it too.
        """

    ConvergenceWarning.__module__ = __name__
    ConvergenceWarning.__qualname__ = "ConvergenceWarning"
    return ConvergenceWarning


def __getattr__(name: str) -> Any:
    # ``solvers.base.ConvergenceWarning`` (and ``from solvers.base import ...``): one class,
    # built on first access (pickles by this name)
    if name == "ConvergenceWarning":
        return _convergence_warning()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class NumericalError(FloatingPointError):
    """A solver produced a non-finite value; the message names the iteration."""


class IncompatibleWarmStart(ValueError):
    """``init`` is a result of another problem (other shapes, classes or data)."""


# ---------------------------------------------------------------------------
# JIT compilation time (numba), kept out of every reported solve time
# ---------------------------------------------------------------------------

_jit_clock = threading.local()


def compile_seconds() -> float:
    """Seconds this thread has spent compiling or cache-loading numba kernels so far.

    Measured from numba's ``numba:compiler_lock`` events (outermost acquisition
    only): compiling a kernel and loading it from the on-disk cache both happen
    under that lock. Returns 0.0 when numba is not installed.

    Returns
    -------
    float
        The seconds, for this thread, since the process started.
    """
    return float(getattr(_jit_clock, "total", 0.0))


def _install_jit_clock() -> None:
    try:
        from numba.core import event as nb_event
    except ImportError:  # pragma: no cover - numba is a dependency
        return

    class _JitClock(nb_event.Listener):
        def on_start(self, event) -> None:
            depth = getattr(_jit_clock, "depth", 0)
            if depth == 0:
                _jit_clock.t0 = time.perf_counter()
            _jit_clock.depth = depth + 1

        def on_end(self, event) -> None:
            depth = getattr(_jit_clock, "depth", 1) - 1
            _jit_clock.depth = depth
            if depth == 0:
                _jit_clock.total = compile_seconds() + time.perf_counter() - _jit_clock.t0

    nb_event.register("numba:compiler_lock", _JitClock())


_install_jit_clock()


@njit(cache=True)
def relative_gap(gap: float, primal: float) -> float:  # pragma: no cover - compiled
    """Relative duality gap ``gap / max(1, |primal|)`` used by every stopping rule.

    Parameters
    ----------
    gap : float
        A duality gap (primal minus dual).
    primal : float
        The primal value.

    Returns
    -------
    float
        The gap relative to the primal value (absolute below 1).

    Examples
    --------
    >>> from solvers.base import relative_gap
    >>> relative_gap(0.5, 100.0), relative_gap(0.5, 0.1)
    (0.005, 0.5)
    """
    return float(gap) / max(1.0, abs(float(primal)))


@njit(cache=True)
def certified_row(primal: float, dual: float) -> tuple[float, float]:  # pragma: no cover
    """``(dual, gap)`` as a history row keeps them: ``gap = max(primal - dual, 0)``, and a
    ``dual`` above ``primal`` only by rounding (a valid lower bound cannot be above)
    set equal to it. Compiled, so a model's compiled loop records exactly as
    :meth:`Monitor.record` does."""
    if dual > primal and dual - primal <= _ROUNDING * max(1.0, abs(primal), abs(dual)):
        dual = primal
    return dual, max(primal - dual, 0.0)


class _Handover:
    """An array a solver gives to its result (see :func:`handover`)."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array


def handover(a: np.ndarray) -> Any:
    """Give ``a`` to a result without a copy.

    A result freezes a read-only copy of every array it is given, so that nothing the
    caller still holds can change it. A solver that allocated ``a`` itself (it owns its
    memory) and never touches it again passes ``handover(a)`` instead: the result then
    makes ``a`` read-only in place, which saves one copy of its largest array (WW-SVM's
    ``n x k`` dual). Anything else (a view, a non-array) is still copied.

    Parameters
    ----------
    a : ndarray
        An array the solver allocated and will not touch again.

    Returns
    -------
    object
        A wrapper the result's constructor recognises.
    """
    return _Handover(a)


def _frozen_array(a: Any) -> np.ndarray:
    if isinstance(a, _Handover):
        a = a.array
        if isinstance(a, np.ndarray) and a.base is None and a.flags.owndata:
            a.setflags(write=False)
            return a
    arr = np.array(a, copy=True)
    arr.setflags(write=False)
    return arr


def _jsonable(value: Any) -> Any:
    """Convert numpy containers and scalars to plain JSON-serialisable Python."""
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _state_without_proxies(obj: Any) -> dict[str, Any]:
    """Pickle state of a frozen result: read-only mappings become dicts (and are noted)."""
    state = dict(obj.__dict__)
    proxies = [k for k, v in state.items() if isinstance(v, MappingProxyType)]
    for k in proxies:
        state[k] = dict(state[k])
    state["__proxies__"] = proxies
    return state


def _restore_state(obj: Any, state: dict[str, Any]) -> None:
    state = dict(state)
    proxies = state.pop("__proxies__", [])
    for k, v in state.items():
        if isinstance(v, np.ndarray):
            v.setflags(write=False)
        elif k in proxies:
            for a in v.values():
                if isinstance(a, np.ndarray):
                    a.setflags(write=False)
            v = MappingProxyType(v)
        object.__setattr__(obj, k, v)


@dataclass(frozen=True, eq=False)
class History:
    """Per-iteration trace of a run, as read-only numpy arrays.

    Attributes
    ----------
    iteration, time, primal, dual, gap : ndarray
        One entry per recorded outer iteration; ``time`` is seconds since the
        solver started (callback time excluded).
    extras : Mapping[str, ndarray]
        Model-specific series of the same length (or, for per-iteration
        vectors such as kernel weights, shape ``(n_records, ...)``). They are
        also reachable as attributes: ``history.n_at_C``.
    """

    iteration: np.ndarray
    time: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    gap: np.ndarray
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("iteration", "time", "primal", "dual", "gap"):
            object.__setattr__(self, name, _frozen_array(getattr(self, name)))
        extras = {k: _frozen_array(v) for k, v in dict(self.extras).items()}
        object.__setattr__(self, "extras", MappingProxyType(extras))

    def __getattr__(self, name: str) -> np.ndarray:
        # Only called when normal lookup fails: expose extras as attributes.
        extras = self.__dict__.get("extras", {})
        if name in extras:
            return extras[name]
        raise AttributeError(f"History has no series {name!r}; extras: {sorted(extras)}")

    def __len__(self) -> int:
        return int(self.iteration.shape[0])

    def __getstate__(self) -> dict[str, Any]:  # picklable (joblib, estimators' result_)
        return _state_without_proxies(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _restore_state(self, state)

    @property
    def rel_gap(self) -> np.ndarray:
        """Relative duality gap per iteration."""
        return self.gap / np.maximum(1.0, np.abs(self.primal))

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dictionary (JSON-serialisable) of every series."""
        out: dict[str, Any] = {
            name: _jsonable(getattr(self, name))
            for name in ("iteration", "time", "primal", "dual", "gap")
        }
        out["extras"] = {k: _jsonable(v) for k, v in self.extras.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> History:
        """Inverse of :meth:`to_dict`."""
        return cls(
            iteration=np.asarray(data["iteration"], dtype=int),
            time=np.asarray(data["time"], dtype=float),
            primal=np.asarray(data["primal"], dtype=float),
            dual=np.asarray(data["dual"], dtype=float),
            gap=np.asarray(data["gap"], dtype=float),
            extras={k: np.asarray(v) for k, v in data.get("extras", {}).items()},
        )


@dataclass(frozen=True, eq=False, kw_only=True)
class Result:
    """Common part of every solver result (models subclass it with their arrays).

    Attributes
    ----------
    primal : float
        Primal objective at the returned solution.
    dual : float
        Dual objective at a feasible dual point (a lower bound on the optimum,
        for minimisation problems).
    gap : float
        ``primal - dual >= 0``: a certified bound on the suboptimality of the
        returned primal solution.
    n_iter : int
        Outer iterations run.
    converged : bool
        Whether the relative gap reached ``tol``.
    time : float
        Wall-clock seconds of the solve (callback time and JIT compilation excluded).
    history : History
        Per-iteration trace.
    method : str
        Algorithm that produced the result.
    params : Mapping[str, Any]
        The scalar parameters of the solve (for display, JSON and warm starts).
    stop_reason : str
        Why the run stopped, one of :data:`~solvers.base.STOP_REASONS`.
    compile_time : float
        Seconds of numba compilation / cache loading that happened during the
        solve (excluded from ``time``).
    """

    primal: float
    dual: float
    gap: float
    n_iter: int
    converged: bool
    time: float
    history: History
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)
    stop_reason: str = "converged"
    compile_time: float = 0.0

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (np.ndarray, _Handover)):
                object.__setattr__(self, f.name, _frozen_array(value))
            elif isinstance(value, list) and value and isinstance(value[0], np.ndarray):
                object.__setattr__(self, f.name, tuple(_frozen_array(v) for v in value))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def __getstate__(self) -> dict[str, Any]:  # picklable (joblib, estimators' result_)
        return _state_without_proxies(self)

    def __setstate__(self, state: dict[str, Any]) -> None:
        _restore_state(self, state)

    @property
    def rel_gap(self) -> float:
        """Relative duality gap ``gap / max(1, |primal|)``."""
        return relative_gap(self.gap, self.primal)

    def arrays(self) -> dict[str, Any]:
        """The model's named solution arrays (fields beyond the common ones)."""
        common = {f.name for f in dataclasses.fields(Result)}
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in common
        }

    def to_dict(self, *, include_arrays: bool = False) -> dict[str, Any]:
        """JSON-serialisable summary: scalars, parameters, history (and arrays)."""
        out: dict[str, Any] = {
            "model": type(self).__module__.rsplit(".", 1)[-1],
            "method": self.method,
            "params": _jsonable(dict(self.params)),
            "primal": _jsonable(self.primal),
            "dual": _jsonable(self.dual),
            "gap": _jsonable(self.gap),
            "rel_gap": _jsonable(self.rel_gap),
            "n_iter": int(self.n_iter),
            "converged": bool(self.converged),
            "stop_reason": str(self.stop_reason),
            "time": float(self.time),
            "compile_time": float(self.compile_time),
            "history": self.history.to_dict(),
        }
        if include_arrays:
            out["arrays"] = {k: _jsonable(v) for k, v in self.arrays().items()}
        return out


@dataclass(frozen=True, eq=False)
class IterationState:
    """What a callback receives once per outer iteration.

    Attributes
    ----------
    iteration : int
    time : float
        Seconds since the solve started (callback time excluded).
    primal, dual, gap, rel_gap : float
    iterate : Mapping[str, Any]
        The model's current named arrays (copies, safe to keep).
    extras : Mapping[str, Any]
        The model-specific figures recorded for this iteration.
    """

    iteration: int
    time: float
    primal: float
    dual: float
    gap: float
    rel_gap: float
    iterate: Mapping[str, Any]
    extras: Mapping[str, Any]


Callback = Callable[[IterationState], "bool | None"]


class Monitor:
    """Bookkeeping of one solver run: history, stopping, callback, warnings.

    Usage inside a solver's outer loop::

        mon = Monitor("wwsvm", tol=tol, max_iter=max_iter, callback=callback)
        for it in range(1, max_iter + 1):
            ...                                  # one outer iteration
            mon.charge(work_done)                # optional: a total work budget
            if mon.record(it, primal, dual, iterate={"W": W}, n_free=nf):
                break
        fields = mon.result_fields()            # primal, dual, gap, stop_reason, ...

    Parameters
    ----------
    name : str
        Solver name used in warnings and error messages.
    tol : float
        Relative duality-gap tolerance.
    max_iter : int
        Iteration budget; :meth:`finish` warns when it was exhausted.
    callback : callable or None
        ``callback(state)``; returning ``False`` stops the run.
    gap_is_bound : bool
        ``False`` only where a spec allows an estimate instead of a certificate;
        the warning and the result then say so.
    budget : float or None
        Total work budget in ``budget_unit`` (charged with :meth:`charge`); when
        it is used up :meth:`record` stops the run with ``stop_reason="budget"``.
    budget_unit : str
        What the budget counts, for the warning ("SVDs", "prox evaluations", ...).
    """

    def __init__(
        self,
        name: str,
        *,
        tol: float,
        max_iter: int,
        callback: Callback | None = None,
        gap_is_bound: bool = True,
        budget: float | None = None,
        budget_unit: str = "work units",
    ) -> None:
        self.name = name
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.callback = callback
        self.gap_is_bound = gap_is_bound
        self.budget = None if budget is None else float(budget)
        self.budget_unit = budget_unit
        self.work = 0.0
        self._t0 = time.perf_counter()
        self._jit0 = compile_seconds()
        self._paused = 0.0
        self._rows: dict[str, list[float]] = {
            "iteration": [], "time": [], "primal": [], "dual": [], "gap": []
        }
        self._extras: dict[str, list[Any]] = {}
        self.converged = False
        self.n_iter = 0
        self._reason: str | None = None
        self._reason_text = ""
        self._warned = False

    # -- time -------------------------------------------------------------

    def compile_time(self) -> float:
        """JIT seconds (numba compile / cache load) spent in this thread since the start."""
        return compile_seconds() - self._jit0

    def elapsed(self) -> float:
        """Solver seconds so far, callback time and JIT compilation excluded."""
        return time.perf_counter() - self._t0 - self._paused - self.compile_time()

    # -- stopping ---------------------------------------------------------

    @property
    def stop_reason(self) -> str:
        """Why the run stopped (or would stop now): one of :data:`~solvers.base.STOP_REASONS`."""
        if self.converged:
            return "converged"
        return self._reason or "max_iter"

    @property
    def stopped_by_callback(self) -> bool:
        return self._reason == "callback" and not self.converged

    def stop(self, reason: str, message: str = "") -> None:
        """Ask the run to stop for ``reason`` (``"floor"``, ``"budget"``, ...).

        ``message`` explains it in the :class:`ConvergenceWarning` that
        :meth:`finish` issues (for every reason but ``"converged"`` and
        ``"callback"``). The solver's loop must still break out; :meth:`record`
        returns ``True`` from now on.
        """
        if reason not in STOP_REASONS:
            raise ValueError(f"reason must be one of {STOP_REASONS}, got {reason!r}")
        self._reason = reason
        self._reason_text = message

    def charge(self, amount: float = 1.0) -> bool:
        """Add ``amount`` to the work used; ``True`` (and stop) when the budget is used up."""
        self.work += float(amount)
        if self.budget is not None and self.work >= self.budget and self._reason is None:
            self.stop(
                "budget",
                f"the work budget of {self.budget:g} {self.budget_unit} ran out",
            )
        return self._reason is not None

    def check_finite(self, iteration: int, **values: Any) -> None:
        """Raise :class:`NumericalError` naming the first non-finite value."""
        for key, val in values.items():
            ok = math.isfinite(val) if isinstance(val, float) else bool(np.all(np.isfinite(val)))
            if not ok:
                raise NumericalError(
                    f"{self.name}: non-finite {key} at iteration {iteration} "
                    "(numerical breakdown; check the data scale and parameters)"
                )

    def record(
        self,
        iteration: int,
        primal: float,
        dual: float,
        *,
        iterate: Mapping[str, Any] | None = None,
        **extras: Any,
    ) -> bool:
        """Record one outer iteration; return ``True`` when the solver must stop.

        The stored gap is ``max(primal - dual, 0)``: a negative value can only
        come from rounding when ``dual`` is a valid lower bound. The run stops
        when the relative gap reaches ``tol``, when the callback returns
        ``False``, when :meth:`stop` was called or the work budget ran out.
        """
        primal = float(primal)
        dual = float(dual)
        self.check_finite(iteration, primal_objective=primal, dual_objective=dual)
        dual, gap = certified_row(primal, dual)
        t = self.elapsed()
        self.n_iter = int(iteration)
        for key, val in (("iteration", iteration), ("time", t), ("primal", primal),
                         ("dual", dual), ("gap", gap)):
            self._rows[key].append(val)
        for key, val in extras.items():
            self._extras.setdefault(key, []).append(val)
        rel = relative_gap(gap, primal)
        self.converged = rel <= self.tol
        stop = self.converged or self._reason is not None
        if self.callback is not None:
            state = IterationState(
                iteration=int(iteration), time=t, primal=primal, dual=dual, gap=gap,
                rel_gap=rel, iterate=MappingProxyType(dict(iterate or {})),
                extras=MappingProxyType(dict(extras)),
            )
            t_cb = time.perf_counter()
            try:
                answer = self.callback(state)
            finally:
                self._paused += time.perf_counter() - t_cb
            if answer is False and not self.converged:
                self.stop("callback")
                stop = True
        return stop

    def record_rows(self, iterations: np.ndarray, times: np.ndarray, primal: np.ndarray,
                    dual: np.ndarray, gap: np.ndarray, converged: bool,
                    **extras: Any) -> bool:
        """Record consecutive outer iterations that a compiled loop ran without Python in
        between; return ``True`` when the solver must stop. Each row is what
        :meth:`record` would store: ``dual`` and ``gap`` from ``certified_row``,
        ``times`` the loop's own measurements on this monitor's clock, ``converged``
        whether the last row's relative gap reached ``tol`` (the loop stops there).
        ``extras``: per-row arrays, or one value for every row. Such loops run only
        without a callback."""
        if self.callback is not None:
            raise ValueError("record_rows: a callback must see every iteration (use record)")
        n = len(iterations)
        if n == 0:
            return self.converged or self._reason is not None
        primal = np.asarray(primal, dtype=float)
        dual = np.asarray(dual, dtype=float)
        self.check_finite(int(iterations[-1]), primal_objective=primal, dual_objective=dual)
        for key, vals in (("iteration", np.asarray(iterations, dtype=np.int64)),
                          ("time", times), ("primal", primal), ("dual", dual), ("gap", gap)):
            self._rows[key].extend(np.asarray(vals).tolist())
        for key, val in extras.items():
            col = val.tolist() if isinstance(val, np.ndarray) else [val] * n
            self._extras.setdefault(key, []).extend(col)
        self.n_iter = int(iterations[-1])
        self.converged = bool(converged)
        return self.converged or self._reason is not None

    def warning_text(self) -> str:
        """The :class:`ConvergenceWarning` text of the stop reason ('' when none is due)."""
        reason = self.stop_reason
        if reason in ("converged", "callback"):
            return ""
        last = self._rows["gap"][-1] if self._rows["gap"] else float("nan")
        prim = self._rows["primal"][-1] if self._rows["primal"] else float("nan")
        rel = last / max(1.0, abs(prim)) if self._rows["gap"] else float("nan")
        kind = "duality gap" if self.gap_is_bound else "gap estimate"
        where = f"{kind} {last:.3e} (relative {rel:.2e}) above tol={self.tol:g}"
        if reason == "max_iter":
            return (f"{self.name}: stopped after max_iter={self.max_iter} iterations with "
                    f"{where}; increase max_iter or tol.")
        if reason == "budget":
            return (f"{self.name}: stopped after {self.n_iter} iterations: "
                    f"{self._reason_text} (used {self.work:g}) with {where}; "
                    "increase the budget or tol.")
        return f"{self.name}: stopped at a floor with {where}: {self._reason_text}"

    def warn(self) -> None:
        """Issue the :class:`ConvergenceWarning` of the stop reason when one is due, once
        (:meth:`finish` calls it)."""
        if self._warned:
            return
        self._warned = True
        text = self.warning_text()
        if text:
            warnings.warn(text, _convergence_warning(), stacklevel=_caller_stacklevel())

    def finish(self) -> tuple[History, bool]:
        """Build the :class:`History`; warn when the run stopped unconverged (not by callback)."""
        self.warn()
        extras = {}
        for key, vals in self._extras.items():
            extras[key] = np.asarray(vals)
        hist = History(
            iteration=np.asarray(self._rows["iteration"], dtype=int),
            time=np.asarray(self._rows["time"], dtype=float),
            primal=np.asarray(self._rows["primal"], dtype=float),
            dual=np.asarray(self._rows["dual"], dtype=float),
            gap=np.asarray(self._rows["gap"], dtype=float),
            extras=extras,
        )
        return hist, self.converged

    def summary(self) -> dict[str, Any]:
        """The common :class:`Result` fields of the finished run but ``history`` (warns as
        :meth:`finish` does), for a solver that builds its history only when asked."""
        self.warn()
        rows = self._rows
        if not rows["primal"]:
            raise RuntimeError(f"{self.name}: no iteration was recorded")
        return {
            "primal": float(rows["primal"][-1]),
            "dual": float(rows["dual"][-1]),
            "gap": float(rows["gap"][-1]),
            "n_iter": self.n_iter,
            "converged": self.converged,
            "time": self.elapsed(),
            "stop_reason": self.stop_reason,
            "compile_time": self.compile_time(),
        }

    def result_fields(self) -> dict[str, Any]:
        """The common :class:`Result` fields of the finished run (calls :meth:`finish`)."""
        fields = self.summary()
        fields["history"] = self.finish()[0]
        return fields


class SlowProgress:
    """A slow tail: the relative gap fell by less than the factor ``rate`` over the last
    ``window`` iterations (compared with the newest recorded iteration at least
    ``window`` before). ``method="auto"`` of a model leaves its first method for a
    second one the first time this holds, and names the iteration (``at``).

    Parameters
    ----------
    window : int
        Iterations (or epochs) the progress is measured over.
    rate : float
        The factor the relative gap must have fallen by over ``window``.
    active : bool
        When False, :meth:`update` always answers False.

    Examples
    --------
    >>> from solvers.base import SlowProgress
    >>> slow = SlowProgress(2, 0.5)
    >>> [slow.update(it, rel) for it, rel in enumerate([1.0, 0.4, 0.3, 0.25], 1)]
    [False, False, False, True]
    >>> slow.at
    4
    """

    def __init__(self, window: int, rate: float, active: bool = True) -> None:
        self.window, self.rate, self.active = window, rate, active
        self.slow = False
        self.at = 0
        #: the relative gap given last (a run may also read it, e.g. for inner tolerances)
        self.last_rel = math.inf
        self._points: list[tuple[int, float]] = []

    def update(self, it: int, rel: float | None = None) -> bool:
        """Record the relative gap ``rel`` at iteration ``it`` (default
        :attr:`last_rel`) and return whether progress is slow; once it is, it stays
        so (and nothing more is recorded)."""
        if not self.active or self.slow:
            return self.slow
        rel = self.last_rel if rel is None else rel
        self.last_rel = rel
        self._points.append((it, rel))
        old = next((r for i, r in reversed(self._points) if i <= it - self.window), None)
        self.slow = old is not None and rel > self.rate * old
        if self.slow:
            self.at = it
        return self.slow


def _caller_stacklevel() -> int:
    """``stacklevel`` pointing a warning at the first frame outside :mod:`solvers` (and sklearn)."""
    import sys

    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None:
        mod = frame.f_globals.get("__name__", "")
        # scikit-learn's wrappers too (``_fit_context`` around an estimator's fit)
        if not (mod in ("solvers", "sklearn") or mod.startswith(("solvers.", "sklearn."))):
            return level
        frame = frame.f_back
        level += 1
    return 1
