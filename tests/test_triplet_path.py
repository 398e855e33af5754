"""Safe triplet screening along the regularisation path: path screening (the fused pass,
re-tests, its back-off), warm starts and the carried evaluation."""

import itertools
import math
from dataclasses import replace

import numpy as np
import pytest
from tripletkit import (
    _data,
    _psd,
    _same_eval,
)

from solvers import triplet_screening as ts
from solvers.triplet_screening.tuning import Tuning


def test_path_with_screening_matches_naive_path():
    X, y = _data(12, n=36)
    prob = ts.TripletProblem(X, y, k=4)
    kw = dict(triplets=prob, n_lambdas=25, tol=1e-9, backoff=False)
    naive = ts.path(X, y, screening=None, **kw)
    assert naive.terminated_by in ("rule", "n_lambdas")
    assert naive.lam_max == pytest.approx(prob.lambda_max())
    np.testing.assert_allclose(naive.lambdas[1:] / naive.lambdas[:-1], 0.9)
    for extra in (dict(), dict(range_screening=True, screening=("rrpb",)),
                  dict(active_set=True), dict(screening=("rrpb", "pgb"), rule="linear")):
        p = ts.path(X, y, compare=("rpb:sphere", "gb:linear", "pgb:sdls", "cdgb"), **kw,
                    **extra) if not extra else ts.path(X, y, **kw, **extra)
        n = min(len(p.lambdas), len(naive.lambdas))
        np.testing.assert_allclose(p.primal[:n], naive.primal[:n], rtol=1e-7)
        assert np.all((p.rate_final >= 0) & (p.rate_final <= 1))
        assert np.all(p.rate_final >= p.rate_path - 1e-12)
        assert p.converged.all()
    p = ts.path(X, y, compare=("rpb:sphere", "gb:linear", "pgb:sdls", "cdgb"), **kw)
    for key, v in p.compare_rates.items():
        assert np.all((v[1:] >= 0) & (v[1:] <= 1)), key
    assert p.rate_path[0] > 0.99  # at lambda_max every triplet is in L* (ties at the border)
    # the termination rule: relative loss decrease per relative lambda decrease < 0.01
    if p.terminated_by == "rule":
        l0, l1 = p.loss[-2], p.loss[-1]
        lam0, lam1 = p.lambdas[-2], p.lambdas[-1]
        assert (l0 - l1) / l0 * lam0 / (lam0 - lam1) < 0.01


@pytest.mark.parametrize(("screening", "diagonal", "loss"), [
    (("rrpb",), False, "smoothed_hinge"), (("rrpb", "pgb"), False, "smoothed_hinge"),
    (("rrpb",), True, "smoothed_hinge"), (("rrpb",), False, "hinge")])
def test_anchor_block_path_matches_naive_path(screening, diagonal, loss):
    """All triplets (rows of ~20: the anchor-block path pass, every pair out of use
    dropped, each lambda starting from the previous one's last evaluation): the
    screened path reaches the naive path's optimum at every lambda, full and diagonal
    metrics, both losses."""
    X, y = _data(14, n=30)
    prob = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal, loss=loss)
    assert prob.data.blocks is not None
    kw = dict(triplets=prob, n_lambdas=20, tol=1e-9, backoff=False, diagonal=diagonal,
              loss=loss)
    naive = ts.path(X, y, screening=None, **kw)
    p = ts.path(X, y, screening=screening, **kw)
    n = min(len(p.lambdas), len(naive.lambdas))
    assert n >= 10
    np.testing.assert_allclose(p.primal[:n], naive.primal[:n], rtol=1e-7)
    assert p.converged[:n].all()
    assert np.mean(p.rate_path[1:n]) > 0.5  # the block pass did screen


def test_path_terminates_by_the_paper_rule():
    X, y = _data(13, n=24, sep=3.0)
    p = ts.path(X, y, k=3, ratio=0.5, n_lambdas=200)
    assert p.terminated_by == "rule" and len(p.lambdas) < 200


