"""Proximal operators and Euclidean projections, written once for every model.

All functions are pure: they return new arrays and never modify their input.

Contents::

    clip_sum_root
        Root ``tau`` of ``sum_i clip(s_i - tau, 0, u) = a + b * tau`` (``b >= 0``) by
        one sorted sweep of the breakpoints, O(n log n). It is the parametric core of
        the Weston–Watkins block subproblem (``a = 0, b = 1``) and of the
        bounded-simplex projection (``a = total, b = 0``).
    project_box, project_l2_ball, project_l1_ball (Condat), project_lq_ball
    project_simplex, project_bounded_simplex, project_psd, project_fantope
    psd_split, psd_sq_norm
        ``(A_+, A - A_+)`` and ``||A_+||_F^2`` (eigenvalues only) for the small dense
        matrices of metric learning, compiled (no per-call numpy overhead).
    soft_threshold, group_shrink_rows (prox of the l2,1 norm), svt (prox of the
    nuclear norm).
    project_row_ball, project_spectral_ball
        The dual-norm balls of the l2,1 norm (every row in an l2 ball) and of the
        nuclear norm (spectral norm at most ``radius``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = [
    "clip_sum_root",
    "clip_sum_root_sorted",
    "group_shrink_rows",
    "project_bounded_simplex",
    "project_box",
    "project_fantope",
    "project_l1_ball",
    "project_l2_ball",
    "project_lq_ball",
    "project_psd",
    "project_row_ball",
    "project_simplex",
    "project_spectral_ball",
    "psd_split",
    "psd_sq_norm",
    "soft_threshold",
    "sort_prefix",
    "svt",
    "sym",
]


# ---------------------------------------------------------------------------
# The parametric root: sum_i clip(s_i - tau, 0, u) = a + b tau
# ---------------------------------------------------------------------------


@njit(cache=True)
def _insertion_sort(a, n):  # pragma: no cover - compiled
    # ascending, in place, on a[:n]; fastest for the short blocks of WW-SVM
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True)
def _sort_prefix(a, n):  # pragma: no cover - compiled
    if n <= 32:
        _insertion_sort(a, n)
    else:
        a[:n] = np.sort(a[:n])


@njit(cache=True)
def _clip_sum_root_sorted(sa, n, upper, a, b):  # pragma: no cover - compiled
    # sa[:n] sorted ascending. Sweep tau downwards over the merged breakpoints
    # {s_i} (coordinate i becomes free) and {s_i - u} (coordinate i reaches u),
    # both visited in decreasing order by two pointers: no allocation.
    finite_u = upper < np.inf
    i = n - 1  # next "becomes free" breakpoint: sa[i]
    j = n - 1  # next "reaches upper" breakpoint: sa[j] - upper
    n_free = 0
    n_up = 0
    s_free = 0.0
    prev = np.inf
    while i >= 0 or (finite_u and j >= 0):
        take_free = i >= 0 and (not finite_u or j < 0 or sa[i] >= sa[j] - upper)
        val = sa[i] if take_free else sa[j] - upper
        # phi on (val, prev] with the current counts, evaluated at val
        up_mass = n_up * upper if n_up > 0 else 0.0
        phi = up_mass + s_free - n_free * val
        if a + b * val - phi <= 0.0:
            denom = b + n_free
            tau = (up_mass + s_free - a) / denom if denom > 0.0 else val
            if tau < val:
                tau = val
            if tau > prev:
                tau = prev
            return tau
        if take_free:
            n_free += 1
            s_free += sa[i]
            i -= 1
        else:
            n_free -= 1
            s_free -= sa[j]
            n_up += 1
            j -= 1
        prev = val
    # below every breakpoint all coordinates are at the upper bound (or all free)
    if finite_u:
        n_free = 0
        s_free = 0.0
    up_mass = n_up * upper if n_up > 0 else 0.0
    denom = b + n_free
    tau = (up_mass + s_free - a) / denom if denom > 0.0 else prev
    if tau > prev:
        tau = prev
    return tau


#: Compiled kernels shared with other compiled code (e.g. the Weston–Watkins block
#: solver in ``solvers._wwsvm_kernels``): ``sort_prefix(a, n)`` sorts ``a[:n]``
#: ascending in place; ``clip_sum_root_sorted(sa, n, upper, a, b)`` is
#: :func:`clip_sum_root` on an already sorted ``sa[:n]`` (no allocation).
sort_prefix = _sort_prefix
clip_sum_root_sorted = _clip_sum_root_sorted


@njit(cache=True)
def _clip_sum_root(s, upper, a, b):  # pragma: no cover - compiled
    sa = s.copy()
    _sort_prefix(sa, sa.shape[0])
    return _clip_sum_root_sorted(sa, sa.shape[0], upper, a, b)


def clip_sum_root(s: np.ndarray, upper: float, a: float, b: float) -> float:
    """Solve ``sum_i clip(s_i - tau, 0, upper) = a + b * tau`` for ``tau``.

    The left side is non-increasing and piecewise linear in ``tau`` with
    breakpoints ``s_i`` and ``s_i - upper``; the right side is non-decreasing
    (``b >= 0``), so a root exists whenever ``0 <= a <= n * upper`` (for
    ``b = 0``) and is unique when ``b > 0``. The breakpoints are swept in
    decreasing order until the sign of the difference changes, then the
    linear piece is solved exactly: O(n log n).

    Parameters
    ----------
    s : ndarray, shape (n,)
    upper : float
        Upper clip level ``u > 0`` (``np.inf`` allowed: plain simplex).
    a, b : float
        Right-hand side ``a + b * tau`` with ``b >= 0``.

    Returns
    -------
    float
        The root ``tau`` (for ``b = 0`` and ``a = 0`` the largest root, ``max(s)``).
    """
    s = np.ascontiguousarray(s, dtype=np.float64)
    return float(_clip_sum_root(s, float(upper), float(a), float(b)))


# ---------------------------------------------------------------------------
# Vector projections
# ---------------------------------------------------------------------------


def project_box(x: np.ndarray, lower: float | np.ndarray, upper: float | np.ndarray
                ) -> np.ndarray:
    """Projection onto the box ``{lower <= x <= upper}`` (elementwise clip)."""
    return np.clip(x, lower, upper)


def project_l2_ball(x: np.ndarray, radius: float = 1.0, axis: int | None = None) -> np.ndarray:
    """Projection onto ``{||x||_2 <= radius}``.

    With ``axis`` given, every slice along that axis (e.g. every column for
    ``axis=0``) is projected onto its own ball.
    """
    x = np.asarray(x, dtype=float)
    norm = np.sqrt(np.sum(x * x, axis=axis, keepdims=axis is not None))
    scale = np.minimum(1.0, radius / np.maximum(norm, np.finfo(float).tiny))
    return x * scale


@njit(cache=True)
def _condat_threshold(y, a):  # pragma: no cover - compiled
    # Condat (2016), "Fast projection onto the simplex and the l1 ball":
    # threshold rho such that sum max(y - rho, 0) = a.
    N = y.shape[0]
    v = np.empty(N)
    vt = np.empty(N)
    nv = 1
    nvt = 0
    v[0] = y[0]
    rho = y[0] - a
    for i in range(1, N):
        yi = y[i]
        if yi > rho:
            rho += (yi - rho) / (nv + 1)
            if rho > yi - a:
                v[nv] = yi
                nv += 1
            else:
                for j in range(nv):
                    vt[nvt] = v[j]
                    nvt += 1
                v[0] = yi
                nv = 1
                rho = yi - a
    for j in range(nvt):
        if vt[j] > rho:
            v[nv] = vt[j]
            nv += 1
            rho += (vt[j] - rho) / nv
    changed = True
    while changed:
        changed = False
        j = 0
        while j < nv:
            if v[j] <= rho and nv > 1:
                yj = v[j]
                v[j] = v[nv - 1]
                nv -= 1
                rho += (rho - yj) / nv
                changed = True
            else:
                j += 1
    return rho


def project_simplex(x: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Projection onto ``{x >= 0, sum(x) = total}`` (Condat's algorithm, O(n) expected)."""
    x = np.ascontiguousarray(x, dtype=np.float64).ravel()
    if total <= 0:
        raise ValueError(f"total must be > 0, got {total}")
    rho = _condat_threshold(x, float(total))
    return np.maximum(x - rho, 0.0)


