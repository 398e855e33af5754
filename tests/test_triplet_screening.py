"""Safe triplet screening (RTLM): pair formulation, certificates, cvxpy, safety, spheres, path."""

import itertools
import math
import warnings

import cvxpy as cp
import numpy as np
import pytest

from solvers import ConvergenceWarning
from solvers import triplet_screening as ts
from solvers.reference import triplet_screening as ref
from solvers.triplet_screening import spheres as sph
from solvers.triplet_screening.tuning import Tuning

# ----------------------------------------------------------------- helpers


def _data(seed, n=30, d=4, classes=3, sep=0.8):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    rng.shuffle(y)
    X = rng.normal(size=(n, d)) + sep * y[:, None] * rng.normal(size=d)
    return X, y


def _H(X, t):
    i, j, l = t
    a, b = X[i] - X[l], X[i] - X[j]
    return np.outer(a, a) - np.outer(b, b)


def _explicit(X, T, diagonal=False):
    Hs = np.array([_H(X, t) for t in T])
    if diagonal:
        return np.array([np.diag(h) for h in Hs])
    return Hs


def _loss(m, loss, gamma):
    u = 1.0 - m
    if loss == "hinge":
        return np.maximum(u, 0)
    return np.where(u <= 0, 0, np.where(u >= gamma, u - gamma / 2, u * u / (2 * gamma)))


def _uneven_blocks(y):
    """Custom triplets in uneven anchor blocks: anchor 0 twice (rows of 2, then rows of
    3), anchor 1 once (rows of 4)."""
    n = len(y)
    same0 = [j for j in range(n) if y[j] == y[0] and j != 0][:3]
    oth0 = [l for l in range(n) if y[l] != y[0]]
    same1 = [j for j in range(n) if y[j] == y[1] and j != 1][:2]
    oth1 = [l for l in range(n) if y[l] != y[1]][:4]
    return np.array([(0, j, l) for j in same0[:2] for l in oth0[:2]]
                    + [(1, j, l) for j in same1 for l in oth1]
                    + [(0, j, l) for j in same0 for l in oth0[2:5]])


def _psd(rng, d, rank=None):
    A = rng.normal(size=(d, rank or d))
    return A @ A.T


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return f(*a, **k)


def _tight(X, y, lam, prob):
    """A tightly solved optimum (no screening)."""
    return _quiet(ts.solve, X, y, lam, triplets=prob, loss=prob.loss, gamma=prob.gamma,
                  diagonal=prob.diagonal, screening=None, tol=1e-13, max_iter=100_000)


# ----------------------------------------------------------------- triplets


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
def test_fused_evaluation_matches_its_parts_written_out(loss, diagonal):
    """The one-call evaluation (forms, loss pass, weighted sum; every route) against the
    margins, KKT weights, losses, A = sum alpha H + H_L and G = lam M - A written out
    with the explicit H_t, with the margins kept and the sphere rule applied, on a
    subset of the triplets; its cycle counts split the time, both are non-negative."""
    from solvers.triplet_screening.pairs import NO_BLOCKS, _Forms
    from solvers.triplet_screening.spheres import RULE_SLACK

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
    r, c = 0.3, 1.0 - gamma
    rh = r * sub.hn
    s = RULE_SLACK * (np.abs(m_ref) + rh + 1.0)
    code_ref = np.where(m_ref + rh < c - s, 1, np.where(m_ref - rh > 1 + s, 2, 0))
    modes = ("pairs",) if diagonal else ("pairs", "gram")
    for mode in modes:
        f = _Forms(d.F[sub.pairs], d.pi[sub.pairs], d.pj[sub.pairs], d.Xc, diagonal)
        f.mode, f.F = mode, d.F[sub.pairs]
        for keep, with_rule in ((False, False), (True, True)):
            mout = np.empty(idx.size if keep else 0)
            code = np.full(idx.size, -1, dtype=np.int8)
            rule = (sub.hn, r, c, RULE_SLACK, code) if with_rule else None
            loss_v, asum, a2, nl, nr, A, G, mm, mh, cf, cl = f.evaluate(
                M, sub.la, sub.lb, NO_BLOCKS, gamma, prob.hinge, mout, rule, HL, lam)
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
            if with_rule:
                np.testing.assert_array_equal(code, code_ref)
                assert (nl, nr) == ((code_ref == 1).sum(), (code_ref == 2).sum())
                assert 0 < nl + nr < idx.size  # the rule decides both ways here
            else:
                assert (nl, nr) == (0, 0) and (code == -1).all()


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


# ----------------------------------------------------------------- solver vs cvxpy

CASES = [(s, loss, diag) for s in range(3) for loss in ("smoothed_hinge", "hinge")
         for diag in (False, True)]


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
def test_agrees_with_cvxpy_and_certificate_brackets_it(seed, loss, diagonal):
    X, y = _data(10 + seed)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=3) * 10 ** np.random.default_rng(seed).uniform(-2.5, -0.5)
    r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, diagonal=diagonal,
               backoff=False, tol=1e-9, max_iter=50_000)
    c = ref.solve(X, y, lam, triplets=prob)
    scale = max(1.0, abs(c.value))
    assert r.converged
    assert abs(r.primal - c.value) / scale <= 1e-6
    assert r.dual <= c.value + 1e-7 * scale and c.value <= r.primal + 1e-7 * scale
    assert r.primal == pytest.approx(prob.primal(r.M, lam), rel=1e-12)
    # compare metrics within the certified radius (plus cvxpy's own accuracy)
    assert np.linalg.norm(r.M - c.M) <= r.radius + 1e-3 * max(1.0, np.linalg.norm(c.M))
    assert np.all(np.asarray(r.history.gap) >= 0)
    assert np.all(r.history.primal >= r.history.dual - 1e-12 * np.abs(r.history.primal))


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5])
def test_active_set_refreshed_on_convergence_agrees_with_cvxpy(seed, diagonal):
    """The active set with ``refresh="converged"`` (every early refresh paying) reaches
    cvxpy's optimum and its certificate brackets it, as the plain solve does (smoothed
    hinge: the active set runs projected gradient, which does not reach 1e-9 on the
    hinge within the budget on either schedule)."""
    loss = "smoothed_hinge"
    X, y = _data(10 + seed)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=3) * 10 ** np.random.default_rng(seed).uniform(-2.5, -0.5)
    r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, diagonal=diagonal,
               active_set=True, refresh="converged", backoff=False, tol=1e-9,
               max_iter=50_000, _tuning=CHEAP_REFRESH)
    c = ref.solve(X, y, lam, triplets=prob)
    scale = max(1.0, abs(c.value))
    assert r.converged and r.params["refresh"] == "converged"
    assert abs(r.primal - c.value) / scale <= 1e-6
    assert r.dual <= c.value + 1e-7 * scale and c.value <= r.primal + 1e-7 * scale
    assert r.primal == pytest.approx(prob.primal(r.M, lam), rel=1e-12)
    assert np.linalg.norm(r.M - c.M) <= r.radius + 1e-3 * max(1.0, np.linalg.norm(c.M))


def _certified_as_cvxpy(X, y, prob, certs):
    """Each ``(M, P, D, gap, lam)``: the primal matches cvxpy's optimum at ``lam``, the
    certificate brackets it, ``P`` is the full objective at ``M`` written out, and ``M``
    lies within the certified radius (plus cvxpy's own accuracy)."""
    for M, P, D, gap, lam_t in certs:
        c = ref.solve(X, y, lam_t, triplets=prob)
        scale = max(1.0, abs(c.value))
        assert abs(P - c.value) / scale <= 1e-6
        assert D <= c.value + 1e-7 * scale <= P + 2e-7 * scale
        assert P == pytest.approx(prob.primal(M, lam_t), rel=1e-12)
        radius = math.sqrt(2.0 * max(gap, 0.0) / lam_t)
        assert np.linalg.norm(M - c.M) <= radius + 1e-3 * max(1.0, np.linalg.norm(c.M))


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
def test_anchor_block_loss_pass_agrees_with_cvxpy(seed, loss, diagonal):
    """All triplets of a small set (rows of ~13: the loss pass over all triplets goes by
    anchor blocks): the naive solve and a screened path (back-off off, so the remainder
    goes by pair ids after screening) agree with cvxpy, the certificate brackets it,
    the reported primal is the full objective written out by pair ids, and the metric
    lies within the certified radius."""
    X, y = _data(70 + seed, n=20)
    prob = ts.TripletProblem(X, y, k=math.inf, loss=loss, diagonal=diagonal)
    assert prob.data.everything.blocks.nd.size == 20
    lam = prob.lambda_max() * 10 ** np.random.default_rng(seed).uniform(-2.0, -0.7)
    r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, diagonal=diagonal,
               screening=None, tol=1e-9, max_iter=50_000)
    p = _quiet(ts.path, X, y, triplets=prob, loss=loss, diagonal=diagonal, tol=1e-9,
               lam_min=lam, n_lambdas=200, termination=False, backoff=False,
               max_iter=50_000)
    _certified_as_cvxpy(X, y, prob, [(r.M, r.primal, r.dual, r.gap, lam),
                                     (p.Ms[-1], p.primal[-1], p.dual[-1], p.gap[-1],
                                      p.lambdas[-1])])
    assert p.converged.all() and np.max(p.rate_path) > 0  # the path did screen


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
def test_sorted_evaluation_agrees_with_cvxpy(seed, loss, diagonal):
    """evaluation='sorted' (the sorted pass over the anchor blocks of all triplets): the
    naive solve, by the primal method (smoothed hinge) and by the dual one, and a path
    agree with cvxpy, the certificate brackets it, the reported primal is the full
    objective written out, the metric lies within the certified radius, and the naive
    solve matches the one that visits every triplet."""
    X, y = _data(170 + seed, n=24)
    prob = ts.TripletProblem(X, y, k=math.inf, loss=loss, diagonal=diagonal)
    assert prob.data.blocks is not None
    lam = prob.lambda_max() * 10 ** np.random.default_rng(seed).uniform(-2.0, -0.7)
    kw = dict(triplets=prob, loss=loss, diagonal=diagonal, tol=1e-9, max_iter=50_000)
    methods = ("dual",) if loss == "hinge" else ("pgd", "dual")  # PGD: a smooth primal
    runs = [_quiet(ts.solve, X, y, lam, screening=None, evaluation=ev, method=m, **kw)
            for ev in ("sorted", "triplets") for m in methods]
    half = len(methods)
    p = _quiet(ts.path, X, y, lam_min=lam, n_lambdas=200, termination=False,
               evaluation="sorted", **kw)
    assert runs[0].params["evaluation"] == "sorted" and p.params["evaluation"] == "sorted"
    assert not runs[0].notes
    _certified_as_cvxpy(X, y, prob, [(r.M, r.primal, r.dual, r.gap, lam) for r in runs[:half]]
                        + [(p.Ms[-1], p.primal[-1], p.dual[-1], p.gap[-1], p.lambdas[-1])])
    assert p.converged.all() and all(r.converged for r in runs)
    # the sorted solve and the one visiting every triplet certify the same optimum
    for a, b in zip(runs[:half], runs[half:], strict=True):
        assert abs(a.primal - b.primal) <= 2e-9 * max(1.0, abs(b.primal))
        assert a.dual <= b.primal + 1e-12 * abs(b.primal)
        assert b.dual <= a.primal + 1e-12 * abs(a.primal)


