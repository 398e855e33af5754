"""Robust temporal MTL: cvxpy agreement, certificate validity, the mu floor, momentum, bad input."""

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest

from solvers import ConvergenceWarning, robust_mtl
from solvers.apg import APG
from solvers.reference import robust_mtl as ref

PS = [2, 1, math.inf]


def _instance(seed):
    """A small random problem; seed // 3 picks a parameter regime, seed % 3 the loss norm."""
    rng = np.random.default_rng(1000 + seed)
    m = int(rng.integers(2, 6))
    d = int(rng.integers(3, 7))
    ns = rng.integers(4, 13, size=m)  # tasks of different sizes
    Wt = rng.normal(size=(d, m))
    Wt[rng.random(d) < 0.4] = 0.0
    Xs = [rng.normal(size=(n, d)) for n in ns]
    ys = [X @ Wt[:, i] + rng.normal(size=X.shape[0]) * rng.uniform(0.1, 1.0)
          for i, X in enumerate(Xs)]
    p = PS[seed % 3]
    scale = 2.0 if p == 1 else 1.0
    kw = {"lam": scale * float(rng.uniform(0.2, 2.0)), "gamma": float(10 ** rng.uniform(-0.3, 0.3)),
          "zeta": float(rng.uniform(0.1, 3.0)), "rho": scale * float(rng.uniform(0.2, 2.0)), "p": p}
    kind = seed // 3
    if kind == 1:
        kw["rho"] = 0.0
    elif kind == 2:
        kw["zeta"] = 0.0
    elif kind == 3:
        kw["lam"] = 0.0
    elif kind == 5:
        kw["lam"] = kw["rho"] = kw["zeta"] = 0.0
    return Xs, ys, kw


_REF_CACHE = {}


def _ref(seed):
    if seed not in _REF_CACHE:
        Xs, ys, kw = _instance(seed)
        _REF_CACHE[seed] = ref.solve(Xs, ys, **kw)
    return _REF_CACHE[seed]


def _small_mu(kw, d, opt, rel=2e-5):
    """A mu whose worst-case l2,1 floor lam d mu / 4 is below rel/4 of the optimum."""
    return min(1e-3, rel * max(1.0, abs(opt)) / max(kw["lam"] * d, 1e-12))


def _solve(Xs, ys, kw, **opts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return robust_mtl.solve(Xs, ys, **kw, **opts)


def _assert_certificate(res, opt):
    slack = 1e-9 * max(1.0, abs(opt))
    assert res.dual <= opt + slack, "the lower bound exceeds cvxpy's optimum"
    assert res.primal >= opt - slack
    assert res.gap == pytest.approx(res.primal - res.dual, abs=1e-12 * max(1, abs(opt)))
    h = res.history
    assert np.all(h.dual_iterate <= opt + slack), "a recorded lower bound exceeds the optimum"
    assert np.all(h.primal_iterate >= opt - slack)
    assert np.all(np.diff(h.primal) <= 0) and np.all(np.diff(h.dual) >= 0)  # best so far


def _assert_against_reference(res, r, Xs, ys, kw):
    """The certificate brackets cvxpy's optimum, the arrays evaluate to the reported
    figures, and W lies within the certified radius of cvxpy's solution."""
    _assert_certificate(res, r.value)
    assert robust_mtl.primal_objective(res.W, Xs, ys, **kw) == pytest.approx(res.primal,
                                                                               rel=1e-12)
    assert robust_mtl.dual_objective(res.theta, res.A, res.B, Xs, ys, **kw) == pytest.approx(
        res.dual, rel=1e-10, abs=1e-10)
    # J is gamma-strongly convex: ||W - W*||_F <= sqrt(2 (J(W) - J*) / gamma) <= sqrt(2 gap / gamma)
    radius = np.sqrt(2 * res.gap / kw["gamma"])
    assert np.linalg.norm(res.W - r.W) <= radius + 1e-4 * max(1.0, np.linalg.norm(r.W))


# ----------------------------------------------------------------- cvxpy agreement


@pytest.mark.parametrize("seed", range(18))
def test_dual_method_agrees_with_cvxpy(seed):
    """18 instances, p in {1, 2, inf}, with rho = 0, zeta = 0, lam = 0 and all three = 0."""
    Xs, ys, kw = _instance(seed)
    r = _ref(seed)
    mu = _small_mu(kw, Xs[0].shape[1], r.value)
    res = _solve(Xs, ys, kw, mu=mu, tol=3e-6, restart=True, method="dual", max_svd=10**6)
    assert abs(res.primal - r.value) <= 1e-5 * abs(r.value)
    _assert_against_reference(res, r, Xs, ys, kw)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 6, 10, 11, 14])
