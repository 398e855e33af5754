"""Compiled inner loop of ``robust_mtl``'s ``"exact_dual"`` method (numba).

One call runs ``n_steps`` iterations of FISTA with gradient restart on the
exact dual ``LB(T, A, B)`` (see :func:`solvers.robust_mtl._solve_exact_dual`
for the mathematics); the certificate is evaluated by the caller between calls.
Per iteration: one batched product with the design matrices for the gradient,
one for ``V``, the three exact projections (q-balls, row balls, spectral ball by
the eigen-decomposition of the small Gram matrix).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .prox import _condat_threshold


@njit(cache=True)
def _project_T(T, s, q_code):  # pragma: no cover - compiled
    # every row T_i onto the q-ball of radius s_i; q_code 2: l2, 0: inf (box), 1: l1
    m, n = T.shape
    for i in range(m):
        r = s[i]
        if q_code == 2:
            nrm = 0.0
            for j in range(n):
                nrm += T[i, j] * T[i, j]
            nrm = np.sqrt(nrm)
            if nrm > r:
                f = r / nrm
                for j in range(n):
                    T[i, j] *= f
        elif q_code == 0:
            for j in range(n):
                if T[i, j] > r:
                    T[i, j] = r
                elif T[i, j] < -r:
                    T[i, j] = -r
        else:
            tot = 0.0
            for j in range(n):
                tot += abs(T[i, j])
            if tot > r:
                a = np.abs(T[i])
                thr = _condat_threshold(a, r)
                for j in range(n):
                    v = a[j] - thr
                    if v <= 0.0:
                        T[i, j] = 0.0
                    elif T[i, j] > 0.0:
                        T[i, j] = v
                    else:
                        T[i, j] = -v


@njit(cache=True)
def exact_dual_steps(X3, Y, s, Minv, lam, rho, q_code, steps, n_steps,
                     T, A, B, C, Tp, Ap, Bp, Cp, t_k):  # pragma: no cover - compiled
    """Run ``n_steps`` iterations in place; return ``(t_k, restarts, rows_free, Bpre, sv, Q)``.

    ``T, A, B, C`` are the current iterate and ``C = V(T / s) + A + B``;
    ``Tp, Ap, Bp, Cp`` the previous one (momentum). ``rows_free`` flags the rows
    whose multiplier ended strictly inside the ``lam``-ball, ``Bpre, sv, Q`` the
    last matrix projected onto the spectral ball with its singular values
    (ascending) and the eigenvectors of its Gram matrix.
    """
    m, n, d = X3.shape
    step_t, step_a, step_b = steps[0], steps[1], steps[2]
    tall = d >= m
    k = m if tall else d
    rows_free = np.zeros(d, dtype=np.bool_)
    Bpre = np.zeros((d, m))
    sv = np.zeros(k)
    Q = np.eye(k)
    restarts = 0
    ST = np.empty_like(T)
    SA = np.empty_like(A)
    SB = np.empty_like(B)
    CS = np.empty_like(C)
    Tn = np.empty_like(T)
    An = np.empty_like(A)
    Cn = np.empty_like(C)
    WS = np.empty((d, m))
    Bn = np.empty((d, m))
    r = np.empty(n)
    ti = np.empty(n)
    v = np.empty(d)
    f = np.empty(k)
    for _ in range(n_steps):
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
        beta = (t_k - 1.0) / t_next
        for i in range(m):
            for j in range(n):
                ST[i, j] = T[i, j] + beta * (T[i, j] - Tp[i, j])
        for r_ in range(d):
            for i in range(m):
                SA[r_, i] = A[r_, i] + beta * (A[r_, i] - Ap[r_, i])
                SB[r_, i] = B[r_, i] + beta * (B[r_, i] - Bp[r_, i])
                CS[r_, i] = C[r_, i] + beta * (C[r_, i] - Cp[r_, i])
        np.dot(CS, Minv, WS)
        for r_ in range(d):
            for i in range(m):
                WS[r_, i] = -WS[r_, i]
        # theta-block: ascent along the residuals, then the q-balls
        for i in range(m):
            np.dot(X3[i], np.ascontiguousarray(WS[:, i]), r)
            for j in range(n):
                Tn[i, j] = ST[i, j] + step_t * (r[j] - Y[i, j]) / s[i]
        _project_T(Tn, s, q_code)
        # A-block: the row balls of radius lam
        if lam > 0.0:
            for r_ in range(d):
                nrm = 0.0
                for i in range(m):
                    x = SA[r_, i] + step_a * WS[r_, i]
                    An[r_, i] = x
                    nrm += x * x
                nrm = np.sqrt(nrm)
                rows_free[r_] = nrm < lam
                if nrm > lam:
                    g = lam / nrm
                    for i in range(m):
                        An[r_, i] *= g
        else:
            An[:] = A
        # B-block: the spectral ball of radius rho (eigh of the small Gram matrix)
        if rho > 0.0:
            for r_ in range(d):
                for i in range(m):
                    Bpre[r_, i] = SB[r_, i] + step_b * WS[r_, i]
            G = Bpre.T @ Bpre if tall else Bpre @ Bpre.T
            ev, Q = np.linalg.eigh(G)
            for j in range(k):
                sv[j] = np.sqrt(max(ev[j], 0.0))
            if sv[k - 1] > rho:
                for j in range(k):
                    f[j] = rho / max(sv[j], rho)
                F = (Q * f) @ Q.T
                if tall:
                    np.dot(Bpre, F, Bn)
                else:
                    np.dot(F, Bpre, Bn)
            else:
                Bn[:] = Bpre
        else:
            Bn[:] = B
        # C = V(T / s) + A + B at the new iterate
        for i in range(m):
            for j in range(n):
                ti[j] = Tn[i, j] / s[i]
            np.dot(ti, X3[i], v)
            for r_ in range(d):
                Cn[r_, i] = v[r_] + An[r_, i] + Bn[r_, i]
        # O'Donoghue--Candes gradient restart: the step opposes the momentum, in the metric
        # of the block steps: sum_j <S_j - Z_j, Z_j - Z_prev_j> / step_j
        dot = 0.0
        if beta > 0.0:
            dt = 0.0
            for i in range(m):
                for j in range(n):
                    dt += (ST[i, j] - Tn[i, j]) * (Tn[i, j] - T[i, j])
            da = 0.0
            db = 0.0
            for r_ in range(d):
                for i in range(m):
                    da += (SA[r_, i] - An[r_, i]) * (An[r_, i] - A[r_, i])
                    db += (SB[r_, i] - Bn[r_, i]) * (Bn[r_, i] - B[r_, i])
            dot = dt / step_t + da / step_a + db / step_b
        if beta > 0.0 and dot > 0.0:
            Tp[:] = Tn
            Ap[:] = An
            Bp[:] = Bn
            Cp[:] = Cn
            t_k = 1.0
            restarts += 1
        else:
            Tp[:] = T
            Ap[:] = A
            Bp[:] = B
            Cp[:] = C
            t_k = t_next
        T[:] = Tn
        A[:] = An
        B[:] = Bn
        C[:] = Cn
    return t_k, restarts, rows_free, Bpre, sv, Q


# ---------------------------------------------------------------------------
# known answers (run by solvers.kernel_checks before the first solve)
# ---------------------------------------------------------------------------

#: The kernel family :func:`known_answers` checks, and its place in the report.
KNOWN_ANSWERS_FAMILY = "robust_mtl"
KNOWN_ANSWERS_RANK = 4


def known_answers() -> list[tuple[str, object, object, float]]:
    """:func:`_project_T` for each ``q_code`` (2: l2 balls, 0: boxes, 1: l1 balls) on a
    fixed matrix with one row inside its ball, against row-wise numpy projections (the l1
    one by sorting, :func:`solvers.kernel_checks.simplex_threshold`).

    Returns
    -------
    list of (str, object, object, float)
        ``(kernel, got, expected, tol)`` rows for :func:`solvers.kernel_checks.verify`.
    """
    from .kernel_checks import simplex_threshold

    rng = np.random.default_rng(15)
    T0 = rng.normal(size=(5, 70))
    s = np.array([0.5, 1.0, 2.0, 50.0, 3.0])
    rows: list[tuple[str, object, object, float]] = []
    for q_code in (2, 0, 1):
        T = T0.copy()
        _project_T(T, s, q_code)
        ref = T0.copy()
        for i in range(5):
            if q_code == 2:
                ref[i] *= min(1.0, s[i] / np.linalg.norm(T0[i]))
            elif q_code == 0:
                ref[i] = np.clip(T0[i], -s[i], s[i])
            elif np.abs(T0[i]).sum() > s[i]:
                thr = simplex_threshold(np.abs(T0[i]), s[i])
                ref[i] = np.sign(T0[i]) * np.maximum(np.abs(T0[i]) - thr, 0.0)
        rows.append((f"_project_T[q_code={q_code}]", T, ref, 1e-10))
    return rows
