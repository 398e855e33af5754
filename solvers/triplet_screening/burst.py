"""Iterations of section 5's projected gradient without Python in between.

On small problems an iteration of :func:`.loops._pgd_loop` is mostly interpreter work.
While nothing but the iterations happens (no callback, no active set, the sphere rule,
no screening round due), :func:`_pgd_burst` runs them in one compiled call. It uses the
arithmetic of the Python loop: the step of :class:`solvers.pgd.PGD` (its compiled
:func:`~solvers.pgd.step_products`, :func:`~solvers.pgd.accepts` and
:func:`~solvers.pgd.bb_step`), the projection and the dual's eigenvalues of
:mod:`solvers.prox`, the evaluation :func:`.kernels._evaluate`, the dual value
:func:`.spheres.dual_value`, the certificate of :func:`.loops._record` and the history
row of :meth:`solvers.base.Monitor.record` (:func:`solvers.base.certified_row`). It
returns to Python before an iteration at which a fused screening round could be armed
(:meth:`._Run.arm_fused`), after an iteration after which another dynamic round may be
due (:meth:`._Run.dynamic_screening`), after the step to an iterate outside a screening
sphere (its full objective needs the screened triplets) or with a non-finite
certificate, at convergence and at ``max_iter``. So the iterates, the certificates and
the history are the Python loop's, bit for bit (tested); only the per-iteration times
come from the CPU's cycle counter, scaled to the burst's measured time. Its numba cache
is keyed on every solver source (:mod:`solvers._jitcache`): it inlines code and constants
from seven modules.

The dual method (the hinge's default, :func:`.loops._dual_loop`) has its compiled loop
too, :func:`_dual_burst`, under the same conditions: the step of
:class:`solvers.apg.APG` (its compiled box passes, the doubling line search, the step
growing back by ``shrink``, the adaptive restart), the dual's split ``A(alpha)``, ``A_+``,
``A_-`` and sums (:func:`.kernels._dual_sums`, which the Python loop uses too), the
certificate at ``M = A(alpha)_+ / lam`` and the history row. It hands back to Python
the iterations after which a dynamic round is due and worth running (or the back-off's
first skip, which Python notes), an iterate outside a screening sphere after its
evaluation, and the engine's errors. Same iterates, dual points and history, bit for bit
(tested).
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit
from numba.extending import overload

from ..apg import APG, _box_step, _extrapolate, _restart_product
from ..base import Monitor, NumericalError, certified_row, relative_gap
from ..pgd import PGD, accepts, bb_step, nonfinite, step_products
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
from .triplets import _iters_left

__all__: list[str] = []

# why a burst returned
ARM, PENDING, STOP, MAXED, NONFINITE, ROUND = 0, 1, 2, 3, 4, 5


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


@njit(cache=True)
def _record_row(best, P, D, M, A, asum, a2, best_M, best_A, dual_src, dual_dst, rows, n_rec,
                step, tol):  # pragma: no cover - compiled
    # _record of the Python loops for an exact iterate M (reduced primal P = the full
    # one, its evaluation's A, sum alpha and sum alpha^2 with L-hat) and the dual value D
    # of dual_src (M itself, or the dual iterate alpha): best = [best P, best D, its sum
    # alpha, sum alpha^2] and the buffers of a new best (best_M, best_A, dual_dst), then
    # the history row rows[n_rec] (best P, D row, gap row, reduced P, step, cycle count).
    # Returns (new best M?, new dual point?, converged: the row's relative gap <= tol).
    got_M = False
    got_D = False
    if P < best[0]:
        best[0] = P
        best_M.reshape(-1)[:] = M.reshape(-1)
        best_A.reshape(-1)[:] = A.reshape(-1)
        best[2] = asum
        best[3] = a2
        got_M = True
    if D > best[1]:
        best[1] = D
        dual_dst.reshape(-1)[: dual_src.size] = dual_src.reshape(-1)
        got_D = True
    d_row, g_row = certified_row(best[0], best[1])
    rows[n_rec, 0] = best[0]
    rows[n_rec, 1] = d_row
    rows[n_rec, 2] = g_row
    rows[n_rec, 3] = P
    rows[n_rec, 4] = step
    rows[n_rec, 5] = float(_cycles())
    return got_M, got_D, relative_gap(g_row, best[0]) <= tol


@njit(cache=True)
def _round_due(adaptive, gap_r, lam, last_r, done, every,
               shrink):  # pragma: no cover - compiled
    # _Run.dynamic_screening's test after iteration ``done``: adaptive (the gap ball has
    # shrunk below ``shrink`` (Tuning.adaptive_shrink) times the last sphere that
    # screened) or every ``every`` iterations
    if adaptive:
        return dgb_radius(gap_r, lam) <= shrink * last_r
    return done % every == 0


@njit(cache=True, inline="always")
def _gll_step(src, n_pairs, la, lb, blk, gamma, hinge, HL, lam, nL, x, P, G, A, asum, a2,
              step, hist, nh, sigma, max_halvings, counts):  # pragma: no cover - compiled
    # The step of PGD.step from the iterate x (reduced objective P, gradient G, its A,
    # sum alpha and sum alpha^2 with L-hat) with the GLL window hist[:nh]: halve the step
    # until the projected trial point passes the non-monotone test, evaluate it over the
    # triplets (la, lb), then the paper's BB step and the window. Returns the new state
    # (x, P, G, A, asum, a2, step, nh) and whether P is finite; counts += (evaluations,
    # cycles of eig, forms, loss). With a non-finite P the state is the old one but the
    # step (the halved one, as in PGD), and the caller reports it.
    ref = hist[0]
    for k in range(1, nh):
        ref = max(ref, hist[k])
    scale = 1e-12 * max(1.0, abs(P))
    for _ in range(max_halvings):
        c0 = _cycles()
        x_new = _pm(x - step * G)[0]
        counts[1] += _cycles() - c0
        loss, s1, s2, _nl, _nr, A_new, G_new, mm, mh, cf, cl = _evaluate(
            src, x_new, n_pairs, la, lb, blk, gamma, hinge, np.empty(0), None, HL, lam)
        counts[2] += cf
        counts[3] += cl
        P_new = _reduced_primal(loss, lam, mm, gamma, nL, mh)
        counts[0] += 1
        dec, sy, yy, ss = step_products(x, x_new, G, G_new)
        if accepts(P_new, ref, sigma, dec, scale):
            break
        step *= 0.5
    if not np.isfinite(P_new):
        return x, P, G, A, asum, a2, step, nh, False
    step = bb_step(sy, yy, ss, step)
    nh = _push_window(hist, nh, P_new)
    return x_new, P_new, G_new, A_new, s1 + nL, s2 + nL, step, nh, True


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
def _pgd_burst(src, n_pairs, la, lb, blk, gamma, hinge, HL, lam, nL, x, P, G, A, asum, a2, step,
               hist, nh, sigma, max_halvings, C, rr, cn, n_reg, tol, best, gap_r, it,
               it_max, arm, rows, best_M, best_A, dual_M):  # pragma: no cover - compiled
    # Iterations it, it + 1, ... of the loop (see the module docstring). State in:
    # the iterate x with its evaluation (P, G, A, asum, a2: L-hat included), the step,
    # the GLL window hist[:nh], best = [best P, best D], gap_r (the last reduced gap).
    # arm = (fused, the other rounds on (_Run.dynamic_on; fused rounds are not under
    # it), backoff, a loss pass's visits (_Sub.pass_visits),
    # previous lambda's iterations or -1, pay_min, last radius, other rounds, adaptive,
    # screen_every, Tuning.adaptive_shrink, Tuning.fused_shrink):
    # the tests of _Run.can_pay, _Run.arm_fused and _Run.dynamic_screening.
    # rows[k] = (best P, D row, gap row, reduced P, step, cycle count) of the k-th
    # iteration run; best_M / dual_M receive the iterates of a new best P / best D,
    # best_A the A of best_M and best[2:4] its sum alpha and sum alpha^2 (every
    # recorded iterate is exact: its A is the full one's).
    # Returns (reason, iterations recorded, steps taken, evaluations, x, P, G, A, asum,
    # a2, step, nh, gap_r, D, new best M?, new dual point?, cycles of eig, forms, loss).
    (fused, dyn_on, backoff, v_sub, prev, pay_min, last_r, rounds, adaptive, every,
     a_shrink, f_shrink) = arm
    n_rec = 0
    n_steps = 0
    counts = np.zeros(4)  # evaluations, cycles of eig, forms, loss (_gll_step)
    got_M = False
    got_D = False
    D = best[1]
    reason = MAXED
    while it <= it_max:
        # _Run.can_pay: could a screening round pay at this iteration?
        left = _iters_left(prev, it)
        pays = (not backoff) or v_sub * left >= pay_min
        can_pay = dyn_on and pays  # the other spheres' rounds, under their back-off
        if fused and pays and \
                dgb_radius(gap_r, lam) <= f_shrink * last_r:
            reason = ARM  # _Run.arm_fused may arm a round for this step
            break
        x, P, G, A, asum, a2, step, nh, finite = _gll_step(
            src, n_pairs, la, lb, blk, gamma, hinge, HL, lam, nL, x, P, G, A, asum, a2,
            step, hist, nh, sigma, max_halvings, counts)
        n_steps += 1
        if not finite:
            reason = NONFINITE
            break
        # the certificate of _certify and _record
        c0 = _cycles()
        ap2 = _plus_sq(A)
        counts[1] += _cycles() - c0
        D = dual_value(asum, a2, ap2, gamma, lam)
        inside = n_reg == 0 or _inside_all(C, rr, cn, x.reshape(-1), n_reg)
        if not (inside and np.isfinite(D)):
            reason = PENDING  # the full objective or the error is the Python loop's
            break
        gap_r = _pad(P - D, P)
        gm, gd, done = _record_row(best, P, D, x, A, asum, a2, best_M, best_A, x, dual_M,
                                   rows, n_rec, step, tol)
        got_M |= gm
        got_D |= gd
        n_rec += 1
        it += 1
        if done:
            reason = STOP
            break
        # _Run.dynamic_screening: a round may be due after this iteration
        if rounds and can_pay and _round_due(adaptive, gap_r, lam, last_r, it - 1, every,
                                             a_shrink):
            reason = ROUND
            break
    return (reason, n_rec, n_steps, counts[0], x, P, G, A, asum, a2, step, nh, gap_r, D,
            got_M, got_D, counts[1], counts[2], counts[3])


@njit(cache=True)
def _working_steps(src, n_pairs, la, lb, blk, gamma, hinge, HL, lam, nL, x, P, G, A, asum,
                   a2, step, hist, nh, sigma, max_halvings, n_steps, tol,
                   n_test):  # pragma: no cover - compiled
    # The active set's iterations up to its next refresh: at most n_steps steps of
    # PGD.step on the working set (la, lb), nothing certified (the Python loop certifies
    # at the refresh). With tol >= 0 each of the first n_test steps but the last is
    # followed by the working set's own test (_Run.work_converged: its reduced gap at the
    # KKT dual point, relative, <= tol), which ends the run early. State in and out as
    # in _pgd_burst.
    # Returns (steps taken, converged?, evaluations, x, P, G, A, asum, a2 (L-hat
    # included), step, nh, finite?, cycles of eig, forms, loss); a non-finite objective
    # ends the run with that step counted.
    counts = np.zeros(4)  # evaluations, cycles of eig, forms, loss (_gll_step)
    done = 0
    finite = True
    conv = False
    while done < n_steps:
        x, P, G, A, asum, a2, step, nh, finite = _gll_step(
            src, n_pairs, la, lb, blk, gamma, hinge, HL, lam, nL, x, P, G, A, asum, a2,
            step, hist, nh, sigma, max_halvings, counts)
        done += 1
        if not finite:
            break
        if tol >= 0.0 and done < n_steps and done <= n_test:
            c0 = _cycles()
            D = dual_value(asum, a2, _plus_sq(A), gamma, lam)
            counts[1] += _cycles() - c0
            if relative_gap(max(P - D, 0.0), P) <= tol:
                conv = True
                break
    return (done, conv, counts[0], x, P, G, A, asum, a2, step, nh, finite, counts[1],
            counts[2], counts[3])


def _hand_back(run: _Run, eng: PGD, sub, state: tuple, n_steps: int,
               n_evals: float) -> None:
    """After a compiled loop's ``n_steps`` steps and ``n_evals`` evaluations over ``sub``:
    the engine as after as many :meth:`PGD.step` calls (``state = (x, P, G, A, asum, a2,
    step, window, n)``; the loss alone is not kept: nothing reads it after the step) and
    the run's work counters."""
    x, P, G, A, asum, a2, step, hist, nh = state
    eng.resume(x, _Eval(P=float(P), loss=float("nan"), G=G, A=A, asum=float(asum),
                        a2=float(a2)), step, hist, nh, n_steps, int(n_evals))
    n = sub.idx.size
    run.visits += n * int(n_evals)
    run.loss_visits += n * int(n_evals)
    run.n_evals += int(n_evals)


