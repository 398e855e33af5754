"""Safe triplet screening with the active-set heuristic: screening and the active set
together, the refresh schedules and the working set."""

import math

import numpy as np
import pytest
from tripletkit import (
    CHEAP_REFRESH,
    _data,
    _quiet,
    _same_trace,
)

from solvers import ConvergenceWarning
from solvers import triplet_screening as ts
from solvers.triplet_screening.tuning import Tuning


@pytest.mark.parametrize("rule", ["sphere", "linear", "sdls"])
def test_active_set_and_screening_reach_the_same_optimum(rule):
    X, y = _data(7, n=36)
    prob = ts.TripletProblem(X, y, k=4)
    lam = 0.02 * prob.lambda_max()
    base = ts.solve(X, y, lam, triplets=prob, screening=None, tol=1e-10)
    for kw in (dict(active_set=True, screening=None), dict(active_set=True)):
        r = ts.solve(X, y, lam, triplets=prob, rule=rule, backoff=False, tol=1e-10, **kw)
        assert r.converged and r.primal == pytest.approx(base.primal, rel=1e-8)
        assert np.all(np.diff(r.history.iteration) % ts.SCREEN_EVERY == 0)
        assert r.primal >= r.dual
        assert r.params["refresh"] == "every10"


@pytest.mark.parametrize(("seed", "diagonal", "screening"), [
    (0, False, None), (1, False, ("rrpb", "pgb")), (2, True, None), (3, False, ("gb",))])
def test_active_set_refresh_on_convergence_certifies_the_same_optimum(seed, diagonal,
                                                                      screening):
    """``refresh="converged"`` refreshes (and certifies) as soon as the working set's own
    gap meets tol: it reaches the optimum of the Weinberger schedule and of the plain
    solve (cvxpy-checked elsewhere) within the certified bounds, its gap is a true
    bound, it refreshes between the scheduled ones (history rows off the multiples of
    10) and needs fewer iterations; along a path too. With the cost model's default
    weights a refresh on these small problems never pays: the schedule is then
    Weinberger's, bit for bit."""
    X, y = _data(60 + seed, n=40)
    prob = ts.TripletProblem(X, y, k=5, diagonal=diagonal)
    lam = 0.01 * prob.lambda_max()
    kw = dict(triplets=prob, diagonal=diagonal, screening=screening, active_set=True,
              backoff=False, tol=1e-9)
    plain = ts.solve(X, y, lam, triplets=prob, diagonal=diagonal, screening=None, tol=1e-11)
    every = ts.solve(X, y, lam, **kw)
    same = ts.solve(X, y, lam, refresh="converged", **kw)
    _same_trace(every, same)                           # the refresh cannot pay here
    kw["_tuning"] = CHEAP_REFRESH
    conv = ts.solve(X, y, lam, refresh="converged", **kw)
    assert conv.params["refresh"] == "converged" and conv.converged
    assert np.any(conv.history.iteration % ts.SCREEN_EVERY != 0)   # refreshed early
    assert conv.n_iter < every.n_iter
    for r in (every, conv):
        assert plain.primal - 1e-10 * abs(plain.primal) <= r.primal
        assert r.dual <= plain.primal + 1e-10 * abs(plain.primal)
        assert r.gap <= 1e-9 * max(1.0, abs(r.primal))
        assert np.linalg.norm(r.M - plain.M) <= r.radius + plain.radius + 1e-9
    pe = ts.path(X, y, n_lambdas=8, ratio=0.7, **kw)
    pc = ts.path(X, y, n_lambdas=8, ratio=0.7, refresh="converged", **kw)
    assert pc.params["refresh"] == "converged" and np.all(pc.converged)
    assert np.sum(pc.n_iter) < np.sum(pe.n_iter)
    np.testing.assert_allclose(pc.primal, pe.primal, rtol=1e-8)


def test_refresh_is_validated():
    X, y = _data(7, n=20)
    with pytest.raises(ValueError, match="refresh"):
        ts.solve(X, y, 1.0, active_set=True, refresh="always")
    with pytest.raises(ValueError, match="refresh"):
        ts.path(X, y, n_lambdas=3, active_set=True, refresh=10)


