"""Model registration: how a model plugs into the CLI, the benchmarks and the dashboard.

Every subpackage of ``explorer.models`` defines a module-level ``ENTRY``
(a :class:`ModelEntry`). :func:`entries` discovers them; nothing else in the
project lists the models, so adding a model means adding one subpackage.

Importing this module (and an entry) never imports streamlit or plotly: the
dashboard page is named by a ``"module:function"`` string and imported only
when the app renders it.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["Dataset", "ModelEntry", "Param", "Problem", "entries", "get", "ui_param"]


@dataclass(frozen=True)
class Problem:
    """A dataset instance ready for a model's ``solve``.

    Attributes
    ----------
    data : Mapping[str, Any]
        Keyword arguments of the solver's data (``{"X": ..., "y": ...}`` or
        ``{"Xs": [...], "ys": [...]}``).
    name : str
        Dataset name.
    description : str
        One line for humans (sizes, provenance).
    info : Mapping[str, Any]
        Anything else the page or the tests may want (ground truth, feature
        names, test split, ...).
    """

    data: Mapping[str, Any]
    name: str
    description: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dataset:
    """A dataset generator or loader.

    ``make(seed=0, **sizes) -> Problem``. ``sizes`` maps each size keyword to
    ``(default, low, high)`` (ints or floats) for the CLI and the page controls;
    the CLI refuses values outside ``[low, high]`` unless ``--force``.

    ``memory(sizes) -> bytes`` and ``seconds(sizes) -> seconds`` are the dataset's
    cost model: estimates of building the problem and one solve at the default
    parameters (``sizes``: every size keyword, defaults filled in), single-threaded CPU,
    given as callables or as ``"module:function"`` strings (imported on use), or both at
    once as ``cost``, an :class:`explorer.estimates.Cost` or a ``"module:NAME"`` string
    (the registry's datasets name their model's ``costs`` module, fitted to measured
    runs).
    :meth:`estimate` is the one entry point the CLI's size check, the page's guard and
    the sweep call; without a model it falls back to a rough guess from the sizes
    (8 bytes x the product of the integer sizes x 8 working copies) and no time.

    Attributes
    ----------
    name : str
        The key in its model's ``datasets``.
    title : str
        A one-line description (the page's choice list).
    make : callable
        ``make(seed=0, **sizes) -> Problem``.
    sizes : Mapping[str, tuple]
        ``(default, low, high)`` of each size keyword.
    real : bool
        Real data (a loader) rather than a generator.
    memory, seconds : callable, str or None
        The cost model (above).
    """

    name: str
    title: str
    make: Callable[..., Problem]
    sizes: Mapping[str, tuple[Any, Any, Any]] = field(default_factory=dict)
    real: bool = False
    memory: Callable[[Mapping[str, Any]], float] | str | None = None
    seconds: Callable[[Mapping[str, Any]], float] | str | None = None
    cost: Any = None

    def cost_model(self) -> Any:
        """The dataset's :class:`explorer.estimates.Cost` (``cost``, imported when given
        as ``"module:NAME"``), or None."""
        return _load(self.cost) if isinstance(self.cost, str) else self.cost

    def full_sizes(self, **sizes: Any) -> dict[str, Any]:
        """``sizes`` with the defaults of the sizes not given."""
        return {**{k: v[0] for k, v in self.sizes.items()}, **sizes}

    def estimate(self, sizes: Mapping[str, Any]) -> tuple[float, float | None]:
        """``(bytes, seconds or None)`` of building the problem and one solve at ``sizes``
        (defaults filled in): the dataset's cost model (None: no time model)."""
        full = self.full_sizes(**sizes)
        memory = _load(self.memory) if isinstance(self.memory, str) else self.memory
        seconds = _load(self.seconds) if isinstance(self.seconds, str) else self.seconds
        cost = self.cost_model()
        if cost is not None:
            memory, seconds = memory or cost.memory, seconds or cost.seconds
        if memory is not None:
            mem = float(memory(full))
        else:
            prod = 1.0
            for v in full.values():
                if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    prod *= v
            mem = 8.0 * 8.0 * prod
        secs = float(seconds(full)) if seconds is not None else None
        return mem, secs

    def __call__(self, seed: int = 0, **sizes: Any) -> Problem:
        kwargs = {k: v[0] for k, v in self.sizes.items()}
        unknown = set(sizes) - set(kwargs)
        if unknown:
            raise ValueError(
                f"dataset {self.name!r} has no size parameter(s) {sorted(unknown)}; "
                f"available: {sorted(kwargs)}"
            )
        kwargs.update(sizes)
        return self.make(seed=seed, **kwargs)