def working_steps_apply(opts: _Opts, mon: Monitor) -> bool:
    """Whether the active set's iterations between refreshes may run in
    :func:`run_working_steps`: no callback and the sphere rule (the linear rule's
    halfspace needs the last step's projection), no work budget and ``opts.compiled``."""
    return (opts.compiled and opts.callback is None and opts.rule == "sphere"
            and mon.budget is None)


def run_working_steps(run: _Run, eng: PGD, n_steps: int, tol: float,
                      n_test: int) -> tuple[int, bool]:
    """Take up to ``n_steps`` iterations of ``eng`` on the active set's working set
    (``run.work``) in one compiled call (:func:`_working_steps`), ending early after one
    of the first ``n_test`` steps (not the last) where the working set's own gap meets
    ``tol`` (:meth:`._Run.work_converged`; ``tol < 0``: no test): the same iterates, step sizes
    and window as as many :meth:`PGD.step` calls and tests, bit for bit (tested), and
    the run's counters and profile as their evaluations leave them. Returns ``(steps
    taken, ended by the test)``; raises the engine's error on a non-finite
    objective."""
    sub = run.work
    hist, nh0 = eng.window()
    ev = eng.ev
    x = np.ascontiguousarray(eng.x, dtype=float)
    G0, A0 = np.ascontiguousarray(ev.G, dtype=float), np.ascontiguousarray(ev.A, dtype=float)
    tt, c0 = time.thread_time(), _cycles_now()
    out = _working_steps(sub.forms.src, sub.pairs.size, sub.la, sub.lb, sub.blocks,
                         run.gamma, run.hinge, run.HL, run.lam, float(run.nL), x,
                         float(ev.P), G0, A0, float(ev.asum), float(ev.a2),
                         float(eng.step_size), hist, nh0, eng.sigma, eng.max_halvings,
                         int(n_steps), float(tol), int(n_test))
    tt, span = time.thread_time() - tt, max(_cycles_now() - c0, 1)
    (done, conv, n_evals, x, P, G, A, asum, a2, step, nh, finite, c_eig, c_forms,
     c_loss) = out
    taken = int(done) if finite else int(done) - 1  # the failed step moves nothing
    _hand_back(run, eng, sub, (x, P, G, A, asum, a2, step, hist, nh), taken, n_evals)
    for key, c in zip(("eig", "pair_forms", "loss_pass"), (c_eig, c_forms, c_loss),
                      strict=True):
        run.prof[key] += tt * min(c / span, 1.0)
    if not finite:
        eng.k += 1
        raise nonfinite(eng.k, eng.step_size)
    return int(done), bool(conv)