@pytest.mark.parametrize("diagonal", [False, True])
def test_working_set_update_equals_a_full_rebuild(diagonal):
    # random sequences of remaining subsets (all triplets, a compacted subset, a subset
    # of a subset) and of working-set changes (none, a few, many): the incremental update
    # gives the arrays the full rebuild from all triplets gives, the subset's statuses
    # (kept in its order), and the previous working set itself exactly when nothing
    # changed
    X, y = _data(11, n=40)
    data = ts.TripletProblem(X, y, k=4, diagonal=diagonal).data
    rng = np.random.default_rng(0)
    n_t = data.n_t
    sub, prev, reused = data.everything, None, 0
    status = np.zeros(n_t, dtype=np.int8)
    keep = np.ones(n_t, dtype=bool)
    for step in range(60):
        if step % 12 == 0 and step:  # a new remaining subset (as screening gives)
            keep_sub = rng.random(sub.idx.size) < 0.8
            sub = (data.compact(np.flatnonzero(rng.random(n_t) < 0.7)) if step % 24 == 0
                   else data.restrict(sub, sub.idx[keep_sub], sub.la[keep_sub],
                                      sub.lb[keep_sub], sub.hn[keep_sub]))
            prev, keep = None, rng.random(sub.idx.size) < 0.5
            status = np.zeros(sub.idx.size, dtype=np.int8)
        elif step % 3 == 0:  # nothing changes
            pass
        else:  # a few (or many) triplets enter or leave
            flip = rng.random(sub.idx.size) < rng.choice([0.01, 0.05, 0.5])
            keep = keep ^ flip
        work = data.work_of(sub, keep, status, prev)
        full = data.compact(sub.idx[keep])
        for f in ("idx", "pairs", "la", "lb", "hn"):
            np.testing.assert_array_equal(getattr(work, f), getattr(full, f), err_msg=f)
        np.testing.assert_array_equal(work.forms.pi, full.forms.pi)
        np.testing.assert_array_equal(work.forms.pj, full.forms.pj)
        assert work.forms.mode == full.forms.mode
        np.testing.assert_array_equal(status, np.where(keep, 0, 3))
        reused += work is prev
        if prev is not None and np.array_equal(prev.idx, work.idx):
            assert work is prev
        prev = work
    assert reused >= 10


def test_active_set_path_same_with_and_without_retest():
    """The active-set path with RRPB is the same, bit for bit, whether path screening
    re-tests only the candidates (from ``Tuning.retest_min`` triplets on) or runs the
    full pass at every lambda."""
    X, y = _data(5, n=40)
    prob = ts.TripletProblem(X, y, k=math.inf)
    out = []
    for least in (0, prob.n_triplets + 1):
        out.append(ts.path(X, y, triplets=prob, active_set=True, screening=("rrpb",),
                           ratio=0.97, n_lambdas=40, tol=1e-7, backoff=False,
                           _tuning=Tuning(retest_min=least)))
        assert out[-1].params["_tuning"] == {"retest_min": least}
    for f in ("lambdas", "primal", "dual", "n_iter", "rate_path"):
        np.testing.assert_array_equal(getattr(out[0], f), getattr(out[1], f))


def test_hinge_active_set_returns_the_best_certified_iterate():
    # Issue 12 reproducer: 14 points, 2-D, 4 classes, k=2, lam = 0.026 lam_max. The
    # working-set refresh used to jump to M = 0 every 20 iterations and solve returned
    # that last iterate (relative gap 3.15).
    from explorer.models.triplet_screening import data

    p = data.synthetic(seed=0, n=14, d=2, classes=4, informative=1, k=2)
    X, y, T = p.data["X"], p.data["y"], p.data["triplets"]
    prob = ts.TripletProblem(X, y, triplets=T, loss="hinge")
    lam = 0.026 * prob.lambda_max()
    exact = ts.solve(X, y, lam, triplets=prob, loss="hinge", tol=1e-10, max_iter=20_000)
    for screening in (None, "rrpb+pgb"):
        r = _quiet(ts.solve, X, y, lam, triplets=prob, loss="hinge", active_set=True,
                   screening=screening, backoff=False, tol=1e-9, max_iter=600)
        h = r.history
        assert np.linalg.norm(r.M) > 0.01
        assert r.primal == pytest.approx(prob.primal(r.M, lam), rel=1e-12)
        assert r.primal == pytest.approx(np.min(h.primal), rel=1e-12)  # the best one seen
        assert np.all(np.diff(h.primal) <= 0) and np.all(np.diff(h.dual) >= 0)
        assert r.primal - exact.primal <= r.gap + 1e-9 * abs(exact.primal)  # a true bound
        assert r.rel_gap < 1e-2