def test_warm_start_equals_cold_start_and_rrpb_uses_it():
    X, y = _data(14, n=36)
    prob = ts.TripletProblem(X, y, k=4)
    lam = 0.01 * prob.lambda_max()
    cold = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-10)
    prev = ts.solve(X, y, 1.2 * lam, triplets=prob, backoff=False, tol=1e-10)
    warm = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-10, init=prev)
    assert warm.primal == pytest.approx(cold.primal, rel=1e-9)
    assert np.linalg.norm(warm.M - cold.M) <= warm.radius + cold.radius + 1e-12
    log = warm.screening_log
    first = (log["iteration"] == 0) & (log["sphere"] == "rrpb")
    assert (log["new_L"][first] + log["new_R"][first]).sum() > 0.5 * prob.n_triplets
    assert warm.n_iter <= cold.n_iter
    same = ts.solve(X, y, lam, triplets=prob, backoff=False, tol=1e-10, init=warm)
    assert same.n_iter <= 1


@pytest.mark.parametrize("k", [5, math.inf])
def test_path_screening_runs_where_it_is_predicted_to_pay(k):
    """The back-off of path screening: the pass runs when the visits it saves (loss
    passes and pair forms over the last solve's evaluations) reach its cost (the fitted
    model: anchor blocks or the pair-id pass), both for the share it would screen; the
    share is taken as 1 first, then measured on a fixed sample of the triplets with
    the reference's sphere (close to the pass's own share); each skip is noted with
    its numbers. Along a path: a tight tolerance (many evaluations per lambda)
    screens, a loose one sits out."""
    from solvers.triplet_screening import pathscreen as pth
    from solvers.triplet_screening.rules import _rule_masks

    X, y = _data(31, n=40)
    prob = ts.TripletProblem(X, y, k=k)
    d = prob.data
    n_t = d.n_t
    tn = Tuning()
    ps = pth.PathScreen(d, prob.gamma, 40)
    if k == math.inf:
        assert d.blocks is not None
        assert ps.pass_cost(0.25) == pytest.approx(
            tn.block_triplet_weight * n_t + tn.block_row_weight * d.blocks.PB.size
            + tn.keep_weight * 0.75 * n_t + tn.path_overhead)
    else:
        assert d.blocks is None
        assert ps.pass_cost(0.25) == pytest.approx(tn.pair_pass_weight * n_t
                                                   + tn.path_overhead)
    ps.account(3)
    # the saving is what a loss pass costs now (in anchor blocks: cheaper per triplet)
    # less what it costs over the remaining half by pair ids, plus the pair forms
    now = (tn.block_pass_triplet * n_t + tn.block_pass_row * d.blocks.PB.size
           if k == math.inf else n_t)
    assert d.everything.pass_visits(tn) == pytest.approx(now)
    assert ps.gain(0.5) == pytest.approx(
        3 * (now - 0.5 * n_t + 2 * tn.pair_weight * d.d * 0.25 * d.n_pairs))
    lam = 0.5 * prob.lambda_max()
    prev = ts.solve(X, y, lam, triplets=prob, screening=None, tol=1e-10)
    at = (0.6 * lam, prev.M, lam, math.sqrt(2 * max(prev.gap, 0.0) / lam))
    true = pth.PathScreen(d, prob.gamma, 40)
    true.advance(*at)
    share = 1.0 - true.active.size / n_t
    assert 0.2 < share < 0.9
    for sample in (n_t, 48):  # no sample (a small problem), then a sample of 48
        tn = Tuning(sample=sample, probe_min=n_t if sample == n_t else 0)
        ps = pth.PathScreen(d, prob.gamma, 40, tuning=tn)
        seen = set()
        for evals in range(1, 200):
            ps.account(evals)
            note = ps.skip(*at)
            best = ps.gain(1.0) >= tn.path_pay_margin * ps.pass_cost(1.0)
            if not best:
                assert note and f"at most {ps.gain(1.0):,.0f}" in note
                assert f"{tn.path_pay_margin * ps.pass_cost(1.0):,.0f}" in note
                seen.add("best")
                continue
            if sample == n_t:
                assert note is None
                seen.add("run")
                break
            sp = ts.rrpb_sphere(*at[1:3], at[0], at[3])
            L, R = _rule_masks(d, ps._probe, sp, "sphere", prob.gamma, None)
            est = float(L.sum() + R.sum()) / sample
            assert abs(est - share) < 0.25
            assert (note is None) == (ps.gain(est) >= tn.path_pay_margin * ps.pass_cost(est))
            if note:
                assert f"{est:.0%} of a sample of {sample}" in note
                seen.add("sampled")
            else:
                seen.add("run")
                break
        assert seen == ({"best", "run"} if sample == n_t else {"best", "sampled", "run"})
    # along a path (the notes count the lambdas without the pass); with all triplets in
    # anchor blocks a loss pass is cheap, so the pass pays only on a larger problem
    tn = Tuning(path_pay_margin=1.0)  # lambdas of 3-5 iterations here
    Xp, yp = _data(31, n=80) if k == math.inf else (X, y)
    probp = ts.TripletProblem(Xp, yp, k=k)
    tight = ts.path(Xp, yp, triplets=probp, tol=1e-10, n_lambdas=12, screening=("rrpb",),
                    _tuning=tn)
    loose = ts.path(Xp, yp, triplets=probp, tol=1e-2, n_lambdas=12, screening=("rrpb",),
                    _tuning=tn)
    assert tight.params["_tuning"] == {"path_pay_margin": 1.0}
    for p in (tight, loose):
        passes = int(np.sum(p.rate_path[1:] > 0))
        skips = sum("path screening skipped" in n for n in p.notes)
        assert passes + skips == len(p.lambdas) - 1
    if k == math.inf:  # the pair-id pass (k = 5) costs more than so few triplets save
        assert np.sum(tight.rate_path[1:] > 0) > np.sum(loose.rate_path[1:] > 0)
    assert sum("path screening skipped" in n for n in loose.notes) > 0
    # the range-based scan runs its first two times whatever the prediction
    rng = ts.path(X, y, triplets=prob, tol=1e-2, n_lambdas=4, termination=False,
                  screening=("rrpb",), range_screening=True, _tuning=tn)
    assert np.all(rng.rate_range[1:3] > 0)


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("k", [5, math.inf])
def test_path_pass_is_the_rrpb_rule_on_every_triplet_with_its_state(diagonal, k):
    """The fused per-lambda pass (rule, status, L-hat pair counts, compaction) against the
    RRPB sphere rule evaluated directly on all triplets, over several lambdas; the
    range-based scan screens a superset. k = inf: rows of ~27 triplets, the anchor-block
    pass; k = 5: rows of 5, the pair-id pass."""
    from solvers.triplet_screening.pathscreen import PathScreen

    X, y = _data(31, n=40)
    prob = ts.TripletProblem(X, y, k=k, diagonal=diagonal)
    d = prob.data
    assert (d.blocks is not None) == (k == math.inf)
    per, rng_ = (PathScreen(d, prob.gamma, 10, incremental=inc) for inc in (False, True))
    lam = 0.5 * prob.lambda_max()
    prev = ts.solve(X, y, lam, triplets=prob, diagonal=diagonal, screening=None, tol=1e-10)
    for _ in range(6):
        lam1 = 0.8 * lam
        eps = math.sqrt(2 * prev.gap / lam)
        per.advance(lam1, prev.M, lam, eps)
        rng_.advance(lam1, prev.M, lam, eps)
        lo, hi = prob.bounds(ts.rrpb_sphere(prev.M, lam, lam1, eps), "sphere")
        c = 1 - prob.gamma
        L, R = hi < c, lo > 1
        close = ((np.abs(hi - c) < 1e-9 * (1 + np.abs(hi)))
                 | (np.abs(lo - 1) < 1e-9 * (1 + np.abs(lo))))
        assert np.all(((per.status == 1) == L) | close)
        assert np.all(((per.status == 2) == R) | close)
        assert per.nL == np.sum(per.status == 1) and per.nR == np.sum(per.status == 2)
        cnt = (np.bincount(d.pa[per.status == 1], minlength=d.n_pairs)
               - np.bincount(d.pb[per.status == 1], minlength=d.n_pairs))
        np.testing.assert_array_equal(per.cnt, cnt)
        sub = per.sub
        np.testing.assert_array_equal(sub.idx, np.flatnonzero(per.status == 0))
        np.testing.assert_array_equal(sub.pairs[sub.la], d.pa[sub.idx])
        np.testing.assert_array_equal(sub.pairs[sub.lb], d.pb[sub.idx])
        np.testing.assert_allclose(sub.hn, d.hn[sub.idx], rtol=2e-6)
        assert np.all(sub.hn >= d.hn[sub.idx])  # float32 rounded up: more cautious
        assert len(per.spheres(lam1)) == 1
        # range-based: everything the per-lambda rule screens, on the same side
        assert np.all(rng_.status[per.status == 1] == 1)
        assert np.all(rng_.status[per.status == 2] == 2)
        prev = ts.solve(X, y, lam1, triplets=prob, diagonal=diagonal, screening=None,
                        tol=1e-10, init=prev)
        lam = lam1