def test_sorted_evaluation_without_anchor_blocks_says_so():
    """kNN triplets with short rows have no anchor blocks: evaluation='sorted' visits
    each triplet (the same iterates as 'triplets') and the result's notes say so."""
    X, y = _data(3)
    prob = ts.TripletProblem(X, y, k=3)
    assert prob.data.blocks is None
    lam = 0.05 * prob.lambda_max()
    a = ts.solve(X, y, lam, triplets=prob, screening=None, evaluation="sorted")
    b = ts.solve(X, y, lam, triplets=prob, screening=None)
    assert any("anchor blocks" in n for n in a.notes) and not b.notes
    np.testing.assert_array_equal(a.M, b.M)
    assert a.n_iter == b.n_iter
    with pytest.raises(ValueError, match="evaluation"):
        ts.solve(X, y, lam, triplets=prob, evaluation="blocks")
    with pytest.raises(ValueError, match="evaluation"):
        ts.path(X, y, triplets=prob, evaluation="blocks")


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
@pytest.mark.parametrize("warm_start", ["previous", "secant"])
def test_path_agrees_with_cvxpy_at_every_lambda(seed, loss, diagonal, warm_start):
    """Along a screened path every lambda after the first starts from the previous one's
    last evaluation, or with warm_start='secant' from the extrapolated (and projected)
    path (and path screening may sit out): at each lambda the certified objective
    matches cvxpy, the certificate brackets it and the metric lies within the certified
    radius."""
    X, y = _data(40 + seed)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    p = _quiet(ts.path, X, y, triplets=prob, loss=loss, diagonal=diagonal, tol=1e-9,
               n_lambdas=8, termination=False, backoff=seed % 2 == 0, max_iter=50_000,
               warm_start=warm_start)
    assert len(p.lambdas) == 8 and p.converged.all()
    assert p.params["warm_start"] == warm_start
    _certified_as_cvxpy(X, y, prob, [(p.Ms[t], p.primal[t], p.dual[t], p.gap[t],
                                      p.lambdas[t]) for t in range(1, 8)])


@pytest.mark.parametrize("method", ["pgd", "dual"])
def test_secant_warm_start_differs_from_the_third_lambda_on(method):
    """warm_start='secant' starts the first two lambdas as 'previous' does (the same
    results, bit for bit) and the later ones elsewhere (other iterates, the same
    optimum within the certified gaps); an unknown value is refused by name."""
    X, y = _data(5, n=24)
    prob = ts.TripletProblem(X, y, k=math.inf)
    kw = dict(triplets=prob, method=method, tol=1e-9, n_lambdas=6, termination=False,
              max_iter=50_000)
    a, b = (_quiet(ts.path, X, y, warm_start=w, **kw) for w in ("previous", "secant"))
    for t in range(2):
        np.testing.assert_array_equal(a.Ms[t], b.Ms[t])
        assert a.n_iter[t] == b.n_iter[t]
    assert any(not np.array_equal(a.Ms[t], b.Ms[t]) for t in range(2, 6))
    for t in range(6):
        assert b.dual[t] <= a.primal[t] + 1e-12 * abs(a.primal[t])
        assert a.dual[t] <= b.primal[t] + 1e-12 * abs(b.primal[t])
    with pytest.raises(ValueError, match="warm_start"):
        ts.path(X, y, triplets=prob, warm_start="linear")


@pytest.mark.parametrize("seed", [18, 19, 22])
@pytest.mark.parametrize(("loss", "diagonal"), [("smoothed_hinge", False),
                                               ("smoothed_hinge", True), ("hinge", False)])
def test_path_on_a_given_grid_agrees_with_cvxpy(loss, diagonal, seed):
    """An uneven grid (steps of log lam from 0.05 to 0.9, starting below lam_max, so
    from M = 0) with the secant start, whose step scales with the ratio of the last two
    steps of log lam: every lambda is certified and agrees with cvxpy; ``final`` is the
    last lambda's whole result."""
    X, y = _data(seed, n=24)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    lmax = prob.lambda_max()
    assert lmax > 0
    grid = lmax * np.exp(-np.cumsum([0.3, 0.05, 0.9, 0.2, 0.6]))
    p = _quiet(ts.path, X, y, triplets=prob, loss=loss, diagonal=diagonal, lambdas=grid,
               warm_start="secant", termination=False, tol=1e-9, max_iter=50_000)
    np.testing.assert_array_equal(p.lambdas, grid)
    assert p.converged.all() and p.params["grid"] == "given"
    _certified_as_cvxpy(X, y, prob, [(p.Ms[t], p.primal[t], p.dual[t], p.gap[t],
                                      p.lambdas[t]) for t in range(5)])
    assert p.final.lam == grid[-1] and p.final.primal == p.primal[-1]
    np.testing.assert_array_equal(p.final.M, p.Ms[-1])
    # the last lambda started at [M_3 + s (M_3 - M_2)]_+, s = 0.6 / 0.2 (its first
    # history row is the objective there)
    start = sph.proj_pm(p.Ms[3] + 3.0 * (p.Ms[3] - p.Ms[2]))[0]
    if loss != "hinge":  # the dual method's history starts from its dual start
        assert p.final.history.primal[0] == pytest.approx(prob.primal(start, grid[-1]),
                                                          rel=1e-12)


def test_path_on_the_geometric_grid_given_is_the_default_path():
    """The default grid written out (lam_max, 0.9 lam_max, ...) gives the default
    path bit for bit (the 'previous' start); bad grids are refused by name."""
    X, y = _data(3)
    prob = ts.TripletProblem(X, y, k=3)
    kw = dict(triplets=prob, tol=1e-9, termination=False, max_iter=50_000)
    a = _quiet(ts.path, X, y, n_lambdas=6, **kw)
    grid = [prob.lambda_max()]
    for _ in range(5):
        grid.append(grid[-1] * 0.9)
    b = _quiet(ts.path, X, y, lambdas=grid, **kw)
    np.testing.assert_array_equal(a.lambdas, b.lambdas)
    np.testing.assert_array_equal(a.Ms, b.Ms)
    np.testing.assert_array_equal(a.n_iter, b.n_iter)
    assert a.final.primal == b.final.primal == a.primal[-1]
    # geometric_grid: the same points, down to a given lam exactly
    g = ts.geometric_grid(grid[0], 0.99 * grid[-1])
    np.testing.assert_array_equal(g, [*grid, 0.99 * grid[-1]])
    np.testing.assert_array_equal(ts.geometric_grid(grid[0], grid[-1] * (1 + 1e-12)),
                                  [*grid[:-1], grid[-1] * (1 + 1e-12)])  # no near-twin
    np.testing.assert_array_equal(ts.geometric_grid(1.0, 2.0), [2.0])
    np.testing.assert_array_equal(ts.geometric_grid(0.0, 2.0), [2.0])
    for args, name in (((-1.0, 1.0), "lam_max"), ((1.0, 0.0), "lam"),
                       ((1.0, 0.5, 1.0), "ratio")):
        with pytest.raises(ValueError, match=name):
            ts.geometric_grid(*args)
    for bad in ([1.0, 1.0], [1.0, 2.0], [1.0, -0.5], [1.0, np.nan], [[1.0, 0.5]], []):
        with pytest.raises(ValueError, match="lambdas"):
            ts.path(X, y, triplets=prob, lambdas=bad)
    with pytest.raises(ValueError, match="lam_max"):
        ts.path(X, y, triplets=prob, lambdas=[1.0, 0.5], lam_max=2.0)


def test_cvxpy_agreement_at_about_5000_triplets():
    from explorer.datasets import load_real

    X, y = load_real("wine")
    prob = ts.TripletProblem(X, y, k=5)
    assert 4000 <= prob.n_triplets <= 5000
    lam = 0.01 * prob.lambda_max()
    r = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-9)
    c = ref.solve(X, y, lam, triplets=prob)
    assert abs(r.primal - c.value) / abs(c.value) <= 1e-6
    assert r.dual <= c.value * (1 + 1e-7)
    assert r.screening_rate > 0.5


# ----------------------------------------------------------------- safety

SAFETY = [(s, loss, diag, rule)
          for s in range(4)
          for loss in ("smoothed_hinge", "hinge")
          for diag in (False, True)
          for rule in ("sphere", "linear", "sdls")]


@pytest.mark.parametrize(("seed", "loss", "diagonal", "rule"), SAFETY)
def test_screening_is_safe(seed, loss, diagonal, rule):
    """No triplet is screened into the wrong set (48 problems x spheres, 3 lambdas each)."""
    X, y = _data(100 + seed, n=24)
    prob = ts.TripletProblem(X, y, k=4, loss=loss, diagonal=diagonal)
    rng = np.random.default_rng(seed)
    lam0 = ts.lambda_max(X, y, k=4) * 10 ** rng.uniform(-1.5, -0.5)
    prev = None
    for lam in (lam0, 0.5 * lam0, 0.2 * lam0):
        opt = _tight(X, y, lam, prob)
        m = prob.margins(opt.M)
        unc = opt.radius * prob.h_norms + 1e-9  # |<M*, H> - <M_opt, H>| bound
        c = 1.0 - prob.gamma
        for spheres in (("gb", "pgb", "dgb", "cdgb", "rrpb"), ("rrpb",)):
            r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, diagonal=diagonal,
                       screening=spheres, rule=rule, backoff=False, tol=1e-9,
                       max_iter=20_000, init=prev)
            assert np.all(m[r.screened_L] - unc[r.screened_L] < c), "wrong L-hat"
            assert np.all(m[r.screened_R] + unc[r.screened_R] > 1.0), "wrong R-hat"
            assert not np.intersect1d(r.screened_L, r.screened_R).size
            assert r.primal == pytest.approx(opt.primal, rel=1e-6)
            # the reported primal is the full objective although screened triplets left
            assert r.primal == pytest.approx(prob.primal(r.M, lam), rel=1e-12, abs=1e-12)
            hist = r.history
            assert np.all(hist.primal >= hist.dual - 1e-12 * np.abs(hist.primal))
        assert r.screened_L.size + r.screened_R.size > 0
        prev = r


@pytest.mark.parametrize("rule", ["sphere", "linear", "sdls"])
def test_active_set_and_screening_reach_the_same_optimum(rule):
    X, y = _data(7, n=36)
    prob = ts.TripletProblem(X, y, k=4)
    lam = 0.02 * prob.lambda_max()
    base = ts.solve(X, y, lam, triplets=prob, screening=None, tol=1e-10)
    for kw in (dict(active_set=True, screening=None), dict(active_set=True)):
        r = ts.solve(X, y, lam, triplets=prob, rule=rule, backoff=False, tol=1e-10, **kw)
        assert r.converged and r.primal == pytest.approx(base.primal, rel=1e-8)
        assert np.all(np.diff(r.history.iteration) % ts.SCREEN_EVERY == 0)
        assert r.primal >= r.dual
        assert r.params["refresh"] == "every10"


#: Make every early refresh pay (the cost model's refresh free), so that
#: ``refresh="converged"`` refreshes whenever the working set is solved.
CHEAP_REFRESH = Tuning(refresh_overhead=0.0, workset_weight=0.0)


@pytest.mark.parametrize(("seed", "diagonal", "screening"), [
    (0, False, None), (1, False, ("rrpb", "pgb")), (2, True, None), (3, False, ("gb",))])
def test_active_set_refresh_on_convergence_certifies_the_same_optimum(seed, diagonal,
                                                                      screening):
    """``refresh="converged"`` refreshes (and certifies) as soon as the working set's own
    gap meets tol: it reaches the optimum of the Weinberger schedule and of the plain
    solve (cvxpy-checked elsewhere) within the certified bounds, its gap is a true
    bound, it refreshes between the scheduled ones (history rows off the multiples of
    10) and needs fewer iterations; along a path too. With the cost model's default
    weights a refresh on these small problems never pays: the schedule is then
    Weinberger's, bit for bit."""
    X, y = _data(60 + seed, n=40)
    prob = ts.TripletProblem(X, y, k=5, diagonal=diagonal)
    lam = 0.01 * prob.lambda_max()
    kw = dict(triplets=prob, diagonal=diagonal, screening=screening, active_set=True,
              backoff=False, tol=1e-9)
    plain = ts.solve(X, y, lam, triplets=prob, diagonal=diagonal, screening=None, tol=1e-11)
    every = ts.solve(X, y, lam, **kw)
    same = ts.solve(X, y, lam, refresh="converged", **kw)
    _same_trace(every, same)                           # the refresh cannot pay here
    kw["_tuning"] = CHEAP_REFRESH
    conv = ts.solve(X, y, lam, refresh="converged", **kw)
    assert conv.params["refresh"] == "converged" and conv.converged
    assert np.any(conv.history.iteration % ts.SCREEN_EVERY != 0)   # refreshed early
    assert conv.n_iter < every.n_iter
    for r in (every, conv):
        assert plain.primal - 1e-10 * abs(plain.primal) <= r.primal
        assert r.dual <= plain.primal + 1e-10 * abs(plain.primal)
        assert r.gap <= 1e-9 * max(1.0, abs(r.primal))
        assert np.linalg.norm(r.M - plain.M) <= r.radius + plain.radius + 1e-9
    pe = ts.path(X, y, n_lambdas=8, ratio=0.7, **kw)
    pc = ts.path(X, y, n_lambdas=8, ratio=0.7, refresh="converged", **kw)
    assert pc.params["refresh"] == "converged" and np.all(pc.converged)
    assert np.sum(pc.n_iter) < np.sum(pe.n_iter)
    np.testing.assert_allclose(pc.primal, pe.primal, rtol=1e-8)


