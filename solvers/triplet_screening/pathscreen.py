"""Path screening: the RRPB rule at each new lambda, and its range-based extension.

Along the path ``lam_t = ratio * lam_{t-1}`` each lambda has a new RRPB reference:
the previous solution ``M_{t-1}`` with ``eps = sqrt(2 gap / lam)`` (Theorem 3.10).
Both modes carry the state (every triplet's status, L-hat as per-pair counts, the
folded ``H_L = sum_p cnt_p F_p F_p^T``) from one lambda to the next:

* **per lambda** (default): the sphere rule of the newest reference on every triplet,
  in one pass fused with the status update and the compaction of the remaining
  triplets (:func:`.kernels._path_rule`; on anchor blocks
  :func:`.kernels._path_rule_blocks`, the same results bit for bit). From
  ``Tuning.retest_min`` triplets on, the full pass runs only now and then: it keeps
  each screened triplet's slack radius (how far the sphere may move before the rule
  could change), and later lambdas re-test only the candidates whose slack the
  sphere's movement may have used up (:func:`.kernels._path_retest`, bound in
  :meth:`PathScreen._within`), with a full pass's statuses, pair counts and remaining
  triplets.
* **range-based** (``range_screening=True``, the paper's section 4 made incremental):
  Theorem 4.1 gives each triplet the RRPB rule screens the interval ``(lam_a, lam_ref]``
  on which it stays screened; a step evaluates only the triplets still in the problem
  and those whose interval expired (:func:`.kernels._path_scan`). The screened set
  contains the per-lambda one.

A pass runs when it pays (:meth:`PathScreen.skip`, cost model :class:`.tuning.Tuning`).
The solve's first evaluation needs no pass (:class:`.state._Carry`).

Safety: at ``lam``, every screened triplet is certified by the RRPB sphere of a
reference (the newest one, or for the range-based scan the one that screened it), a
ball that contains ``M*_lam``; :meth:`PathScreen.spheres` returns those balls for the
solver's exactness check.
"""

from __future__ import annotations

import numpy as np

from . import spheres as sph
from .kernels import (
    _path_retest,
    _path_rule,
    _path_rule_blocks,
    _path_scan,
)
from .pairs import _Data, _Sub
from .rules import _rule_masks
from .tuning import DEFAULT, Tuning

__all__: list[str] = []

def visits_saved(removed: float, n: int, n_pairs: int, d: int, evals: float,
                 now: float, pair_weight: float = DEFAULT.pair_weight) -> float:
    """Loss-pass visits saved by removing ``removed`` of ``n`` triplets (on ``n_pairs``
    pairs in dimension ``d``) from ``evals`` evaluations: their loss passes and the
    forms of the pairs only they used, estimated as half their share of the pairs.
    ``now``: a loss pass's cost over the ``n`` (:meth:`.pairs._Sub.pass_visits`, less
    than ``n`` on anchor blocks); the remaining ones go by pair ids, one visit each, so
    removing few can save nothing. ``pair_weight``: :attr:`.Tuning.pair_weight`."""
    pairs = 0.5 * n_pairs * removed / max(n, 1)
    return evals * (now - (n - removed) + 2 * pair_weight * d * pairs)


def _up32(x: np.ndarray) -> np.ndarray:
    """``x`` in float32, rounded up (relative 1e-6 > half an ulp)."""
    return (np.asarray(x, dtype=float) * (1.0 + 1e-6)).astype(np.float32)


