"""Compiled loops of the convex ASO solver (private; see :mod:`solvers.caso`).

Two kinds of sequential loops live here:

* the exact M-step ``min sum_i sigma_i^2 / (eta + gamma_i)`` subject to
  ``sum gamma = h, 0 <= gamma <= 1`` (Eq. (71) of the paper): a sort-based
  breakpoint sweep (O(d log d)) and the median-based search of appendix C
  (Algorithm 3, derived afresh from Eqs. (78)–(82); expected linear time);
* one dual coordinate ascent on the box-constrained hinge dual, serving both
  the exact hinge-loss proximal operator of Eq. (74) (APG's U-step) and the
  hinge-loss U-step of BCD (Eq. (70) without offset).

Tasks are stored concatenated: rows ``offs[l]:offs[l+1]`` of ``X`` belong to
task ``l`` and ``w[i] = 1 / n_l`` is the weight (and the dual box bound) of
sample ``i``. Weight vectors are stored as rows of ``UT`` (m x d).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# ---------------------------------------------------------------------------
# M-step: gamma_i(t) = clip(sigma_i / sqrt(t) - eta, 0, 1), sum gamma = h
# ---------------------------------------------------------------------------


@njit(cache=True)
def _fill_rank_deficient(sigma, h, gamma):  # pragma: no cover - compiled
    # Fewer than h non-zero singular values: every non-zero direction takes
    # gamma = 1 and the remaining mass h - q is spread evenly over the
    # directions with sigma = 0 (they do not enter the objective).
    d = sigma.shape[0]
    q = 0
    for i in range(d):
        if sigma[i] > 0.0:
            q += 1
    rest = (h - q) / (d - q) if d > q else 0.0
    if rest > 1.0:
        rest = 1.0
    for i in range(d):
        gamma[i] = 1.0 if sigma[i] > 0.0 else rest


@njit(cache=True)
def gamma_sort(sigma, eta, h):  # pragma: no cover - compiled
    """Sort-based M-step. Returns ``(gamma, s)`` with ``s = 1 / sqrt(t)`` (0 if unused).

    In ``s = 1/sqrt(t)`` every ``gamma_i(s) = clip(sigma_i s - eta, 0, 1)`` is
    piecewise linear and non-decreasing, with breakpoints ``eta / sigma_i``
    (leaves 0) and ``(eta + 1) / sigma_i`` (reaches 1), so
    ``Gamma(s) = n_one + S_free s - eta n_free`` between consecutive sorted
    breakpoints and the root of ``Gamma(s) = h`` is one division.
    """
    d = sigma.shape[0]
    gamma = np.zeros(d)
    q = 0
    for i in range(d):
        if sigma[i] > 0.0:
            q += 1
    if q <= h:
        _fill_rank_deficient(sigma, h, gamma)
        return gamma, 0.0
    bp = np.empty(2 * q)
    kind = np.empty(2 * q, dtype=np.int64)  # +i+1: enters free set, -(i+1): reaches 1
    k = 0
    for i in range(d):
        if sigma[i] > 0.0:
            bp[k] = eta / sigma[i]
            kind[k] = i + 1
            bp[k + 1] = (eta + 1.0) / sigma[i]
            kind[k + 1] = -(i + 1)
            k += 2
    order = np.argsort(bp, kind="mergesort")
    n_one = 0.0
    n_free = 0.0
    s_free = 0.0
    s_root = bp[order[2 * q - 1]]
    for j in range(2 * q):
        e = order[j]
        idx = kind[e]
        if idx > 0:
            n_free += 1.0
            s_free += sigma[idx - 1]
        else:
            n_free -= 1.0
            s_free -= sigma[-idx - 1]
            n_one += 1.0
        if j + 1 < 2 * q:
            nxt = bp[order[j + 1]]
            g_next = n_one + s_free * nxt - eta * n_free
            if g_next >= h:
                if s_free > 0.0:
                    s_root = (h - n_one + eta * n_free) / s_free
                    if s_root < bp[e]:
                        s_root = bp[e]
                    if s_root > nxt:
                        s_root = nxt
                else:
                    s_root = nxt
                break
    for i in range(d):
        g = sigma[i] * s_root - eta
        gamma[i] = 0.0 if g < 0.0 else (1.0 if g > 1.0 else g)
    return gamma, s_root


@njit(cache=True)
def _big_gamma(t, sigma, eta, active, n_act, n_one, s_mid, n_mid):  # pragma: no cover
    # Gamma(t) = n_one + s_mid / sqrt(t) - eta n_mid + sum_{i active} gamma_i(t)
    r = 1.0 / np.sqrt(t)
    g = n_one + s_mid * r - eta * n_mid
    for a in range(n_act):
        v = sigma[active[a]] * r - eta
        g += 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)
    return g


@njit(cache=True)
def gamma_median(sigma, eta, h):  # pragma: no cover - compiled
    """Median-based search of appendix C (Algorithm 3), typos fixed.

    Works in the paper's parameter ``t`` with the critical values
    ``t^l_i = sigma_i^2 / (eta + 1)^2`` (``gamma_i = 1`` for ``t <= t^l_i``) and
    ``t^u_i = sigma_i^2 / eta^2`` (``gamma_i = 0`` for ``t >= t^u_i``).
    ``Gamma(t)`` is non-increasing; the bracket ``[t_min, t_max]`` keeps
    ``Gamma(t_min) >= h >= Gamma(t_max)``. Each round evaluates ``Gamma`` at
    the medians of the lower and of the upper critical values that still lie
    strictly inside the bracket (the printed rule takes medians over all
    unsettled indices, so a round need not shrink the bracket; restricted to
    its interior, every evaluation removes at least half of one of the two
    sets from it), shrinks the
    bracket (``Gamma > h`` raises ``t_min``, ``Gamma < h`` lowers ``t_max``:
    the printed line 21 wrongly assigns ``t_min``), then settles every index
    whose three regions no longer meet the bracket's interior:
    ``t^u_i <= t_min`` -> 0, ``t^l_i >= t_max`` -> 1,
    ``t^l_i <= t_min`` and ``t_max <= t^u_i`` -> free (the printed lines
    25–31 swap ``t^l`` and ``t^u``: ``gamma_i(t)`` decreases in ``t``). Settled
    indices enter ``Gamma`` through three running sums, so a round costs
    O(#unsettled + #breakpoints inside), and at least half of the inside
    breakpoints leave the bracket every round: expected O(d) in total
    (quickselect medians). Finally Eq. (82) on the settled sets gives
    ``sqrt(t_opt) = sum_free sigma_i / (h - n_one + eta n_free)``, and the
    free coordinates take ``sigma_i / sqrt(t_opt) - eta`` (the printed
    line 32 omits the square root).

    Returns ``(gamma, t_opt)`` (``t_opt = 0`` when fewer than ``h`` singular
    values are non-zero).
    """
    d = sigma.shape[0]
    gamma = np.zeros(d)
    q = 0
    for i in range(d):
        if sigma[i] > 0.0:
            q += 1
    if q <= h:
        _fill_rank_deficient(sigma, h, gamma)
        return gamma, 0.0
    tl = np.empty(d)
    tu = np.empty(d)
    active = np.empty(q, dtype=np.int64)
    status = np.zeros(d, dtype=np.int64)  # 0 fixed at 0, 1 fixed at 1, 2 free, 3 active
    n_act = 0
    t_min = np.inf
    t_max = 0.0
    for i in range(d):
        if sigma[i] > 0.0:
            tl[i] = sigma[i] * sigma[i] / ((eta + 1.0) * (eta + 1.0))
            tu[i] = sigma[i] * sigma[i] / (eta * eta)
            active[n_act] = i
            n_act += 1
            status[i] = 3
            if tl[i] < t_min:
                t_min = tl[i]
            if tu[i] > t_max:
                t_max = tu[i]
    # Lines 3-8: Gamma(t_1) = q > h and Gamma(t_r) = 0 < h, so the bracket is valid.
    n_one = 0.0
    n_mid = 0.0
    s_mid = 0.0
    buf = np.empty(q)
    t_hit = -1.0
    while True:
        # Lines 24-34 (fixed): settle every index whose region is known on the bracket.
        kept = 0
        for a in range(n_act):
            i = active[a]
            if tu[i] <= t_min:
                status[i] = 0
            elif tl[i] >= t_max:
                status[i] = 1
                n_one += 1.0
            elif tl[i] <= t_min and tu[i] >= t_max:
                status[i] = 2
                n_mid += 1.0
                s_mid += sigma[i]
            else:
                active[kept] = i
                kept += 1
        n_act = kept
        if n_act == 0:
            break
        # Lines 11-23: medians of the critical values inside the bracket.
        for which in range(2):
            nb = 0
            for a in range(n_act):
                i = active[a]
                v = tl[i] if which == 0 else tu[i]
                if t_min < v < t_max:
                    buf[nb] = v
                    nb += 1
            if nb == 0:
                continue
            kth = (nb - 1) // 2
            t = np.partition(buf[:nb], kth)[kth]
            g = _big_gamma(t, sigma, eta, active, n_act, n_one, s_mid, n_mid)
            if g == h:
                t_hit = t
                break
            if g > h:
                t_min = t
            else:
                t_max = t
        if t_hit > 0.0:
            break
    if t_hit > 0.0:
        t_opt = t_hit
    elif n_mid > 0.0:
        root = s_mid / (h - n_one + eta * n_mid)
        t_opt = root * root
        if t_opt < t_min:
            t_opt = t_min
        if t_opt > t_max:
            t_opt = t_max
    else:
        t_opt = t_min  # Gamma is flat (= h) on the bracket
    r = 1.0 / np.sqrt(t_opt)
    for i in range(d):
        if sigma[i] > 0.0:
            v = sigma[i] * r - eta
            gamma[i] = 0.0 if v < 0.0 else (1.0 if v > 1.0 else v)
    return gamma, t_opt


# ---------------------------------------------------------------------------
# Hinge loss: exact prox (APG) and exact U-step (BCD) by dual coordinate ascent
# ---------------------------------------------------------------------------


@njit(cache=True)
def box_dual_cd(X, G, y, w, offs, diag, scale, U0T, B, tol, max_sweeps, UT):  # pragma: no cover
    """Cyclic coordinate ascent on a box-constrained hinge dual, per task.

    For every task ``l`` maximises over ``0 <= b_i <= w_i`` (``i`` in the task)
    the concave quadratic whose gradient in ``b_i`` is the margin residual
    ``g_i = 1 - y_i x_i^T u`` with ``u = u0_l + scale sum_i b_i y_i G_i`` and
    curvature ``diag[i] = scale x_i^T G_i``; exact coordinate steps
    ``b_i <- clip(b_i + g_i / diag[i], 0, w_i)`` keep ``u`` updated. Rows with
    ``diag[i] <= 0`` (``x_i = 0``: the margin is 0) take ``b_i = w_i``. Starts
    from ``B`` (updated in place), stops when the largest projected-gradient
    violation is below ``tol``, writes ``u_l`` to ``UT[l]`` and returns the
    total number of sweeps. Serves both the hinge prox of APG (``G = X``) and
    the exact hinge U-step of BCD (``G = X A``).
    """
    m = offs.shape[0] - 1
    d = X.shape[1]
    sweeps = 0
    u = np.empty(d)
    for l in range(m):
        lo = offs[l]
        hi = offs[l + 1]
        for f in range(d):
            u[f] = U0T[l, f]
        for i in range(lo, hi):
            if B[i] != 0.0:
                c = scale * B[i] * y[i]
                for f in range(d):
                    u[f] += c * G[i, f]
        for _ in range(max_sweeps):
            sweeps += 1
            viol = 0.0
            for i in range(lo, hi):
                if diag[i] <= 0.0:
                    B[i] = w[i]
                    continue
                s = 0.0
                for f in range(d):
                    s += X[i, f] * u[f]
                g = 1.0 - y[i] * s
                b = B[i]
                if b <= 0.0:
                    v = g if g > 0.0 else 0.0
                elif b >= w[i]:
                    v = -g if g < 0.0 else 0.0
                else:
                    v = abs(g)
                if v > viol:
                    viol = v
                nb = b + g / diag[i]
                nb = 0.0 if nb < 0.0 else (w[i] if nb > w[i] else nb)
                if nb != b:
                    c = scale * (nb - b) * y[i]
                    for f in range(d):
                        u[f] += c * G[i, f]
                    B[i] = nb
            if viol <= tol:
                break
        for f in range(d):
            UT[l, f] = u[f]
    return sweeps


# ---------------------------------------------------------------------------
# Per-task products for tasks of different sizes
# ---------------------------------------------------------------------------


@njit(cache=True)
def task_scores(X, offs, UT):  # pragma: no cover - compiled
    # z_i = x_i^T u_{task(i)}, rows offs[l]:offs[l+1] belong to task l
    z = np.empty(X.shape[0])
    d = X.shape[1]
    for t in range(offs.shape[0] - 1):
        for i in range(offs[t], offs[t + 1]):
            s = 0.0
            for j in range(d):
                s += X[i, j] * UT[t, j]
            z[i] = s
    return z


@njit(cache=True)
def task_back(X, offs, r):  # pragma: no cover - compiled
    # row l of the result is X_l^T r_l
    d = X.shape[1]
    m = offs.shape[0] - 1
    VT = np.zeros((m, d))
    for t in range(m):
        for i in range(offs[t], offs[t + 1]):
            ri = r[i]
            for j in range(d):
                VT[t, j] += X[i, j] * ri
    return VT


# ---------------------------------------------------------------------------
# known answers (run by solvers.kernel_checks before the first solve)
# ---------------------------------------------------------------------------

#: The kernel family :func:`known_answers` checks, and its place in the report.
KNOWN_ANSWERS_FAMILY = "caso"
KNOWN_ANSWERS_RANK = 2


def _m_step_ref(sigma: np.ndarray, eta: float, h: float) -> np.ndarray:
    """``gamma_i = clip(sigma_i s - eta, 0, 1)`` with ``sum gamma = h`` (numpy bisection
    in ``s``)."""
    from .kernel_checks import bisect

    def f(s: float) -> float:
        return float(h - np.clip(sigma * s - eta, 0.0, 1.0).sum())
    hi = 1.0
    while f(hi) > 0.0:
        hi *= 2.0
    s = bisect(f, 0.0, hi)
    return np.clip(sigma * s - eta, 0.0, 1.0)


def known_answers() -> list[tuple[str, object, object, float]]:
    """The M-step's ``gamma`` by :func:`gamma_sort` and :func:`gamma_median` on a fixed
    spectrum, against :func:`_m_step_ref`.

    Returns
    -------
    list of (str, object, object, float)
        ``(kernel, got, expected, tol)`` rows for :func:`solvers.kernel_checks.verify`.
    """
    rng = np.random.default_rng(13)
    sigma = np.abs(rng.normal(size=60)) * 3.0
    ref = _m_step_ref(sigma, 0.2, 7.0)
    return [
        ("gamma_sort", gamma_sort(sigma, 0.2, 7.0)[0], ref, 1e-9),
        ("gamma_median", gamma_median(sigma, 0.2, 7.0)[0], ref, 1e-9),
    ]
