"""The iterations of the triplet model's two methods, written once, compiled.

The projected gradient's step (Section 5; :class:`solvers.pgd.PGD`'s, bit for bit,
tested) is :func:`_gll_step`, run by :func:`_pgd_burst` (iterations with their
certificates and history rows) and :func:`_working_steps` (the active set's steps
between refreshes). The dual method's step (:class:`solvers.apg.APG`'s,
tested) with the dual's split ``A(alpha)`` is :func:`_apg_step`, run with its
certificate and history row by :func:`_dual_burst`. A burst hands back to Python
(:func:`.loops._drive`) the iterations Python must certify or screen after (see the
reason codes below); the history's per-iteration times come from the CPU's cycle
counter, scaled to the call's measured time. The numba cache is keyed on every solver
source (:mod:`solvers._jitcache`): the loops inline code and constants from seven
modules.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numba.extending import overload

from ..apg import _box_step, _extrapolate, _restart_product
from ..base import Monitor, NumericalError, certified_row, relative_gap
from ..pgd import accepts, bb_step, nonfinite, step_products
from ..prox import _psd_split, _psd_sq_norm
from .kernels import (
    _cycles,
    _dual_grad,
    _dual_sums,
    _evaluate,
    _forms,
    _inside_all,
    _reduced_primal,
    _triplet_weights,
    _weighted_sum,
)
from .pairs import _Eval
from .spheres import dgb_radius, dual_value, pos_sq_vec
from .state import _Opts, _pad, _Run
from .triplets import _GLL_MEMORY, _iters_left

__all__: list[str] = []

#: Why a burst returned: a step done whose certificate is Python's (PENDING: an iterate
#: outside a screening sphere, or every step when :func:`hands_back_each`); converged or
#: stopped (STOP); a full chunk or ``max_iter`` (MAXED); a non-finite objective
#: (NONFINITE); a certified iteration after which a dynamic round is due (ROUND).
PENDING, STOP, MAXED, NONFINITE, ROUND = 1, 2, 3, 4, 5
#: ... or did not: a certified iteration that goes on (:func:`_record_row`)
GO = -1


def _pm(A):  # pragma: no cover - compiled only (see the overload)
    raise NotImplementedError


@overload(_pm)
def _pm_impl(A):  # pragma: no cover - compiled
    # (A_+, A_-) as spheres.proj_pm takes them: the PSD and NSD parts of a matrix, a
    # vector (diagonal metric) clipped at 0 from either side
    if A.ndim == 1:
        return lambda A: (np.maximum(A, 0.0), np.minimum(A, 0.0))

    def full(A):
        P, N, _, _ = _psd_split(A)
        return P, N
    return full


def _plus_sq(A):  # pragma: no cover - compiled only (see the overload)
    raise NotImplementedError


@overload(_plus_sq)
def _plus_sq_impl(A):  # pragma: no cover - compiled
    # ||A_+||^2 as spheres.pos_sq_norm takes it
    if A.ndim == 1:
        return lambda A: pos_sq_vec(A)
    return lambda A: _psd_sq_norm(A)


class _Terms(NamedTuple):
    """The reduced problem a compiled loop steps on, constant during one call: the pair
    forms' source ``src`` of ``n_pairs`` pairs, the remaining triplets' local pair ids
    ``(la, lb)`` and anchor blocks ``blk``, ``gamma``, ``hinge``, the folded L-hat ``HL``
    (``nL`` triplets) and ``lam``."""

    src: tuple
    n_pairs: int
    la: np.ndarray
    lb: np.ndarray
    blk: tuple
    gamma: float
    hinge: bool
    HL: np.ndarray
    lam: float
    nL: float


class _Step(NamedTuple):
    """The projected gradient's state between two steps (:class:`solvers.pgd.PGD`): the
    iterate ``x`` with its evaluation (reduced objective ``P``, gradient ``G``, ``A``,
    ``sum alpha`` and ``sum alpha^2``, L-hat included), the step size, the GLL window
    ``hist[:nh]`` (``hist`` is updated in place) and the last step's trial point
    ``Z = x_prev - step G`` with its NSD part ``N`` (the linear rule's halfspace; ``x``
    for both before any step)."""

    x: np.ndarray
    P: float
    G: np.ndarray
    A: np.ndarray
    asum: float
    a2: float
    step: float
    hist: np.ndarray
    nh: int
    Z: np.ndarray
    N: np.ndarray


class _Dual(NamedTuple):
    """The dual method's state between two steps (:class:`solvers.apg.APG`): the
    iterate ``x``, the previous one, the momentum ``t_prev``, ``t_cur``, the Lipschitz
    estimate ``L``; ``x``'s split ``(A(x), A_+, A_-)`` and sums ``(sum x, ||x||^2,
    ||A_+||^2)`` when ``have_x``."""

    x: np.ndarray
    x_prev: np.ndarray
    t_prev: float
    t_cur: float
    L: float
    have_x: bool
    xA: np.ndarray
    xP: np.ndarray
    xN: np.ndarray
    xs: tuple


class _Cage(NamedTuple):
    """The spheres that screened something (:class:`.state._Regions`): centres ``C``
    (one a row), radii ``r``, centre norms ``cn``, the first ``n`` in use."""

    C: np.ndarray
    r: np.ndarray
    cn: np.ndarray
    n: int


class _Book(NamedTuple):
    """What a compiled loop's certified iterations write (:func:`_record_row`):
    ``best = [best P, best D, best P's sum alpha, its sum alpha^2]``, the buffers of a
    new best iterate (``best_M``, its ``best_A``) and of a new best dual point
    (``dual``), the history ``rows[k] = (best P, D row, gap row, reduced P, step, cycle
    count)`` and ``n = [rows written, new best M?, new dual point?]``."""

    best: np.ndarray
    best_M: np.ndarray
    best_A: np.ndarray
    dual: np.ndarray
    rows: np.ndarray
    n: np.ndarray


class _Arm(NamedTuple):
    """The tests of :meth:`._Run.can_pay`, :meth:`._Run.worth_screening` and
    :meth:`._Run.dynamic_screening` a compiled loop makes: rounds on
    (:attr:`._Run.dynamic_on`), back-off, a loss pass's visits (:meth:`._Sub.pass_visits`),
    the previous lambda's iterations or -1, the least saving that pays (a round's cost
    times ``Tuning.pay_margin``), the last screening radius, rounds possible, adaptive,
    ``screen_every``, the back-off's first skip already noted, ``Tuning.adaptive_shrink``,
    and whether every iteration goes back to Python after its step
    (:func:`hands_back_each`)."""

    dyn_on: bool
    backoff: bool
    v_sub: float
    prev: int
    pay_min: float
    last_r: float
    rounds: bool
    adaptive: bool
    every: int
    noted: bool
    a_shrink: float
    each: bool


#: Slots of a compiled loop's tally (a float array): evaluations of the objective at
#: an iterate, steps, evaluations of the dual's f, restarts, splits ``A(alpha)``, then
#: the CPU cycles of the eigendecompositions, pair forms and loss passes.
EVALS, STEPS, F_EVALS, RESTARTS, SPLITS, EIG, FORMS, LOSS = range(8)


@njit(cache=True)
def _record_row(book, cage, gap_r, P, D, M, A, asum, a2, dual_src, step,
                tol):  # pragma: no cover - compiled
    # _certify and _record of the Python loops for the iterate M (reduced primal P, its
    # evaluation's A, sum alpha and sum alpha^2 with L-hat) and the dual value D of
    # dual_src (M itself, or the dual iterate alpha): when M is exact (inside the cage:
    # P is the full objective) and D finite, the book's best and the buffers of a new
    # best (flagged in book.n), then its history row book.n[0]. Returns (PENDING: not
    # recorded, the full objective or the error is Python's; STOP: the row's relative gap
    # <= tol; else GO, the reduced gap (gap_r when not recorded)).
    if not ((cage.n == 0 or _inside_all(cage.C, cage.r, cage.cn, M.reshape(-1), cage.n))
            and np.isfinite(D)):
        return PENDING, gap_r
    best = book.best
    if P < best[0]:
        best[0] = P
        book.best_M.reshape(-1)[:] = M.reshape(-1)
        book.best_A.reshape(-1)[:] = A.reshape(-1)
        best[2] = asum
        best[3] = a2
        book.n[1] = 1
    if D > best[1]:
        best[1] = D
        book.dual.reshape(-1)[: dual_src.size] = dual_src.reshape(-1)
        book.n[2] = 1
    d_row, g_row = certified_row(best[0], best[1])
    k = book.n[0]
    book.rows[k, 0] = best[0]
    book.rows[k, 1] = d_row
    book.rows[k, 2] = g_row
    book.rows[k, 3] = P
    book.rows[k, 4] = step
    book.rows[k, 5] = float(_cycles())
    book.n[0] = k + 1
    return (STOP if relative_gap(g_row, best[0]) <= tol else GO), _pad(P - D, P)


@njit(cache=True)
def _round_due(arm, gap_r, lam, done):  # pragma: no cover - compiled
    # _Run.dynamic_screening's test after iteration ``done``: adaptive (the gap ball has
    # shrunk below Tuning.adaptive_shrink times the last sphere that screened) or every
    # ``every`` iterations
    if arm.adaptive:
        return dgb_radius(gap_r, lam) <= arm.a_shrink * arm.last_r
    return done % arm.every == 0


@njit(cache=True, inline="always")
def _gll_step(t, s, sigma, max_halvings, tally):  # pragma: no cover - compiled
    # The step of PGD.step from the state s (_Step) with its GLL window: halve the step
    # until the projected trial point passes the non-monotone test, evaluate it over the
    # triplets of t (_Terms), then the paper's BB step and the window; tally[EVALS, EIG,
    # FORMS, LOSS] counted. Returns (the new state, finite P?). With a non-finite P the
    # state is the old one but the step (the halved one, as in PGD), and the caller
    # reports it.
    x, P, G, step, hist = s.x, s.P, s.G, s.step, s.hist
    ref = hist[0]
    for k in range(1, s.nh):
        ref = max(ref, hist[k])
    scale = 1e-12 * max(1.0, abs(P))
    for _ in range(max_halvings):
        c0 = _cycles()
        Z = x - step * G
        x_new, N = _pm(Z)
        tally[EIG] += _cycles() - c0
        loss, s1, s2, A_new, G_new, mm, mh, cf, cl = _evaluate(
            t.src, x_new, t.n_pairs, t.la, t.lb, t.blk, t.gamma, t.hinge, np.empty(0), t.HL,
            t.lam)
        tally[FORMS] += cf
        tally[LOSS] += cl
        P_new = _reduced_primal(loss, t.lam, mm, t.gamma, t.nL, mh)
        tally[EVALS] += 1
        dec, sy, yy, ss = step_products(x, x_new, G, G_new)
        if accepts(P_new, ref, sigma, dec, scale):
            break
        step *= 0.5
    if not np.isfinite(P_new):
        return _Step(x, P, G, s.A, s.asum, s.a2, step, hist, s.nh, s.Z, s.N), False
    step = bb_step(sy, yy, ss, step)
    nh = _push_window(hist, s.nh, P_new)
    return _Step(x_new, P_new, G_new, A_new, s1 + t.nL, s2 + t.nL, step, hist, nh, Z,
                 N), True


@njit(cache=True, inline="always")
def _push_window(hist, nh, P):  # pragma: no cover - compiled
    # PGD's window (a deque of hist.shape[0] values) after appending P; returns its length
    mem = hist.shape[0]
    if nh < mem:
        hist[nh] = P
        return nh + 1
    for k in range(mem - 1):
        hist[k] = hist[k + 1]
    hist[mem - 1] = P
    return nh


@njit(cache=True)
def _pays(arm, it):  # pragma: no cover - compiled
    # _Run.can_pay: could a screening round pay at iteration it?
    return (not arm.backoff) or arm.v_sub * _iters_left(arm.prev, it) >= arm.pay_min


@njit(cache=True)
def _pgd_burst(t, s, sigma, max_halvings, cage, tol, book, gap_r, it, it_max, arm,
               tally):  # pragma: no cover - compiled
    # Iterations it, it + 1, ... of the loop (see the module docstring) from the state s
    # (_Step) on the problem t (_Terms); gap_r: the last reduced gap. Every recorded
    # iterate is exact (inside the cage): its A is the full one's.
    # Returns (reason, the state, gap_r, D); the iterations recorded are in book.n,
    # tally[STEPS] counts the steps taken.
    D = book.best[1]
    reason = MAXED
    while it <= it_max:
        can_pay = arm.dyn_on and _pays(arm, it)  # rounds, under their back-off
        s, finite = _gll_step(t, s, sigma, max_halvings, tally)
        tally[STEPS] += 1
        if not finite:
            reason = NONFINITE
            break
        if arm.each:
            reason = PENDING  # this iteration is the Python loop's
            break
        # the certificate of _certify and _record
        c0 = _cycles()
        ap2 = _plus_sq(s.A)
        tally[EIG] += _cycles() - c0
        D = dual_value(s.asum, s.a2, ap2, t.gamma, t.lam)
        reason, gap_r = _record_row(book, cage, gap_r, s.P, D, s.x, s.A, s.asum, s.a2, s.x,
                                    s.step, tol)
        if reason != GO:
            break
        it += 1
        # _Run.dynamic_screening: a round may be due after this iteration
        if arm.rounds and can_pay and _round_due(arm, gap_r, t.lam, it - 1):
            reason = ROUND
            break
    if reason == GO:
        reason = MAXED
    return reason, s, gap_r, D


@njit(cache=True)
def _working_steps(t, s, sigma, max_halvings, n_steps, tol, n_test,
                   tally):  # pragma: no cover - compiled
    # The active set's iterations up to its next refresh: at most n_steps steps of
    # PGD.step on the working set, nothing certified (the Python loop certifies at the
    # refresh). With tol >= 0 each of the first n_test steps but the last is followed by
    # the working set's own test (_Run.work_converged: its reduced gap at the KKT dual
    # point, relative, <= tol), which ends the run early.
    # Returns (steps taken, converged?, the state, finite?); a non-finite objective ends
    # the run with that step counted.
    done = 0
    finite = True
    conv = False
    while done < n_steps:
        s, finite = _gll_step(t, s, sigma, max_halvings, tally)
        done += 1
        if not finite:
            break
        if tol >= 0.0 and done < n_steps and done <= n_test:
            c0 = _cycles()
            D = dual_value(s.asum, s.a2, _plus_sq(s.A), t.gamma, t.lam)
            tally[EIG] += _cycles() - c0
            if relative_gap(max(s.P - D, 0.0), s.P) <= tol:
                conv = True
                break
    return done, conv, s, finite


def _terms(run: _Run, sub) -> _Terms:
    """The reduced problem over the triplets ``sub`` of ``run``, for a compiled loop."""
    return _Terms(sub.forms.src, int(sub.pairs.size), sub.la, sub.lb, sub.blocks,
                  float(run.gamma), bool(run.hinge), np.ascontiguousarray(run.HL, dtype=float),
                  float(run.lam), float(run.nL))


#: The projected gradient's constants: the defaults of :class:`solvers.pgd.PGD`, whose step
#: :func:`_gll_step` is (tested), with the window of the paper's GLL line search.
SIGMA, MAX_HALVINGS = 1e-4, 60


def start_step(M: np.ndarray, ev: _Eval, step: float) -> _Step:
    """The projected gradient's state at ``M`` (evaluation ``ev``) with step size ``step``
    and a fresh window ``[ev.P]``: a start, or the objective changed at ``M`` (a
    screening round, a refresh)."""
    x = np.ascontiguousarray(M, dtype=float)
    hist = np.zeros(_GLL_MEMORY)
    hist[0] = float(ev.P)
    return _Step(x, float(ev.P), np.ascontiguousarray(ev.G, dtype=float),
                 np.ascontiguousarray(ev.A, dtype=float), float(ev.asum), float(ev.a2),
                 float(step), hist, 1, x, x)


def step_eval(s: _Step) -> _Eval:
    """The evaluation at the state's iterate (the loss alone is not kept: nothing reads it
    after a step)."""
    return _Eval(P=float(s.P), loss=float("nan"), G=s.G, A=s.A, asum=float(s.asum),
                 a2=float(s.a2))


def _cage(run: _Run) -> _Cage:
    reg = run.regions
    return _Cage(reg.C.reshape(reg.r.size, -1), reg.r, reg.cn, int(reg.n))


def _book(run: _Run, n_rows: int, shape: tuple, n_dual: int) -> _Book:
    return _Book(np.array([run.best_P, run.best_D, 0.0, 0.0]), np.empty(shape),
                 np.empty(shape), np.empty(n_dual), np.empty((max(n_rows, 0), 6)),
                 np.zeros(3, dtype=np.int64))


def _arm(run: _Run, opts: _Opts, sub, rounds: bool, pay_min: float) -> _Arm:
    prev = run.path_state.get("iters")
    t = run.tuning
    return _Arm(bool(run.dynamic_on), bool(run.backoff), float(sub.pass_visits(t)),
                -1 if prev is None else int(prev), float(pay_min), float(run.last_radius),
                bool(rounds), bool(opts.adaptive), int(opts.screen_every),
                bool(run._skip_noted), float(t.adaptive_shrink), hands_back_each(opts))


def _call(run: _Run, sub, fn, *args, mon: Monitor | None = None) -> tuple[Any, np.ndarray,
                                                                         tuple]:
    """``fn(*args, tally)`` (a compiled loop over the triplets ``sub``), its tally and
    its clock ``(t0, c0, t1, c1)`` (the monitor's clock, 0 without ``mon``, and the
    cycle counter around the call); the run's work counters (its evaluations and
    splits over ``sub``) and profile (the call's thread time split by the cycles of
    its eigendecompositions, pair forms and loss passes) updated."""
    tally = np.zeros(LOSS + 1)
    t0, c0, tt = mon.elapsed() if mon else 0.0, _cycles_now(), time.thread_time()
    out = fn(*args, tally)
    tt = time.thread_time() - tt
    clock = (t0, c0, mon.elapsed() if mon else 0.0, _cycles_now())
    span = max(clock[3] - c0, 1)
    for key, slot in (("eig", EIG), ("pair_forms", FORMS), ("loss_pass", LOSS)):
        run.prof[key] += tt * min(tally[slot] / span, 1.0)
    n = sub.idx.size * int(tally[EVALS] + tally[SPLITS])
    run.visits += n
    run.loss_visits += n
    run.n_evals += int(tally[EVALS])
    return out, tally, clock


def run_working_steps(run: _Run, s: _Step, n_steps: int, tol: float, n_test: int,
                      it: int) -> tuple[_Step, int, bool]:
    """Take up to ``n_steps`` projected-gradient iterations from ``s`` on the active set's
    working set (``run.work``; ``it``: the first one's number) in one compiled call
    (:func:`_working_steps`), ending early after one of the first ``n_test`` steps (not
    the last) where the working set's own gap meets ``tol`` (:meth:`._Run.work_converged`;
    ``tol < 0``: no test). Returns ``(state, steps taken, ended by the test)``; raises
    :func:`solvers.pgd.nonfinite`'s error on a non-finite objective."""
    sub = run.work
    (done, conv, s, finite), _, _ = _call(run, sub, _working_steps, _terms(run, sub), s,
                                          SIGMA, MAX_HALVINGS, int(n_steps), float(tol),
                                          int(n_test))
    if not finite:
        raise nonfinite(it + int(done) - 1, s.step)
    return s, int(done), bool(conv)


