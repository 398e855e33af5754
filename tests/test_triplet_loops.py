"""Safe triplet screening inside a solve: the optimisation loops (the solver protocol, the
compiled loops against the Python ones bit for bit) and dynamic screening (rounds,
back-off)."""

import math

import numpy as np
import pytest
from tripletkit import (
    _data,
    _quiet,
    _same_eval,
    _same_trace,
    _tight,
)

from solvers import ConvergenceWarning
from solvers import triplet_screening as ts
from solvers.triplet_screening import spheres as sph
from solvers.triplet_screening.tuning import Tuning


def test_callback_can_stop_and_sees_the_status():
    X, y = _data(15)
    seen = []

    def cb(state):
        seen.append((state.iterate["status"].copy(), state.extras["n_L"]))
        return state.iteration < 3

    r = ts.solve(X, y, 1.0, k=3, backoff=False, tol=1e-14, callback=cb)
    assert not r.converged and r.n_iter == 3 and len(seen) == 4
    status, nL = seen[-1]
    assert np.sum(status == 1) == nL


def test_max_iter_warns_and_history_is_consistent():
    X, y = _data(16)
    with pytest.warns(ConvergenceWarning):
        r = ts.solve(X, y, 0.5, k=3, tol=1e-15, max_iter=4, screening=None)
    assert not r.converged and r.n_iter == 4
    h = r.history
    assert len(h) == 5 and h.iteration[0] == 0
    assert np.all(h.gap >= 0) and r.gap == h.gap[-1]
    assert r.radius == pytest.approx(math.sqrt(2 * r.gap / 0.5))
    assert set(h.extras) >= {"n_L", "n_R", "n_work", "exact", "step"}
    d = r.to_dict(include_arrays=True)
    assert d["model"] == "triplet_screening" and "screening_log" in d["arrays"]


def test_diagonal_metric_and_transform():
    X, y = _data(17)
    r = ts.solve(X, y, 1.0, k=3, diagonal=True, rule="sdls", backoff=False, tol=1e-10)
    assert r.M.shape == (4,) and np.all(r.M >= 0)
    Z = r.transform(X)
    i, j = 0, 1
    assert np.sum((Z[i] - Z[j]) ** 2) == pytest.approx(np.sum(r.M * (X[i] - X[j]) ** 2))
    full = ts.solve(X, y, 1.0, k=3, backoff=False, tol=1e-10)
    Zf = full.transform(X)
    dv = X[i] - X[j]
    assert np.sum((Zf[i] - Zf[j]) ** 2) == pytest.approx(dv @ full.M @ dv)
    assert r.status().shape == (r.n_triplets,)


@pytest.mark.parametrize(("loss", "dynamic"), [("smoothed_hinge", "adaptive"),
                                                ("smoothed_hinge", "every10"),
                                                ("hinge", "adaptive")])
def test_alpha_is_the_dual_point_of_the_certificate(loss, dynamic):
    """``D(result.alpha) == result.dual`` and ``P(result.M) == result.primal``: the
    reported pair is a primal-dual certificate one can recompute from scratch, also when
    the best dual value came from another iterate than the returned metric."""
    for seed in range(3):
        X, y = _data(300 + seed, n=40)
        prob = ts.TripletProblem(X, y, k=5, loss=loss)
        lam = 0.01 * prob.lambda_max()
        r = _quiet(ts.solve, X, y, lam, triplets=prob, loss=loss, dynamic=dynamic,
                   backoff=False, tol=1e-9, max_iter=20_000)
        assert np.all((r.alpha >= 0) & (r.alpha <= 1))
        assert prob.dual(r.alpha, lam) == pytest.approx(r.dual, rel=1e-10)
        assert prob.primal(r.M, lam) == pytest.approx(r.primal, rel=1e-12)
        assert r.dual <= r.primal
    if loss == "smoothed_hinge":
        # a problem where the best dual value and the best primal come from different
        # iterates (the KKT map at the returned M is a worse dual point there)
        from explorer.models.triplet_screening.data import synthetic

        P = synthetic(seed=0, n=60, d=5, classes=3, informative=2, k=5)
        X, y = P.data["X"], P.data["y"]
        prob = ts.TripletProblem(X, y, triplets=P.data["triplets"])
        lam = 0.01 * prob.lambda_max()
        r = ts.solve(X, y, lam, triplets=prob, dynamic=dynamic, backoff=False, tol=1e-9)
        assert prob.dual(r.alpha, lam) == pytest.approx(r.dual, rel=1e-12)


