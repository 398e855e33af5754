"""Weston–Watkins SVM: scipy.sparse input (same results as dense, zero rows, formats), intercept."""

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import wwsvm
from solvers.reference import wwsvm as ref


def _instance(seed, n=120, d=40, k=4, density=0.15, zero_rows=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, d, density=density, random_state=seed, format="csr",
                  data_rvs=rng.standard_normal)
    X = X.toarray()
    X[rng.choice(n, zero_rows, replace=False)] = 0.0
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k)
    return X, y


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("C", [0.1, 3.0])
def test_sparse_equals_dense(seed, C):
    X, y = _instance(seed)
    dense = wwsvm.solve(X, y, C, tol=1e-9, max_iter=20_000)
    fmt = ["csr", "csc", "coo"][seed % 3]
    sparse = wwsvm.solve(sp.csr_matrix(X).asformat(fmt), y, C, tol=1e-9, max_iter=20_000)
    assert dense.converged and sparse.converged
    assert sparse.primal == pytest.approx(dense.primal, rel=1e-8)
    assert sparse.gap <= 1e-9 * max(1.0, abs(sparse.primal))
    np.testing.assert_allclose(sparse.W, dense.W, atol=1e-4 * max(1.0, np.abs(dense.W).max()))
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(X)), sparse.predict(X))


@pytest.mark.parametrize("seed", range(3))
def test_sparse_matches_cvxpy(seed):
    X, y = _instance(10 + seed, n=80, d=25)
    Xs = sp.coo_matrix(X)
    r = ref.solve(Xs, y, 1.0)
    s = wwsvm.solve(Xs, y, 1.0, tol=1e-9)
    assert s.dual - 1e-6 * abs(r.value) <= r.value <= s.primal + 1e-6 * abs(r.value)
    assert s.primal == pytest.approx(r.value, rel=1e-5)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_zero_rows_and_index_dtypes(index_dtype):
    X, y = _instance(3, zero_rows=8)
    zero = ~np.any(X != 0, axis=1)
    coo = sp.coo_matrix(X)
    # an explicitly stored zero keeps a row all-zero
    Xs = sp.coo_matrix((np.append(coo.data, 0.0), (np.append(coo.row, np.flatnonzero(zero)[0]),
                                                    np.append(coo.col, 0))), shape=X.shape)
    Xs = Xs.tocsr()
    assert Xs.nnz == coo.nnz + 1
    Xs.indices = Xs.indices.astype(index_dtype)
    Xs.indptr = Xs.indptr.astype(index_dtype)
    res = wwsvm.solve(Xs, y, 2.0, tol=1e-9)
    assert res.converged and np.isfinite(res.primal) and np.isfinite(res.dual)
    # a zero row's block sits at C: its hinge terms are 1 whatever W is
    mask = np.ones_like(res.alpha, dtype=bool)
    mask[np.arange(len(y)), y] = False
    assert np.all(res.alpha[zero][mask[zero]] == 2.0)
    assert res.primal == pytest.approx(wwsvm.solve(X, y, 2.0, tol=1e-9).primal, rel=1e-8)


def test_sparse_warm_start_and_bad_input():
    X, y = _instance(4)
    Xs = sp.csr_array(X)
    cold = wwsvm.solve(Xs, y, 4.0, tol=1e-9, max_iter=20_000)
    warm = wwsvm.solve(Xs, y, 4.0, tol=1e-9, max_iter=20_000,
                       init=wwsvm.solve(Xs, y, 2.0, tol=1e-6, max_iter=20_000))
    assert warm.primal == pytest.approx(cold.primal, rel=1e-8)
    bad = sp.csr_matrix(X)
    bad.data[0] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN"):
        wwsvm.solve(bad, y)
    with pytest.raises(ValueError, match="X must have 40 columns"):
        cold.predict(sp.csr_matrix(X[:, :10]))


# ----------------------------------------------------------------- intercept