def bursts_apply(run: _Run, opts: _Opts, mon: Monitor) -> bool:
    """Whether the compiled loops (:func:`run_burst` for the projected gradient,
    :func:`run_dual_burst` for the dual method) may run this solve's iterations: no
    callback, no active set, the sphere rule, no work budget (full or diagonal metric)
    and ``opts.compiled``."""
    return (opts.compiled and opts.callback is None and not opts.active_set
            and opts.rule == "sphere" and mon.budget is None)


def _bring_back(run: _Run, mon: Monitor, it: int, reason: int, rows: np.ndarray,
                best: np.ndarray, best_M: np.ndarray, best_A: np.ndarray, got_M: bool,
                got_D: bool, dual_point, clock: tuple, cycles: tuple) -> int:
    """What a burst's iterations ``it, it + 1, ...`` (``rows``, :func:`_record_row`'s)
    did to the run and the monitor: the profile (the burst's thread time split by the
    cycles of the eigendecompositions, pair forms and loss passes; ``clock = (t0, c0,
    thread time, t1, c1)``, the monitor's clock and the cycle counter around the call),
    the best certified iterate and the dual point ``dual_point`` of a new best dual
    value (:meth:`._Run.keep_dual`), the history rows (their times from the cycle
    counter). Returns ``reason``, or ``STOP`` when the monitor stops."""
    t0, c0, tt, t1, c1 = clock
    span = max(c1 - c0, 1)
    for key, c in zip(("eig", "pair_forms", "loss_pass"), cycles, strict=True):
        run.prof[key] += tt * min(c / span, 1.0)
    if got_M:
        run.best_P, run.best_M = float(best[0]), best_M
        run.best_parts = (best_A, float(best[2]), float(best[3]))
    if got_D:
        run.best_D = float(best[1])
        run.keep_dual(dual_point)
    if rows.shape[0]:
        times = t0 + (rows[:, 5] - c0) / span * (t1 - t0)
        stop = mon.record_rows(
            np.arange(it, it + rows.shape[0]), times, rows[:, 0], rows[:, 1], rows[:, 2],
            reason == STOP, n_L=run.nL, n_R=run.n_R, n_work=int(run.work.idx.size),
            n_unscreened=int(run.unscr.idx.size), exact=True, step=rows[:, 4].copy(),
            reduced_primal=rows[:, 3].copy())
        if stop:
            reason = STOP
    return reason