def test_screening_backs_off_when_it_cannot_pay_and_says_so():
    # a tiny problem: a screening round costs more than all the loss passes it could save
    X, y = _data(41, n=24)
    prob = ts.TripletProblem(X, y, k=2)
    lam = 0.05 * prob.lambda_max()
    naive = ts.solve(X, y, lam, triplets=prob, screening=None, tol=1e-9)
    auto = ts.solve(X, y, lam, triplets=prob, tol=1e-9)
    forced = ts.solve(X, y, lam, triplets=prob, tol=1e-9, backoff=False)
    assert any("screening skipped" in n for n in auto.notes)
    assert auto.screening_rate == 0 and forced.screening_rate > 0 and not forced.notes
    for r in (auto, forced):
        assert r.primal == pytest.approx(naive.primal, rel=1e-8)
    assert set(forced.profile) == {"loss_pass", "pair_forms", "eig", "screening",
                                   "loss_pass_visits"}
    # the loss passes' share of the visits: all of them without screening, less with it
    assert naive.profile["loss_pass_visits"] == naive.triplet_visits > 0
    assert 0 < forced.profile["loss_pass_visits"] < forced.triplet_visits
    hinge = ts.solve(X, y, lam, triplets=ts.TripletProblem(X, y, k=2, loss="hinge"),
                     loss="hinge", screening=None, tol=1e-6)
    assert hinge.profile["loss_pass_visits"] == hinge.triplet_visits > 0
    p = ts.path(X, y, triplets=prob, n_lambdas=8, tol=1e-8)
    assert p.profile["triplets_visited"] == p.triplet_visits.sum()
    pn = ts.path(X, y, triplets=prob, n_lambdas=8, tol=1e-8, screening=None)
    assert pn.profile["loss_pass_visits"] == pn.profile["triplets_visited"]
    pf = ts.path(X, y, triplets=prob, n_lambdas=8, tol=1e-8, backoff=False)
    assert 0 < pf.profile["loss_pass_visits"] < pf.profile["triplets_visited"]