def _bring_back(run: _Run, mon: Monitor, it: int, reason: int, book: _Book, dual_point,
                clock: tuple) -> tuple[int, int]:
    """What a burst's iterations ``it, it + 1, ...`` (the rows of ``book``,
    :func:`_record_row`'s) did to the run and the monitor: the best certified iterate
    and the dual point ``dual_point`` of a new best dual value (:meth:`._Run.keep_dual`),
    the history rows (their times from the cycle counter; ``clock`` as :func:`_call`
    gives it). Returns ``(reason, or STOP when the monitor stops; the next
    iteration)``."""
    t0, c0, t1, c1 = clock
    span = max(c1 - c0, 1)
    best = book.best
    n_rec, got_M, got_D = (int(v) for v in book.n)
    if got_M:
        run.best_P, run.best_M = float(best[0]), book.best_M
        run.best_parts = (book.best_A, float(best[2]), float(best[3]))
    if got_D:
        run.best_D = float(best[1])
        run.keep_dual(dual_point)
    rows = book.rows[:n_rec]
    if rows.shape[0]:
        times = t0 + (rows[:, 5] - c0) / span * (t1 - t0)
        stop = mon.record_rows(
            np.arange(it, it + rows.shape[0]), times, rows[:, 0], rows[:, 1], rows[:, 2],
            reason == STOP, n_L=run.nL, n_R=run.nR, n_work=int(run.work.idx.size),
            n_unscreened=int(run.unscr.idx.size), exact=True, step=rows[:, 4].copy(),
            reduced_primal=rows[:, 3].copy())
        if stop:
            reason = STOP
    return reason, it + n_rec