@pytest.mark.parametrize("seed", range(4))
def test_intercept_matches_cvxpy(seed):
    rng = np.random.default_rng(20 + seed)
    n, d, k = 90, 4, 3
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, d)) + 2.0 * y[:, None] + 3.0  # offsets matter
    scaling = [1.0, 3.0][seed % 2]
    Xin = sp.csr_matrix(X) if seed >= 2 else X
    r = ref.solve(Xin, y, 1.0, fit_intercept=True, intercept_scaling=scaling)
    s = wwsvm.solve(Xin, y, 1.0, fit_intercept=True, intercept_scaling=scaling, tol=1e-9,
                    max_iter=20_000)
    assert s.converged
    assert s.dual - 1e-6 * abs(r.value) <= r.value <= s.primal + 1e-6 * abs(r.value)
    np.testing.assert_allclose(s.intercept, r.intercept, atol=1e-3 * scaling)
    # the certificate is the paper's on the augmented samples (x_i, scaling)
    Xb = np.hstack([X, np.full((n, 1), scaling)])
    Wb = np.vstack([s.W, s.intercept / scaling])
    assert wwsvm.primal_objective(Wb, Xb, y, 1.0) == pytest.approx(s.primal, rel=1e-10)
    assert wwsvm.dual_objective(s.alpha, Xb, y, 1.0) == pytest.approx(s.dual, rel=1e-10)
    np.testing.assert_allclose(s.decision_function(Xin), X @ s.W + s.intercept, atol=1e-10)
    # without the intercept the offsets are zero
    assert np.all(wwsvm.solve(Xin, y, 1.0, stopping="gap_ratio", ratio=0.5).intercept == 0.0)


def test_decision_regions_show_the_intercept():
    from explorer.models.wwsvm.figures import decision_regions

    rng = np.random.default_rng(0)
    y = np.arange(60) % 3
    X = rng.normal(size=(60, 2)) + np.array([[5.0, 5.0], [6.0, 8.0], [9.0, 5.0]])[y]
    res = wwsvm.solve(X, y, 1.0, fit_intercept=True, tol=1e-8, max_iter=20_000)
    fig = decision_regions(res.W, X, y, res.alpha, intercept=res.intercept, resolution=40)
    Z = np.asarray(fig.data[0].z)
    G = np.stack(np.meshgrid(fig.data[0].x, fig.data[0].y), axis=-1).reshape(-1, 2)
    np.testing.assert_array_equal(Z.ravel(), res.predict(G))
    assert "with offsets" in fig.layout.title.text.replace("<br>", " ")
    # all three classes own a region (without offsets, far from the origin, they need not)
    assert set(np.unique(Z)) == {0, 1, 2}


def test_sweep_hooks_keep_sparse_data_sparse():
    from explorer.models.wwsvm.sweep import HOOKS as sweep
    from explorer.registry import Problem

    X, y = _instance(5)
    prob = Problem(data={"X": sp.csr_matrix(X), "y": y}, name="sparse", description="")
    fold = sweep.split(prob, 4, 1)
    assert sp.issparse(fold.data["X"]) and sp.issparse(fold.info["X_test"])
    res = wwsvm.solve(fold.data["X"], fold.data["y"], 1.0, fit_intercept=True)
    dense = sweep.split(Problem(data={"X": X, "y": y}, name="d", description=""), 4, 1)
    assert sweep.score(fold, res).value == sweep.score(dense, res).value
    assert sweep.score(fold, res).value == np.mean(res.predict(fold.info["X_test"])
                                                   == fold.info["y_test"])


