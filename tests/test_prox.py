"""Every proximal operator / projection against cvxpy or brute force."""

import cvxpy as cp
import numpy as np
import pytest

from solvers import prox

RNG_SEEDS = range(12)


def _cvx(problem):
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert problem.status == cp.OPTIMAL


# ----------------------------------------------------------------- clip_sum_root


def _bisect_root(s, u, a, b):
    def h(t):
        return a + b * t - np.clip(s - t, 0, u).sum()

    lo = s.min() - (u if np.isfinite(u) else 0) - abs(a) - 10 * (1 + np.abs(s).sum())
    hi = max(s.max(), 0.0) + abs(a) + 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if h(mid) < 0:
            lo = mid
        else:
            hi = mid
    return hi


@pytest.mark.parametrize("seed", range(40))
def test_clip_sum_root_matches_bisection(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    s = rng.normal(size=n) * rng.choice([0.01, 1.0, 100.0])
    if seed % 3 == 0:
        s = np.round(s)  # ties
    u = float(rng.choice([0.05, 1.0, 7.0, np.inf]))
    b = float(rng.choice([0.0, 1.0, 3.0]))
    if b == 0:
        cap = n * u if np.isfinite(u) else 10.0
        a = float(rng.uniform(0.01, 1.0) * cap)
    else:
        a = float(rng.uniform(0, 2))
    tau = prox.clip_sum_root(s, u, a, b)
    lhs = np.clip(s - tau, 0, u).sum()
    assert lhs == pytest.approx(a + b * tau, rel=1e-10, abs=1e-10 * (1 + np.abs(s).max()))
    if b > 0:  # unique root
        assert tau == pytest.approx(_bisect_root(s, u, a, b), rel=1e-8, abs=1e-8)


# ----------------------------------------------------------------- vector balls


@pytest.mark.parametrize("seed", RNG_SEEDS)
@pytest.mark.parametrize("q", [1, 2, np.inf])
def test_lq_ball_projection_matches_cvxpy(seed, q):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    x = rng.normal(size=n) * rng.choice([0.1, 1.0, 10.0])
    r = float(rng.uniform(0.2, 3.0))
    p = prox.project_lq_ball(x, q, r)
    z = cp.Variable(n)
    _cvx(cp.Problem(cp.Minimize(cp.sum_squares(z - x)), [cp.norm(z, q) <= r]))
    np.testing.assert_allclose(p, z.value, atol=1e-6)
    assert np.linalg.norm(p, q) <= r * (1 + 1e-12)


def test_l1_projection_inside_ball_is_identity_and_condat_handles_ties():
    x = np.array([0.1, -0.2, 0.3])
    np.testing.assert_array_equal(prox.project_l1_ball(x, 1.0), x)
    y = np.array([1.0, 1.0, 1.0, -1.0, 0.0])
    p = prox.project_l1_ball(y, 2.0)
    np.testing.assert_allclose(p, [0.5, 0.5, 0.5, -0.5, 0.0])


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_simplex_projection_against_sort_formula(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=int(rng.integers(1, 30))) * 3
    total = float(rng.uniform(0.1, 5))
    p = prox.project_simplex(x, total)
    # independent sort-based reference (Held et al.)
    u = np.sort(x)[::-1]
    css = np.cumsum(u) - total
    k = np.nonzero(u - css / np.arange(1, x.size + 1) > 0)[0][-1]
    ref = np.maximum(x - css[k] / (k + 1), 0)
    np.testing.assert_allclose(p, ref, atol=1e-12)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_l2_ball_columnwise(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(5, 4)) * rng.choice([0.1, 3.0])
    P = prox.project_l2_ball(X, 1.0, axis=0)
    for j in range(4):
        np.testing.assert_allclose(P[:, j], prox.project_l2_ball(X[:, j], 1.0))
    assert np.all(np.linalg.norm(P, axis=0) <= 1 + 1e-12)


def test_box_projection():
    x = np.array([-3.0, 0.5, 9.0])
    np.testing.assert_array_equal(prox.project_box(x, 0.0, 1.0), [0.0, 0.5, 1.0])


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_bounded_simplex_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    s = rng.normal(size=n) * 2
    if seed % 2 == 0:
        s = np.round(s)
    u = float(rng.choice([0.5, 1.0, 2.0]))
    total = float(rng.uniform(0, n * u))
    if seed == 0:
        total = n * u  # everything at the upper bound
    p = prox.project_bounded_simplex(s, total, u)
    z = cp.Variable(n)
    _cvx(cp.Problem(cp.Minimize(cp.sum_squares(z - s)), [cp.sum(z) == total, z >= 0, z <= u]))
    np.testing.assert_allclose(p, z.value, atol=1e-6)
    assert p.sum() == pytest.approx(total, abs=1e-10)


def test_bounded_simplex_rejects_infeasible_total():
    with pytest.raises(ValueError, match="total"):
        prox.project_bounded_simplex(np.zeros(3), 4.0, 1.0)


# ----------------------------------------------------------------- matrices


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_psd_projection_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 6))
    A = rng.normal(size=(d, d))
    P = prox.project_psd(A)
    Z = cp.Variable((d, d), PSD=True)
    _cvx(cp.Problem(cp.Minimize(cp.sum_squares(Z - (A + A.T) / 2))))
    np.testing.assert_allclose(P, Z.value, atol=1e-6)
    assert np.linalg.eigvalsh(P).min() >= -1e-12


