"""Compiled loops of :mod:`solvers.triplet_screening`.

Every triplet ``t = (i, j, l)`` is stored as two pair ids: ``pa[t]`` for the
pair ``(i, l)`` (``a = x_i - x_l``) and ``pb[t]`` for the pair ``(i, j)``
(``b = x_i - x_j``). Given the per-pair quadratic forms ``q_p = Delta_p^T M Delta_p``
(or ``S_p^T m`` for a diagonal metric) the margin of a triplet is

    <M, H_t> = q[pa[t]] - q[pb[t]],

so one pass over the triplets costs two gathers and, for the gradient, two
scatter-adds into per-pair weights ``w`` with ``sum_t alpha_t H_t = sum_p w_p
Delta_p Delta_p^T``. The loops below fuse margin, loss, KKT dual variable and
scatter-add in a single sequential pass. Triplets stored in anchor blocks
(:class:`.pairs._Blocks`) are passed block by block (:func:`_block_loss_pass`), or,
with ``evaluation="sorted"``, from each anchor's sorted pair forms without visiting
them one by one (:func:`_sorted_loss_pass`).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

__all__: list[str] = []


@njit(cache=True, inline="always")
def _rule_sides(hq, rh, c, slack):  # pragma: no cover - compiled
    # Sphere rule (Eq. 4) for one triplet with <Q, H> = hq and r ||H|| = rh:
    # (L-hat, R-hat) as 0/1 integers, L-hat if hq + rh < c, R-hat if hq - rh > 1,
    # with the relative rounding margin ``slack`` (both cannot hold: c < 1).
    s = slack * (abs(hq) + rh + 1.0)
    isL = np.int64(hq + rh < c - s)
    isR = np.int64(hq - rh > 1.0 + s)
    return isL, isR


@njit(cache=True, inline="always")
def _slack_radius(hq, rh, h, isL, isR, c, slack):  # pragma: no cover - compiled
    # How far the sphere of the rule (Eq. 4) that gave (isL, isR) for one triplet
    # (<Q, H> = hq, r ||H|| = rh, ||H|| = h) can move before the rule may change
    # (:meth:`.pathscreen.PathScreen._within`): with the doubled rounding margin s2, the
    # R-hat excess (hq - rh - 1 - s2) / h or the L-hat one (c - s2 - hq - rh) / h; -inf
    # for a triplet the rule leaves. Rounded down to float32 (relative 1e-6 > half an ulp).
    s2 = 2.0 * slack * (abs(hq) + rh + 1.0)
    v = -np.inf
    if isR != 0:
        v = (hq - rh - 1.0 - s2) / h
    if isL != 0:
        v = (c - s2 - hq - rh) / h
    return np.float32(v - 1e-6 * abs(v))


@njit(cache=True, inline="always")
def _kkt_loss(m, ig, hg, hinge):  # pragma: no cover - compiled
    # (alpha, loss) of a triplet with margin m, branch-free; u = 1 - m, ig = 1/gamma,
    # hg = gamma/2. Smoothed hinge: alpha = clip(u/gamma, 0, 1), loss = alpha (u - gamma
    # alpha / 2); hinge: alpha = [u > 0], loss = max(u, 0).
    u = 1.0 - m
    if hinge:
        return (1.0 if u > 0.0 else 0.0), max(u, 0.0)
    a = min(max(u * ig, 0.0), 1.0)
    return a, a * (u - hg * a)


@njit(cache=True, inline="always")
def _zero(w):  # pragma: no cover - compiled
    for p in range(w.shape[0]):
        w[p] = 0.0


@njit(cache=True, inline="always")
def _pass_start(w, gamma):  # pragma: no cover - compiled
    # The start of a loss pass: the per-pair weights zeroed; returns 1/gamma, gamma/2.
    _zero(w)
    return (1.0 / gamma if gamma > 0.0 else 0.0), 0.5 * gamma


@njit(cache=True, inline="always")
def _triplet_step(mg, ig, hg, hinge, loss, asum, a2):  # pragma: no cover - compiled
    # One triplet of a loss pass (margin mg): the KKT map, added to the sums; returns
    # (alpha, loss, sum alpha, sum alpha^2). The margin's store stays in the callers:
    # here it would keep numba from vectorising the pass.
    al, ell = _kkt_loss(mg, ig, hg, hinge)
    return al, loss + ell, asum + al, a2 + al * al


@njit(cache=True, fastmath=True)
def _loss_pass(q, pa, pb, gamma, hinge, w, mout):  # pragma: no cover - compiled
    # Returns (sum of losses, sum alpha, sum alpha^2) over the triplets (pa, pb) and sets
    # the per-pair weights w_p = sum_{pa=p} alpha - sum_{pb=p} alpha, alpha =
    # -loss'(margin) (:func:`_kkt_loss`). ``mout`` (length 0 to skip) receives the margins.
    # No test on which triplets count: one at zero loss adds 0 (a test would mispredict).
    # Two triplets a step, the second's weights into w2 (added at the end) and its sums
    # apart: a run of one pair in pb makes two dependency chains instead of one.
    ig, hg = _pass_start(w, gamma)
    keep = mout.shape[0] > 0
    loss, asum, a2 = 0.0, 0.0, 0.0
    w2 = np.zeros(w.shape[0])
    loss2, asum2, a22 = 0.0, 0.0, 0.0
    n_t = pa.shape[0]
    for t in range(0, n_t - n_t % 2, 2):
        ia = np.uint64(pa[t])
        ib = np.uint64(pb[t])
        ja = np.uint64(pa[t + 1])
        jb = np.uint64(pb[t + 1])
        m = q[ia] - q[ib]
        m2 = q[ja] - q[jb]
        if keep:
            mout[t] = m
            mout[t + 1] = m2
        a, loss, asum, a2 = _triplet_step(m, ig, hg, hinge, loss, asum, a2)
        b, loss2, asum2, a22 = _triplet_step(m2, ig, hg, hinge, loss2, asum2, a22)
        w[ia] += a
        w[ib] -= a
        w2[ja] += b
        w2[jb] -= b
    if n_t % 2:
        t = n_t - 1
        ia = np.uint64(pa[t])
        ib = np.uint64(pb[t])
        m = q[ia] - q[ib]
        if keep:
            mout[t] = m
        a, loss, asum, a2 = _triplet_step(m, ig, hg, hinge, loss, asum, a2)
        w[ia] += a
        w[ib] -= a
    for p in range(w.shape[0]):
        w[p] += w2[p]
    return loss + loss2, asum + asum2, a2 + a22


@njit(cache=True, fastmath=True)
def _block_loss_pass(q, blk, gamma, hinge, w, mout):  # pragma: no cover - compiled
    # :func:`_loss_pass` over all triplets stored in anchor blocks ``blk``
    # (:class:`.pairs._Blocks`: anchor a owns the triplets t0[a] + s * nd[a] + o with
    # pair ids PB[offs[a] + s] and PA[offd[a] + o]), same results. Per anchor the forms
    # of its other-class pairs are gathered once; each row is a contiguous loop (no
    # gathers, SIMD code) whose weights go to a row sum in a register and to column
    # sums, scattered once per row and column instead of twice per triplet.
    ig, hg = _pass_start(w, gamma)
    keep = mout.shape[0] > 0
    loss, asum, a2 = 0.0, 0.0, 0.0
    t0, ns, nd, offs, offd, PA, PB, _co, _ro = blk
    big = max(1, np.max(nd)) if nd.shape[0] else 1   # the longest row
    qd = np.empty(big)
    cs = np.empty(big)
    for a in range(nd.shape[0]):
        m = nd[a]
        od = np.uint64(offd[a])
        os_ = np.uint64(offs[a])
        for o in range(m):
            qd[o] = q[PA[od + np.uint64(o)]]
            cs[o] = 0.0
        base = np.uint64(t0[a])
        for s in range(ns[a]):
            ib = np.uint64(PB[os_ + np.uint64(s)])
            qs = q[ib]
            b0 = base + np.uint64(s * m)
            rs = 0.0
            for o in range(m):
                t = b0 + np.uint64(o)
                mg = qd[o] - qs
                if keep:
                    mout[t] = mg
                al, loss, asum, a2 = _triplet_step(mg, ig, hg, hinge, loss, asum, a2)
                cs[o] += al
                rs += al
            w[ib] -= rs
        for o in range(m):
            w[PA[od + np.uint64(o)]] += cs[o]
    return loss, asum, a2


@njit(cache=True, inline="always")
def _sorted_run(q, P, off, n, order, vals):  # pragma: no cover - compiled
    # vals[:n] <- the forms q[P[off + k]], k < n, in ascending order, and order[off:off+n]
    # the local indices k in that order. Insertion sort from the last call's order,
    # which is nearly sorted. Equal forms may end in any order: the sorted values, and
    # so everything :func:`_sorted_loss_pass` computes from them, do not depend on it.
    ok = True
    prev = -np.inf
    for k in range(n):
        v = q[P[off + order[off + k]]]
        vals[k] = v
        ok &= v >= prev
        prev = v
    if ok:
        return
    for k in range(1, n):
        v = vals[k]
        if v >= vals[k - 1]:
            continue
        ix = order[off + k]
        h = k - 1
        while h >= 0 and v < vals[h]:
            vals[h + 1] = vals[h]
            order[off + h + 1] = order[off + h]
            h -= 1
        vals[h + 1] = v
        order[off + h + 1] = ix


@njit(cache=True, fastmath={"nsz", "arcp", "contract", "reassoc"})
def _sorted_loss_pass(q, blk, gamma, hinge, w):  # pragma: no cover - compiled
    # :func:`_block_loss_pass`'s results (loss, sum alpha, sum alpha^2 and the per-pair
    # weights w) over all triplets of the anchor blocks ``blk`` without visiting
    # them one by one: within anchor i the margin of (i, j, l) is a_l - b_j, with
    # a_l = q[(i, l)] (columns) and b_j = q[(i, j)] (rows). With both sorted
    # (:func:`_sorted_run`, orders kept in blk.CO, blk.RO across calls), the columns of
    # row j split into three runs: a_l <= b_j + 1 - gamma (alpha = 1, loss
    # 1 + b_j - a_l - gamma/2: a count and a prefix sum of a), b_j + 1 - gamma < a_l <
    # b_j + 1 (visited one by one through :func:`_kkt_loss`: exact, no cancellation in
    # sums of squares) and a_l >= b_j + 1 (alpha = 0); the run ends move one way as b_j
    # grows, so one merge walk finds them. Column l's weight is the number of rows for
    # which it is in the first run (a suffix count) plus its middle alphas. The hinge
    # (gamma = 0) has no middle run. Cost O(n_j + n_l) per anchor plus the middle runs,
    # against O(n_j n_l): the pairwise-ranking trick (Joachims, "Training linear SVMs in
    # linear time", KDD 2006; Chapelle & Keerthi, "Efficient algorithms for ranking with
    # SVMs", Inf. Retr. 13, 2010). Non-finite forms give a NaN loss (so no fastmath flag
    # may assume finite values).
    ig, hg = _pass_start(w, gamma)
    hl = 0.0 if hinge else hg   # the linear piece is u - gamma/2 (hinge: u)
    t0, ns, nd, offs, offd, PA, PB, CO, RO = blk
    av = np.empty(max(1, np.max(nd)))
    pre = np.empty(av.shape[0] + 1)
    cs = np.empty(av.shape[0])
    cnt = np.empty(av.shape[0] + 1, dtype=np.int64)
    bv = np.empty(max(1, np.max(ns)))
    loss, asum, a2, chk = 0.0, 0.0, 0.0, 0.0
    width = 0.0 if hinge else gamma
    for a in range(nd.shape[0]):
        m = nd[a]
        od = offd[a]
        os_ = offs[a]
        _sorted_run(q, PA, od, m, CO, av)
        _sorted_run(q, PB, os_, ns[a], RO, bv)
        s = 0.0
        for k in range(m):
            pre[k] = s
            s += av[k]
            cs[k] = 0.0
            cnt[k] = 0
        pre[m] = s
        cnt[m] = 0
        chk += s
        lo = 0       # columns [0, lo): alpha = 1
        hi = 0       # columns [lo, hi): the middle run
        lin = 0.0
        nlin = 0
        for r in range(ns[a]):
            b = bv[r]
            chk += b
            t1 = b + 1.0
            tl = t1 - width
            if hinge:
                while lo < m and av[lo] < t1:
                    lo += 1
                hi = lo
            else:
                while lo < m and av[lo] <= tl:
                    lo += 1
                hi = max(hi, lo)
                while hi < m and av[hi] < t1:
                    hi += 1
            rs = float(lo)
            lin += rs * t1 - pre[lo]
            nlin += lo
            cnt[lo] += 1
            for k in range(lo, hi):
                al, ell = _kkt_loss(av[k] - b, ig, hg, hinge)
                loss += ell
                asum += al
                a2 += al * al
                rs += al
                cs[k] += al
            w[PB[os_ + RO[os_ + r]]] -= rs
        loss += lin - hl * nlin
        asum += nlin
        a2 += nlin
        c = 0
        for k in range(m - 1, -1, -1):
            c += cnt[k + 1]          # the rows whose first run goes past column k
            w[PA[od + CO[od + k]]] += cs[k] + c
    if not np.isfinite(chk):
        loss = np.nan
    return loss, asum, a2


@njit(cache=True)
def _triplet_weights(v, la, lb, blk, w):  # pragma: no cover - compiled
    # w_p = sum_{la[t] = p} v_t - sum_{lb[t] = p} v_t, the per-pair weights of
    # sum_t v_t H_t: by anchor blocks when ``blk`` has any (as :func:`_block_loss_pass`),
    # else by pair ids (one pass instead of two np.bincount calls).
    _zero(w)
    t0, ns, nd, offs, offd, PA, PB, _co, _ro = blk
    if nd.shape[0] == 0:
        for t in range(la.shape[0]):
            w[la[t]] += v[t]
            w[lb[t]] -= v[t]
        return w
    cs = np.empty(np.max(nd))   # the longest row
    for a in range(nd.shape[0]):
        m = nd[a]
        od = np.uint64(offd[a])
        os_ = np.uint64(offs[a])
        for o in range(m):
            cs[o] = 0.0
        base = np.uint64(t0[a])
        for s in range(ns[a]):
            b0 = base + np.uint64(s * m)
            rs = 0.0
            for o in range(m):
                x = v[b0 + np.uint64(o)]
                cs[o] += x
                rs += x
            w[PB[os_ + np.uint64(s)]] -= rs
        for o in range(m):
            w[PA[od + np.uint64(o)]] += cs[o]
    return w


@njit(cache=True, inline="always")
def _ell(u, gamma, hinge):  # pragma: no cover - compiled
    # Loss of a triplet with u = 1 - margin: hinge max(0, u), or the smoothed
    # hinge (0 for u <= 0, u^2 / (2 gamma) below gamma, u - gamma / 2 above).
    if u <= 0.0:
        return 0.0
    if hinge:
        return u
    if u >= gamma:
        return u - 0.5 * gamma
    return 0.5 * u * u / gamma


@njit(cache=True)
def _loss_only(q, pa, pb, gamma, hinge):  # pragma: no cover - compiled
    # Sum of the losses over the triplets (pa, pb).
    loss = 0.0
    for t in range(pa.shape[0]):
        loss += _ell(1.0 - (q[pa[t]] - q[pb[t]]), gamma, hinge)
    return loss


@njit(cache=True)
def _extra_screened(q, La, Lb, Ra, Rb, gamma, hinge):  # pragma: no cover - compiled
    # P(M) - P~(M) >= 0: what the screened triplets add to the full objective
    # beyond their fixed parts (linear part for L-hat, zero for R-hat). Zero
    # whenever every screened triplet is in the region it was screened into.
    c = 1.0 - gamma
    extra = 0.0
    for t in range(La.shape[0]):
        m = q[La[t]] - q[Lb[t]]
        if m > c:
            u = 1.0 - m
            extra += _ell(u, gamma, hinge) - (u - 0.5 * gamma)
    for t in range(Ra.shape[0]):
        extra += _ell(1.0 - (q[Ra[t]] - q[Rb[t]]), gamma, hinge)
    return extra


@njit(cache=True)
def _orthant_min(h, q, r2):  # pragma: no cover - compiled
    # Lower bound (exact up to rounding) of min h^T x s.t. ||x - q||^2 <= r2, x >= 0
    # (Appendix B): the Lagrange dual g(a) = sum_k min_{x_k >= 0} [h_k x_k
    # + a (x_k - q_k)^2] - a r2 is maximised exactly by sweeping the breakpoints
    # a_k = h_k / (2 q_k) of the decreasing piecewise function
    # dist(a) = ||x(a) - q||^2 = A / a^2 + B, x(a) = max(q - h / (2a), 0).
    # Any a > 0 gives a valid lower bound (weak duality), so rounding in the
    # root only loosens the bound.
    d = h.shape[0]
    A = 0.0
    B = 0.0
    nb = 0
    bk = np.empty(d)
    dA = np.empty(d)
    dB = np.empty(d)
    for k in range(d):
        hk = h[k]
        qk = q[k]
        if hk > 0.0:
            if qk > 0.0:
                # clipped (x_k = 0, term q_k^2) for a < h/(2q), free afterwards
                B += qk * qk
                bk[nb] = hk / (2.0 * qk)
                dA[nb] = 0.25 * hk * hk
                dB[nb] = -qk * qk
                nb += 1
            else:
                B += qk * qk
        elif hk < 0.0:
            if qk < 0.0:
                # free for a < h/(2q), clipped at 0 (term q_k^2) afterwards
                A += 0.25 * hk * hk
                bk[nb] = hk / (2.0 * qk)
                dA[nb] = -0.25 * hk * hk
                dB[nb] = qk * qk
                nb += 1
            else:
                A += 0.25 * hk * hk
        else:
            if qk < 0.0:
                B += qk * qk
    if A <= 0.0 and B <= r2:
        # h >= 0 and the ball contains x(0+), an orthant minimiser of h^T x: min = 0
        return 0.0
    order = np.argsort(bk[:nb])
    alpha = -1.0
    prev = 0.0
    for s in range(nb + 1):
        if s < nb:
            right = bk[order[s]]
        else:
            right = np.inf
        # on (prev, right): dist(a) = A / a^2 + B
        if s < nb:
            dist_right = A / (right * right) + B
        else:
            dist_right = B
        if dist_right <= r2:
            if A > 0.0 and r2 > B:
                cand = np.sqrt(A / (r2 - B))
                if cand < prev:
                    cand = prev
                if cand > right:
                    cand = right
                alpha = cand
            else:
                alpha = right if s < nb else prev
            break
        if s < nb:
            k = order[s]
            A += dA[k]
            B += dB[k]
            if A < 0.0:
                A = 0.0
            prev = right
    if not (alpha > 0.0) or not np.isfinite(alpha):
        # dist never reaches r2 (only possible when the region is empty up to
        # rounding): fall back to the sphere bound.
        hq = 0.0
        hh = 0.0
        for k in range(d):
            hq += h[k] * q[k]
            hh += h[k] * h[k]
        return hq - np.sqrt(r2 * hh)
    val = -alpha * r2
    for k in range(d):
        xk = q[k] - h[k] / (2.0 * alpha)
        if xk < 0.0:
            xk = 0.0
        val += h[k] * xk + alpha * (xk - q[k]) * (xk - q[k])
    return val


@njit(cache=True)
def _orthant_bounds(S, pa, pb, q, r2, lo, hi):  # pragma: no cover - compiled
    # For each candidate triplet (pair ids pa, pb into the pair squares S):
    # lo = min, hi = max of <x, h> over {||x - q||^2 <= r2, x >= 0}, h = S[pa] - S[pb].
    d = S.shape[1]
    h = np.empty(d)
    hn = np.empty(d)
    for t in range(pa.shape[0]):
        for k in range(d):
            h[k] = S[pa[t], k] - S[pb[t], k]
            hn[k] = -h[k]
        lo[t] = _orthant_min(h, q, r2)
        hi[t] = -_orthant_min(hn, q, r2)


# Per-pair quadratic forms and their weighted sums. Compiled loops, not BLAS: the
# matrices are thin (pairs x d, small d), and a multithreaded BLAS on a busy machine
# spends longer synchronising than computing. No fastmath but in the Gram route's
# _quad_gram (its d-long dot products vectorise only with reassociation) and
# _gram_weights: with fastmath LLVM may compile a loop differently inside different
# callers, and the compiled loop (burst.py) and the Python loop must agree bit for bit.


@njit(cache=True)
def _quad_full(F, M, out):  # pragma: no cover - compiled
    # out[p] = F[p]^T M F[p]
    P, d = F.shape
    for p in range(P):
        s = 0.0
        for i in range(d):
            t = 0.0
            for j in range(d):
                t += M[i, j] * F[p, j]
            s += F[p, i] * t
        out[p] = s


@njit(cache=True)
def _quad_diag(F, m, out):  # pragma: no cover - compiled
    # out[p] = F[p]^T m
    P, d = F.shape
    for p in range(P):
        s = 0.0
        for k in range(d):
            s += F[p, k] * m[k]
        out[p] = s


@njit(cache=True)
def _assemble_full(F, w, A):  # pragma: no cover - compiled
    # A = sum_p w[p] F[p] F[p]^T (symmetric)
    P, d = F.shape
    for i in range(d):
        for j in range(d):
            A[i, j] = 0.0
    for p in range(P):
        wp = w[p]
        if wp == 0.0:
            continue
        for i in range(d):
            t = wp * F[p, i]
            for j in range(d):
                A[i, j] += t * F[p, j]
    _symmetrize(A)


@njit(cache=True)
def _symmetrize(A):  # pragma: no cover - compiled
    # A <- (A + A^T) / 2, in place
    for i in range(A.shape[0]):
        for j in range(i):
            s = 0.5 * (A[i, j] + A[j, i])
            A[i, j] = s
            A[j, i] = s


@njit(cache=True)
def _assemble_diag(F, w, a):  # pragma: no cover - compiled
    # a = F^T w
    P, d = F.shape
    for k in range(d):
        a[k] = 0.0
    for p in range(P):
        wp = w[p]
        if wp == 0.0:
            continue
        for k in range(d):
            a[k] += wp * F[p, k]


@njit(cache=True, inline="always")
def _run_end(pi, p):  # pragma: no cover - compiled
    # the end of the run of pairs from p on that share the point pi[p]
    i = pi[p]
    e = p + 1
    while e < pi.shape[0] and pi[e] == i:
        e += 1
    return e


@njit(cache=True, fastmath=True)
def _quad_gram(X, Z2, pi, pj, c, out):  # pragma: no cover - compiled
    # out[p] = (x_i - x_j)^T M (x_i - x_j) = c_i + c_j - <x_j, Z2_i> for the pairs
    # p = (pi[p], pj[p]), with Z2 = X (M + M^T) and c_i = <x_i, Z2_i> / 2 (computed
    # here, in the scratch c): one gathered row per pair, no stored differences
    n, d = X.shape
    for i in range(n):
        s = 0.0
        for k in range(d):
            s += X[i, k] * Z2[i, k]
        c[i] = 0.5 * s
    for p in range(pi.shape[0]):
        i = np.uint64(pi[p])
        j = np.uint64(pj[p])
        s = 0.0
        for k in range(d):
            s += X[j, k] * Z2[i, k]
        out[p] = (c[i] + c[j]) - s


@njit(cache=True, fastmath=True)
def _gram_weights(X, w, pi, pj, V):  # pragma: no cover - compiled
    # V <- diag(deg) X - 2 Y with deg_i = sum_{p ∋ i} w_p and Y_i = sum_{p = (i, j)}
    # w_p x_j, so that sum_p w_p (x_i - x_j)(x_i - x_j)^T = X^T diag(deg) X - X^T Y -
    # Y^T X is the symmetric part of X^T V. The pairs come sorted by i: over each run of
    # one i, Y_i and the run's share of deg_i are summed in a local row (four pairs per
    # update) and a scalar, and stored once.
    n, d = X.shape
    deg = np.zeros(n)
    V[:] = 0.0
    acc = np.empty(d)
    p = 0
    while p < pi.shape[0]:
        e = _run_end(pi, p)
        i = np.uint64(pi[p])
        for k in range(d):
            acc[k] = 0.0
        dc = 0.0
        while p + 3 < e:
            j0 = np.uint64(pj[p])
            j1 = np.uint64(pj[p + 1])
            j2 = np.uint64(pj[p + 2])
            j3 = np.uint64(pj[p + 3])
            w0, w1, w2, w3 = w[p], w[p + 1], w[p + 2], w[p + 3]
            dc += (w0 + w1) + (w2 + w3)
            deg[j0] += w0
            deg[j1] += w1
            deg[j2] += w2
            deg[j3] += w3
            for k in range(d):
                acc[k] += (w0 * X[j0, k] + w1 * X[j1, k]) + (w2 * X[j2, k] + w3 * X[j3, k])
            p += 4
        while p < e:
            j0 = np.uint64(pj[p])
            w0 = w[p]
            dc += w0
            deg[j0] += w0
            for k in range(d):
                acc[k] += w0 * X[j0, k]
            p += 1
        deg[i] += dc
        for k in range(d):
            V[i, k] -= 2.0 * acc[k]
    for i in range(n):
        for k in range(d):
            V[i, k] += deg[i] * X[i, k]


@njit(cache=True)
def _nonzero_pairs(w, pi, pj):  # pragma: no cover - compiled
    # the pairs with a nonzero weight (in their order) and those weights
    nz = np.empty(w.shape[0], dtype=np.int64)
    m = 0
    for p in range(w.shape[0]):
        nz[m] = p
        m += np.int64(w[p] != 0.0)
    nz = nz[:m]
    return w[nz], pi[nz], pj[nz]


@njit(cache=True)
def _point_rows(X, pi, pj):  # pragma: no cover - compiled
    # The rows of X of the points the pairs (pi, pj) use, in increasing order, and the
    # pairs' point ids local to them (the order of the pairs is kept); X, pi, pj
    # themselves when the pairs use more than 90 % of the points
    n, d = X.shape
    loc = np.zeros(n, dtype=np.int32)
    for p in range(pi.shape[0]):
        loc[pi[p]] = 1
        loc[pj[p]] = 1
    m = 0
    for i in range(n):
        m += loc[i]
    if m > 0.9 * n:
        return X, pi, pj   # too few rows to save
    pts = np.empty(n, dtype=np.int64)
    m = 0
    for i in range(n):
        u = loc[i]
        pts[m] = i
        loc[i] = m
        m += u
    Xs = np.empty((m, d))
    for r in range(m):
        for k in range(d):
            Xs[r, k] = X[pts[r], k]
    li = np.empty(pi.shape[0], dtype=np.int32)
    lj = np.empty(pi.shape[0], dtype=np.int32)
    for p in range(pi.shape[0]):
        li[p] = loc[pi[p]]
        lj[p] = loc[pj[p]]
    return Xs, li, lj


@njit(cache=True)
def _gram_sum(X, w, pi, pj):  # pragma: no cover - compiled
    # sum_p w_p (x_i - x_j)(x_i - x_j)^T: the symmetric part of X^T V (_gram_weights)
    V = np.empty_like(X)
    _gram_weights(X, w, pi, pj, V)
    A = X.T @ V
    _symmetrize(A)
    return A


# One evaluation of the objective in one compiled call (no Python calls in between):
# the per-pair forms of the route (:class:`.pairs._Forms`: the points' Gram route
# ``src = (X, pi, pj)`` or the stored differences ``src = (F,)``, full or diagonal
# metric), the loss pass and the weighted sum.


@intrinsic
def _cycles(typingctx):  # pragma: no cover - compiled
    # The CPU's cycle counter (llvm.readcyclecounter): splits the time of
    # :func:`_evaluate` between the pair forms and the loss pass.
    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic(
            "llvm.readcyclecounter", fnty=ir.FunctionType(ir.IntType(64), []))
        return builder.call(fn, [])
    return types.uint64(), codegen


def _forms_into(src, M, q):  # pragma: no cover - compiled only (see the overload)
    raise NotImplementedError


@overload(_forms_into)
def _forms_into_impl(src, M, q):  # pragma: no cover - compiled
    # q <- the per-pair forms at M, by the route of src (chosen when compiling)
    if len(src.types) == 3:
        def gram(src, M, q):
            X, pi, pj = src
            _quad_gram(X, X @ (M + M.T), pi, pj, np.empty(X.shape[0]), q)
        return gram
    if M.ndim == 1:
        return lambda src, M, q: _quad_diag(src[0], M, q)
    return lambda src, M, q: _quad_full(src[0], M, q)


def _weighted_sum(src, w, M, sparse):  # pragma: no cover - compiled only (the overload)
    raise NotImplementedError


@overload(_weighted_sum)
def _weighted_sum_impl(src, w, M, sparse):  # pragma: no cover - compiled
    # sum_p w_p F_p F_p^T (diagonal: F^T w) by the route of src; M only for its shape;
    # sparse: the Gram route drops the zero weights first (pays when most are zero)
    if len(src.types) == 3:
        def gram(src, w, M, sparse):
            X, pi, pj = src
            if sparse:
                w1, pi1, pj1 = _nonzero_pairs(w, pi, pj)
                return _gram_sum(X, w1, pi1, pj1)
            return _gram_sum(X, w, pi, pj)
        return gram
    if M.ndim == 1:
        def diag(src, w, M, sparse):
            a = np.empty(M.shape[0])
            _assemble_diag(src[0], w, a)
            return a
        return diag

    def full(src, w, M, sparse):
        A = np.empty(M.shape)
        _assemble_full(src[0], w, A)
        return A
    return full


@njit(cache=True)
def _forms(src, M, n_pairs):  # pragma: no cover - compiled
    # the n_pairs per-pair forms at M by the route of src (_Forms.quad and _evaluate)
    q = np.empty(n_pairs)
    _forms_into(src, M, q)
    return q


@njit(cache=True)
def _wsum(src, w, M):  # pragma: no cover - compiled
    # the weighted sum by the route of src (_Forms.assemble; M only for its shape), zero
    # weights skipped (the L-hat fold's pair counts are mostly zero)
    return _weighted_sum(src, w, M, True)


@njit(cache=True)
def _evaluate(src, M, n_pairs, la, lb, blk, gamma, hinge, mout, HL,
              lam):  # pragma: no cover - compiled
    # The reduced objective's parts at M over the triplets (la, lb) (local pair ids of
    # the n_pairs pairs of src): the loss pass (:func:`_loss_pass`, with its margins;
    # :func:`_block_loss_pass` when ``blk``, the anchor blocks of these triplets, has
    # any; :func:`_sorted_loss_pass` when they carry sort orders and no margins are
    # wanted) between the pair forms and their weighted sum; then A = sum_p w_p F_p F_p^T
    # + HL and G = lam M - A. Returns (loss, sum alpha, sum alpha^2, A, G, <M, M>,
    # <M, HL>, cycles of the forms and the weighted sum, cycles of the loss pass).
    c0 = _cycles()
    q = _forms(src, M, n_pairs)
    c1 = _cycles()
    w = np.empty(n_pairs)
    if blk[2].shape[0] > 0 and blk[7].shape[0] > 0 and mout.shape[0] == 0:
        loss, asum, a2 = _sorted_loss_pass(q, blk, gamma, hinge, w)
    elif blk[2].shape[0] > 0:
        loss, asum, a2 = _block_loss_pass(q, blk, gamma, hinge, w, mout)
    else:
        loss, asum, a2 = _loss_pass(q, la, lb, gamma, hinge, w, mout)
    c2 = _cycles()
    A = _weighted_sum(src, w, M, False)
    c3 = _cycles()
    G, mm, mh = _eval_tail(A, HL, M, lam)
    return loss, asum, a2, A, G, mm, mh, (c1 - c0) + (c3 - c2), c2 - c1


@njit(cache=True)
def _reduced_primal(loss, lam, mm, gamma, nL, mh):  # pragma: no cover - compiled
    # The reduced objective from the loss over the remaining triplets, <M, M> and
    # <M, H_L>: each of the nL L-hat triplets adds 1 - gamma/2 - <M, H_t> (shared by
    # _Run._make_eval and the compiled loop)
    return loss + 0.5 * lam * mm + (1.0 - 0.5 * gamma) * nL - mh


@njit(cache=True)
def _eval_tail(A, HL, M, lam):  # pragma: no cover - compiled
    # A <- A + HL; returns G = lam M - A, <M, M> and <M, HL> (the end of an evaluation)
    G = np.empty_like(A)
    Af = A.reshape(-1)
    Gf = G.reshape(-1)
    Mf = M.reshape(-1)
    Hf = HL.reshape(-1)
    mm = 0.0
    mh = 0.0
    for k in range(Af.shape[0]):
        a = Af[k] + Hf[k]
        Af[k] = a
        Gf[k] = lam * Mf[k] - a
        mm += Mf[k] * Mf[k]
        mh += Mf[k] * Hf[k]
    return G, mm, mh


@njit(cache=True)
def _pair_diff(q, la, lb, out):  # pragma: no cover - compiled
    # out[t] = q[la[t]] - q[lb[t]]  (margins / <Q, H_t> from per-pair forms)
    for t in range(la.shape[0]):
        out[t] = q[np.uint64(la[t])] - q[np.uint64(lb[t])]


@njit(cache=True)
def _dual_grad(q, la, lb, gamma, a):  # pragma: no cover - compiled
    # The gradient of the negated dual in alpha: <M(alpha), H_t> - 1 + gamma alpha_t,
    # from the forms q at M(alpha) (rounded as (q[la] - q[lb]) - 1 + gamma a in numpy)
    out = np.empty(la.shape[0])
    for t in range(la.shape[0]):
        out[t] = ((q[np.uint64(la[t])] - q[np.uint64(lb[t])]) - 1.0) + gamma * a[t]
    return out


@njit(cache=True)
def _dual_sums(a, Ap):  # pragma: no cover - compiled
    # (sum a, ||a||^2, ||Ap||_F^2): what the dual value needs at a (Ap = A(a)_+), in one
    # summation order for the Python and the compiled dual loop (numpy and BLAS differ)
    s1 = 0.0
    s2 = 0.0
    for t in range(a.shape[0]):
        s1 += a[t]
        s2 += a[t] * a[t]
    f = Ap.reshape(-1)
    ap2 = 0.0
    for i in range(f.shape[0]):
        ap2 += f[i] * f[i]
    return s1, s2, ap2


@njit(cache=True)
def _number_marked(mark, used_out):  # pragma: no cover - compiled
    # The pairs marked in use (mark[p] != 0) numbered in increasing global id: mark[p]
    # becomes the local id (-1 out of use), used_out[:count] the global ids; returns
    # the count (_compact_pairs and the anchor-block path pass number them alike)
    nu = 0
    for p in range(mark.shape[0]):
        if mark[p] != 0:
            mark[p] = nu
            used_out[nu] = p
            nu += 1
        else:
            mark[p] = -1
    return nu


@njit(cache=True)
def _compact_pairs(la, lb, n_pairs):  # pragma: no cover - compiled
    # The pairs used by triplets given by their (global) pair ids la, lb, and the
    # triplets' local pair ids (the path scan passes its contiguous output directly).
    mark = np.zeros(n_pairs, dtype=np.int32)
    n = la.shape[0]
    for t in range(n):
        mark[la[t]] = 1
        mark[lb[t]] = 1
    used = np.empty(n_pairs, dtype=np.int64)
    pairs = used[:_number_marked(mark, used)].copy()
    nla = np.empty(n, dtype=np.int32)
    nlb = np.empty(n, dtype=np.int32)
    for t in range(n):
        nla[t] = mark[la[t]]
        nlb[t] = mark[lb[t]]
    return pairs, nla, nlb


@njit(cache=True)
def _work_set(keep, uidx, ula, ulb, uhn, n_upairs, wst):  # pragma: no cover - compiled
    # The active set's working set among a remaining subset (global indices uidx, pair
    # ids ula, ulb local to its n_upairs pairs, norms uhn): the triplets with keep[k].
    # Sets the subset's statuses wst <- 0 in the working set, 3 out of it; reads only the
    # subset's arrays (gathers from all triplets miss the cache). Returns (number of
    # triplets whose status changed, global indices, pair ids a, b local to the pairs in
    # use (numbered in increasing order, as :func:`_compact_pairs`), norms, the pairs in
    # use as the subset's local ids). The first pass is branch-free (unconditional
    # store, position advanced by keep): the kept triplets follow no predictable pattern.
    n = uidx.shape[0]
    pos = np.empty(n, dtype=np.int32)
    nk = np.uint64(0)
    changed = 0
    for k in range(n):
        kp = np.int32(keep[k])
        s = np.int8(3 - 3 * kp)
        changed += np.int64(wst[k] != s)
        wst[k] = s
        pos[nk] = np.int32(k)
        nk += np.uint64(kp)
    m = np.int64(nk)
    mark = np.zeros(n_upairs, dtype=np.int32)
    widx = np.empty(m, dtype=np.int64)
    wla = np.empty(m, dtype=np.int32)
    wlb = np.empty(m, dtype=np.int32)
    whn = np.empty(m)
    for t in range(m):
        k = np.uint64(pos[t])
        a = ula[k]
        b = ulb[k]
        widx[t] = uidx[k]
        wla[t] = a
        wlb[t] = b
        whn[t] = uhn[k]
        mark[a] = 1
        mark[b] = 1
    used = np.empty(n_upairs, dtype=np.int64)
    nu = _number_marked(mark, used)
    for t in range(m):
        wla[t] = mark[wla[t]]
        wlb[t] = mark[wlb[t]]
    return changed, widx, wla, wlb, whn, used[:nu].copy()


@njit(cache=True)
def _inside_all(C, r, cn, m, n):  # pragma: no cover - compiled
    # ||m - C[k]|| <= r[k] for k < n, with the rounding allowance 1e-13 (r + ||C[k]|| +
    # ||m||) of Sphere.contains.
    mm = 0.0
    for i in range(m.shape[0]):
        mm += m[i] * m[i]
    mn = np.sqrt(mm)
    for k in range(n):
        s = 0.0
        for i in range(m.shape[0]):
            e = C[k, i] - m[i]
            s += e * e
        if not np.sqrt(s) <= r[k] + 1e-13 * (r[k] + cn[k] + mn):
            return False
    return True


@njit(cache=True)
def _sphere_rule(q, la, lb, hn, r, c, slack, code):  # pragma: no cover - compiled
    # Sphere rule (Eq. 4) on the triplets with code 0: code <- 1 (L-hat) or 2 (R-hat)
    # by :func:`_rule_sides`. Returns the numbers newly set to 1 and 2. Branch-free (the
    # rule on every triplet, applied where code is 0): a mixed code sequence mispredicts.
    nl = 0
    nr = 0
    for t in range(la.shape[0]):
        isL, isR = _rule_sides(q[np.uint64(la[t])] - q[np.uint64(lb[t])], r * hn[t], c,
                               slack)
        free = np.int64(code[t] == 0)
        isL *= free
        isR *= free
        code[t] += 2 * isR + isL
        nl += isL
        nr += isR
    return nl, nr


# The path kernels (_path_rule, _path_rule_blocks, _path_retest, _path_scan) take their
# arrays in records (tuples, unpacked first): rule = (r, c, slack), the sphere rule's
# radius, margin constant and rounding margin; state = (status, cnt), the triplets'
# statuses and the pairs' L-hat counts, updated in place; out = (idx_out, la_out, lb_out,
# hn_out), where the remaining triplets go; cands = (ids, slack radii, pa, pb, norms,
# statuses) of the re-test candidates; layout = the anchor blocks' seven arrays
# (:attr:`.pairs._Blocks.layout`).


@njit(cache=True, fastmath={"nsz", "arcp", "contract", "reassoc"}, error_model="numpy")
def _path_rule(q, pa, pb, hn32, rule, state, out, theta, cands):  # pragma: no cover - compiled
    # Path screening at a new lambda: the sphere rule (RRPB sphere with per-pair forms
    # q = F_p^T Q F_p of its centre and radius r) on every triplet, fused with the status
    # update and the compaction of the remaining triplets. ``status`` goes from the
    # previous lambda's path screening (0 active, 1 L-hat, 2 R-hat) to this lambda's;
    # ``cnt`` changes only for triplets entering or leaving L-hat (a rare, well-predicted
    # branch). The remaining triplets go to ``out``; otherwise branch-free (unconditional
    # stores, the output position advanced by 0 or 1). hn32 is ||H|| in float32 rounded
    # up (a larger norm only makes the rule more cautious). The candidates for
    # :func:`_path_retest`, the triplets whose slack radius (:func:`_slack_radius`) is at
    # most ``theta``, go to ``cands`` with their new status (empty: none kept).
    # Returns (number remaining, |L-hat|, |R-hat|, number of candidates).
    r, c, slack = rule
    status, cnt = state
    idx_out, la_out, lb_out, hn_out = out
    cid, crh, cpa, cpb, chn, cst = cands
    keep_rho = cid.shape[0] > 0
    nc = 0
    na = np.uint64(0)
    nl = 0
    nr = 0
    for t in range(pa.shape[0]):
        ia = np.uint64(pa[t])
        ib = np.uint64(pb[t])
        h = np.float64(hn32[t])
        hq = q[ia] - q[ib]
        isL, isR = _rule_sides(hq, r * h, c, slack)
        dL = isL - np.int64(status[t] == 1)
        status[t] = np.int8(2 * isR + isL)
        if keep_rho:
            v = _slack_radius(hq, r * h, h, isL, isR, c, slack)
            cid[nc] = t
            crh[nc] = v
            cpa[nc] = np.int32(ia)
            cpb[nc] = np.int32(ib)
            chn[nc] = hn32[t]
            cst[nc] = status[t]
            nc += np.int64(v <= theta)
        if dL != 0:
            cnt[ia] += dL
            cnt[ib] -= dL
        nl += isL
        nr += isR
        idx_out[na] = t
        la_out[na] = np.int32(ia)
        lb_out[na] = np.int32(ib)
        hn_out[na] = h
        na += np.uint64(1 - isL - isR)
    return np.int64(na), nl, nr, nc


@njit(cache=True, fastmath={"nsz", "arcp", "contract", "reassoc"}, error_model="numpy")
def _path_rule_blocks(q, layout, hn32, rule, state, out, used_out, theta,
                      cands):  # pragma: no cover - compiled
    # :func:`_path_rule` followed by :func:`_compact_pairs` of its output, in one call, for
    # triplets stored in anchor blocks (``layout``, as in :func:`_block_loss_pass`). Same
    # statuses, pair counts, remaining triplets and candidates, in the same order; the
    # remaining triplets' pair ids are local to the pairs still in use, listed in
    # used_out (increasing global ids, as _compact_pairs numbers them). Returns (number
    # remaining, |L-hat|, |R-hat|, number of pairs in use, number of candidates).
    # 1. Per anchor: the block's margins into a flat buffer, then the rule on it as one
    #    flat loop (no gathers or outcome-dependent stores: SIMD code; unsigned indices:
    #    no wraparound selects) keeping each triplet's L-hat change and whether it
    #    remains; then row and column sums of those: the pair counts (only when the
    #    block has L-hat changes), each row's remaining count, the pairs in use.
    # 2. The pairs in use numbered in increasing global id.
    # 3. Per anchor, the rows where something remains compacted, the anchor's local pair
    #    ids looked up once.
    left = np.empty(layout[6].shape[0], dtype=np.int64)
    mark = np.zeros(state[1].shape[0], dtype=np.int32)
    nl, nr, nc = _block_rule(q, layout, hn32, rule, state, theta, cands, left, mark)
    nu = _number_marked(mark, used_out)
    na = _block_compact(layout, state[0], hn32, left, mark, out)
    return na, nl, nr, nu, nc


@njit(cache=True, fastmath={"nsz", "arcp", "contract", "reassoc"}, error_model="numpy",
      inline="always")
def _block_rule(q, layout, hn32, rule, state, theta, cands, left,
                mark):  # pragma: no cover - compiled
    # Step 1 of :func:`_path_rule_blocks`: statuses, pair counts and candidates updated;
    # left[row] <- the row's remaining triplets, mark[p] <- 1 for the pairs in use.
    # Returns (|L-hat|, |R-hat|, number of candidates).
    t0, ns, nd, offs, offd, PA, PB = layout
    r, c, slack = rule
    status, cnt = state
    cid, crh, cpa, cpb, chn, cst = cands
    nl = 0
    nr = 0
    big = 1
    bigm = 1
    for a in range(nd.shape[0]):
        big = max(big, nd[a] * ns[a])
        bigm = max(bigm, nd[a])
    mb = np.empty(big)
    db = np.empty(big, dtype=np.int8)
    kb = np.empty(big, dtype=np.int8)
    qd = np.empty(bigm)
    dcv = np.empty(bigm, dtype=np.int64)
    keepc = np.empty(bigm, dtype=np.int8)
    keep_rho = cid.shape[0] > 0
    rb = np.empty(big if keep_rho else 0, dtype=np.float32)
    nc = 0
    for a in range(nd.shape[0]):
        m = nd[a]
        nsa = ns[a]
        od = np.uint64(offd[a])
        os_ = np.uint64(offs[a])
        for o in range(m):
            qd[o] = q[PA[od + np.uint64(o)]]
        for s in range(nsa):
            qs = q[PB[os_ + np.uint64(s)]]
            b0 = s * m
            for o in range(m):
                mb[b0 + o] = qd[o] - qs
        base = np.uint64(t0[a])
        cl = 0
        cr = 0
        ch = 0
        for u0 in range(nsa * m):
            u = np.uint64(u0)
            t = base + u
            mu = mb[u]
            h = np.float64(hn32[t])
            isL, isR = _rule_sides(mu, r * h, c, slack)
            if keep_rho:
                rb[u] = _slack_radius(mu, r * h, h, isL, isR, c, slack)
            dL = isL - np.int64(status[t] == 1)
            db[u] = np.int8(dL)
            kb[u] = np.int8(1 - isL - isR)
            status[t] = np.int8(2 * isR + isL)
            cl += isL
            cr += isR
            ch |= dL
        nl += cl
        nr += cr
        if keep_rho:
            for s in range(nsa):
                ib = PB[os_ + np.uint64(s)]
                b0 = s * m
                for o in range(m):
                    u = np.uint64(b0 + o)
                    v = rb[u]
                    if v <= theta:   # few: a small share, and the active (-inf) in runs
                        t = base + u
                        cid[nc] = np.int64(t)
                        crh[nc] = v
                        cpa[nc] = PA[od + np.uint64(o)]
                        cpb[nc] = ib
                        chn[nc] = hn32[t]
                        cst[nc] = status[t]
                        nc += 1
        # row and column sums of step 1 (the L-hat changes only when the block has any)
        for o in range(m):
            keepc[o] = 0
            dcv[o] = 0
        for s in range(nsa):
            b0 = s * m
            k = 0
            if ch != 0:
                drow = 0
                for o in range(m):
                    e = kb[b0 + o]
                    x = db[b0 + o]
                    k += e
                    keepc[o] |= e
                    drow += x
                    dcv[o] += x
                cnt[PB[os_ + np.uint64(s)]] -= drow
            else:
                for o in range(m):
                    e = kb[b0 + o]
                    k += e
                    keepc[o] |= e
            left[os_ + np.uint64(s)] = k
            if k > 0:
                mark[PB[os_ + np.uint64(s)]] = 1
        for o in range(m):
            if ch != 0:
                cnt[PA[od + np.uint64(o)]] += dcv[o]
            if keepc[o] != 0:
                mark[PA[od + np.uint64(o)]] = 1
    return nl, nr, nc


@njit(cache=True, fastmath={"nsz", "arcp", "contract", "reassoc"}, error_model="numpy",
      inline="always")
def _block_compact(layout, status, hn32, left, mark, out):  # pragma: no cover - compiled
    # Step 3 of :func:`_path_rule_blocks`: the remaining triplets (status 0) appended to
    # out row by row, their pair ids local (mark, as _number_marked numbered it); returns
    # their number.
    t0, ns, nd, offs, offd, PA, PB = layout
    idx_out, la_out, lb_out, hn_out = out
    bigm = 1
    for a in range(nd.shape[0]):
        bigm = max(bigm, nd[a])
    lpa = np.empty(bigm, dtype=np.int32)
    pos = np.empty(bigm, dtype=np.int64)
    na = np.uint64(0)
    for a in range(nd.shape[0]):
        m = nd[a]
        od = np.uint64(offd[a])
        os_ = np.uint64(offs[a])
        looked = False
        for s in range(ns[a]):
            k = left[os_ + np.uint64(s)]
            if k == 0:
                continue
            if not looked:
                for o in range(m):
                    lpa[o] = mark[PA[od + np.uint64(o)]]
                looked = True
            base = np.uint64(t0[a] + s * m)
            ib = mark[PB[os_ + np.uint64(s)]]
            # the row's remaining columns (one store each, the position advanced by 0
            # or 1), then the outputs copied from them (no chain through the position)
            kk = 0
            for o0 in range(m):
                pos[kk] = o0
                kk += np.int64(status[base + np.uint64(o0)] == 0)
            for u0 in range(kk):
                u = np.uint64(u0)
                o = np.uint64(pos[u])
                idx_out[na + u] = np.int64(base + o)
                la_out[na + u] = lpa[o]
                lb_out[na + u] = ib
                hn_out[na + u] = hn32[base + o]
            na += np.uint64(kk)
    return np.int64(na)


@njit(cache=True, fastmath={"nsz", "arcp", "contract", "reassoc"}, error_model="numpy")
def _path_retest(q, rule, state, cands, dmax, out):  # pragma: no cover - compiled
    # Path screening by re-testing only the candidates (``cands`` as :func:`_path_rule`
    # appends them, increasing triplet indices) whose slack radius crho is at most
    # ``dmax``: the rule of :func:`_path_rule` on them, same status update, pair counts
    # and output order (``status`` written where it changes); every other triplet keeps
    # its status, which is the rule's answer too (:meth:`.pathscreen.PathScreen._within`).
    # A branch-free pass selects them, then the rule runs on them in index order (pair
    # forms mostly in cache). Returns (number remaining, change of |L-hat|, change of
    # |R-hat|, number re-tested).
    r, c, slack = rule
    status, cnt = state
    cand, crho, cpa, cpb, ch, cst = cands
    idx_out, la_out, lb_out, hn_out = out
    na = 0
    dl = 0
    dr = 0
    pos = np.empty(cand.shape[0], dtype=np.int64)
    nre = 0
    for j in range(cand.shape[0]):
        pos[nre] = j
        nre += np.int64(crho[j] <= dmax)
    for k in range(nre):
        j = pos[k]
        ia = cpa[j]
        ib = cpb[j]
        h = np.float64(ch[j])
        isL, isR = _rule_sides(q[ia] - q[ib], r * h, c, slack)
        old = cst[j]
        new = np.int8(2 * isR + isL)
        if new != old:
            dL = isL - np.int64(old == 1)
            dl += dL
            dr += isR - np.int64(old == 2)
            cst[j] = new
            status[cand[j]] = new
            if dL != 0:
                cnt[ia] += dL
                cnt[ib] -= dL
        idx_out[na] = cand[j]
        la_out[na] = ia
        lb_out[na] = ib
        hn_out[na] = h
        na += np.int64(new == 0)
    return na, dl, dr, nre


@njit(cache=True)
def _blocks_match(t0, ns, nd, offs, offd, PA, PB, pa, pb):  # pragma: no cover - compiled
    # Whether the anchor blocks (:class:`.pairs._Blocks`) describe pa and pb exactly,
    # every triplet once.
    t = 0
    for a in range(nd.shape[0]):
        if t0[a] != t:
            return False
        for s in range(ns[a]):
            ib = PB[offs[a] + s]
            for o in range(nd[a]):
                if pa[t] != PA[offd[a] + o] or pb[t] != ib:
                    return False
                t += 1
    return t == pa.shape[0]


@njit(cache=True, error_model="numpy")
def _apply_codes(code, idx, la, lb, hn, status, cnt, idx_out, la_out, lb_out,
                 hn_out):  # pragma: no cover - compiled
    # Screening codes over the subset (idx, la, lb, hn) (0 keep, 1 L-hat, 2 R-hat):
    # update the global status, add the L-hat pair counts to cnt (by the subset's own
    # pair ids: the global pair arrays miss the cache) and compact the kept triplets into
    # idx_out, la_out, lb_out, hn_out (pair ids unchanged). Returns (number kept,
    # screened into L-hat, into R-hat). Branch-free (selects, 0/1 arithmetic,
    # unconditional stores): tests on the mixed codes would mispredict.
    nk = np.uint64(0)
    nl = 0
    nr = 0
    for t in range(idx.shape[0]):
        g = idx[t]
        c = code[t]
        st = status[g]
        status[g] = c if c != 0 else st
        isL = np.int64(c == 1)
        nl += isL
        nr += np.int64(c == 2)
        cnt[la[t]] += isL
        cnt[lb[t]] -= isL
        idx_out[nk] = g
        la_out[nk] = la[t]
        lb_out[nk] = lb[t]
        hn_out[nk] = hn[t]
        nk += np.uint64(c == 0)
    return np.int64(nk), nl, nr


@njit(cache=True, error_model="numpy")
def _path_scan(q0, pa, pb, hn32, ref, c, lam, state, ranges, out):  # pragma: no cover - compiled
    # Incremental range-based RRPB screening (Theorem 4.1, branch lam <= lam0), fused
    # with the status update and the compaction of the active triplets. A screened
    # triplet whose interval (thr, lam_ref] still contains lam is skipped (thr is +inf
    # for the active ones); every other one meets the newest reference ``ref`` (M0 with
    # per-pair forms q0, ||M0|| = m0n, lam0, eps; id rid >= 1): screened again
    # (status 1 L-hat / 2 R-hat, new thr, ref_of = rid; L-hat pair counts kept in
    # cnt) or active (status 0, ref_of = 0; appended to ``out``). ref_count[r]:
    # triplets certified by reference r (slot 0 unused). thr and hn32 are float32
    # rounded up (a later threshold and a larger ||H|| only make the rule more
    # cautious), halving the memory streamed. Both passes are branch-free (selects,
    # 0/1 arithmetic); unsigned indices in the main pass: no wraparound code.
    # Returns (number active, change in |L-hat|, change in |R-hat|, evaluated).
    m0n, lam0, eps, rid = ref
    status, cnt = state
    thr, ref_of, ref_count = ranges
    idx_out, la_out, lb_out, hn_out = out
    ev = 0
    lam32 = np.float32(lam)
    for t in range(pa.shape[0]):
        idx_out[ev] = t
        ev += thr[t] >= lam32
    na = np.uint64(0)
    dl = 0
    dr = 0
    # reference counts: the new reference's in a register, the old ones' decremented
    # unconditionally (an active triplet has ref_of 0: it subtracts 0 from slot 0)
    n_new = 0
    inf32 = np.float32(np.inf)
    for k in range(ev):
        t = np.uint64(idx_out[k])
        st = status[t]
        was = np.int64(st != 0)
        wasL = np.int64(st == 1)
        wasR = was - wasL
        ia = np.uint64(pa[t])
        ib = np.uint64(pb[t])
        h = np.float64(hn32[t])
        ref_count[np.uint64(ref_of[t])] -= was
        h0 = q0[ia] - q0[ib]
        mh = m0n * h
        e2 = 2.0 * eps * h
        aR = h0 + mh - 2.0
        xR = lam0 * (mh - h0 + e2) / aR
        okR = (aR > 0.0) & (xR < lam0)
        aL = 2.0 * c - h0 + mh
        xL = lam0 * (h0 + mh + e2) / aL
        okL = (aL > 0.0) & (xL < lam0) & (not okR)
        th = xR if okR else xL
        th = th * (1.0 + 1e-6) + 1e-300 if th > 0.0 else th
        th32 = np.float32(th)
        below = (th32 < lam32) & (th < lam)
        isR = np.int64(okR & below)
        isL = np.int64(okL & below)
        scr = isR + isL
        status[t] = 2 * isR + isL
        thr[t] = th32 if scr else inf32
        ref_of[t] = rid * scr
        n_new += scr
        dL = isL - wasL
        if dL != 0:  # rare: most re-evaluated triplets keep their side
            cnt[ia] += dL
            cnt[ib] -= dL
        dl += dL
        dr += isR - wasR
        idx_out[na] = np.int64(t)
        la_out[na] = np.int32(ia)
        lb_out[na] = np.int32(ib)
        hn_out[na] = h
        na += np.uint64(1 - scr)
    ref_count[rid] += n_new
    return np.int64(na), dl, dr, ev


# ---------------------------------------------------------------------------
# known answers (run by solvers.kernel_checks before the first solve)
# ---------------------------------------------------------------------------

#: The kernel family :func:`known_answers` checks, and its place in the report.
KNOWN_ANSWERS_FAMILY = "triplet_screening"
KNOWN_ANSWERS_RANK = 5


def _orthant_ref(h: np.ndarray, q: np.ndarray, r2: float) -> float:
    """``min h'x`` over ``{||x - q||^2 <= r2, x >= 0}`` by numpy bisection on the
    multiplier."""
    from ..kernel_checks import bisect

    def x_of(a: float) -> np.ndarray:
        return np.maximum(q - h / (2.0 * a), 0.0)

    def excess(log_a: float) -> float:
        return float(np.sum((x_of(np.exp(log_a)) - q) ** 2) - r2)

    a = np.exp(bisect(excess, -60.0, 60.0, 400))
    return float(h @ x_of(a))


def known_answers() -> list[tuple[str, object, object, float]]:
    """:func:`_orthant_bounds` (Appendix B, an argsort inside) and :func:`_quad_full` on
    fixed inputs, against :func:`_orthant_ref` and ``einsum``.

    Returns
    -------
    list of (str, object, object, float)
        ``(kernel, got, expected, tol)`` rows for :func:`solvers.kernel_checks.verify`.
    """
    rng = np.random.default_rng(16)
    S = rng.random((60, 40))
    pa = np.arange(0, 30, dtype=np.int64)
    pb = np.arange(30, 60, dtype=np.int64)
    q = rng.random(40)
    lo, hi = np.empty(pa.shape[0]), np.empty(pa.shape[0])
    _orthant_bounds(S, pa, pb, q, 0.3, lo, hi)
    H = S[pa] - S[pb]
    lo_ref = np.array([_orthant_ref(h, q, 0.3) for h in H])
    hi_ref = np.array([-_orthant_ref(-h, q, 0.3) for h in H])
    F = rng.normal(size=(25, 6))
    M = rng.normal(size=(6, 6))
    M = M + M.T
    out = np.empty(25)
    _quad_full(F, M, out)
    return [("_orthant_bounds", lo, lo_ref, 1e-8), ("_orthant_bounds", hi, hi_ref, 1e-8),
            ("_quad_full", out, np.einsum("pi,ij,pj->p", F, M, F), 1e-10)]
