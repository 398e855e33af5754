"""WW-SVM ``method="catalyst"``: Walrus epochs inside Catalyst's proximal point.

Cross-checked against cvxpy (dense and sparse, separable and overlapping classes, small
and large C, a subset of the real Debian text set); the certificate is a true bound;
the change of variables that lets the compiled epochs run on the proximal problems is
checked against ``W(alpha)`` computed from scratch; warm start reaches the cold
start's optimum."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import ConvergenceWarning, wwsvm
from solvers.reference import wwsvm as ref


def _instance(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(40, 140))
    d = int(rng.integers(2, 9))
    k = int(rng.integers(2, 6))
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    spread = [0.5, 1.5, 3.0][seed % 3]  # separable to heavily overlapping
    X = rng.normal(size=(k, d))[y] * 1.5 + spread * rng.normal(size=(n, d))
    C = float(10.0 ** rng.uniform(-1.5, 2))
    return X, y, C


def _sparse_instance(seed, n=90, d=30, k=4):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=0.15, random_state=seed, format="csr",
                  data_rvs=rng.standard_normal).toarray()
    X[rng.choice(n, 3, replace=False)] = 0.0  # zero rows: their block sits at C
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    return X, y


@pytest.mark.parametrize("seed", range(12))
def test_agrees_with_cvxpy_and_gap_is_a_true_bound(seed):
    X, y, C = _instance(seed)
    res = wwsvm.solve(X, y, C, method="catalyst", tol=1e-9, max_iter=200_000)
    assert res.converged and res.method == "catalyst"
    assert res.params["method"] == "catalyst"
    opt = ref.solve(X, y, C).value
    scale = max(1.0, abs(opt))
    assert res.primal == pytest.approx(opt, rel=1e-6)
    assert res.dual <= opt + 1e-7 * scale and opt <= res.primal + 1e-7 * scale
    assert res.gap <= 1e-9 * max(1.0, abs(res.primal))
    # the reported figures are the objectives of the returned points, the original
    # problem's (not the proximal problems')
    assert wwsvm.primal_objective(res.W, X, y, C) == pytest.approx(res.primal, rel=1e-12)
    assert wwsvm.dual_objective(res.alpha, X, y, C) == pytest.approx(res.dual, rel=1e-12,
                                                                     abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_sparse_equals_dense_and_matches_cvxpy(seed):
    X, y = _sparse_instance(seed)
    C = [0.3, 3.0, 30.0, 1.0][seed]
    dense = wwsvm.solve(X, y, C, method="catalyst", tol=1e-9, max_iter=200_000)
    sparse = wwsvm.solve(sp.csr_matrix(X), y, C, method="catalyst", tol=1e-9,
                         max_iter=200_000)
    assert dense.converged and sparse.converged
    opt = ref.solve(sp.csr_matrix(X), y, C).value
    scale = max(1.0, abs(opt))
    for res in (dense, sparse):
        assert res.dual <= opt + 1e-7 * scale and opt <= res.primal + 1e-7 * scale
        assert res.primal == pytest.approx(opt, rel=1e-6)
    assert sparse.primal == pytest.approx(dense.primal, rel=1e-8)
    np.testing.assert_allclose(sparse.W, dense.W,
                               atol=np.sqrt(2 * (sparse.gap + dense.gap)) + 1e-9)
    assert wwsvm.dual_objective(sparse.alpha, X, y, C) == pytest.approx(sparse.dual,
                                                                        rel=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_every_certificate_is_a_true_bound(sparse):
    """Each history row brackets the optimum, at every budget (also when the run stops
    on ``max_iter``)."""
    X, y = _sparse_instance(7)
    Xin = sp.csr_matrix(X) if sparse else X
    C = 20.0
    opt = ref.solve(X, y, C).value
    for budget in (1, 2, 7, 40):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res = wwsvm.solve(Xin, y, C, method="catalyst", tol=1e-12, max_iter=budget)
        h = res.history
        assert np.all(h.dual <= opt + 1e-9 * abs(opt))
        assert np.all(h.primal >= opt - 1e-9 * abs(opt))
        assert np.all(np.diff(h.primal) <= 0.0)  # the best candidates so far
        assert np.all(np.diff(h.dual) >= -1e-12 * abs(opt))
        assert wwsvm.primal_objective(res.W, X, y, C) == pytest.approx(res.primal,
                                                                       rel=1e-12)
        assert wwsvm.dual_objective(res.alpha, X, y, C) == pytest.approx(res.dual,
                                                                         rel=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_proximal_change_of_variables(sparse):
    """After epochs and extrapolations, ``(1 + kappa) W - kappa Z`` is ``W(alpha)``
    computed from scratch, and the epochs ascend the proximal problem's dual
    ``sum alpha - (1 + kappa)/2 ||W||^2 + kappa/2 ||Z||^2`` (BCD is exact ascent)."""
    X, y = _sparse_instance(3)
    Xin = sp.csr_matrix(X) if sparse else X
    cat = wwsvm._Catalyst(Xin, y, 4, 2.0, 0, True, np.zeros((X.shape[0], 4)))
    kappa = cat.kappa

    def inner_dual():
        W = cat.Vt / cat.s
        return cat.A.sum() - 0.5 * (1 + kappa) * np.sum(W * W) + 0.5 * kappa * np.sum(
            cat.Zt * cat.Zt)

    for outer in range(1, 5):
        before = inner_dual()
        for _ in range(3):
            cat.sweep()
            after = inner_dual()
            assert after >= before - 1e-12 * max(1.0, abs(before))
            before = after
        p_iter = cat.iterate(outer)
        primal, dual, counts = cat.certify(outer, outer)
        U = wwsvm.weights_from_dual(cat.A, X, y)
        np.testing.assert_allclose(((1 + kappa) * cat.Wt - kappa * cat.Zt).T, U,
                                   atol=1e-10 * max(1.0, np.abs(U).max()))
        # the reported dual is the best alpha_t's: its own value, at least the current's
        assert dual == pytest.approx(wwsvm.dual_objective(cat.A_best, X, y, 2.0), rel=1e-10)
        assert dual >= wwsvm.dual_objective(cat.A, X, y, 2.0) - 1e-10 * abs(dual)
        assert p_iter == pytest.approx(wwsvm.primal_objective(cat.Wt.T, X, y, 2.0),
                                       rel=1e-12)
        assert sum(counts) == X.shape[0] * 3
        assert counts == wwsvm._certificate(cat.Wt, cat.A, Xin, y, 2.0)[2]
        # the best primal is a candidate's own value, at most the iterate's
        assert primal <= p_iter
        assert primal == pytest.approx(
            wwsvm.primal_objective(cat.best.current(), X, y, 2.0), rel=1e-12)
        cat.extrapolate(p_iter)


def test_warm_start_equals_cold_start():
    X, y, _ = _instance(4)
    cold = wwsvm.solve(X, y, 5.0, method="catalyst", tol=1e-10, max_iter=200_000)
    prev = wwsvm.solve(X, y, 2.0, method="catalyst", tol=1e-10, max_iter=200_000)
    warm = wwsvm.solve(X, y, 5.0, method="catalyst", tol=1e-10, max_iter=200_000,
                       init=prev)
    assert warm.converged and cold.converged
    assert warm.primal == pytest.approx(cold.primal, rel=1e-9)
    np.testing.assert_allclose(warm.W, cold.W, atol=np.sqrt(2 * (warm.gap + cold.gap)) + 1e-9)
    # the Walrus optimum is a warm start too (same dual variables)
    walrus = wwsvm.solve(X, y, 5.0, method="walrus", tol=1e-10, max_iter=200_000)
    again = wwsvm.solve(X, y, 5.0, method="catalyst", tol=1e-10, max_iter=200_000,
                        init=walrus)
    assert again.primal == pytest.approx(cold.primal, rel=1e-9)
    assert again.n_iter < cold.n_iter


def test_paper_stopping_rule_and_reproducibility():
    X, y, _ = _instance(5)
    res = wwsvm.solve(X, y, 3.0, method="catalyst", stopping="gap_ratio", ratio=0.01,
                      max_iter=100_000)
    assert res.converged and res.gap <= 0.01 * res.history.gap[0] * (1 + 1e-12)
    a = wwsvm.solve(X, y, 3.0, method="catalyst", seed=4, tol=1e-8, max_iter=100_000)
    b = wwsvm.solve(X, y, 3.0, method="catalyst", seed=4, tol=1e-8, max_iter=100_000)
    np.testing.assert_array_equal(a.alpha, b.alpha)


@pytest.mark.parametrize("sparse", [False, True])
def test_intercept_matches_cvxpy(sparse):
    rng = np.random.default_rng(31)
    n, d, k = 90, 4, 3
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + 2.0 * y[:, None] + 3.0  # offsets matter
    Xin = sp.csr_matrix(X) if sparse else X
    r = ref.solve(Xin, y, 4.0, fit_intercept=True, intercept_scaling=2.0)
    s = wwsvm.solve(Xin, y, 4.0, method="catalyst", fit_intercept=True, intercept_scaling=2.0,
                    tol=1e-9, max_iter=200_000)
    assert s.converged and s.method == "catalyst"
    assert s.dual - 1e-6 * abs(r.value) <= r.value <= s.primal + 1e-6 * abs(r.value)
    np.testing.assert_allclose(s.intercept, r.intercept, atol=2e-3)
    Xb = np.hstack([X, np.full((n, 1), 2.0)])
    Wb = np.vstack([s.W, s.intercept / 2.0])
    assert wwsvm.primal_objective(Wb, Xb, y, 4.0) == pytest.approx(s.primal, rel=1e-10)
    assert wwsvm.dual_objective(s.alpha, Xb, y, 4.0) == pytest.approx(s.dual, rel=1e-10)


def test_callback_sees_certified_iterates_and_can_stop():
    X, y, C = _instance(6)
    seen = []

    def cb(state):
        W, alpha = state.iterate["W"], state.iterate["alpha"]
        seen.append((wwsvm.primal_objective(W, X, y, C), wwsvm.dual_objective(alpha, X, y, C),
                     state.primal, state.dual))
        return len(seen) < 3

    res = wwsvm.solve(X, y, C, method="catalyst", tol=1e-12, max_iter=10_000, callback=cb)
    assert res.stop_reason == "callback" and not res.converged and len(seen) == 3
    for p_w, d_a, primal, dual in seen:  # the figures are those of the iterates shown
        assert p_w == pytest.approx(primal, rel=1e-12)
        assert d_a == pytest.approx(dual, rel=1e-9, abs=1e-9)


@pytest.fixture(scope="module")
def debian_subset():
    """The first 200 rows of the Debian-sections train part (real sparse text, 24
    sections), restricted to the 621 words they use."""
    from sklearn.datasets import load_svmlight_file

    from explorer.benchkit import debian_path

    path = debian_path()
    assert path is not None, "the Debian file (../shared/data) is missing"
    X, y = load_svmlight_file(path)
    X, y = X.tocsr()[:200], y[:200]
    return X[:, np.flatnonzero(np.diff(X.tocsc().indptr))], y


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_debian_subset_against_cvxpy(debian_subset, C):
    """Catalyst and Walrus on real text agree with cvxpy, each certificate a true bound."""
    X, y = debian_subset
    opt = ref.solve(X, y, C).value
    for method in ("catalyst", "walrus"):
        res = wwsvm.solve(X, y, C, method=method, tol=1e-9, max_iter=100_000)
        assert res.converged and res.method == method
        assert res.dual <= opt + 1e-7 * opt and opt <= res.primal + 1e-7 * opt
        assert res.primal == pytest.approx(opt, rel=1e-7)
        assert wwsvm.primal_objective(res.W, X, y, C) == pytest.approx(res.primal, rel=1e-12)


def _overlapping(seed, n=240, d=36, k=4):
    """Random labels in 36 dimensions: beyond ``ipm``'s size, Walrus's tail is slow."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    return X, y


