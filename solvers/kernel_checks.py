"""Known-answer checks of every family of compiled kernels against pure-numpy references.

Each check runs compiled kernels (loaded from numba's on-disk cache when it holds them,
compiled otherwise) on small fixed inputs and compares their output with a reference
computed here by numpy alone (bisection, sorting, ``eigh``, ``einsum``): no compiled
code takes part in a reference. The inputs reach the code paths where a cache written
by several processes once served wrong machine code (numba's sort and argsort inside the
Walrus block, the orthant bound and the l1 projection; see ``solvers._jitcache``).

:func:`verify` runs every check and returns one :class:`KernelCheck` per kernel;
``dualscope warmup --verify`` prints them and names the bad entries, the dashboard and
the sweep workers run it before their first solve.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["CHECKS", "KernelCheck", "ensure_verified", "failures", "families_for", "known_failures",
           "verify"]


@dataclass(frozen=True)
class KernelCheck:
    """The outcome of one known-answer check.

    Attributes
    ----------
    family : str
        The kernel module (``prox``, ``wwsvm``, ``caso``, ``mtmkl``, ``robust_mtl``,
        ``triplet_screening``, ``base``).
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


def _bisect(f: Callable[[float], float], lo: float, hi: float, n: int = 200) -> float:
    """Root of a non-increasing ``f`` on ``[lo, hi]`` (``f(lo) >= 0 >= f(hi)``)."""
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
    return _bisect(f, lo, hi)


def _walrus_ref(v: np.ndarray, C: float) -> np.ndarray:
    """Lemma A.9: ``b = clip(v - gamma, 0, C)`` with ``gamma = sum(b) >= 0``."""
    if v.max() <= 0.0:
        return np.zeros_like(v)
    g = _bisect(lambda t: float(np.clip(v - t, 0.0, C).sum() - t), 0.0, float(v.max()))
    return np.clip(v - g, 0.0, C)


def _simplex_ref(y: np.ndarray, a: float) -> float:
    """The threshold ``tau`` of the projection onto ``{x >= 0, sum x = a}``."""
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - a
    k = np.arange(1, y.size + 1)
    rho = int(np.nonzero(u - css / k > 0)[0][-1])
    return float(css[rho] / (rho + 1))


def _orthant_ref(h: np.ndarray, q: np.ndarray, r2: float) -> float:
    """``min h'x`` over ``{||x - q||^2 <= r2, x >= 0}`` by bisection on the multiplier."""
    def x_of(a: float) -> np.ndarray:
        return np.maximum(q - h / (2.0 * a), 0.0)

    def excess(log_a: float) -> float:
        return float(np.sum((x_of(np.exp(log_a)) - q) ** 2) - r2)

    a = np.exp(_bisect(excess, -60.0, 60.0, 400))
    return float(h @ x_of(a))


def _m_step_ref(sigma: np.ndarray, eta: float, h: float) -> np.ndarray:
    """``gamma_i = clip(sigma_i s - eta, 0, 1)`` with ``sum gamma = h`` (bisection in s)."""
    def f(s: float) -> float:
        return float(h - np.clip(sigma * s - eta, 0.0, 1.0).sum())
    hi = 1.0
    while f(hi) > 0.0:
        hi *= 2.0
    s = _bisect(f, 0.0, hi)
    return np.clip(sigma * s - eta, 0.0, 1.0)


# ---------------------------------------------------------------------------
# checks: each returns [(kernel name, got, expected, tol), ...]
# ---------------------------------------------------------------------------

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
        ("_condat_threshold", proj, np.maximum(y - _simplex_ref(y, 2.0), 0.0), 1e-10),
        ("_psd_split", pos, (V * np.maximum(w, 0.0)) @ V.T, 1e-10),
        ("_psd_split", neg, (V * np.minimum(w, 0.0)) @ V.T, 1e-10),
    ]


def _check_wwsvm() -> list[Row]:
    from . import _wwsvm_kernels as K

    rng = np.random.default_rng(12)
    rows: list[Row] = []
    # short block (insertion sort), long block (np.sort), all but one clipped at C
    for m, shift, C in ((20, 0.0, 0.5), (80, 1.0, 0.001), (200, 0.5, 0.05)):
        v = rng.normal(size=m) + shift
        ref = _walrus_ref(v, C)
        for name in ("walrus_block", "walrus_block_fullsort"):
            out = np.empty(m)
            getattr(K, name)(v, C, out, np.empty(m))
            rows.append((name, out, ref, 1e-10))
        out = np.empty(m)
        K.walrus_block_warm(v, C, out, np.empty(m), float(ref.sum()) * 0.9)
        rows.append(("walrus_block_warm", out, ref, 1e-10))
        b = np.zeros(m)
        K.iterative_block(v, C, b, 1e-13, 100 * m)
        rows.append(("iterative_block", b, ref, 1e-8))
    a = rng.normal(size=300)
    K.select_top(a, 300, 37)
    rows.append(("select_top", np.sort(a[:37]), np.sort(np.sort(a)[-37:]), 0.0))
    return rows


