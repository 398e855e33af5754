"""One declarative specification per model parameter.

Each model module declares its parameters once, as a :class:`ParamSpecs` of
:class:`~solvers.params.ParamSpec` (name, kind, default, range or choices, one line of help)::

    PARAMS = ParamSpecs(
        ParamSpec("C", 1.0, "loss weight", low=0.0),
        ParamSpec("method", "walrus", "block solver", choices=("walrus", "iterative")),
        TOL, MAX_ITER,
    )

    def solve(X, y, C=PARAMS.default("C"), *, method=PARAMS.default("method"), ...):
        v = PARAMS.validate(C=C, method=method, ...)

Everything else is derived from it: validation in ``solve`` (messages name the
argument), ``Result.params``, the dashboard's and CLI's parameters
(:mod:`explorer.registry` adds only UI ranges and log scales), the CLI help and
the scikit-learn estimators' ``__init__`` defaults and
``_parameter_constraints``. No default or choice list is written twice.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .validation import check_bool, check_choice, check_int, check_scalar

__all__ = ["MAX_ITER", "TOL", "ParamSpec", "ParamSpecs"]

_KINDS = ("float", "int", "choice", "bool", "object")


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: its name, default, kind and admissible values.

    Attributes
    ----------
    name : str
    default : Any
    doc : str
        One line for humans (CLI help, docstrings, the page's tooltips).
    kind : {"float", "int", "choice", "bool", "object"}
        Inferred from ``default`` / ``choices`` when omitted. ``"object"`` is
        validated by the solver itself (arrays, callables, ...).
    low, high : float or None
        Bounds of a numeric parameter (``None``: unbounded).
    low_inclusive, high_inclusive : bool
        Whether the bounds are admissible (default ``(low, high]``).
    allow_inf : bool
        Whether ``high = inf`` itself is admissible for a float.
    choices : tuple
        The admissible values of a ``"choice"`` parameter.
    user_default : Any, optional
        The default of the user-facing surfaces (the CLI, the scikit-learn estimator,
        the dashboard) when it differs from the solver function's ``default`` (the
        paper's); :attr:`surface_default` is what those surfaces use.
    """

    name: str
    default: Any
    doc: str = ""
    kind: str = ""
    low: float | None = None
    high: float | None = None
    low_inclusive: bool = False
    high_inclusive: bool = True
    allow_inf: bool = False
    choices: tuple[Any, ...] = ()
    user_default: Any = None

    @property
    def surface_default(self) -> Any:
        """The default of the CLI, the estimators and the pages: ``user_default`` when
        set, else ``default``."""
        return self.default if self.user_default is None else self.user_default

    def __post_init__(self) -> None:
        kind = self.kind
        if not kind:
            if self.choices:
                kind = "choice"
            elif isinstance(self.default, bool):
                kind = "bool"
            elif isinstance(self.default, int):
                kind = "int"
            elif isinstance(self.default, float):
                kind = "float"
            else:
                kind = "object"
            object.__setattr__(self, "kind", kind)
        if kind not in _KINDS:
            raise ValueError(f"ParamSpec {self.name!r}: kind must be one of {_KINDS}")
        object.__setattr__(self, "choices", tuple(self.choices))
        if kind == "choice" and self.default not in self.choices:
            raise ValueError(f"ParamSpec {self.name!r}: default not among its choices")
        if self.default is not None and kind in ("float", "int", "choice", "bool"):
            self.validate(self.default)  # the declared default must be admissible

    def validate(self, value: Any) -> Any:
        """Return ``value`` cleaned (float / int / bool / choice) or raise naming it."""
        if self.kind == "float":
            return check_scalar(
                value, self.name, low=self.low, high=self.high,
                low_inclusive=self.low_inclusive, high_inclusive=self.high_inclusive,
                allow_inf=self.allow_inf,
            )
        if self.kind == "int":
            lo = None if self.low is None else math.ceil(self.low + (0 if self.low_inclusive
                                                                      else 1e-9))
            # unbounded above: still a machine integer (compiled kernels take int64)
            hi = INT64_MAX if self.high is None else math.floor(self.high)
            return check_int(value, self.name, low=lo, high=hi)
        if self.kind == "bool":
            return check_bool(value, self.name)
        if self.kind == "choice":
            if isinstance(value, str) or not isinstance(value, (float, int)):
                return check_choice(value, self.name, self.choices)
            # numbers among choices (e.g. p in {1, 2, inf}): compare by value
            for c in self.choices:
                if not isinstance(c, str) and float(c) == float(value):
                    return c
            return check_choice(value, self.name, self.choices)
        return value

    def describe(self) -> str:
        """The admissible values in words: ``(0, inf)``, ``one of 'a', 'b'``, ``true/false``."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind == "bool":
            return "true/false"
        if self.kind in ("float", "int"):
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            lb = "[" if self.low_inclusive else "("
            rb = "]" if (self.high_inclusive and (self.high is not None or self.allow_inf)) \
                else ")"
            return f"{'integer in ' if self.kind == 'int' else ''}{lb}{lo}, {hi}{rb}"
        return "see the docstring"

    def sklearn_constraint(self) -> list[Any] | str:
        """This parameter's entry of a scikit-learn ``_parameter_constraints`` dict."""
        from numbers import Integral, Real

        from sklearn.utils._param_validation import Interval, StrOptions

        if self.kind == "float":
            closed = {(True, True): "both", (True, False): "left",
                      (False, True): "right", (False, False): "neither"}[
                (self.low_inclusive, self.high_inclusive if self.high is not None else False)]
            return [Interval(Real, self.low, self.high, closed=closed)]
        if self.kind == "int":
            lo = None if self.low is None else math.ceil(self.low + (0 if self.low_inclusive
                                                                      else 1e-9))
            hi = None if self.high is None else math.floor(self.high)
            closed = {(True, True): "both", (True, False): "left",
                      (False, True): "right", (False, False): "neither"}[
                (lo is not None, hi is not None)]  # integer intervals: None bounds open
            return [Interval(Integral, lo, hi, closed=closed)]
        if self.kind == "bool":
            return ["boolean"]
        if self.kind == "choice":
            strs = {c for c in self.choices if isinstance(c, str)}
            others = [c for c in self.choices if not isinstance(c, str)]
            out: list[Any] = [StrOptions(strs)] if strs else []
            if others:
                out.append(Real)  # numeric choices are checked again by the solver
            return out
        return "no_validation"  # scikit-learn takes this string, not a list


