"""Safe triplet screening: triplets, their pair form, the loss passes, lambda_max, problem
structure and argument checks."""

import math

import numpy as np
import pytest
from tripletkit import (
    _data,
    _explicit,
    _loss,
    _psd,
    _uneven_blocks,
)

from solvers import triplet_screening as ts
from solvers.triplet_screening import spheres as sph
from solvers.triplet_screening.tuning import Tuning


def test_triplet_counts_and_nearest_neighbours():
    X, y = _data(0, n=25)
    T = ts.triplets(X, y, np.inf)
    counts = np.bincount(y)
    assert T.shape[0] == sum((counts[c] - 1) * (len(y) - counts[c]) for c in y)
    assert np.all(y[T[:, 0]] == y[T[:, 1]]) and np.all(y[T[:, 0]] != y[T[:, 2]])
    assert np.all(T[:, 0] != T[:, 1])
    assert len({tuple(t) for t in T}) == T.shape[0]
    k = 3
    Tk = ts.triplets(X, y, k)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    for i in range(len(y)):
        rows = Tk[Tk[:, 0] == i]
        same = np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))
        other = np.flatnonzero(y != y[i])
        want_j = set(same[np.argsort(D[i, same], kind="stable")[:k]])
        want_l = set(other[np.argsort(D[i, other], kind="stable")[:k]])
        assert set(rows[:, 1]) == want_j and set(rows[:, 2]) == want_l
        assert rows.shape[0] == len(want_j) * len(want_l)
    assert ts.triplets(X, y, None).shape == T.shape