def test_refresh_is_validated():
    X, y = _data(7, n=20)
    with pytest.raises(ValueError, match="refresh"):
        ts.solve(X, y, 1.0, active_set=True, refresh="always")
    with pytest.raises(ValueError, match="refresh"):
        ts.path(X, y, n_lambdas=3, active_set=True, refresh=10)


@pytest.mark.parametrize("diagonal", [False, True])
def test_working_set_update_equals_a_full_rebuild(diagonal):
    # random sequences of remaining subsets (all triplets, a compacted subset, a subset
    # of a subset) and of working-set changes (none, a few, many): the incremental update
    # gives the arrays the full rebuild from all triplets gives, the same status, and the
    # previous working set itself exactly when nothing changed
    X, y = _data(11, n=40)
    data = ts.TripletProblem(X, y, k=4, diagonal=diagonal).data
    rng = np.random.default_rng(0)
    n_t = data.n_t
    status = np.zeros(n_t, dtype=np.int8)
    sub, prev, reused = data.everything, None, 0
    keep = np.ones(n_t, dtype=bool)
    for step in range(60):
        if step % 12 == 0 and step:  # a new remaining subset (as screening gives)
            keep_sub = rng.random(sub.idx.size) < 0.8
            sub = (data.compact(np.flatnonzero(rng.random(n_t) < 0.7)) if step % 24 == 0
                   else data.restrict(sub, sub.idx[keep_sub], sub.la[keep_sub],
                                      sub.lb[keep_sub], sub.hn[keep_sub]))
            prev, keep = None, rng.random(sub.idx.size) < 0.5
        elif step % 3 == 0:  # nothing changes
            pass
        else:  # a few (or many) triplets enter or leave
            flip = rng.random(sub.idx.size) < rng.choice([0.01, 0.05, 0.5])
            keep = keep ^ flip
        other = np.ones(n_t, dtype=bool)
        other[sub.idx] = False
        before = status[other].copy()
        work = data.work_of(sub, keep, status, prev)
        full = data.compact(sub.idx[keep])
        for f in ("idx", "pairs", "la", "lb", "hn"):
            np.testing.assert_array_equal(getattr(work, f), getattr(full, f), err_msg=f)
        np.testing.assert_array_equal(work.forms.pi, full.forms.pi)
        np.testing.assert_array_equal(work.forms.pj, full.forms.pj)
        assert work.forms.mode == full.forms.mode
        np.testing.assert_array_equal(status[sub.idx], np.where(keep, 0, 3))
        np.testing.assert_array_equal(status[other], before)
        reused += work is prev
        if prev is not None and np.array_equal(prev.idx, work.idx):
            assert work is prev
        prev = work
    assert reused >= 10


def test_active_set_path_same_with_incremental_and_rebuilt_working_sets():
    X, y = _data(5, n=48)
    prob = ts.TripletProblem(X, y, k=5)
    out = {}
    for mode in ("rebuild", "incremental"):
        out[mode] = [ts.path(X, y, triplets=prob, active_set=True, screening=scr, ratio=0.95,
                             n_lambdas=25, tol=1e-8, _workset=mode)
                     for scr in (None, ("rrpb", "pgb"))]
    for a, b in zip(out["rebuild"], out["incremental"], strict=True):
        assert (a.params["_workset"], b.params["_workset"]) == ("rebuild", "incremental")
        for f in ("lambdas", "primal", "dual", "n_iter"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        np.testing.assert_array_equal(a.triplet_visits, b.triplet_visits)
        assert a.total_iterations > 2 * len(a.lambdas)  # refreshes happened


# ----------------------------------------------------------------- spheres


def test_rrpb_with_equal_lambdas_is_dgb():
    X, y = _data(3)
    prob = ts.TripletProblem(X, y, k=3)
    lam = 0.05 * prob.lambda_max()
    M = _psd(np.random.default_rng(0), 4) * 1e-3
    s = prob.spheres(M, lam, kinds=("dgb",))["dgb"]
    rr = ts.rrpb_sphere(M, lam, lam, s.radius)
    np.testing.assert_allclose(rr.center, s.center)
    assert rr.radius == pytest.approx(s.radius)
    # and the sphere list's own RRPB (no reference) is DGB
    assert prob.spheres(M, lam, kinds=("rrpb",))["rrpb"].radius == pytest.approx(s.radius)


@pytest.mark.parametrize("diagonal", [False, True])
def test_rpb_inside_dgb_and_equal_to_pgb_at_an_exact_optimum(diagonal):
    X, y = _data(4)
    prob = ts.TripletProblem(X, y, k=3, diagonal=diagonal)
    lam0 = 1.01 * ts.lambda_max(X, y, k=3)
    M0 = prob.solution_above_lambda_max(lam0)  # exact optimum, alpha* = 1
    assert np.all(prob.kkt_alpha(M0) == 1.0)
    alpha0 = np.ones(prob.n_triplets)
    assert prob.dual(alpha0, lam0) == pytest.approx(prob.primal(M0, lam0), rel=1e-12)
    for lam1 in (0.9 * lam0, 0.5 * lam0):
        sp = prob.spheres(M0, lam1, kinds=("dgb", "rpb", "pgb"), ref=(M0, lam0, 0.0))
        dgb, rpb, pgb = sp["dgb"], sp["rpb"], sp["pgb"]
        assert dgb.radius == pytest.approx(2 * rpb.radius, rel=1e-8)  # Theorem 3.9
        dist = np.linalg.norm(dgb.center - rpb.center)
        assert dist == pytest.approx(rpb.radius, rel=1e-8)
        assert dist + rpb.radius <= dgb.radius * (1 + 1e-10)  # RPB inside DGB
        np.testing.assert_allclose(pgb.center, rpb.center, rtol=1e-8, atol=1e-12)  # Thm 3.8
        assert pgb.radius == pytest.approx(rpb.radius, rel=1e-6)
        rrpb0 = ts.rrpb_sphere(M0, lam0, lam1, 0.0)
        assert rrpb0.radius == pytest.approx(rpb.radius)


@pytest.mark.parametrize("diagonal", [False, True])
def test_every_sphere_contains_the_optimum_and_pgb_shrinks_to_it(diagonal):
    X, y = _data(5, n=30)
    prob = ts.TripletProblem(X, y, k=4, diagonal=diagonal)
    lam = 0.01 * prob.lambda_max()
    opt = _tight(X, y, lam, prob)
    rng = np.random.default_rng(2)
    refs = [opt.M * rng.uniform(0.5, 1.5) for _ in range(3)]
    if not diagonal:
        refs.append(_psd(rng, 4, 2) * np.linalg.norm(opt.M) / 4)
    for M in refs:
        sp = prob.spheres(M, lam, kinds=("gb", "pgb", "dgb", "cdgb", "rrpb"))
        for kind, s in sp.items():
            slack = opt.radius + 1e-9 * np.linalg.norm(opt.M)
            assert np.linalg.norm(opt.M - s.center) <= s.radius + slack, kind
        # GB + its linear cut is tighter than PGB (Appendix E)
        if not diagonal and sp["gb"].halfspace is not None:
            lo_l, hi_l = prob.bounds(sp["gb"], "linear")
            lo_p, hi_p = prob.bounds(sp["pgb"], "sphere")
            assert np.all(lo_l >= lo_p - 1e-8) and np.all(hi_l <= hi_p + 1e-8)
        assert sp["cdgb"].radius <= sp["dgb"].radius * 10
    far = prob.spheres(refs[0], lam, kinds=("gb", "pgb"))
    near = prob.spheres(opt.M, lam, kinds=("gb", "pgb"))
    assert near["pgb"].radius <= 1e-3 * far["pgb"].radius
    assert near["pgb"].radius <= 1e-4 * np.linalg.norm(opt.M)


# ----------------------------------------------------------------- rules vs brute force


def _ball_extremes(H, Q, r, extra=()):
    d = Q.shape[0]
    Xv = cp.Variable((d, d), symmetric=True)
    cons = [cp.sum_squares(Xv - Q) <= r * r, *extra(Xv)] if extra else [
        cp.sum_squares(Xv - Q) <= r * r]
    lo = cp.Problem(cp.Minimize(cp.sum(cp.multiply(H, Xv))), cons)
    lo.solve(solver="CLARABEL")
    hi = cp.Problem(cp.Maximize(cp.sum(cp.multiply(H, Xv))), cons)
    hi.solve(solver="CLARABEL")
    return lo.value, hi.value


def test_sphere_and_linear_rules_match_cvxpy():
    rng = np.random.default_rng(3)
    d = 3
    for _ in range(6):
        Q = rng.normal(size=(d, d))
        Q = (Q + Q.T) / 2
        w, V = np.linalg.eigh(Q)
        P = (V * np.maximum(-w, 0)) @ V.T  # -Q_-: the cut through the PSD cone
        r = (np.linalg.norm(np.minimum(w, 0)) + 0.3) * rng.uniform(1.2, 3.0)
        a, b = rng.normal(size=d), rng.normal(size=d)
        H = np.outer(a, a) - np.outer(b, b)
        hq, hn = np.array([np.vdot(H, Q)]), np.array([np.linalg.norm(H)])
        lo, hi = ts.sphere_bounds(hq, hn, r)
        clo, chi = _ball_extremes(H, Q, r)
        assert lo[0] == pytest.approx(clo, abs=1e-6) and hi[0] == pytest.approx(chi, abs=1e-6)
        lo, hi = ts.linear_bounds(hq, hn, np.array([np.vdot(P, H)]), r, np.vdot(P, P),
                                  np.vdot(P, Q))
        clo, chi = _ball_extremes(H, Q, r, lambda Xv, P=P: [cp.sum(cp.multiply(P, Xv)) >= 0])
        assert lo[0] == pytest.approx(clo, abs=1e-5) and hi[0] == pytest.approx(chi, abs=1e-5)


def test_orthant_rule_matches_cvxpy():
    X, y = _data(6, n=14, d=4)
    prob = ts.TripletProblem(X, y, k=2, diagonal=True)
    rng = np.random.default_rng(4)
    qn = rng.normal(size=4)
    for q, r in ((rng.random(4), 0.7), (qn, np.linalg.norm(np.minimum(qn, 0)) + 0.5),
                 (rng.random(4) * 0.1, 2.0)):
        s = ts.Sphere("dgb", q, r)
        lo, hi = prob.bounds(s, "sdls")
        slo, shi = prob.bounds(s, "sphere")
        assert np.all(lo >= slo - 1e-9) and np.all(hi <= shi + 1e-9)
        hs = _explicit(X, prob.triplets, True)
        for t in rng.choice(prob.n_triplets, 6, replace=False):
            x = cp.Variable(4)
            cons = [cp.sum_squares(x - q) <= r * r, x >= 0]
            vlo = cp.Problem(cp.Minimize(hs[t] @ x), cons).solve(solver="CLARABEL")
            vhi = cp.Problem(cp.Maximize(hs[t] @ x), cons).solve(solver="CLARABEL")
            assert lo[t] == pytest.approx(vlo, abs=1e-6)
            assert hi[t] == pytest.approx(vhi, abs=1e-6)


def test_sdls_dual_is_a_lower_bound_and_the_rule_is_sound():
    X, y = _data(8, n=16, d=3)
    prob = ts.TripletProblem(X, y, k=3)
    rng = np.random.default_rng(5)
    Q = _psd(rng, 3, 2) * 0.05
    r = 0.05
    s = ts.Sphere("dgb", Q, r)
    L_s, R_s = prob.screen(s, "sphere")
    L_p, R_p = prob.screen(s, "sdls")
    assert np.all(L_p >= L_s) and np.all(R_p >= R_s)  # SDLS only adds
    Hs = _explicit(X, prob.triplets)
    gain = np.flatnonzero((L_p & ~L_s) | (R_p & ~R_s))
    for t in list(gain[:4]) + list(rng.choice(prob.n_triplets, 3)):
        H = Hs[t]
        Xv = cp.Variable((3, 3), PSD=True)
        cons = [cp.sum_squares(Xv - Q) <= r * r]
        lo = cp.Problem(cp.Minimize(cp.sum(cp.multiply(H, Xv))), cons).solve(solver="CLARABEL")
        hi = cp.Problem(cp.Maximize(cp.sum(cp.multiply(H, Xv))), cons).solve(solver="CLARABEL")
        if R_p[t]:
            assert lo > 1 - 1e-6
        if L_p[t]:
            assert hi < 1 - prob.gamma + 1e-6
        # weak duality of the SDLS dual: D(y) <= min ||X - Q||^2 s.t. <X, H> = 1, X PSD
        Xs = cp.Variable((3, 3), PSD=True)
        pr = cp.Problem(cp.Minimize(cp.sum_squares(Xs - Q)), [cp.sum(cp.multiply(H, Xs)) == 1])
        pv = pr.solve(solver="CLARABEL")
        for yv in np.linspace(-5, 5, 11):
            assert ts.sdls_dual_value(Q, H, 1.0, yv) <= pv + 1e-6


# ----------------------------------------------------------------- range-based extension


def test_range_extension_matches_the_rrpb_rule_and_theorem_4_1():
    X, y = _data(9)
    prob = ts.TripletProblem(X, y, k=3)
    lam0 = 0.05 * prob.lambda_max()
    r0 = ts.solve(X, y, lam0, triplets=prob, screening=None, tol=1e-10)
    eps = r0.radius
    rng = prob.ranges(r0.M, lam0, eps)
    h0, hn, mn = prob.margins(r0.M), prob.h_norms, np.linalg.norm(r0.M)
    # Theorem 4.1's closed forms for R
    ok = h0 - 2 + hn * mn > 0
    lam_a = lam0 * (mn * hn - h0 + 2 * eps * hn) / (h0 - 2 + hn * mn)
    lam_b = lam0 * (mn * hn + h0) / (hn * mn - h0 + 2 + 2 * eps * hn)
    sR, eR = rng["R_below"]
    np.testing.assert_allclose(np.maximum(sR[ok], 0), np.maximum(lam_a[ok], 0), rtol=1e-10)
    sRa, eRa = rng["R_above"]
    np.testing.assert_allclose(eRa[ok & (lam_b > lam0)], lam_b[ok & (lam_b > lam0)], rtol=1e-10)
    for lam in lam0 * np.array([0.3, 0.6, 0.9, 1.0, 1.2, 2.0]):
        s = ts.rrpb_sphere(r0.M, lam0, lam, eps)
        lo, hi = prob.bounds(s, "sphere")
        R = lo > 1
        L = hi < 1 - prob.gamma
        key = "below" if lam <= lam0 else "above"
        st, en = rng["R_" + key]
        inR = (st < lam) & (lam <= en) if key == "below" else (st <= lam) & (lam < en)
        stl, enl = rng["L_" + key]
        inL = (stl < lam) & (lam <= enl) if key == "below" else (stl <= lam) & (lam < enl)
        close = np.abs(lo - 1) < 1e-9 * (1 + np.abs(lo))
        assert np.all((inR == R) | close)
        assert np.all((inL == L) | (np.abs(hi - 1 + prob.gamma) < 1e-9 * (1 + np.abs(hi))))
    mat = prob.range_rate_matrix([r0.M], [lam0], [eps], grid=lam0 * np.array([0.5, 1.0, 1.5]))
    assert mat.shape == (3, 1) and np.all((mat >= 0) & (mat <= 1)) and mat[1, 0] > 0


# ----------------------------------------------------------------- lambda_max and the path


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


def test_path_with_screening_matches_naive_path():
    X, y = _data(12, n=36)
    prob = ts.TripletProblem(X, y, k=4)
    kw = dict(triplets=prob, n_lambdas=25, tol=1e-9, backoff=False)
    naive = ts.path(X, y, screening=None, **kw)
    assert naive.terminated_by in ("rule", "n_lambdas")
    assert naive.lam_max == pytest.approx(prob.lambda_max())
    np.testing.assert_allclose(naive.lambdas[1:] / naive.lambdas[:-1], 0.9)
    for extra in (dict(), dict(range_screening=True, screening=("rrpb",)),
                  dict(active_set=True), dict(screening=("rrpb", "pgb"), rule="linear")):
        p = ts.path(X, y, compare=("rpb:sphere", "gb:linear", "pgb:sdls", "cdgb"), **kw,
                    **extra) if not extra else ts.path(X, y, **kw, **extra)
        n = min(len(p.lambdas), len(naive.lambdas))
        np.testing.assert_allclose(p.primal[:n], naive.primal[:n], rtol=1e-7)
        assert np.all((p.rate_final >= 0) & (p.rate_final <= 1))
        assert np.all(p.rate_final >= p.rate_path - 1e-12)
        assert p.converged.all()
    p = ts.path(X, y, compare=("rpb:sphere", "gb:linear", "pgb:sdls", "cdgb"), **kw)
    for key, v in p.compare_rates.items():
        assert np.all((v[1:] >= 0) & (v[1:] <= 1)), key
    assert p.rate_path[0] > 0.99  # at lambda_max every triplet is in L* (ties at the border)
    # the termination rule: relative loss decrease per relative lambda decrease < 0.01
    if p.terminated_by == "rule":
        l0, l1 = p.loss[-2], p.loss[-1]
        lam0, lam1 = p.lambdas[-2], p.lambdas[-1]
        assert (l0 - l1) / l0 * lam0 / (lam0 - lam1) < 0.01


@pytest.mark.parametrize(("screening", "diagonal", "loss"), [
    (("rrpb",), False, "smoothed_hinge"), (("rrpb", "pgb"), False, "smoothed_hinge"),
    (("rrpb",), True, "smoothed_hinge"), (("rrpb",), False, "hinge")])
def test_anchor_block_path_matches_naive_path(screening, diagonal, loss):
    """All triplets (rows of ~20: the anchor-block path pass, every pair out of use
    dropped, each lambda starting from the previous one's last evaluation): the
    screened path reaches the naive path's optimum at every lambda, full and diagonal
    metrics, both losses."""
    X, y = _data(14, n=30)
    prob = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal, loss=loss)
    assert prob.data.blocks is not None
    kw = dict(triplets=prob, n_lambdas=20, tol=1e-9, backoff=False, diagonal=diagonal,
              loss=loss)
    naive = ts.path(X, y, screening=None, **kw)
    p = ts.path(X, y, screening=screening, **kw)
    n = min(len(p.lambdas), len(naive.lambdas))
    assert n >= 10
    np.testing.assert_allclose(p.primal[:n], naive.primal[:n], rtol=1e-7)
    assert p.converged[:n].all()
    assert np.mean(p.rate_path[1:n]) > 0.5  # the block pass did screen