def test_dynamic_backoff_skips_doubling_lambdas_and_covers_the_start_rounds(monkeypatch):
    """A lambda whose dynamic rounds did not pay skips them on the next 3 lambdas, 6
    after a second such lambda in a row, 3 again once rounds paid; along a path the
    other spheres' round at each lambda's start is under that back-off: it runs only
    while dynamic screening is on and is counted as a round (so a sphere that screens
    little is not tried at every lambda)."""
    from solvers.triplet_screening.state import _Run

    SKIP_LAMBDAS = Tuning().skip_lambdas
    X, y = _data(3, n=30)
    prob = ts.TripletProblem(X, y, k=3)
    lam = 0.1 * prob.lambda_max()
    dyn: dict = {}

    def lam_run(paid: bool | None) -> bool:
        run = _Run(prob, lam, active_set=False, path_state=dyn)
        on = run.dynamic_on
        if paid is not None:
            run._dyn_cost, run._dyn_gain = 10.0, (20.0 if paid else 1.0)
        run.finish_dynamic(5)
        return on

    assert lam_run(False)                               # did not pay: skip 3
    assert [lam_run(None) for _ in range(SKIP_LAMBDAS)] == [False] * SKIP_LAMBDAS
    assert lam_run(False)                               # again: skip 6
    assert [lam_run(None) for _ in range(2 * SKIP_LAMBDAS)] == [False] * (2 * SKIP_LAMBDAS)
    assert lam_run(True) and lam_run(False)             # paid, then not: skip 3 again
    assert [lam_run(None) for _ in range(SKIP_LAMBDAS + 1)] == [False] * SKIP_LAMBDAS + [True]
    # along a path (rounds made cheap enough to be tried on so small a problem)
    tn = Tuning(round_overhead=0)
    starts, counted = [], []
    spheres_at, dynamic_round = _Run.spheres_at, _Run.dynamic_round

    def spy_spheres(self, kinds, M, ev, gap, D, ref, first, *a):
        if first:
            starts.append(self.dynamic_on)
        return spheres_at(self, kinds, M, ev, gap, D, ref, first, *a)

    def spy_round(self, n_before, n_spheres, saved, iteration):
        if iteration == 0:
            counted.append(saved)
        return dynamic_round(self, n_before, n_spheres, saved, iteration)

    monkeypatch.setattr(_Run, "spheres_at", spy_spheres)
    monkeypatch.setattr(_Run, "dynamic_round", spy_round)
    p = ts.path(X, y, triplets=prob, tol=1e-8, n_lambdas=30, screening=("rrpb", "gb"),
                _tuning=tn)
    assert starts and all(starts) and len(counted) == len(starts)
    assert len(starts) < len(p.lambdas) - 1
    assert sum("dynamic screening skipped" in n for n in p.notes) > 0


@pytest.mark.parametrize("kind", ["dgb", "gb", "pgb"])
@pytest.mark.parametrize(("diagonal", "loss"), [(False, "smoothed_hinge"),
                                                (True, "smoothed_hinge"),
                                                (False, "hinge")])
def test_a_round_at_an_exact_iterate_keeps_its_evaluation(kind, diagonal, loss):
    """After a screening round at ``M`` (which lies in the new sphere: its centre for
    DGB, its boundary for GB) the reduced objective's evaluation at ``M`` is the one
    before the round (to rounding): the solver keeps it instead of a new pass."""
    from solvers.triplet_screening.state import _Run
    from solvers.triplet_screening.triplets import _pad

    X, y = _data(41, n=40)
    prob = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal, loss=loss)
    lam = prob.lambda_max() * 0.2
    M = ts.solve(X, y, lam, triplets=prob, tol=1e-5, screening=None, diagonal=diagonal,
                 loss=loss).M
    run = _Run(prob, lam, active_set=False)
    ev = run.evaluate(M, run.unscr)
    gap = _pad(ev.P - run.dual_value(ev), ev.P)
    sp = sph.make_sphere(kind, lam, M, grad=ev.G, gap=gap)
    assert run.screen([sp], "sphere", None, 1) > 0
    assert run.still_exact(M, True) and not run.still_exact(M, False)
    _same_eval(ev, run.evaluate(M, run.unscr), prob.primal(M, lam))


@pytest.mark.parametrize("seed", range(4))
def test_dynamic_rrpb_rounds_are_safe_and_reach_the_optimum(seed):
    """RRPB's rounds inside a solve (DGB at the iterate, adaptive or every 10
    iterations) happen, never screen a triplet into the wrong set, and both schedules
    reach the optimum."""
    X, y = _data(200 + seed, n=30)
    prob = ts.TripletProblem(X, y, k=4)
    lam = ts.lambda_max(X, y, k=4) * 10 ** np.random.default_rng(seed).uniform(-1.5, -0.7)
    opt = _tight(X, y, lam, prob)
    m, unc, c = prob.margins(opt.M), opt.radius * prob.h_norms + 1e-9, 1 - prob.gamma
    for dyn in ("adaptive", "every10"):
        r = _quiet(ts.solve, X, y, lam, triplets=prob, screening=("rrpb",), dynamic=dyn,
                   backoff=False, tol=1e-10, max_iter=20_000)
        assert np.all(m[r.screened_L] - unc[r.screened_L] < c), "wrong L-hat"
        assert np.all(m[r.screened_R] + unc[r.screened_R] > 1.0), "wrong R-hat"
        assert r.primal == pytest.approx(opt.primal, rel=1e-8)
        assert r.params["dynamic"] == dyn
        assert any(it > 0 for it in r.screening_log["iteration"]), "no round in the solve"