def run_burst(run: _Run, s: _Step, mon: Monitor, opts: _Opts, it: int, gap_r: float,
              rounds: bool) -> tuple[int, int, _Step, float, float]:
    """Run iterations ``it, it + 1, ...`` from ``s`` in :func:`_pgd_burst` (``rounds``:
    dynamic rounds can run; every iteration handed back after its step when
    :func:`hands_back_each`) and bring back their effects (the best certified iterate
    and dual point, the history rows, the run's counters and profile). Returns
    ``(reason, next iteration, state, gap_r, D)``: with ``PENDING`` iteration ``next``'s
    step is done and its certificate is the caller's, with ``ROUND`` iteration
    ``next - 1`` is done (``gap_r``, ``D`` its certificate's) and its dynamic round the
    caller's."""
    sub = run.work
    run.can_pay(it)  # refreshes the cached threshold (_pay_min) of the current subset
    arm = _arm(run, opts, sub, rounds, run._pay_min)
    it_max = min(opts.max_iter, it + opts.chunk - 1)
    book = _book(run, it_max - it + 1, s.x.shape, s.x.size)
    (reason, s, gap_r, D), tally, clock = _call(
        run, sub, _pgd_burst, _terms(run, sub), s, SIGMA, MAX_HALVINGS, _cage(run), opts.tol,
        book, float(gap_r), it, it_max, arm, mon=mon)
    reason, nxt = _bring_back(run, mon, it, int(reason), book, book.dual.reshape(s.x.shape),
                              clock)
    if reason == NONFINITE:
        raise nonfinite(it + int(tally[STEPS]) - 1, s.step)
    return reason, nxt, s, float(gap_r), float(D)


