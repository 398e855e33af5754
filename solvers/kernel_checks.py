"""Known-answer checks of every family of compiled kernels against pure-numpy references.

Each check runs compiled kernels (loaded from numba's on-disk cache when it holds them,
compiled otherwise) on small fixed inputs and compares their output with a reference
computed by numpy alone (bisection, sorting, ``eigh``, ``einsum``): no compiled code
takes part in a reference. The inputs reach the code paths where a cache written by
several processes once served wrong machine code (numba's sort and argsort inside the
Walrus block, the orthant bound and the l1 projection; see ``solvers._jitcache``).

The shared families (``base``, ``prox``) are checked here. A model's kernel module
offers its own family by defining, at module level, ``KNOWN_ANSWERS_FAMILY`` (the
family's name: the model's) and ``known_answers()`` returning ``(kernel, got, expected,
tol)`` rows, optionally with ``KNOWN_ANSWERS_RANK`` (its place in the report). The
families are found on first use by reading the package's sources (nothing is imported
until a family runs): see :data:`CHECKS`.

:func:`verify` runs every check and returns one :class:`KernelCheck` per kernel;
``dualscope warmup --verify`` prints them and names the bad entries, the dashboard and
the sweep workers run it before their first solve.
"""

from __future__ import annotations

import importlib
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CHECKS", "KernelCheck", "Row", "bisect", "ensure_verified", "failures",
           "families_for", "known_failures", "simplex_threshold", "verify"]


@dataclass(frozen=True)
class KernelCheck:
    """The outcome of one known-answer check.

    Attributes
    ----------
    family : str
        The kernel family: ``base``, ``prox`` or the ``KNOWN_ANSWERS_FAMILY`` of a
        model's kernel module (the model's name).
    kernel : str
        The compiled function checked (its module-level name).
    ok : bool
        Whether every output matched the reference within ``tol``.
    error : float
        The largest absolute difference from the reference (``inf`` when the kernel
        raised; ``message`` then says what).
    tol : float
        The tolerance of the comparison.
    message : str
        Empty when ``ok``; otherwise what differed.
    """

    family: str
    kernel: str
    ok: bool
    error: float
    tol: float
    message: str = ""


# ---------------------------------------------------------------------------
# numpy references
# ---------------------------------------------------------------------------