def run_burst(run: _Run, eng: PGD, mon: Monitor, opts: _Opts, it: int, gap_r: float,
              fused: bool, rounds: bool) -> tuple[int, int, float, float]:
    """Run iterations ``it, it + 1, ...`` in :func:`_pgd_burst` (``fused``: fused rounds
    can be armed; ``rounds``: other dynamic rounds can run) and bring back their
    effects (the engine's state, the best certified iterate and dual point, the
    history rows, the run's counters and profile). Returns ``(reason, next iteration,
    gap_r, D)``: with ``ARM`` iteration ``next`` is the caller's, with ``PENDING`` its
    step is done and its certificate is the caller's, with ``ROUND`` iteration
    ``next - 1`` is done (``gap_r``, ``D`` its certificate's) and its dynamic round the
    caller's."""
    sub = run.work
    run.can_pay(it)  # refreshes the cached threshold (_pay_min) of the current subset
    prev = run.dyn.get("iters")
    t = run.tuning
    arm = (bool(fused), bool(run.dynamic_on), bool(run.backoff), float(sub.pass_visits(t)),
           -1 if prev is None else int(prev), float(run._pay_min), float(run.last_radius),
           bool(rounds), bool(opts.adaptive), int(opts.screen_every),
           float(t.adaptive_shrink), float(t.fused_shrink))
    reg = run.regions
    n_reg = reg.n
    x = np.ascontiguousarray(eng.x, dtype=float)
    ev = eng.ev
    hist, nh0 = eng.window()
    it_max = min(opts.max_iter, it + opts.chunk - 1)
    rows = np.empty((max(it_max - it + 1, 0), 6))
    best = np.array([run.best_P, run.best_D, 0.0, 0.0])
    best_M = np.empty_like(x)
    best_A = np.empty_like(x)
    dual_M = np.empty_like(x)
    t0, c0 = mon.elapsed(), _cycles_now()
    pc = time.thread_time
    tt = pc()
    G0, A0 = np.ascontiguousarray(ev.G, dtype=float), np.ascontiguousarray(ev.A, dtype=float)
    out = _pgd_burst(sub.forms.src, sub.pairs.size, sub.la, sub.lb, sub.blocks, run.gamma,
                     run.hinge, run.HL, run.lam, float(run.nL), x, float(ev.P), G0, A0,
                     float(ev.asum), float(ev.a2), float(eng.step_size), hist, nh0,
                     eng.sigma, eng.max_halvings, reg.C.reshape(reg.r.size, -1), reg.r,
                     reg.cn, n_reg, opts.tol, best, float(gap_r), it, it_max, arm,
                     rows, best_M, best_A, dual_M)
    tt = pc() - tt
    t1, c1 = mon.elapsed(), _cycles_now()
    (reason, n_rec, n_steps, n_evals, x, P, G, A, asum, a2, step, nh, gap_r, D, got_M, got_D,
     c_eig, c_forms, c_loss) = out
    _hand_back(run, eng, sub, (x, P, G, A, asum, a2, step, hist, nh), n_steps, n_evals)
    # the run's profile (thread time split by the cycles of each part), certificates
    reason = _bring_back(run, mon, it, int(reason), rows[:n_rec], best, best_M, best_A,
                         got_M, got_D, dual_M, (t0, c0, tt, t1, c1), (c_eig, c_forms, c_loss))
    if reason == NONFINITE:
        raise nonfinite(eng.k, eng.step_size)
    return int(reason), it + int(n_rec), float(gap_r), float(D)


