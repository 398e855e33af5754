"""Compiled inner loops of :mod:`solvers.mtmkl` (dual coordinate ascent, Algorithm E.1).

Both loops take one pass over the samples in ``order`` and update ``alpha`` in
place with the analytic step (E.3)

    d* = clip(alpha_i + (1 - y_i f_i) / q_ii, 0, C) - alpha_i,
    q_ii = sum_m theta_m G_m[tau_i, tau_i] k_m(x_i, x_i),

where ``f_i = sum_m <w_{m tau_i}, phi_m(x_i)>`` is the current decision value.

* Linear features (``_epoch_linear``): the per-task weight vectors summed over
  the views, ``Wsum[t] = sum_m w_mt`` (T x d), are kept up to date by (E.4)
  summed over m: ``Wsum[s] += d* y_i Gtheta[tau_i, s] x_i`` with
  ``Gtheta = sum_m theta_m G_m``. With one feature map shared by the views only
  this sum enters (E.3), so the step costs O(d) to read ``f_i`` and O(T d) when
  ``alpha_i`` moves.
* Precomputed kernels (``_epoch_kernel``): the decision values ``f`` (n) are
  kept instead of w: ``f += d* y_i Ktheta[i, :]`` with
  ``Ktheta = sum_m theta_m K~_m``; O(n) per step.

* Factored similarities (``_epoch_factored``): ``G_m = U_m U_m^T`` with the
  factor columns of all views stacked in ``U`` (T x R, stored by task rows:
  ``indptr``, ``cols``, ``vals``; column r belongs to view ``view[r]`` and
  carries the weight ``wcol[r] = theta_view[r]``). The epoch keeps
  ``V = U^T Z`` (R x d), ``Z[t] = sum_{i in task t} alpha_i y_i x_i``, instead
  of ``Wsum = Gtheta Z``: ``f_i = sum_{r in row tau_i} U[tau_i, r] wcol[r]
  <V_r, x_i>`` and a move of ``alpha_i`` changes only the rows r of ``V`` with
  ``U[tau_i, r] != 0``. A step costs O(nnz(U[tau_i]) d) instead of O(T d): for
  the 0/1 indicators of a tree's nodes, O(depth d).

The small per-epoch products (task sums, T x T Gram matrices) are loops here
too: multithreaded BLAS on tiny matrices is slow on a busy machine.

A sample with ``q_ii = 0`` (``x_i = 0``, or a task with zero self-similarity)
does not influence w; its dual coordinate is linear with slope 1, so it goes to C.
"""

from __future__ import annotations

from numba import njit

__all__ = [
    "_add_task_kernel",
    "_decision_linear",
    "_decision_rows",
    "_epoch_factored",
    "_epoch_kernel",
    "_epoch_linear",
    "_factor_combine",
    "_factor_project",
    "_factor_qprod_rows",
    "_factor_weights",
    "_gram_rows",
    "_kernel_task_products",
    "_kkt_scan",
    "_small_matmul",
    "_task_decision",
    "_task_sums",
    "_task_sums_rows",
]


@njit(cache=True, inline="always")
def _box_step(a_old, grad, qii, C):  # pragma: no cover - compiled
    # the coordinate step of (E.3)-(E.4): the exact maximiser a_old + grad / qii of the
    # dual along coordinate i, clipped to the box [0, C] (every epoch takes it)
    a_new = a_old + grad / qii
    if a_new < 0.0:
        return 0.0
    if a_new > C:
        return C
    return a_new