def test_path_terminates_by_the_paper_rule():
    X, y = _data(13, n=24, sep=3.0)
    p = ts.path(X, y, k=3, ratio=0.5, n_lambdas=200)
    assert p.terminated_by == "rule" and len(p.lambdas) < 200


# ----------------------------------------------------------------- solver protocol


def test_warm_start_equals_cold_start_and_rrpb_uses_it():
    X, y = _data(14, n=36)
    prob = ts.TripletProblem(X, y, k=4)
    lam = 0.01 * prob.lambda_max()
    cold = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-10)
    prev = ts.solve(X, y, 1.2 * lam, triplets=prob, backoff=False, tol=1e-10)
    warm = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-10, init=prev)
    assert warm.primal == pytest.approx(cold.primal, rel=1e-9)
    assert np.linalg.norm(warm.M - cold.M) <= warm.radius + cold.radius + 1e-12
    log = warm.screening_log
    first = (log["iteration"] == 0) & (log["sphere"] == "rrpb")
    assert (log["new_L"][first] + log["new_R"][first]).sum() > 0.5 * prob.n_triplets
    assert warm.n_iter <= cold.n_iter
    same = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-10, init=warm)
    assert same.n_iter <= 1


def test_callback_can_stop_and_sees_the_status():
    X, y = _data(15)
    seen = []

    def cb(state):
        seen.append((state.iterate["status"].copy(), state.extras["n_L"]))
        return state.iteration < 3

    r = ts.solve(X, y, 1.0, k=3, backoff=False, tol=1e-14, callback=cb)
    assert not r.converged and r.n_iter == 3 and len(seen) == 4
    status, nL = seen[-1]
    assert np.sum(status == 1) == nL


def test_max_iter_warns_and_history_is_consistent():
    X, y = _data(16)
    with pytest.warns(ConvergenceWarning):
        r = ts.solve(X, y, 0.5, k=3, tol=1e-15, max_iter=4, screening=None)
    assert not r.converged and r.n_iter == 4
    h = r.history
    assert len(h) == 5 and h.iteration[0] == 0
    assert np.all(h.gap >= 0) and r.gap == h.gap[-1]
    assert r.radius == pytest.approx(math.sqrt(2 * r.gap / 0.5))
    assert set(h.extras) >= {"n_L", "n_R", "n_work", "exact", "step"}
    d = r.to_dict(include_arrays=True)
    assert d["model"] == "triplet_screening" and "screening_log" in d["arrays"]


def test_diagonal_metric_and_transform():
    X, y = _data(17)
    r = ts.solve(X, y, 1.0, k=3, diagonal=True, rule="sdls", backoff=False, tol=1e-10)
    assert r.M.shape == (4,) and np.all(r.M >= 0)
    Z = r.transform(X)
    i, j = 0, 1
    assert np.sum((Z[i] - Z[j]) ** 2) == pytest.approx(np.sum(r.M * (X[i] - X[j]) ** 2))
    full = ts.solve(X, y, 1.0, k=3, backoff=False, tol=1e-10)
    Zf = full.transform(X)
    dv = X[i] - X[j]
    assert np.sum((Zf[i] - Zf[j]) ** 2) == pytest.approx(dv @ full.M @ dv)
    assert r.status().shape == (r.n_triplets,)


# ----------------------------------------------------------------- bad input


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


# ----------------------------------------------------------------- explorer data


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


# ----------------------------------------------------------------- structure (issue 12)


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


def test_hinge_active_set_returns_the_best_certified_iterate():
    # Issue 12 reproducer: 14 points, 2-D, 4 classes, k=2, lam = 0.026 lam_max. The
    # working-set refresh used to jump to M = 0 every 20 iterations and solve returned
    # that last iterate (relative gap 3.15).
    from explorer.models.triplet_screening import data

    p = data.synthetic(seed=0, n=14, d=2, classes=4, informative=1, k=2)
    X, y, T = p.data["X"], p.data["y"], p.data["triplets"]
    prob = ts.TripletProblem(X, y, triplets=T, loss="hinge")
    lam = 0.026 * prob.lambda_max()
    exact = ts.solve(X, y, lam, triplets=prob, loss="hinge", tol=1e-10, max_iter=20_000)
    for screening in (None, "rrpb+pgb"):
        r = _quiet(ts.solve, X, y, lam, triplets=prob, loss="hinge", active_set=True,
                   screening=screening, backoff=False, tol=1e-9, max_iter=600)
        h = r.history
        assert np.linalg.norm(r.M) > 0.01
        assert r.primal == pytest.approx(prob.primal(r.M, lam), rel=1e-12)
        assert r.primal == pytest.approx(np.min(h.primal), rel=1e-12)  # the best one seen
        assert np.all(np.diff(h.primal) <= 0) and np.all(np.diff(h.dual) >= 0)
        assert r.primal - exact.primal <= r.gap + 1e-9 * abs(exact.primal)  # a true bound
        assert r.rel_gap < 1e-2


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