class ParamSpecs(Mapping[str, ParamSpec]):
    """An ordered, read-only collection of :class:`~solvers.params.ParamSpec` (a model's
    parameters)."""

    def __init__(self, *specs: ParamSpec) -> None:
        self._specs: dict[str, ParamSpec] = {}
        for s in specs:
            if s.name in self._specs:
                raise ValueError(f"parameter {s.name!r} declared twice")
            self._specs[s.name] = s

    def __getitem__(self, name: str) -> ParamSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise KeyError(f"no parameter {name!r}; declared: {list(self._specs)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def __repr__(self) -> str:
        return f"ParamSpecs({', '.join(self._specs)})"

    def default(self, name: str) -> Any:
        """The declared default of ``name`` (use it in the solver's signature)."""
        return self[name].default

    def defaults(self) -> dict[str, Any]:
        """Every declared default."""
        return {k: s.default for k, s in self._specs.items()}

    def validate(self, **values: Any) -> dict[str, Any]:
        """Validate each given value against its spec; return the cleaned values."""
        return {k: self[k].validate(v) for k, v in values.items()}

    def record(self, **values: Any) -> dict[str, Any]:
        """The ``params`` a result records: every declared parameter, in declared order.

        Parameters
        ----------
        **values
            The value each declared parameter took in the run, plus any extra option
            (a private ``_name`` switch, or a data-dependent value) after them.

        Returns
        -------
        dict
            Declared parameters first, then the extras, as given.

        Raises
        ------
        ValueError
            A declared parameter is missing (a result must say how it was computed).

        Examples
        --------
        >>> from solvers.params import MAX_ITER, TOL, ParamSpecs
        >>> ParamSpecs(TOL, MAX_ITER).record(max_iter=10, tol=1e-6, _seed=0)
        {'tol': 1e-06, 'max_iter': 10, '_seed': 0}
        """
        missing = [k for k in self._specs if k not in values]
        if missing:
            raise ValueError(f"result params miss declared parameter(s) {missing}")
        out = {k: values[k] for k in self._specs}
        out.update((k, v) for k, v in values.items() if k not in self._specs)
        return out

    def extend(self, *specs: ParamSpec, drop: tuple[str, ...] = ()) -> ParamSpecs:
        """A new collection with ``specs`` added (replacing same names) and ``drop`` removed."""
        merged = {k: v for k, v in self._specs.items() if k not in drop}
        for s in specs:
            merged[s.name] = s
        return ParamSpecs(*merged.values())


#: Largest value of an ``int`` parameter without an upper bound (an int64).
INT64_MAX = 2**63 - 1

#: The stopping tolerance every solver shares (relative duality gap).
TOL = ParamSpec("tol", 1e-6, "relative duality-gap tolerance", low=0.0, high=1.0,
                high_inclusive=False)
#: The outer-iteration budget every solver shares.
MAX_ITER = ParamSpec("max_iter", 1000, "outer-iteration budget", kind="int", low=1,
                     low_inclusive=True)
