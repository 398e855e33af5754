"""Foreign exceptions at the solvers' boundary become the contract's errors (issue 33).

Each reproducer is tried with its neighbours: every scale that overflows, every integer
parameter without an upper bound, every fractional trace at every magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer import registry
from solvers import caso, mtmkl, prox, robust_mtl, wwsvm
from solvers import triplet_screening as ts


@pytest.fixture(scope="module")
def tasks():
    p = registry.get("caso").datasets["subspace"](seed=0, d=4, m=3, n=8)
    return p.data["Xs"], p.data["ys"]


@pytest.mark.parametrize("scale", [1e101, 1e150, 1e200, 1e300, 1.7e308])
@pytest.mark.parametrize("which", ["Xs", "ys"])
def test_caso_refuses_data_whose_squares_overflow_naming_it(tasks, scale, which):
    Xs, ys = tasks
    if which == "Xs":  # largest entry exactly `scale`
        Xs = [X / np.abs(X).max() * scale for X in Xs]
    else:
        ys = [y / np.abs(y).max() * scale for y in ys]
    with pytest.raises(ValueError, match=rf"^{which}\[0\] has an entry of magnitude"):
        caso.solve(Xs, ys, alpha=0.1, h=2, max_iter=20)


def test_caso_still_solves_large_but_safe_data(tasks):
    Xs, ys = tasks
    res = caso.solve(Xs, [y * 1e50 for y in ys], alpha=0.1, h=2, max_iter=200)
    assert np.isfinite(res.primal) and res.gap >= 0 and res.dual <= res.primal


@pytest.mark.parametrize(("solve", "name", "value"), [
    (wwsvm.solve, "seed", 2**64),
    (wwsvm.solve, "seed", 2**80),
    (wwsvm.solve, "max_iter", 2**63),
    (wwsvm.solve, "max_iter", 2**64),
])
def test_integers_beyond_the_machine_range_name_the_argument(solve, name, value):
    p = registry.get("wwsvm").datasets["blobs"](seed=0, n=30)
    with pytest.raises(ValueError, match=rf"^{name} must be <= "):
        solve(p.data["X"], p.data["y"], C=1.0, **{name: value})


def test_the_largest_seeds_are_accepted():
    p = registry.get("wwsvm").datasets["blobs"](seed=0, n=30)
    a = wwsvm.solve(p.data["X"], p.data["y"], C=1.0, seed=2**64 - 1, max_iter=50)
    assert np.isfinite(a.primal) and a.gap >= 0
    for spec in (mtmkl.PARAMS["seed"], robust_mtl.PARAMS["max_iter"], caso.PARAMS["max_iter"]):
        with pytest.raises(ValueError, match=rf"^{spec.name} must be <= "):
            spec.validate(2**63)


@pytest.mark.parametrize("scale", [1.0, 1e10, 1e20, 1e100, 1e150, 1e250, 1e300])
@pytest.mark.parametrize("h", [0.5, 1.0, 1.5, 2.25, 3.9])
def test_project_fantope_keeps_the_trace_at_every_magnitude(scale, h):
    rng = np.random.default_rng(int(h * 100))
    A = rng.standard_normal((5, 5)) * scale
    P, s, V = prox.project_fantope(A, h, return_eig=True)
    assert np.trace(P) == pytest.approx(h, rel=1e-9, abs=1e-9)
    assert s.min() >= 0 and s.max() <= 1 and s.sum() == pytest.approx(h, rel=1e-12)
    w = np.linalg.eigvalsh(0.5 * (A + A.T))
    # the projection keeps the eigenvectors and the order of the eigenvalues
    assert np.all(np.diff(s[np.argsort(w)]) >= -1e-12)


def test_project_bounded_simplex_resolves_huge_entries():
    got = prox.project_bounded_simplex(np.array([3e150, 2e150, 1e150, -1e150]), 1.5)
    assert np.array_equal(got, [1.0, 0.5, 0.0, 0.0])
    got = prox.project_bounded_simplex(np.array([1e20, 1e20 + 2**20, -5e19]), 0.7)
    assert got.sum() == pytest.approx(0.7) and got[2] == 0.0


@pytest.mark.parametrize("M", [np.full((3, 3), 1.7e308), np.diag([np.inf, 1.0, 1.0]),
                               np.array([[0.0, 1.7e308], [1.7e308, 0.0]])])
def test_project_fantope_names_an_overflowing_matrix(M):
    with pytest.raises(ValueError, match=r"^M must have finite entries"):
        prox.project_fantope(M, 1.0)


@pytest.mark.parametrize("kw", [{"lam_max": 1.0, "lam_min": 10.0}, {"lam_min": 1e12},
                                {"lambdas": [1.0, 0.5], "lam_min": 2.0}])
def test_a_path_that_would_be_empty_is_refused(kw):
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 3
    with pytest.raises(ValueError, match=r"^lam_min=.* is above the path's first lambda"):
        ts.path(X, y, **kw)