def test_screening_backs_off_when_it_cannot_pay_and_says_so():
    # a tiny problem: a screening round costs more than all the loss passes it could save
    X, y = _data(41, n=24)
    prob = ts.TripletProblem(X, y, k=2)
    lam = 0.05 * prob.lambda_max()
    naive = ts.solve(X, y, lam, triplets=prob, screening=None, tol=1e-9)
    auto = ts.solve(X, y, lam, triplets=prob, tol=1e-9)
    forced = ts.solve(X, y, lam, triplets=prob, tol=1e-9, backoff=False)
    assert any("screening skipped" in n for n in auto.notes)
    assert auto.screening_rate == 0 and forced.screening_rate > 0 and not forced.notes
    for r in (auto, forced):
        assert r.primal == pytest.approx(naive.primal, rel=1e-8)
    assert set(forced.profile) == {"loss_pass", "pair_forms", "eig", "screening",
                                   "loss_pass_visits"}
    # the loss passes' share of the visits: all of them without screening, less with it
    assert naive.profile["loss_pass_visits"] == naive.triplet_visits > 0
    assert 0 < forced.profile["loss_pass_visits"] < forced.triplet_visits
    hinge = ts.solve(X, y, lam, triplets=ts.TripletProblem(X, y, k=2, loss="hinge"),
                     loss="hinge", screening=None, tol=1e-6)
    assert hinge.profile["loss_pass_visits"] == hinge.triplet_visits > 0
    p = ts.path(X, y, triplets=prob, n_lambdas=8, tol=1e-8)
    assert p.profile["triplets_visited"] == p.triplet_visits.sum()
    pn = ts.path(X, y, triplets=prob, n_lambdas=8, tol=1e-8, screening=None)
    assert pn.profile["loss_pass_visits"] == pn.profile["triplets_visited"]
    pf = ts.path(X, y, triplets=prob, n_lambdas=8, tol=1e-8, backoff=False)
    assert 0 < pf.profile["loss_pass_visits"] < pf.profile["triplets_visited"]


# ----------------------------------------------------------------- path pass and fused rounds


@pytest.mark.parametrize("k", [5, math.inf])
def test_path_screening_runs_where_it_is_predicted_to_pay(k):
    """The back-off of path screening: the pass runs when the visits it saves (loss
    passes and pair forms over the last solve's evaluations) reach its cost (the fitted
    model: anchor blocks or the pair-id pass), both for the share it would screen; the
    share is taken as 1 first, then measured on a fixed sample of the triplets with
    the reference's sphere (close to the pass's own share); each skip is noted with
    its numbers. Along a path: a tight tolerance (many evaluations per lambda)
    screens, a loose one sits out."""
    from solvers.triplet_screening import pathscreen as pth
    from solvers.triplet_screening.rules import _rule_masks

    X, y = _data(31, n=40)
    prob = ts.TripletProblem(X, y, k=k)
    d = prob.data
    n_t = d.n_t
    tn = Tuning()
    ps = pth.PathScreen(d, prob.gamma, 40)
    if k == math.inf:
        assert d.blocks is not None
        assert ps.pass_cost(0.25) == pytest.approx(
            tn.block_triplet_weight * n_t + tn.block_row_weight * d.blocks.PB.size
            + tn.keep_weight * 0.75 * n_t + tn.path_overhead)
    else:
        assert d.blocks is None
        assert ps.pass_cost(0.25) == pytest.approx(tn.pair_pass_weight * n_t
                                                   + tn.path_overhead)
    ps.account(3)
    # the saving is what a loss pass costs now (in anchor blocks: cheaper per triplet)
    # less what it costs over the remaining half by pair ids, plus the pair forms
    now = (tn.block_pass_triplet * n_t + tn.block_pass_row * d.blocks.PB.size
           if k == math.inf else n_t)
    assert d.everything.pass_visits(tn) == pytest.approx(now)
    assert ps.gain(0.5) == pytest.approx(
        3 * (now - 0.5 * n_t + 2 * tn.pair_weight * d.d * 0.25 * d.n_pairs))
    lam = 0.5 * prob.lambda_max()
    prev = ts.solve(X, y, lam, triplets=prob, screening=None, tol=1e-10)
    at = (0.6 * lam, prev.M, lam, math.sqrt(2 * max(prev.gap, 0.0) / lam))
    true = pth.PathScreen(d, prob.gamma, 40)
    true.advance(*at)
    share = 1.0 - true.active.size / n_t
    assert 0.2 < share < 0.9
    for sample in (n_t, 48):  # no sample (a small problem), then a sample of 48
        tn = Tuning(sample=sample, probe_min=n_t if sample == n_t else 0)
        ps = pth.PathScreen(d, prob.gamma, 40, tuning=tn)
        seen = set()
        for evals in range(1, 200):
            ps.account(evals)
            note = ps.skip(*at)
            best = ps.gain(1.0) >= tn.path_pay_margin * ps.pass_cost(1.0)
            if not best:
                assert note and f"at most {ps.gain(1.0):,.0f}" in note
                assert f"{tn.path_pay_margin * ps.pass_cost(1.0):,.0f}" in note
                seen.add("best")
                continue
            if sample == n_t:
                assert note is None
                seen.add("run")
                break
            sp = ts.rrpb_sphere(*at[1:3], at[0], at[3])
            L, R = _rule_masks(d, ps._probe, sp, "sphere", prob.gamma, None)
            est = float(L.sum() + R.sum()) / sample
            assert abs(est - share) < 0.25
            assert (note is None) == (ps.gain(est) >= tn.path_pay_margin * ps.pass_cost(est))
            if note:
                assert f"{est:.0%} of a sample of {sample}" in note
                seen.add("sampled")
            else:
                seen.add("run")
                break
        assert seen == ({"best", "run"} if sample == n_t else {"best", "sampled", "run"})
    # along a path (the notes count the lambdas without the pass); with all triplets in
    # anchor blocks a loss pass is cheap, so the pass pays only on a larger problem
    tn = Tuning(path_pay_margin=1.0)  # lambdas of 3-5 iterations here
    Xp, yp = _data(31, n=80) if k == math.inf else (X, y)
    probp = ts.TripletProblem(Xp, yp, k=k)
    tight = ts.path(Xp, yp, triplets=probp, tol=1e-10, n_lambdas=12, screening=("rrpb",),
                    _tuning=tn)
    loose = ts.path(Xp, yp, triplets=probp, tol=1e-2, n_lambdas=12, screening=("rrpb",),
                    _tuning=tn)
    assert tight.params["_tuning"] == {"path_pay_margin": 1.0}
    for p in (tight, loose):
        passes = int(np.sum(p.rate_path[1:] > 0))
        skips = sum("path screening skipped" in n for n in p.notes)
        assert passes + skips == len(p.lambdas) - 1
    if k == math.inf:  # the pair-id pass (k = 5) costs more than so few triplets save
        assert np.sum(tight.rate_path[1:] > 0) > np.sum(loose.rate_path[1:] > 0)
    assert sum("path screening skipped" in n for n in loose.notes) > 0
    # the range-based scan runs its first two times whatever the prediction
    rng = ts.path(X, y, triplets=prob, tol=1e-2, n_lambdas=4, termination=False,
                  screening=("rrpb",), range_screening=True, _tuning=tn)
    assert np.all(rng.rate_range[1:3] > 0)


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("k", [5, math.inf])
def test_path_pass_is_the_rrpb_rule_on_every_triplet_with_its_state(diagonal, k):
    """The fused per-lambda pass (rule, status, L-hat pair counts, compaction) against the
    RRPB sphere rule evaluated directly on all triplets, over several lambdas; the
    range-based scan screens a superset. k = inf: rows of ~27 triplets, the anchor-block
    pass; k = 5: rows of 5, the pair-id pass."""
    from solvers.triplet_screening.pathscreen import PathScreen

    X, y = _data(31, n=40)
    prob = ts.TripletProblem(X, y, k=k, diagonal=diagonal)
    d = prob.data
    assert (d.blocks is not None) == (k == math.inf)
    per, rng_ = (PathScreen(d, prob.gamma, 10, incremental=inc) for inc in (False, True))
    lam = 0.5 * prob.lambda_max()
    prev = ts.solve(X, y, lam, triplets=prob, diagonal=diagonal, screening=None, tol=1e-10)
    for _ in range(6):
        lam1 = 0.8 * lam
        eps = math.sqrt(2 * prev.gap / lam)
        per.advance(lam1, prev.M, lam, eps)
        rng_.advance(lam1, prev.M, lam, eps)
        lo, hi = prob.bounds(ts.rrpb_sphere(prev.M, lam, lam1, eps), "sphere")
        c = 1 - prob.gamma
        L, R = hi < c, lo > 1
        close = ((np.abs(hi - c) < 1e-9 * (1 + np.abs(hi)))
                 | (np.abs(lo - 1) < 1e-9 * (1 + np.abs(lo))))
        assert np.all(((per.status == 1) == L) | close)
        assert np.all(((per.status == 2) == R) | close)
        assert per.nL == np.sum(per.status == 1) and per.nR == np.sum(per.status == 2)
        cnt = (np.bincount(d.pa[per.status == 1], minlength=d.n_pairs)
               - np.bincount(d.pb[per.status == 1], minlength=d.n_pairs))
        np.testing.assert_array_equal(per.cnt, cnt)
        sub = per.sub
        np.testing.assert_array_equal(sub.idx, np.flatnonzero(per.status == 0))
        np.testing.assert_array_equal(sub.pairs[sub.la], d.pa[sub.idx])
        np.testing.assert_array_equal(sub.pairs[sub.lb], d.pb[sub.idx])
        np.testing.assert_allclose(sub.hn, d.hn[sub.idx], rtol=2e-6)
        assert np.all(sub.hn >= d.hn[sub.idx])  # float32 rounded up: more cautious
        assert len(per.spheres(lam1)) == 1
        # range-based: everything the per-lambda rule screens, on the same side
        assert np.all(rng_.status[per.status == 1] == 1)
        assert np.all(rng_.status[per.status == 2] == 2)
        prev = ts.solve(X, y, lam1, triplets=prob, diagonal=diagonal, screening=None,
                        tol=1e-10, init=prev)
        lam = lam1


@pytest.mark.parametrize(("k", "diagonal"), [(5, False), (math.inf, False), (math.inf, True)])
def test_path_retest_equals_the_full_pass_on_random_paths(k, diagonal):
    """Re-testing only the candidates the sphere's movement can reach (the bound of
    :meth:`.PathScreen._within`) gives at every step of random paths of RRPB spheres
    (centres drifting by random PSD steps of varied size, radii up and down) the full
    pass's statuses, L-hat pair counts and remaining triplets exactly, and those are
    the sphere rule evaluated directly on every triplet (brute force); both kinds of
    step occur."""
    from solvers.triplet_screening import pathscreen

    tn = Tuning(retest_min=0, cand_share=0.3)
    X, y = _data(7, n=40)
    prob = ts.TripletProblem(X, y, k=k, diagonal=diagonal)
    d = prob.data
    rng = np.random.default_rng(3)
    lam0 = 0.3 * prob.lambda_max()
    M = prob.solution_above_lambda_max(prob.lambda_max()) * 3.0
    n_ret = n_full = 0
    for _path in range(3):
        inc = pathscreen.PathScreen(d, prob.gamma, 40, retest=True, tuning=tn)
        full = pathscreen.PathScreen(d, prob.gamma, 40, retest=False, tuning=tn)
        assert inc._retest and not full._retest
        lam = lam0
        for _ in range(30):
            step = _psd(rng, X.shape[1], 1)
            step = np.diag(step).copy() if diagonal else step
            M = M + 10.0 ** rng.uniform(-3.5, -0.5) * np.linalg.norm(M) * (
                step / X.shape[1] - 0.3 * M / np.linalg.norm(M))
            lam1 = lam * rng.uniform(0.95, 0.999)
            eps = float(10.0 ** rng.uniform(-6, -1.5))
            for ps in (inc, full):
                ps.advance(lam1, M, lam, eps)
            for f in ("status", "cnt"):
                np.testing.assert_array_equal(getattr(inc, f), getattr(full, f))
            assert (inc.nL, inc.nR) == (full.nL, full.nR)
            for f in ("idx", "la", "lb", "hn", "pairs"):
                np.testing.assert_array_equal(getattr(inc.sub, f), getattr(full.sub, f))
            lo, hi = prob.bounds(ts.rrpb_sphere(M, lam, lam1, eps), "sphere")
            c = 1 - prob.gamma
            close = ((np.abs(hi - c) < 1e-9 * (1 + np.abs(hi)))
                     | (np.abs(lo - 1) < 1e-9 * (1 + np.abs(lo))))
            assert np.all(((inc.status == 1) == (hi < c)) | close)
            assert np.all(((inc.status == 2) == (lo > 1)) | close)
            lam = lam1
        n_ret += inc.n_retest
        n_full += inc.n_full
    assert n_ret >= 10 and n_full >= 4   # a full pass also after re-tests (3 paths)