@pytest.mark.parametrize(("screening", "dynamic", "diagonal"), [
    (None, "adaptive", False), (("rrpb",), "adaptive", False),
    (("rrpb", "pgb"), "adaptive", False), (("rrpb", "gb"), "every10", False),
    (None, "adaptive", True), (("rrpb", "pgb"), "adaptive", True)])
def test_compiled_loop_is_the_python_loop_bit_for_bit(screening, dynamic, diagonal):
    """The projected gradient's certificates, history rows and round decisions made
    inside its compiled loop (burst._pgd_burst) are those Python makes when every
    iteration is handed back to it (``_compiled=False``: Python certifies each iterate
    and decides each dynamic round; the steps themselves are written once, compiled, and
    checked against solvers.pgd.PGD below), bit for bit: iterates, certificates, history
    rows (all but their times), stop reasons and work counters, on a path (path
    screening and dynamic rounds with RRPB), in chunks of a few iterations, and to max_iter
    (with its warning); the history's times increase. With other spheres the loop hands
    back every iteration after which a dynamic round may be due (adaptive or every 10).
    Full and diagonal metrics."""
    X, y = _data(5, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, diagonal=diagonal) * 0.05
    out = {}
    for enabled, chunk in ((False, 2048), (True, 2048), (True, 3)):
        how = dict(_compiled=enabled, _chunk=chunk)
        p = ts.path(X, y, triplets=prob, tol=1e-9, n_lambdas=12, screening=screening,
                    backoff=False, dynamic=dynamic, diagonal=diagonal, **how)
        with pytest.warns(ConvergenceWarning):
            short = ts.solve(X, y, lam, triplets=prob, tol=1e-14,
                             max_iter=5 if diagonal else 23, screening=screening,
                             dynamic=dynamic, diagonal=diagonal, **how)
        full = ts.solve(X, y, lam, triplets=prob, tol=1e-10, max_iter=20_000,
                        screening=screening, backoff=False, dynamic=dynamic, diagonal=diagonal,
                        **how)
        assert (full.params["_compiled"], full.params["_chunk"]) == (enabled, chunk)
        out[(enabled, chunk)] = (p, short, full)
        assert np.all(np.diff(full.history.time) >= 0)
    ref = out[(False, 2048)]
    for key in ((True, 2048), (True, 3)):
        p, short, full = out[key]
        for u, v in zip(ref[0].Ms, p.Ms, strict=True):
            np.testing.assert_array_equal(u, v)
        for name in ("gap", "primal", "dual", "n_iter", "triplet_visits"):
            np.testing.assert_array_equal(getattr(ref[0], name), getattr(p, name))
        _same_trace(ref[1], short)
        _same_trace(ref[2], full)
        assert short.stop_reason == "max_iter" and full.stop_reason == "converged"
    log = ref[2].screening_log
    for kind in screening or ():  # every sphere's dynamic rounds did happen
        assert any(s == kind and it > 0 for s, it in zip(log["sphere"], log["iteration"],
                                                          strict=True)), kind


