"""Compiled kernels of the Weston–Watkins SVM (:mod:`solvers.wwsvm`).

Everything here is ``numba.njit(cache=True)`` and works on plain arrays:

- :func:`walrus_block`: the exact block solver (Wang & Scott 2021, Lemma A.9 /
  Algorithm "Walrus") with *partial selection*: only the largest entries of ``v``
  are selected and sorted, enlarging the selection until the root ``gamma`` of the
  restricted equation is at least every unselected entry (then it is the root of the
  full equation, exactly). :func:`walrus_block_fullsort` is the textbook full-sort
  version, kept for the tests. :func:`walrus_block_warm` first tries a few Newton
  steps on the same root equation from a guess (the epochs pass the block's current
  sum, usually the root itself late in a run) and accepts a root only when it is
  exact for its own active pattern; otherwise it calls :func:`walrus_block`.
- :func:`iterative_block`: the Shark-style baseline (clipped Newton steps on the
  most violating coordinate).
- :func:`epoch`: one pass of dual block coordinate descent over the samples;
  :func:`epoch_sparse` the same pass over the non-zeros of a CSR matrix
  (``indptr``, ``indices``, ``data``; 32- or 64-bit indices).
- :func:`hinge_and_counts`, :func:`free_pairs`, :func:`step_to_w`: the certificate
  and the pieces of the free-block (restricted Newton) acceleration;
  :func:`hinge_and_counts_sparse`, :func:`hinge_sparse` (:func:`hinge_scores` its dense
  counterpart) and :func:`weights_sparse`
  the certificate's pieces on a CSR matrix, one row at a time (no ``n x k``
  temporary).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .prox import clip_sum_root_sorted, sort_prefix

__all__ = [
    "epoch",
    "epoch_sparse",
    "free_pairs",
    "hinge_and_counts",
    "hinge_and_counts_sparse",
    "hinge_scores",
    "hinge_sparse",
    "iterative_block",
    "select_top",
    "shuffle",
    "step_to_w",
    "walrus_block",
    "walrus_block_fullsort",
    "walrus_block_warm",
    "weights_sparse",
]

#: Blocks with at most this many positive entries are sorted outright.
_SORT_ALL = 48
#: First selection size of the partial selection (grown x4 until exact).
_FIRST_TOP = 16
#: Newton passes of :func:`walrus_block_warm` before the exact selection.
_WARM_STEPS = 3


@njit(cache=True)
def select_top(a, n, t):  # pragma: no cover - compiled
    # Rearrange a[:n] in place so that a[:t] holds the t largest entries (any
    # order): quickselect with a three-way partition (> p | == p | < p), so that
    # ties (many equal entries) cost O(n) too.
    lo = 0
    hi = n
    while hi - lo > 1:
        x0 = a[lo]
        x1 = a[(lo + hi) // 2]
        x2 = a[hi - 1]
        # median of three
        if x0 > x1:
            x0, x1 = x1, x0
        if x1 > x2:
            x1 = x2
        p = x0 if x0 > x1 else x1
        lt = lo
        i = lo
        gt = hi
        while i < gt:
            x = a[i]
            if x > p:
                a[i] = a[lt]
                a[lt] = x
                lt += 1
                i += 1
            elif x < p:
                gt -= 1
                a[i] = a[gt]
                a[gt] = x
            else:
                i += 1
        if t < lt:
            hi = lt
        elif t <= gt:
            return
        else:
            lo = gt


@njit(cache=True)
def walrus_block_fullsort(v, C, out, work):  # pragma: no cover - compiled
    # Exact minimiser of 1/2 b'(I + 11')b - v'b on [0, C]^m: b = clip(v - gamma)
    # with gamma = sum(b) >= 0 (Lemma A.9); all positive entries sorted.
    m = v.shape[0]
    n_pos = 0
    for j in range(m):
        if v[j] > 0.0:
            work[n_pos] = v[j]
            n_pos += 1
    if n_pos == 0:
        for j in range(m):
            out[j] = 0.0
        return 0.0
    sort_prefix(work, n_pos)
    gamma = clip_sum_root_sorted(work, n_pos, C, 0.0, 1.0)
    for j in range(m):
        bj = v[j] - gamma
        out[j] = 0.0 if bj < 0.0 else (C if bj > C else bj)
    return gamma


@njit(cache=True)
def _sift_down(h, n, pos):  # pragma: no cover - compiled
    # restore the min-heap property of h[:n] below pos
    x = h[pos]
    while True:
        c = 2 * pos + 1
        if c >= n:
            break
        if c + 1 < n and h[c + 1] < h[c]:
            c += 1
        if h[c] >= x:
            break
        h[pos] = h[c]
        pos = c
    h[pos] = x


@njit(cache=True)
def walrus_block(v, C, out, work):  # pragma: no cover - compiled
    # The same minimiser with partial selection. gamma is the root of
    # gamma = phi(gamma) = sum_j clip(v_j - gamma, 0, C). For any set T of the
    # largest entries, the root gamma_T of the restricted equation is a lower bound
    # of gamma (phi_T <= phi, phi - id decreasing); if gamma_T >= every other entry,
    # those contribute 0 at gamma_T, so gamma_T = gamma exactly.
    # Stage 1: one pass keeps the _FIRST_TOP largest positive entries in a min-heap
    # (most entries cost one comparison) and the largest entry left out.
    # Stage 2 (rarely): entries <= gamma_T are inactive at the solution and are
    # dropped; the rest is handled by quickselect with a growing selection.
    m = v.shape[0]
    T = _FIRST_TOP if _FIRST_TOP < m else m
    hn = 0
    rest = -np.inf
    n_pos = 0
    for j in range(m):
        x = v[j]
        if x <= 0.0:
            continue
        n_pos += 1
        if hn < T:
            # push: sift up
            pos = hn
            hn += 1
            while pos > 0:
                par = (pos - 1) // 2
                if work[par] <= x:
                    break
                work[pos] = work[par]
                pos = par
            work[pos] = x
        elif x > work[0]:
            if work[0] > rest:
                rest = work[0]
            work[0] = x
            _sift_down(work, hn, 0)
        elif x > rest:
            rest = x
    if n_pos == 0:
        for j in range(m):
            out[j] = 0.0
        return 0.0
    sort_prefix(work, hn)
    gamma = clip_sum_root_sorted(work, hn, C, 0.0, 1.0)
    if gamma < rest:
        # stage 2: keep the entries above the lower bound gamma and select again
        n_pos = 0
        for j in range(m):
            if v[j] > gamma:
                work[n_pos] = v[j]
                n_pos += 1
        t = 4 * _FIRST_TOP
        while True:
            if n_pos <= _SORT_ALL or t >= n_pos:
                sort_prefix(work, n_pos)
                gamma = clip_sum_root_sorted(work, n_pos, C, 0.0, 1.0)
                break
            select_top(work, n_pos, t)
            sort_prefix(work, t)
            gamma = clip_sum_root_sorted(work, t, C, 0.0, 1.0)
            rest = -np.inf
            for q in range(t, n_pos):
                if work[q] > rest:
                    rest = work[q]
            if gamma >= rest:
                break
            cnt = 0
            for q in range(n_pos):
                if work[q] > gamma:
                    work[cnt] = work[q]
                    cnt += 1
            n_pos = cnt
            t *= 4
    for j in range(m):
        bj = v[j] - gamma
        out[j] = 0.0 if bj < 0.0 else (C if bj > C else bj)
    return gamma


@njit(cache=True)
def walrus_block_warm(v, C, out, work, gamma0):  # pragma: no cover - compiled
    # The same minimiser, the root gamma of gamma = phi(gamma) = sum_j clip(v_j - gamma,
    # 0, C) searched first by Newton steps from gamma0: on the linear piece of phi
    # holding g (n_u entries at C, the n_f free ones summing to s_f) the equation's
    # solution is g' = (n_u C + s_f) / (1 + n_f). When g' = g, g solves the equation
    # with phi evaluated at g itself, so it is the root (phi - id is strictly
    # decreasing). Late in a run the block's current sum is that root and one pass
    # of O(m) decides it; after _WARM_STEPS passes without it, the exact selection
    # of :func:`walrus_block` runs.
    m = v.shape[0]
    g = gamma0 if gamma0 > 0.0 else 0.0
    for _ in range(_WARM_STEPS):
        n_f = 0
        s_f = 0.0
        n_u = 0
        for j in range(m):
            t = v[j] - g
            if t >= C:
                n_u += 1
            elif t > 0.0:
                n_f += 1
                s_f += v[j]
        g_new = (n_u * C + s_f) / (1.0 + n_f)
        if g_new == g:
            for j in range(m):
                bj = v[j] - g
                out[j] = 0.0 if bj < 0.0 else (C if bj > C else bj)
            return g
        g = g_new
    return walrus_block(v, C, out, work)


@njit(cache=True)
def iterative_block(v, C, b, eps, max_steps):  # pragma: no cover - compiled
    # Shark-style: repeatedly take a clipped Newton step (Hessian diagonal 2)
    # on the coordinate with the largest KKT violation of the gradient
    # g = b + sum(b) - v, until the violation is below eps. b is updated in place.
    m = v.shape[0]
    s = 0.0
    for j in range(m):
        s += b[j]
    steps = 0
    for _ in range(max_steps):
        best = 0.0
        idx = -1
        for j in range(m):
            g = b[j] + s - v[j]
            if g < -best and b[j] < C:
                best = -g
                idx = j
            elif g > best and b[j] > 0.0:
                best = g
                idx = j
        if idx < 0 or best < eps:
            break
        g = b[idx] + s - v[idx]
        new = b[idx] - 0.5 * g
        if new < 0.0:
            new = 0.0
        elif new > C:
            new = C
        s += new - b[idx]
        b[idx] = new
        steps += 1
    return steps


@njit(cache=True, inline="always")
def _zero_row(A, i, yi, C):  # pragma: no cover - compiled
    # x_i = 0: W does not depend on block i, and the dual is maximised at C
    for j in range(A.shape[1]):
        A[i, j] = C if j != yi else 0.0


@njit(cache=True, inline="always")
def _skip_rule(skip, wait, i, vertex, skip_cap):  # pragma: no cover - compiled
    # a block left unchanged at a vertex of the box waits 1, 3, 7, ... (at most skip_cap)
    # epochs; any change resets it
    if vertex:
        skip[i] = min(2 * skip[i] + 1, skip_cap)
        wait[i] = skip[i]
    else:
        skip[i] = 0


@njit(cache=True)
def epoch(X, y, sqn, Wt, A, order, C, exact, inner_eps, max_steps, skip, wait, skip_cap
          ):  # pragma: no cover - compiled
    # One pass over the samples in ``order``. Skipping heuristic (``skip_cap > 0``):
    # a sample whose block the update left unchanged at a vertex of the box (all
    # entries 0 or C) is skipped for 1, 3, 7, ... (at most ``skip_cap``) epochs;
    # any change resets it. The certificate is always computed on the full
    # problem, so skipping can only change the speed, never the reported gap.
    n, d = X.shape
    k = Wt.shape[0]
    m = k - 1
    v = np.empty(m)
    b = np.empty(m)
    bnew = np.empty(m)
    work = np.empty(m)
    wx = np.empty(k)
    cls = np.empty(m, dtype=np.int64)
    inner_steps = 0
    visited = 0
    for ii in range(n):
        i = order[ii]
        if wait[i] > 0:
            wait[i] -= 1
            continue
        visited += 1
        yi = y[i]
        sq = sqn[i]
        if sq == 0.0:
            _zero_row(A, i, yi, C)
            wait[i] = n  # never needs another visit
            continue
        np.dot(Wt, X[i], wx)  # BLAS gemv, no allocation
        tot = 0.0
        t = 0
        for j in range(k):
            if j != yi:
                cls[t] = j
                b[t] = A[i, j]
                tot += b[t]
                t += 1
        wy = wx[yi] - sq * tot
        for t in range(m):
            v[t] = (1.0 - (wy - (wx[cls[t]] + sq * b[t]))) / sq
        if exact:
            walrus_block_warm(v, C, bnew, work, tot)
        else:
            for t in range(m):
                bnew[t] = b[t]
            inner_steps += iterative_block(v, C, bnew, inner_eps / sq, max_steps)
        dsum = 0.0
        vertex = True
        for t in range(m):
            delta = bnew[t] - b[t]
            if delta != 0.0:
                vertex = False
                j = cls[t]
                dsum += delta
                for f in range(d):
                    Wt[j, f] -= delta * X[i, f]
                A[i, j] = bnew[t]
            elif bnew[t] != 0.0 and bnew[t] != C:
                vertex = False
        if dsum != 0.0:
            for f in range(d):
                Wt[yi, f] += dsum * X[i, f]
        if skip_cap > 0:
            _skip_rule(skip, wait, i, vertex, skip_cap)
    return inner_steps, visited


@njit(cache=True)
def epoch_sparse(indptr, indices, data, y, sqn, W, A, order, C, exact, inner_eps, max_steps,
                 skip, wait, skip_cap):  # pragma: no cover - compiled
    # :func:`epoch` on a CSR matrix: the scores w_j^T x_i and the update of W touch
    # only the non-zeros of row i (O(nnz_i k) per sample instead of O(d k)). W is
    # stored d x k (row c holds the k weights of feature c), so each non-zero reads
    # and writes k adjacent numbers instead of k scattered ones. The block's set-up
    # and solve are written out in both epochs on purpose: sharing them through a
    # helper, even one numba inlines, made the dense epoch slower (the CHANGELOG has
    # the measurement); the zero-row case, the row's scores and the skip rule are
    # shared.
    n = sqn.shape[0]
    k = W.shape[1]
    m = k - 1
    v = np.empty(m)
    b = np.empty(m)
    bnew = np.empty(m)
    work = np.empty(m)
    wx = np.empty(k)
    cls = np.empty(m, dtype=np.int64)
    inner_steps = 0
    visited = 0
    for ii in range(n):
        i = order[ii]
        if wait[i] > 0:
            wait[i] -= 1
            continue
        visited += 1
        yi = y[i]
        sq = sqn[i]
        if sq == 0.0:
            _zero_row(A, i, yi, C)
            wait[i] = n  # never needs another visit
            continue
        p0 = indptr[i]
        p1 = indptr[i + 1]
        _row_scores_sparse(indptr, indices, data, W, i, wx)
        tot = 0.0
        t = 0
        for j in range(k):
            if j != yi:
                cls[t] = j
                b[t] = A[i, j]
                tot += b[t]
                t += 1
        wy = wx[yi] - sq * tot
        for t in range(m):
            v[t] = (1.0 - (wy - (wx[cls[t]] + sq * b[t]))) / sq
        if exact:
            walrus_block_warm(v, C, bnew, work, tot)
        else:
            for t in range(m):
                bnew[t] = b[t]
            inner_steps += iterative_block(v, C, bnew, inner_eps / sq, max_steps)
        dsum = 0.0
        vertex = True
        for t in range(m):
            delta = bnew[t] - b[t]
            if delta != 0.0:
                vertex = False
                j = cls[t]
                dsum += delta
                for p in range(p0, p1):
                    W[indices[p], j] -= delta * data[p]
                A[i, j] = bnew[t]
            elif bnew[t] != 0.0 and bnew[t] != C:
                vertex = False
        if dsum != 0.0:
            for p in range(p0, p1):
                W[indices[p], yi] += dsum * data[p]
        if skip_cap > 0:
            _skip_rule(skip, wait, i, vertex, skip_cap)
    return inner_steps, visited


@njit(cache=True, inline="always")
def _row_hinge_counts(s, yi, A, i, C, hinge, asum, n_zero, n_c):  # pragma: no cover
    # Row i's share of hinge_and_counts from its scores s (k), added to the running
    # sums and counts in the order of the whole pass (dense and sparse alike)
    sy = s[yi]
    for j in range(s.shape[0]):
        if j == yi:
            continue
        h = 1.0 - (sy - s[j])
        if h > 0.0:
            hinge += h
        a = A[i, j]
        asum += a
        if a <= 0.0:
            n_zero += 1
        elif a >= C:
            n_c += 1
    return hinge, asum, n_zero, n_c


@njit(cache=True)
def hinge_and_counts(S, y, A, C):  # pragma: no cover - compiled
    # sum of the WW hinge terms from the scores S = X W, sum(alpha), and the
    # numbers of dual variables at 0, strictly inside (0, C), and at C.
    n, k = S.shape
    hinge = 0.0
    asum = 0.0
    n_zero = 0
    n_c = 0
    for i in range(n):
        hinge, asum, n_zero, n_c = _row_hinge_counts(S[i], y[i], A, i, C, hinge, asum,
                                                     n_zero, n_c)
    return hinge, asum, n_zero, n * (k - 1) - n_zero - n_c, n_c


@njit(cache=True, inline="always")
def _row_scores_sparse(indptr, indices, data, W, i, s):  # pragma: no cover - compiled
    # s (k) <- x_i^T W for row i of a CSR matrix and W (d x k)
    k = s.shape[0]
    for j in range(k):
        s[j] = 0.0
    for p in range(indptr[i], indptr[i + 1]):
        c = indices[p]
        xv = data[p]
        for j in range(k):
            s[j] += W[c, j] * xv


@njit(cache=True)
def hinge_and_counts_sparse(indptr, indices, data, y, W, A, C):  # pragma: no cover
    # :func:`hinge_and_counts` with the scores of row i computed from the CSR
    # matrix and W (d x k) on the fly, so no n x k score matrix is allocated.
    n, k = A.shape
    s = np.empty(k)
    hinge = 0.0
    asum = 0.0
    n_zero = 0
    n_c = 0
    for i in range(n):
        _row_scores_sparse(indptr, indices, data, W, i, s)
        hinge, asum, n_zero, n_c = _row_hinge_counts(s, y[i], A, i, C, hinge, asum, n_zero,
                                                     n_c)
    return hinge, asum, n_zero, n * (k - 1) - n_zero - n_c, n_c


@njit(cache=True)
def hinge_scores(S, y):  # pragma: no cover - compiled
    # sum_i sum_{j != y_i} max(0, 1 - (s_{i y_i} - s_ij)) for the scores S = X W.
    n, k = S.shape
    hinge = 0.0
    for i in range(n):
        yi = y[i]
        sy = S[i, yi]
        for j in range(k):
            if j != yi:
                h = 1.0 - (sy - S[i, j])
                if h > 0.0:
                    hinge += h
    return hinge


@njit(cache=True)
def hinge_sparse(indptr, indices, data, y, W):  # pragma: no cover - compiled
    # sum_i sum_{j != y_i} max(0, 1 - (w_{y_i} - w_j)^T x_i) for a CSR matrix and
    # W (d x k), one row's scores at a time.
    n = indptr.shape[0] - 1
    k = W.shape[1]
    s = np.empty(k)
    hinge = 0.0
    for i in range(n):
        _row_scores_sparse(indptr, indices, data, W, i, s)
        yi = y[i]
        sy = s[yi]
        for j in range(k):
            if j != yi:
                h = 1.0 - (sy - s[j])
                if h > 0.0:
                    hinge += h
    return hinge


@njit(cache=True)
def weights_sparse(indptr, indices, data, y, A, W):  # pragma: no cover - compiled
    # W (d x k, overwritten) = W(alpha) = sum_i x_i ([j == y_i] sum_t alpha_it
    # - [j != y_i] alpha_ij) from a CSR matrix, one row at a time.
    n, k = A.shape
    W[:, :] = 0.0
    for i in range(n):
        yi = y[i]
        tot = 0.0
        for j in range(k):
            if j != yi:
                tot += A[i, j]
        for p in range(indptr[i], indptr[i + 1]):
            c = indices[p]
            xv = data[p]
            for j in range(k):
                if j == yi:
                    W[c, j] += tot * xv
                else:
                    W[c, j] -= A[i, j] * xv


@njit(cache=True, inline="always")
def _free_violation(a, g, C):  # pragma: no cover - compiled
    # 0 for a dual variable strictly inside (0, C), |g| for one at a bound whose dual
    # gradient g points into the box, -1 otherwise.
    if a > 0.0 and a < C:
        return 0.0
    if (a <= 0.0 and g > 0.0) or (a >= C and g < 0.0):
        return abs(g)
    return -1.0


@njit(cache=True)
def free_pairs(A, y, C, S):  # pragma: no cover - compiled
    # (sample, class, violation) of every dual variable strictly inside (0, C)
    # (violation 0) and of every variable at a bound whose dual gradient
    # g_ij = 1 - (s_{i y_i} - s_ij) points into the box (violation |g_ij| > 0).
    # Two passes (count, then fill) so the output is allocated at its exact size.
    n, k = A.shape
    cnt = 0
    for i in range(n):
        sy = S[i, y[i]]
        for j in range(k):
            if j != y[i] and _free_violation(A[i, j], 1.0 - (sy - S[i, j]), C) >= 0.0:
                cnt += 1
    ii = np.empty(cnt, dtype=np.int64)
    jj = np.empty(cnt, dtype=np.int64)
    viol = np.empty(cnt)
    t = 0
    for i in range(n):
        sy = S[i, y[i]]
        for j in range(k):
            if j == y[i]:
                continue
            v = _free_violation(A[i, j], 1.0 - (sy - S[i, j]), C)
            if v >= 0.0:
                ii[t] = i
                jj[t] = j
                viol[t] = v
                t += 1
    return ii, jj, viol


@njit(cache=True)
def step_to_w(X, y, ii, jj, delta, dWt):  # pragma: no cover - compiled
    # dWt (k x d) = sum_a delta_a (e_{y_i} - e_j) x_i^T: the change of W^T when the
    # dual variables alpha_{i_a j_a} move by delta_a.
    d = X.shape[1]
    dWt[:, :] = 0.0
    for a in range(ii.shape[0]):
        da = delta[a]
        if da == 0.0:
            continue
        i = ii[a]
        yi = y[i]
        j = jj[a]
        for f in range(d):
            xf = da * X[i, f]
            dWt[yi, f] += xf
            dWt[j, f] -= xf


@njit(cache=True)
def shuffle(order, state):  # pragma: no cover - compiled
    # In-place Fisher-Yates shuffle driven by a splitmix64 generator whose state
    # (one uint64) lives in ``state[0]``: reproducible from the seed, no allocation.
    n = order.shape[0]
    z = state[0]
    for i in range(n - 1, 0, -1):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        r = z
        r = (r ^ (r >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        r = (r ^ (r >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        r = r ^ (r >> np.uint64(31))
        j = np.int64(r % np.uint64(i + 1))
        tmp = order[i]
        order[i] = order[j]
        order[j] = tmp
    state[0] = z
