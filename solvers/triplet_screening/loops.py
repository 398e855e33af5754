"""The optimisation loops with screening: primal projected gradient and dual APG."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..base import Monitor
from . import spheres as sph
from .burst import (
    MAXED,
    PENDING,
    ROUND,
    STOP,
    _Dual,
    hands_back_each,
    run_burst,
    run_dual_burst,
    run_working_steps,
    start_step,
    step_eval,
)
from .kernels import _dual_sums
from .pairs import _diff, _Eval, kkt_alpha
from .pathscreen import PathScreen
from .problem import TripletProblem
from .results import TripletResult
from .state import _Carry, _Opts, _pad, _Ref, _Run


def _run_solve(prob: TripletProblem, lam: float, M0: np.ndarray, opts: _Opts,
               ref: _Ref | None, step0: float | None, ps: PathScreen | None = None,
               compare: Sequence[tuple[str, str]] = (), carry: _Carry | None = None,
               alpha0: np.ndarray | None = None, path_state: dict | None = None):
    """Solve at ``lam`` from ``M0``; returns ``(result, extras dict)``, the result a
    :class:`TripletResult`, or a :class:`_Solved` when ``opts.want_alpha`` is off.
    ``carry``: the data term at ``M0`` (:class:`.state._Carry`), the first evaluation
    without a pass. ``alpha0``: the dual method's start over all triplets instead of the
    KKT map of ``M0``; its last iterate goes to ``extras["alpha"]``. ``path_state``: what
    the previous lambdas of a path left for this one (:class:`.state._Run`), updated."""
    run = _Run(prob, lam, active_set=opts.active_set, path_state=path_state,
               backoff=opts.backoff, keep_snapshots=opts.want_alpha,
               evaluation=opts.evaluation, tuning=opts.tuning)
    mon = Monitor("triplet_screening", tol=opts.tol, max_iter=opts.max_iter,
                  callback=opts.callback)
    extras: dict[str, Any] = {"compare": {}, "rate_path": 0.0, "rate_range": 0.0,
                              "by_sphere": {}, "dynamic": []}
    t_cmp = 0.0
    if compare:
        t0 = time.perf_counter()
        extras["compare"] = run.compare(compare, M0, ref)
        t_cmp = time.perf_counter() - t0
    if opts.method == "dual":
        M, step = _dual_loop(run, M0, opts, ref, ps, mon, extras, alpha0)
    else:
        M, step = _pgd_loop(run, M0, opts, ref, step0, ps, mon, extras, carry)
    fields = mon.summary()
    run.finish_dynamic(int(fields["n_iter"]))
    if ps is not None and run.backoff:
        ps.account(run.n_evals, run.n_refresh if run.active_set else 0)
    fields["time"] = max(fields["time"] - t_cmp, 0.0)
    extras["rate_final"] = (run.nL + run.nR) / prob.data.n_t
    solved = _Solved(prob, lam, M, float(step), opts, run, mon, fields)
    return (solved.result() if opts.want_alpha else solved), extras


class _Solved:
    """A finished solve at one lambda: the fields :func:`.regpath.path` reads; the others
    come from its :class:`TripletResult`, built on demand (:meth:`result`). ``_carry``:
    the :class:`.state._Carry` at ``M`` when evaluated exactly there, else None."""

    def __init__(self, prob: TripletProblem, lam: float, M: np.ndarray, step: float,
                 opts: _Opts, run: _Run, mon: Monitor, fields: dict) -> None:
        self.lam, self.M, self.step = lam, M, step
        self.primal, self.dual, self.gap = fields["primal"], fields["dual"], fields["gap"]
        self.n_iter, self.time = fields["n_iter"], fields["time"]
        self.converged = fields["converged"]
        # ``primal`` is the full objective at M, so the data term is exact
        self.loss_value = float(self.primal - 0.5 * lam * np.vdot(M, M))
        self.triplet_visits = int(run.visits)
        self.profile = {**run.prof, "loss_pass_visits": float(run.loss_visits)}
        self.notes = tuple(run.notes)
        self._carry = None
        if run.best_parts is not None:
            A, asum, a2 = run.best_parts
            self._carry = _Carry(M, A, self.loss_value, asum, a2)
        self._prob, self._opts, self._run, self._mon, self._fields = prob, opts, run, mon, fields
        self._result: TripletResult | None = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.result(), name)

    def result(self) -> TripletResult:
        """The :class:`TripletResult` (built once)."""
        if self._result is not None:
            return self._result
        prob, opts, run, lam = self._prob, self._opts, self._run, self.lam
        if opts.want_alpha:
            alpha = run.best_alpha()  # the dual point of the certificate: D(alpha) = dual
            Ls = np.flatnonzero(run.status == 1)
            Rs = np.flatnonzero(run.status == 2)
        else:  # inside path(): the per-lambda arrays are not kept
            alpha = np.empty(0)
            Ls = Rs = np.empty(0, dtype=np.int64)
        res = TripletResult(
            M=self.M, alpha=alpha, screened_L=Ls, screened_R=Rs, lam=lam,
            radius=float(sph.dgb_radius(self.gap, lam)), loss_value=self.loss_value,
            n_triplets=prob.data.n_t,
            screening_log={k: np.asarray(v) for k, v in run.log.items()}, step=self.step,
            triplet_visits=self.triplet_visits, profile=self.profile, notes=self.notes,
            fingerprint=prob.fingerprint(), method=opts.method,
            params={"lam": lam, "loss": prob.loss, "gamma": prob.gamma, "k": prob.k,
                    "diagonal": prob.diagonal, **opts.params(), "n_triplets": prob.data.n_t},
            history=self._mon.finish()[0], **self._fields)
        object.__setattr__(res, "_carry", self._carry)
        self._result = res
        return res


def _first_screening(run: _Run, M: np.ndarray, ev: _Eval | None, gap: float, D: float,
                     Aneg: np.ndarray | None, opts: _Opts, ref: _Ref | None,
                     ps: PathScreen | None, extras: dict, Ma: np.ndarray | None = None,
                     kinds: Sequence[str] | None = None) -> bool:
    """Regularisation-path screening at iteration 0 with the spheres ``kinds`` (default
    ``opts.screening``); returns whether anything changed (``Ma``: as in
    :meth:`._Run.spheres_at`)."""
    n_t = run.data.n_t
    changed = 0
    kinds = list(opts.screening if kinds is None else kinds)
    why = None
    if ps is not None and ref is not None and "rrpb" in kinds and run.backoff:
        t0, v0 = time.thread_time(), ps.visited
        why = ps.skip(run.lam, ref.M, ref.lam, ref.eps)
        run.prof["screening"] += time.thread_time() - t0
        run.visits += ps.visited - v0
    if why:
        kinds.remove("rrpb")
        run.notes.append(why)
    elif ps is not None and ref is not None and "rrpb" in kinds:
        c = run.path_screen(ps, ref)
        extras["rate_range"] = c / n_t
        extras["by_sphere"]["rrpb"] = c / n_t
        changed += c
        kinds.remove("rrpb")
    # the other spheres: the first dynamic round, under its back-off and in its accounts
    if kinds and ev is not None and not (run.dynamic_on and run.worth_screening(len(kinds))):
        kinds = []
    spheres = run.spheres_at(kinds, M, ev, gap, D, ref, True, Ma) if kinds else []
    if spheres:
        before = len(run.log["new_L"])
        n_before, v_before = run.unscr.idx.size, run.unscr.pass_visits(run.tuning)
        changed += run.screen(spheres, opts.rule, Aneg, 0)
        run.dynamic_round(n_before, len(spheres), v_before - run.unscr.pass_visits(run.tuning), 0)
        for k in range(before, len(run.log["new_L"])):
            name = run.log["sphere"][k]
            extras["by_sphere"][name] = (run.log["new_L"][k] + run.log["new_R"][k]) / n_t
    extras["rate_path"] = (run.nL + run.nR) / n_t
    return changed > 0


def _drive(run: _Run, mon: Monitor, opts: _Opts, ref: _Ref | None, extras: dict,
           m: _Primal | _DualAPG) -> tuple[np.ndarray, float]:
    """The loop around a method's compiled iterations, shared by both methods.

    ``m.start()`` makes iteration 0 (first evaluation, certificate, screening);
    ``m.advance(it)`` runs compiled iterations and returns ``(code, last iteration done,
    can a round pay)`` (:mod:`.burst`'s codes). PENDING iterates are certified here
    (``m.certify()``, :func:`_record`); after them and ROUND ones (certified in compiled
    code) a dynamic round may run (:meth:`._Run.dynamic_screening`), then
    ``m.rescreened``. ``m`` holds ``M``, ``ev``, the reduced gap ``gap_r``, ``D``, the
    linear rule's halfspace ``H``, ``step``, ``dual_point`` and CDGB's centre ``Ma``
    (None: the KKT map at ``M``). Returns the best certified iterate and last step size."""
    cb = opts.callback is not None
    P_full, D, exact = m.start()
    stop = _record(run, mon, 0, m.M, m.ev, P_full, D, exact, m.step, cb, m.dual_point)
    it = 0
    while not stop and it < opts.max_iter:
        what, it, can_pay = m.advance(it + 1)
        if what == STOP:
            break
        if what == MAXED:
            continue
        if what == PENDING:
            P_full, D, exact = m.certify()
            if _record(run, mon, it, m.M, m.ev, P_full, D, exact, m.step, cb, m.dual_point):
                break
        else:  # ROUND: certified in compiled code at an exact iterate
            D, exact = m.D, True
        if not can_pay:
            continue
        removed = run.dynamic_screening(opts, it, m.M, m.ev, m.gap_r, D, ref, m.H, Ma=m.Ma)
        if removed is not None:
            if removed:
                m.rescreened(exact)
            extras["dynamic"].append((run.nL + run.nR) / run.data.n_t)
    m.finish()
    assert run.best_M is not None  # iteration 0 is certified
    return run.best_M, m.step


def _pgd_loop(run: _Run, M0: np.ndarray, opts: _Opts, ref: _Ref | None,
              step0: float | None, ps: PathScreen | None, mon: Monitor, extras: dict,
              carry: _Carry | None = None) -> tuple[np.ndarray, float]:
    """Section 5's projected gradient with screening (:class:`_Primal` in :func:`_drive`)."""
    return _drive(run, mon, opts, ref, extras,
                  _Primal(run, M0, opts, ref, step0, ps, mon, extras, carry))


def _dual_loop(run: _Run, M0: np.ndarray, opts: _Opts, ref: _Ref | None,
               ps: PathScreen | None, mon: Monitor, extras: dict,
               alpha0: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Accelerated projected gradient on the dual with screening (:class:`_DualAPG` in
    :func:`_drive`); the last dual iterate over all triplets goes to ``extras["alpha"]``."""
    return _drive(run, mon, opts, ref, extras,
                  _DualAPG(run, M0, opts, ref, ps, mon, extras, alpha0))


class _Primal:
    """Section 5's projected gradient (the step of :class:`solvers.pgd.PGD`) for
    :func:`_drive`: iterations in :func:`.burst.run_burst`. With an active set, the steps
    between refreshes run in :func:`.burst.run_working_steps`; a refresh and certificate
    come every ``screen_every`` steps, and with ``refresh="converged"`` also once the working set's
    problem meets ``tol`` while that pays (:meth:`._Run.early_refresh_steps`)."""

    Ma = None  # the spheres' dual-point centre: none but the KKT map at M
    dual_point = None  # the certificate's dual point: the KKT map at M

    def __init__(self, run: _Run, M0: np.ndarray, opts: _Opts, ref: _Ref | None,
                 step0: float | None, ps: PathScreen | None, mon: Monitor, extras: dict,
                 carry: _Carry | None) -> None:
        self.run, self.opts, self.ref, self.ps, self.mon, self.extras = \
            run, opts, ref, ps, mon, extras
        self.M, self.carry = M0.copy(), carry
        self.step0 = step0 if (step0 is not None and math.isfinite(step0) and step0 > 0) \
            else 1.0 / run.lam
        self.aset = opts.active_set
        self.each = hands_back_each(opts)
        self.linear = opts.rule == "linear"
        self.confirm = self.aset and opts.refresh == "converged"
        self.since = 0
        self.H: np.ndarray | None = None

    @property
    def step(self) -> float:
        return self.s.step

    def start(self) -> tuple[float, float, bool]:
        """Iteration 0: the first evaluation and certificate, path and starting-point
        screening. Returns ``(full primal, dual, exact)``."""
        run, opts, ref, ps, extras, M = self.run, self.opts, self.ref, self.ps, self.extras, \
            self.M
        aset, step = self.aset, self.step0
        # RRPB with the sphere rule needs only the reference: path screening first, then
        # the first evaluation on the reduced problem (same optimum). ``carry`` gives it
        # without a pass: M0 lies in the RRPB sphere, so the screened triplets are on
        # their fixed pieces there (:meth:`._Run.carried_eval`).
        pre = ["rrpb"] if (ref is not None and "rrpb" in opts.screening
                           and opts.rule == "sphere") else []
        if pre:
            _first_screening(run, M, None, 0.0, 0.0, None, opts, ref, ps, extras, kinds=pre)
        ev = None if self.carry is None else run.carried_eval(M, self.carry)
        if ev is None:
            ev = run.evaluate(M, run.unscr, margins=aset)
        if aset:
            _refresh(run, ev)
        self.ev = ev
        P_full, D, exact = self.certify()
        rest = [k for k in opts.screening if k not in pre]
        if rest and run.backoff and max(P_full - D, 0.0) <= opts.tol * max(1.0, abs(P_full)):
            # the start meets tol (e.g. at lam_max): no iteration follows to profit from screening
            rest = []
            run.notes.append("screening skipped: the starting point already meets tol")
        if rest:
            # halfspace of the linear rule at iteration 0: from a trial gradient step
            Aneg = None
            if self.linear:
                A_try = M - step * ev.G
                Aneg = sph.halfspace_from(A_try, run.proj(A_try)[1])
            if _first_screening(run, M, ev, self.gap_r, D, Aneg, opts, ref, ps, extras,
                                kinds=rest) and not run.still_exact(M, exact):
                self.ev = run.evaluate(M, run.unscr, margins=aset)
                if aset:
                    _refresh(run, self.ev)
                P_full, D, exact = self.certify()
        self.s = start_step(M, self.ev, step)
        return P_full, D, exact

    def certify(self) -> tuple[float, float, bool]:
        """``(full primal, dual, exact)`` at ``M``; the reduced gap (padded) kept."""
        run, ev = self.run, self.ev
        self.D = run.dual_value(ev)
        P_full, exact = run.full_primal(self.M, ev.P)
        self.gap_r = _pad(ev.P - self.D, ev.P)
        return P_full, self.D, exact

    def advance(self, it: int) -> tuple[int, int, bool]:
        """Iterations from ``it`` on: ``(what for the driver, last iteration done, can a
        dynamic round pay?)``."""
        if self.aset:
            return self._working(it)
        run, opts = self.run, self.opts
        # runs of iterations where nothing else happens in the compiled loop
        reason, nxt, s, self.gap_r, self.D = run_burst(run, self.s, self.mon, opts, it,
                                                       self.gap_r, bool(opts.screening))
        self.s, self.M = s, s.x
        if reason == STOP:
            return STOP, it, False
        if reason in (MAXED, ROUND):  # a full chunk or max_iter; a round may be due
            self.ev, self.H = step_eval(s), None
            return reason, nxt - 1, True
        it = nxt  # PENDING: the step of iteration `it` is done: certify it here
        can_pay = run.dynamic_on and run.can_pay(it)
        self.ev = step_eval(self.s)
        self.H = sph.halfspace_from(self.s.Z, self.s.N) if self.linear else None
        return PENDING, it, can_pay

    def _working(self, it: int) -> tuple[int, int, bool]:
        """The active set's steps up to the next refresh in one compiled call, ended
        early (refresh now) when the working set's problem meets ``tol``; one step a call
        when Python makes that test (``hands_back_each``)."""
        run, opts, each, confirm = self.run, self.opts, self.each, self.confirm
        n = 1 if each else min(opts.screen_every - self.since, opts.max_iter - it + 1)
        n_test = run.early_refresh_steps(opts.screen_every) - self.since \
            if (confirm and not each) else 0
        s, done, conv = run_working_steps(run, self.s, n, opts.tol if n_test else -1.0,
                                          n_test, it)
        self.s = s
        it += done - 1
        self.since += done
        M, ev = s.x, step_eval(s)
        can_pay = run.dynamic_on and run.can_pay(it)
        due = self.since >= opts.screen_every or it == opts.max_iter
        if confirm and each and not due and \
                self.since <= run.early_refresh_steps(opts.screen_every):
            conv = run.work_converged(ev, opts.tol)
        if not (due or conv):
            return MAXED, it, False
        self.since = 0
        step = s.step
        ev = run.evaluate(M, run.unscr, margins=True)
        if run.full_primal(M, ev.P)[0] > run.best_P:
            # the working set hid triplets whose loss grew: back to the best certified
            # point, with those triplets added to the working set
            assert ev.margins is not None and run.best_M is not None  # asked; certified
            grown = run.unscr.idx[ev.margins < 1.0]
            M = run.best_M.copy()
            ev = run.evaluate(M, run.unscr, margins=True)
            _refresh(run, ev, also=grown)
            step *= 0.5
        else:
            _refresh(run, ev)
        self.H = sph.halfspace_from(s.Z, s.N) if self.linear else None
        self.s, self.M, self.ev = start_step(M, ev, step), M, ev
        return PENDING, it, can_pay

    def rescreened(self, exact: bool) -> None:
        """After a round removed triplets at ``M`` (evaluated exactly there: ``exact``):
        the evaluation anew unless still exact, a fresh window."""
        run, M, ev = self.run, self.M, self.ev
        if not run.still_exact(M, exact):
            ev = run.evaluate(M, run.unscr, margins=self.aset)
            if self.aset:
                _refresh(run, ev)
        self.s = start_step(M, ev, self.s.step)

    def finish(self) -> None:
        pass


def _refresh(run: _Run, ev: _Eval, also: np.ndarray | None = None) -> None:
    """Active set: working triplets = unscreened ones with positive loss (margin < 1),
    plus the triplets ``also`` (global indices) when given (:meth:`._Run.work_from`)."""
    sub = run.unscr
    assert ev.margins is not None  # evaluated with margins=True
    keep = ev.margins < 1.0
    if also is not None and also.size:
        keep |= np.isin(sub.idx, also, assume_unique=True)
    run.work_from(sub, keep)


def _record(run: _Run, mon: Monitor, it: int, M: np.ndarray, ev: _Eval, P_full: float,
            D: float, exact: bool, step: float, cb: bool,
            alpha: tuple[np.ndarray, np.ndarray] | None = None) -> bool:
    """Record the certificate so far: ``min P`` over the iterates (at ``run.best_M``)
    and ``max D`` over the dual points (all feasible), so ``gap = min P - max D`` bounds
    ``P(best_M) - P*``. The dual point of ``D`` is kept (:meth:`._Run.keep_dual`): the
    KKT map at ``M`` on the unscreened triplets, or ``alpha = (indices, values)`` (the
    dual solver's iterate); 1 on L-hat, 0 on R-hat. Returns whether to stop."""
    if P_full < run.best_P or run.best_M is None:
        run.best_P, run.best_M = float(P_full), M.copy()
        run.best_parts = (ev.A, ev.asum, ev.a2) if (exact and not run.active_set) else None
    if float(D) > run.best_D:
        run.best_D = float(D)
        run.keep_dual(M if alpha is None else alpha)
    iterate = None
    if cb:
        run.sync_status()
        iterate = {"M": M.copy(), "status": run.status.copy()}
    return mon.record(
        it, run.best_P, run.best_D, iterate=iterate,
        n_L=run.nL, n_R=run.nR, n_work=run.n_work(),
        n_unscreened=int(run.unscr.idx.size), exact=bool(exact), step=float(step),
        reduced_primal=float(ev.P),
    )


class _DualAPG:
    """Accelerated projected gradient on the dual (the step of :class:`solvers.apg.APG`)
    for :func:`_drive`, iterations in :func:`.burst.run_dual_burst`. Starts from
    ``alpha0`` (over all triplets, clipped to the box) when given, else the KKT map of
    ``M0`` (for the hinge 0/1 while the optimum is fractional at margin 1, so a previous
    dual iterate starts better). CDGB's centre is ``M = A(alpha)_+ / lam``."""

    H: np.ndarray | None

    def __init__(self, run: _Run, M0: np.ndarray, opts: _Opts, ref: _Ref | None,
                 ps: PathScreen | None, mon: Monitor, extras: dict,
                 alpha0: np.ndarray | None) -> None:
        self.run, self.opts, self.ref, self.ps, self.mon, self.extras = \
            run, opts, ref, ps, mon, extras
        self.M0, self.alpha0 = M0, alpha0

    @property
    def step(self) -> float:
        return 1.0 / self.d.L

    @property
    def Ma(self) -> np.ndarray:
        return self.M

    @property
    def dual_point(self) -> tuple[np.ndarray, np.ndarray]:
        return self.sub.idx, self.d.x

    def _begin(self, alpha: np.ndarray, L: float) -> None:
        """The dual state at ``alpha`` over ``self.sub`` (no momentum), with its split
        ``A(alpha) = sum_t alpha_t H_t + H_L``, ``A_+``, ``A_-`` and sums, and its primal
        point ``M`` evaluated."""
        run, sub = self.run, self.sub
        alpha = np.ascontiguousarray(alpha, dtype=float)
        run.visits += alpha.size
        run.loss_visits += alpha.size
        A = sub.assemble(sub.pair_weights(alpha)) + run.HL
        Ap, Am = (np.ascontiguousarray(B, dtype=float) for B in run.proj(A))
        sums = tuple(float(v) for v in _dual_sums(alpha, Ap))
        self.d = _Dual(alpha, alpha, 1.0, 1.0, float(L), True,
                       np.ascontiguousarray(A, dtype=float), Ap, Am, sums)
        self.M = self.d.xP / run.lam
        self.ev = run.evaluate(self.M, run.unscr)

    def start(self) -> tuple[float, float, bool]:
        """Iteration 0: the start, its certificate and the screening there."""
        run, opts = self.run, self.opts
        self.sub = sub = run.work
        hn2 = run.data.hn[sub.idx] ** 2
        L0 = max(run.gamma + float(hn2.mean()) / run.lam if hn2.size else 1.0, 1e-12)
        if self.alpha0 is None:
            alpha = kkt_alpha(_diff(sub.quad(self.M0), sub.la, sub.lb), run.gamma, run.hinge)
        else:
            alpha = np.clip(np.asarray(self.alpha0, dtype=float)[sub.idx], 0.0, 1.0)
        self._begin(alpha, L0)
        P_full, D, exact = self.certify()
        # the dual point is the iterate alpha: M_lam(alpha) = M (CDGB's centre)
        if opts.screening and _first_screening(run, self.M, self.ev, self.gap_r, D, self.H,
                                               opts, self.ref, self.ps, self.extras,
                                               Ma=self.M):
            keep = self._narrow()
            self._begin(self.d.x[keep], self.d.L)
            P_full, D, exact = self.certify()
        return P_full, D, exact

    def certify(self) -> tuple[float, float, bool]:
        """``(full primal, dual, exact)`` at the iterate (its primal point ``M``
        evaluated); the reduced gap (padded) and the linear rule's halfspace kept."""
        run, d, ev = self.run, self.d, self.ev
        s1, s2, ap2 = d.xs
        self.D = float(sph.dual_value(s1 + run.nL, s2 + run.nL, ap2, run.gamma, run.lam))
        P_full, exact = run.full_primal(self.M, ev.P)
        self.gap_r = _pad(ev.P - self.D, ev.P)
        self.H = sph.halfspace_from(d.xA, d.xN)
        return P_full, self.D, exact

    def advance(self, it: int) -> tuple[int, int, bool]:
        """Iterations from ``it`` on in one compiled call: ``(what for the driver, last
        iteration done, True)``."""
        reason, nxt, self.d, M, ev, gap_r, D = run_dual_burst(self.run, self.d, self.mon,
                                                              self.opts, it, self.sub)
        if reason == STOP:
            return STOP, it, False
        if reason == MAXED:  # a full chunk or max_iter
            return MAXED, nxt - 1, False
        self.M, self.ev = M, ev
        if reason == ROUND:  # iteration nxt - 1 is done; its dynamic round is due
            self.gap_r, self.D = gap_r, D
            self.H = sph.halfspace_from(self.d.xA, self.d.xN)
            return ROUND, nxt - 1, True
        return PENDING, nxt, True  # the step and evaluation of iteration nxt are done

    def _narrow(self) -> np.ndarray:
        """After screening: the remaining triplets' mask over the old ``sub``."""
        keep = np.isin(self.sub.idx, self.run.work.idx, assume_unique=True)
        self.sub = self.run.work
        return keep

    def rescreened(self, exact: bool) -> None:
        """After a round removed triplets: the momentum and L kept across the (smaller)
        problem; the split anew."""
        keep, d = self._narrow(), self.d
        self.d = d._replace(x=np.ascontiguousarray(d.x[keep]),
                            x_prev=np.ascontiguousarray(d.x_prev[keep]), have_x=False)

    def finish(self) -> None:
        """The last dual iterate over all triplets (L-hat at 1, R-hat at 0) to
        ``extras["alpha"]``."""
        full = np.zeros(self.run.data.n_t)
        full[self.sub.idx] = self.d.x
        full[self.run.status == 1] = 1.0
        self.extras["alpha"] = full