def test_paper_configuration_without_restart_agrees_with_cvxpy(seed):
    """The paper's plain FISTA loops (restart=False, the default)."""
    Xs, ys, kw = _instance(seed)
    r = _ref(seed)
    res = _solve(Xs, ys, kw, mu=_small_mu(kw, Xs[0].shape[1], r.value), tol=3e-6,
                 method="dual", max_svd=10**6)
    assert abs(res.primal - r.value) <= 1e-5 * abs(r.value)
    _assert_certificate(res, r.value)


@pytest.mark.parametrize("seed", [0, 2, 3, 6, 9, 13])
def test_smoothing_baseline_is_certified_and_reaches_its_floor(seed):
    Xs, ys, kw = _instance(seed)
    r = _ref(seed)
    res = _solve(Xs, ys, kw, mu=1e-4, tol=1e-6, restart=True, method="smoothing",
                 check_every=5)
    _assert_certificate(res, r.value)
    assert res.converged or res.floor_reached
    # the certified gap bounds the true error, and the error is small
    assert res.primal - r.value <= res.gap + 1e-9 * abs(r.value)
    assert abs(res.primal - r.value) <= 2e-4 * abs(r.value)
    if kw["p"] == 2:
        assert abs(res.primal - r.value) <= 1e-5 * abs(r.value)


def test_dual_needs_far_fewer_outer_iterations_than_smoothing_steps():
    Xs, ys, kw = _instance(3)
    d = _solve(Xs, ys, kw, mu=1e-3, tol=1e-5, method="dual")
    s = _solve(Xs, ys, kw, mu=1e-3, tol=1e-5, method="smoothing")
    assert d.converged and s.converged
    assert d.n_iter * 20 < s.n_iter
    assert d.inner_iterations == d.history.inner_total[-1] == d.history.inner_iters.sum()


def test_reference_theta_is_an_optimal_dual_point():
    for seed in (0, 1, 2):
        Xs, ys, kw = _instance(seed)
        r = _ref(seed)
        q = {2: 2, 1: np.inf, math.inf: 1}[kw["p"]]
        assert all(np.linalg.norm(t, q) <= 1 + 1e-9 for t in r.theta)
        c = robust_mtl.certificate(r.W, r.theta, Xs, ys, **kw)
        assert c["dual"] <= r.value + 1e-9 * abs(r.value)
        assert c["gap"] <= 1e-6 * abs(r.value)


# ----------------------------------------------------------------- the certificate


@pytest.mark.parametrize("seed", range(18))
def test_lower_bound_at_random_feasible_points_never_exceeds_the_optimum(seed):
    Xs, ys, kw = _instance(seed)
    opt = _ref(seed).value
    rng = np.random.default_rng(seed)
    d, m = Xs[0].shape[1], len(Xs)
    for _ in range(25):
        theta = robust_mtl.project_dual([rng.normal(size=X.shape[0]) * 3 for X in Xs], kw["p"])
        A = rng.normal(size=(d, m))
        A *= kw["lam"] * rng.uniform(0, 1, size=(d, 1)) / np.linalg.norm(A, axis=1,
                                                                         keepdims=True)
        B = rng.normal(size=(d, m))
        B *= kw["rho"] * rng.uniform() / np.linalg.norm(B, 2)
        lb = robust_mtl.dual_objective(theta, A, B, Xs, ys, **kw)
        assert lb <= opt + 1e-9 * abs(opt)
        W = rng.normal(size=(d, m))
        c = robust_mtl.certificate(W, theta, Xs, ys, **kw, polish=20)
        assert c["dual"] <= opt + 1e-9 * abs(opt) <= c["primal"] + 2e-9 * abs(opt)