@pytest.mark.parametrize(("k", "diagonal"), [(5, False), (math.inf, False), (math.inf, True)])
def test_path_retest_equals_the_full_pass_on_random_paths(k, diagonal):
    """Re-testing only the candidates the sphere's movement can reach (the bound of
    :meth:`.PathScreen._within`) gives at every step of random paths of RRPB spheres
    (centres drifting by random PSD steps of varied size, radii up and down) the full
    pass's statuses, L-hat pair counts and remaining triplets exactly, and those are
    the sphere rule evaluated directly on every triplet (brute force); both kinds of
    step occur."""
    from solvers.triplet_screening import pathscreen

    tn = Tuning(retest_min=0, cand_share=0.3)
    X, y = _data(7, n=40)
    prob = ts.TripletProblem(X, y, k=k, diagonal=diagonal)
    d = prob.data
    rng = np.random.default_rng(3)
    lam0 = 0.3 * prob.lambda_max()
    M = prob.solution_above_lambda_max(prob.lambda_max()) * 3.0
    n_ret = n_full = 0
    for _path in range(3):
        inc = pathscreen.PathScreen(d, prob.gamma, 40, tuning=tn)
        full = pathscreen.PathScreen(d, prob.gamma, 40,
                                     tuning=replace(tn, retest_min=d.n_t + 1))
        assert inc._retest and not full._retest
        lam = lam0
        for _ in range(30):
            step = _psd(rng, X.shape[1], 1)
            step = np.diag(step).copy() if diagonal else step
            M = M + 10.0 ** rng.uniform(-3.5, -0.5) * np.linalg.norm(M) * (
                step / X.shape[1] - 0.3 * M / np.linalg.norm(M))
            lam1 = lam * rng.uniform(0.95, 0.999)
            eps = float(10.0 ** rng.uniform(-6, -1.5))
            for ps in (inc, full):
                ps.advance(lam1, M, lam, eps)
            for f in ("status", "cnt"):
                np.testing.assert_array_equal(getattr(inc, f), getattr(full, f))
            assert (inc.nL, inc.nR) == (full.nL, full.nR)
            for f in ("idx", "la", "lb", "hn", "pairs"):
                np.testing.assert_array_equal(getattr(inc.sub, f), getattr(full.sub, f))
            lo, hi = prob.bounds(ts.rrpb_sphere(M, lam, lam1, eps), "sphere")
            c = 1 - prob.gamma
            close = ((np.abs(hi - c) < 1e-9 * (1 + np.abs(hi)))
                     | (np.abs(lo - 1) < 1e-9 * (1 + np.abs(lo))))
            assert np.all(((inc.status == 1) == (hi < c)) | close)
            assert np.all(((inc.status == 2) == (lo > 1)) | close)
            lam = lam1
        n_ret += inc.n_retest
        n_full += inc.n_full
    assert n_ret >= 10 and n_full >= 4   # a full pass also after re-tests (3 paths)


