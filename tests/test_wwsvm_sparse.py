"""Weston–Watkins SVM on scipy.sparse input: same results as dense, zero rows, formats."""

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