@pytest.mark.parametrize("diagonal", [False, True])
def test_folded_L_follows_changing_counts(diagonal):
    """The folded ``H_L`` (:meth:`PathScreen.folded_L`) after random changes of the L-hat
    pair counts (a few pairs, many pairs, none, all back to zero) is the sum of
    ``cnt_p F_p F_p^T`` over all pairs to rounding, the fold of all counts bit for bit
    every ``FOLD_EVERY``-th time, and a fresh array each time."""
    from solvers.triplet_screening import pathscreen
    from solvers.triplet_screening.pathscreen import FOLD_EVERY, PathScreen

    X, y = _data(12, n=40)
    data = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal).data
    ps = PathScreen(data, 0.05, 10)
    rng = np.random.default_rng(3)
    seen = {"few": 0, "many": 0}
    for _ in range(40):
        kind = rng.choice(["few", "many", "none", "zero"], p=[0.6, 0.2, 0.15, 0.05])
        if kind == "few":
            pick = rng.choice(data.n_pairs, size=rng.integers(1, 8), replace=False)
            ps.cnt[pick] = np.maximum(ps.cnt[pick] + rng.integers(-3, 4, pick.size), 0)
        elif kind == "many":
            ps.cnt[:] = rng.integers(0, 5, data.n_pairs)
        elif kind == "zero":
            ps.cnt[:] = 0.0
        ps.nL = int(ps.cnt.sum() > 0)
        exact = data.assemble(ps.cnt) if ps.nL else data.zeros()
        H = ps.folded_L()
        scale = max(float(np.abs(exact).max()), 1.0)
        np.testing.assert_allclose(H, exact, rtol=0, atol=1e-12 * scale)
        if ps.nL and ps._folds % FOLD_EVERY == 0:
            np.testing.assert_array_equal(H, exact)
        if kind in seen:
            seen[kind] += 1
        H[...] = np.nan                      # the caller's copy: the state is untouched
    assert min(seen.values()) > 0 and pathscreen.FOLD_EVERY > 1