@njit(cache=True)
def _cycles_now():  # pragma: no cover - compiled
    return _cycles()


# ------------------------------------------------------------------ the dual method

#: The dual burst stopped on a line search that failed (the Python engine's error).
LSFAIL = 6
#: ... or on a search point and a feasible iterate where the dual is not finite.
DOMAIN = 7


@njit(cache=True)
def _dual_split(a, t, like):  # pragma: no cover - compiled
    # A(a) = sum_t a_t H_t + H_L and its split (A_+, A_-), as the dual loop's split
    w = _triplet_weights(a, t.la, t.lb, t.blk, np.empty(t.n_pairs))
    A = _weighted_sum(t.src, w, like, True) + t.HL
    P, N = _pm(A)
    return A, P, N


@njit(cache=True, inline="always")
def _apg_step(t, d, shrink, backtrack, max_bt, like, tally):  # pragma: no cover - compiled
    # One step of solvers.apg.APG.step on the dual of t (_Terms) from the state d (_Dual):
    # box [0, 1], adaptive restart, L <- shrink L before the line search. Returns (the new
    # state, GO), or (the state where it failed, DOMAIN or LSFAIL).
    x, x_prev, t_prev, t_cur, L = d.x, d.x_prev, d.t_prev, d.t_cur, d.L
    have_x, xA_, xP_, xN_ = d.have_x, d.xA, d.xP, d.xN
    xs1, xs2, xap2 = d.xs
    gamma, lam = t.gamma, t.lam
    beta = (t_prev - 1.0) / t_cur
    for attempt in range(2):
        if beta == 0.0:
            S = x
            if not have_x:
                c0 = _cycles()
                xA_, xP_, xN_ = _dual_split(x, t, like)
                tally[EIG] += _cycles() - c0
                tally[SPLITS] += 1
                xs1, xs2, xap2 = _dual_sums(x, xP_)
                have_x = True
            SP, ss1, ss2, sap2 = xP_, xs1, xs2, xap2
        else:
            S = _extrapolate(x, x_prev, beta)
            c0 = _cycles()
            _, SP, _ = _dual_split(S, t, like)
            tally[EIG] += _cycles() - c0
            tally[SPLITS] += 1
            ss1, ss2, sap2 = _dual_sums(S, SP)
        q = _forms(t.src, SP / lam, t.n_pairs)
        fS = -dual_value(ss1, ss2, sap2, gamma, lam)
        gS = _dual_grad(q, t.la, t.lb, gamma, S)
        tally[F_EVALS] += 1
        if np.isfinite(fS) or attempt == 1:
            break
        # the search point left the domain: restart from the feasible iterate
        if beta != 0.0:
            have_x = False
        t_prev = 1.0
        t_cur = 1.0
        x_prev = x
        tally[RESTARTS] += 1
        beta = 0.0
    if not np.isfinite(fS):
        return _Dual(x, x_prev, t_prev, t_cur, L, have_x, xA_, xP_, xN_,
                     (xs1, xs2, xap2)), DOMAIN
    n_bt = 0
    L *= shrink
    while True:
        Z, gD, DD = _box_step(S, gS, 1.0 / L, 0.0, 1.0)
        c0 = _cycles()
        ZA, ZP, ZN = _dual_split(Z, t, like)
        tally[EIG] += _cycles() - c0
        tally[SPLITS] += 1
        zs = _dual_sums(Z, ZP)
        fZ = -dual_value(zs[0], zs[1], zs[2], gamma, lam)
        tally[F_EVALS] += 1
        if np.isfinite(fZ) and fZ <= fS + gD + 0.5 * L * DD + 1e-12 * max(1.0, abs(fS)):
            break
        n_bt += 1
        if n_bt > max_bt:
            return _Dual(x, x_prev, t_prev, t_cur, L, have_x, xA_, xP_, xN_,
                         (xs1, xs2, xap2)), LSFAIL
        L *= backtrack
    if beta > 0.0 and _restart_product(S, Z, x) > 0.0:
        t_prev, t_cur = 1.0, 1.0
        tally[RESTARTS] += 1
    else:
        t_prev, t_cur = t_cur, 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_cur * t_cur))
    return _Dual(Z, x, t_prev, t_cur, L, True, ZA, ZP, ZN, zs), GO


