"""Safe triplet screening: safety of every rule and sphere against brute force, the spheres
(section 3.2), the rules (section 3.1) and the range-based extension (section 4)."""


import cvxpy as cp
import numpy as np
import pytest
from tripletkit import (
    SAFETY,
    _ball_extremes,
    _data,
    _explicit,
    _psd,
    _quiet,
    _tight,
)

from solvers import triplet_screening as ts


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
