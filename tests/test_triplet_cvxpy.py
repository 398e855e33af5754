"""Safe triplet screening against cvxpy: solves, paths and the active set reach cvxpy's
optimum and their certificates bracket it."""

import math

import numpy as np
import pytest
from tripletkit import (
    CASES,
    CHEAP_REFRESH,
    _certified_as_cvxpy,
    _data,
    _quiet,
)

from solvers import triplet_screening as ts
from solvers.reference import triplet_screening as ref
from solvers.triplet_screening import spheres as sph


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
def test_agrees_with_cvxpy_and_certificate_brackets_it(seed, loss, diagonal):
    X, y = _data(10 + seed)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=3) * 10 ** np.random.default_rng(seed).uniform(-2.5, -0.5)
    r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, diagonal=diagonal,
               backoff=False, tol=1e-9, max_iter=50_000)
    c = ref.solve(X, y, lam, triplets=prob)
    scale = max(1.0, abs(c.value))
    assert r.converged
    assert abs(r.primal - c.value) / scale <= 1e-6
    assert r.dual <= c.value + 1e-7 * scale and c.value <= r.primal + 1e-7 * scale
    assert r.primal == pytest.approx(prob.primal(r.M, lam), rel=1e-12)
    # compare metrics within the certified radius (plus cvxpy's own accuracy)
    assert np.linalg.norm(r.M - c.M) <= r.radius + 1e-3 * max(1.0, np.linalg.norm(c.M))
    assert np.all(np.asarray(r.history.gap) >= 0)
    assert np.all(r.history.primal >= r.history.dual - 1e-12 * np.abs(r.history.primal))


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5])
def test_active_set_refreshed_on_convergence_agrees_with_cvxpy(seed, diagonal):
    """The active set with ``refresh="converged"`` (every early refresh paying) reaches
    cvxpy's optimum and its certificate brackets it, as the plain solve does (smoothed
    hinge: the active set runs projected gradient, which does not reach 1e-9 on the
    hinge within the budget on either schedule)."""
    loss = "smoothed_hinge"
    X, y = _data(10 + seed)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=3) * 10 ** np.random.default_rng(seed).uniform(-2.5, -0.5)
    r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, diagonal=diagonal,
               active_set=True, refresh="converged", backoff=False, tol=1e-9,
               max_iter=50_000, _tuning=CHEAP_REFRESH)
    c = ref.solve(X, y, lam, triplets=prob)
    scale = max(1.0, abs(c.value))
    assert r.converged and r.params["refresh"] == "converged"
    assert abs(r.primal - c.value) / scale <= 1e-6
    assert r.dual <= c.value + 1e-7 * scale and c.value <= r.primal + 1e-7 * scale
    assert r.primal == pytest.approx(prob.primal(r.M, lam), rel=1e-12)
    assert np.linalg.norm(r.M - c.M) <= r.radius + 1e-3 * max(1.0, np.linalg.norm(c.M))


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
def test_anchor_block_loss_pass_agrees_with_cvxpy(seed, loss, diagonal):
    """All triplets of a small set (rows of ~13: the loss pass over all triplets goes by
    anchor blocks): the naive solve and a screened path (back-off off, so the remainder
    goes by pair ids after screening) agree with cvxpy, the certificate brackets it,
    the reported primal is the full objective written out by pair ids, and the metric
    lies within the certified radius."""
    X, y = _data(70 + seed, n=20)
    prob = ts.TripletProblem(X, y, k=math.inf, loss=loss, diagonal=diagonal)
    assert prob.data.everything.blocks.nd.size == 20
    lam = prob.lambda_max() * 10 ** np.random.default_rng(seed).uniform(-2.0, -0.7)
    r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, diagonal=diagonal,
               screening=None, tol=1e-9, max_iter=50_000)
    p = _quiet(ts.path, X, y, triplets=prob, loss=loss, diagonal=diagonal, tol=1e-9,
               lam_min=lam, n_lambdas=200, termination=False, backoff=False,
               max_iter=50_000)
    _certified_as_cvxpy(X, y, prob, [(r.M, r.primal, r.dual, r.gap, lam),
                                     (p.Ms[-1], p.primal[-1], p.dual[-1], p.gap[-1],
                                      p.lambdas[-1])])
    assert p.converged.all() and np.max(p.rate_path) > 0  # the path did screen


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
def test_sorted_evaluation_agrees_with_cvxpy(seed, loss, diagonal):
    """evaluation='sorted' (the sorted pass over the anchor blocks of all triplets): the
    naive solve, by the primal method (smoothed hinge) and by the dual one, and a path
    agree with cvxpy, the certificate brackets it, the reported primal is the full
    objective written out, the metric lies within the certified radius, and the naive
    solve matches the one that visits every triplet."""
    X, y = _data(170 + seed, n=24)
    prob = ts.TripletProblem(X, y, k=math.inf, loss=loss, diagonal=diagonal)
    assert prob.data.blocks is not None
    lam = prob.lambda_max() * 10 ** np.random.default_rng(seed).uniform(-2.0, -0.7)
    kw = dict(triplets=prob, loss=loss, diagonal=diagonal, tol=1e-9, max_iter=50_000)
    methods = ("dual",) if loss == "hinge" else ("pgd", "dual")  # PGD: a smooth primal
    runs = [_quiet(ts.solve, X, y, lam, screening=None, evaluation=ev, method=m, **kw)
            for ev in ("sorted", "triplets") for m in methods]
    half = len(methods)
    p = _quiet(ts.path, X, y, lam_min=lam, n_lambdas=200, termination=False,
               evaluation="sorted", **kw)
    assert runs[0].params["evaluation"] == "sorted" and p.params["evaluation"] == "sorted"
    assert not runs[0].notes
    _certified_as_cvxpy(X, y, prob, [(r.M, r.primal, r.dual, r.gap, lam) for r in runs[:half]]
                        + [(p.Ms[-1], p.primal[-1], p.dual[-1], p.gap[-1], p.lambdas[-1])])
    assert p.converged.all() and all(r.converged for r in runs)
    # the sorted solve and the one visiting every triplet certify the same optimum
    for a, b in zip(runs[:half], runs[half:], strict=True):
        assert abs(a.primal - b.primal) <= 2e-9 * max(1.0, abs(b.primal))
        assert a.dual <= b.primal + 1e-12 * abs(b.primal)
        assert b.dual <= a.primal + 1e-12 * abs(a.primal)