def test_active_set_path_same_with_and_without_retest():
    """The active-set path with RRPB is the same, bit for bit, whether path screening
    re-tests only the candidates or runs the full pass at every lambda."""
    tn = Tuning(retest_min=0)
    X, y = _data(5, n=40)
    prob = ts.TripletProblem(X, y, k=math.inf)
    out = []
    for flag in (True, False):
        out.append(ts.path(X, y, triplets=prob, active_set=True, screening=("rrpb",),
                           ratio=0.97, n_lambdas=40, tol=1e-7, backoff=False,
                           _retest=flag, _tuning=tn))
        assert out[-1].params["_retest"] is flag
    for f in ("lambdas", "primal", "dual", "n_iter", "rate_path"):
        np.testing.assert_array_equal(getattr(out[0], f), getattr(out[1], f))


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
            r1 = _block_loss_pass(q, bx, gamma, hinge, w1, np.empty(0), None)
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
            n1 = _path_rule(q, dx.pa, dx.pb, hn32, r, 0.95, 1e-11, st1, c1, *o1, theta, *k1)
            n2 = _path_rule_blocks(q, *bx.layout, hn32, r, 0.95, 1e-11, st2, c2, *o2, used,
                                   theta, *k2)
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
    alpha^2, per-pair weights, margins and rule codes (to rounding: its sums run in
    another order) on the default triplets of all pairs and on uneven custom blocks;
    a full evaluation through the problem's blocks equals one by pair ids, and so do
    the per-pair weights of a weighted sum of the H_t (by blocks and by pair ids)."""
    from solvers.triplet_screening.kernels import _block_loss_pass, _loss_pass
    from solvers.triplet_screening.pairs import NO_BLOCKS, _anchor_blocks, _Data
    from solvers.triplet_screening.spheres import RULE_SLACK

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
            r = float(rng.uniform(0.0, 1.0) / np.median(dx.hn))
            out = []
            for blocked in (False, True):
                w, mout = np.empty(dx.n_pairs), np.empty(n)
                code = np.full(n, -1, dtype=np.int8)
                rule = (dx.hn, r, 1.0 - gamma, RULE_SLACK, code)
                if blocked:
                    res = _block_loss_pass(q, bx, gamma, hinge, w, mout, rule)
                else:
                    res = _loss_pass(q, dx.pa, dx.pb, gamma, hinge, w, mout, rule)
                out.append((res, w, mout, code))
            (r1, w1, m1, c1), (r2, w2, m2, c2) = out
            np.testing.assert_allclose(r2[:3], r1[:3], rtol=1e-12)
            assert r2[3:] == r1[3:] and 0 < r2[3] + r2[4] < n
            np.testing.assert_allclose(w2, w1, rtol=1e-12, atol=1e-12 * np.abs(w1).max())
            np.testing.assert_array_equal(m2, m1)
            np.testing.assert_array_equal(c2, c1)
            assert 0 < np.count_nonzero(r1[1]) and np.ptp(m1) > 0
    prob = ts.TripletProblem(X, y, k=math.inf, loss=loss)
    d = prob.data
    assert d.everything.blocks.nd.size == 36
    M = _psd(rng, X.shape[1])
    HL = _psd(rng, X.shape[1])
    for keep in (False, True):
        res = [d.forms.evaluate(M, d.pa, d.pb, blk, prob.gamma, prob.hinge,
                                np.empty(d.n_t if keep else 0), None, HL, 1.5)
               for blk in (NO_BLOCKS, d.everything.blocks)]
        for a, b in zip(res[0][:9], res[1][:9], strict=True):
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


def test_dynamic_backoff_skips_doubling_lambdas_and_covers_the_start_rounds(monkeypatch):
    """A lambda whose dynamic rounds did not pay skips them on the next 3 lambdas, 6
    after a second such lambda in a row, 3 again once rounds paid; along a path the
    other spheres' round at each lambda's start is under that back-off: it runs only
    while dynamic screening is on and is counted as a round (so a sphere that screens
    little is not tried at every lambda)."""
    from solvers.triplet_screening.state import _Run

    SKIP_LAMBDAS = Tuning().skip_lambdas
    X, y = _data(3, n=30)
    prob = ts.TripletProblem(X, y, k=3)
    lam = 0.1 * prob.lambda_max()
    dyn: dict = {}

    def lam_run(paid: bool | None) -> bool:
        run = _Run(prob, lam, active_set=False, dynamic=dyn)
        on = run.dynamic_on
        if paid is not None:
            run._dyn_cost, run._dyn_gain = 10.0, (20.0 if paid else 1.0)
        run.finish_dynamic(5)
        return on

    assert lam_run(False)                               # did not pay: skip 3
    assert [lam_run(None) for _ in range(SKIP_LAMBDAS)] == [False] * SKIP_LAMBDAS
    assert lam_run(False)                               # again: skip 6
    assert [lam_run(None) for _ in range(2 * SKIP_LAMBDAS)] == [False] * (2 * SKIP_LAMBDAS)
    assert lam_run(True) and lam_run(False)             # paid, then not: skip 3 again
    assert [lam_run(None) for _ in range(SKIP_LAMBDAS + 1)] == [False] * SKIP_LAMBDAS + [True]
    # along a path (rounds made cheap enough to be tried on so small a problem)
    tn = Tuning(round_overhead=0)
    starts, counted = [], []
    spheres_at, dynamic_round = _Run.spheres_at, _Run.dynamic_round

    def spy_spheres(self, kinds, M, ev, gap, D, ref, first, *a):
        if first:
            starts.append(self.dynamic_on)
        return spheres_at(self, kinds, M, ev, gap, D, ref, first, *a)

    def spy_round(self, n_before, n_spheres, saved, iteration):
        if iteration == 0:
            counted.append(saved)
        return dynamic_round(self, n_before, n_spheres, saved, iteration)

    monkeypatch.setattr(_Run, "spheres_at", spy_spheres)
    monkeypatch.setattr(_Run, "dynamic_round", spy_round)
    p = ts.path(X, y, triplets=prob, tol=1e-8, n_lambdas=30, screening=("rrpb", "gb"),
                _tuning=tn)
    assert starts and all(starts) and len(counted) == len(starts)
    assert len(starts) < len(p.lambdas) - 1
    assert sum("dynamic screening skipped" in n for n in p.notes) > 0


@pytest.mark.parametrize("screening", [None, ("rrpb", "pgb")])
def test_solve_from_init_starts_from_its_kept_evaluation(screening):
    """``solve(init=res)`` starts at ``res.M`` with the data term's parts ``res`` kept
    there: one loss pass fewer than the same start without them (also at the same
    lambda with a tighter tol, and after pickling), the same iterates to rounding, the
    first recorded primal the full objective at ``res.M``; with another loss (gamma)
    the parts are not used."""
    import pickle

    X, y = _data(1, n=40)
    prob = ts.TripletProblem(X, y, k=5)
    n_t, lm = prob.n_triplets, prob.lambda_max()
    r1 = ts.solve(X, y, 0.1 * lm, triplets=prob, screening=screening, tol=1e-6)
    assert r1._carry is not None
    bare = pickle.loads(pickle.dumps(r1))
    assert bare._carry is not None
    object.__setattr__(bare, "_carry", None)
    for lam, tol in ((0.08 * lm, 1e-9), (0.1 * lm, 1e-10)):
        kw = dict(triplets=prob, screening=screening, tol=tol)
        r2 = ts.solve(X, y, lam, init=pickle.loads(pickle.dumps(r1)), **kw)
        r3 = ts.solve(X, y, lam, init=bare, **kw)
        saved = r3.triplet_visits - r2.triplet_visits  # all, or what RRPB left first
        assert saved == n_t if screening is None else 0 < saved <= n_t
        assert r2.n_iter == r3.n_iter and r2.converged and r3.converged
        assert r2.primal == pytest.approx(r3.primal, rel=1e-12)
        np.testing.assert_allclose(r2.M, r3.M, atol=1e-10 * np.abs(r3.M).max())
        assert r2.history.primal[0] == pytest.approx(prob.primal(r1.M, lam), rel=1e-12)
    other = ts.TripletProblem(X, y, k=5, gamma=0.1)
    kw = dict(triplets=other, screening=screening, tol=1e-9, gamma=0.1)
    r4 = ts.solve(X, y, 0.08 * lm, init=r1, **kw)
    r5 = ts.solve(X, y, 0.08 * lm, init=bare, **kw)
    assert r4.triplet_visits == r5.triplet_visits and r4.primal == r5.primal


def _same_eval(e1, e2, P_full=None):
    """Two evaluations at one point agree to rounding (and with the full objective)."""
    assert e1.P == pytest.approx(e2.P, rel=1e-12)
    assert e1.asum == pytest.approx(e2.asum, rel=1e-12, abs=1e-12)
    assert e1.a2 == pytest.approx(e2.a2, rel=1e-12, abs=1e-12)
    scale = max(np.abs(e2.A).max(), 1e-300)
    np.testing.assert_allclose(e1.A, e2.A, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(e1.G, e2.G, rtol=0, atol=1e-12 * scale)
    if P_full is not None:
        assert e1.P == pytest.approx(P_full, rel=1e-12)


@pytest.mark.parametrize(("seed", "diagonal", "loss"), [
    (0, False, "smoothed_hinge"), (1, False, "smoothed_hinge"), (2, True, "smoothed_hinge"),
    (3, False, "hinge")])
def test_carried_evaluation_is_the_next_lambdas_first(seed, diagonal, loss):
    """A path's next lambda starts from the previous solve's last evaluation at its
    solution (``res._carry``) instead of a pass: what a solve hands over (compiled loop or
    Python loop, with and without screening) is the full data term at its solution,
    and after path screening at the next lambda it is that reduced problem's
    evaluation there (to rounding) and the full objective. Refused at another point,
    off the spheres and with an active set."""
    from solvers.triplet_screening.loops import _run_solve
    from solvers.triplet_screening.pathscreen import PathScreen
    from solvers.triplet_screening.state import _Opts, _Ref, _Run

    X, y = _data(300 + seed, n=40)
    prob = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal, loss=loss)
    p = ts.path(X, y, triplets=prob, n_lambdas=4, tol=1e-10, screening=None,
                diagonal=diagonal, loss=loss)
    lam0, lam1 = p.lambdas[2], p.lambdas[3]
    for enabled in (False, True):
        for screening in ((), ("pgb", "dgb")):
            opts = _Opts(screening=screening, rule="sphere", active_set=False,
                         method="pgd", tol=1e-10, max_iter=5000, callback=None,
                         want_alpha=False, backoff=False, compiled=enabled)
            res, _ = _run_solve(prob, lam0, p.Ms[1].copy(), opts, None, None)
            Mc, A, loss_v, asum, a2 = res._carry
            assert np.array_equal(Mc, res.M)
            full = _Run(prob, lam0, active_set=False).evaluate(res.M, prob.data.everything)
            assert loss_v == pytest.approx(full.P - 0.5 * lam0 * np.vdot(res.M, res.M),
                                           rel=1e-12)
            assert (asum, a2) == (pytest.approx(full.asum, rel=1e-12, abs=1e-12),
                                  pytest.approx(full.a2, rel=1e-12, abs=1e-12))
            np.testing.assert_allclose(A, full.A, rtol=0,
                                       atol=1e-12 * np.abs(full.A).max())
    M0, carry = res.M, res._carry
    ref = _Ref(M=M0, lam=lam0, eps=math.sqrt(2.0 * max(res.gap, 0.0) / lam0))
    run = _Run(prob, lam1, active_set=False)
    run.path_screen(PathScreen(prob.data, prob.gamma, 4), ref)
    assert run.nL > 0 and run.nR > 0 and run.unscr.idx.size > 0
    _same_eval(run.carried_eval(M0, carry), run.evaluate(M0, run.unscr),
               prob.primal(M0, lam1))
    assert run.carried_eval(1.001 * M0, carry) is None      # taken at another point
    far = carry._replace(M=3.0 * M0)
    assert run.carried_eval(3.0 * M0, far) is None          # outside the RRPB sphere
    assert not run.exact(3.0 * M0) and run.exact(M0)
    aset = _Run(prob, lam1, active_set=True)
    assert aset.carried_eval(M0, carry) is None


@pytest.mark.parametrize("kind", ["dgb", "gb", "pgb"])
@pytest.mark.parametrize(("diagonal", "loss"), [(False, "smoothed_hinge"),
                                                (True, "smoothed_hinge"),
                                                (False, "hinge")])
def test_a_round_at_an_exact_iterate_keeps_its_evaluation(kind, diagonal, loss):
    """After a screening round at ``M`` (which lies in the new sphere: its centre for
    DGB, its boundary for GB) the reduced objective's evaluation at ``M`` is the one
    before the round (to rounding): the solver keeps it instead of a new pass."""
    from solvers.triplet_screening.state import _Run
    from solvers.triplet_screening.triplets import _pad

    X, y = _data(41, n=40)
    prob = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal, loss=loss)
    lam = prob.lambda_max() * 0.2
    M = ts.solve(X, y, lam, triplets=prob, tol=1e-5, screening=None, diagonal=diagonal,
                 loss=loss).M
    run = _Run(prob, lam, active_set=False)
    ev = run.evaluate(M, run.unscr)
    gap = _pad(ev.P - run.dual_value(ev), ev.P)
    sp = sph.make_sphere(kind, lam, M, grad=ev.G, gap=gap)
    assert run.screen([sp], "sphere", None, 1) > 0
    assert run.still_exact(M, True) and not run.still_exact(M, False)
    _same_eval(ev, run.evaluate(M, run.unscr), prob.primal(M, lam))


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


@pytest.mark.parametrize("seed", range(4))
def test_fused_dynamic_rounds_are_safe_and_keep_the_evaluation(seed):
    """DGB re-centred at the next evaluation point and applied inside its loss pass: the
    rounds happen, never screen a triplet into the wrong set, and the evaluation they
    return is that of the new reduced problem; 'every10' reaches the same optimum."""
    from solvers.triplet_screening.state import _Run

    X, y = _data(200 + seed, n=30)
    prob = ts.TripletProblem(X, y, k=4)
    lam = ts.lambda_max(X, y, k=4) * 10 ** np.random.default_rng(seed).uniform(-1.5, -0.7)
    opt = _tight(X, y, lam, prob)
    m, unc, c = prob.margins(opt.M), opt.radius * prob.h_norms + 1e-9, 1 - prob.gamma
    res = {}
    for dyn in ("adaptive", "every10"):
        r = _quiet(ts.solve, X, y, lam, triplets=prob, screening=("rrpb",), dynamic=dyn,
                   backoff=False, tol=1e-10, max_iter=20_000)
        assert np.all(m[r.screened_L] - unc[r.screened_L] < c), "wrong L-hat"
        assert np.all(m[r.screened_R] + unc[r.screened_R] > 1.0), "wrong R-hat"
        assert r.primal == pytest.approx(opt.primal, rel=1e-8)
        assert r.params["dynamic"] == dyn
        res[dyn] = r
    fused = [s for s in res["adaptive"].screening_log["sphere"] if s == "dgb (fused)"]
    assert fused, "no fused round ran"
    assert "dgb (fused)" not in list(res["every10"].screening_log["sphere"])
    # one fused round by hand: the evaluation at its centre is the new problem's
    run = _Run(prob, lam, active_set=False, backoff=False)
    M = opt.M + 1e-3 * np.linalg.norm(opt.M) * np.eye(X.shape[1])
    ev0 = run.evaluate(M, run.unscr)
    gap = max(ev0.P - run.dual_value(ev0), 0.0)
    run.arm_fused(M, gap, 1)
    ev = run.evaluate(M, run.unscr)
    assert run.fused_rounds == 1 and run.nL + run.nR > 0
    again = run.evaluate(M, run.unscr)
    assert again.P == pytest.approx(ev.P, rel=1e-12)
    np.testing.assert_allclose(again.G, ev.G, atol=1e-10 * np.abs(ev.G).max())
    assert again.P == pytest.approx(ev0.P, rel=1e-12)


@pytest.mark.parametrize(("loss", "dynamic"), [("smoothed_hinge", "adaptive"),
                                                ("smoothed_hinge", "every10"),
                                                ("hinge", "adaptive")])
def test_alpha_is_the_dual_point_of_the_certificate(loss, dynamic):
    """``D(result.alpha) == result.dual`` and ``P(result.M) == result.primal``: the
    reported pair is a primal-dual certificate one can recompute from scratch, also when
    the best dual value came from another iterate than the returned metric."""
    for seed in range(3):
        X, y = _data(300 + seed, n=40)
        prob = ts.TripletProblem(X, y, k=5, loss=loss)
        lam = 0.01 * prob.lambda_max()
        r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, dynamic=dynamic,
                   backoff=False, tol=1e-9, max_iter=20_000)
        assert np.all((r.alpha >= 0) & (r.alpha <= 1))
        assert prob.dual(r.alpha, lam) == pytest.approx(r.dual, rel=1e-10)
        assert prob.primal(r.M, lam) == pytest.approx(r.primal, rel=1e-12)
        assert r.dual <= r.primal
    if loss == "smoothed_hinge":
        # a problem where the best dual value and the best primal come from different
        # iterates (the KKT map at the returned M is a worse dual point there)
        from explorer.models.triplet_screening.data import synthetic

        P = synthetic(seed=0, n=60, d=5, classes=3, informative=2, k=5)
        X, y = P.data["X"], P.data["y"]
        prob = ts.TripletProblem(X, y, triplets=P.data["triplets"])
        lam = 0.01 * prob.lambda_max()
        r = ts.solve(X, y, lam, triplets=prob, dynamic=dynamic, backoff=False, tol=1e-9)
        assert prob.dual(r.alpha, lam) == pytest.approx(r.dual, rel=1e-12)


# ----------------------------------------------------------------- the compiled loop


def _trace(res):
    h = res.history
    return (h.iteration, h.primal, h.dual, h.gap, dict(h.extras), res.M, res.stop_reason,
            res.n_iter, res.triplet_visits, tuple(res.screening_log["new_L"]),
            tuple(res.screening_log["new_R"]))


def _same_trace(a, b):
    for u, v in zip(_trace(a), _trace(b), strict=True):
        if isinstance(u, dict):
            assert u.keys() == v.keys()
            for key in u:
                np.testing.assert_array_equal(u[key], v[key], err_msg=key)
        elif isinstance(u, np.ndarray):
            np.testing.assert_array_equal(u, v)
        else:
            assert u == v


@pytest.mark.parametrize(("screening", "dynamic", "diagonal"), [
    (None, "adaptive", False), (("rrpb",), "adaptive", False),
    (("rrpb", "pgb"), "adaptive", False), (("rrpb", "gb"), "every10", False),
    (None, "adaptive", True), (("rrpb", "pgb"), "adaptive", True)])
def test_compiled_loop_is_the_python_loop_bit_for_bit(screening, dynamic, diagonal):
    """Iterations run by the compiled loop (burst.py) are the Python loop's, bit for
    bit: iterates, certificates, history rows (all but their times), stop reasons and
    work counters, on a path (path screening and fused rounds with RRPB), in chunks of
    a few iterations, and to max_iter (with its warning); the history's times increase.
    With other spheres the loop hands back every iteration after which a dynamic round
    may be due (adaptive or every 10). Full and diagonal metrics."""
    X, y = _data(5, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, diagonal=diagonal) * 0.05
    out = {}
    for enabled, chunk in ((False, 2048), (True, 2048), (True, 3)):
        how = dict(_compiled=enabled, _chunk=chunk)
        p = ts.path(X, y, triplets=prob, tol=1e-9, n_lambdas=12, screening=screening,
                    backoff=False, dynamic=dynamic, diagonal=diagonal, **how)
        with pytest.warns(ConvergenceWarning):
            short = ts.solve(X, y, lam, triplets=prob, tol=1e-14,
                             max_iter=5 if diagonal else 23, screening=screening,
                             dynamic=dynamic, diagonal=diagonal, **how)
        full = ts.solve(X, y, lam, triplets=prob, tol=1e-10, max_iter=20_000,
                        screening=screening, backoff=False, dynamic=dynamic, diagonal=diagonal,
                        **how)
        assert (full.params["_compiled"], full.params["_chunk"]) == (enabled, chunk)
        out[(enabled, chunk)] = (p, short, full)
        assert np.all(np.diff(full.history.time) >= 0)
    ref = out[(False, 2048)]
    for key in ((True, 2048), (True, 3)):
        p, short, full = out[key]
        for u, v in zip(ref[0].Ms, p.Ms, strict=True):
            np.testing.assert_array_equal(u, v)
        for name in ("gap", "primal", "dual", "n_iter", "triplet_visits"):
            np.testing.assert_array_equal(getattr(ref[0], name), getattr(p, name))
        _same_trace(ref[1], short)
        _same_trace(ref[2], full)
        assert short.stop_reason == "max_iter" and full.stop_reason == "converged"
    spheres = list(ref[2].screening_log["sphere"])
    if screening and dynamic == "adaptive" and not diagonal:
        assert "dgb (fused)" in spheres  # fused rounds did happen
    for kind in (screening or ())[1:]:
        assert kind in spheres  # and the other dynamic rounds


@pytest.mark.parametrize(("screening", "diagonal", "refresh"), [
    (None, False, "every10"), (("rrpb",), False, "every10"),
    (("rrpb", "pgb"), False, "every10"), (("rrpb", "gb"), True, "every10"),
    (None, False, "converged"), (("rrpb", "pgb"), False, "converged"),
    (None, True, "converged")])
def test_active_set_steps_compiled_are_the_python_steps(monkeypatch, screening, diagonal,
                                                        refresh):
    """With an active set the iterations between two refreshes run in one compiled call
    (:func:`.burst.run_working_steps`); the path, a solve stopped by ``max_iter`` between
    refreshes (its warning and the refresh at ``max_iter``) and a converged solve are
    those of the Python steps bit for bit: iterates, certificates, history, stop reasons
    and work counters, and the profile's parts stay filled. The compiled call does run
    (counted), and not with a callback, whose iterations stay in Python. With
    ``refresh="converged"`` (every early refresh paying) the compiled call's own
    convergence test ends it where the Python loop's does."""
    from solvers.triplet_screening import burst
    from solvers.triplet_screening.state import SCREEN_EVERY

    X, y = _data(6, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, diagonal=diagonal) * 0.03
    calls = []
    real = burst.run_working_steps

    def counted(run, eng, n, tol, n_test):
        calls.append(n)
        return real(run, eng, n, tol, n_test)

    monkeypatch.setattr("solvers.triplet_screening.loops.run_working_steps", counted)
    every = SCREEN_EVERY
    kw = dict(triplets=prob, active_set=True, screening=screening, diagonal=diagonal,
              backoff=False, refresh=refresh)
    if refresh == "converged":
        kw["_tuning"] = CHEAP_REFRESH
    out = {}
    for enabled in (False, True):
        kw["_compiled"] = enabled
        p = ts.path(X, y, tol=1e-9, n_lambdas=10, ratio=0.8, **kw)
        with pytest.warns(ConvergenceWarning):
            short = ts.solve(X, y, lam, tol=1e-14, max_iter=23, **kw)
        full = ts.solve(X, y, lam, tol=1e-9, max_iter=20_000, **kw)
        out[enabled] = (p, short, full)
        assert (len(calls) > 0) == enabled
        if enabled:
            assert max(calls) == every and full.profile["pair_forms"] > 0
            assert full.profile["eig"] > 0 and full.profile["loss_pass"] > 0
        calls.clear()
    (p0, s0, f0), (p1, s1, f1) = out[False], out[True]
    for u, v in zip(p0.Ms, p1.Ms, strict=True):
        np.testing.assert_array_equal(u, v)
    for name in ("lambdas", "gap", "primal", "dual", "n_iter", "triplet_visits"):
        np.testing.assert_array_equal(getattr(p0, name), getattr(p1, name))
    _same_trace(s0, s1)
    _same_trace(f0, f1)
    assert s1.stop_reason == "max_iter" and s1.n_iter == 23
    assert f1.stop_reason == "converged" and f1.history.iteration.size >= 3  # 2 refreshes
    early = np.any(f1.history.iteration % every != 0) or np.any(p1.n_iter % every != 0)
    assert early == (refresh == "converged")
    ts.solve(X, y, lam, tol=1e-6, callback=lambda state: None, **kw)
    assert not calls