def test_lower_bound_is_tight_at_the_cvxpy_dual_and_equals_cvxpy_dual_function():
    """D(theta) computed by cvxpy vs the inner S-FISTA and the polished certificate."""
    Xs, ys, kw = _instance(4)
    rng = np.random.default_rng(0)
    theta = robust_mtl.project_dual([rng.normal(size=X.shape[0]) for X in Xs], kw["p"])
    d, m = Xs[0].shape[1], len(Xs)
    W = cp.Variable((d, m))
    V = np.column_stack([X.T @ t for X, t in zip(Xs, theta, strict=True)])
    obj = (kw["lam"] * cp.sum(cp.norm(W, 2, axis=1)) + kw["gamma"] / 2 * cp.sum_squares(W)
           + kw["zeta"] / 2 * cp.sum_squares(W[:, 1:] - W[:, :-1]) + kw["rho"] * cp.normNuc(W)
           + cp.sum(cp.multiply(V, W)))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    D = prob.value - sum(float(t @ y) for t, y in zip(theta, ys, strict=True))
    f = robust_mtl.dual_function(theta, Xs, ys, **kw, mu=1e-7, tol=1e-11)
    assert f["lower"] <= D + 1e-8 * max(1, abs(D))
    assert f["lower"] == pytest.approx(D, rel=1e-5, abs=1e-5)
    assert f["value"] == pytest.approx(D, rel=1e-5, abs=1e-5)
    np.testing.assert_allclose(f["W"], W.value, atol=2e-3)
    # gradient of D is the residual vector at W(theta)
    for g, X, y, i in zip(f["gradient"], Xs, ys, range(m), strict=True):
        np.testing.assert_allclose(g, X @ f["W"][:, i] - y, atol=1e-12)
    c = robust_mtl.certificate(W.value, theta, Xs, ys, **kw, polish=500)
    assert c["dual"] <= D + 1e-8 * max(1, abs(D))
    assert c["dual"] == pytest.approx(D, rel=1e-5, abs=1e-5)


def test_dual_objective_rejects_infeasible_points():
    Xs, ys, kw = _instance(0)
    d, m = Xs[0].shape[1], len(Xs)
    theta = [np.zeros(X.shape[0]) for X in Xs]
    bad = [t.copy() for t in theta]
    bad[0][0] = 1.5
    with pytest.raises(ValueError, match="theta\\[0\\] is outside the unit"):
        robust_mtl.dual_objective(bad, None, None, Xs, ys, **kw)
    A = np.zeros((d, m))
    A[0, 0] = 2 * kw["lam"]
    with pytest.raises(ValueError, match="A has a row of norm"):
        robust_mtl.dual_objective(theta, A, None, Xs, ys, **kw)
    B = np.zeros((d, m))
    B[0, 0] = 2 * kw["rho"]
    with pytest.raises(ValueError, match="B has spectral norm"):
        robust_mtl.dual_objective(theta, None, B, Xs, ys, **kw)


# ----------------------------------------------------------------- q-ball projections


def _cvx_project(v, q):
    x = cp.Variable(v.size)
    cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [cp.norm(x, q) <= 1]).solve(
        solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return x.value


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("seed", range(6))
def test_q_ball_projections_match_cvxpy(p, seed):
    rng = np.random.default_rng(seed)
    q = {2: 2, 1: "inf", math.inf: 1}[p]
    vs = [rng.normal(size=int(rng.integers(1, 12))) * rng.choice([0.05, 1.0, 5.0])
          for _ in range(3)]
    out = robust_mtl.project_dual(vs, p)
    for v, x in zip(vs, out, strict=True):
        np.testing.assert_allclose(x, _cvx_project(v, q), atol=1e-7)
        if np.linalg.norm(v, {2: 2, "inf": np.inf, 1: 1}[q]) <= 1:
            np.testing.assert_array_equal(x, v)  # points inside stay put


# ----------------------------------------------------------------- smoothing pieces


def test_huber_rows_and_moreau_envelope_bracket_the_norms():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(12, 4)) * np.array([[1e-4]] * 6 + [[1.0]] * 6)
    for mu in (1e-3, 1e-1):
        pb = robust_mtl._problem_from([rng.normal(size=(5, 12))] * 4,
                                      [rng.normal(size=5)] * 4, 2.0, 1.0, 0.0, 0.0, 2, mu=mu)
        hval, A, norms = pb.huber_rows(W)
        exact = 2.0 * norms.sum()
        assert exact - 2.0 * 12 * mu / 2 - 1e-12 <= hval <= exact + 1e-12
        brute = sum(n * n / (2 * mu) if n <= mu else n - mu / 2 for n in norms) * 2.0
        assert hval == pytest.approx(brute, rel=1e-12)
        assert np.all(np.linalg.norm(A, axis=1) <= 2.0 + 1e-12)
        # finite-difference gradient
        E = rng.normal(size=W.shape)
        eps = 1e-7
        fd = (pb.huber_rows(W + eps * E)[0] - pb.huber_rows(W - eps * E)[0]) / (2 * eps)
        assert fd == pytest.approx(float(np.vdot(A, E)), rel=1e-5, abs=1e-6)
    for p, bound in ((2, 0.5), (math.inf, 0.5), (1, 0.5 * 7)):
        pb = robust_mtl._problem_from([np.eye(7)], [np.zeros(7)], 0.0, 1.0, 0.0, 0.0, p, mu=0.1)
        for scale in (1e-3, 0.05, 3.0):
            R = rng.normal(size=(1, 7)) * scale
            env, theta = pb.smooth_loss(R)
            exact = float(np.linalg.norm(R[0], p))
            assert exact - bound * 0.1 - 1e-12 <= env <= exact + 1e-12


