"""Iterations of section 5's projected gradient without Python in between.

On small problems an iteration of :func:`.loops._pgd_loop` is mostly interpreter work:
on wine with k = 10 (17,800 triplets, d = 13, the RRPB path at tol 1e-6, 18,832
iterations) the Python loop took 76-82 us per iteration, of which the two d x d
eigendecompositions (projection and dual) take ~24 us. While nothing but the iterations
happens (no callback, no active set, the sphere rule, no screening round due),
:func:`_pgd_burst` runs them in one compiled call: 51-53 us per iteration, the
path 1.43-1.55 s -> 0.96-0.99 s (the naive path 2.3-2.5 s -> 1.8-2.0 s). It uses the
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
"""

from __future__ import annotations

import time

import numpy as np
from numba import njit
from numba.extending import overload

from ..base import Monitor, certified_row, relative_gap
from ..pgd import PGD, accepts, bb_step, nonfinite, step_products
from ..prox import _psd_split, _psd_sq_norm
from .kernels import _cycles, _evaluate, _inside_all, _reduced_primal
from .pairs import _Eval
from .spheres import dgb_radius, dual_value, pos_sq_vec
from .state import ADAPTIVE_SHRINK, FUSED_SHRINK, _Opts, _pad, _Run
from .triplets import _iters_left

__all__: list[str] = []

# why a burst returned
ARM, PENDING, STOP, MAXED, NONFINITE, ROUND = 0, 1, 2, 3, 4, 5
#: Most iterations one burst runs (its history rows are preallocated).
CHUNK = 2048
#: Off: every iteration in Python (the tests compare both).
ENABLED = True


def _plus(A):  # pragma: no cover - compiled only (see the overload)
    raise NotImplementedError


@overload(_plus)
def _plus_impl(A):  # pragma: no cover - compiled
    # A_+ as spheres.proj_pm takes it: the PSD part of a matrix, a vector clipped
    if A.ndim == 1:
        return lambda A: np.maximum(A, 0.0)
    return lambda A: _psd_split(A)[0]


def _plus_sq(A):  # pragma: no cover - compiled only (see the overload)
    raise NotImplementedError


@overload(_plus_sq)
def _plus_sq_impl(A):  # pragma: no cover - compiled
    # ||A_+||^2 as spheres.pos_sq_norm takes it
    if A.ndim == 1:
        return lambda A: pos_sq_vec(A)
    return lambda A: _psd_sq_norm(A)


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
    # screen_every):
    # the tests of _Run.can_pay, _Run.arm_fused and _Run.dynamic_screening.
    # rows[k] = (best P, D row, gap row, reduced P, step, cycle count) of the k-th
    # iteration run; best_M / dual_M receive the iterates of a new best P / best D,
    # best_A the A of best_M and best[2:4] its sum alpha and sum alpha^2 (every
    # recorded iterate is exact: its A is the full one's).
    # Returns (reason, iterations recorded, steps taken, evaluations, x, P, G, A, asum,
    # a2, step, nh, gap_r, D, new best M?, new dual point?, cycles of eig, forms, loss).
    fused, dyn_on, backoff, v_sub, prev, pay_min, last_r, rounds, adaptive, every = arm
    n_rec = 0
    n_steps = 0
    n_evals = 0
    c_eig = 0
    c_forms = 0
    c_loss = 0
    got_M = False
    got_D = False
    D = best[1]
    mem = hist.shape[0]
    reason = MAXED
    while it <= it_max:
        # _Run.can_pay: could a screening round pay at this iteration?
        left = _iters_left(prev, it)
        pays = (not backoff) or v_sub * left >= pay_min
        can_pay = dyn_on and pays  # the other spheres' rounds, under their back-off
        if fused and pays and \
                dgb_radius(gap_r, lam) <= FUSED_SHRINK * last_r:
            reason = ARM  # _Run.arm_fused may arm a round for this step
            break
        # the step of PGD.step
        ref = hist[0]
        for k in range(1, nh):
            ref = max(ref, hist[k])
        scale = 1e-12 * max(1.0, abs(P))
        for _ in range(max_halvings):
            c0 = _cycles()
            x_new = _plus(x - step * G)
            c_eig += _cycles() - c0
            loss, s1, s2, _nl, _nr, A_new, G_new, mm, mh, cf, cl = _evaluate(
                src, x_new, n_pairs, la, lb, blk, gamma, hinge, np.empty(0), None, HL, lam)
            c_forms += cf
            c_loss += cl
            P_new = _reduced_primal(loss, lam, mm, gamma, nL, mh)
            n_evals += 1
            dec, sy, yy, ss = step_products(x, x_new, G, G_new)
            if accepts(P_new, ref, sigma, dec, scale):
                break
            step *= 0.5
        n_steps += 1
        if not np.isfinite(P_new):
            reason = NONFINITE
            break
        step = bb_step(sy, yy, ss, step)
        x, P, G, A, asum, a2 = x_new, P_new, G_new, A_new, s1 + nL, s2 + nL
        if nh < mem:
            hist[nh] = P
            nh += 1
        else:
            for k in range(mem - 1):
                hist[k] = hist[k + 1]
            hist[mem - 1] = P
        # the certificate of _certify and _record
        c0 = _cycles()
        ap2 = _plus_sq(A)
        c_eig += _cycles() - c0
        D = dual_value(asum, a2, ap2, gamma, lam)
        inside = n_reg == 0 or _inside_all(C, rr, cn, x.reshape(-1), n_reg)
        if not (inside and np.isfinite(D)):
            reason = PENDING  # the full objective or the error is the Python loop's
            break
        gap_r = _pad(P - D, P)
        if P < best[0]:
            best[0] = P
            best_M.reshape(-1)[:] = x.reshape(-1)
            best_A.reshape(-1)[:] = A.reshape(-1)
            best[2] = asum
            best[3] = a2
            got_M = True
        if D > best[1]:
            best[1] = D
            dual_M.reshape(-1)[:] = x.reshape(-1)
            got_D = True
        d_row, g_row = certified_row(best[0], best[1])
        rows[n_rec, 0] = best[0]
        rows[n_rec, 1] = d_row
        rows[n_rec, 2] = g_row
        rows[n_rec, 3] = P
        rows[n_rec, 4] = step
        rows[n_rec, 5] = float(_cycles())
        n_rec += 1
        it += 1
        if relative_gap(g_row, best[0]) <= tol:
            reason = STOP
            break
        if rounds and can_pay:
            # _Run.dynamic_screening: a round may be due after this iteration
            if adaptive:
                due = dgb_radius(gap_r, lam) <= ADAPTIVE_SHRINK * last_r
            else:
                due = (it - 1) % every == 0
            if due:
                reason = ROUND
                break
    return (reason, n_rec, n_steps, n_evals, x, P, G, A, asum, a2, step, nh, gap_r, D,
            got_M, got_D, c_eig, c_forms, c_loss)