@njit(cache=True)
def _epoch_linear(X, y, tau, sqn, Gtheta, Wsum, alpha, order, C):  # pragma: no cover
    n, d = X.shape
    T = Gtheta.shape[0]
    n_moved = 0
    for ii in range(order.shape[0]):
        i = order[ii]
        t = tau[i]
        qii = Gtheta[t, t] * sqn[i]
        a_old = alpha[i]
        if qii > 0.0:
            fi = 0.0
            for k in range(d):
                fi += Wsum[t, k] * X[i, k]
            a_new = _box_step(a_old, 1.0 - y[i] * fi, qii, C)
        else:
            a_new = C
        delta = a_new - a_old
        if delta != 0.0:
            alpha[i] = a_new
            c = delta * y[i]
            for s in range(T):
                g = Gtheta[t, s]
                if g != 0.0:
                    cg = c * g
                    for k in range(d):
                        Wsum[s, k] += cg * X[i, k]
            n_moved += 1
    return n_moved


@njit(cache=True)
def _epoch_kernel(Kt, y, f, alpha, order, C):  # pragma: no cover
    n = Kt.shape[0]
    n_moved = 0
    for ii in range(order.shape[0]):
        i = order[ii]
        qii = Kt[i, i]
        a_old = alpha[i]
        if qii > 0.0:
            a_new = _box_step(a_old, 1.0 - y[i] * f[i], qii, C)
        else:
            a_new = C
        delta = a_new - a_old
        if delta != 0.0:
            alpha[i] = a_new
            c = delta * y[i]
            for j in range(n):
                f[j] += c * Kt[i, j]
            n_moved += 1
    return n_moved


@njit(cache=True)
def _decision_linear(X, tau, Wsum, out):  # pragma: no cover
    # out_i = <Wsum[tau_i], x_i>
    n, d = X.shape
    for i in range(n):
        t = tau[i]
        acc = 0.0
        for k in range(d):
            acc += Wsum[t, k] * X[i, k]
        out[i] = acc


@njit(cache=True)
def _add_task_kernel(out, G, tau, K, w):  # pragma: no cover
    # out[i, j] += w * G[tau_i, tau_j] * K[i, j]  (the multitask kernel k~ = G[tau, tau] k)
    n = K.shape[0]
    for i in range(n):
        gi = G[tau[i]]
        for j in range(n):
            out[i, j] += w * gi[tau[j]] * K[i, j]


@njit(cache=True)
def _task_sums(X, tau, a, Z):  # pragma: no cover
    # Z[t] = sum_{i in task t} a_i X[i]   (Z zeroed here); with X = KA (n x T) this gives
    # the task-pair sums B[s, t] = sum_{j in task s} a_j KA[j, t]
    n, d = X.shape
    Z[:, :] = 0.0
    for i in range(n):
        ai = a[i]
        if ai != 0.0:
            t = tau[i]
            for k in range(d):
                Z[t, k] += ai * X[i, k]


@njit(cache=True)
def _gram_rows(Z, out):  # pragma: no cover
    # out = Z Z^T
    T, d = Z.shape
    for s in range(T):
        for t in range(s, T):
            acc = 0.0
            for k in range(d):
                acc += Z[s, k] * Z[t, k]
            out[s, t] = acc
            out[t, s] = acc


@njit(cache=True)
def _small_matmul(A, B, out):  # pragma: no cover
    # out = A B
    n, m = A.shape
    q = B.shape[1]
    out[:, :] = 0.0
    for i in range(n):
        for j in range(m):
            aij = A[i, j]
            if aij != 0.0:
                for k in range(q):
                    out[i, k] += aij * B[j, k]


@njit(cache=True)
def _kernel_task_products(K, tau, a, KA):  # pragma: no cover
    # KA[j, t] = sum_{i in task t} K[j, i] a_i   (K symmetric; KA zeroed here)
    n = K.shape[0]
    KA[:, :] = 0.0
    for j in range(n):
        for i in range(n):
            ai = a[i]
            if ai != 0.0:
                KA[j, tau[i]] += K[j, i] * ai


@njit(cache=True)
def _task_decision(KA, G, tau, w, out):  # pragma: no cover
    # out_j += w * sum_t KA[j, t] G[t, tau_j]
    n, T = KA.shape
    for j in range(n):
        tj = tau[j]
        acc = 0.0
        for t in range(T):
            acc += KA[j, t] * G[t, tj]
        out[j] += w * acc