def project_l1_ball(x: np.ndarray, radius: float = 1.0) -> np.ndarray:
    """Projection onto ``{||x||_1 <= radius}`` (Condat's simplex projection of ``|x|``)."""
    x = np.asarray(x, dtype=np.float64)
    if np.abs(x).sum() <= radius:
        return x.copy()
    ax = np.ascontiguousarray(np.abs(x).ravel())
    rho = _condat_threshold(ax, float(radius))
    return (np.sign(x).ravel() * np.maximum(ax - rho, 0.0)).reshape(x.shape)


def project_lq_ball(x: np.ndarray, q: float, radius: float = 1.0) -> np.ndarray:
    """Projection onto the ``q``-norm ball for ``q`` in {1, 2, inf}."""
    if q == 2:
        return project_l2_ball(x, radius)
    if q == 1:
        return project_l1_ball(x, radius)
    if np.isinf(q):
        return project_box(x, -radius, radius)
    raise ValueError(f"q must be 1, 2 or inf, got {q!r}")


def project_bounded_simplex(s: np.ndarray, total: float, upper: float = 1.0) -> np.ndarray:
    """Projection onto ``{0 <= x <= upper, sum(x) = total}``.

    The minimiser is ``clip(s - tau, 0, upper)`` with ``tau`` from
    :func:`clip_sum_root` (``a = total, b = 0``).
    """
    s = np.ascontiguousarray(s, dtype=np.float64).ravel()
    n = s.shape[0]
    if not (0.0 <= total <= n * upper * (1 + 1e-12)):
        raise ValueError(f"total must lie in [0, {n * upper:g}] for {n} entries, got {total}")
    if total == 0.0:
        return np.zeros_like(s)
    tau = clip_sum_root(s, upper, total, 0.0)
    x = np.clip(s - tau, 0.0, upper)
    if abs(x.sum() - total) > 1e-9 * max(1.0, total) and np.all(np.isfinite(s)):
        # |s| so large that s - tau cannot resolve the box [0, upper] (the partial
        # entries were rounded to 0 or upper). The projection is shift-invariant: solve
        # again with s measured from a partial entry, where the partial entries are exact.
        # With the entries sorted down, a partial one sits near position total / upper.
        order = np.sort(s)[::-1]
        j0 = min(int(total / upper), n - 1)
        for j in sorted(range(n), key=lambda j: abs(j - j0)):
            shifted = s - order[j]
            y = np.clip(shifted - clip_sum_root(shifted, upper, total, 0.0), 0.0, upper)
            if abs(y.sum() - total) <= 1e-9 * max(1.0, total):
                return y
    return x