@pytest.mark.parametrize("d", [1, 2, 5, 13, 20])
def test_psd_split_and_positive_norm_against_numpy_eigh(d):
    rng = np.random.default_rng(d)
    for _ in range(20):
        A = rng.normal(size=(d, d)) * 10.0 ** rng.uniform(-3, 3)
        S = (A + A.T) / 2
        w, V = np.linalg.eigh(S)
        P_ref = (V * np.maximum(w, 0)) @ V.T
        P, N = prox.psd_split(A)
        scale = np.abs(w).max()
        np.testing.assert_allclose(P, P_ref, atol=1e-12 * scale)
        np.testing.assert_array_equal(P, P.T)
        np.testing.assert_allclose(P + N, S, atol=1e-13 * scale)
        assert np.linalg.eigvalsh(N).max() <= 1e-12 * scale
        assert abs(np.vdot(P, N)) <= 1e-11 * scale**2  # polar cones: orthogonal parts
        assert prox.psd_sq_norm(A) == pytest.approx(float(np.sum(np.maximum(w, 0) ** 2)),
                                                    rel=1e-12, abs=1e-24 * scale**2)
        np.testing.assert_array_equal(prox.project_psd(A), P)
    with pytest.raises(ValueError, match="square"):
        prox.psd_split(np.ones((2, 3)))


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_fantope_projection_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 6))
    A = rng.normal(size=(d, d)) * 2
    h = float(rng.uniform(0.3, d)) if seed % 3 else float(d)
    P = prox.project_fantope(A, h)
    Z = cp.Variable((d, d), symmetric=True)
    cons = [cp.trace(Z) == h, Z >> 0, np.eye(d) - Z >> 0]
    _cvx(cp.Problem(cp.Minimize(cp.sum_squares(Z - (A + A.T) / 2)), cons))
    np.testing.assert_allclose(P, Z.value, atol=1e-5)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_group_shrink_rows_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(5, 3))
    W[0] = 0.0  # a zero row stays zero
    tau = float(rng.uniform(0.1, 2.0))
    P = prox.group_shrink_rows(W, tau)
    Z = cp.Variable((5, 3))
    obj = 0.5 * cp.sum_squares(Z - W) + tau * cp.sum(cp.norm(Z, 2, axis=1))
    _cvx(cp.Problem(cp.Minimize(obj)))
    np.testing.assert_allclose(P, Z.value, atol=1e-6)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_svt_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(5, 4))
    tau = float(rng.uniform(0.1, 2.0))
    P, s = prox.svt(W, tau, return_sv=True)
    Z = cp.Variable((5, 4))
    _cvx(cp.Problem(cp.Minimize(0.5 * cp.sum_squares(Z - W) + tau * cp.normNuc(Z))))
    np.testing.assert_allclose(P, Z.value, atol=1e-5)
    np.testing.assert_allclose(np.linalg.svd(P, compute_uv=False), s, atol=1e-10)


def test_soft_threshold_brute_force():
    x = np.linspace(-3, 3, 13)
    grid = np.linspace(-4, 4, 80001)
    for xi, pi in zip(x, prox.soft_threshold(x, 0.7), strict=True):
        brute = grid[np.argmin(0.5 * (grid - xi) ** 2 + 0.7 * np.abs(grid))]
        assert pi == pytest.approx(brute, abs=1e-4)


# ----------------------------------------------------------------- dual-norm balls (robust MTL)


@pytest.mark.parametrize("seed", RNG_SEEDS)
def test_row_ball_projection_matches_cvxpy(seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(6, 3)) * rng.choice([0.1, 1.0, 3.0], size=(6, 1))
    r = float(rng.uniform(0.2, 2.0))
    P = prox.project_row_ball(A, r)
    Z = cp.Variable((6, 3))
    _cvx(cp.Problem(cp.Minimize(cp.sum_squares(Z - A)), [cp.norm(Z, 2, axis=1) <= r]))
    np.testing.assert_allclose(P, Z.value, atol=1e-6)
    assert np.linalg.norm(P, axis=1).max() <= r * (1 + 1e-12)
    inside = np.linalg.norm(A, axis=1) <= r
    np.testing.assert_array_equal(P[inside], A[inside])  # rows inside stay put
    assert np.all(prox.project_row_ball(A, 0.0) == 0.0)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [(7, 3), (3, 7), (4, 4)])
def test_spectral_ball_projection_matches_cvxpy_and_svd_clipping(seed, shape):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=shape) * 2
    s = np.linalg.svd(B, compute_uv=False)
    r = float(rng.uniform(s.min(), s.max()))  # some singular values clipped, some not
    P, sv, Q, side = prox.project_spectral_ball(B, r, return_factors=True)
    U, s, Vt = np.linalg.svd(B, full_matrices=False)
    np.testing.assert_allclose(P, (U * np.minimum(s, r)) @ Vt, atol=1e-10)  # brute force
    np.testing.assert_allclose(np.sort(sv)[::-1][:len(s)], s, atol=1e-10)
    assert side == ("right" if shape[0] >= shape[1] else "left")
    assert np.linalg.norm(P, 2) <= r * (1 + 1e-12)
    Z = cp.Variable(shape)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(Z - B)), [cp.sigma_max(Z) <= r])
    prob.solve(solver="CLARABEL")  # its tightest tolerances stall on some of these SDPs
    assert prob.status == cp.OPTIMAL
    np.testing.assert_allclose(P, Z.value, atol=1e-4)  # cvxpy's accuracy; exact: the SVD above
    np.testing.assert_array_equal(prox.project_spectral_ball(B, 2 * s.max()), B)  # inside
    assert np.all(prox.project_spectral_ball(B, 0.0) == 0.0)