@pytest.mark.parametrize("loss", ["smoothed_hinge", "hinge"])
def test_compiled_loop_hands_an_inexact_iterate_back(monkeypatch, loss):
    """An iterate outside a screening sphere needs the screened triplets for its full
    objective: the compiled loop (the projected gradient's, or the dual method's with
    the hinge) returns it after the step and the Python loop certifies it (here every
    iterate, with a far-away sphere added to every solve): the same trace and dual point
    as without the compiled loop."""
    from solvers.triplet_screening.spheres import Sphere
    from solvers.triplet_screening.state import _Run

    X, y = _data(6, n=30, d=3)
    prob = ts.TripletProblem(X, y, k=3, loss=loss)
    lam = ts.lambda_max(X, y, k=3, loss=loss) * 0.1
    init = _Run.__init__

    def far(self, *a, **kw):
        init(self, *a, **kw)
        self.regions.append(Sphere("far", 50.0 * np.eye(3), 1e-3))

    monkeypatch.setattr(_Run, "__init__", far)
    res = {}
    for enabled in (False, True):
        res[enabled] = ts.solve(X, y, lam, triplets=prob, loss=loss, tol=1e-10,
                                max_iter=5000, _compiled=enabled)
        assert not np.any(res[enabled].history.exact[1:])
    _same_trace(res[False], res[True])
    np.testing.assert_array_equal(res[False].alpha, res[True].alpha)


@pytest.mark.parametrize(("screening", "dynamic", "diagonal"), [
    (None, "adaptive", False), (("rrpb",), "adaptive", False),
    (("rrpb", "pgb"), "adaptive", False), (("rrpb", "gb"), "every10", False),
    (("pgb", "dgb"), "adaptive", False), (None, "adaptive", True),
    (("rrpb", "pgb"), "adaptive", True)])
def test_compiled_dual_loop_is_the_python_loop_bit_for_bit(screening, dynamic, diagonal):
    """The dual method's certificates, history rows and round decisions made inside its
    compiled loop (burst._dual_burst) are those Python makes when every iteration is
    handed back to it (``_compiled=False``: Python certifies each iterate and decides
    each dynamic round; the steps themselves are written once, compiled, and checked
    against solvers.apg.APG below), bit for bit: iterates, certificates, dual points,
    history rows (all but their times), stop reasons and work counters, on a path (path
    screening, each lambda from the previous dual iterate), in chunks of a few
    iterations, to max_iter (with its warning), and with dynamic rounds handed back to
    Python (adaptive or every 10; with and without the back-off, whose first skip
    Python notes). Full and diagonal metrics."""
    X, y = _data(5, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, loss="hinge", diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, loss="hinge", diagonal=diagonal) * 0.05
    out = {}
    for enabled, chunk in ((False, 2048), (True, 2048), (True, 3)):
        kw = dict(loss="hinge", diagonal=diagonal, _compiled=enabled, _chunk=chunk)
        p = ts.path(X, y, triplets=prob, tol=1e-9, n_lambdas=12, screening=screening,
                    backoff=False, dynamic=dynamic, **kw)
        with pytest.warns(ConvergenceWarning):
            short = ts.solve(X, y, lam, triplets=prob, tol=1e-14,
                             max_iter=5 if diagonal else 23, screening=screening,
                             dynamic=dynamic, **kw)
        full = ts.solve(X, y, lam, triplets=prob, tol=1e-10, max_iter=20_000,
                        screening=screening, backoff=False, dynamic=dynamic, **kw)
        auto = ts.solve(X, y, lam, triplets=prob, tol=1e-10, max_iter=20_000,
                        screening=screening, dynamic=dynamic, **kw)
        out[(enabled, chunk)] = (p, short, full, auto)
        assert full.method == "dual" and np.all(np.diff(full.history.time) >= 0)
    ref = out[(False, 2048)]
    for key in ((True, 2048), (True, 3)):
        p, short, full, auto = out[key]
        for u, v in zip(ref[0].Ms, p.Ms, strict=True):
            np.testing.assert_array_equal(u, v)
        for name in ("gap", "primal", "dual", "n_iter", "triplet_visits"):
            np.testing.assert_array_equal(getattr(ref[0], name), getattr(p, name))
        assert ref[0].profile["loss_pass_visits"] == p.profile["loss_pass_visits"]
        for a, b in zip(ref[1:], (short, full, auto), strict=True):
            _same_trace(a, b)
            np.testing.assert_array_equal(a.alpha, b.alpha)
            assert a.notes == b.notes
        assert short.stop_reason == "max_iter" and full.stop_reason == "converged"
    if screening and screening[-1] != "rrpb":
        assert screening[-1] in list(ref[2].screening_log["sphere"])  # rounds did happen