def bisect(f: Callable[[float], float], lo: float, hi: float, n: int = 200) -> float:
    """Root of a non-increasing ``f`` on ``[lo, hi]`` (``f(lo) >= 0 >= f(hi)``).

    Parameters
    ----------
    f : callable
        A non-increasing function of one float.
    lo, hi : float
        The bracket.
    n : int
        The number of halvings.

    Returns
    -------
    float
        The midpoint of the last bracket.
    """
    for _ in range(n):
        mid = 0.5 * (lo + hi)
        if f(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _clip_root_ref(s: np.ndarray, upper: float, a: float, b: float) -> float:
    """``tau`` with ``sum clip(s - tau, 0, upper) = a + b tau`` (numpy bisection)."""
    def f(t: float) -> float:
        return float(np.clip(s - t, 0.0, upper).sum() - a - b * t)
    lo, hi = float(s.min()) - 1.0, float(s.max()) + 1.0
    while f(lo) < 0.0:
        lo -= 2.0 * (hi - lo)
    while f(hi) > 0.0:
        hi += 2.0 * (hi - lo)
    return bisect(f, lo, hi)


def simplex_threshold(y: np.ndarray, a: float) -> float:
    """The threshold ``tau`` of the projection onto ``{x >= 0, sum x = a}`` (by sorting).

    Parameters
    ----------
    y : ndarray, shape (n,)
        The point projected.
    a : float, > 0
        The simplex's sum.

    Returns
    -------
    float
        ``tau`` such that ``max(y - tau, 0)`` is the projection.
    """
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - a
    k = np.arange(1, y.size + 1)
    rho = int(np.nonzero(u - css / k > 0)[0][-1])
    return float(css[rho] / (rho + 1))


# ---------------------------------------------------------------------------
# checks: each returns [(kernel name, got, expected, tol), ...]
# ---------------------------------------------------------------------------

#: One compared output: ``(kernel name, got, expected, tolerance)``.
Row = tuple[str, object, object, float]


def _check_prox() -> list[Row]:
    from . import prox

    rng = np.random.default_rng(11)
    s = rng.normal(size=70)
    tau = prox.clip_sum_root(s, 0.3, 1.0, 0.5)
    y = rng.normal(size=60)
    proj = prox.project_simplex(y, 2.0)
    A = rng.normal(size=(7, 7))
    A = A + A.T
    w, V = np.linalg.eigh(A)
    pos, neg = prox.psd_split(A)
    return [
        ("_clip_sum_root", tau, _clip_root_ref(s, 0.3, 1.0, 0.5), 1e-10),
        ("_condat_threshold", proj, np.maximum(y - simplex_threshold(y, 2.0), 0.0), 1e-10),
        ("_psd_split", pos, (V * np.maximum(w, 0.0)) @ V.T, 1e-10),
        ("_psd_split", neg, (V * np.minimum(w, 0.0)) @ V.T, 1e-10),
    ]


def _check_base() -> list[Row]:
    from . import base

    return [("relative_gap", base.relative_gap(3.0, -40.0), 3.0 / 40.0, 0.0),
            ("relative_gap", base.relative_gap(3.0, 0.5), 3.0, 0.0)]


#: Every family's check, by family name (the order of :func:`verify`): ``base`` and
#: ``prox``, then the families the kernel modules offer (by ``KNOWN_ANSWERS_RANK``, then
#: by path). Built on first use; a plain dict from then on.
CHECKS: dict[str, Callable[[], list[Row]]]

#: A kernel module's module-level declarations (statements at column 0 of its source).
_FAMILY = re.compile(r"""^KNOWN_ANSWERS_FAMILY\s*(?::\s*str\s*)?=\s*["']([\w.-]+)["']""",
                     re.M)
_RANK = re.compile(r"^KNOWN_ANSWERS_RANK\s*(?::\s*int\s*)?=\s*(\d+)", re.M)
_ANSWERS = re.compile(r"^def known_answers\(", re.M)


def _declared(source: str) -> tuple[str, float] | None:
    """``(family, rank)`` a module's source declares at module level (rank ``inf`` when
    it gives none), or None when it offers no known answers (both the family and
    ``known_answers`` are needed).

    The source is matched line by line, not parsed: ``ast.parse`` called from several
    threads at once (the in-process Dask workers) fails in CPython 3.11.
    """
    family = _FAMILY.search(source)
    if family is None or _ANSWERS.search(source) is None:
        return None
    rank = _RANK.search(source)
    return family.group(1), float(rank.group(1)) if rank else float("inf")


def _offered() -> dict[str, list[str]]:
    """Family name -> the modules that offer its known answers, read from the sources in
    every folder of the package (``solvers.__path__``; the cvxpy references aside)
    without importing them."""
    from ._jitcache import SKIP

    pkg = importlib.import_module(__package__ or "solvers")
    found = []
    for folder in map(Path, pkg.__path__):
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder)
            if rel.parts[0] in SKIP or "__pycache__" in rel.parts:
                continue
            decl = _declared(path.read_text(encoding="utf-8"))
            if decl is None:
                continue
            parts = rel.with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            found.append((decl[1], rel.as_posix(), decl[0], ".".join((pkg.__name__, *parts))))
    out: dict[str, list[str]] = {}
    for _, _, family, module in sorted(found):
        out.setdefault(family, []).append(module)
    return out


def _known_answers(modules: list[str]) -> Callable[[], list[Row]]:
    """The check of a family: imports ``modules`` and concatenates their
    ``known_answers()``."""
    def check() -> list[Row]:
        rows: list[Row] = []
        for name in modules:
            rows += importlib.import_module(name).known_answers()
        return rows

    return check


_building = threading.Lock()