@dataclass(frozen=True)
class Param:
    """A model parameter as the CLI and the dashboard see it.

    ``kind`` is ``"float"``, ``"int"``, ``"choice"`` or ``"bool"``; ``log``
    marks parameters that span decades (log-scale sliders); ``step`` is the slider
    step of a linear float parameter (default: a hundredth of its range).

    Attributes
    ----------
    name : str
        The solver keyword.
    default : Any
        Its default value.
    help : str
        One line for ``--help`` and the page's tooltip.
    kind : {"float", "int", "choice", "bool"}
        How it is parsed and shown.
    low, high : float or None
        The UI range.
    log : bool
        A log-scale slider.
    choices : tuple
        The values of a ``"choice"``.
    step : float or None
        The slider step.
    spec : ParamSpec or None
        The solver's spec, which validates values.
    """

    name: str
    default: Any
    help: str = ""
    kind: str = "float"
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()
    step: float | None = None
    spec: Any = None  # the solver's solvers.params.ParamSpec, when derived from one

    @property
    def values(self) -> tuple[Any, ...]:
        """Every value of a ``"choice"`` or ``"bool"`` parameter (``()`` for a number)."""
        if self.kind == "choice":
            return tuple(self.choices)
        return (False, True) if self.kind == "bool" else ()

    def parse(self, text: str) -> Any:
        """Parse a command-line value (validated by the solver's spec when there is one)."""
        value = self._parse(text)
        return self.spec.validate(value) if self.spec is not None else value

    def _parse(self, text: str) -> Any:
        if self.kind == "float":
            return float(text)
        if self.kind == "int":
            return int(text)
        if self.kind == "bool":
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"{self.name} expects true/false, got {text!r}")
        if self.kind == "choice":
            for c in self.choices:
                if str(c) == text:
                    return c
            raise ValueError(f"{self.name} must be one of {list(self.choices)}, got {text!r}")
        return text


def ui_param(spec: Any, *, low: float | None = None, high: float | None = None,
             log: bool = False, step: float | None = None) -> Param:
    """The dashboard/CLI view of a solver's :class:`solvers.params.ParamSpec`.

    Default, help, kind and choices come from the spec (written once, in the
    solver module); only the UI range (``low``/``high``, default: the spec's
    bounds), the log scale and the slider step are added here.

    Parameters
    ----------
    spec : solvers.params.ParamSpec
        The solver's parameter.
    low, high : float, optional
        The UI range (default: the spec's bounds).
    log : bool
        A log-scale slider.
    step : float, optional
        The slider step of a linear float parameter.

    Returns
    -------
    Param
        The parameter as the CLI and the dashboard show it.

    Examples
    --------
    >>> from explorer.registry import ui_param
    >>> from solvers import wwsvm
    >>> p = ui_param(wwsvm.PARAMS["C"], low=1e-3, high=1e3, log=True)
    >>> p.name, p.kind, p.default == wwsvm.PARAMS.default("C")
    ('C', 'float', True)
    """
    return Param(
        name=spec.name, default=spec.surface_default, help=spec.doc, kind=spec.kind,
        low=spec.low if low is None else low, high=spec.high if high is None else high,
        log=log, choices=tuple(spec.choices), step=step, spec=spec,
    )