@pytest.mark.parametrize("diagonal", [False, True])
def test_compiled_dual_steps_are_the_apg_steps_bit_for_bit(diagonal):
    """The dual method's steps exist only in its compiled loop (burst._dual_burst); they
    are those of the generic solvers.apg.APG (box [0, 1], adaptive restart, the
    doubling line search with L grown back by Tuning.dual_shrink) on the same dual,
    bit for bit: the last iterate after as many iterations from the KKT map of 0."""
    import warnings

    from solvers.apg import APG
    from solvers.triplet_screening.kernels import _dual_grad, _dual_sums
    from solvers.triplet_screening.loops import _run_solve
    from solvers.triplet_screening.pairs import _diff, kkt_alpha
    from solvers.triplet_screening.state import _Opts, _Run
    from solvers.triplet_screening.tuning import DEFAULT

    X, y = _data(7, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, loss="hinge", diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, loss="hinge", diagonal=diagonal) * 0.05
    n_iter = 60
    opts = _Opts(screening=(), rule="sphere", active_set=False, method="dual", tol=1e-15,
                 max_iter=n_iter, callback=None, want_alpha=False, backoff=False)
    M0 = prob.data.zeros()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res, ex = _run_solve(prob, lam, M0, opts, None, None)
    assert res.n_iter == n_iter
    run = _Run(prob, lam, active_set=False)
    sub, gamma = run.unscr, prob.gamma

    def plus(a):
        return run.proj(sub.assemble(sub.pair_weights(a)) + run.HL)[0]

    def value(a):
        return -sph.dual_value(*_dual_sums(a, plus(a)), gamma, lam)

    def value_and_grad(a):
        return value(a), _dual_grad(sub.quad(plus(a) / lam), sub.la, sub.lb, gamma, a)

    hn2 = prob.data.hn[sub.idx] ** 2
    L0 = max(gamma + float(hn2.mean()) / lam, 1e-12)
    x0 = kkt_alpha(_diff(sub.quad(M0), sub.la, sub.lb), gamma, run.hinge)
    eng = APG(value_and_grad, None, x0, value=value, L0=L0, adaptive_restart=True,
              box=(0.0, 1.0), shrink=DEFAULT.dual_shrink)
    for _ in range(n_iter):
        eng.step()
    assert eng.n_restarts > 0  # the restarts are exercised
    np.testing.assert_array_equal(ex["alpha"], eng.x)


def test_dual_line_search_failure_raises_with_its_iteration_and_L():
    """A line search that cannot succeed (``L`` shrunk by 1e-300 before it, then doubled
    at most MAX_BACKTRACKS times) ends the compiled dual loop with a NumericalError
    naming the iteration and the last ``L`` tried, ``L0 * 1e-300 * 2^60``."""
    from solvers.base import NumericalError
    from solvers.triplet_screening.burst import MAX_BACKTRACKS
    from solvers.triplet_screening.tuning import Tuning

    X, y = _data(7, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, loss="hinge")
    lam = ts.lambda_max(X, y, k=4, loss="hinge") * 0.05
    L0 = float(np.mean(prob.data.hn ** 2)) / lam  # the dual's starting L (gamma = 0)
    with pytest.raises(NumericalError, match=f"after {MAX_BACKTRACKS} doublings "
                       r"\(iteration 1, L=") as err:
        ts.solve(X, y, lam, k=4, loss="hinge", method="dual", screening=None,
                 _tuning=Tuning(dual_shrink=1e-300))
    L = float(str(err.value).rsplit("L=", 1)[1].rstrip(")"))
    assert L == pytest.approx(L0 * 1e-300 * 2.0 ** MAX_BACKTRACKS, rel=1e-3)