def test_sorted_evaluation_without_anchor_blocks_says_so():
    """kNN triplets with short rows have no anchor blocks: evaluation='sorted' visits
    each triplet (the same iterates as 'triplets') and the result's notes say so."""
    X, y = _data(3)
    prob = ts.TripletProblem(X, y, k=3)
    assert prob.data.blocks is None
    lam = 0.05 * prob.lambda_max()
    a = ts.solve(X, y, lam, triplets=prob, screening=None, evaluation="sorted")
    b = ts.solve(X, y, lam, triplets=prob, screening=None)
    assert any("anchor blocks" in n for n in a.notes) and not b.notes
    np.testing.assert_array_equal(a.M, b.M)
    assert a.n_iter == b.n_iter
    with pytest.raises(ValueError, match="evaluation"):
        ts.solve(X, y, lam, triplets=prob, evaluation="blocks")
    with pytest.raises(ValueError, match="evaluation"):
        ts.path(X, y, triplets=prob, evaluation="blocks")


@pytest.mark.parametrize(("seed", "loss", "diagonal"), CASES)
@pytest.mark.parametrize("warm_start", ["previous", "secant"])
def test_path_agrees_with_cvxpy_at_every_lambda(seed, loss, diagonal, warm_start):
    """Along a screened path every lambda after the first starts from the previous one's
    last evaluation, or with warm_start='secant' from the extrapolated (and projected)
    path (and path screening may sit out): at each lambda the certified objective
    matches cvxpy, the certificate brackets it and the metric lies within the certified
    radius."""
    X, y = _data(40 + seed)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    p = _quiet(ts.path, X, y, triplets=prob, loss=loss, diagonal=diagonal, tol=1e-9,
               n_lambdas=8, termination=False, backoff=seed % 2 == 0, max_iter=50_000,
               warm_start=warm_start)
    assert len(p.lambdas) == 8 and p.converged.all()
    assert p.params["warm_start"] == warm_start
    _certified_as_cvxpy(X, y, prob, [(p.Ms[t], p.primal[t], p.dual[t], p.gap[t],
                                      p.lambdas[t]) for t in range(1, 8)])


@pytest.mark.parametrize("method", ["pgd", "dual"])
def test_secant_warm_start_differs_from_the_third_lambda_on(method):
    """warm_start='secant' starts the first two lambdas as 'previous' does (the same
    results, bit for bit) and the later ones elsewhere (other iterates, the same
    optimum within the certified gaps); an unknown value is refused by name."""
    X, y = _data(5, n=24)
    prob = ts.TripletProblem(X, y, k=math.inf)
    kw = dict(triplets=prob, method=method, tol=1e-9, n_lambdas=6, termination=False,
              max_iter=50_000)
    a, b = (_quiet(ts.path, X, y, warm_start=w, **kw) for w in ("previous", "secant"))
    for t in range(2):
        np.testing.assert_array_equal(a.Ms[t], b.Ms[t])
        assert a.n_iter[t] == b.n_iter[t]
    assert any(not np.array_equal(a.Ms[t], b.Ms[t]) for t in range(2, 6))
    for t in range(6):
        assert b.dual[t] <= a.primal[t] + 1e-12 * abs(a.primal[t])
        assert a.dual[t] <= b.primal[t] + 1e-12 * abs(b.primal[t])
    with pytest.raises(ValueError, match="warm_start"):
        ts.path(X, y, triplets=prob, warm_start="linear")