@pytest.mark.parametrize("diagonal", [False, True])
def test_folded_L_follows_changing_counts(diagonal):
    """The folded ``H_L`` (:meth:`PathScreen.folded_L`) after random changes of the L-hat
    pair counts (a few pairs, many pairs, none, all back to zero) is the sum of
    ``cnt_p F_p F_p^T`` over all pairs, bit for bit the same as the explicit fold and to
    rounding the sum of the H_t, and a fresh array each time."""
    from solvers.triplet_screening.pathscreen import PathScreen

    X, y = _data(12, n=40)
    data = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal).data
    ps = PathScreen(data, 0.05, 10)
    rng = np.random.default_rng(3)
    F = data.F if diagonal else np.einsum("pi,pj->pij", data.F, data.F)
    seen = {"few": 0, "many": 0}
    for _ in range(40):
        kind = rng.choice(["few", "many", "none", "zero"], p=[0.6, 0.2, 0.15, 0.05])
        if kind == "few":
            pick = rng.choice(data.n_pairs, size=rng.integers(1, 8), replace=False)
            ps.cnt[pick] = np.maximum(ps.cnt[pick] + rng.integers(-3, 4, pick.size), 0)
        elif kind == "many":
            ps.cnt[:] = rng.integers(0, 5, data.n_pairs)
        elif kind == "zero":
            ps.cnt[:] = 0.0
        ps.nL = int(ps.cnt.sum() > 0)
        exact = data.assemble(ps.cnt) if ps.nL else data.zeros()
        H = ps.folded_L()
        np.testing.assert_array_equal(H, exact)
        scale = max(float(np.abs(exact).max()), 1.0)
        np.testing.assert_allclose(H, np.tensordot(ps.cnt, F, 1), rtol=0, atol=1e-12 * scale)
        if kind in seen:
            seen[kind] += 1
        H[...] = np.nan                      # the caller's copy: the state is untouched
    assert min(seen.values()) > 0