@pytest.mark.parametrize("diagonal", [False, True])
def test_compiled_pgd_steps_are_the_pgd_steps_bit_for_bit(diagonal):
    """The projected gradient's steps exist only in compiled code (burst._gll_step, in
    _pgd_burst and _working_steps); they are those of the generic
    solvers.pgd.PGD (BB steps, the GLL window, its line search) on the same objective,
    bit for bit: every iterate's objective and step size, and the best iterate, after
    as many iterations from 0, with the loop run in chunks, one step a call (every
    iteration handed back) and with an active set refreshed only at the end."""
    import warnings

    from solvers.pgd import PGD
    from solvers.triplet_screening.loops import _run_solve
    from solvers.triplet_screening.state import _Opts, _Run
    from solvers.triplet_screening.triplets import _GLL_MEMORY

    X, y = _data(7, n=40, d=4)
    prob = ts.TripletProblem(X, y, k=4, diagonal=diagonal)
    lam = ts.lambda_max(X, y, k=4, diagonal=diagonal) * 0.05
    n_iter = 8 if diagonal else 40  # the diagonal metric's solve ends exactly at 9
    M0 = prob.data.zeros()
    run = _Run(prob, lam, active_set=False)
    ev0 = run.evaluate(M0, run.unscr)
    eng = PGD(lambda M: run.evaluate(M, run.unscr), lambda Z: run.proj(Z), M0, ev0,
              step=1.0 / lam, memory=_GLL_MEMORY)
    P, steps, Ms = [ev0.P], [1.0 / lam], [M0]
    for _ in range(n_iter):
        Ms.append(eng.step())
        P.append(eng.ev.P)
        steps.append(eng.step_size)
    best = Ms[int(np.argmin(P))]
    for how in (dict(compiled=True, chunk=7), dict(compiled=False),
                dict(active_set=True, screen_every=n_iter)):
        kw = dict(screening=(), rule="sphere", active_set=False, method="pgd", tol=1e-15,
                  max_iter=n_iter, callback=None, want_alpha=False, backoff=False)
        opts = _Opts(**{**kw, **how})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            res, _ = _run_solve(prob, lam, M0, opts, None, None)
        assert res.n_iter == n_iter
        np.testing.assert_array_equal(res.step, steps[-1])
        if how.get("active_set"):  # certified at the start and at the refresh only
            np.testing.assert_array_equal(res.history.reduced_primal, [P[0], P[-1]])
            continue
        np.testing.assert_array_equal(res.history.reduced_primal, P)
        np.testing.assert_array_equal(res.history.step, steps)
        np.testing.assert_array_equal(res.M, best)


def test_compiled_loop_cache_is_keyed_on_every_solver_source():
    """The compiled loop inlines code and constants from seven modules; numba keys its
    disk cache on the package's source hash too (solvers._jitcache, tested end to end
    in test_jitcache.py), so an edit to any of them compiles it anew."""
    from solvers import _jitcache
    from solvers.triplet_screening import burst

    for kernel in (burst._pgd_burst, burst._dual_burst, burst._working_steps):
        loc = kernel._cache._impl._locator
        assert getattr(type(loc), "_dualscope", False)
        # the stamp: the sources' hash tagged with the uid scheme (solvers._jitcache)
        assert loc.get_source_stamp()[1] == \
            f"{_jitcache.sources_hash()}-{_jitcache.UID_SCHEME}"


def test_compiled_triplet_kernels_hold_the_gil():
    """The sorted pass's orders are shared by every solve of a problem (the dashboard's
    sessions share cached problems): that is safe only while no compiled kernel that
    can run a pass releases the GIL."""
    from numba.core.registry import CPUDispatcher

    from solvers.triplet_screening import burst, kernels, loops, pathscreen

    seen = 0
    for mod in (kernels, burst, loops, pathscreen):
        for f in vars(mod).values():
            if isinstance(f, CPUDispatcher):
                seen += 1
                assert not f.targetoptions.get("nogil"), f.py_func.__name__
    assert seen > 20