# ----------------------------------------------------------------- the mu floor


def test_gap_floor_shrinks_with_mu_and_is_reported():
    Xs, ys, kw = _instance(0)
    floors = []
    for mu in (1e-1, 1e-2, 1e-3):
        with pytest.warns(ConvergenceWarning, match="smoothing floor"):
            res = robust_mtl.solve(Xs, ys, **kw, mu=mu, tol=1e-9, restart=True, method="dual")
        assert res.floor_reached and not res.converged
        assert res.smoothed_gap <= max(0.1 * 1e-9 * max(1, abs(res.primal)), 0.01 * res.floor)
        # the dual method's floor: lam sum_{||w_r|| < mu} ||w_r|| (1 - ||w_r||/mu) <= lam d mu / 4
        assert 0 < res.floor <= kw["lam"] * Xs[0].shape[1] * mu / 4 + 1e-12
        h = res.history
        assert h.primal_iterate[-1] - h.dual_iterate[-1] >= res.floor - 1e-12
        assert np.allclose(h.floor + h.smoothed_gap, h.primal_iterate - h.dual_iterate,
                           atol=1e-9 * abs(res.primal))
        floors.append(res.gap)
    assert floors[0] > floors[1] > floors[2]


def test_smoothing_baseline_pays_for_smoothing_the_l1_loss():
    """p = 1: smoothing the loss adds a floor the dual method does not have (the paper's point)."""
    Xs, ys, kw = _instance(4)
    d = _solve(Xs, ys, kw, mu=1e-2, tol=1e-9, restart=True, max_iter=300, method="dual")
    s = _solve(Xs, ys, kw, mu=1e-2, tol=1e-9, restart=True, method="smoothing")
    assert s.floor_reached
    assert s.floor > 3 * d.floor


# ----------------------------------------------------------------- the outer momentum


def test_outer_momentum_is_nonzero_and_extrapolates(monkeypatch):
    """Field note: a MATLAB code overwrote its previous iterate, so its momentum was zero."""
    seen = []

    class Spy(APG):
        def search_point(self):
            S = super().search_point()
            if not self.fixed_step:  # the outer loop on theta
                seen.append((self.beta, float(np.linalg.norm(S - self.x))))
            return S

    monkeypatch.setattr(robust_mtl, "APG", Spy)
    Xs, ys, kw = _instance(3)
    res = _solve(Xs, ys, kw, mu=1e-3, tol=1e-9, max_iter=12, method="dual")
    mom = res.history.momentum
    assert mom[0] == 0.0 and mom[1] == 0.0
    assert np.all(mom[2:] > 0.0)
    # plain FISTA coefficients (t_{k-1} - 1) / t_k, no restarts
    t = [1.0, 1.0]
    for _ in range(len(mom)):
        t.append(0.5 * (1 + np.sqrt(1 + 4 * t[-1] ** 2)))
    expected = [(t[k] - 1) / t[k + 1] for k in range(len(mom))]
    np.testing.assert_allclose(mom, expected, rtol=1e-12)
    assert len(seen) == len(mom)
    assert all(step > 0 for beta, step in seen[2:])  # the search point really moves


# ----------------------------------------------------------------- warm start, callback, budget


def test_warm_start_equals_cold_start():
    Xs, ys, kw = _instance(3)
    opts = {"mu": 1e-4, "tol": 1e-7, "method": "dual"}
    cold = _solve(Xs, ys, kw, **opts)
    prev = _solve(Xs, ys, dict(kw, lam=kw["lam"] * 1.3, rho=kw["rho"] * 0.7), **opts)
    warm = _solve(Xs, ys, kw, init=prev, **opts)
    assert warm.primal == pytest.approx(cold.primal, rel=1e-6)
    np.testing.assert_allclose(warm.W, cold.W, atol=np.sqrt(2 * (warm.gap + cold.gap)
                                                             / kw["gamma"]) + 1e-9)
    again = _solve(Xs, ys, kw, init=cold, **opts)
    assert again.n_iter <= 3 and again.primal == pytest.approx(cold.primal, rel=1e-6)
    opts["method"] = "smoothing"
    s_cold = _solve(Xs, ys, kw, restart=True, **opts)
    s_warm = _solve(Xs, ys, kw, init=s_cold, restart=True, **opts)
    assert s_warm.n_iter * 5 < s_cold.n_iter
    assert s_warm.primal == pytest.approx(s_cold.primal, rel=1e-7)


