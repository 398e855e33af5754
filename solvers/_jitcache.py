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

**Symbols unique across processes.** numba names a compiled function's machine code
by its qualified name, its argument types and a *per-process counter*
(``FunctionIdentity._unique_ids``, the ``v<uid>`` ABI tag), and gives the callee copies
linked into a caller ``linkonce_odr`` linkage: the JIT linker keeps the first
definition of a name loaded into a process and resolves every later one to it. Closures
made by one factory share a qualified name (numba's ``np.sort`` and ``np.argsort`` are
both ``make_quicksort_impl.<locals>.run_quicksort1`` on a float array), so two cache
entries written by *different* processes (a warm-up and a test run, or forked sweep
workers, whose counters start equal) can define one symbol name with two bodies, and a
process that loads both runs the first-loaded body in the other kernel too: the Walrus
block's sort became the triplet rule's argsort (wrong blocks), or the reverse (indices
read from floats: a segmentation fault). This is numba issue #10486, open in the numba
this project uses. :func:`install` replaces the counter by 63-bit random numbers drawn
from the operating system on every call (a forked child draws its own), so names from
different processes no longer meet, and adds the uid scheme to the cache stamp, so an
entry written by a process with sequential uids is never loaded by one with random
uids. A process that had compiled numba code before :func:`install` ran (its earlier
functions carry sequential uids that a kernel of ours could link in) keeps its kernels
in a private cache folder of its own instead of the shared one.

This relies on numba's list of cache locator classes (``CacheImpl._locator_classes``,
whose locators numba documents for ``NUMBA_CACHE_LOCATOR_CLASSES``) and on
``FunctionIdentity._unique_ids``; if a numba release changes either, :func:`install`
does nothing and numba's own keys apply.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import secrets
import shutil
import tempfile
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


#: The uid scheme in the cache stamp (entries of different schemes never meet).
UID_SCHEME = "uid-random-63"


class RandomIds:
    """An endless iterator of random 63-bit integers, drawn from ``os.urandom`` on every
    call: numba's function uids without a counter that forked or separately started
    processes share (see the module docstring)."""

    def __iter__(self) -> RandomIds:
        return self

    def __next__(self) -> int:
        return secrets.randbits(63)


def _uids_before() -> int | None:
    """How many uids numba's counter had handed out, or ``None`` when it is not numba's
    sequential counter (already replaced, or a numba that changed it)."""
    from numba.core.bytecode import FunctionIdentity

    ids = FunctionIdentity._unique_ids
    text = repr(ids)
    if type(ids).__name__ != "count" or not text.startswith("count("):
        return None
    return int(text[len("count("):-1].split(",")[0]) - 1


def random_uids() -> bool:
    """Replace numba's sequential function uids by :class:`RandomIds` (idempotent).
    Returns whether uids are random in this process."""
    try:
        from numba.core.bytecode import FunctionIdentity
    except ImportError:
        return False
    if isinstance(FunctionIdentity._unique_ids, RandomIds):
        return True
    if _uids_before() is None:
        return False
    FunctionIdentity._unique_ids = RandomIds()  # type: ignore[assignment]
    return True


#: Set once by :func:`install`: numba had compiled functions (with sequential uids)
#: before the uids were made random, or they could not be: this process's kernels then
#: go to a private cache folder (see the module docstring).
_private: str | None = None


def _private_dir() -> str:
    global _private
    if _private is None:
        _private = tempfile.mkdtemp(prefix=f"dualscope-numba-{os.getpid()}-")
        atexit.register(shutil.rmtree, _private, ignore_errors=True)
    return _private


@functools.lru_cache(maxsize=1)
def _stamp() -> str:
    # once per process: the sources of an imported package do not change under it
    return f"{sources_hash()}-{UID_SCHEME}"


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

        classes: list[Any] = caching.CacheImpl._locator_classes
        base: Any = caching._CacheLocator
    except (ImportError, AttributeError):
        return False
    for cls in classes:
        if getattr(cls, "_dualscope", False):
            return True
    fallbacks = tuple(classes)
    before = _uids_before()
    shared = random_uids() and before == 0
    if not shared:
        _private_dir()

    class SolversLocator(base):  # type: ignore[valid-type,misc]
        """numba's locator for a function of ``solvers/`` (the first that applies), with
        the package's source hash added to its source stamp."""

        _dualscope = True

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def ensure_cache_path(self) -> None:
            if _private is None:
                self._inner.ensure_cache_path()
            else:
                os.makedirs(self.get_cache_path(), exist_ok=True)

        def get_cache_path(self) -> str:
            if _private is not None:
                return os.path.join(_private, Path(self._inner.get_cache_path()).name)
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


def _kernel_modules() -> list[Any]:
    """Every module of this package that defines compiled functions (imported here).

    Found by walking the package (the cvxpy references aside) and keeping the modules
    with a numba dispatcher of their own, so a renamed or new kernel module is never
    missed.
    """
    import importlib
    import pkgutil

    pkg = importlib.import_module(__package__ or "solvers")
    out = []
    for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}."):
        if info.name.startswith(f"{pkg.__name__}.reference"):
            continue
        mod = importlib.import_module(info.name)
        if any(getattr(obj, "py_func", None) is not None
               and getattr(obj.py_func, "__module__", None) == mod.__name__
               for obj in vars(mod).values()):
            out.append(mod)
    return out


def cache_dirs() -> list[str]:
    """The folders that hold this package's compiled functions in this process."""
    dirs: set[str] = set()
    for mod in _kernel_modules():
        for obj in vars(mod).values():
            cache = getattr(obj, "_cache", None)
            locator = getattr(getattr(cache, "_impl", None), "locator", None)
            if locator is not None and getattr(obj, "py_func", None) is not None:
                dirs.add(locator.get_cache_path())
    return sorted(dirs)


def clear() -> int:
    """Delete this package's cache files (every source version); returns how many.

    Only files of this package's functions are removed: numba names them
    ``<module>.<function>-<line>.py<ver>.nbi|nbc`` in the folders :func:`cache_dirs`
    lists (``__pycache__`` beside the sources, or under ``NUMBA_CACHE_DIR``).
    """
    n = 0
    for mod in _kernel_modules():
        stem = mod.__name__.rsplit(".", 1)[-1] + "."
        for folder in cache_dirs():
            for f in Path(folder).glob(stem + "*"):
                if f.suffix in (".nbi", ".nbc") and f.is_file():
                    f.unlink(missing_ok=True)
                    n += 1
    return n