@njit(cache=True)
def _cycles_now():  # pragma: no cover - compiled
    return _cycles()


# ------------------------------------------------------------------ the dual method

#: The dual burst stopped on a line search that failed (the Python engine's error).
LSFAIL = 6
#: ... or on a search point and a feasible iterate where the dual is not finite.
DOMAIN = 7


@njit(cache=True)
def _dual_split(a, src, n_pairs, la, lb, blk, HL, like):  # pragma: no cover - compiled
    # A(a) = sum_t a_t H_t + H_L and its split (A_+, A_-), as the dual loop's split
    w = _triplet_weights(a, la, lb, blk, np.empty(n_pairs))
    A = _weighted_sum(src, w, like, True) + HL
    P, N = _pm(A)
    return A, P, N


@njit(cache=True)
def _dual_burst(src, n_pairs, la, lb, blk, gamma, hinge, HL, lam, nL, x, x_prev, t_prev,
                t_cur, L, shrink, backtrack, max_bt, have_x, xA, xP, xN, xs, C, rr, cn,
                n_reg, tol, best, it, it_max, arm, rows, best_M, best_A,
                dual_a):  # pragma: no cover - compiled
    # Iterations it, it + 1, ... of the dual loop (loops._dual_loop) in one call: the
    # step of solvers.apg.APG (box [0, 1], adaptive restart, L <- shrink L before each
    # line search), then the certificate of the loop's certify and _record. State in:
    # the iterate x, x_prev, t_prev, t_cur, L; x's split and sums (xA, xP, xN, xs) when
    # have_x. arm = (dynamic rounds possible, back-off, a loss pass's visits, previous
    # lambda's iterations or -1, Tuning.pay_margin x a round's cost, last radius,
    # adaptive, screen_every, the skip already noted, Tuning.adaptive_shrink). rows as
    # in _pgd_burst (step = 1 / L).
    # Returns (reason, iterations recorded, x, x_prev, t_prev, t_cur, L, beta,
    # backtracks of the last step, restarts, evaluations of f, steps, x's split and
    # sums, the last certificate's evaluation (loss, sum alpha, sum alpha^2, A, G,
    # <M, M>, <M, H_L>), M, gap_r, D, new best M?, new dual point?, splits, certificate
    # evaluations, cycles of eig, forms, loss).
    rounds, backoff, v_sub, prev, worth_min, last_r, adaptive, every, noted, a_shrink = arm
    like = np.empty(HL.shape)
    n_rec = 0
    n_steps = 0
    n_f = 0
    n_restarts = 0
    n_splits = 0
    n_cert = 0
    c_eig = 0
    c_forms = 0
    c_loss = 0
    got_M = False
    got_D = False
    beta = 0.0
    n_bt = 0
    gap_r = 0.0
    D = best[1]
    M = np.zeros(HL.shape)
    loss = 0.0
    s1e = 0.0
    s2e = 0.0
    mm = 0.0
    mh = 0.0
    A_e = np.zeros(HL.shape)
    G_e = np.zeros(HL.shape)
    xA_, xP_, xN_ = xA, xP, xN
    xs1, xs2, xap2 = xs
    reason = MAXED
    while it <= it_max:
        # APG.step -------------------------------------------------------------
        n_steps += 1
        beta = (t_prev - 1.0) / t_cur
        for attempt in range(2):
            if beta == 0.0:
                S = x
                if not have_x:
                    c0 = _cycles()
                    xA_, xP_, xN_ = _dual_split(x, src, n_pairs, la, lb, blk, HL, like)
                    c_eig += _cycles() - c0
                    n_splits += 1
                    xs1, xs2, xap2 = _dual_sums(x, xP_)
                    have_x = True
                SP, ss1, ss2, sap2 = xP_, xs1, xs2, xap2
            else:
                S = _extrapolate(x, x_prev, beta)
                c0 = _cycles()
                _, SP, _ = _dual_split(S, src, n_pairs, la, lb, blk, HL, like)
                c_eig += _cycles() - c0
                n_splits += 1
                ss1, ss2, sap2 = _dual_sums(S, SP)
            q = _forms(src, SP / lam, n_pairs)
            fS = -dual_value(ss1, ss2, sap2, gamma, lam)
            gS = _dual_grad(q, la, lb, gamma, S)
            n_f += 1
            if np.isfinite(fS) or attempt == 1:
                break
            # the search point left the domain: restart from the feasible iterate (whose
            # split the Python loop's one-entry memo no longer holds if S was not x)
            if beta != 0.0:
                have_x = False
            t_prev = 1.0
            t_cur = 1.0
            x_prev = x
            n_restarts += 1
            beta = 0.0
        if not np.isfinite(fS):
            reason = DOMAIN
            break
        n_bt = 0
        L *= shrink
        failed = False
        while True:
            step = 1.0 / L
            Z, gD, DD = _box_step(S, gS, step, 0.0, 1.0)
            c0 = _cycles()
            ZA, ZP, ZN = _dual_split(Z, src, n_pairs, la, lb, blk, HL, like)
            c_eig += _cycles() - c0
            n_splits += 1
            zs1, zs2, zap2 = _dual_sums(Z, ZP)
            fZ = -dual_value(zs1, zs2, zap2, gamma, lam)
            n_f += 1
            bound = fS + gD + 0.5 * L * DD
            if np.isfinite(fZ) and fZ <= bound + 1e-12 * max(1.0, abs(fS)):
                break
            n_bt += 1
            if n_bt > max_bt:
                failed = True
                break
            L *= backtrack
        if failed:
            reason = LSFAIL
            break
        restart = False
        if beta > 0.0:
            restart = _restart_product(S, Z, x) > 0.0
        x_prev = x
        x = Z
        xA_, xP_, xN_ = ZA, ZP, ZN
        xs1, xs2, xap2 = zs1, zs2, zap2
        have_x = True
        if restart:
            t_prev = 1.0
            t_cur = 1.0
            n_restarts += 1
        else:
            t_prev = t_cur
            t_cur = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_cur * t_cur))
        # certify: the primal point M = A(alpha)_+ / lam, evaluated -----------------
        M = xP_ / lam
        loss, s1e, s2e, _nl, _nr, A_e, G_e, mm, mh, cf, cl = _evaluate(
            src, M, n_pairs, la, lb, blk, gamma, hinge, np.empty(0), None, HL, lam)
        c_forms += cf
        c_loss += cl
        n_cert += 1
        P = _reduced_primal(loss, lam, mm, gamma, nL, mh)
        D = dual_value(xs1 + nL, xs2 + nL, xap2, gamma, lam)
        inside = n_reg == 0 or _inside_all(C, rr, cn, M.reshape(-1), n_reg)
        if not (inside and np.isfinite(D)):
            reason = PENDING  # the full objective or the error is the Python loop's
            break
        gap_r = _pad(P - D, P)
        gm, gd, done = _record_row(best, P, D, M, A_e, s1e + nL, s2e + nL, best_M, best_A,
                                   x, dual_a, rows, n_rec, 1.0 / L, tol)
        got_M |= gm
        got_D |= gd
        n_rec += 1
        it += 1
        if done:
            reason = STOP
            break
        # _Run.dynamic_screening after iteration it - 1: a round when one is due and
        # worth it (_Run.worth_screening), or its first skip (noted by Python)
        if rounds and _round_due(adaptive, gap_r, lam, last_r, it - 1, every, a_shrink) and (
                (not backoff) or (not noted)
                or v_sub * max(_iters_left(prev, it - 1), 1) >= worth_min):
            reason = ROUND
            break
    return (reason, n_rec, x, x_prev, t_prev, t_cur, L, beta, n_bt, n_restarts, n_f,
            n_steps, xA_, xP_, xN_, (xs1, xs2, xap2), (loss, s1e, s2e, mm, mh), A_e, G_e,
            M, gap_r, D, got_M, got_D, n_splits, n_cert, c_eig, c_forms, c_loss)