def test_warm_start_after_a_parameter_change_saves_work():
    # The dashboard's slider moves: a warm start must not cost more than a cold one (loose
    # first inner solves used to fail the outer line search and inflate its L).
    from explorer.models.robust_mtl import data

    pr = data.temporal_tasks(0, m=10, d=20, n=40)
    Xs, ys = pr.data["Xs"], pr.data["ys"]
    kw = {"gamma": 1.0, "zeta": 1.0, "rho": 3.0, "mu": 1e-4, "tol": 1e-5, "method": "dual"}
    prev = robust_mtl.solve(Xs, ys, lam=3.0, **kw)
    cold = robust_mtl.solve(Xs, ys, lam=2.0, **kw)
    warm = robust_mtl.solve(Xs, ys, lam=2.0, init=prev, **kw)
    assert cold.converged and warm.converged
    assert warm.inner_iterations < 0.8 * cold.inner_iterations
    assert warm.primal == pytest.approx(cold.primal, rel=2e-6)


def test_zero_targets_give_zero_weights_at_once():
    Xs, _, kw = _instance(1)
    ys = [np.zeros(X.shape[0]) for X in Xs]
    for method in robust_mtl.METHODS:
        res = robust_mtl.solve(Xs, ys, **kw, method=method)
        assert res.converged and res.n_iter == 1
        assert res.primal == 0.0 and res.gap == 0.0
        assert np.all(res.W == 0.0)


def test_lambda_max_zeroes_all_rows():
    """With rho = 0 and p = 2, W = 0 is optimal iff lam >= max_r ||(x_{r,i}^T y_i / ||y_i||)_i||."""
    Xs, ys, kw = _instance(0)
    kw = dict(kw, rho=0.0, p=2)
    V = np.column_stack([X.T @ (y / np.linalg.norm(y)) for X, y in zip(Xs, ys, strict=True)])
    lam_max = float(np.linalg.norm(V, axis=1).max())
    zero_value = sum(float(np.linalg.norm(y)) for y in ys)  # J(0)
    mu = 1e-6
    above = _solve(Xs, ys, dict(kw, lam=1.02 * lam_max), mu=mu, tol=1e-9, restart=True,
                   method="dual")
    # certified: J* >= dual >= J(0) - 1e-8 relative, so W = 0 is optimal; the smoothed
    # solution's rows are O(mu)
    assert zero_value * (1 - 1e-8) <= above.dual <= zero_value * (1 + 1e-12)
    assert np.linalg.norm(above.W, axis=1).max() <= mu
    below = _solve(Xs, ys, dict(kw, lam=0.9 * lam_max), mu=mu, tol=1e-9, restart=True,
                   method="dual")
    assert below.primal < zero_value - 1e-4
    assert np.linalg.norm(below.W, axis=1).max() > 1e-3


def test_callback_streams_and_can_stop():
    Xs, ys, kw = _instance(2)
    seen = []

    def cb(state):
        seen.append((state.iteration, state.iterate["W"].shape, len(state.iterate["theta"])))
        assert state.extras["inner_iters"] >= 1
        return state.iteration < 3

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = robust_mtl.solve(Xs, ys, **kw, tol=1e-12, callback=cb, method="dual")
    assert res.n_iter == 3 and not res.converged and not res.floor_reached
    assert [s[0] for s in seen] == [1, 2, 3]
    assert seen[0][1:] == ((Xs[0].shape[1], len(Xs)), len(Xs))


def test_max_iter_warns_and_history_has_the_extras():
    Xs, ys, kw = _instance(1)
    with pytest.warns(ConvergenceWarning, match="max_iter=4"):
        res = robust_mtl.solve(Xs, ys, **kw, mu=1e-5, tol=1e-12, max_iter=4, method="dual")
    assert not res.converged and res.n_iter == 4
    h = res.history
    for key in ("inner_iters", "inner_total", "inner_gap", "step", "L", "momentum",
                "n_backtracks", "smoothed_gap", "floor", "primal_iterate", "dual_iterate"):
        assert len(getattr(h, key)) == 4
    assert np.all(h.step == 1 / h.L) and np.all(h.inner_iters >= 1)
    with pytest.warns(ConvergenceWarning, match="max_iter=7"):
        res = robust_mtl.solve(Xs, ys, **kw, mu=1e-5, tol=1e-12, max_iter=7,
                               method="smoothing", check_every=3)
    assert list(res.history.iteration) == [1, 3, 6, 7]
    assert res.to_dict()["params"]["p"] in (1, 2, "inf")