@pytest.mark.parametrize("screening", [None, ("rrpb", "pgb")])
def test_solve_from_init_starts_from_its_kept_evaluation(screening):
    """``solve(init=res)`` starts at ``res.M`` with the data term's parts ``res`` kept
    there: one loss pass fewer than the same start without them (also at the same
    lambda with a tighter tol, and after pickling), the same iterates to rounding, the
    first recorded primal the full objective at ``res.M``; with another loss (gamma)
    the parts are not used."""
    import pickle

    X, y = _data(1, n=40)
    prob = ts.TripletProblem(X, y, k=5)
    n_t, lm = prob.n_triplets, prob.lambda_max()
    r1 = ts.solve(X, y, 0.1 * lm, triplets=prob, screening=screening, tol=1e-6)
    assert r1._carry is not None
    bare = pickle.loads(pickle.dumps(r1))
    assert bare._carry is not None
    object.__setattr__(bare, "_carry", None)
    for lam, tol in ((0.08 * lm, 1e-9), (0.1 * lm, 1e-10)):
        kw = dict(triplets=prob, screening=screening, tol=tol)
        r2 = ts.solve(X, y, lam, init=pickle.loads(pickle.dumps(r1)), **kw)
        r3 = ts.solve(X, y, lam, init=bare, **kw)
        saved = r3.triplet_visits - r2.triplet_visits  # all, or what RRPB left first
        assert saved == n_t if screening is None else 0 < saved <= n_t
        assert r2.n_iter == r3.n_iter and r2.converged and r3.converged
        assert r2.primal == pytest.approx(r3.primal, rel=1e-12)
        np.testing.assert_allclose(r2.M, r3.M, atol=1e-10 * np.abs(r3.M).max())
        assert r2.history.primal[0] == pytest.approx(prob.primal(r1.M, lam), rel=1e-12)
    other = ts.TripletProblem(X, y, k=5, gamma=0.1)
    kw = dict(triplets=other, screening=screening, tol=1e-9, gamma=0.1)
    r4 = ts.solve(X, y, 0.08 * lm, init=r1, **kw)
    r5 = ts.solve(X, y, 0.08 * lm, init=bare, **kw)
    assert r4.triplet_visits == r5.triplet_visits and r4.primal == r5.primal


