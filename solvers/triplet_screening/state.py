"""The state of one solve at a fixed lambda: screening sets, folded L-hat, subsets."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..base import relative_gap
from . import spheres as sph
from .kernels import (
    _apply_codes,
    _eval_tail,
    _extra_screened,
    _inside_all,
    _reduced_primal,
    _sphere_rule,
)
from .pairs import BLOCK_ROW, _Eval, _Sub, kkt_alpha
from .pathscreen import PathScreen
from .problem import TripletProblem
from .rules import _rule_masks
from .spheres import Sphere, dgb_sphere
from .triplets import SCREEN_EVERY, _iters_left, _pad
from .tuning import DEFAULT, Tuning


class _Carry(NamedTuple):
    """The data term at ``M`` over all triplets: ``A = sum_t alpha_t H_t``, the loss,
    ``sum alpha``, ``sum alpha^2`` (``alpha`` the KKT map at ``M``). Lambda enters only via
    ``lam ||M||^2 / 2``, so they give the evaluation at ``M`` at any lambda
    (:meth:`_Run.carried_eval`); a solve keeps them at its solution when evaluated
    exactly (``TripletResult._carry``) for the next lambda or ``solve(init=...)``."""

    M: np.ndarray
    A: np.ndarray
    loss: float
    asum: float
    a2: float


@dataclass
class _Ref:
    """Reference solution of the previous lambda (RRPB / RPB / range screening)."""

    M: np.ndarray
    lam: float
    eps: float

    @classmethod
    def of(cls, res: Any) -> _Ref:
        """The reference a solved result gives: its ``M`` at its lambda, with ``eps`` the
        radius ``sqrt(2 gap / lam)`` of its (padded) duality gap (Theorem 3.10)."""
        return cls(M=np.array(res.M), lam=float(res.lam),
                   eps=float(sph.dgb_radius(_pad(res.gap, res.primal), res.lam)))




class _Regions:
    """The spheres that screened something, stacked for one vectorised membership test."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.C = np.empty((8, *shape))
        self.r = np.empty(8)
        self.cn = np.empty(8)
        self.n = 0

    def append(self, sp: Sphere) -> None:
        if self.n == self.r.size:
            self.C = np.concatenate([self.C, np.empty_like(self.C)])
            self.r = np.concatenate([self.r, np.empty_like(self.r)])
            self.cn = np.concatenate([self.cn, np.empty_like(self.cn)])
        self.C[self.n] = sp.center
        self.r[self.n] = sp.radius
        self.cn[self.n] = sph.fnorm(sp.center)
        self.n += 1

    def contains_all(self, M: np.ndarray) -> bool:
        """``||M - Q_k|| <= r_k`` for every sphere (rounding allowance as ``Sphere.contains``)."""
        if self.n == 0:
            return True
        m = np.ascontiguousarray(M, dtype=float).reshape(-1)
        return bool(_inside_all(self.C.reshape(self.r.size, -1), self.r, self.cn, m, self.n))