@pytest.mark.parametrize("loss", ["smoothed_hinge", "hinge"])
def test_compiled_loop_hands_an_inexact_iterate_back(monkeypatch, loss):
    """An iterate outside a screening sphere needs the screened triplets for its full
    objective: the compiled loop (the projected gradient's, or the dual method's with
    the hinge) returns it after the step and the Python loop certifies it (here every
    iterate, with a far-away sphere added to every solve): the same trace and dual point
    as without the compiled loop."""
    from solvers.triplet_screening.spheres import Sphere
    from solvers.triplet_screening.state import _Run

    X, y = _data(6, n=30, d=3)
    prob = ts.TripletProblem(X, y, k=3, loss=loss)
    lam = ts.lambda_max(X, y, k=3, loss=loss) * 0.1
    init = _Run.__init__

    def far(self, *a, **kw):
        init(self, *a, **kw)
        self.regions.append(Sphere("far", 50.0 * np.eye(3), 1e-3))

    monkeypatch.setattr(_Run, "__init__", far)
    res = {}
    for enabled in (False, True):
        res[enabled] = ts.solve(X, y, lam, triplets=prob, loss=loss, tol=1e-10,
                                max_iter=5000, _compiled=enabled)
        assert not np.any(res[enabled].history.exact[1:])
    _same_trace(res[False], res[True])
    np.testing.assert_array_equal(res[False].alpha, res[True].alpha)


@pytest.mark.parametrize(("screening", "dynamic", "diagonal"), [
    (None, "adaptive", False), (("rrpb",), "adaptive", False),
    (("rrpb", "pgb"), "adaptive", False), (("rrpb", "gb"), "every10", False),
    (("pgb", "dgb"), "adaptive", False), (None, "adaptive", True),
    (("rrpb", "pgb"), "adaptive", True)])
def test_compiled_dual_loop_is_the_python_loop_bit_for_bit(screening, dynamic, diagonal):
    """The dual method's iterations run by the compiled loop (burst._dual_burst: the APG
    step with its line search and restarts, the certificate, the history row) are the
    Python loop's, bit for bit: iterates, certificates, dual points, history rows (all
    but their times), stop reasons and work counters, on a path (path screening, each
    lambda from the previous dual iterate), in chunks of a few iterations, to max_iter
    (with its warning), and with dynamic rounds handed back to Python (adaptive or every
    10; with and without the back-off, whose first skip Python notes). Full and diagonal
    metrics."""
    X, y = _data(5, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, loss="hinge", diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, loss="hinge", diagonal=diagonal) * 0.05
    out = {}
    for enabled, chunk in ((False, 2048), (True, 2048), (True, 3)):
        kw = dict(loss="hinge", diagonal=diagonal, _compiled=enabled, _chunk=chunk)
        p = ts.path(X, y, triplets=prob, tol=1e-9, n_lambdas=12, screening=screening,
                    backoff=False, dynamic=dynamic, **kw)
        with pytest.warns(ConvergenceWarning):
            short = ts.solve(X, y, lam, triplets=prob, tol=1e-14,
                             max_iter=5 if diagonal else 23, screening=screening,
                             dynamic=dynamic, **kw)
        full = ts.solve(X, y, lam, triplets=prob, tol=1e-10, max_iter=20_000,
                        screening=screening, backoff=False, dynamic=dynamic, **kw)
        auto = ts.solve(X, y, lam, triplets=prob, tol=1e-10, max_iter=20_000,
                        screening=screening, dynamic=dynamic, **kw)
        out[(enabled, chunk)] = (p, short, full, auto)
        assert full.method == "dual" and np.all(np.diff(full.history.time) >= 0)
    ref = out[(False, 2048)]
    for key in ((True, 2048), (True, 3)):
        p, short, full, auto = out[key]
        for u, v in zip(ref[0].Ms, p.Ms, strict=True):
            np.testing.assert_array_equal(u, v)
        for name in ("gap", "primal", "dual", "n_iter", "triplet_visits"):
            np.testing.assert_array_equal(getattr(ref[0], name), getattr(p, name))
        assert ref[0].profile["loss_pass_visits"] == p.profile["loss_pass_visits"]
        for a, b in zip(ref[1:], (short, full, auto), strict=True):
            _same_trace(a, b)
            np.testing.assert_array_equal(a.alpha, b.alpha)
            assert a.notes == b.notes
        assert short.stop_reason == "max_iter" and full.stop_reason == "converged"
    if screening and screening[-1] != "rrpb":
        assert screening[-1] in list(ref[2].screening_log["sphere"])  # rounds did happen


def test_compiled_loop_cache_is_keyed_on_every_solver_source():
    """The compiled loop inlines code and constants from seven modules; numba keys its
    disk cache on the package's source hash too (solvers._jitcache, tested end to end
    in test_jitcache.py), so an edit to any of them compiles it anew."""
    from solvers import _jitcache
    from solvers.triplet_screening import burst

    for kernel in (burst._pgd_burst, burst._dual_burst, burst._working_steps):
        loc = kernel._cache._impl._locator
        assert getattr(type(loc), "_dualscope", False)
        # the stamp: the sources' hash tagged with the uid scheme (solvers._jitcache)
        assert loc.get_source_stamp()[1] == \
            f"{_jitcache.sources_hash()}-{_jitcache.UID_SCHEME}"


@pytest.mark.parametrize("screening", [None, ("rrpb", "pgb")])
def test_dual_method_starts_from_the_previous_dual_point(monkeypatch, screening):
    """The dual method (the hinge's default) starts ``solve(init=res)`` from ``res.alpha``
    and each lambda of a path from the previous lambda's last dual iterate, not from the
    KKT map of the previous ``M`` (0/1 for the hinge): the first certified dual value is
    ``D(res.alpha)``, and the warm solve agrees with a cold one within the certified
    radii. On the path every lambda after the first gets the iterate the previous one
    left (a feasible point: in the box, L-hat at 1)."""
    from solvers.triplet_screening import loops
    from solvers.triplet_screening.pairs import kkt_alpha

    X, y = _data(7, n=40)
    prob = ts.TripletProblem(X, y, k=5, loss="hinge")
    lm = prob.lambda_max()
    kw = dict(triplets=prob, loss="hinge", screening=screening, tol=1e-8)
    r1 = ts.solve(X, y, 0.05 * lm, **kw)
    lam = 0.04 * lm
    warm = ts.solve(X, y, lam, init=r1, **kw)
    cold = ts.solve(X, y, lam, **kw)
    assert warm.method == cold.method == "dual" and warm.converged and cold.converged
    assert warm.primal == pytest.approx(cold.primal, rel=1e-6)
    assert np.linalg.norm(warm.M - cold.M) <= warm.radius + cold.radius + 1e-12
    if screening is None:
        d_warm = prob.dual(r1.alpha, lam)
        d_kkt = prob.dual(kkt_alpha(prob.data.margins(r1.M), 0.0, True), lam)
        assert abs(d_warm - d_kkt) > 1e-6 * abs(d_warm)  # the two starts differ here
        assert warm.history.dual[0] == pytest.approx(d_warm, rel=1e-12)

    calls = []
    dual_loop = loops._dual_loop

    def spy(run, M0, opts, ref, ps, mon, extras, alpha0=None):
        out = dual_loop(run, M0, opts, ref, ps, mon, extras, alpha0)
        calls.append((alpha0, extras["alpha"], run.status.copy()))
        return out

    monkeypatch.setattr("solvers.triplet_screening.loops._dual_loop", spy)
    p = ts.path(X, y, n_lambdas=15, termination=False, **kw)
    assert len(calls) == len(p.lambdas) == 15 and calls[0][0] is None
    for (_, left, status), (start, _, _) in itertools.pairwise(calls):
        assert start is left
        assert np.all((left >= 0) & (left <= 1)) and np.all(left[status == 1] == 1)
    assert p.converged.all()


def test_fused_rounds_are_not_under_the_other_spheres_back_off(monkeypatch):
    """The fused DGB rounds (RRPB's dynamic screening inside the loss pass) have their own
    pay test; when the other spheres' rounds (PGB) back off or are skipped for a lambda,
    fused rounds still run there (they were switched off with them before), and the
    path keeps its certified objectives."""
    from solvers.triplet_screening.state import _Run

    X, y = _data(3, n=60)
    prob = ts.TripletProblem(X, y, k=6)
    tn = Tuning(round_overhead=0)  # rounds cheap enough to be tried here
    # the other spheres' rounds never pay (as PGB's on wine with all triplets): they
    # back off within a lambda and are skipped on the next ones
    dynamic_round = _Run.dynamic_round
    monkeypatch.setattr(_Run, "dynamic_round", lambda self, n_before, n_spheres, saved,
                        iteration: dynamic_round(self, n_before, n_spheres, 0.0, iteration))
    applied = []
    evaluate = _Run.evaluate

    def spy(self, M, sub, *a, **kw):
        n = self.fused_rounds
        out = evaluate(self, M, sub, *a, **kw)
        if self.fused_rounds != n:
            applied.append(self.dynamic_on)
        return out

    monkeypatch.setattr(_Run, "evaluate", spy)
    out = {}
    for enabled in (True, False):  # the compiled loop and the Python loop alike
        applied.clear()
        p = ts.path(X, y, triplets=prob, tol=1e-9, n_lambdas=25, screening=("rrpb", "pgb"),
                    _compiled=enabled, _tuning=tn)
        assert p.converged.all()
        assert any(("backed off" in n) or ("dynamic screening skipped" in n) for n in p.notes)
        assert True in applied and False in applied  # fused rounds with PGB's rounds off
        out[enabled] = (p.primal, list(applied))
    np.testing.assert_array_equal(out[True][0], out[False][0])
    assert out[True][1] == out[False][1]
    naive = ts.path(X, y, triplets=prob, tol=1e-9, n_lambdas=25, screening=None)
    n = min(len(naive.primal), len(p.primal))
    np.testing.assert_allclose(p.primal[:n], naive.primal[:n], rtol=1e-8)


def test_compiled_triplet_kernels_hold_the_gil():
    """The sorted pass's orders are shared by every solve of a problem (the dashboard's
    sessions share cached problems): that is safe only while no compiled kernel that
    can run a pass releases the GIL."""
    from numba.core.registry import CPUDispatcher

    from solvers.triplet_screening import burst, kernels, loops, pathscreen

    seen = 0
    for mod in (kernels, burst, loops, pathscreen):
        for f in vars(mod).values():
            if isinstance(f, CPUDispatcher):
                seen += 1
                assert not f.targetoptions.get("nogil"), f.py_func.__name__
    assert seen > 20