@pytest.mark.parametrize(("seed", "diagonal", "loss"), [
    (0, False, "smoothed_hinge"), (1, False, "smoothed_hinge"), (2, True, "smoothed_hinge"),
    (3, False, "hinge")])
def test_carried_evaluation_is_the_next_lambdas_first(seed, diagonal, loss):
    """A path's next lambda starts from the previous solve's last evaluation at its
    solution (``res._carry``) instead of a pass: what a solve hands over (compiled loop or
    Python loop, with and without screening) is the full data term at its solution,
    and after path screening at the next lambda it is that reduced problem's
    evaluation there (to rounding) and the full objective. Refused at another point,
    off the spheres and with an active set."""
    from solvers.triplet_screening.loops import _run_solve
    from solvers.triplet_screening.pathscreen import PathScreen
    from solvers.triplet_screening.state import _Opts, _Ref, _Run

    X, y = _data(300 + seed, n=40)
    prob = ts.TripletProblem(X, y, k=math.inf, diagonal=diagonal, loss=loss)
    p = ts.path(X, y, triplets=prob, n_lambdas=4, tol=1e-10, screening=None,
                diagonal=diagonal, loss=loss)
    lam0, lam1 = p.lambdas[2], p.lambdas[3]
    for enabled in (False, True):
        for screening in ((), ("pgb", "dgb")):
            opts = _Opts(screening=screening, rule="sphere", active_set=False,
                         method="pgd", tol=1e-10, max_iter=5000, callback=None,
                         want_alpha=False, backoff=False, compiled=enabled)
            res, _ = _run_solve(prob, lam0, p.Ms[1].copy(), opts, None, None)
            Mc, A, loss_v, asum, a2 = res._carry
            assert np.array_equal(Mc, res.M)
            full = _Run(prob, lam0, active_set=False).evaluate(res.M, prob.data.everything)
            assert loss_v == pytest.approx(full.P - 0.5 * lam0 * np.vdot(res.M, res.M),
                                           rel=1e-12)
            assert (asum, a2) == (pytest.approx(full.asum, rel=1e-12, abs=1e-12),
                                  pytest.approx(full.a2, rel=1e-12, abs=1e-12))
            np.testing.assert_allclose(A, full.A, rtol=0,
                                       atol=1e-12 * np.abs(full.A).max())
    M0, carry = res.M, res._carry
    ref = _Ref(M=M0, lam=lam0, eps=math.sqrt(2.0 * max(res.gap, 0.0) / lam0))
    run = _Run(prob, lam1, active_set=False)
    run.path_screen(PathScreen(prob.data, prob.gamma, 4), ref)
    assert run.nL > 0 and run.nR > 0 and run.unscr.idx.size > 0
    _same_eval(run.carried_eval(M0, carry), run.evaluate(M0, run.unscr),
               prob.primal(M0, lam1))
    assert run.carried_eval(1.001 * M0, carry) is None      # taken at another point
    far = carry._replace(M=3.0 * M0)
    assert run.carried_eval(3.0 * M0, far) is None          # outside the RRPB sphere
    assert not run.exact(3.0 * M0) and run.exact(M0)
    aset = _Run(prob, lam1, active_set=True)
    assert aset.carried_eval(M0, carry) is None