@dataclass(frozen=True)
class ModelEntry:
    """Everything the CLI, the benchmarks and the dashboard need about one model.

    Attributes
    ----------
    name : str
        Module name under :mod:`solvers` (``"wwsvm"``).
    title, summary : str
        Human-readable name and one paragraph.
    datasets : Mapping[str, Dataset]
        Available datasets; the first is the default.
    params : tuple[Param, ...]
        Model and solver parameters (not ``tol`` / ``max_iter``, which every
        model has).
    solve : callable
        ``solve(problem, *, tol, max_iter, init=None, callback=None, **params) -> Result``.
    reference : callable
        ``reference(problem, **params) -> ReferenceResult`` (cvxpy); solver-only
        params (method, seed, ...) are ignored.
    reference_cost : callable
        ``reference_cost(problem) -> int``: the problem size the cvxpy
        limit is compared to (e.g. the number of scalar variables).
    reference_limit : int
        Above this ``reference_cost`` the dashboard and ``check`` refuse to run cvxpy.
    bench : str
        ``"module:function"`` of the benchmark,
        ``run(quick: bool, progress: callable) -> BenchReport`` (imported when run).
    page : str
        ``"module:function"`` of the dashboard page's ``render()``.
    order : int
        Position in menus.
    tol, max_iter : float, int
        Defaults for the CLI and the page.
    sweep_hooks : str
        Optional module of the model's sweep hooks: its ``HOOKS`` implements
        :class:`explorer.sweep.SweepHooks` (held-out ``score``, ``split`` for
        cross-validation, ``structure`` summary). Empty: the
        module ``explorer.models.<name>.sweep`` if it exists, else none.
    warm_combos : tuple[Mapping[str, Any], ...]
        Combinations of two or more parameter values that :mod:`explorer.warmup` also
        solves (it varies one parameter at a time): those whose compiled kernels no
        single change reaches (a loss and a metric shape whose loop only the two
        together select). ``tests/test_warmup.py`` finds them: it fails while any pair
        of choice values still compiles something after the warm-up.
    tiny : Mapping[str, Any]
        Sizes of a tiny instance of the default dataset (solved in well under a second)
        on which ``tests/test_contract.py`` checks the product contract. Empty: every
        size at its lower bound.
    tiny_params : Mapping[str, Any]
        Parameters that make the tiny instance non-trivial (e.g. weights small enough
        that the solution is not zero).
    """

    name: str
    title: str
    summary: str
    datasets: Mapping[str, Dataset]
    params: tuple[Param, ...]
    solve: Callable[..., Any]
    reference: Callable[..., Any]
    reference_cost: Callable[[Problem], int]
    reference_limit: int
    bench: str
    page: str
    order: int = 100
    icon: str = ":material/functions:"
    tol: float = 1e-6
    max_iter: int = 1000
    sweep_hooks: str = ""
    warm_combos: tuple[Mapping[str, Any], ...] = ()
    tiny: Mapping[str, Any] = field(default_factory=dict)
    tiny_params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def default_dataset(self) -> str:
        return next(iter(self.datasets))

    def dataset(self, name: str | None = None) -> tuple[str, Dataset]:
        """``(name, Dataset)`` of built-in dataset ``name`` (default: the first);
        ``ValueError`` lists the available ones. A user's file as well:
        :func:`explorer.datasource.resolve`."""
        ds_name = name or self.default_dataset
        if ds_name not in self.datasets:
            raise ValueError(f"model {self.name} has no dataset {ds_name!r}; "
                             f"available: {list(self.datasets)}")
        return ds_name, self.datasets[ds_name]

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"model {self.name!r} has no parameter {name!r}; "
                       f"available: {[p.name for p in self.params]}")

    def default_params(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def reference_refusal(self, problem: Problem) -> str | None:
        """A message explaining why cvxpy is not run on this problem, or None."""
        cost = int(self.reference_cost(problem))
        if cost > self.reference_limit:
            return (
                f"cvxpy reference refused: this problem has size {cost:,} "
                f"(limit {self.reference_limit:,}); a generic conic solver would take "
                "minutes. Reduce the dataset size to compare."
            )
        return None

    def run_bench(self, *, quick: bool = False, progress: Callable[[str], Any] = print,
                  real: bool = False) -> Any:
        """Run the model's benchmark (``quick``: smaller sizes) and return its report.

        ``real``: only its real-data tables, the function ``real(progress)`` next to the
        benchmark's (``ValueError`` when the model has none).
        """
        if not real:
            return _load(self.bench)(quick=quick, progress=progress)
        mod = self.bench.partition(":")[0]
        fn = getattr(importlib.import_module(mod), "real", None)
        if fn is None:
            raise ValueError(f"the {self.name} benchmark has no real-data tables")
        return fn(progress=progress)

    def render_page(self) -> None:
        _load(self.page)()

    def hooks(self) -> Any:
        """The model's sweep hooks module (see ``sweep_hooks``), or None."""
        name = self.sweep_hooks or f"explorer.models.{self.name}.sweep"
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if self.sweep_hooks or exc.name != name:
                raise
            return None


def _load(target: str) -> Callable[..., Any]:
    mod, _, fn = target.partition(":")
    return getattr(importlib.import_module(mod), fn)


@cache
def entries() -> tuple[ModelEntry, ...]:
    """All registered models (each subpackage of ``explorer.models`` with an ``ENTRY``).

    Returns
    -------
    tuple of ModelEntry
        In the entries' ``order`` (the dashboard's navigation order), then by name.

    Examples
    --------
    >>> from explorer import registry
    >>> [e.name for e in registry.entries()]
    ['wwsvm', 'caso', 'robust_mtl', 'triplet_screening', 'mtmkl']
    """
    import explorer.models as pkg

    found = []
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        entry = getattr(mod, "ENTRY", None)
        if isinstance(entry, ModelEntry):
            found.append(entry)
    return tuple(sorted(found, key=lambda e: (e.order, e.name)))


def get(name: str) -> ModelEntry:
    """The entry of model ``name``; ``KeyError`` lists the registered models.

    Parameters
    ----------
    name : str
        A model name (``solvers.MODELS``).

    Returns
    -------
    ModelEntry
        Its datasets, parameters, solve and reference adapters.

    Examples
    --------
    >>> from explorer import registry
    >>> entry = registry.get("wwsvm")
    >>> entry.name, entry.default_dataset in entry.datasets
    ('wwsvm', True)
    >>> problem = entry.datasets[entry.default_dataset](seed=0, **entry.tiny)
    >>> res = entry.solve(problem, tol=1e-6, max_iter=1000)
    >>> res.stop_reason
    'converged'
    """
    for e in entries():
        if e.name == name:
            return e
    raise KeyError(f"unknown model {name!r}; registered: {[e.name for e in entries()]}")
