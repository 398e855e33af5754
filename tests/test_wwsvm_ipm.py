"""Weston–Watkins SVM, method="ipm" (primal interior point): cvxpy agreement, certificates."""

import numpy as np
import pytest
import scipy.sparse as sp

from explorer.models.wwsvm.data import blobs
from solvers import wwsvm
from solvers.reference import wwsvm as ref


@pytest.mark.parametrize("seed", range(8))
def test_ipm_matches_cvxpy_and_certifies_every_iterate(seed):
    rng = np.random.default_rng(seed)
    n, d, k = int(rng.integers(30, 90)), int(rng.integers(1, 6)), int(rng.integers(2, 6))
    C = float(10 ** rng.uniform(-2, 2))
    X = rng.normal(size=(n, d)) * rng.choice([0.1, 1.0, 10.0])
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    if seed % 3 == 1:
        X[rng.choice(n, 3, replace=False)] = 0.0  # zero rows
    intercept = seed % 2 == 1
    Xin = sp.csr_matrix(X) if seed % 4 == 3 else X
    r = ref.solve(Xin, y, C, fit_intercept=intercept)
    res = wwsvm.solve(Xin, y, C, method="ipm", tol=1e-9, fit_intercept=intercept)
    assert res.converged and res.method == "ipm"
    scale = 1e-7 * max(1.0, abs(r.value))
    assert res.primal == pytest.approx(r.value, rel=1e-6, abs=1e-8)
    # the certificate is a true bound at every iterate: [dual, primal] contains the optimum
    h = res.history
    assert np.all(h.dual <= r.value + scale) and np.all(h.primal >= r.value - scale)
    # the reported W and alpha give the reported values
    Xb = np.hstack([X, np.ones((n, 1))]) if intercept else X
    Wb = np.vstack([res.W, res.intercept]) if intercept else res.W
    assert wwsvm.primal_objective(Wb, Xb, y, C) == pytest.approx(res.primal, rel=1e-10)
    assert wwsvm.dual_objective(res.alpha, Xb, y, C) == pytest.approx(res.dual, rel=1e-9,
                                                                        abs=1e-10)


@pytest.mark.parametrize("C", [3.7, 100.0])
def test_ipm_converges_on_overlapping_classes_at_large_C(C):
    prob = blobs(seed=0, n=400, k=4, d=2, spread=2.0)
    X, y = prob.data["X"], prob.data["y"]
    res = wwsvm.solve(X, y, C, method="ipm", tol=1e-8)
    assert res.converged and res.n_iter <= 60
    auto = wwsvm.solve(X, y, C, method="auto", tol=1e-8)
    assert auto.method == "ipm" and auto.primal == pytest.approx(res.primal, rel=1e-7)


def test_ipm_callback_stop_and_limits():
    prob = blobs(seed=1, n=200, k=3, d=2)
    X, y = prob.data["X"], prob.data["y"]
    seen = []
    res = wwsvm.solve(X, y, 1.0, method="ipm", tol=1e-12,
                      callback=lambda st: seen.append(st.iterate["W"].shape) or len(seen) < 3)
    assert res.stop_reason == "callback" and res.n_iter == 3 and seen[0] == (2, 3)
    with pytest.raises(ValueError, match="method='ipm' needs"):
        wwsvm.solve(np.zeros((10, 1001)) + 1.0, np.arange(10) % 3, method="ipm")
    assert wwsvm.solve(np.ones((10, 40)), np.arange(10) % 3, method="auto",
                       stopping="gap_ratio", ratio=0.5).method == "walrus"


def test_solve_ipm_is_the_ipm_method_with_its_own_parameters():
    import inspect

    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 4))
    y = rng.integers(0, 3, size=120)
    a = wwsvm.solve_ipm(X, y, C=3.0, tol=1e-8, fit_intercept=True)
    b = wwsvm.solve(X, y, C=3.0, tol=1e-8, fit_intercept=True, method="ipm")
    assert a.method == "ipm" and a.converged
    np.testing.assert_array_equal(a.W, b.W)
    np.testing.assert_array_equal(a.history.gap, b.history.gap)
    honoured = set(inspect.signature(wwsvm.solve_ipm).parameters)
    assert not honoured & {"seed", "shrinking", "accelerate", "init", "method"}