# ---------------------------------------------------------------------------
# Matrix projections and proxes
# ---------------------------------------------------------------------------


def sym(M: np.ndarray) -> np.ndarray:
    """Symmetric part ``(M + M^T) / 2``."""
    return 0.5 * (M + M.T)


@njit(cache=True)
def _sym_part(A):  # pragma: no cover - compiled
    # (A + A^T) / 2
    d = A.shape[0]
    S = np.empty((d, d))
    for i in range(d):
        for j in range(d):
            S[i, j] = 0.5 * (A[i, j] + A[j, i])
    return S


@njit(cache=True)
def _psd_split(A):  # pragma: no cover - compiled
    # S = (A + A^T) / 2 = V diag(w) V^T; P = V diag(max(w, 0)) V^T (symmetrised), S - P.
    d = A.shape[0]
    S = _sym_part(A)
    w, V = np.linalg.eigh(S)
    P = np.zeros((d, d))
    for k in range(d):
        if w[k] > 0.0:
            for i in range(d):
                vi = w[k] * V[i, k]
                for j in range(i + 1):
                    P[i, j] += vi * V[j, k]
    for i in range(d):
        for j in range(i):
            P[j, i] = P[i, j]
    return P, S - P, w, V


@njit(cache=True)
def _psd_sq_norm(A):  # pragma: no cover - compiled
    d = A.shape[0]
    w = np.linalg.eigvalsh(_sym_part(A))
    s = 0.0
    for k in range(d):
        if w[k] > 0.0:
            s += w[k] * w[k]
    return s