def test_result_shapes_and_predict():
    Xs, ys, kw = _instance(5)
    res = _solve(Xs, ys, kw, mu=1e-3, tol=1e-5)
    assert res.W.shape == (Xs[0].shape[1], len(Xs))
    assert [t.shape[0] for t in res.theta] == [X.shape[0] for X in Xs]
    assert res.loss_norms.shape == (len(Xs),)
    preds = res.predict(Xs)
    for pr, X, y, i in zip(preds, Xs, ys, range(len(Xs)), strict=True):
        np.testing.assert_allclose(pr, X @ res.W[:, i])
        assert res.loss_norms[i] == pytest.approx(np.linalg.norm(pr - y, kw["p"]))


# ----------------------------------------------------------------- bad input

_rng = np.random.default_rng(0)
X0 = [_rng.normal(size=(6, 3)) for _ in range(3)]
Y0 = [_rng.normal(size=6) for _ in range(3)]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"gamma": 0.0}, ValueError, "gamma must be > 0"),
        ({"gamma": -1.0, "method": "dual"}, ValueError, "gamma must be > 0"),
        ({"gamma": -1.0, "method": "smoothing"}, ValueError, "gamma must be > 0"),
        ({"p": 3}, ValueError, "p must be 1, 2 or inf"),
        ({"p": 0.5}, ValueError, "p must be 1, 2 or inf"),
        ({"p": "two"}, TypeError, "p must be 1, 2 or inf"),
        ({"p": True}, TypeError, "p must be 1, 2 or inf"),
        ({"Xs": [*X0[:2], _rng.normal(size=(6, 4))]}, ValueError, "all tasks must share d"),
        ({"ys": [*Y0[:2], np.zeros(5)]}, ValueError, "ys\\[2\\] must have length 6"),
        ({"ys": Y0[:2]}, ValueError, "Xs has 3 tasks but ys has 2"),
        ({"Xs": []}, ValueError, "at least one task"),
        ({"Xs": [X0[0][:, 0], *X0[1:]]}, ValueError, "Xs\\[0\\] must be 2-dimensional"),
        ({"ys": [np.full(6, np.nan), *Y0[1:]]}, ValueError, "ys\\[0\\] contains"),
        ({"lam": -1.0}, ValueError, "lam must lie in"),
        ({"rho": -0.1}, ValueError, "rho must lie in"),
        ({"zeta": float("inf")}, ValueError, "zeta must be finite"),
        ({"mu": 0.0}, ValueError, "mu must lie in"),
        ({"method": "admm"}, ValueError, "method must be one of"),
        ({"tol": 0.0}, ValueError, "tol must lie in"),
        ({"max_iter": 0}, ValueError, "max_iter must be >= 1"),
        ({"check_every": -1}, ValueError, "check_every must be >= 0"),
        ({"max_svd": 0}, ValueError, "max_svd must be >= 1"),
        ({"restart": 1}, TypeError, "restart must be True or False"),
        ({"callback": 3}, TypeError, "callback must be callable"),
        ({"init": "warm"}, TypeError, "init must be a previous RobustMTLResult"),
    ],
)
def test_bad_input_raises_clear_errors(kwargs, exc, match):
    args = {"Xs": X0, "ys": Y0, "lam": 1.0, "gamma": 1.0, "zeta": 1.0, "rho": 1.0}
    args.update(kwargs)
    Xs, ys = args.pop("Xs"), args.pop("ys")
    with pytest.raises(exc, match=match):
        robust_mtl.solve(Xs, ys, **args)


def test_init_from_another_problem_is_rejected():
    res = _solve(X0, Y0, {"lam": 1.0, "gamma": 1.0, "zeta": 1.0, "rho": 1.0}, tol=1e-3)
    with pytest.raises(ValueError, match="init does not match"):
        robust_mtl.solve([X[:, :2] for X in X0], Y0, init=res)
    with pytest.raises(ValueError, match="init does not match"):
        robust_mtl.solve([X[:5] for X in X0], [y[:5] for y in Y0], init=res)


def test_public_functions_validate_too():
    kw = {"lam": 1.0, "gamma": 1.0, "zeta": 1.0, "rho": 1.0}
    with pytest.raises(ValueError, match="W must have 3 rows"):
        robust_mtl.primal_objective(np.zeros((4, 3)), X0, Y0, **kw)
    with pytest.raises(ValueError, match="gamma must be > 0"):
        robust_mtl.primal_objective(np.zeros((3, 3)), X0, Y0, **dict(kw, gamma=0.0))
    with pytest.raises(ValueError, match="theta must have one vector per task"):
        robust_mtl.dual_objective([np.zeros(6)] * 2, None, None, X0, Y0, **kw)
    with pytest.raises(ValueError, match="p must be 1, 2 or inf"):
        robust_mtl.project_dual([np.zeros(3)], p=4)
    with pytest.raises(ValueError, match="p must be 1, 2 or inf"):
        ref.solve(X0, Y0, **kw, p=1.5)


