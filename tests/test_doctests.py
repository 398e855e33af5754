"""The docstrings of the public API: complete (numpydoc) and their Examples run.

The public API is every name of ``__all__`` of the modules below (those the site's API
reference documents, less the CLI): each model, the estimators, saved models, the
shared results (``solvers.base``), the registry, the data files, the sweeps and the
documentation site's builder. Every function and class there has a summary line and, where it takes
arguments, a ``Parameters`` section (``Attributes`` for a record class); every function
that returns something has ``Returns`` (or ``Yields``). The ``Examples`` sections of
those docstrings (and of the modules themselves) run here as doctests, on tiny
instances: the whole file takes seconds once numba's cache holds the kernels.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import types
from typing import Any

import pytest

#: The modules whose ``__all__`` is the documented public API.
PUBLIC_MODULES = (
    "solvers.wwsvm", "solvers.caso", "solvers.robust_mtl", "solvers.triplet_screening",
    "solvers.mtmkl", "solvers.estimators", "solvers.saved", "solvers.base",
    "explorer.registry", "explorer.datafiles", "explorer.readers", "explorer.sweep",
    "explorer.docs", "explorer.datasource", "solvers.scoring", "solvers.preprocess",
)
_SECTION = re.compile(r"^[ \t]*([A-Z][A-Za-z ]+)\n[ \t]*-{3,}[ \t]*$", re.M)


def _unwrap(obj: Any) -> Any:
    """The Python function behind a numba dispatcher or a ``functools`` wrapper."""
    obj = getattr(obj, "py_func", obj)
    return inspect.unwrap(obj) if callable(obj) and hasattr(obj, "__wrapped__") else obj


def public_objects() -> list[tuple[str, Any]]:
    """``("module.name", object)`` of every public function and class (no constants)."""
    out = []
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                continue
            if inspect.isclass(obj) or callable(obj):
                out.append((f"{modname}.{name}", obj))
    return out


def docstring_problems(obj: Any) -> list[str]:
    """What the numpydoc docstring of ``obj`` lacks (empty when complete).

    A summary line; ``Parameters`` when the function (or the class's constructor) takes
    arguments (a record class may list ``Attributes`` instead; an exception needs
    neither); ``Returns`` or ``Yields`` unless the function is annotated ``-> None``.
    """
    func = _unwrap(obj)
    doc = inspect.getdoc(func) or ""
    if not doc.strip() or not doc.splitlines()[0].strip():
        return ["a summary line"]
    sections = set(_SECTION.findall(doc))
    problems = []
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        sig = None
    args = [] if sig is None else [
        p for p in sig.parameters.values()
        if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and not p.name.startswith("_")]
    if inspect.isclass(func):
        if issubclass(func, BaseException):
            return problems
        if args and not sections & {"Parameters", "Attributes"}:
            problems.append("Parameters (or Attributes)")
        return problems
    if args and "Parameters" not in sections:
        problems.append("Parameters")
    returns_none = sig is not None and sig.return_annotation in (None, "None")
    if not returns_none and not sections & {"Returns", "Yields"}:
        problems.append("Returns")
    return problems


def test_the_public_api_is_found():
    names = dict(public_objects())
    assert len(names) > 80
    for name in ("solvers.wwsvm.solve", "solvers.estimators.WestonWatkinsSVC",
                 "solvers.saved.load_model", "solvers.base.Result",
                 "explorer.registry.get", "explorer.datafiles.read_table",
                 "explorer.sweep.run"):
        assert name in names, name


def test_every_public_name_has_a_complete_numpydoc_docstring():
    missing = {name: p for name, obj in public_objects() if (p := docstring_problems(obj))}
    assert not missing, "\n".join(f"{n}: lacks {', '.join(p)}" for n, p in missing.items())


def test_the_docstring_check_finds_what_is_missing():
    def bare(x: int) -> int:
        """Double ``x``."""
        return 2 * x

    def complete(x: int) -> None:
        """Print ``x``.

        Parameters
        ----------
        x : int
            The value.
        """

    assert docstring_problems(bare) == ["Parameters", "Returns"]
    assert docstring_problems(complete) == []
    assert docstring_problems(lambda: 1) == ["a summary line"]


def _doctests(modname: str) -> list[doctest.DocTest]:
    """The doctests of ``modname``'s docstring and of each public name it exports."""
    module = importlib.import_module(modname)
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
    tests = list(finder.find(module, modname, module=False, globs={}))
    tests = [t for t in tests if t.name == modname]  # the module docstring only
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            continue
        target = _unwrap(obj)
        if not (inspect.isclass(target) or inspect.isfunction(target)):
            continue
        tests += finder.find(target, f"{modname}.{name}", module=False, globs={})
    return sorted(tests, key=lambda t: t.name)


@pytest.mark.parametrize("modname", PUBLIC_MODULES)
def test_examples_run(modname):
    """Every ``>>>`` example of the module's public docstrings gives the output shown."""
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    for test in _doctests(modname):
        out: list[str] = []
        result = runner.run(test, out=out.append, clear_globs=True)
        if result.failed:
            failures.append("".join(out))
    assert not failures, "\n".join(failures)


def test_the_models_and_the_shared_results_have_examples():
    """The entry points a reader looks up first show how they are called."""
    for modname in ("solvers.wwsvm", "solvers.caso", "solvers.robust_mtl",
                    "solvers.triplet_screening", "solvers.mtmkl"):
        names = {t.name for t in _doctests(modname) if t.examples}
        assert f"{modname}.solve" in names, modname
    for name in ("solvers.estimators.WestonWatkinsSVC", "solvers.saved.save_model",
                 "solvers.base.relative_gap", "explorer.registry.get",
                 "explorer.sweep.parse_values"):
        modname, _, attr = name.rpartition(".")
        assert name in {t.name for t in _doctests(modname) if t.examples}, name