def run_dual_burst(run: _Run, eng: APG, last: list, mon: Monitor, opts: _Opts, it: int,
                   sub) -> tuple:
    """Run dual iterations ``it, it + 1, ...`` in :func:`_dual_burst` and bring back their
    effects: the engine's state (as after as many :meth:`.APG.step` calls), the dual
    loop's one-entry memo ``last`` (``[alpha, A, A_+, A_-, sums]``, now the iterate's),
    the best certified iterate and dual point, the history rows, the run's counters and
    profile. Returns ``(reason, next iteration, M, ev, gap_r, D)``: with ``PENDING``
    iteration ``next``'s step and evaluation (``M``, ``ev``) are done and the rest of its
    certificate is the caller's; with ``ROUND`` iteration ``next - 1`` is done
    (``M``, ``ev``, ``gap_r``, ``D`` its certificate's) and its dynamic round the
    caller's."""
    assert sub is run.unscr  # no active set (bursts_apply): the working set is all of it
    kinds = len(opts.screening)
    prev = run.dyn.get("iters")
    t = run.tuning
    worth_min = t.pay_margin * run._round_cost(kinds) if kinds else 0.0
    arm = (bool(kinds) and bool(run.dynamic_on), bool(run.backoff),
           float(run.unscr.pass_visits(t)), -1 if prev is None else int(prev),
           float(worth_min), float(run.last_radius), bool(opts.adaptive),
           int(opts.screen_every), bool(run._skip_noted), float(t.adaptive_shrink))
    shape = run.HL.shape
    x = eng.x
    have = last[0] is x
    if have:
        xA, xP, xN = (np.ascontiguousarray(a, dtype=float) for a in last[1:4])
        xs = last[4] if last[4] is not None else _dual_sums(x, xP)
    else:
        xA = xP = xN = np.zeros(shape)
        xs = (0.0, 0.0, 0.0)
    reg = run.regions
    it_max = min(opts.max_iter, it + opts.chunk - 1)
    rows = np.empty((max(it_max - it + 1, 0), 6))
    best = np.array([run.best_P, run.best_D, 0.0, 0.0])
    best_M = np.empty(shape)
    best_A = np.empty(shape)
    dual_a = np.empty(sub.idx.size)
    t0, c0 = mon.elapsed(), _cycles_now()
    pc = time.thread_time
    tt = pc()
    out = _dual_burst(sub.forms.src, sub.pairs.size, sub.la, sub.lb, sub.blocks, run.gamma,
                      run.hinge, np.ascontiguousarray(run.HL, dtype=float), run.lam,
                      float(run.nL), x, np.ascontiguousarray(eng.x_prev, dtype=float),
                      float(eng.t_prev), float(eng.t_cur), float(eng.L), float(eng.shrink),
                      float(eng.backtrack), int(eng.max_backtracks), have, xA, xP, xN,
                      (float(xs[0]), float(xs[1]), float(xs[2])),
                      reg.C.reshape(reg.r.size, -1), reg.r, reg.cn, reg.n, opts.tol, best,
                      it, it_max, arm, rows, best_M, best_A, dual_a)
    tt = pc() - tt
    t1, c1 = mon.elapsed(), _cycles_now()
    (reason, n_rec, x, x_prev, t_prev, t_cur, L, beta, n_bt, n_restarts, n_f, n_steps,
     xA, xP, xN, xs, evp, A_e, G_e, M, gap_r, D, got_M, got_D, n_splits, n_cert,
     c_eig, c_forms, c_loss) = out
    # the engine and the memo, as after as many APG.step calls
    eng.x, eng.x_prev = x, x_prev
    eng.t_prev, eng.t_cur, eng.L, eng.beta = float(t_prev), float(t_cur), float(L), float(beta)
    eng.n_backtracks = int(n_bt)
    eng.n_restarts += int(n_restarts)
    eng.n_evals += int(n_f)
    eng.k += int(n_steps)
    if reason == LSFAIL:
        raise NumericalError(f"APG: line search failed after {eng.max_backtracks} doublings "
                             f"(iteration {eng.k}, L={eng.L:.3e})")
    if reason == DOMAIN:
        raise NumericalError(
            f"APG: objective not finite at the feasible iterate (iteration {eng.k})")
    last[:] = [x, xA, xP, xN, tuple(float(v) for v in xs)]
    # the run: counters, profile (thread time split by the cycles of each part)
    n = sub.idx.size
    run.visits += n * int(n_splits + n_cert)
    run.loss_visits += n * int(n_splits + n_cert)
    run.n_evals += int(n_cert)
    reason = _bring_back(run, mon, it, int(reason), rows[:n_rec], best, best_M, best_A,
                         got_M, got_D, (sub.idx, dual_a), (t0, c0, tt, t1, c1),
                         (c_eig, c_forms, c_loss))
    loss, s1e, s2e, mm, mh = evp
    ev = run._make_eval(float(loss), float(s1e), float(s2e), A_e, G_e, float(mm), float(mh))
    return int(reason), it + int(n_rec), M, ev, float(gap_r), float(D)