def _square(M: np.ndarray, name: str = "M") -> np.ndarray:
    A = np.ascontiguousarray(M, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {A.shape}")
    return A


def project_psd(M: np.ndarray, *, return_eig: bool = False):
    """Projection of (the symmetric part of) ``M`` onto the PSD cone.

    Returns the projected matrix, and with ``return_eig=True`` also its
    eigenvalues (clipped at 0) and eigenvectors.
    """
    P, _, w, V = _psd_split(_square(M))
    return (P, np.maximum(w, 0.0), V) if return_eig else P


def psd_split(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(S_+, S - S_+)`` for the symmetric part ``S`` of ``M``: its projections onto
    the PSD cone and onto the polar (negative semidefinite) cone, ``S = S_+ + S_-``,
    from one eigendecomposition."""
    P, N, _, _ = _psd_split(_square(M))
    return P, N


def psd_sq_norm(M: np.ndarray) -> float:
    """``||S_+||_F^2 = sum_k max(w_k, 0)^2`` over the eigenvalues ``w`` of the
    symmetric part ``S`` of ``M`` (no eigenvectors: a dual objective needs only this)."""
    return float(_psd_sq_norm(_square(M)))


def project_fantope(M: np.ndarray, h: float, *, return_eig: bool = False):
    """Projection onto ``{M symmetric : tr(M) = h, 0 <= M <= I}`` (Loewner order).

    Eigen-decompose the symmetric part and project its eigenvalues onto the
    bounded simplex ``{sum = h, 0 <= s <= 1}``.
    """
    with np.errstate(over="ignore", invalid="ignore"):  # said below, naming M
        S = sym(np.asarray(M, dtype=float))
    if not np.all(np.isfinite(S)):
        raise ValueError("M must have finite entries whose symmetric part (M + M^T) / 2 is "
                         "finite (no entry near the float64 limit)")
    w, V = np.linalg.eigh(S)
    s = project_bounded_simplex(w, h, 1.0)
    P = sym((V * s) @ V.T)
    return (P, s, V) if return_eig else P


def soft_threshold(x: np.ndarray, tau: float) -> np.ndarray:
    """Prox of ``tau * ||x||_1``: ``sign(x) * max(|x| - tau, 0)``."""
    return np.sign(x) * np.maximum(np.abs(x) - tau, 0.0)


def group_shrink_rows(W: np.ndarray, tau: float) -> np.ndarray:
    """Prox of ``tau * ||W||_{2,1}`` (sum of row norms): row-wise shrinkage."""
    norms = np.sqrt(np.sum(W * W, axis=1, keepdims=True))
    scale = np.maximum(0.0, 1.0 - tau / np.maximum(norms, np.finfo(float).tiny))
    return W * scale


def svt(W: np.ndarray, tau: float, *, return_sv: bool = False):
    """Singular value thresholding: prox of ``tau * ||W||_*`` (nuclear norm).

    With ``return_sv=True`` also returns the thresholded singular values.
    """
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    s = np.maximum(s - tau, 0.0)
    keep = s > 0
    out = (U[:, keep] * s[keep]) @ Vt[keep]
    return (out, s) if return_sv else out


# ---------------------------------------------------------------------------
# Dual-norm balls of the l2,1 and nuclear norms (robust temporal MTL)
# ---------------------------------------------------------------------------


def project_row_ball(A: np.ndarray, radius: float) -> np.ndarray:
    """Projection onto ``{A : ||A_r||_2 <= radius for every row r}``.

    This is the unit ball of the dual norm of the l2,1 norm scaled by
    ``radius`` (the multipliers of ``radius ||W||_{2,1}``); every row is
    projected onto its own l2 ball (rescaled when it is too long). ``radius =
    0`` gives zero.
    """
    A = np.asarray(A, dtype=float)
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius!r}")
    if radius == 0:
        return np.zeros_like(A)
    norms = np.sqrt(np.einsum("ij,ij->i", A, A))
    return A * (radius / np.maximum(norms, radius))[:, None]


def project_spectral_ball(B: np.ndarray, radius: float, *, return_factors: bool = False):
    """Projection onto ``{B : ||B||_2 <= radius}`` (spectral norm): clip the singular values.

    ``P(B) = U diag(min(s, radius)) V^T`` for ``B = U diag(s) V^T``. Computed
    from the eigen-decomposition of the small Gram matrix (``B^T B`` when
    ``B`` is tall, ``B B^T`` when it is wide): with ``B^T B = V diag(s^2)
    V^T``, ``P(B) = B V diag(min(1, radius / s)) V^T``. This is several times
    cheaper than an SVD for the small matrices of the multitask solvers and
    exact up to rounding in the clipped directions (singular values below
    ``radius`` are left untouched, whatever their accuracy).

    With ``return_factors=True`` also returns ``(s, V, side)``: the singular
    values of ``B`` (ascending), the eigenvectors of the Gram matrix and
    ``side`` = ``"right"`` (``V`` are right singular vectors) or ``"left"``.
    """
    B = np.asarray(B, dtype=float)
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius!r}")
    tall = B.shape[0] >= B.shape[1]
    G = B.T @ B if tall else B @ B.T
    ev, Q = np.linalg.eigh(G)
    s = np.sqrt(np.maximum(ev, 0.0))
    if radius == 0:
        out = np.zeros_like(B)
    elif s[-1] <= radius:
        out = B.copy()
    else:
        f = radius / np.maximum(s, radius)
        F = (Q * f) @ Q.T
        out = B @ F if tall else F @ B
    if return_factors:
        return out, s, Q, ("right" if tall else "left")
    return out
