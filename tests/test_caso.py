"""Convex ASO: M-step against bisection, hinge prox, cvxpy agreement, certificate, bad input."""

import warnings

import cvxpy as cp
import numpy as np
import pytest

from solvers import ConvergenceWarning, caso
from solvers.reference import caso as ref

# ----------------------------------------------------------------- M-step (Eq. 71)


def _bisect_gamma(sigma, eta, h):
    """gamma_i = clip(sigma_i s - eta, 0, 1) with sum = h, by bisection on s = 1/sqrt(t)."""
    pos = sigma > 0
    q = int(pos.sum())
    if q <= h:  # rank-deficient: non-zero directions at 1, the rest share h - q
        g = np.where(pos, 1.0, (h - q) / max(sigma.size - q, 1))
        return g
    lo, hi = 0.0, 2.0 * float(np.max((eta + 1.0) / sigma[pos]))
    for _ in range(400):
        mid = 0.5 * (lo + hi)
        if np.clip(sigma * mid - eta, 0, 1).sum() < h:
            lo = mid
        else:
            hi = mid
    return np.clip(sigma * hi - eta, 0, 1)


def _m_objective(sigma, eta, gamma):
    return float(np.sum(sigma**2 / (eta + gamma)))


def _random_sigma(rng, kind):
    d = int(rng.integers(1, 40))
    if kind == "d1":
        d = 1
    sigma = np.abs(rng.normal(size=d)) * rng.choice([1e-3, 1.0, 50.0])
    if kind == "ties":
        sigma = np.round(sigma * 2) / 2 + 0.5
        sigma[: d // 2] = sigma[0]
    elif kind == "rank_deficient":
        sigma[rng.random(d) < 0.6] = 0.0
    elif kind == "equal":
        sigma[:] = 1.7
    return sigma


def _random_h(rng, d, kind):
    if kind == "h=d":
        return float(d)
    if kind == "integer":
        return float(rng.integers(1, d + 1))
    return float(rng.uniform(0.05, d))


SIGMA_KINDS = ["generic", "ties", "rank_deficient", "equal", "d1"]
H_KINDS = ["fractional", "integer", "h=d"]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("skind", SIGMA_KINDS)
@pytest.mark.parametrize("hkind", H_KINDS)
@pytest.mark.parametrize("method", caso.M_STEPS)
def test_m_step_matches_bisection(seed, skind, hkind, method):
    rng = np.random.default_rng(seed)
    sigma = _random_sigma(rng, skind)
    d = sigma.size
    h = _random_h(rng, d, hkind)
    eta = float(10 ** rng.uniform(-2, 1.5))
    g = caso.m_step_gamma(sigma, eta, h, method=method)
    gb = _bisect_gamma(sigma, eta, h)
    assert np.all(g >= 0) and np.all(g <= 1)
    assert g.sum() == pytest.approx(h, rel=1e-12, abs=1e-12 * d)
    np.testing.assert_allclose(g, gb, atol=1e-9)
    f, fb = _m_objective(sigma, eta, g), _m_objective(sigma, eta, gb)
    assert f <= fb * (1 + 1e-12) + 1e-300
    if hkind == "h=d":
        np.testing.assert_array_equal(g, 1.0)


@pytest.mark.parametrize("seed", range(8))
def test_m_step_kkt_and_both_searches_agree_on_large_inputs(seed):
    rng = np.random.default_rng(seed)
    d = 3000
    sigma = np.abs(rng.standard_cauchy(size=d))
    sigma[rng.random(d) < 0.1] = 0.0
    sigma[:200] = sigma[200]  # a block of ties
    eta = float(10 ** rng.uniform(-1.5, 1))
    h = float(rng.uniform(1, 2500))
    g1 = caso.m_step_gamma(sigma, eta, h, method="median")
    g2 = caso.m_step_gamma(sigma, eta, h, method="sort")
    np.testing.assert_allclose(g1, g2, atol=1e-10)
    # KKT of Eq. (71): sigma^2 / (eta + gamma)^2 equals t on the free set, <= t at 0,
    # >= t at 1 (directions with sigma = 0 are irrelevant).
    pos = sigma > 0
    free = pos & (g1 > 1e-9) & (g1 < 1 - 1e-9)
    if free.any():
        t = sigma[free] ** 2 / (eta + g1[free]) ** 2
        np.testing.assert_allclose(t, t[0], rtol=1e-8)
        at0 = pos & (g1 <= 1e-12)
        at1 = pos & (g1 >= 1 - 1e-12)
        assert np.all(sigma[at0] ** 2 / eta**2 <= t[0] * (1 + 1e-8))
        assert np.all(sigma[at1] ** 2 / (eta + 1) ** 2 >= t[0] * (1 - 1e-8))


@pytest.mark.parametrize("method", caso.M_STEPS)
def test_m_step_flat_segment_and_special_cases(method):
    # Gamma(t) = h on a whole interval: gamma = (1, 0) exactly.
    g = caso.m_step_gamma([10.0, 0.5], 1.0, 1.0, method=method)
    np.testing.assert_allclose(g, [1.0, 0.0], atol=1e-14)
    # d = 1: gamma = h whatever sigma is.
    for s in (0.0, 1e-8, 3.0):
        assert caso.m_step_gamma([s], 0.3, 0.7, method=method)[0] == pytest.approx(0.7)
    # all sigma zero: the mass is spread evenly.
    np.testing.assert_allclose(caso.m_step_gamma(np.zeros(4), 1.0, 1.5, method=method),
                               0.375)
    # rank-deficient with exactly h non-zero singular values: those take 1.
    np.testing.assert_allclose(caso.m_step_gamma([3.0, 2.0, 0.0, 0.0], 0.5, 2.0,
                                                 method=method), [1, 1, 0, 0])
    # equal singular values share h equally.
    np.testing.assert_allclose(caso.m_step_gamma(np.full(5, 2.0), 0.2, 1.25,
                                                 method=method), 0.25)


@pytest.mark.parametrize("seed", range(6))
def test_m_step_matrix_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    d, m = int(rng.integers(1, 5)), int(rng.integers(1, 5))
    U = rng.normal(size=(d, m))
    if seed % 2:
        U[:, 0] = 0.0 if m > 1 else U[:, 0]
        U = U @ np.diag(rng.random(m))
    eta = float(rng.choice([0.1, 1.0, 3.0]))
    h = float(rng.uniform(0.2, d))
    M, phi = caso.m_step(U, eta, h)
    A = eta * np.eye(d) + M
    assert phi == pytest.approx(np.trace(U.T @ np.linalg.inv(A) @ U), rel=1e-10)
    e = np.linalg.eigvalsh(M)
    assert e.min() >= -1e-12 and e.max() <= 1 + 1e-12 and e.sum() == pytest.approx(h)
    Mv = cp.Variable((d, d), symmetric=True)
    prob = cp.Problem(cp.Minimize(cp.matrix_frac(U, eta * np.eye(d) + Mv)),
                      [Mv >> 0, np.eye(d) - Mv >> 0, cp.trace(Mv) == h])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert phi <= prob.value * (1 + 1e-7) + 1e-9
    assert phi == pytest.approx(prob.value, rel=1e-6, abs=1e-8)


def test_sum_largest_handles_fractional_h():
    e = np.array([5.0, 1.0, 3.0, -2.0])
    assert caso.sum_largest(e, 1) == 5.0
    assert caso.sum_largest(e, 2.5) == pytest.approx(5 + 3 + 0.5 * 1)
    assert caso.sum_largest(e, 4) == pytest.approx(7.0)
    assert caso.sum_largest(e, 0.25) == pytest.approx(1.25)
    assert caso.sum_largest([2.0], 0.4) == pytest.approx(0.8)
    # equals max over the bounded simplex (an LP), brute force over random points
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.normal(size=6)
        h = float(rng.uniform(0.1, 6))
        g = cp.Variable(6)
        lp = cp.Problem(cp.Maximize(g @ x), [g >= 0, g <= 1, cp.sum(g) == h])
        lp.solve(solver="CLARABEL")
        assert caso.sum_largest(x, h) == pytest.approx(lp.value, abs=1e-6)


# ----------------------------------------------------------------- hinge prox (Eq. 74)


@pytest.mark.parametrize("seed", range(5))
def test_hinge_prox_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    d, m = int(rng.integers(1, 6)), int(rng.integers(1, 4))
    Xs = [rng.normal(size=(int(rng.integers(2, 10)), d)) for _ in range(m)]
    if seed == 0:
        Xs[0][0] = 0.0  # a zero row
    ys = [np.where(rng.random(X.shape[0]) < 0.5, -1.0, 1.0) for X in Xs]
    V = rng.normal(size=(d, m))
    step = float(rng.choice([0.05, 1.0, 20.0]))
    U = caso.hinge_prox(V, Xs, ys, step)
    for t in range(m):
        u = cp.Variable(d)
        obj = cp.sum_squares(u - V[:, t]) / (2 * step) + cp.sum(
            cp.pos(1 - cp.multiply(ys[t], Xs[t] @ u))) / Xs[t].shape[0]
        prob = cp.Problem(cp.Minimize(obj))
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        np.testing.assert_allclose(U[:, t], u.value, atol=1e-5)


# ----------------------------------------------------------------- full solver vs cvxpy


def _instance(seed, loss):
    """Random shared-subspace tasks; varied d, m, sizes, h (fractional, h = d), eta < 1 < eta."""
    rng = np.random.default_rng(1000 * LOSS_IDS[loss] + seed)
    d = int(rng.integers(1, 6))
    m = int(rng.integers(1, 5))
    ns = rng.integers(3, 12, size=m) if seed % 2 else np.full(m, int(rng.integers(3, 12)))
    k = max(1, d // 2)
    Th = np.linalg.qr(rng.normal(size=(d, k)))[0]
    Ut = Th @ rng.normal(size=(k, m)) + 0.1 * rng.normal(size=(d, m))
    Xs = [rng.normal(size=(int(n), d)) for n in ns]
    ys = [X @ Ut[:, t] + 0.3 * rng.normal(size=X.shape[0]) for t, X in enumerate(Xs)]
    if loss != "squared":
        ys = [np.where(y >= 0, 1.0, -1.0) for y in ys]
    kind = seed % 4
    h = {0: float(d), 1: float(rng.uniform(0.2, d)), 2: float(rng.integers(1, d + 1)),
         3: float(rng.uniform(0.2, d))}[kind]
    eta = float(10 ** rng.uniform(-1, 0)) if seed % 2 == 0 else float(10 ** rng.uniform(0, 1))
    alpha = float(10 ** rng.uniform(-1.5, 0.5))
    return Xs, ys, {"alpha": alpha, "eta": eta, "h": h, "loss": loss}


LOSS_IDS = {"squared": 0, "hinge": 1, "logistic": 2}


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("loss", caso.LOSSES)
def test_agrees_with_cvxpy_and_gap_is_a_true_bound(loss, seed):
    Xs, ys, kw = _instance(seed, loss)
    r = ref.solve(Xs, ys, **kw)
    opt = r.value
    scale = max(1.0, abs(opt))
    results = {}
    for method in caso.METHODS:
        res = caso.solve(Xs, ys, **kw, method=method, tol=1e-9, max_iter=100_000,
                         m_step=caso.M_STEPS[seed % 2])
        assert res.converged
        results[method] = res
        assert res.primal == pytest.approx(opt, rel=1e-6, abs=1e-6)
        # the certificate: dual <= optimum <= primal (up to the conic solver's accuracy)
        assert res.dual <= opt + 1e-7 * scale
        assert res.primal >= opt - 1e-7 * scale
        assert res.gap == pytest.approx(res.primal - res.dual, abs=1e-12 * scale)
        assert res.rel_gap <= 1e-9
        # the public objective functions evaluate the returned point consistently
        args = (Xs, ys)
        assert caso.objective(res.U, res.M, *args, **kw) == pytest.approx(res.primal, rel=1e-10)
        assert caso.primal_objective(res.U, *args, **kw) == pytest.approx(res.primal, rel=1e-10)
        assert caso.dual_objective(res.dual_vars, *args, **kw) == pytest.approx(
            res.dual, rel=1e-10, abs=1e-12)
        # the optimal M is feasible and Theta / V are consistent
        e = np.linalg.eigvalsh(res.M)
        assert e.min() >= -1e-10 and e.max() <= 1 + 1e-10
        assert np.trace(res.M) == pytest.approx(kw["h"], rel=1e-10)
        k = caso.subspace_dim(kw["h"])
        assert res.Theta.shape == (k, Xs[0].shape[1])
        np.testing.assert_allclose(res.Theta @ res.Theta.T, np.eye(k), atol=1e-10)
        np.testing.assert_allclose(res.V, res.Theta @ res.U, atol=1e-12)
    # APG and BCD reach the same optimum
    assert results["apg"].primal == pytest.approx(results["bcd"].primal, rel=1e-8, abs=1e-8)


# ----------------------------------------------------------------- the inverse trap


def test_objective_uses_the_inverse_of_eta_I_plus_M():
    """A known MATLAB code evaluates tr(U^T (eta I + M) U); this test fails on that mistake."""
    # d = m = 1, squared loss on one sample x = 1: F(u) = (u - y)^2 + c u^2 / (eta + h).
    y, alpha, eta, h = 2.0, 0.7, 0.5, 0.6
    c = alpha * eta * (1 + eta)
    k = c / (eta + h)
    u_star = y / (1 + k)
    opt = (u_star - y) ** 2 + k * u_star**2
    wrong = (y / (1 + c * (eta + h))) ** 2 * c * (eta + h) + (y / (1 + c * (eta + h)) - y) ** 2
    assert abs(opt - wrong) > 0.1
    for method in caso.METHODS:
        res = caso.solve([[[1.0]]], [[y]], alpha=alpha, eta=eta, h=h, method=method,
                         tol=1e-12, max_iter=10_000)
        assert res.primal == pytest.approx(opt, rel=1e-10)
        assert res.U[0, 0] == pytest.approx(u_star, rel=1e-6)
        np.testing.assert_allclose(res.M, [[h]])
    # A general point: the objective matches the formula with an explicit inverse.
    rng = np.random.default_rng(0)
    Xs = [rng.normal(size=(7, 3)) for _ in range(2)]
    ys = [rng.normal(size=7) for _ in range(2)]
    U = rng.normal(size=(3, 2))
    M, _ = caso.m_step(rng.normal(size=(3, 2)), 0.4, 1.5)
    A = 0.4 * np.eye(3) + M
    c = 2.0 * 0.4 * 1.4
    loss = sum(np.mean((X @ U[:, t] - ys[t]) ** 2) for t, X in enumerate(Xs))
    F = caso.objective(U, M, Xs, ys, alpha=2.0, eta=0.4, h=1.5)
    assert F == pytest.approx(loss + c * np.trace(U.T @ np.linalg.solve(A, U)), rel=1e-12)
    assert abs(F - (loss + c * np.trace(U.T @ A @ U))) > 1e-3


# ----------------------------------------------------------------- behaviour


def _synthetic(loss="squared", seed=0, d=8, m=6, n=25):
    from explorer.models.caso.data import subspace

    p = subspace(seed=seed, d=d, m=m, n=n, h_true=2)
    ys = p.data["ys"] if loss == "squared" else p.info["ys_sign"]
    return p.data["Xs"], ys


@pytest.mark.parametrize("loss", caso.LOSSES)
def test_apg_and_bcd_meet_on_synthetic_and_digits(loss):
    from explorer.models.caso.data import digits_ovr

    dig = digits_ovr(seed=0, n=24, d=6)
    for Xs, ys, kw in [
        (*_synthetic(loss), {"alpha": 0.1, "eta": 0.5, "h": 2}),
        (dig.data["Xs"], dig.data["ys"], {"alpha": 0.05, "eta": 2.0, "h": 2.5}),
    ]:
        a = caso.solve(Xs, ys, **kw, loss=loss, method="apg", tol=1e-8, max_iter=50_000,
                       restart=True)
        b = caso.solve(Xs, ys, **kw, loss=loss, method="bcd", tol=1e-8, max_iter=50_000)
        assert a.converged and b.converged
        assert a.primal == pytest.approx(b.primal, rel=2e-8)
        # each certificate brackets the other method's value
        assert a.dual <= b.primal + 1e-12 and b.dual <= a.primal + 1e-12
    # digits: the gap closes and cvxpy finds the same optimum
    r = ref.solve(dig.data["Xs"], dig.data["ys"], alpha=0.05, eta=2.0, h=2.5, loss=loss)
    assert b.primal == pytest.approx(r.value, rel=1e-6)
    assert b.dual <= r.value + 1e-7 * max(1, r.value)


def test_apg_momentum_is_used_and_domain_exits_restart_it():
    # eta << 1: the extrapolated M can leave {eta I + M > 0}; APG must restart, not fail.
    rng = np.random.default_rng(2)
    d, m, n = int(rng.integers(2, 6)), int(rng.integers(2, 6)), int(rng.integers(5, 15))
    Xs = [rng.normal(size=(n, d)) for _ in range(m)]
    ys = [rng.normal(size=n) for _ in range(m)]
    kw = {"alpha": 1.01408013575796, "eta": 1e-3, "h": 2.4465845719462394}
    res = caso.solve(Xs, ys, **kw, method="apg", tol=1e-9, max_iter=20_000)
    h = res.history
    assert res.converged
    assert h.n_restarts[-1] >= 1  # restart=False: every restart is a domain exit
    assert np.max(h.beta) > 0.5  # the momentum is really used
    assert np.all(np.diff(h.L) >= 0)  # L only doubles (Eq. (37))
    assert res.primal == pytest.approx(ref.solve(Xs, ys, **kw).value, rel=1e-6)
    # the algorithm's own iterate F(U_k, M_k) is never below the certified primal P(U_k)
    assert np.all(h.objective_iterate >= h.primal - 1e-10 * np.abs(h.primal))


def _badly_scaled(seed, loss):
    """Tasks of different sizes whose features span three orders of magnitude (like
    School's raw features), a constant column and a per-task constant column."""
    rng = np.random.default_rng(500 + seed)
    d, m = int(rng.integers(3, 7)), int(rng.integers(2, 6))
    scale = 10.0 ** rng.uniform(-1, 2, size=d)
    Xs = []
    for t in range(m):
        X = rng.normal(size=(int(rng.integers(4, 15)), d)) * scale + scale * rng.normal(size=d)
        X[:, 0] = 1.0
        if d > 3:
            X[:, -1] = float(t == 0)  # a column that is constant (zero) in most tasks
        Xs.append(X)
    u = rng.normal(size=d) / scale
    ys = [X @ (u + 0.2 * rng.normal(size=d) / scale) + 0.3 * rng.normal(size=X.shape[0])
          for X in Xs]
    if loss != "squared":
        ys = [np.where(y >= np.median(y), 1.0, -1.0) for y in ys]
    kw = {"alpha": float(10 ** rng.uniform(-2, 0)), "eta": float(10 ** rng.uniform(-0.5, 0.5)),
          "h": float(rng.uniform(0.5, d - 0.5)), "loss": loss}
    return Xs, ys, kw


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("loss", caso.LOSSES)
def test_apg_precond_on_badly_scaled_tasks_against_cvxpy(loss, seed):
    """``apg_precond`` (metric + restart + growing step) certifies badly scaled tasks
    to 1e-8: cvxpy's optimum lies inside its [dual, primal], it meets BCD, and for the
    smooth losses it needs far fewer iterations than the paper's APG."""
    Xs, ys, kw = _badly_scaled(seed, loss)
    opt = ref.solve(Xs, ys, **kw).value
    scale = max(1.0, abs(opt))
    res = caso.solve(Xs, ys, **kw, method="apg_precond", tol=1e-8, max_iter=100_000)
    assert res.converged and res.rel_gap <= 1e-8
    assert res.params["method"] == "apg_precond" and res.method == "apg_precond"
    assert res.dual <= opt + 1e-7 * scale and res.primal >= opt - 1e-7 * scale
    assert res.primal == pytest.approx(opt, rel=1e-6, abs=1e-6)
    assert caso.primal_objective(res.U, Xs, ys, **kw) == pytest.approx(res.primal, rel=1e-10)
    bcd = caso.solve(Xs, ys, **kw, method="bcd", tol=1e-9, max_iter=100_000)
    assert res.dual <= bcd.primal + 1e-12 * scale and bcd.dual <= res.primal + 1e-12 * scale
    h = res.history
    assert np.all(h.objective_iterate >= h.primal - 1e-10 * np.abs(h.primal))
    if loss != "hinge":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            paper = caso.solve(Xs, ys, **kw, method="apg", tol=1e-8, max_iter=3 * res.n_iter)
        assert paper.n_iter > res.n_iter
        assert not paper.converged or paper.n_iter >= 2 * res.n_iter


def test_apg_precond_restarts_and_grows_its_step():
    Xs, ys, kw = _badly_scaled(0, "squared")
    res = caso.solve(Xs, ys, **kw, method="apg_precond", tol=1e-10, max_iter=100_000)
    h = res.history
    assert res.converged and np.max(h.beta) > 0.5
    assert (np.diff(h.L) < 0).any()  # the step grows back (L <- 0.9 L before each search)
    assert h.n_restarts[-1] >= 1


def test_school_subset_all_methods_against_cvxpy():
    """Twelve schools of School (real, unscaled features) through the project's reader:
    every method's certificate brackets cvxpy's optimum."""
    from explorer.benchkit import school_path, school_problem

    path = school_path()
    assert path is not None, "School (../shared/data/school.mat) is missing"
    p = school_problem("caso", path)
    Xs, ys = p.data["Xs"][:12], p.data["ys"][:12]
    kw = {"alpha": 0.1, "eta": 1.0, "h": 2.0}
    opt = ref.solve(Xs, ys, **kw).value
    scale = max(1.0, abs(opt))
    for method, budget in (("bcd", 10_000), ("apg_precond", 10_000), ("apg", 300)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = caso.solve(Xs, ys, **kw, method=method, tol=1e-7, max_iter=budget)
        assert res.dual <= opt + 1e-7 * scale and res.primal >= opt - 1e-7 * scale
        if method != "apg":  # the paper's APG does not converge within its budget here
            assert res.converged
            assert res.primal == pytest.approx(opt, rel=2e-7)


@pytest.mark.parametrize("loss", caso.LOSSES)
@pytest.mark.parametrize("method", caso.METHODS)
def test_warm_start_reaches_the_same_optimum(loss, method):
    Xs, ys = _synthetic(loss, seed=3, d=6, m=5, n=20)
    kw = {"eta": 0.8, "h": 1.5, "loss": loss, "method": method, "tol": 1e-9,
          "max_iter": 50_000, "restart": True}
    cold = caso.solve(Xs, ys, alpha=0.2, **kw)
    prev = caso.solve(Xs, ys, alpha=0.15, **{**kw, "h": 2.0})
    warm = caso.solve(Xs, ys, alpha=0.2, init=prev, **kw)
    assert warm.converged
    assert warm.primal == pytest.approx(cold.primal, rel=1e-8)
    again = caso.solve(Xs, ys, alpha=0.2, init=cold, **kw)
    assert again.n_iter <= max(3, cold.n_iter // 3)


def test_m_step_choice_does_not_change_the_result():
    Xs, ys = _synthetic("hinge", seed=4, d=6, m=5, n=20)
    a = caso.solve(Xs, ys, alpha=0.1, h=2.5, loss="hinge", method="bcd", m_step="median",
                   tol=1e-9, max_iter=10_000)
    b = caso.solve(Xs, ys, alpha=0.1, h=2.5, loss="hinge", method="bcd", m_step="sort",
                   tol=1e-9, max_iter=10_000)
    assert a.n_iter == b.n_iter
    np.testing.assert_allclose(a.U, b.U, atol=1e-9)
    np.testing.assert_allclose(a.history.primal, b.history.primal, rtol=1e-9)


def test_history_callback_and_predictions():
    Xs, ys = _synthetic("hinge", seed=5)
    seen = []

    def cb(state):
        seen.append((state.iteration, state.iterate["U"].shape, state.iterate["M"].shape))
        return state.iteration < 4

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = caso.solve(Xs, ys, loss="hinge", method="apg", tol=1e-14, callback=cb)
    assert res.n_iter == 4 and not res.converged
    assert [s[0] for s in seen] == [1, 2, 3, 4]
    assert seen[0][1] == (8, 6) and seen[0][2] == (8, 8)
    h = res.history
    assert np.all(h.gap >= 0) and len(h) == 4
    for key in ("L", "beta", "n_backtracks", "n_restarts", "objective_iterate", "inner"):
        assert len(getattr(h, key)) == 4
    pred = res.predict(Xs[0], 0)
    assert set(np.unique(pred)) <= {-1.0, 1.0}
    np.testing.assert_allclose(res.decision_function(Xs[1], 1), Xs[1] @ res.U[:, 1])
    d = res.to_dict(include_arrays=True)
    assert d["model"] == "caso" and d["params"]["loss"] == "hinge"


def test_rank_deficient_and_degenerate_problems():
    rng = np.random.default_rng(7)
    # d > total samples: U has rank <= m < h
    Xs = [rng.normal(size=(2, 9)) for _ in range(2)]
    ys = [rng.normal(size=2) for _ in range(2)]
    for method in caso.METHODS:
        res = caso.solve(Xs, ys, h=4.5, eta=0.3, method=method, tol=1e-10, max_iter=50_000)
        assert res.converged
        assert res.primal == pytest.approx(ref.solve(Xs, ys, h=4.5, eta=0.3).value, rel=1e-6)
    # all-zero data: U = 0, the gap is exactly closed at once
    Xz = [np.zeros((3, 2))]
    res = caso.solve(Xz, [np.array([1.0, -1.0, 1.0])], loss="hinge", h=1)
    assert res.converged and res.primal == pytest.approx(1.0)
    np.testing.assert_allclose(res.U, 0.0)


# ----------------------------------------------------------------- bad input

RNG0 = np.random.default_rng(0)
XS0 = [RNG0.normal(size=(5, 3)), RNG0.normal(size=(4, 3))]
YS0 = [np.array([1.0, -1, 1, -1, 1]), np.array([-1.0, 1, 1, -1])]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"h": 3.5}, ValueError, r"h must lie in \(0, 3\] \(d = n_features=3\)"),
        # extreme eta / alpha (issue 14): under/overflow of c = alpha eta (1 + eta)
        ({"eta": 1e-300, "method": "bcd"}, ValueError, r"eta must lie in \[1e-08, 1e\+08\]"),
        ({"eta": 1e300, "method": "apg"}, ValueError, r"eta must lie in \[1e-08, 1e\+08\]"),
        ({"alpha": 1e-300, "method": "apg"}, ValueError, r"alpha must lie in"),
        ({"alpha": 1e300, "method": "bcd"}, ValueError, r"alpha must lie in"),
        ({"ys": YS0[:1]}, ValueError, "Xs has 2 tasks but ys has 1"),
        ({"Xs": [XS0[0], XS0[1][:, :2]]}, ValueError, "all tasks must share d"),
        ({"Xs": []}, ValueError, "Xs must contain at least one task"),
        ({"ys": [YS0[0], YS0[1][:3]]}, ValueError, r"ys\[1\] must have length 4"),
        ({"Xs": [XS0[0], np.full((4, 3), np.nan)]}, ValueError, r"Xs\[1\] contains"),
        ({"ys": [YS0[0], np.array([0.0, 1, 1, -1])]}, ValueError,
         r"ys\[1\] must contain only -1 and \+1"),
        ({"ys": [YS0[0] * 2, YS0[1]], "loss": "logistic"}, ValueError, r"ys\[0\] must contain"),
        ({"callback": 3}, TypeError, "callback must be callable"),
        ({"init": "warm"}, TypeError, "init must be a previous CASOResult"),
    ],
)
def test_bad_input_raises_clear_errors(kwargs, exc, match):
    args = {"Xs": XS0, "ys": YS0, "loss": "hinge", "h": 1.0}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        caso.solve(**args)