@njit(cache=True)
def _dual_burst(t, d, shrink, backtrack, max_bt, cage, tol, book, it, it_max, arm,
                tally):  # pragma: no cover - compiled
    # Iterations it, it + 1, ... of the dual loop (loops._DualAPG) from the state d (_Dual)
    # on the problem t (_Terms): :func:`_apg_step`, then the certificate at the primal point
    # M = A(alpha)_+ / lam (book as in _pgd_burst, step = 1 / L). Returns (reason, the
    # state, the last evaluation's (loss, sum alpha, sum alpha^2, <M, M>, <M, H_L>), its A
    # and G, M, gap_r, D); tally: f evaluations, steps, restarts, splits, evaluations
    # (EVALS) and cycles.
    gamma, lam, nL = t.gamma, t.lam, t.nL
    like = np.empty(t.HL.shape)
    gap_r = 0.0
    D = book.best[1]
    M = np.zeros(t.HL.shape)
    evp = (0.0, 0.0, 0.0, 0.0, 0.0)
    A_e = np.zeros(t.HL.shape)
    G_e = np.zeros(t.HL.shape)
    reason = MAXED
    while it <= it_max:
        tally[STEPS] += 1
        d, reason = _apg_step(t, d, shrink, backtrack, max_bt, like, tally)
        if reason != GO:
            break
        M = d.xP / lam
        loss, s1e, s2e, A_e, G_e, mm, mh, cf, cl = _evaluate(
            t.src, M, t.n_pairs, t.la, t.lb, t.blk, gamma, t.hinge, np.empty(0), t.HL, lam)
        evp = (loss, s1e, s2e, mm, mh)
        tally[FORMS] += cf
        tally[LOSS] += cl
        tally[EVALS] += 1
        if arm.each:
            reason = PENDING  # this iteration is the Python loop's
            break
        P = _reduced_primal(loss, lam, mm, gamma, nL, mh)
        xs1, xs2, xap2 = d.xs
        D = dual_value(xs1 + nL, xs2 + nL, xap2, gamma, lam)
        reason, gap_r = _record_row(book, cage, gap_r, P, D, M, A_e, s1e + nL, s2e + nL, d.x,
                                    1.0 / d.L, tol)
        if reason != GO:
            break
        it += 1
        # _Run.dynamic_screening after iteration it - 1: a round when one is due and
        # worth it (_Run.worth_screening), or its first skip (noted by Python)
        if arm.rounds and _round_due(arm, gap_r, lam, it - 1) and (
                (not arm.backoff) or (not arm.noted)
                or arm.v_sub * max(_iters_left(arm.prev, it - 1), 1) >= arm.pay_min):
            reason = ROUND
            break
    if reason == GO:
        reason = MAXED
    return reason, d, evp, A_e, G_e, M, gap_r, D


