"""Incremental path screening: the range-based RRPB rule (section 4) kept across lambdas.

Along the path ``lam_t = ratio * lam_{t-1}`` each new lambda has a new RRPB
reference (the previous solution ``M_{t-1}``, ``eps = sqrt(2 gap / lam)``).
Theorem 4.1 gives, for every triplet the RRPB sphere rule screens from that
reference, the whole interval ``(lam_a, lam_ref]`` on which it stays screened.
So the screened triplets need no new evaluation until the path passes their
``lam_a``; a step of lambda evaluates only the triplets still in the problem
and those whose interval expired, against the newest reference. The screened set
contains the one of the plain per-lambda RRPB rule (a triplet whose old
interval is still valid stays screened; every other one meets the newest
reference). The bookkeeping is one sequential pass fused with the status update:
a still-certified triplet costs one comparison. L-hat is kept as per-pair
counts (exact integers) so its folded matrix ``H_L = sum_p cnt_p F_p F_p^T``
is rebuilt in ``O(n d^2 + P d)``.

Safety: at ``lam``, every screened triplet is certified by the RRPB sphere of
the reference that screened it (a ball that contains ``M*_lam``);
:meth:`PathScreen.spheres` returns those balls for the solver's exactness check.
"""

from __future__ import annotations

import time

import numpy as np

from . import spheres as sph
from .kernels import _compact_pairs, _path_scan
from .pairs import _Data, _Forms, _Sub

__all__: list[str] = []

#: Compact the pairs of the active triplets when fewer than this share remains in use.
_PAIR_COMPACTION = 0.7
#: Cost of the path scan in loss-pass visits: one evaluation of a triplet against the
#: reference (scattered reads and writes of its state) and the threshold pass per
#: triplet; measured on wine and digits, 2-core machine (an evaluation costs 5-15 loss
#: visits).
SCAN_WEIGHT = 6.0
PASS_WEIGHT = 0.5
#: Lambdas over which path screening's gain and cost are compared (once per path), and
#: the margin the gain must clear (the per-lambda work besides the scan: status copy,
#: compaction, the reference spheres). Measured ratios over the warm-up: wine all
#: triplets 3.3 and k=10 3.3 (screening pays: 1.7-2.5x and 1.2x), digits PCA 16/20
#: 1.3/1.0 (it does not: 0.9x and 0.7x).
WARMUP = 6
PAY_MARGIN = 2.0


def _up32(x: np.ndarray) -> np.ndarray:
    """``x`` in float32, rounded up (relative 1e-6 > half an ulp)."""
    return (np.asarray(x, dtype=float) * (1.0 + 1e-6)).astype(np.float32)