class PathScreen:
    """Screening state carried along a regularisation path (one per :func:`path` call).

    ``incremental``: range-based screening; ``evaluation``: the solve's loss pass
    (:meth:`.pairs._Data.all_triplets`); ``tuning``: the cost model's weights
    (:class:`.Tuning`; ``retest_min``: see the module docstring)."""

    def __init__(self, data: _Data, gamma: float, n_lambdas: int,
                 incremental: bool = False, evaluation: str = "triplets", *,
                 tuning: Tuning = DEFAULT) -> None:
        self.data = data
        self.tuning = tuning
        #: all triplets as the solve evaluates them unscreened (the baseline of :meth:`gain`)
        self.full = data.all_triplets(evaluation)
        self.incremental = incremental
        self.newest: sph.Sphere | None = None
        self.c = 1.0 - gamma
        n_t = data.n_t
        self.status = np.zeros(n_t, dtype=np.int8)   # 0 active, 1 L-hat, 2 R-hat
        self.hn32 = _up32(data.hn)
        # range-based state: screened while lam > thr, by reference ref_of (0: none)
        m = n_t if incremental else 0
        self.thr = np.full(m, np.inf, dtype=np.float32)
        self.ref_of = np.zeros(m, dtype=np.int32)
        self.refs: list[tuple[np.ndarray, float, float]] = [(data.zeros(), 0.0, 0.0)]
        self.ref_count = np.zeros(n_lambdas + 2, dtype=np.int64)
        self.cnt = np.zeros(data.n_pairs)            # L-hat pair counts
        self.nL = 0
        self.nR = 0
        self.sub = data.everything                   # the active triplets (global pairs)
        # scratch of the scan, allocated once (fresh pages would fault at every lambda)
        self._bufs = (np.empty(n_t, dtype=np.int64), np.empty(n_t, dtype=np.int32),
                      np.empty(n_t, dtype=np.int32), np.empty(n_t))
        self._used = np.empty(data.n_pairs, dtype=np.int64)
        # cost accounting (reported by the path) and the back-off state
        self.visited = 0
        self._last_cost = 0.0
        self._evals: float = 0            # passes of the last solve (:meth:`account`)
        self._probe: _Sub | None = None   # the sample the share is estimated on
        self._n_acc = 0
        self.advanced = False
        # re-testing: the last full pass's sphere, its candidates (triplets with slack
        # radius <= theta) and the running maximum of the movement bound
        self._retest = not incremental and n_t >= tuning.retest_min
        m = n_t if self._retest else 0
        # candidate buffers (index, slack radius, pair ids, ||H||, status), filled by the
        # full pass; pages touched only as far as the candidates reach
        self._cbufs = (np.empty(m, dtype=np.int64), np.empty(m, dtype=np.float32),
                       np.empty(m, dtype=np.int32), np.empty(m, dtype=np.int32),
                       np.empty(m, dtype=np.float32), np.empty(m, dtype=np.int8))
        self._tsample = (np.sort(np.random.default_rng(1).choice(
            n_t, min(tuning.theta_sample, n_t), replace=False)) if self._retest else None)
        self._c0: np.ndarray | None = None
        self._r0 = 0.0
        self._theta = -np.inf
        self._dmax = -np.inf
        self._cand: tuple = ()
        #: full passes and re-tests run
        self.n_full = 0
        self.n_retest = 0

    @property
    def active(self) -> np.ndarray:
        return self.sub.idx

    def advance(self, lam: float, M0: np.ndarray, lam_ref: float, eps: float) -> int:
        """Screening at ``lam`` from the reference ``(M0, lam_ref, eps)``; returns the
        number of triplets evaluated (active or expired). :attr:`sub` becomes the active
        triplets (their pairs compacted when few remain in use, :meth:`_Data.restrict`)
        and :attr:`newest` the reference's RRPB sphere at ``lam``."""
        data = self.data
        out = idx, la, lb, hn = self._bufs
        sp = sph.rrpb_sphere(M0, float(lam_ref), float(lam), float(eps))
        state = (self.status, self.cnt)
        rule = (float(sp.radius), self.c, sph.RULE_SLACK)
        self.newest = sp
        if self.incremental:
            rid = len(self.refs)
            if rid >= self.ref_count.size:
                self.ref_count = np.concatenate([self.ref_count,
                                                 np.zeros_like(self.ref_count)])
            self.refs.append((M0, float(lam_ref), float(eps)))
            q0 = data.quad(M0)
            na, dl, dr, ev = _path_scan(
                q0, data.pa, data.pb, self.hn32, (sph.fnorm(M0), float(lam_ref), float(eps), rid),
                self.c, float(lam), state, (self.thr, self.ref_of, self.ref_count), out)
            self._last_cost = self.tuning.scan_weight * ev + self.tuning.pass_weight * data.n_t
        elif self._within(sp):
            na, dl, dr, ev = _path_retest(data.quad(sp.center), rule, state, self._cand,
                                          self._dmax, out)
            b = None   # pair ids global: compacted below
            self.n_retest += 1
            self._last_cost = (self.tuning.cand_weight * self._cand[0].size
                               + self.tuning.retest_weight * ev)
        else:
            b = data.blocks
            q = data.quad(sp.center)
            theta = self._theta_for(q, float(sp.radius))
            cb = self._cbufs if theta > 0 else tuple(a[:0] for a in self._cbufs)
            if b is not None:
                # the pairs in use and the local pair ids come out of the same call
                na, nl, nr, nu, nc = _path_rule_blocks(q, b.layout, self.hn32, rule, state,
                                                       out, self._used, np.float32(theta), cb)
                used = self._used[:nu].copy()
            else:
                na, nl, nr, nc = _path_rule(q, data.pa, data.pb, self.hn32, rule, state, out,
                                            np.float32(theta), cb)
            dl, dr, ev = nl - self.nL, nr - self.nR, data.n_t
            self._last_cost = self.pass_cost()
            self.n_full += 1
            if theta > 0:
                self._cand = tuple(a[:nc] for a in cb)
                self._c0, self._r0 = np.array(sp.center), float(sp.radius)
                self._theta, self._dmax = float(np.float32(theta)), -np.inf
            else:
                self._c0, self._theta = None, -np.inf
        # views of the scratch buffers: the subset lives until the next advance
        if self.incremental or b is None:
            self.sub = data.restrict(data.everything, idx[:na], la[:na], lb[:na], hn[:na],
                                     self.tuning.pair_compaction)
        else:
            self.sub = data.in_use(data.everything, idx[:na], la[:na], lb[:na], hn[:na],
                                   used, la[:na], lb[:na], self.tuning.pair_compaction)
        self.nL += int(dl)
        self.nR += int(dr)
        self.visited += int(ev)
        self.advanced = True
        return int(ev)

    def _movement(self, sp: sph.Sphere) -> float:
        """The bound ``D`` of :meth:`_within` for the sphere ``sp`` against the last full
        pass's."""
        dc = sph.fnorm(sp.center - self._c0)
        dr = float(sp.radius) - self._r0
        D = dc + dr + sph.RULE_SLACK * (dc + abs(dr))
        return D + 1e-9 * abs(D) + 1e-300

    def _within(self, sp: sph.Sphere) -> bool:
        """Whether the re-test of the candidates decides the rule at ``sp`` for every
        triplet (else a full pass runs).

        A full pass with the sphere ``B(C0, r0)`` keeps for each triplet ``t`` it
        screens its slack radius ``rho_t = e_t / ||H_t||`` with ``e_t`` its excess
        over the rule's threshold (Eq. 4) less one more rounding margin ``s_t``:
        ``hq - r0 h - 1 - 2 s_t`` for R-hat, ``c - 2 s_t - hq - r0 h`` for L-hat
        (``hq = <C0, H_t>``, ``h = ||H_t||`` rounded up to float32 as the rule takes it,
        ``c = 1 - gamma``, ``s_t = RULE_SLACK
        (|hq| + r0 h + 1)``), rounded down; ``-inf`` for the triplets it leaves. At a
        later sphere ``B(C, r)``, with ``dC = ||C - C0||_F`` and ``dr = r - r0``,
        ``|<C, H_t> - hq| <= dC h`` (Cauchy-Schwarz) and the rule's margin there grows
        by at most ``RULE_SLACK h (dC + |dr|)``, so the R-hat test's excess at ``C``
        is at least ``h (rho_t - D) + s_t`` with
        ``D = dC + dr + RULE_SLACK (dC + |dr|)`` (likewise for L-hat): a triplet
        with ``rho_t > D`` keeps its status, which is what the rule at ``B(C, r)``
        gives. The candidates are the triplets with ``rho_t <= theta``; while the
        running maximum of ``D`` since the full pass stays ``<= theta``, re-testing the
        candidates with ``rho_t <=`` that maximum decides every triplet (a triplet not
        re-tested since the full pass still has that pass's status; one re-tested once
        is re-tested at every later lambda: the maximum never falls). Safety follows
        from the rule's: the status of each triplet is the rule's at the current
        sphere, a ball containing ``M*_lam`` (Theorem 3.10)."""
        if not self._retest or self._c0 is None or self._c0.shape != sp.center.shape:
            return False
        dmax = max(self._dmax, self._movement(sp))
        if not dmax <= self._theta:
            return False
        self._dmax = dmax
        return True

    def _theta_for(self, q: np.ndarray, r: float) -> float:
        """The candidates' bound for a full pass with pair forms ``q`` and radius ``r``:
        the ``Tuning.cand_share`` quantile of the slack radii of the screened among a
        fixed sample of ``Tuning.theta_sample`` triplets (0 without re-testing, or when
        too few of the sample are screened)."""
        if not self._retest:
            return 0.0
        d = self.data
        s = self._tsample
        assert s is not None  # drawn when re-testing
        hq = q[d.pa[s]] - q[d.pb[s]]
        h = self.hn32[s].astype(float)
        rh = r * h
        sl = sph.RULE_SLACK * (np.abs(hq) + rh + 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(hq - rh > 1.0 + sl, (hq - rh - 1.0 - 2 * sl) / h,
                           np.where(hq + rh < self.c - sl, (self.c - 2 * sl - hq - rh) / h,
                                    np.nan))
        rho = rho[np.isfinite(rho)]
        k = int(self.tuning.cand_share * s.size)
        if rho.size <= k:
            return 0.0
        return float(np.partition(rho, k)[k])

    def pass_cost(self, share: float = 1.0) -> float:
        """The per-lambda pass's cost in loss-pass visits when it screens ``share`` of the
        triplets (``Tuning.pair_pass_weight``, or the ``block_*`` and ``keep_weight`` terms
        on anchor blocks, plus ``path_overhead``); after two range-based scans, the last's."""
        if self.incremental and self._n_acc > 1:
            return self._last_cost
        n_t = self.data.n_t
        b = self.data.blocks
        t = self.tuning
        if b is None or self.incremental:
            return t.pair_pass_weight * n_t + t.path_overhead
        return (t.block_triplet_weight * n_t + t.block_row_weight * b.PB.size
                + t.keep_weight * (1.0 - share) * n_t + t.path_overhead)

    def gain(self, share: float) -> float:
        """Loss-pass visits the pass saves when it screens ``share`` of the triplets,
        over as many evaluations as the last solve ran (:func:`visits_saved`)."""
        d = self.data
        return visits_saved(share * d.n_t, d.n_t, d.n_pairs, d.d, max(self._evals, 1),
                            self.full.pass_visits(self.tuning), self.tuning.pair_weight)

    def skip(self, lam: float, M0: np.ndarray, lam_ref: float, eps: float) -> str | None:
        """Why path screening at ``lam`` from the reference ``(M0, lam_ref, eps)`` sits
        out, or None when it runs: when the visits it saves (:meth:`gain`) reach
        ``Tuning.path_pay_margin`` times its cost (:meth:`pass_cost`), both at the share of
        triplets it would screen. The share is taken as 1 first; if that pays and there
        are more than ``Tuning.probe_min`` triplets, it is measured with the reference's
        sphere on a fixed random sample of ``Tuning.sample``. When a re-test would decide
        the lambda (:meth:`_within`), it runs, without the sample, if the gain at the last
        lambda's share reaches the margin times ``retest_weight`` a candidate plus
        ``path_overhead``. The range-based scan always runs its first two times (to build
        its state, then to measure a scan's cost). Decisions use counts, not clocks."""
        self.advanced = False
        if self.incremental and self._n_acc < 2:
            return None  # the range-based scan's first two: its state, and its cost
        data = self.data
        n_t = data.n_t
        evals = max(self._evals, 1)
        t = self.tuning
        margin, sample = t.path_pay_margin, t.sample
        if self._retest and self._c0 is not None and self._c0.shape == M0.shape:
            # a re-test (no full pass) would decide this lambda: its cost is the
            # candidates', its share about the last lambda's
            sp = sph.rrpb_sphere(M0, float(lam_ref), float(lam), float(eps))
            if max(self._dmax, self._movement(sp)) <= self._theta and self.gain(
                    (self.nL + self.nR) / n_t) >= margin * (
                    t.retest_weight * self._cand[0].size + t.path_overhead):
                return None
        gain, cost = self.gain(1.0), margin * self.pass_cost(1.0)
        if gain < cost:
            return (f"path screening skipped at this lambda: at most {gain:,.0f} triplet "
                    f"visits of loss passes and pair forms to save ({evals:.3g} evaluation(s) "
                    f"at the last lambda) against about {cost:,.0f} for the pass (its cost "
                    f"x {margin:g})")
        if n_t <= t.probe_min:
            return None
        if self._probe is None:
            pick = np.random.default_rng(0).choice(n_t, sample, replace=False)
            self._probe = data.compact(np.sort(pick))
        sp = sph.rrpb_sphere(M0, float(lam_ref), float(lam), float(eps))
        L, R = _rule_masks(data, self._probe, sp, "sphere", 1.0 - self.c, None)
        self.visited += sample
        share = float(L.sum() + R.sum()) / sample
        gain, cost = self.gain(share), margin * self.pass_cost(share)
        if gain >= cost:
            return None
        return (f"path screening skipped at this lambda: about {gain:,.0f} triplet visits "
                f"of loss passes and pair forms to save ({share:.0%} of a sample of "
                f"{sample:,} triplets screened, {evals:.3g} evaluation(s) at the last lambda) "
                f"against about {cost:,.0f} for the pass (its cost x {margin:g})")

    def account(self, n_evals: int, n_refresh: int = 0) -> None:
        """After each lambda: record for :meth:`skip` its solve's work in passes over the
        remaining triplets, and whether :meth:`advance` screened at it. Without an active
        set these are the ``n_evals`` evaluations. With one, each of the ``n_refresh``
        refreshes counts ``1 + Tuning.workset_weight`` passes, and the other evaluations,
        over the working set, the L-hat share of the screened triplets (only those, with
        positive loss, would have been in the working set)."""
        if n_refresh:
            share_L = self.nL / max(self.nL + self.nR, 1)
            self._evals = (n_refresh * (1.0 + self.tuning.workset_weight)
                           + (n_evals - n_refresh) * share_L)
        else:
            self._evals = n_evals
        if self.advanced:
            self.advanced = False
            self._n_acc += 1

    def spheres(self, lam: float) -> list[sph.Sphere]:
        """The RRPB balls at ``lam`` of every reference that still certifies a triplet."""
        if not self.incremental:
            return [self.newest] if (self.newest is not None and self.nL + self.nR) else []
        return [sph.rrpb_sphere(M0, l0, lam, e0)
                for (M0, l0, e0), n in zip(self.refs, self.ref_count, strict=False) if n > 0]

    def folded_L(self) -> np.ndarray:
        """``H_L = sum over L-hat of H_t = sum_p cnt_p F_p F_p^T`` from the pair counts,
        a new array."""
        if self.nL == 0:
            return self.data.zeros()
        return self.data.assemble(self.cnt)