@njit(cache=True, inline="always")
def _factor_row_dot(V, X, i, t, indptr, cols, vals, wcol):  # pragma: no cover
    # x_i^T (U diag(wcol) V)[t] = sum_{q in row t} U[t, r_q] wcol[r_q] <V[r_q], x_i>
    # (factors with a zero weight skipped): one sample's decision value in factor form
    d = X.shape[1]
    acc = 0.0
    for q in range(indptr[t], indptr[t + 1]):
        r = cols[q]
        u = vals[q] * wcol[r]
        if u != 0.0:
            dot = 0.0
            for j in range(d):
                dot += V[r, j] * X[i, j]
            acc += u * dot
    return acc


@njit(cache=True)
def _epoch_factored(X, y, tau, sqn, indptr, cols, vals, wcol, qdiag, V, alpha, order,
                    C):  # pragma: no cover
    # (E.3)-(E.4) with f_i read from V = U^T Z and V updated on the rows of task tau_i
    n, d = X.shape
    n_moved = 0
    for ii in range(order.shape[0]):
        i = order[ii]
        t = tau[i]
        qii = qdiag[t] * sqn[i]
        a_old = alpha[i]
        if qii > 0.0:
            fi = _factor_row_dot(V, X, i, t, indptr, cols, vals, wcol)
            a_new = _box_step(a_old, 1.0 - y[i] * fi, qii, C)
        else:
            a_new = C
        delta = a_new - a_old
        if delta != 0.0:
            alpha[i] = a_new
            c = delta * y[i]
            for k in range(indptr[t], indptr[t + 1]):
                r = cols[k]
                cv = c * vals[k]
                for j in range(d):
                    V[r, j] += cv * X[i, j]
            n_moved += 1
    return n_moved


@njit(cache=True)
def _factor_project(indptr, cols, vals, Z, V):  # pragma: no cover
    # V = U^T Z   (V zeroed here)
    T, d = Z.shape
    V[:, :] = 0.0
    for t in range(T):
        for k in range(indptr[t], indptr[t + 1]):
            r = cols[k]
            u = vals[k]
            for j in range(d):
                V[r, j] += u * Z[t, j]


@njit(cache=True)
def _factor_combine(indptr, cols, vals, wcol, V, out):  # pragma: no cover
    # out = U diag(wcol) V = Gtheta Z   (out zeroed here)
    T, d = out.shape
    out[:, :] = 0.0
    for t in range(T):
        for k in range(indptr[t], indptr[t + 1]):
            r = cols[k]
            u = vals[k] * wcol[r]
            if u != 0.0:
                for j in range(d):
                    out[t, j] += u * V[r, j]


@njit(cache=True)
def _factor_weights(indptr, cols, vals, view, theta, V, W):  # pragma: no cover
    # W[m, t] = theta_m (U_m V_m)[t] = theta_m (G_m Z)[t]   (W zeroed here)
    T = indptr.shape[0] - 1
    d = V.shape[1]
    W[:, :, :] = 0.0
    for t in range(T):
        for k in range(indptr[t], indptr[t + 1]):
            r = cols[k]
            m = view[r]
            u = vals[k] * theta[m]
            if u != 0.0:
                for j in range(d):
                    W[m, t, j] += u * V[r, j]


@njit(cache=True)
def _task_sums_rows(X, tau, a, idx, Z):  # pragma: no cover
    # Z[t] = sum_{k : tau[idx_k] = t} a_k X[idx_k]   (Z zeroed here; a indexed like idx)
    d = X.shape[1]
    Z[:, :] = 0.0
    for k in range(idx.shape[0]):
        ak = a[k]
        if ak != 0.0:
            i = idx[k]
            t = tau[i]
            for j in range(d):
                Z[t, j] += ak * X[i, j]