class _Run:
    """State of one solve at a fixed ``lam``: screening sets, folded L-hat, subsets."""

    def __init__(self, prob: TripletProblem, lam: float, *, active_set: bool,
                 path_state: dict | None = None, backoff: bool = True,
                 keep_snapshots: bool = True, evaluation: str = "triplets",
                 tuning: Tuning = DEFAULT) -> None:
        #: the cost model's weights (:class:`.Tuning`)
        self.tuning = tuning
        self.backoff = backoff
        self.keep_snapshots = keep_snapshots
        self.prob = prob
        self.data = prob.data
        self.lam = lam
        self.gamma = prob.gamma
        self.hinge = prob.hinge
        self.active_set = active_set
        #: 0 work, 1 L-hat, 2 R-hat, 3 inactive; shared, read-only until :meth:`own_status`
        self.status = self.data.no_status
        self.HL = self.data.zeros()
        self.nL = 0
        self.nR = 0
        self._Lcat: tuple[np.ndarray, np.ndarray] | None = None
        self._Rcat: tuple[np.ndarray, np.ndarray] | None = None
        self.regions = _Regions(self.data.shape)
        self.log: dict[str, list] = {k: [] for k in (
            "iteration", "sphere", "rule", "radius", "new_L", "new_R", "total_L", "total_R",
            "seconds")}
        self.unscr = self.data.all_triplets(evaluation)
        self._want: tuple[_Sub, np.ndarray] | None = None
        self.work = self.unscr
        #: the remaining subset the working set was last built from (:meth:`work_from`) or
        #: None; its statuses (0 in, 3 out) wait in ``_work_status`` for :meth:`sync_status`
        self.work_src: _Sub | None = None
        self._work_status = np.empty(0, dtype=np.int8)
        self._pending = False
        self.visits = 0  # triplets touched (loss passes, rule evaluations): a cost measure
        self.loss_visits = 0
        self.n_evals = 0
        self.n_refresh = 0
        #: thread seconds per part: loss passes, pair forms and weighted sums, d x d
        #: eigendecompositions, screening (rules, status updates, compaction, :meth:`extra`)
        self.prof = {"loss_pass": 0.0, "pair_forms": 0.0, "eig": 0.0, "screening": 0.0}
        self.notes: list[str] = []
        if evaluation == "sorted" and self.data.blocks is None:
            self.notes.append("evaluation='sorted' needs triplets stored in anchor blocks "
                              "(one anchor, every same-class j with one list of other-class "
                              f"l, rows of {BLOCK_ROW} or more on average); these are not, "
                              "so each triplet is visited")
        self._bad_rounds = 0
        self._skip_noted = False
        self._dyn_cost = 0.0
        self._dyn_gain = 0.0
        #: what the previous lambdas of a path left for this one (their iterations, the
        #: back-off's skips): read here, updated by :meth:`finish_dynamic`
        self.path_state = path_state if path_state is not None else {}
        #: dynamic rounds may run (:meth:`dynamic_round`)
        self.dynamic_on = True
        self._pay_sub: _Sub | None = None
        self._pay_min = 0.0
        #: radius of the smallest sphere that screened at this lambda (adaptive rounds)
        self.last_radius = math.inf
        if backoff and self.path_state.get("skip", 0) > 0:
            self.path_state["skip"] -= 1
            self.dynamic_on = False
            self.notes.append("dynamic screening skipped: on the previous lambda its rounds "
                              "cost more than the loss passes they saved")
        # the certificate so far: lowest full primal, highest dual
        self.best_P = math.inf
        self.best_D = -math.inf
        self.best_M: np.ndarray | None = None
        #: (A, sum alpha, sum alpha^2) at best_M if evaluated exactly (:class:`_Carry`), else None
        self.best_parts: tuple[np.ndarray, float, float] | None = None
        #: the dual point of best_D: (M or (indices, alpha), status version)
        self._best_dual: tuple[Any, int] | None = None
        self._status_version = 0
        self._status_snaps: dict[int, np.ndarray] = {}

    # subsets ------------------------------------------------------------------
    @property
    def work(self) -> _Sub:
        """The triplets the steps run on: the remaining ones, or the active set's working
        set (:meth:`work_from`, built here when first read)."""
        self._build_work()
        return self._work

    @work.setter
    def work(self, sub: _Sub) -> None:
        self._want = None
        self._work = sub

    def _build_work(self) -> None:
        if self._want is None:
            return
        sub, keep = self._want
        self._want = None
        if self.work_src is sub:
            prev = self._work
        else:
            prev, self.work_src = None, sub
            self._work_status = np.zeros(sub.idx.size, dtype=np.int8)
        self._work = self.data.work_of(sub, keep, self._work_status, prev)
        self._pending = True

    def work_from(self, sub: _Sub, keep: np.ndarray) -> None:
        """Make the working set the triplets of the remaining subset ``sub`` with ``keep``
        (:meth:`.pairs._Data.work_of`), built when :attr:`work` is first read, if ever."""
        self._want = (sub, keep)

    def n_work(self) -> int:
        """The working set's size (without building it)."""
        if self._want is not None:
            return int(np.count_nonzero(self._want[1]))
        return int(self._work.idx.size)

    def sync_status(self) -> None:
        """Write the working-set statuses of :meth:`work_from` (0 in, 3 out) into
        :attr:`status`, before it is read or changed otherwise."""
        self._build_work()
        if self._pending:
            assert self.work_src is not None  # set with the pending statuses
            self.own_status()[self.work_src.idx] = self._work_status
            self._pending = False

    def own_status(self) -> np.ndarray:
        """:attr:`status`, writable: path screening's is shared, read-only, until a write
        needs a copy."""
        if not self.status.flags.writeable:
            self.status = self.status.copy()
        return self.status

    # evaluation ---------------------------------------------------------------
    def evaluate(self, M: np.ndarray, sub: _Sub, *, margins: bool = False) -> _Eval:
        """The reduced objective at ``M`` over ``sub`` (plus the folded L-hat)."""
        self.visits += sub.idx.size
        self.loss_visits += sub.idx.size
        self.n_evals += 1
        self.n_refresh += bool(margins)  # the active set's refreshes ask for margins
        pc = time.thread_time
        mout = np.empty(sub.idx.size if margins else 0)
        t0 = pc()
        loss, asum, a2, A, G, mm, mh, c_forms, c_loss = sub.forms.evaluate(
            M, sub.la, sub.lb, sub.blocks, self.gamma, self.hinge, mout, self.HL, self.lam)
        # one compiled call: its thread time is split by the cycles of its phases
        t = pc() - t0
        share = c_loss / (c_forms + c_loss) if c_forms + c_loss > 0 else 0.0
        self.prof["pair_forms"] += t * (1.0 - share)
        self.prof["loss_pass"] += t * share
        return self._make_eval(loss, asum, a2, A, G, mm, mh, mout if margins else None)

    def proj(self, A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(A_+, A_-)`` (timed as an eigendecomposition)."""
        t0 = time.thread_time()
        out = sph.proj_pm(A)
        self.prof["eig"] += time.thread_time() - t0
        return out

    def dual_value(self, ev: _Eval) -> float:
        """The dual objective at the KKT dual point of ``ev`` (needs only the eigenvalues
        of ``A``; timed as an eigendecomposition)."""
        t0 = time.thread_time()
        ap2 = sph.pos_sq_norm(ev.A)
        self.prof["eig"] += time.thread_time() - t0
        return sph.dual_value(ev.asum, ev.a2, ap2, self.gamma, self.lam)

    def early_refresh_steps(self, every: int) -> int:
        """The most steps since the last refresh after which an early refresh (working set
        solved, :meth:`work_converged`) still pays: the steps left to the scheduled one
        (``every``) must cost at least a refresh, in loss-pass visits. A refresh: a loss pass
        over the remaining triplets, ``Tuning.workset_weight`` a triplet, and
        ``Tuning.refresh_overhead``; a step: a loss pass over the working set,
        ``2 pair_weight d`` a pair, on the Gram route also ``2 gram_weight n d^2``."""
        unscr, work = self.unscr, self.work
        t = self.tuning
        refresh = unscr.pass_visits(t) + t.workset_weight * unscr.idx.size + t.refresh_overhead
        d = self.data.d
        step = work.pass_visits(t) + 2.0 * t.pair_weight * d * work.pairs.size
        if work.forms.mode == "gram":
            step += 2.0 * t.gram_weight * self.data.n * d * d
        return every - math.ceil(refresh / max(step, 1.0))

    def work_converged(self, ev: _Eval, tol: float) -> bool:
        """Whether the working set's problem (with the folded L-hat) meets ``tol`` at
        ``ev``: its reduced gap ``ev.P - D`` at the KKT dual point, relative to ``ev.P``.
        With every remaining triplet of positive loss in the working set, this is the full
        certificate's test."""
        D = self.dual_value(ev)
        return bool(relative_gap(max(ev.P - D, 0.0), ev.P) <= tol)

    def extra(self, M: np.ndarray) -> float:
        """``P(M) - P~(M)`` over the screened triplets (>= 0)."""
        if self.nL == 0 and self.nR == 0:
            return 0.0
        if self._Lcat is None:
            Lidx = np.flatnonzero(self.status == 1)
            Ridx = np.flatnonzero(self.status == 2)
            self._Lcat = (self.data.pa[Lidx], self.data.pb[Lidx])
            self._Rcat = (self.data.pa[Ridx], self.data.pb[Ridx])
        t0 = time.thread_time()
        q = self.data.quad(M)
        self.visits += self.nL + self.nR
        Lcat, Rcat = self._Lcat, self._Rcat
        assert Lcat is not None and Rcat is not None  # assembled above
        out = float(_extra_screened(q, Lcat[0], Lcat[1], Rcat[0], Rcat[1], self.gamma,
                                    self.hinge))
        self.prof["screening"] += time.thread_time() - t0
        return out

    def _round_cost(self, n_spheres: int, n: int | None = None) -> float:
        """Cost in loss-pass visits of a round of ``n_spheres`` spheres over ``n`` triplets
        (default: the remaining ones): per sphere ``Tuning.rule_weight`` a triplet and the
        pair forms of its centre, plus ``Tuning.round_overhead``."""
        sub = self.unscr
        n = sub.idx.size if n is None else n
        t = self.tuning
        return n_spheres * (t.rule_weight * n + t.pair_weight * sub.pairs.size * self.data.d) \
            + t.round_overhead

    def can_pay(self, iteration: int) -> bool:
        """Whether a round removing every remaining triplet could pay now (a cheap
        per-iteration test; the cost cached per remaining subset)."""
        if not self.backoff:
            return True
        sub = self.unscr
        if self._pay_sub is not sub:
            self._pay_sub = sub
            self._pay_min = self.tuning.pay_margin * self._round_cost(1)
        return sub.pass_visits(self.tuning) * self.iters_left(iteration) >= self._pay_min

    def iters_left(self, iteration: int) -> int:
        """Iterations still expected at this lambda: the previous lambda's count minus
        ``iteration``, at least ``iteration // 2`` and 1; without a previous lambda,
        ``iteration``, at least ``SCREEN_EVERY``."""
        prev = self.path_state.get("iters")
        # the compiled function's Python source: no numba dispatch from Python
        return _iters_left.py_func(-1 if prev is None else int(prev), int(iteration))

    def dynamic_round(self, n_before: int, n_spheres: int, saved: float,
                      iteration: int) -> None:
        """Back-off of dynamic screening after a round of ``n_spheres`` spheres over
        ``n_before`` triplets that saved ``saved`` visits a pass. It paid when ``saved``
        times :meth:`iters_left` reaches :meth:`_round_cost`; two rounds in a row that do
        not pay stop dynamic rounds at this lambda (noted), and :meth:`finish_dynamic`
        carries the verdict on."""
        gain = float(saved) * self.iters_left(iteration)
        cost = self._round_cost(n_spheres, n_before)
        self._dyn_cost += cost
        self._dyn_gain += gain
        self._bad_rounds = self._bad_rounds + 1 if gain < cost else 0
        if self._bad_rounds >= 2 and self.backoff:
            self.dynamic_on = False
            self.notes.append(
                f"dynamic screening backed off at iteration {iteration}: a round cost about "
                f"{cost:,.0f} triplet visits and saved about {gain:,.0f}")

    def dynamic_screening(self, opts: Any, iteration: int, M: np.ndarray, ev: _Eval,
                          gap: float, D: float, ref: Any,
                          halfspace: np.ndarray | None,
                          Ma: np.ndarray | None = None) -> int | None:
        """A dynamic round at ``M`` with the spheres ``opts.screening`` when it is due,
        dynamic screening is on and a round can pay; returns the number of triplets
        removed, or None when no round ran. Due, with ``opts.adaptive``, when
        ``sqrt(2 gap / lam)`` is at most ``Tuning.adaptive_shrink`` times
        :attr:`last_radius`; else every ``opts.screen_every`` iterations."""
        kinds = opts.screening
        if not (kinds and self.dynamic_on and iteration > 0):
            return None
        if opts.adaptive:
            due = sph.dgb_radius(gap, self.lam) <= self.tuning.adaptive_shrink * self.last_radius
        else:
            due = iteration % opts.screen_every == 0
        if not (due and self.worth_screening(len(kinds), self.iters_left(iteration))):
            return None
        n_before, v_before = self.unscr.idx.size, self.unscr.pass_visits(self.tuning)
        spheres = self.spheres_at(kinds, M, ev, gap, D, ref, False, Ma)
        removed = self.screen(spheres, opts.rule, halfspace, iteration)
        self.dynamic_round(n_before, len(spheres), v_before - self.unscr.pass_visits(self.tuning),
                           iteration)
        return removed

    def worth_screening(self, n_spheres: int, iters: int | None = None) -> bool:
        """Whether a round of ``n_spheres`` spheres can pay at all: removing every remaining
        triplet from ``iters`` iterations' loss passes (default :meth:`iters_left`) must
        reach ``Tuning.pay_margin`` times :meth:`_round_cost`; else the result notes it."""
        if not self.backoff:
            return True
        if iters is None:
            iters = self.iters_left(0)
        best_gain = self.unscr.pass_visits(self.tuning) * max(iters, 1)
        cost = self._round_cost(n_spheres)
        if best_gain < self.tuning.pay_margin * cost:
            if not self._skip_noted:
                self._skip_noted = True
                self.notes.append(
                    f"screening skipped: at most {best_gain:,.0f} triplet visits of loss "
                    f"passes to save against about {cost:,.0f} per screening round")
            return False
        return True

    def finish_dynamic(self, n_iter: int) -> None:
        """End of this lambda: keep its iteration count and whether its rounds paid. If
        not in total, the next ``Tuning.skip_lambdas`` lambdas skip them, twice as many
        after each further such lambda in a row, back to ``skip_lambdas`` once they pay."""
        self.path_state["iters"] = n_iter
        if self.backoff and self._dyn_cost > 0:
            if self._dyn_gain < self._dyn_cost:
                st = self.path_state
                st["skip"] = st.get("next_skip", self.tuning.skip_lambdas)
                st["next_skip"] = 2 * st["skip"]
            else:
                self.path_state["next_skip"] = self.tuning.skip_lambdas

    def exact(self, M: np.ndarray) -> bool:
        return self.regions.contains_all(M)

    def still_exact(self, M: np.ndarray, was_exact: bool) -> bool:
        """After a screening round at ``M``: whether the evaluation there before the round
        is still the reduced objective's. It is when it was exact and ``M`` lies in every
        sphere, the new ones too: the triplets just screened are then on their fixed pieces
        at ``M``, where folding or dropping them is exact (an active set rebuilds instead)."""
        return was_exact and not self.active_set and self.exact(M)

    def full_primal(self, M: np.ndarray, P_red: float) -> tuple[float, bool]:
        if self.exact(M):
            return P_red, True
        return P_red + self.extra(M), False

    # screening ------------------------------------------------------------------
    def screen(self, spheres: list[Sphere], rule: str, halfspace: np.ndarray | None,
               iteration: int, labels: list[str] | None = None) -> int:
        t_start = time.thread_time()
        try:
            return self._screen(spheres, rule, halfspace, iteration, labels)
        finally:
            self.prof["screening"] += time.thread_time() - t_start

    def _screen(self, spheres: list[Sphere], rule: str, halfspace: np.ndarray | None,
                iteration: int, labels: list[str] | None = None) -> int:
        sub = self.unscr
        n = sub.idx.size
        if n == 0 or not spheres:
            return 0
        code = np.zeros(n, dtype=np.int8)  # 0 still a candidate, 1 L-hat, 2 R-hat
        totL, totR = self.nL, self.nR
        for k, sp in enumerate(spheres):
            t0 = time.thread_time()
            self.visits += n
            hs = sp.halfspace if sp.halfspace is not None else halfspace
            use_kernel = rule == "sphere" or (rule == "linear" and hs is None)
            if use_kernel:
                q = sub.quad(sp.center)
                nl, nr = _sphere_rule(q, sub.la, sub.lb, sub.hn, float(sp.radius),
                                      1.0 - self.gamma, sph.RULE_SLACK, code)
            else:
                cand = code == 0
                L, R = _rule_masks(self.data, sub, sp, rule, self.gamma, hs, cand)
                L &= cand
                R &= cand
                code[L] = 1
                code[R] = 2
                nl, nr = int(L.sum()), int(R.sum())
            totL += nl
            totR += nr
            self._log_round(sp, labels[k] if labels else sp.kind, rule, iteration, nl, nr,
                            totL, totR, time.thread_time() - t0)
        if totL == self.nL and totR == self.nR:
            return 0
        return self._commit(code, sub)

    def _log_round(self, sp: Sphere, label: str, rule: str, iteration: int, nl: int, nr: int,
                   totL: int, totR: int, seconds: float) -> None:
        """Record a sphere's round (and keep the sphere for the exactness check)."""
        if nl or nr:
            self.regions.append(sp)
        self.last_radius = min(self.last_radius, float(sp.radius))
        self._log(iteration, label, rule, sp.radius, int(nl), int(nr), totL, totR, seconds)

    def _log(self, *row: Any) -> None:
        """Append a row to the screening log (its columns in :attr:`log`'s order)."""
        for column, v in zip(self.log.values(), row, strict=True):
            column.append(v)

    def keep_dual(self, point: Any) -> None:
        """Remember the dual point of the best dual value, ``M`` (its KKT map on the
        triplets unscreened now) or ``(indices, alpha)``, with the current status
        version (copied only when the status changes, :meth:`_status_changes`)."""
        if isinstance(point, tuple):
            point = (point[0], np.array(point[1]))
        self._best_dual = (point, self._status_version)

    def best_alpha(self) -> np.ndarray:
        """The full dual point ``alpha`` (every triplet) of :attr:`best_D`."""
        n_t = self.data.n_t
        if self._best_dual is None:
            return np.zeros(n_t)
        point, version = self._best_dual
        st = self._status_snaps.get(version, self.status)
        if isinstance(point, tuple):
            alpha = np.zeros(n_t)
            alpha[point[0]] = point[1]
        else:
            alpha = kkt_alpha(self.data.margins(point), self.gamma, self.hinge)
        alpha[st == 1] = 1.0
        alpha[st == 2] = 0.0
        return alpha

    def _status_changes(self) -> None:
        """The status is about to change: keep a copy if a remembered dual point refers to
        the current one."""
        if self._best_dual is not None and self._best_dual[1] == self._status_version \
                and self.keep_snapshots:
            self._status_snaps[self._status_version] = self.status.copy()
        self._status_version += 1

    def _commit(self, code: np.ndarray, sub: _Sub) -> int:
        """Apply screening codes over ``sub`` (the remaining triplets): status, L-hat fold,
        counts, the new remaining subset; returns the number screened."""
        self.sync_status()
        self._status_changes()
        n = sub.idx.size
        cnt = np.zeros(sub.pairs.size)  # L-hat counts over the subset's pairs
        out = (np.empty(n, dtype=sub.idx.dtype), np.empty(n, dtype=sub.la.dtype),
               np.empty(n, dtype=sub.lb.dtype), np.empty(n, dtype=sub.hn.dtype))
        nk, nl, nr = _apply_codes(code, sub.idx, sub.la, sub.lb, sub.hn, self.own_status(), cnt,
                                  *out)
        if nl:
            self.HL = self.HL + sub.assemble(cnt)
        self.nL += int(nl)
        self.nR += int(nr)
        self._Lcat = None
        if self.active_set:  # the remaining triplets, and the working set among them
            self.sync_status()
            kept = out[0][:nk]
            self.unscr = self.data.compact(kept)
            self.work = self.data.compact(kept[self.status[kept] == 0])
        else:
            idx, la, lb, hn = (a[:nk] for a in out)
            self.unscr = self.work = self.data.restrict(sub, idx, la, lb, hn,
                                                        self.tuning.pair_compaction)
        return int(nl + nr)

    def spheres_at(self, kinds: Sequence[str], M: np.ndarray, ev: _Eval | None, gap: float,
                   D: float, ref: _Ref | None, first: bool,
                   Ma: np.ndarray | None = None) -> list[Sphere]:
        """The spheres ``kinds`` at ``M`` (RRPB/RPB from ``ref`` only at the first round).
        ``D`` is the dual value of a point ``alpha`` and ``Ma = M_lam(alpha)`` (CDGB's
        centre); by default ``alpha`` is the KKT point of ``ev`` and ``Ma = [ev.A]_+ / lam``."""
        lam = self.lam

        def cdgb():
            Mc = self.proj(ev.A)[0] / lam if Ma is None else Ma
            ev_a = self.evaluate(Mc, self.unscr)
            return Mc, _pad(ev_a.P - D, ev_a.P)

        r = (ref.M, ref.lam, ref.eps) if (ref is not None and first) else None
        r_rpb = (ref.M, ref.lam, ref.eps) if ref is not None else None
        grad = None if ev is None else ev.G
        out = [sph.make_sphere(kind, lam, M, grad=grad, gap=gap, cdgb=cdgb,
                               ref=r_rpb if kind == "rpb" else r) for kind in kinds]
        return [sp for sp in out if sp is not None]

    def path_screen(self, ps: PathScreen, ref: _Ref) -> int:
        """Path screening with the RRPB sphere of the previous lambda's solution, state
        carried along the path (:class:`.pathscreen.PathScreen`)."""
        t0 = time.thread_time()
        v0 = ps.visited
        self.sync_status()
        self._status_changes()
        ps.advance(self.lam, ref.M, ref.lam, ref.eps)
        assert ps.newest is not None  # advance made one
        self.last_radius = float(ps.newest.radius)
        self.visits += ps.visited - v0
        self.status = ps.status.view()
        self.status.flags.writeable = False
        self.HL = ps.folded_L()
        self.nL, self.nR = ps.nL, ps.nR
        for sp in ps.spheres(self.lam):
            self.regions.append(sp)
        self._Lcat = None
        self.unscr = self.work = ps.sub
        dt = time.thread_time() - t0
        self._log(0, "rrpb-range", "sphere", float("nan"), int(self.nL), int(self.nR),
                  self.nL, self.nR, dt)
        self.prof["screening"] += dt
        return int(self.nL + self.nR)

    def carried_eval(self, M: np.ndarray, parts: _Carry) -> _Eval | None:
        """The evaluation at ``M`` from ``parts`` (:class:`_Carry`), without a pass; None
        unless they were taken at ``M``, there is no working set and ``M`` lies in every
        sphere that screened (then the screened triplets are on their fixed pieces at
        ``M`` and the reduced objective and gradient equal the full ones)."""
        if self.active_set or not np.array_equal(parts.M, M) or not self.exact(M):
            return None
        A = np.array(parts.A)
        G, mm, _ = _eval_tail(A, self.data.zeros(), M, self.lam)
        return _Eval(P=float(parts.loss + 0.5 * self.lam * mm), loss=float("nan"), G=G,
                     A=A, asum=float(parts.asum), a2=float(parts.a2))

    def _make_eval(self, loss: float, asum: float, a2: float, A: np.ndarray,
                   G: np.ndarray, mm: float, mh: float,
                   margins: np.ndarray | None = None) -> _Eval:
        """The reduced objective's evaluation from a loss pass over the remaining triplets
        (``A``, ``G`` including the folded L-hat; ``mm = <M, M>``, ``mh = <M, H_L>``): each
        L-hat triplet adds ``1 - gamma/2 - <M, H_t>`` and ``alpha = 1``."""
        P = float(_reduced_primal(loss, self.lam, mm, self.gamma, float(self.nL), mh))
        return _Eval(P=P, loss=loss, G=G, A=A, asum=asum + self.nL, a2=a2 + self.nL,
                     margins=margins)

    def compare(self, specs: Sequence[tuple[str, str]], M: np.ndarray, ref: _Ref | None
                ) -> dict[str, float]:
        """Screening rate of each (sphere, rule) alone at ``M`` (all triplets, not applied)."""
        prob = self.prob
        allsub = self.data.everything
        saved = (self.HL, self.nL)
        self.HL, self.nL = self.data.zeros(), 0
        ev = self.evaluate(M, allsub)
        self.HL, self.nL = saved
        D = self.dual_value(ev)
        gap = _pad(ev.P - D, ev.P)
        out = {}
        cache: dict[str, Sphere | None] = {}
        for kind, rule in specs:
            if kind not in cache:
                if kind == "cdgb":
                    Ma = self.proj(ev.A)[0] / self.lam
                    cache[kind] = sph.make_sphere(
                        kind, self.lam, M,
                        cdgb=lambda Ma=Ma: (Ma, _pad(prob.primal(Ma, self.lam) - D, ev.P)))
                elif kind in ("rpb", "rrpb") and ref is None:
                    cache[kind] = dgb_sphere(M, gap, self.lam) if kind == "rrpb" else None
                else:
                    made = self.spheres_at([kind], M, ev, gap, D, ref, True)
                    cache[kind] = made[0] if made else None
            sp = cache[kind]
            if sp is None:
                out[f"{kind}:{rule}"] = float("nan")
                continue
            L, R = _rule_masks(self.data, allsub, sp, rule, self.gamma, sp.halfspace)
            out[f"{kind}:{rule}"] = float(L.sum() + R.sum()) / self.data.n_t
        return out


#: Most iterations one compiled call runs by default (``_chunk``; history rows preallocated).
CHUNK = 2048


@dataclass(frozen=True)
class _Opts:
    """The options of a solve or of every lambda of a path, validated once
    (:func:`.api._options`): :data:`.triplets.PARAMS` and :func:`.api.solve`'s private
    ``_compiled``, ``_chunk``, ``_tuning``, which select implementations and cost weights,
    never the optimum. Immutable: what a path carries from one lambda to the next is
    :class:`_Run`'s ``path_state``."""

    screening: tuple[str, ...]
    rule: str
    active_set: bool
    method: str
    tol: float
    max_iter: int
    callback: Any
    screen_every: int = SCREEN_EVERY
    want_alpha: bool = True
    backoff: bool = True
    dynamic: str = "adaptive"
    evaluation: str = "triplets"
    refresh: str = "every10"
    compiled: bool = True
    chunk: int = CHUNK
    tuning: Tuning = DEFAULT

    @property
    def adaptive(self) -> bool:
        """Dynamic rounds when the gap ball has shrunk (else every ``screen_every``)."""
        return self.dynamic == "adaptive"

    def params(self) -> dict[str, Any]:
        """The options as ``result.params`` records them (the private ones with a
        leading underscore; ``_tuning``: the fields that differ from the default)."""
        return {"screening": "+".join(self.screening) or "none", "rule": self.rule,
                "active_set": self.active_set, "refresh": self.refresh,
                "method": self.method, "backoff": self.backoff,
                "evaluation": self.evaluation,
                "dynamic": self.dynamic, "tol": self.tol,
                "max_iter": self.max_iter, "_compiled": self.compiled,
                "_chunk": self.chunk, "_tuning": self.tuning.overrides()}