def _checks() -> dict[str, Callable[[], list[Row]]]:
    """:data:`CHECKS`, discovered on the first call (one thread builds it; the same dict
    afterwards, so a test may patch an item or the whole attribute)."""
    with _building:
        table = globals().get("CHECKS")
        if table is None:
            table = {"base": _check_base, "prox": _check_prox}
            for family, modules in _offered().items():
                if family in table:
                    raise RuntimeError(f"kernel modules {modules} offer known answers "
                                       f"for {family!r}, a shared family")
                table[family] = _known_answers(modules)
            globals()["CHECKS"] = table
        return table


def __getattr__(name: str) -> Any:
    if name == "CHECKS":
        return _checks()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _compare(family: str, kernel: str, got: object, expected: object, tol: float
             ) -> KernelCheck:
    g = np.asarray(got, dtype=float)
    e = np.asarray(expected, dtype=float)
    if g.shape != e.shape:
        return KernelCheck(family, kernel, False, float("inf"), tol,
                           f"shape {g.shape}, expected {e.shape}")
    if not np.all(np.isfinite(g)):
        return KernelCheck(family, kernel, False, float("inf"), tol, "non-finite output")
    err = float(np.max(np.abs(g - e))) if g.size else 0.0
    scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
    ok = err <= tol * scale
    return KernelCheck(family, kernel, ok, err, tol,
                       "" if ok else f"differs from the numpy reference by {err:.3g}")


def verify(families: list[str] | None = None) -> list[KernelCheck]:
    """Run the known-answer checks of ``families`` (default: all of :data:`CHECKS`).

    Parameters
    ----------
    families : list of str, optional
        Names from :data:`CHECKS`.

    Returns
    -------
    list of KernelCheck
        One per compared output; a family whose check raised gives one failed entry
        naming the exception.
    """
    checks = _checks()
    names = list(checks) if families is None else list(families)
    unknown = [n for n in names if n not in checks]
    if unknown:
        raise ValueError(f"families must be among {list(checks)}, got {unknown}")
    out: list[KernelCheck] = []
    for name in names:
        try:
            rows = checks[name]()
        except Exception as exc:
            out.append(KernelCheck(name, "*", False, float("inf"), 0.0,
                                   f"{type(exc).__name__}: {exc}"))
            continue
        out += [_compare(name, k, g, e, t) for k, g, e, t in rows]
    _found.update((c.family, c.kernel) for c in out if not c.ok)
    return out


#: (family, kernel) of every check that failed in this process (kernels stay loaded).
_found: set[tuple[str, str]] = set()


def known_failures() -> list[str]:
    """``family.kernel`` of every check that failed in this process so far (a kernel
    loaded from a bad cache stays in the process: callers refuse to solve)."""
    return sorted(f"{f}.{k}" for f, k in _found)


def failures(checks: list[KernelCheck] | None = None) -> list[KernelCheck]:
    """The failed entries of ``checks`` (default: a fresh :func:`verify`)."""
    return [c for c in (verify() if checks is None else checks) if not c.ok]


def timed_verify() -> tuple[list[KernelCheck], float]:
    """:func:`verify` and the seconds it took (loading or compiling included)."""
    t0 = time.perf_counter()
    res = verify()
    return res, time.perf_counter() - t0


def families_for(model: str) -> list[str]:
    """The kernel families a model's solver runs: the shared ones and its own."""
    return ["base", "prox", *([model] if model in _checks() else [])]


_verified: dict[tuple[str, ...], list[KernelCheck]] = {}


def ensure_verified(families: list[str] | None = None) -> None:
    """Run :func:`verify` once per process for ``families``; raise on a failed check.

    Raises
    ------
    RuntimeError
        Naming every kernel whose output differs from its reference and the cache
        folder to clear (``dualscope warmup --clear``).
    """
    key = tuple(_checks() if families is None else families)
    if key not in _verified:
        _verified[key] = verify(list(key))
    bad = failures(_verified[key])
    if bad:
        from ._jitcache import cache_dirs

        raise RuntimeError(
            "compiled kernels failed their known-answer check: "
            + "; ".join(f"{c.family}.{c.kernel}: {c.message}" for c in bad)
            + f" (numba cache: {', '.join(cache_dirs()) or 'in memory'}; clear it with "
            "`dualscope warmup --clear`)")