#: The dual method's line search: ``L`` doubles at most this many times per step (the
#: defaults of :class:`solvers.apg.APG`, whose step :func:`_dual_burst` is).
BACKTRACK, MAX_BACKTRACKS = 2.0, 60


def hands_back_each(opts: _Opts) -> bool:
    """Whether a compiled loop hands every iteration back to Python after its step (and
    the dual's evaluation): a callback sees each, the linear rule's halfspace comes from
    the step's projection, and ``opts.compiled=False`` has Python certify and decide
    each iteration (the reference the compiled certificates and decisions are tested
    against, bit for bit)."""
    return not opts.compiled or opts.callback is not None or opts.rule != "sphere"


def run_dual_burst(run: _Run, d: _Dual, mon: Monitor, opts: _Opts, it: int,
                   sub) -> tuple:
    """Run dual iterations ``it, it + 1, ...`` from the state ``d`` in :func:`_dual_burst`
    and bring back their effects: the best certified iterate and dual point, the history
    rows, the run's counters and profile. Returns ``(reason, next iteration, state, M,
    ev, gap_r, D)``: with ``PENDING`` iteration ``next``'s step and evaluation (``M``,
    ``ev``) are done and the rest of its certificate is the caller's; with ``ROUND``
    iteration ``next - 1`` is done (``M``, ``ev``, ``gap_r``, ``D`` its certificate's)
    and its dynamic round the caller's. Raises :class:`NumericalError` where
    :meth:`solvers.apg.APG.step` would."""
    assert sub is run.unscr  # no active set: the working set is all of it
    kinds = len(opts.screening)
    worth_min = run.tuning.pay_margin * run._round_cost(kinds) if kinds else 0.0
    arm = _arm(run, opts, run.unscr, bool(kinds) and bool(run.dynamic_on), worth_min)
    it_max = min(opts.max_iter, it + opts.chunk - 1)
    book = _book(run, it_max - it + 1, run.HL.shape, sub.idx.size)
    (reason, d, evp, A_e, G_e, M, gap_r, D), tally, clock = _call(
        run, sub, _dual_burst, _terms(run, sub), d, float(run.tuning.dual_shrink), BACKTRACK,
        MAX_BACKTRACKS, _cage(run), opts.tol, book, it, it_max, arm, mon=mon)
    k = it + int(tally[STEPS]) - 1  # the iteration of the last step
    if reason == LSFAIL:
        raise NumericalError(f"APG: line search failed after {MAX_BACKTRACKS} doublings "
                             f"(iteration {k}, L={d.L:.3e})")
    if reason == DOMAIN:
        raise NumericalError(f"APG: objective not finite at the feasible iterate "
                             f"(iteration {k})")
    reason, nxt = _bring_back(run, mon, it, int(reason), book, (sub.idx, book.dual), clock)
    loss, s1e, s2e, mm, mh = evp
    ev = run._make_eval(float(loss), float(s1e), float(s2e), A_e, G_e, float(mm), float(mh))
    return reason, nxt, d, M, ev, float(gap_r), float(D)