@pytest.mark.parametrize("diagonal", [False, True])
def test_pair_formulation_matches_explicit_H(diagonal):
    X, y = _data(1, n=20, d=5)
    prob = ts.TripletProblem(X, y, k=4, diagonal=diagonal)
    T = prob.triplets
    Hs = _explicit(X, T, diagonal)
    rng = np.random.default_rng(0)
    M = rng.random(5) if diagonal else _psd(rng, 5)
    if diagonal:
        m = Hs @ M
        np.testing.assert_allclose(prob.h_norms, np.linalg.norm(Hs, axis=1), rtol=1e-10,
                                   atol=1e-10)
    else:
        m = np.einsum("tij,ij->t", Hs, M)
        np.testing.assert_allclose(prob.h_norms, np.sqrt((Hs ** 2).sum((1, 2))), rtol=1e-10,
                                   atol=1e-10)
    np.testing.assert_allclose(prob.margins(M), m, rtol=1e-10, atol=1e-10)
    w = rng.normal(size=T.shape[0])
    np.testing.assert_allclose(prob.weighted_sum(w), np.tensordot(w, Hs, 1), rtol=1e-10,
                               atol=1e-9)
    lam = 3.0
    P = _loss(m, "smoothed_hinge", 0.05).sum() + lam / 2 * np.sum(M * M)
    assert prob.primal(M, lam) == pytest.approx(P, rel=1e-12)
    assert ts.primal_objective(M, X, y, lam, k=4, diagonal=diagonal) == pytest.approx(P, rel=1e-12)
    # gradient = lam M - sum alpha H with the KKT map, checked by finite differences
    G = prob.gradient(M, lam)
    E = rng.normal(size=M.shape)
    if not diagonal:
        E = E + E.T
    h = 1e-6
    fd = (prob.primal(M + h * E, lam) - prob.primal(M - h * E, lam)) / (2 * h)
    assert np.vdot(G, E) == pytest.approx(fd, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("k", [1, 2, math.inf])
def test_pair_form_routes_agree_with_the_explicit_sums(k):
    """Both routes of the per-pair forms (per pair; through Z = X (M + M^T), the degrees
    and the per-anchor sums) against F_p^T M F_p and sum_p w_p F_p F_p^T written out, on
    all pairs and on a subset; the route chosen follows the pair count."""
    from solvers.triplet_screening.pairs import _Forms

    X, y = _data(2, n=24, d=5)
    X = X + 7.0  # an offset the centred route must not lose digits to
    prob = ts.TripletProblem(X, y, k=k)
    d = prob.data
    assert d.forms.mode == ("pairs" if d.n_pairs <= d.n else "gram")
    rng = np.random.default_rng(3)
    M = _psd(rng, 5) - 0.5 * np.eye(5)
    M[0, 1] += 0.3  # not symmetric: the forms are those of its symmetric part
    for sel in (np.arange(d.n_pairs), np.sort(rng.choice(d.n_pairs, d.n_pairs // 3,
                                                          replace=False))):
        F = d.F[sel]
        w = rng.normal(size=sel.size)
        q_ref = np.einsum("pi,ij,pj->p", F, M, F)
        A_ref = np.einsum("p,pi,pj->ij", w, F, F)
        for mode in ("pairs", "gram"):
            f = _Forms(F, d.pi[sel], d.pj[sel], d.Xc, False)
            f.mode, f.F = mode, F
            np.testing.assert_allclose(f.quad(M), q_ref, rtol=1e-11, atol=1e-11)
            np.testing.assert_allclose(f.assemble(w), A_ref, rtol=1e-11, atol=1e-10)


@pytest.mark.parametrize("loss", ["smoothed_hinge", "hinge"])
@pytest.mark.parametrize("diagonal", [False, True])
def test_one_call_evaluation_matches_its_parts_written_out(loss, diagonal):
    """The one-call evaluation (forms, loss pass, weighted sum; every route) against the
    margins, KKT weights, losses, A = sum alpha H + H_L and G = lam M - A written out
    with the explicit H_t, with and without the margins kept, on a subset of the
    triplets; its cycle counts split the time, both are non-negative."""
    from solvers.triplet_screening.pairs import NO_BLOCKS, _Forms

    X, y = _data(1, n=30, d=4)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    d = prob.data
    rng = np.random.default_rng(7)
    idx = np.sort(rng.choice(d.n_t, d.n_t // 2, replace=False))
    sub = d.compact(idx)
    Hs = _explicit(X, prob.triplets[idx])
    if diagonal:
        Hs = np.einsum("tii->ti", Hs)
        M = rng.random(4)
        HL = rng.random(4)
    else:
        M = _psd(rng, 4)
        M[0, 1] += 0.2  # not symmetric: the forms are those of its symmetric part
        HL = _psd(rng, 4)
    m_ref = np.tensordot(Hs, M if diagonal else 0.5 * (M + M.T), M.ndim)
    gamma, lam = prob.gamma, 2.5
    a_ref = (m_ref < 1).astype(float) if loss == "hinge" else np.clip((1 - m_ref) / gamma, 0, 1)
    modes = ("pairs",) if diagonal else ("pairs", "gram")
    for mode in modes:
        f = _Forms(d.F[sub.pairs], d.pi[sub.pairs], d.pj[sub.pairs], d.Xc, diagonal)
        f.mode, f.F = mode, d.F[sub.pairs]
        for keep in (False, True):
            mout = np.empty(idx.size if keep else 0)
            loss_v, asum, a2, A, G, mm, mh, cf, cl = f.evaluate(
                M, sub.la, sub.lb, NO_BLOCKS, gamma, prob.hinge, mout, HL, lam)
            assert loss_v == pytest.approx(_loss(m_ref, loss, gamma).sum(), rel=1e-10)
            assert asum == pytest.approx(a_ref.sum(), rel=1e-12)
            assert a2 == pytest.approx((a_ref ** 2).sum(), rel=1e-12)
            A_ref = np.tensordot(a_ref, Hs, 1) + HL
            np.testing.assert_allclose(A, A_ref, rtol=1e-10, atol=1e-10)
            np.testing.assert_allclose(G, lam * M - A_ref, rtol=1e-10, atol=1e-10)
            assert mm == pytest.approx(np.sum(M * M)) and mh == pytest.approx(np.sum(M * HL))
            assert cf >= 0 and cl >= 0
            if keep:
                np.testing.assert_allclose(mout, m_ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("loss", ["smoothed_hinge", "hinge"])
def test_weak_duality_and_dual_formula(loss):
    X, y = _data(2)
    prob = ts.TripletProblem(X, y, k=3, loss=loss)
    Hs = _explicit(X, prob.triplets)
    rng = np.random.default_rng(1)
    for _ in range(5):
        lam = 10 ** rng.uniform(-1, 2)
        alpha = rng.random(prob.n_triplets)
        S = np.tensordot(alpha, Hs, 1)
        w, V = np.linalg.eigh(S)
        Sp = (V * np.maximum(w, 0)) @ V.T
        D = -prob.gamma / 2 * alpha @ alpha + alpha.sum() - np.sum(Sp * Sp) / (2 * lam)
        assert prob.dual(alpha, lam) == pytest.approx(D, rel=1e-10)
        assert ts.dual_objective(alpha, X, y, lam, k=3, loss=loss) == pytest.approx(D)
        M = _psd(rng, 4) * rng.uniform(0, 0.1)
        assert prob.dual(alpha, lam) <= prob.primal(M, lam) + 1e-9
        np.testing.assert_allclose(prob.metric_from_dual(alpha, lam), Sp / lam, atol=1e-10)


def test_lambda_max_closed_form():
    X, y = _data(11)
    prob = ts.TripletProblem(X, y, k=3)
    lmax = prob.lambda_max()
    assert ts.lambda_max(X, y, k=3) == pytest.approx(lmax)
    r = ts.solve(X, y, 1.5 * lmax, triplets=prob, backoff=False, tol=1e-12)
    assert r.converged
    np.testing.assert_allclose(r.M, prob.solution_above_lambda_max(1.5 * lmax), atol=1e-10)
    assert r.screened_L.size == prob.n_triplets
    m = prob.margins(prob.solution_above_lambda_max(lmax))
    assert m.max() == pytest.approx(1 - prob.gamma)
    r2 = ts.solve(X, y, 0.5 * lmax, triplets=prob, screening=None, tol=1e-10)
    assert prob.margins(r2.M).max() > 1 - prob.gamma
    # [sum H]_+ is computed once and shared; what callers get cannot alter it
    S = prob.solution_above_lambda_max(1.0)
    np.testing.assert_allclose(S, sph.proj_pm(prob.weighted_sum(np.ones(prob.n_triplets)))[0],
                               rtol=0, atol=0)
    S0 = S.copy()
    S += 1.0
    np.testing.assert_array_equal(prob.solution_above_lambda_max(1.0), S0)
    assert prob.lambda_max() == lmax


@pytest.mark.parametrize("loss", ["smoothed_hinge", "hinge"])
@pytest.mark.parametrize("diagonal", [False, True])
def test_sorted_pass_equals_the_block_pass(loss, diagonal):
    """The sorted pass (:func:`_sorted_loss_pass`) gives the block pass's loss, sum alpha,
    sum alpha^2 and per-pair weights to rounding, over all triplets of a set with
    duplicated points (equal forms) and over uneven custom blocks, at metrics that put
    triplets in all three pieces of the loss; its results do not depend on the orders
    it starts from (shuffled orders give the same numbers bit for bit), it leaves each
    block's forms sorted, and non-finite forms give a NaN loss."""
    from solvers.triplet_screening.kernels import _block_loss_pass, _sorted_loss_pass
    from solvers.triplet_screening.pairs import _anchor_blocks, _Data

    X, y = _data(8, n=36)
    X[5], y[5] = X[4], y[4]                    # a duplicated point: equal forms
    X[9] = X[7]                                # same place, other class
    T = ts.triplets(X, y, k=math.inf)
    T3 = _uneven_blocks(y)
    rng = np.random.default_rng(11)
    gamma = 0.3                                # a wide middle piece
    hinge = loss == "hinge"
    pieces = np.zeros(3, dtype=bool)
    for Tx in (T, T3):
        dx = _Data(X, Tx, diagonal)
        bx = _anchor_blocks(Tx, dx.pa, dx.pb)
        assert bx is not None
        sb = bx.sorted()
        for _ in range(5):
            M = rng.uniform(0.1, 1.0, X.shape[1]) if diagonal else _psd(rng, X.shape[1])
            m = dx.margins(M)
            M = M * rng.uniform(0.5, 3.0) / np.median(np.abs(m))
            q = dx.quad(M)
            m = dx.margins(M)
            pieces |= [np.any(m <= 1 - gamma), np.any((m > 1 - gamma) & (m < 1)),
                       np.any(m >= 1)]
            w1, w2 = np.empty(dx.n_pairs), np.empty(dx.n_pairs)
            r1 = _block_loss_pass(q, bx, gamma, hinge, w1, np.empty(0))
            r2 = _sorted_loss_pass(q, sb, gamma, hinge, w2)
            np.testing.assert_allclose(r2[:3], r1[:3], rtol=1e-12)
            np.testing.assert_allclose(w2, w1, rtol=1e-12, atol=1e-12 * np.abs(w1).max())
            for a in range(bx.nd.size):        # every block's forms left in order
                co = sb.CO[bx.offd[a]:bx.offd[a] + bx.nd[a]]
                ro = sb.RO[bx.offs[a]:bx.offs[a] + bx.ns[a]]
                assert np.all(np.diff(q[bx.PA[bx.offd[a] + co]]) >= 0)
                assert np.all(np.diff(q[bx.PB[bx.offs[a] + ro]]) >= 0)
                assert sorted(co.tolist()) == list(range(bx.nd[a]))
            # from shuffled orders: the same numbers, bit for bit
            sh = bx.sorted()
            for a in range(bx.nd.size):
                sl = slice(bx.offd[a], bx.offd[a] + bx.nd[a])
                sh.CO[sl] = rng.permutation(sh.CO[sl])
                sl = slice(bx.offs[a], bx.offs[a] + bx.ns[a])
                sh.RO[sl] = rng.permutation(sh.RO[sl])
            w3 = np.empty(dx.n_pairs)
            r3 = _sorted_loss_pass(q, sh, gamma, hinge, w3)
            assert r3 == r2
            np.testing.assert_array_equal(w3, w2)
        q[3] = np.nan
        assert math.isnan(_sorted_loss_pass(q, sb, gamma, hinge, np.empty(dx.n_pairs))[0])
        q[3] = np.inf
        assert math.isnan(_sorted_loss_pass(q, sb, gamma, hinge, np.empty(dx.n_pairs))[0])
    assert pieces.all()


def test_anchor_blocks_are_found_exactly_where_the_layout_has_them():
    """:func:`_anchor_blocks` recovers the layout of the default triplets, of a custom
    set with an anchor in two runs and uneven blocks, and refuses a shuffled set or a
    set whose rows do not share one list of l; the block pass gives the pair-id pass's
    results bit for bit (status, pair counts, remaining triplets) with their pair ids
    compacted as :func:`_compact_pairs` compacts them."""
    from solvers.triplet_screening.kernels import _compact_pairs, _path_rule, _path_rule_blocks
    from solvers.triplet_screening.pairs import _anchor_blocks, _Data

    X, y = _data(5, n=36)
    T = ts.triplets(X, y, k=math.inf)
    d = _Data(X, T, False)
    b = _anchor_blocks(T, d.pa, d.pb)
    assert b is not None and b.t0.size == 36 and d.blocks is not None
    rng = np.random.default_rng(0)
    assert _anchor_blocks(T[rng.permutation(len(T))], d.pa, d.pb) is None
    T2 = T.copy()
    T2[[3, 4], 2] = T2[[4, 3], 2]          # one row's l list reordered
    assert _anchor_blocks(T2, *(lambda e: (e.pa, e.pb))(_Data(X, T2, False))) is None
    T3 = _uneven_blocks(y)
    d3 = _Data(X, T3, False)
    b3 = _anchor_blocks(T3, d3.pa, d3.pb)
    assert b3 is not None
    assert b3.ns.tolist() == [2, 2, 3] and b3.nd.tolist() == [2, 4, 3]
    # the two passes agree exactly over a sequence of random spheres
    for Tx, dx, bx in ((T, d, b), (T3, d3, b3)):
        hn32 = (dx.hn * (1 + 1e-6)).astype(np.float32)
        st1 = np.zeros(len(Tx), np.int8)
        st2 = st1.copy()
        c1, c2 = np.zeros(dx.n_pairs), np.zeros(dx.n_pairs)
        seen = np.zeros(3, dtype=bool)
        for _ in range(8):
            M = _psd(rng, X.shape[1])
            q = dx.quad(3.0 * M / np.median(np.abs(dx.margins(M))))
            r = float(rng.uniform(0.0, 1.0) / np.median(dx.hn))
            o1 = (np.empty(len(Tx), np.int64), np.empty(len(Tx), np.int32),
                  np.empty(len(Tx), np.int32), np.empty(len(Tx)))
            o2 = tuple(np.empty_like(a) for a in o1)
            used = np.full(dx.n_pairs, -7, dtype=np.int64)
            # the candidates for re-testing (slack radius <= theta) alike
            theta = np.float32(rng.uniform(0.0, 2.0) / np.median(dx.hn))
            k1, k2 = ((np.empty(len(Tx), np.int64), np.empty(len(Tx), np.float32),
                       np.empty(len(Tx), np.int32), np.empty(len(Tx), np.int32),
                       np.empty(len(Tx), np.float32), np.empty(len(Tx), np.int8))
                      for _ in range(2))
            rule = (r, 0.95, 1e-11)
            n1 = _path_rule(q, dx.pa, dx.pb, hn32, rule, (st1, c1), o1, theta, k1)
            n2 = _path_rule_blocks(q, bx.layout, hn32, rule, (st2, c2), o2, used, theta, k2)
            assert n1[:3] == n2[:3] and n1[3] == n2[4]
            for a1, a2 in zip(k1, k2, strict=True):
                np.testing.assert_array_equal(a1[: n1[3]], a2[: n1[3]])
            np.testing.assert_array_equal(st1[k1[0][: n1[3]]], k1[5][: n1[3]])
            seen |= np.bincount(st1, minlength=3) > 0
            np.testing.assert_array_equal(st1, st2)
            np.testing.assert_array_equal(c1, c2)
            na = n1[0]
            for a1, a2 in zip(o1[::3], o2[::3], strict=True):   # idx, ||H||
                np.testing.assert_array_equal(a1[:na], a2[:na])
            # the pair ids come compacted, as _compact_pairs numbers them
            pairs, la, lb = _compact_pairs(o1[1][:na], o1[2][:na], dx.n_pairs)
            assert n2[3] == pairs.size
            np.testing.assert_array_equal(used[: n2[3]], pairs)
            np.testing.assert_array_equal(o2[1][:na], la)
            np.testing.assert_array_equal(o2[2][:na], lb)
        assert seen.all()  # active, L-hat and R-hat all occurred


@pytest.mark.parametrize("loss", ["smoothed_hinge", "hinge"])
def test_block_loss_pass_equals_the_pair_id_pass(loss):
    """The loss pass in anchor blocks gives the pair-id pass's loss, sum alpha, sum
    alpha^2, per-pair weights and margins (to rounding: its sums run in another order)
    on the default triplets of all pairs and on uneven custom blocks; a full evaluation
    through the problem's blocks equals one by pair ids, and so do the per-pair weights
    of a weighted sum of the H_t (by blocks and by pair ids)."""
    from solvers.triplet_screening.kernels import _block_loss_pass, _loss_pass
    from solvers.triplet_screening.pairs import NO_BLOCKS, _anchor_blocks, _Data

    X, y = _data(5, n=36)
    T = ts.triplets(X, y, k=math.inf)
    T3 = _uneven_blocks(y)
    rng = np.random.default_rng(3)
    gamma = 0.05
    hinge = loss == "hinge"
    for Tx in (T, T3):
        dx = _Data(X, Tx, False)
        bx = _anchor_blocks(Tx, dx.pa, dx.pb)
        assert bx is not None
        n = len(Tx)
        for _ in range(4):
            M = _psd(rng, X.shape[1])
            q = dx.quad(M / np.median(np.abs(dx.margins(M))))
            out = []
            for blocked in (False, True):
                w, mout = np.empty(dx.n_pairs), np.empty(n)
                if blocked:
                    res = _block_loss_pass(q, bx, gamma, hinge, w, mout)
                else:
                    res = _loss_pass(q, dx.pa, dx.pb, gamma, hinge, w, mout)
                out.append((res, w, mout))
            (r1, w1, m1), (r2, w2, m2) = out
            np.testing.assert_allclose(r2, r1, rtol=1e-12)
            np.testing.assert_allclose(w2, w1, rtol=1e-12, atol=1e-12 * np.abs(w1).max())
            np.testing.assert_array_equal(m2, m1)
            assert 0 < r1[1] < n and np.ptp(m1) > 0
    prob = ts.TripletProblem(X, y, k=math.inf, loss=loss)
    d = prob.data
    assert d.everything.blocks.nd.size == 36
    M = _psd(rng, X.shape[1])
    HL = _psd(rng, X.shape[1])
    for keep in (False, True):
        res = [d.forms.evaluate(M, d.pa, d.pb, blk, prob.gamma, prob.hinge,
                                np.empty(d.n_t if keep else 0), HL, 1.5)
               for blk in (NO_BLOCKS, d.everything.blocks)]
        for a, b in zip(res[0][:7], res[1][:7], strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    # the per-pair weights of sum_t v_t H_t (the dual method's A): by blocks over all
    # triplets, by pair ids over a subset, and the weighted sum against H_t written out
    v = rng.normal(size=d.n_t)
    ref_w = np.bincount(d.pa, v, d.n_pairs) - np.bincount(d.pb, v, d.n_pairs)
    np.testing.assert_allclose(d.everything.pair_weights(v), ref_w, rtol=1e-12, atol=1e-12)
    idx = np.sort(rng.choice(d.n_t, d.n_t // 3, replace=False))
    sub = d.compact(idx)
    assert sub.blocks.nd.size == 0
    np.testing.assert_allclose(
        sub.pair_weights(v[idx]), np.bincount(sub.la, v[idx], sub.pairs.size)
        - np.bincount(sub.lb, v[idx], sub.pairs.size), rtol=1e-12, atol=1e-12)
    Hs = _explicit(X, prob.triplets)
    np.testing.assert_allclose(prob.weighted_sum(v), np.tensordot(v, Hs, 1), rtol=1e-10,
                               atol=1e-9)


def test_gram_weighted_sum_with_mostly_zero_weights():
    """The Gram route's weighted sum (which skips zero weights: the L-hat fold's pair
    counts are mostly zero) is ``sum_p w_p F_p F_p^T``, with weights on a few pairs, on
    most pairs and on none."""
    from solvers.triplet_screening.pairs import _Data

    X, y = _data(11, n=40)
    d = _Data(X, ts.triplets(X, y, k=math.inf), False)
    assert d.forms.mode == "gram"
    rng = np.random.default_rng(3)
    for share in (0.0, 0.05, 0.3, 0.9):
        w = np.where(rng.random(d.n_pairs) < share,
                     rng.integers(-5, 6, d.n_pairs), 0).astype(float)
        ref = np.einsum("p,pi,pj->ij", w, d.F, d.F)
        got = d.assemble(w)
        assert np.abs(got - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())
        assert (np.abs(ref).max() > 0) == (share > 0)


def test_fingerprint_is_a_hash_of_the_ordered_triplets():
    # The old checksum sum(3i + 7j + 11l) collided when two triplets of the same class
    # swapped their middle index; warm starts and the RRPB reference hang on it.
    from solvers.base import IncompatibleWarmStart

    X, y = _data(31)
    T = ts.triplets(X, y, 3)
    rows = np.flatnonzero((T[:, 0] == T[0, 0]) & (T[:, 1] != T[0, 1]))
    r = int(rows[0])
    T2 = T.copy()
    T2[0, 1], T2[r, 1] = T[r, 1], T[0, 1]
    assert sorted((3 * T[:, 0] + 7 * T[:, 1] + 11 * T[:, 2]).tolist()) == sorted(
        (3 * T2[:, 0] + 7 * T2[:, 1] + 11 * T2[:, 2]).tolist())  # the old checksum collides
    p1 = ts.TripletProblem(X, y, triplets=T)
    p2 = ts.TripletProblem(X, y, triplets=T2)
    assert p1.fingerprint() != p2.fingerprint()
    assert ts.TripletProblem(X, y, triplets=T.copy()).fingerprint() == p1.fingerprint()
    assert ts.TripletProblem(X + 1e-3, y, triplets=T).fingerprint() != p1.fingerprint()
    lam = 0.1 * p1.lambda_max()
    r1 = ts.solve(X, y, lam, triplets=p1)
    with pytest.raises(IncompatibleWarmStart, match="init does not match"):
        ts.solve(X, y, 0.9 * lam, triplets=p2, init=r1)


def test_extreme_scales_raise_clear_errors():
    # issue 14 reproducers: LinAlgError and ZeroDivisionError before
    X = np.random.default_rng(0).normal(size=(30, 4))
    y = np.arange(30) % 3
    with pytest.raises(ValueError, match=r"^X: the triplet matrices"):
        ts.solve(X * 1e300, y, 1.0, k=3)
    with pytest.raises(ValueError, match=r"^X: the triplet matrices"):
        ts.solve(X * 1e300, y, 1.0, k=3, diagonal=True)
    with pytest.raises(ValueError, match=r"^lam=1e-300 is too small"):
        ts.solve(X, y, 1e-300)


def test_params_declared_once():
    import inspect

    sig = inspect.signature(ts.solve)
    for name, spec in ts.PARAMS.items():
        if name != "lam":  # positional
            assert sig.parameters[name].default == spec.default
    assert ts.LOSSES == ts.PARAMS["loss"].choices and ts.RULES == ts.PARAMS["rule"].choices
    with pytest.raises(ValueError, match="rule"):
        ts.solve(*_data(3), 1.0, k=2, rule="nope")


@pytest.mark.parametrize(
    ("kwargs", "exc", "msg"),
    [
        (dict(y=np.zeros(30, dtype=int)), ValueError, "single class"),
        (dict(k=0), ValueError, "k must be"),
        (dict(k=-1), ValueError, "k must be"),
        (dict(k=2.5), TypeError, "k must be"),
        (dict(lam=0.0), ValueError, "lam must"),
        (dict(lam=-1.0), ValueError, "lam must"),
        (dict(gamma=-0.1), ValueError, "gamma must"),
        (dict(gamma=0.0), ValueError, "gamma must"),
        (dict(loss="square"), ValueError, "loss must"),
        (dict(rule="box"), ValueError, "rule must"),
        (dict(screening=("xyz",)), ValueError, "screening must"),
        (dict(screening="rpb"), ValueError, "rpb"),
        (dict(method="newton"), ValueError, "method must"),
        (dict(active_set=True, method="dual"), ValueError, "active_set"),
        (dict(tol=0.0), ValueError, "tol must"),
        (dict(max_iter=0), ValueError, "max_iter must"),
        (dict(X=np.full((30, 4), np.nan)), ValueError, "X contains"),
        (dict(y=np.arange(5)), ValueError, "y must"),
        (dict(triplets=np.array([[0, 0, 1]])), ValueError, "triplets"),
        (dict(triplets=np.array([[0, 1]])), ValueError, "triplets"),
        (dict(triplets=np.array([[0, 1, 99]])), ValueError, "triplets"),
        (dict(init="previous"), TypeError, "init"),
        (dict(callback=3), TypeError, "callback"),
        (dict(diagonal=1), TypeError, "diagonal"),
    ],
)
def test_bad_input_raises(kwargs, exc, msg):
    X, y = _data(18)
    args = dict(X=X, y=y, lam=1.0, k=3)
    args.update(kwargs)
    X_, y_, lam_ = args.pop("X"), args.pop("y"), args.pop("lam")
    with pytest.raises(exc, match=msg):
        ts.solve(X_, y_, lam_, **args)


def test_bad_input_more():
    X, y = _data(19)
    prob = ts.TripletProblem(X, y, k=3)
    with pytest.raises(ValueError, match="init does not match"):
        ts.solve(X, y, 1.0, k=2, init=ts.solve(X, y, 1.0, triplets=prob))
    with pytest.raises(ValueError, match="alpha must lie"):
        prob.dual(np.full(prob.n_triplets, 2.0), 1.0)
    with pytest.raises(ValueError, match="M must have shape"):
        prob.margins(np.eye(3))
    with pytest.raises(ValueError, match="ratio must"):
        ts.path(X, y, k=3, ratio=1.0)
    with pytest.raises(ValueError, match="range_screening"):
        ts.path(X, y, k=3, screening=("pgb",), range_screening=True)
    with pytest.raises(ValueError, match="compare sphere"):
        ts.path(X, y, k=3, compare=("nope:sphere",))
    for bad in ("every5", None, 10):
        with pytest.raises((ValueError, TypeError), match="dynamic"):
            ts.path(X, y, k=3, dynamic=bad)
        with pytest.raises((ValueError, TypeError), match="dynamic"):
            ts.solve(X, y, 1.0, triplets=prob, dynamic=bad)
    same_class = np.flatnonzero(y == y[0])
    with pytest.raises(ValueError, match=r"y\[l\] != y\[i\]"):
        ts.solve(X, y, 1.0, triplets=np.array([[0, same_class[1], same_class[2]]]))
    with pytest.raises(TypeError, match="triplets must contain integer"):
        ts.solve(X, y, 1.0, triplets=np.array([[0.5, 1.0, 2.0]]))


def test_private_options_are_validated_once_and_recorded():
    """``solve`` and ``path`` validate their private options with the same builder and
    record them in ``params`` (``_tuning``: the fields changed from the default table);
    the table rejects weights that are not finite nonnegative numbers, and shares
    outside (0, 1]."""
    import pickle
    from dataclasses import fields

    from solvers.triplet_screening.tuning import DEFAULT

    X, y = _data(19)
    prob = ts.TripletProblem(X, y, k=3)
    for call in (lambda **kw: ts.solve(X, y, 1.0, triplets=prob, **kw),
                 lambda **kw: ts.path(X, y, triplets=prob, n_lambdas=3, **kw)):
        for kw, exc, msg in ((dict(_compiled="yes"), TypeError, "_compiled"),
                             (dict(_chunk=0), ValueError, "_chunk"),
                             (dict(_tuning={"sample": 10}), TypeError, "_tuning")):
            with pytest.raises(exc, match=msg):
                call(**kw)
        default = call()
        assert {k: default.params[k] for k in ("_compiled", "_chunk", "_tuning")} == {
            "_compiled": True, "_chunk": 2048, "_tuning": {}}
        tuned = call(_compiled=False, _chunk=7, _tuning=Tuning(pay_margin=3.0, sample=64))
        assert (tuned.params["_compiled"], tuned.params["_chunk"]) == (False, 7)
        assert tuned.params["_tuning"] == {"pay_margin": 3.0, "sample": 64}
    for bad in (dict(pay_margin=-1.0), dict(round_overhead=math.inf),
                dict(path_overhead=math.nan), dict(sample=1.5), dict(skip_lambdas=True),
                dict(cand_share=0.0), dict(adaptive_shrink=1.5), dict(gram_weight="0.02")):
        with pytest.raises(ValueError, match=next(iter(bad))):
            Tuning(**bad)
    assert pickle.loads(pickle.dumps(DEFAULT)) == DEFAULT == Tuning()
    assert all(f.name in Tuning.__doc__ for f in fields(Tuning))  # each field documented


def test_explorer_entry_and_generators():
    from explorer.models.triplet_screening import ENTRY, data, lam_from

    p = data.synthetic(seed=1, n=40, d=6, classes=4, informative=2, k=0)
    X, T = p.data["X"], p.data["triplets"]
    assert X.shape == (40, 6) and T.shape[0] == p.info["n_triplets"]
    assert np.all(p.info["means"][:, 2:] == 0)
    with pytest.raises(ValueError, match="informative"):
        data.synthetic(d=3, informative=5)
    with pytest.raises(ValueError, match="classes"):
        data.synthetic(classes=1)
    prob = ENTRY.datasets["iris"](seed=0, n=60, k=3)
    assert prob.data["X"].shape == (60, 4)
    res = ENTRY.solve(prob, tol=1e-8, max_iter=5000, lam_rel=0.05, screening="rrpb+pgb")
    assert res.lam == pytest.approx(lam_from(prob, 0.05))
    refv = ENTRY.reference(prob, lam_rel=0.05)
    assert abs(res.primal - refv.value) / abs(refv.value) < 1e-6
    assert ENTRY.reference_refusal(ENTRY.datasets["iris"](seed=0, k=0)) is not None