@pytest.mark.parametrize("seed", range(4))
def test_auto_switches_to_catalyst_on_a_slow_tail(seed):
    """``auto`` runs Walrus, hands its alpha to Catalyst at a slow tail, names the epoch,
    and stays a certified run: every history row a true bound, the gap never growing,
    the optimum cvxpy's."""
    X, y = _overlapping(seed)
    C = [1.0, 10.0, 3.0, 0.3][seed]
    res = wwsvm.solve(X, y, C, method="auto", tol=1e-8, max_iter=200_000)
    assert res.converged and res.params["method"] == "auto"
    assert res.method.startswith("walrus+catalyst@")
    at = int(res.method.rsplit("@", 1)[1])
    h = res.history
    assert at in h.iteration and h.iteration[-1] > at
    assert np.all(np.diff(h.iteration) > 0)
    opt = ref.solve(X, y, C).value
    scale = max(1.0, abs(opt))
    assert res.primal == pytest.approx(opt, rel=1e-7)
    assert np.all(h.dual <= opt + 1e-7 * scale) and np.all(h.primal >= opt - 1e-7 * scale)
    assert np.all(np.diff(h.gap) <= 1e-10 * scale)
    assert wwsvm.primal_objective(res.W, X, y, C) == pytest.approx(res.primal, rel=1e-12)
    assert wwsvm.dual_objective(res.alpha, X, y, C) == pytest.approx(res.dual, rel=1e-12)
    # the epochs before the switch are Walrus's own, bit for bit
    with pytest.warns(ConvergenceWarning):
        walrus = wwsvm.solve(X, y, C, method="walrus", tol=1e-8, max_iter=at)
    np.testing.assert_array_equal(walrus.history.gap, h.gap[h.iteration <= at])