def _check_caso() -> list[Row]:
    from . import _caso_kernels as K

    rng = np.random.default_rng(13)
    sigma = np.abs(rng.normal(size=60)) * 3.0
    ref = _m_step_ref(sigma, 0.2, 7.0)
    return [
        ("gamma_sort", K.gamma_sort(sigma, 0.2, 7.0)[0], ref, 1e-9),
        ("gamma_median", K.gamma_median(sigma, 0.2, 7.0)[0], ref, 1e-9),
    ]


def _check_mtmkl() -> list[Row]:
    from . import _mtmkl_kernels as K

    rng = np.random.default_rng(14)
    A = rng.normal(size=(9, 6))
    B = rng.normal(size=(6, 5))
    out = np.empty((9, 5))
    K._small_matmul(A, B, out)
    Z = rng.normal(size=(8, 11))
    G = np.empty((8, 8))
    K._gram_rows(Z, G)
    return [("_small_matmul", out, A @ B, 1e-12), ("_gram_rows", G, Z @ Z.T, 1e-12)]


def _check_robust_mtl() -> list[Row]:
    from . import _robust_mtl_kernels as K

    rng = np.random.default_rng(15)
    T0 = rng.normal(size=(5, 70))
    s = np.array([0.5, 1.0, 2.0, 50.0, 3.0])
    rows: list[Row] = []
    for q_code in (2, 0, 1):
        T = T0.copy()
        K._project_T(T, s, q_code)
        ref = T0.copy()
        for i in range(5):
            if q_code == 2:
                ref[i] *= min(1.0, s[i] / np.linalg.norm(T0[i]))
            elif q_code == 0:
                ref[i] = np.clip(T0[i], -s[i], s[i])
            elif np.abs(T0[i]).sum() > s[i]:
                thr = _simplex_ref(np.abs(T0[i]), s[i])
                ref[i] = np.sign(T0[i]) * np.maximum(np.abs(T0[i]) - thr, 0.0)
        rows.append((f"_project_T[q_code={q_code}]", T, ref, 1e-10))
    return rows


def _check_triplet() -> list[Row]:
    from .triplet_screening import kernels as K
    from .triplet_screening import spheres

    rng = np.random.default_rng(16)
    S = rng.random((60, 40))
    pa = np.arange(0, 30, dtype=np.int64)
    pb = np.arange(30, 60, dtype=np.int64)
    q = rng.random(40)
    lo, hi = spheres.orthant_bounds(S, pa, pb, q, 0.3)
    H = S[pa] - S[pb]
    lo_ref = np.array([_orthant_ref(h, q, 0.3) for h in H])
    hi_ref = np.array([-_orthant_ref(-h, q, 0.3) for h in H])
    F = rng.normal(size=(25, 6))
    M = rng.normal(size=(6, 6))
    M = M + M.T
    out = np.empty(25)
    K._quad_full(F, M, out)
    return [("_orthant_bounds", lo, lo_ref, 1e-8), ("_orthant_bounds", hi, hi_ref, 1e-8),
            ("_quad_full", out, np.einsum("pi,ij,pj->p", F, M, F), 1e-10)]


def _check_base() -> list[Row]:
    from . import base

    return [("relative_gap", base.relative_gap(3.0, -40.0), 3.0 / 40.0, 0.0),
            ("relative_gap", base.relative_gap(3.0, 0.5), 3.0, 0.0)]


#: Every family's check, by family name (the order of :func:`verify`).
CHECKS: dict[str, Callable[[], list[Row]]] = {
    "base": _check_base,
    "prox": _check_prox,
    "wwsvm": _check_wwsvm,
    "caso": _check_caso,
    "mtmkl": _check_mtmkl,
    "robust_mtl": _check_robust_mtl,
    "triplet_screening": _check_triplet,
}


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
    names = list(CHECKS) if families is None else list(families)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"families must be among {list(CHECKS)}, got {unknown}")
    out: list[KernelCheck] = []
    for name in names:
        try:
            rows = CHECKS[name]()
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
    return ["base", "prox", *([model] if model in CHECKS else [])]


_verified: dict[tuple[str, ...], list[KernelCheck]] = {}


def ensure_verified(families: list[str] | None = None) -> None:
    """Run :func:`verify` once per process for ``families``; raise on a failed check.

    Raises
    ------
    RuntimeError
        Naming every kernel whose output differs from its reference and the cache
        folder to clear (``dualscope warmup --clear``).
    """
    key = tuple(CHECKS if families is None else families)
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