class PathScreen:
    """Screening state carried along a regularisation path (one per :func:`path` call)."""

    def __init__(self, data: _Data, gamma: float, n_lambdas: int) -> None:
        self.data = data
        self.c = 1.0 - gamma
        n_t = data.n_t
        self.status = np.zeros(n_t, dtype=np.int8)   # 0 active, 1 L-hat, 2 R-hat
        self.thr = np.full(n_t, np.inf, dtype=np.float32)   # screened while lam > thr
        self.hn32 = _up32(data.hn)
        self.ref_of = np.zeros(n_t, dtype=np.int32)   # 0: no reference (slot unused)
        self.refs: list[tuple[np.ndarray, float, float]] = [(data.zeros(), 0.0, 0.0)]
        self.ref_count = np.zeros(n_lambdas + 2, dtype=np.int64)
        self.cnt = np.zeros(data.n_pairs)            # L-hat pair counts
        self.nL = 0
        self.nR = 0
        self.sub = data.everything                   # the active triplets (global pairs)
        # scratch of the scan, allocated once (fresh pages would fault at every lambda)
        self._bufs = (np.empty(n_t, dtype=np.int64), np.empty(n_t, dtype=np.int32),
                      np.empty(n_t, dtype=np.int32), np.empty(n_t))
        # cost accounting (reported by the path) and the back-off state
        self.visited = 0
        self.seconds = 0.0
        self._last_cost = 0.0
        self._skip = 0
        self._gain = 0.0
        self._cost = 0.0
        self._n_acc = 0
        self._decided = False
        self.advanced = False

    @property
    def active(self) -> np.ndarray:
        return self.sub.idx

    def advance(self, lam: float, M0: np.ndarray, lam_ref: float, eps: float) -> int:
        """Screening at ``lam`` from the reference ``(M0, lam_ref, eps)``; returns the
        number of triplets evaluated (active or expired). :attr:`sub` becomes the active
        triplets (with the global pair ids: no pair compaction)."""
        t0 = time.thread_time()
        data = self.data
        rid = len(self.refs)
        if rid >= self.ref_count.size:
            self.ref_count = np.concatenate([self.ref_count, np.zeros_like(self.ref_count)])
        self.refs.append((M0, float(lam_ref), float(eps)))
        q0 = data.quad(M0)
        idx, la, lb, hn = self._bufs
        na, dl, dr, ev = _path_scan(q0, data.pa, data.pb, self.hn32, sph.fnorm(M0),
                                    float(lam_ref), float(eps), self.c, float(lam), rid,
                                    self.status, self.thr, self.ref_of, self.ref_count,
                                    self.cnt, idx, la, lb, hn)
        act = idx[:na].copy()
        pairs, pla, plb = _compact_pairs(la[:na], lb[:na], data.n_pairs)
        if pairs.size < _PAIR_COMPACTION * data.n_pairs:
            # per-pair forms cost O(P d) per evaluation: drop the pairs no active
            # triplet uses when that removes a good share of them
            self.sub = _Sub(act, pairs, pla, plb, hn[:na].copy(),
                            _Forms(data.F[pairs], data.pi[pairs], data.pj[pairs], data.Xc,
                                   data.diagonal))
        else:
            self.sub = _Sub(act, np.arange(data.n_pairs), la[:na].copy(), lb[:na].copy(),
                            hn[:na].copy(), data.forms)
        self.nL += int(dl)
        self.nR += int(dr)
        self.visited += int(ev)
        self.seconds += time.thread_time() - t0
        self._last_cost = SCAN_WEIGHT * ev + PASS_WEIGHT * data.n_t
        self.advanced = True
        return int(ev)

    def skip(self) -> bool:
        """Whether path screening backs off at this lambda (see :meth:`account`)."""
        self.advanced = False
        if self._skip > 0:
            self._skip -= 1
            return True
        return False

    def account(self, n_iter: int) -> str | None:
        """After a lambda screened by :meth:`advance`: does path screening pay? Gain: the
        screened triplets times the iterations run (loss-pass visits saved); cost: the
        scan, in the same units (an evaluation of a triplet against a reference costs
        about ``SCAN_WEIGHT`` loss-pass visits, the threshold pass ``PASS_WEIGHT`` per
        triplet). Decided once, over lambdas 2 to ``1 + WARMUP`` (the first scan builds
        the state and is not counted): when the gain is below ``PAY_MARGIN`` times the
        cost, path screening
        stops for the rest of the path and a note says so. Counts, not clocks: the
        decision does not depend on the machine's load."""
        if not self.advanced:
            return None
        self.advanced = False
        self._n_acc += 1
        if self._n_acc == 1 or self._decided:
            return None
        self._gain += float(self.data.n_t - self.active.size) * max(n_iter, 1)
        self._cost += self._last_cost
        if self._n_acc < 1 + WARMUP:
            return None
        self._decided = True
        if self._gain >= PAY_MARGIN * self._cost:
            return None
        self._skip = 10**9
        return (f"path screening backs off for the rest of the path: over {WARMUP} lambdas it "
                f"saved about {self._gain:,.0f} triplet visits and cost about "
                f"{self._cost:,.0f}")

    def spheres(self, lam: float) -> list[sph.Sphere]:
        """The RRPB balls at ``lam`` of every reference that still certifies a triplet."""
        return [sph.rrpb_sphere(M0, l0, lam, e0)
                for (M0, l0, e0), n in zip(self.refs, self.ref_count, strict=False) if n > 0]

    def folded_L(self) -> np.ndarray:
        """``H_L = sum over L-hat of H_t`` from the exact pair counts."""
        if self.nL == 0:
            return self.data.zeros()
        return self.data.assemble(self.cnt)
