"""numba's on-disk cache, keyed on every solver source, not only the defining file.

numba keys a cached function on a hash of the file that defines it. A compiled function
also carries the code of the compiled functions it calls from other modules (the
Walrus block calls :mod:`solvers.prox`'s sort and root finder, the robust-MTL kernels
its Condat threshold, the triplet loop the PGD step and the sphere arithmetic) and the
module constants it reads, frozen at compile time. After an edit to one of those alone,
numba would load the old build. :func:`install` puts a cache locator in front of
numba's own ones for the functions of this package: the same cache files, with a hash
of every ``.py`` file under ``solvers/`` (but the cvxpy references) added to the stamp
numba checks, so an edit anywhere in the solvers compiles anew, and unchanged sources
keep their cache.

This relies on numba's list of cache locator classes (``CacheImpl._locator_classes``,
whose locators numba documents for ``NUMBA_CACHE_LOCATOR_CLASSES``); if a numba
release changes it, :func:`install` does nothing and numba's own keys apply.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
#: Folders under ``solvers/`` that no compiled function reads (cvxpy formulations).
SKIP = ("reference",)


def sources_hash(root: Path = ROOT, skip: tuple[str, ...] = SKIP) -> str:
    """A hash of every ``.py`` file under ``root`` (its path and bytes), but those in the
    folders ``skip`` and in ``__pycache__``."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in skip or "__pycache__" in rel.parts:
            continue
        h.update(str(rel).encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=1)
def _stamp() -> str:
    # once per process: the sources of an imported package do not change under it
    return sources_hash()


def _inside(py_file: str, root: Path = ROOT) -> bool:
    try:
        Path(py_file).resolve().relative_to(root)
    except (OSError, ValueError):
        return False
    return True


def install() -> bool:
    """Key numba's cache of this package's compiled functions on :func:`sources_hash`
    (see the module docstring). Call before any module that compiles with
    ``cache=True`` is imported; idempotent. Returns whether the locator is in place."""
    try:
        from numba.core import caching

        classes = caching.CacheImpl._locator_classes
        base = caching._CacheLocator
    except (ImportError, AttributeError):
        return False
    for cls in classes:
        if getattr(cls, "_dualscope", False):
            return True
    fallbacks = tuple(classes)

    class SolversLocator(base):
        """numba's locator for a function of ``solvers/`` (the first that applies), with
        the package's source hash added to its source stamp."""

        _dualscope = True

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def ensure_cache_path(self) -> None:
            self._inner.ensure_cache_path()

        def get_cache_path(self) -> str:
            return self._inner.get_cache_path()

        def get_source_stamp(self) -> Any:
            return (self._inner.get_source_stamp(), _stamp())

        def get_disambiguator(self) -> str:
            return self._inner.get_disambiguator()

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            if not _inside(py_file):
                return None
            for kind in fallbacks:
                inner = kind.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
            return None

    classes.insert(0, SolversLocator)
    return True