def bursts_apply(run: _Run, opts: _Opts, mon: Monitor) -> bool:
    """Whether :func:`run_burst` may run this solve's iterations: the projected gradient
    with no callback, no active set, the sphere rule and no work budget."""
    return (ENABLED and opts.callback is None and not opts.active_set and opts.rule == "sphere"
            and mon.budget is None)


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
    arm = (bool(fused), bool(run.dynamic_on), bool(run.backoff), float(sub.pass_visits),
           -1 if prev is None else int(prev), float(run._pay_min), float(run.last_radius),
           bool(rounds), bool(opts.adaptive), int(opts.screen_every))
    reg = run.regions
    n_reg = reg.n
    x = np.ascontiguousarray(eng.x, dtype=float)
    ev = eng.ev
    hist, nh0 = eng.window()
    it_max = min(opts.max_iter, it + CHUNK - 1)
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
    # the engine, as after as many PGD.step calls (the loss alone is not kept: nothing
    # reads it after the step)
    eng.resume(x, _Eval(P=float(P), loss=float("nan"), G=G, A=A, asum=float(asum),
                        a2=float(a2)), step, hist, nh, n_steps, n_evals)
    # the run: counters, profile (thread time split by the cycles of each part)
    n = sub.idx.size
    run.visits += n * int(n_evals)
    run.loss_visits += n * int(n_evals)
    run.n_evals += int(n_evals)
    span = max(c1 - c0, 1)
    for key, c in (("eig", c_eig), ("pair_forms", c_forms), ("loss_pass", c_loss)):
        run.prof[key] += tt * min(c / span, 1.0)
    if got_M:
        run.best_P, run.best_M = float(best[0]), best_M
        run.best_parts = (best_A, float(best[2]), float(best[3]))
    if got_D:
        run.best_D = float(best[1])
        run.keep_dual(dual_M)
    if n_rec:
        r = rows[:n_rec]
        times = t0 + (r[:, 5] - c0) / span * (t1 - t0)
        stop = mon.record_rows(
            np.arange(it, it + n_rec), times, r[:, 0], r[:, 1], r[:, 2],
            reason == STOP, n_L=run.nL, n_R=run.n_R, n_work=int(run.work.idx.size),
            n_unscreened=int(run.unscr.idx.size), exact=True, step=r[:, 4].copy(),
            reduced_primal=r[:, 3].copy())
        if stop:
            reason = STOP
    if reason == NONFINITE:
        raise nonfinite(eng.k, eng.step_size)
    return int(reason), it + int(n_rec), float(gap_r), float(D)


@njit(cache=True)
def _cycles_now():  # pragma: no cover - compiled
    return _cycles()