@pytest.mark.parametrize(("screening", "diagonal", "refresh"), [
    (None, False, "every10"), (("rrpb",), False, "every10"),
    (("rrpb", "pgb"), False, "every10"), (("rrpb", "gb"), True, "every10"),
    (None, False, "converged"), (("rrpb", "pgb"), False, "converged"),
    (None, True, "converged")])
def test_active_set_steps_compiled_are_the_python_steps(monkeypatch, screening, diagonal,
                                                        refresh):
    """With an active set the iterations between two refreshes run in one compiled call
    (:func:`.burst.run_working_steps`); the path, a solve stopped by ``max_iter`` between
    refreshes (its warning and the refresh at ``max_iter``) and a converged solve are
    those of the Python steps bit for bit: iterates, certificates, history, stop reasons
    and work counters, and the profile's parts stay filled. The compiled call does run
    (counted) up to the refresh, and one step a call with ``_compiled=False`` (Python then
    makes the working set's own test) or with a callback (which sees the certified
    iterations, at the refreshes: none between them). With
    ``refresh="converged"`` (every early refresh paying) the compiled call's own
    convergence test ends it where the Python loop's does."""
    from solvers.triplet_screening import burst
    from solvers.triplet_screening.state import SCREEN_EVERY

    X, y = _data(6, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, diagonal=diagonal) * 0.03
    calls = []
    real = burst.run_working_steps

    def counted(run, s, n, tol, n_test, it):
        calls.append(n)
        return real(run, s, n, tol, n_test, it)

    monkeypatch.setattr("solvers.triplet_screening.loops.run_working_steps", counted)
    every = SCREEN_EVERY
    kw = dict(triplets=prob, active_set=True, screening=screening, diagonal=diagonal,
              backoff=False, refresh=refresh)
    if refresh == "converged":
        kw["_tuning"] = CHEAP_REFRESH
    out = {}
    for enabled in (False, True):
        kw["_compiled"] = enabled
        p = ts.path(X, y, tol=1e-9, n_lambdas=10, ratio=0.8, **kw)
        with pytest.warns(ConvergenceWarning):
            short = ts.solve(X, y, lam, tol=1e-14, max_iter=23, **kw)
        full = ts.solve(X, y, lam, tol=1e-9, max_iter=20_000, **kw)
        out[enabled] = (p, short, full)
        assert len(calls) > 0 and (max(calls) > 1) == enabled
        if enabled:
            assert max(calls) == every and full.profile["pair_forms"] > 0
            assert full.profile["eig"] > 0 and full.profile["loss_pass"] > 0
        calls.clear()
    (p0, s0, f0), (p1, s1, f1) = out[False], out[True]
    for u, v in zip(p0.Ms, p1.Ms, strict=True):
        np.testing.assert_array_equal(u, v)
    for name in ("lambdas", "gap", "primal", "dual", "n_iter", "triplet_visits"):
        np.testing.assert_array_equal(getattr(p0, name), getattr(p1, name))
    _same_trace(s0, s1)
    _same_trace(f0, f1)
    assert s1.stop_reason == "max_iter" and s1.n_iter == 23
    assert f1.stop_reason == "converged" and f1.history.iteration.size >= 3  # 2 refreshes
    early = np.any(f1.history.iteration % every != 0) or np.any(p1.n_iter % every != 0)
    assert early == (refresh == "converged")
    seen = []
    res = ts.solve(X, y, lam, tol=1e-6, callback=lambda state: seen.append(state), **kw)
    assert set(calls) == {1} and len(seen) == res.history.iteration.size