@njit(cache=True)
def _decision_rows(X, y, tau, Wsum, idx, out):  # pragma: no cover
    # out_k = y_i <Wsum[tau_i], x_i>,  i = idx_k
    d = X.shape[1]
    for k in range(idx.shape[0]):
        i = idx[k]
        t = tau[i]
        acc = 0.0
        for j in range(d):
            acc += Wsum[t, j] * X[i, j]
        out[k] = y[i] * acc



@njit(cache=True)
def _kkt_scan(y, f, alpha, C, free, work):  # pragma: no cover
    # One pass over g = 1 - y f: the hinge sum sum_i max(0, g_i), the largest KKT
    # violation v, the free coordinates (not held at a bound by g: alpha_i = 0 with
    # g_i <= 0 or alpha_i = C with g_i >= 0) into ``free`` and the working set (all but
    # alpha_i = 0 with g_i < -v and alpha_i = C with g_i > v) into ``work``.
    # Returns (hinge, v, number of free, size of the working set).
    n = y.shape[0]
    hinge = 0.0
    v = 0.0
    for i in range(n):
        g = 1.0 - y[i] * f[i]
        if g > 0.0:
            hinge += g
        a = alpha[i]
        if a <= 0.0:
            viol = g if g > 0.0 else 0.0
        elif a >= C:
            viol = -g if g < 0.0 else 0.0
        else:
            viol = abs(g)
        if viol > v:
            v = viol
    n_free = 0
    n_work = 0
    for i in range(n):
        g = 1.0 - y[i] * f[i]
        a = alpha[i]
        low = a <= 0.0
        high = a >= C
        if not ((low and g <= 0.0) or (high and g >= 0.0)):
            free[n_free] = i
            n_free += 1
        if not ((low and g < -v) or (high and g > v)):
            work[n_work] = i
            n_work += 1
    return hinge, v, n_free, n_work


@njit(cache=True)
def _factor_qprod_rows(X, y, tau, indptr, cols, vals, wcol, v, idx, Vv, out):  # pragma: no cover
    # out = (Y K~_theta Y)[idx, idx] v through the factors: Vv = U^T Z_v with
    # Z_v[t] = sum_{k: tau(idx_k) = t} v_k y_i x_i, then out_k = y_i <(U diag(wcol) Vv)[tau_i],
    # x_i>, i = idx_k   (Vv zeroed here)
    d = X.shape[1]
    Vv[:, :] = 0.0
    for k in range(idx.shape[0]):
        vk = v[k]
        if vk != 0.0:
            i = idx[k]
            t = tau[i]
            c = vk * y[i]
            for q in range(indptr[t], indptr[t + 1]):
                r = cols[q]
                cu = c * vals[q]
                for j in range(d):
                    Vv[r, j] += cu * X[i, j]
    for k in range(idx.shape[0]):
        i = idx[k]
        out[k] = y[i] * _factor_row_dot(Vv, X, i, tau[i], indptr, cols, vals, wcol)


# ---------------------------------------------------------------------------
# known answers (run by solvers.kernel_checks before the first solve)
# ---------------------------------------------------------------------------

#: The kernel family :func:`known_answers` checks, and its place in the report.
KNOWN_ANSWERS_FAMILY = "mtmkl"
KNOWN_ANSWERS_RANK = 3


def known_answers() -> list[tuple[str, object, object, float]]:
    """:func:`_small_matmul` and :func:`_gram_rows` on fixed matrices, against numpy's
    products.

    Returns
    -------
    list of (str, object, object, float)
        ``(kernel, got, expected, tol)`` rows for :func:`solvers.kernel_checks.verify`.
    """
    import numpy as np

    rng = np.random.default_rng(14)
    A = rng.normal(size=(9, 6))
    B = rng.normal(size=(6, 5))
    out = np.empty((9, 5))
    _small_matmul(A, B, out)
    Z = rng.normal(size=(8, 11))
    G = np.empty((8, 8))
    _gram_rows(Z, G)
    return [("_small_matmul", out, A @ B, 1e-12), ("_gram_rows", G, Z @ Z.T, 1e-12)]