@pytest.mark.parametrize("method", caso.METHODS)
@pytest.mark.parametrize("kw", [{"eta": 1e-8}, {"eta": 1e8}, {"alpha": 1e-8}, {"alpha": 1e8}])
def test_extreme_admissible_eta_and_alpha_run_without_breakdown(kw, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = caso.solve(XS0, YS0, loss="hinge", h=1.0, method=method, max_iter=50, **kw)
    assert np.isfinite(res.primal) and np.isfinite(res.dual) and res.gap >= 0


def test_numerical_breakdown_names_alpha_and_eta(monkeypatch):
    from solvers.base import NumericalError

    def broken(*args, **kwargs):
        raise NumericalError("APG: line search failed (iteration 1)")

    monkeypatch.setattr(caso, "_run_apg", broken)
    with pytest.raises(NumericalError, match=r"alpha=0\.5, eta=2"):
        caso.solve(XS0, YS0, alpha=0.5, eta=2.0, h=1.0, method="apg")


def test_spectral_helpers_validate():
    with pytest.raises(ValueError, match="eigs contains 1 NaN"):
        caso.sum_largest([np.nan, 2.0], 1.0)
    with pytest.raises(ValueError, match="h must lie in"):
        caso.sum_largest([1.0, 2.0], 3.0)
    with pytest.raises(ValueError, match="h must lie in"):
        caso.subspace_dim(-5.0)
    assert caso.subspace_dim(2.5) == 3 and caso.sum_largest([3.0, 1.0, 2.0], 1.5) == 4.0


def test_squared_loss_accepts_real_targets_and_init_must_match():
    ys = [RNG0.normal(size=5), RNG0.normal(size=4)]
    res = caso.solve(XS0, ys, loss="squared", h=2.0)
    with pytest.raises(ValueError, match="init does not match"):
        caso.solve([X[:, :2] for X in XS0], ys, init=res)


def test_helpers_reject_bad_input():
    with pytest.raises(ValueError, match="sigma must be non-negative"):
        caso.m_step_gamma([1.0, -1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="h must lie in"):
        caso.m_step_gamma([1.0, 2.0], 1.0, 2.5)
    with pytest.raises(ValueError, match="eta must lie in"):
        caso.m_step(np.ones((2, 2)), 0.0, 1.0)
    with pytest.raises(ValueError, match="M must lie in"):
        caso.objective(np.zeros((3, 2)), np.eye(3), XS0, YS0, h=1.0, loss="hinge")
    with pytest.raises(ValueError, match="M must be symmetric"):
        caso.objective(np.zeros((3, 2)), np.triu(np.ones((3, 3))) / 3, XS0, YS0, h=1.0)
    with pytest.raises(ValueError, match="outside the dual domain"):
        caso.dual_objective([np.ones(5), np.ones(4)], XS0, YS0, h=1.0, loss="hinge")
    with pytest.raises(ValueError, match="thetas has 1 entries"):
        caso.dual_objective([np.ones(5)], XS0, YS0, h=1.0)
    with pytest.raises(ValueError, match="step must lie in"):
        caso.hinge_prox(np.zeros((3, 2)), XS0, YS0, 0.0)


# ----------------------------------------------------------------- explorer entry


def test_entry_datasets_and_adapters():
    from explorer.registry import get

    e = get("caso")
    assert e.order == 20
    for name, ds in e.datasets.items():
        prob = ds(seed=1)
        assert len(prob.data["Xs"]) == len(prob.data["ys"]), name
    small = e.datasets["subspace"](seed=0, d=5, m=4, n=12)
    params = e.default_params()
    for loss in caso.LOSSES:
        params.update(loss=loss)
        res = e.solve(small, tol=1e-8, max_iter=50_000, **params)
        assert res.converged
        r = e.reference(small, **params)
        assert res.primal == pytest.approx(r.value, rel=1e-6)
    assert e.reference_refusal(small) is None
    big = e.datasets["subspace"](seed=0, d=50, m=100, n=20)
    assert "refused" in e.reference_refusal(big)


def test_m_step_gamma_is_scale_invariant_at_extreme_scales():
    # gamma(c sigma) = gamma(sigma): sigma ~ 1e-301 once divided by zero (sigma^2 underflow)
    sigma = np.array([3.0, 1.0, 0.5, 0.25])
    for method in caso.M_STEPS:
        ref_gamma = caso.m_step_gamma(sigma, 0.1, 1.5, method=method)
        for c in (1e-301, 1e-150, 1e150):
            np.testing.assert_allclose(caso.m_step_gamma(sigma * c, 0.1, 1.5, method=method),
                                       ref_gamma, rtol=1e-12, atol=1e-14)
        assert caso.m_step_gamma([1.2573e-301], 1e-3, 0.5, method=method).tolist() == [0.5]


# ----------------------------------------------------------------- U-step forms (BCD, squared)


def _random_structure(rng, d, kind):
    """A matrix of Mset as caso._Structure: full basis, thin basis, or thin with g0 > 0."""
    r = d if kind == "full" else int(rng.integers(1, d))
    P = np.linalg.qr(rng.normal(size=(d, d)))[0][:, :r]
    g = np.sort(rng.uniform(0.0, 1.0, size=r))[::-1]
    g[rng.random(r) < 0.3] = 0.0
    g0 = float(rng.uniform(0.0, 0.5)) if kind == "thin_g0" else 0.0
    return caso._Structure(P, np.sort(g)[::-1], g0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sizes", ["n<d", "n>=d", "mixed"])
def test_kernel_and_primal_u_steps_solve_the_same_system(seed, sizes):
    rng = np.random.default_rng(seed)
    d, m = int(rng.integers(4, 12)), int(rng.integers(1, 5))
    ns = {"n<d": np.full(m, d - 1 - seed % 3), "n>=d": np.full(m, d + seed % 3),
          "mixed": rng.integers(1, 2 * d, size=m)}[sizes]
    Xs = [rng.normal(size=(int(n), d)) for n in ns]
    ys = [rng.normal(size=int(n)) for n in ns]
    data = caso._Tasks(Xs, ys)
    eta, c = float(10 ** rng.uniform(-1, 1)), float(10 ** rng.uniform(-2, 1))
    st = _random_structure(rng, d, ("full", "thin", "thin_g0")[seed % 3])
    M = st.dense()
    np.testing.assert_allclose(M, M.T)
    np.testing.assert_allclose(np.linalg.eigvalsh(M), np.sort(st.gamma()), atol=1e-12)
    A = eta * np.eye(d) + M
    # brute force: (X^T X / n + c A^{-1}) u = X^T y / n per task
    U_ref = np.column_stack([
        np.linalg.solve(X.T @ X / len(y) + c * np.linalg.inv(A), X.T @ y / len(y))
        for X, y in zip(Xs, ys, strict=True)])
    for mode in caso.USTEPS:
        U = caso._SquaredSteps(data, mode)(st, eta, c)
        np.testing.assert_allclose(U, U_ref, rtol=1e-8, atol=1e-10 * np.abs(U_ref).max())


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_bcd_iterates_do_not_depend_on_the_u_step_form(seed, loss):
    rng = np.random.default_rng(seed)
    d, m = (12, 5) if seed % 2 else (5, 7)
    ns = rng.integers(2, 2 * d, size=m) if seed >= 2 else np.full(m, d // 2 + 4 * (seed % 2))
    Xs = [rng.normal(size=(int(n), d)) for n in ns]
    ys = [rng.normal(size=int(n)) for n in ns]
    if loss == "logistic":
        ys = [np.where(y >= 0, 1.0, -1.0) for y in ys]
    kw = {"alpha": 0.3, "eta": 0.5, "h": 2.5, "tol": 1e-9, "max_iter": 10_000, "loss": loss}
    runs = {mode: caso.solve(Xs, ys, ustep=mode, **kw) for mode in caso.USTEPS}
    ref_run = runs["primal"]
    for res in runs.values():
        assert res.converged
        if loss == "squared":  # exact U-steps: the same iterates up to rounding
            assert res.n_iter == ref_run.n_iter
            np.testing.assert_allclose(res.history.primal, ref_run.history.primal, rtol=1e-9)
        else:  # Newton stops on a tolerance: rounding may add or save one step
            assert abs(res.n_iter - ref_run.n_iter) <= 2
            np.testing.assert_allclose(res.history.primal[:5], ref_run.history.primal[:5],
                                       rtol=1e-9)
        assert res.primal == pytest.approx(ref_run.primal, rel=1e-9)
        atol = (1e-8 if loss == "squared" else 1e-6) * np.abs(ref_run.U).max()
        np.testing.assert_allclose(res.U, ref_run.U, atol=atol)


@pytest.mark.parametrize("seed", range(4))
def test_thin_m_step_matches_the_dense_eigendecomposition(seed):
    rng = np.random.default_rng(seed)
    d, m = 9, (3, 9, 14, 2)[seed]
    U = rng.normal(size=(d, m))
    if seed == 3:
        U[:, 1] = U[:, 0]  # rank 1 < h: the complement takes the remaining mass
    h = (2.5, 4.0, 1.0, 3.0)[seed]
    st, phi = caso._m_step_structure(U, 0.7, h, "sort")
    lam, P = np.linalg.eigh(U @ U.T)
    lam = np.where(lam > d * np.finfo(float).eps * lam.max(), lam, 0.0)  # rounding noise
    sigma = np.sqrt(lam)
    gamma = caso.m_step_gamma(sigma, 0.7, h, method="sort")
    np.testing.assert_allclose((P * gamma) @ P.T, st.dense(), atol=1e-10)
    assert phi == pytest.approx(float(np.sum(lam / (0.7 + gamma))), rel=1e-10)
    B = st.basis(min(d, 4))
    np.testing.assert_allclose(B.T @ B, np.eye(B.shape[1]), atol=1e-12)
    np.testing.assert_allclose(st.dense() @ B, B * st.gamma()[:B.shape[1]], atol=1e-10)


def test_ustep_choice_is_validated():
    with pytest.raises(ValueError, match="ustep"):
        caso.solve(XS0, YS0, h=1.0, ustep="woodbury")