@pytest.mark.parametrize("seed", [18, 19, 22])
@pytest.mark.parametrize(("loss", "diagonal"), [("smoothed_hinge", False),
                                               ("smoothed_hinge", True), ("hinge", False)])
def test_path_on_a_given_grid_agrees_with_cvxpy(loss, diagonal, seed):
    """An uneven grid (steps of log lam from 0.05 to 0.9, starting below lam_max, so
    from M = 0) with the secant start, whose step scales with the ratio of the last two
    steps of log lam: every lambda is certified and agrees with cvxpy; ``final`` is the
    last lambda's whole result."""
    X, y = _data(seed, n=24)
    prob = ts.TripletProblem(X, y, k=3, loss=loss, diagonal=diagonal)
    lmax = prob.lambda_max()
    assert lmax > 0
    grid = lmax * np.exp(-np.cumsum([0.3, 0.05, 0.9, 0.2, 0.6]))
    p = _quiet(ts.path, X, y, triplets=prob, loss=loss, diagonal=diagonal, lambdas=grid,
               warm_start="secant", termination=False, tol=1e-9, max_iter=50_000)
    np.testing.assert_array_equal(p.lambdas, grid)
    assert p.converged.all() and p.params["grid"] == "given"
    _certified_as_cvxpy(X, y, prob, [(p.Ms[t], p.primal[t], p.dual[t], p.gap[t],
                                      p.lambdas[t]) for t in range(5)])
    assert p.final.lam == grid[-1] and p.final.primal == p.primal[-1]
    np.testing.assert_array_equal(p.final.M, p.Ms[-1])
    # the last lambda started at [M_3 + s (M_3 - M_2)]_+, s = 0.6 / 0.2 (its first
    # history row is the objective there)
    start = sph.proj_pm(p.Ms[3] + 3.0 * (p.Ms[3] - p.Ms[2]))[0]
    if loss != "hinge":  # the dual method's history starts from its dual start
        assert p.final.history.primal[0] == pytest.approx(prob.primal(start, grid[-1]),
                                                          rel=1e-12)


def test_path_on_the_geometric_grid_given_is_the_default_path():
    """The default grid written out (lam_max, 0.9 lam_max, ...) gives the default
    path bit for bit (the 'previous' start); bad grids are refused by name."""
    X, y = _data(3)
    prob = ts.TripletProblem(X, y, k=3)
    kw = dict(triplets=prob, tol=1e-9, termination=False, max_iter=50_000)
    a = _quiet(ts.path, X, y, n_lambdas=6, **kw)
    grid = [prob.lambda_max()]
    for _ in range(5):
        grid.append(grid[-1] * 0.9)
    b = _quiet(ts.path, X, y, lambdas=grid, **kw)
    np.testing.assert_array_equal(a.lambdas, b.lambdas)
    np.testing.assert_array_equal(a.Ms, b.Ms)
    np.testing.assert_array_equal(a.n_iter, b.n_iter)
    assert a.final.primal == b.final.primal == a.primal[-1]
    # geometric_grid: the same points, down to a given lam exactly
    g = ts.geometric_grid(grid[0], 0.99 * grid[-1])
    np.testing.assert_array_equal(g, [*grid, 0.99 * grid[-1]])
    np.testing.assert_array_equal(ts.geometric_grid(grid[0], grid[-1] * (1 + 1e-12)),
                                  [*grid[:-1], grid[-1] * (1 + 1e-12)])  # no near-twin
    np.testing.assert_array_equal(ts.geometric_grid(1.0, 2.0), [2.0])
    np.testing.assert_array_equal(ts.geometric_grid(0.0, 2.0), [2.0])
    for args, name in (((-1.0, 1.0), "lam_max"), ((1.0, 0.0), "lam"),
                       ((1.0, 0.5, 1.0), "ratio")):
        with pytest.raises(ValueError, match=name):
            ts.geometric_grid(*args)
    for bad in ([1.0, 1.0], [1.0, 2.0], [1.0, -0.5], [1.0, np.nan], [[1.0, 0.5]], []):
        with pytest.raises(ValueError, match="lambdas"):
            ts.path(X, y, triplets=prob, lambdas=bad)
    with pytest.raises(ValueError, match="lam_max"):
        ts.path(X, y, triplets=prob, lambdas=[1.0, 0.5], lam_max=2.0)


def test_cvxpy_agreement_at_about_5000_triplets():
    from explorer.datasets import load_real

    X, y = load_real("wine")
    prob = ts.TripletProblem(X, y, k=5)
    assert 4000 <= prob.n_triplets <= 5000
    lam = 0.01 * prob.lambda_max()
    r = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-9)
    c = ref.solve(X, y, lam, triplets=prob)
    assert abs(r.primal - c.value) / abs(c.value) <= 1e-6
    assert r.dual <= c.value * (1 + 1e-7)
    assert r.screening_rate > 0.5