def test_auto_stays_with_walrus_when_its_tail_is_fast():
    rng = np.random.default_rng(0)
    k, d = 5, 40
    y = np.arange(400) % k
    X = 6.0 * rng.normal(size=(k, d))[y] + rng.normal(size=(400, d))
    res = wwsvm.solve(X, y, 1.0, method="auto", tol=1e-8)
    assert res.converged and res.method == "walrus"


def test_auto_switch_keeps_max_iter_callback_and_warm_start():
    X, y = _overlapping(1)
    with pytest.warns(ConvergenceWarning):
        short = wwsvm.solve(X, y, 10.0, method="auto", tol=1e-12, max_iter=60)
    assert short.method.startswith("walrus+catalyst@") and short.n_iter == 60
    assert short.stop_reason == "max_iter"
    seen = []
    stopped = wwsvm.solve(X, y, 10.0, method="auto", tol=1e-12, max_iter=10_000,
                          callback=lambda st: seen.append(st.iteration) or st.iteration < 40)
    assert stopped.stop_reason == "callback" and stopped.method.startswith("walrus+catalyst")
    assert seen[-1] >= 40 and stopped.n_iter == seen[-1]
    cold = wwsvm.solve(X, y, 10.0, method="auto", tol=1e-9, max_iter=200_000)
    prev = wwsvm.solve(X, y, 3.0, method="auto", tol=1e-9, max_iter=200_000)
    warm = wwsvm.solve(X, y, 10.0, method="auto", tol=1e-9, max_iter=200_000, init=prev)
    assert cold.converged and warm.converged
    assert warm.primal == pytest.approx(cold.primal, rel=2e-9)