# ----------------------------------------------------------------- data and registry


def test_temporal_generator_has_the_promised_structure():
    from explorer.models.robust_mtl import data

    pr = data.temporal_tasks(3, m=15, d=20, n=25, rank=2, active=0.25, outliers=0.1)
    W = pr.info["W_true"]
    assert len(pr.data["Xs"]) == 15 and pr.data["Xs"][0].shape == (25, 20)
    assert np.linalg.matrix_rank(W, tol=1e-8) == 2
    assert set(np.nonzero(np.linalg.norm(W, axis=1))[0]) == set(pr.info["active_rows"])
    assert len(pr.info["active_rows"]) == 5
    drift = np.linalg.norm(np.diff(W, axis=1), axis=0).mean()
    assert drift < 0.5 * np.linalg.norm(W, axis=0).mean()  # smooth in time
    assert pr.info["sigmas"].min() >= 0.1 and pr.info["sigmas"].max() <= 1.0
    assert sum(mk.sum() for mk in pr.info["outlier_masks"]) > 0
    dia = data.diabetes_in_time(m=5)
    assert sum(X.shape[0] for X in dia.data["Xs"]) == 442
    assert "illustration" in dia.description


def test_registry_entry_solves_the_default_problem():
    from explorer.registry import get

    e = get("robust_mtl")
    prob = e.datasets["temporal"](m=5, d=8, n=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = e.solve(prob, tol=1e-5, max_iter=e.max_iter, **e.default_params())
        res_inf = e.solve(prob, tol=1e-5, max_iter=e.max_iter,
                          **dict(e.default_params(), p=e.param("p").parse("inf")))
    assert res.gap >= 0 and res_inf.params["p"] == "inf"
    assert e.reference_refusal(prob) is None
    assert e.reference_refusal(e.datasets["temporal"](m=50, d=200, n=100)) is not None


# ----------------------------------------------------------------- the floor-free default


def _q_norm(t, p):
    return float(np.linalg.norm(t, {2: 2, 1: np.inf, math.inf: 1}[p]))


@pytest.mark.parametrize("seed", range(24))
def test_exact_dual_agrees_with_cvxpy_and_its_certificate_is_true(seed):
    """24 instances: p in {1, 2, inf}, with rho = 0, zeta = 0, lam = 0 and all three = 0."""
    Xs, ys, kw = _instance(seed)
    r = _ref(seed)
    seen = []

    def cb(state):
        seen.append(dict(state.iterate))

    res = robust_mtl.solve(Xs, ys, **kw, tol=1e-9, callback=cb)
    assert res.method == "exact_dual" and res.converged and res.stop_reason == "converged"
    opt = r.value
    assert abs(res.primal - opt) <= 1e-6 * max(1.0, abs(opt))
    # the reported gap is a true bound: primal - optimum <= gap, dual <= optimum
    assert res.primal - opt <= res.gap + 1e-9 * max(1.0, abs(opt))
    _assert_against_reference(res, r, Xs, ys, kw)
    # the certificate's dual point is exactly feasible at every recorded iteration
    assert len(seen) == len(res.history) >= 1
    for it in seen:
        assert max(_q_norm(t, kw["p"]) for t in it["theta"]) <= 1.0 + 1e-12
        assert np.linalg.norm(it["A"], axis=1).max() <= kw["lam"] * (1 + 1e-12)
        assert np.linalg.norm(it["B"], 2) <= kw["rho"] * (1 + 1e-12) + 1e-300
        if kw["lam"] == 0.0:
            assert np.all(it["A"] == 0.0)
        if kw["rho"] == 0.0:
            assert np.all(it["B"] == 0.0)


@pytest.mark.parametrize("outliers", [0.0, 0.1])
@pytest.mark.parametrize("p", PS)
def test_exact_dual_reaches_1e8_on_the_temporal_data(p, outliers):
    from explorer.models.robust_mtl import data

    pr = data.temporal_tasks(1, m=6, d=10, n=30, outliers=outliers)
    res = robust_mtl.solve(pr.data["Xs"], pr.data["ys"], p=p, tol=1e-8)
    assert res.converged and res.rel_gap <= 1e-8 and res.floor == 0.0
    assert res.history.iteration[-1] == res.n_iter
    assert res.inner_iterations == res.history.inner_total[-1]


def test_exact_dual_warm_start_equals_cold_start():
    Xs, ys, kw = _instance(3)
    cold = robust_mtl.solve(Xs, ys, **kw, tol=1e-9)
    prev = robust_mtl.solve(Xs, ys, **dict(kw, lam=kw["lam"] * 1.3, rho=kw["rho"] * 0.7),
                            tol=1e-9)
    warm = robust_mtl.solve(Xs, ys, **kw, tol=1e-9, init=prev)
    assert cold.converged and warm.converged
    assert warm.primal == pytest.approx(cold.primal, rel=2e-9)
    radius = np.sqrt(2 * (warm.gap + cold.gap) / kw["gamma"])
    np.testing.assert_allclose(warm.W, cold.W, atol=radius + 1e-12)
    again = robust_mtl.solve(Xs, ys, **kw, tol=1e-9, init=cold)
    assert again.n_iter == 1 and again.primal == pytest.approx(cold.primal, rel=2e-9)
    # a warm start from the paper's method works too (same dual blocks)
    d = _solve(Xs, ys, kw, method="dual", mu=1e-4, tol=1e-6)
    from_dual = robust_mtl.solve(Xs, ys, **kw, tol=1e-9, init=d)
    assert from_dual.converged and from_dual.primal == pytest.approx(cold.primal, rel=2e-9)


@pytest.mark.parametrize("method", ["dual", "smoothing"])
def test_tiny_mu_is_bounded_by_the_svd_budget(method):
    Xs, ys, kw = _instance(0)
    with pytest.warns(ConvergenceWarning, match="max_svd"):
        res = robust_mtl.solve(Xs, ys, **kw, mu=1e-12, tol=1e-8, method=method, max_svd=3000)
    assert res.stop_reason in ("budget", "floor") and not res.converged
    assert res.inner_iterations <= 3000 + 10
    with pytest.warns(ConvergenceWarning, match="50 SVDs"):
        res = robust_mtl.solve(Xs, ys, **kw, tol=1e-12, max_svd=50, check_every=7)
    assert res.stop_reason == "budget" and res.inner_iterations <= 60


def test_params_are_declared_once():
    import inspect

    sig = inspect.signature(robust_mtl.solve)
    for name, spec in robust_mtl.PARAMS.items():
        assert sig.parameters[name].default == spec.default, name
    assert robust_mtl.METHODS == robust_mtl.PARAMS["method"].choices
    assert robust_mtl.PARAMS.default("method") == "exact_dual"
    res = robust_mtl.solve(X0, Y0, tol=1e-6)
    assert set(res.params) <= set(robust_mtl.PARAMS)
    from explorer.registry import get

    e = get("robust_mtl")
    for prm in e.params:
        assert prm.spec is robust_mtl.PARAMS[prm.name] and prm.default == prm.spec.default


def test_huge_data_and_wrong_predict_shapes_raise_value_errors():
    with pytest.raises(ValueError, match=r"Xs\[1\] has an entry of magnitude"):
        robust_mtl.solve([[[0.0]], [[1e300]]], [[0.0], [0.0]])
    with pytest.raises(ValueError, match=r"ys\[0\] has an entry of magnitude"):
        robust_mtl.solve([[[1.0]]], [[1e300]])
    res = robust_mtl.solve(X0, Y0, tol=1e-6)
    with pytest.raises(ValueError, match=r"Xs\[0\] must have 3 columns"):
        res.predict([x[:, :2] for x in X0])


@pytest.mark.parametrize("equal", [True, False])
def test_spectral_norms_match_the_svd(equal):
    rng = np.random.default_rng(3)
    d = 7
    ns = [5, 5, 5, 5] if equal else [3, 7, 12, 1]  # n < d, n = d, n > d, one row
    Xs = [rng.normal(size=(n, d)) * 10.0 ** rng.uniform(-3, 3) for n in ns]
    Xs[1] = np.zeros_like(Xs[1])  # all-zero task
    X3 = np.stack(Xs) if equal else None
    got = robust_mtl._spectral_norms(Xs, X3)
    want = np.array([np.linalg.norm(X, 2) for X in Xs])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0.0)
    ys = [rng.normal(size=n) for n in ns]
    pb = robust_mtl._Problem(Xs, ys, 1.0, 1.0, 1.0, 1.0, 2.0, 1e-3)
    assert pb.snorm[1] == 1.0 and pb.xnorm2 == pytest.approx(want.max() ** 2, rel=1e-12)