@pytest.mark.parametrize("seed", range(4))
def test_sparse_epoch_layout_matches_dense_epoch(seed):
    # the sparse epoch keeps W as d x k; a few epochs from the same alpha and order
    # must give the dense epoch's alpha and W (rounding aside), zero rows included
    from solvers import _wwsvm_kernels as K

    X, y = _instance(20 + seed, n=90, d=30, k=5)
    n, k, C = X.shape[0], 5, 0.7
    Xs = sp.csr_matrix(X)
    sqn = np.einsum("ij,ij->i", X, X)
    states = []
    for sparse in (False, True):
        A = np.zeros((n, k))
        W = np.zeros((X.shape[1], k))  # d x k, C-ordered
        Wt = np.zeros((k, X.shape[1]))
        skip, wait = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        rng = np.random.default_rng(seed)
        for _ in range(4):
            order = rng.permutation(n).astype(np.int64)
            if sparse:
                K.epoch_sparse(Xs.indptr, Xs.indices, Xs.data, y, sqn, W, A, order, C, True,
                               1e-3, 10, skip, wait, 16)
            else:
                K.epoch(X, y, sqn, Wt, A, order, C, True, 1e-3, 10, skip, wait, 16)
        states.append((A, W if sparse else Wt.T))
    (Ad, Wd), (As, Ws) = states
    np.testing.assert_allclose(As, Ad, rtol=0, atol=1e-10)
    np.testing.assert_allclose(Ws, Wd, rtol=0, atol=1e-10)
    np.testing.assert_allclose(Ws, wwsvm.weights_from_dual(As, X, y), rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_sparse_certificate_valid_at_every_iterate(seed):
    # every recorded sparse iterate (free-block steps on) is a true bound pair:
    # its W's primal and its alpha's dual recomputed from scratch bracket cvxpy's optimum
    X, y = _instance(30 + seed, n=70, d=20, k=4)
    Xs = sp.csr_matrix(X)
    r = ref.solve(Xs, y, 2.0)
    seen = []

    def cb(it):
        seen.append((it.iterate["W"].copy(), it.iterate["alpha"].copy()))

    s = wwsvm.solve(Xs, y, 2.0, tol=1e-8, max_iter=5000, callback=cb)
    assert s.converged and len(seen) >= 3
    tol = 1e-6 * abs(r.value)
    for W, alpha in seen:
        assert wwsvm.dual_objective(alpha, X, y, 2.0) <= r.value + tol
        assert wwsvm.primal_objective(W, X, y, 2.0) >= r.value - tol
    assert s.primal == pytest.approx(r.value, rel=1e-5)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_certificate_pieces_equal_dense(index_dtype):
    # the row-by-row sparse W(alpha) and certificate (no n x k scores) equal the
    # dense products on random feasible alpha, zero rows included
    X, y = _instance(40, n=60, d=15, k=5, zero_rows=4)
    n, k, C = X.shape[0], 5, 0.8
    Xs = sp.csr_matrix(X)
    Xs.indices = Xs.indices.astype(index_dtype)
    Xs.indptr = Xs.indptr.astype(index_dtype)
    rng = np.random.default_rng(0)
    alpha = rng.uniform(0.0, C, (n, k)) * (rng.random((n, k)) < 0.6)
    alpha[rng.random((n, k)) < 0.2] = C
    alpha[np.arange(n), y] = 0.0
    Wd = wwsvm.weights_from_dual(alpha, X, y)
    np.testing.assert_allclose(wwsvm.weights_from_dual(alpha, Xs, y), Wd, rtol=0, atol=1e-12)
    Wt = np.ascontiguousarray(Wd).T  # the sparse layout: view of a C-ordered d x k array
    dense = wwsvm._certificate(np.ascontiguousarray(Wd.T), alpha, X, y, C)
    sparse = wwsvm._certificate(Wt, alpha, Xs, y, C)
    assert sparse[3] is None
    assert sparse[0] == pytest.approx(dense[0], rel=1e-12)
    assert sparse[1] == pytest.approx(dense[1], rel=1e-12, abs=1e-12)
    assert sparse[2] == dense[2]
    assert sparse[0] == pytest.approx(wwsvm.primal_objective(Wd, X, y, C), rel=1e-12)
    assert sparse[1] == pytest.approx(wwsvm.dual_objective(alpha, X, y, C), rel=1e-12)
    # the averaged-W candidate's primal (any W is an upper bound) is evaluated exactly
    W2 = Wd + np.random.default_rng(1).normal(scale=0.3, size=Wd.shape)
    for Xm, W2t in ((Xs, np.ascontiguousarray(W2).T), (X, np.ascontiguousarray(W2.T))):
        assert wwsvm._primal_at(W2t, Xm, y, C) == pytest.approx(
            wwsvm.primal_objective(W2, X, y, C), rel=1e-12)



@pytest.mark.parametrize("sparse", [False, True])
def test_reported_w_is_the_best_certified_candidate(sparse):
    # every recorded W (the best of W(alpha) and the averaged W so far) is no worse
    # than the current W(alpha), its primal is the recorded one, and each recorded
    # pair brackets cvxpy's optimum
    X, y = _instance(60, n=150, d=12, k=4, density=0.4)
    Xm = sp.csr_matrix(X) if sparse else X
    C = 3.0
    r = ref.solve(Xm, y, C)
    seen = []

    def cb(it):
        seen.append((it.primal, it.iterate["W"].copy(), it.iterate["alpha"].copy()))

    res = wwsvm.solve(Xm, y, C, tol=1e-8, max_iter=20_000, accelerate=False, callback=cb)
    assert res.converged and len(seen) >= 10
    tol = 1e-6 * abs(r.value)
    for primal, W, alpha in seen:
        p_w = wwsvm.primal_objective(W, X, y, C)
        assert p_w == pytest.approx(primal, rel=1e-9)
        p_alpha = wwsvm.primal_objective(wwsvm.weights_from_dual(alpha, X, y), X, y, C)
        assert p_w <= p_alpha * (1 + 1e-9)
        assert p_w >= r.value - tol
        assert wwsvm.dual_objective(alpha, X, y, C) <= r.value + tol