@pytest.mark.parametrize("screening", [None, ("rrpb", "pgb")])
def test_dual_method_starts_from_the_previous_dual_point(monkeypatch, screening):
    """The dual method (the hinge's default) starts ``solve(init=res)`` from ``res.alpha``
    and each lambda of a path from the previous lambda's last dual iterate, not from the
    KKT map of the previous ``M`` (0/1 for the hinge): the first certified dual value is
    ``D(res.alpha)``, and the warm solve agrees with a cold one within the certified
    radii. On the path every lambda after the first gets the iterate the previous one
    left (a feasible point: in the box, L-hat at 1)."""
    from solvers.triplet_screening import loops
    from solvers.triplet_screening.pairs import kkt_alpha

    X, y = _data(7, n=40)
    prob = ts.TripletProblem(X, y, k=5, loss="hinge")
    lm = prob.lambda_max()
    kw = dict(triplets=prob, loss="hinge", screening=screening, tol=1e-8)
    r1 = ts.solve(X, y, 0.05 * lm, **kw)
    lam = 0.04 * lm
    warm = ts.solve(X, y, lam, init=r1, **kw)
    cold = ts.solve(X, y, lam, **kw)
    assert warm.method == cold.method == "dual" and warm.converged and cold.converged
    assert warm.primal == pytest.approx(cold.primal, rel=1e-6)
    assert np.linalg.norm(warm.M - cold.M) <= warm.radius + cold.radius + 1e-12
    if screening is None:
        d_warm = prob.dual(r1.alpha, lam)
        d_kkt = prob.dual(kkt_alpha(prob.data.margins(r1.M), 0.0, True), lam)
        assert abs(d_warm - d_kkt) > 1e-6 * abs(d_warm)  # the two starts differ here
        assert warm.history.dual[0] == pytest.approx(d_warm, rel=1e-12)

    calls = []
    dual_loop = loops._dual_loop

    def spy(run, M0, opts, ref, ps, mon, extras, alpha0=None):
        out = dual_loop(run, M0, opts, ref, ps, mon, extras, alpha0)
        calls.append((alpha0, extras["alpha"], run.status.copy()))
        return out

    monkeypatch.setattr("solvers.triplet_screening.loops._dual_loop", spy)
    p = ts.path(X, y, n_lambdas=15, termination=False, **kw)
    assert len(calls) == len(p.lambdas) == 15 and calls[0][0] is None
    for (_, left, status), (start, _, _) in itertools.pairwise(calls):
        assert start is left
        assert np.all((left >= 0) & (left <= 1)) and np.all(left[status == 1] == 1)
    assert p.converged.all()


def test_before_after_summary_takes_medians_and_ratios():
    """The before/after bench (explorer.models.triplet_screening.beforeafter) quotes each
    row's median CPU seconds over the rounds of each tree and the ratio before / after."""
    from explorer.models.triplet_screening.beforeafter import summarise

    before = [{"a": [3.0, 1, 1], "b": [1.0, 1, 1]}, {"a": [5.0, 1, 1], "b": [1.2, 1, 1]},
              {"a": [4.0, 1, 1], "b": [9.0, 1, 1]}]
    after = [{"a": [2.0, 1, 1], "b": [1.0, 1, 1]}, {"a": [1.0, 1, 1], "b": [1.5, 1, 1]},
             {"a": [8.0, 1, 1], "b": [1.1, 1, 1]}]
    table = summarise(before, after)
    assert [row for row, *_ in table] == ["a", "b"]
    assert table[0][1:] == (4.0, 2.0, 2.0)
    assert table[1][1:] == (1.2, 1.1, pytest.approx(1.2 / 1.1))
