"""Helpers shared by the safe triplet screening tests (tests/test_triplet_*.py)."""

import math
import warnings

import cvxpy as cp
import numpy as np
import pytest

from solvers import ConvergenceWarning
from solvers import triplet_screening as ts
from solvers.reference import triplet_screening as ref
from solvers.triplet_screening.tuning import Tuning


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


CASES = [(s, loss, diag) for s in range(3) for loss in ("smoothed_hinge", "hinge")
         for diag in (False, True)]


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


SAFETY = [(s, loss, diag, rule)
          for s in range(4)
          for loss in ("smoothed_hinge", "hinge")
          for diag in (False, True)
          for rule in ("sphere", "linear", "sdls")]


#: Make every early refresh pay (the cost model's refresh free), so that
#: ``refresh="converged"`` refreshes whenever the working set is solved.
CHEAP_REFRESH = Tuning(refresh_overhead=0.0, workset_weight=0.0)


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
