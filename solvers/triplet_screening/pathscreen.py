"""Incremental path screening: the range-based RRPB rule (section 4) kept across lambdas.

Along the path ``lam_t = ratio * lam_{t-1}`` each new lambda has a new RRPB
reference (the previous solution ``M_{t-1}``, ``eps = sqrt(2 gap / lam)``).
Theorem 4.1 gives, for every triplet the RRPB sphere rule screens from that
reference, the whole interval ``(lam_a, lam_ref]`` on which it stays screened.
So the screened triplets need no new evaluation until the path passes their
``lam_a``: they are kept in buckets keyed by ``floor(log(lam_a / lam_0) / log
ratio)`` and a step of lambda visits only

- the triplets still in the problem (the active ones), and
- the triplets whose bucket expires at this lambda (at most one step early),

both evaluated against the newest reference. The per-lambda work is therefore
proportional to what changes, not to the number of triplets. The screened set
contains the one of the plain per-lambda RRPB rule (a triplet whose old
interval is still valid stays screened; every other one meets the newest
reference). L-hat is kept as per-pair counts (exact integers) so its folded
matrix ``H_L = sum_p cnt_p F_p F_p^T`` is rebuilt in ``O(n d^2 + P d)``.

Safety: at ``lam``, every screened triplet is certified by the RRPB sphere of
the reference that screened it (a ball that contains ``M*_lam``);
:meth:`PathScreen.spheres` returns those balls for the solver's exactness check.
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from . import spheres as sph
from .kernels import _range_eval, _unscreen
from .pairs import _Data

__all__: list[str] = []


class PathScreen:
    """Screening state carried along a regularisation path (one per :func:`path` call)."""

    def __init__(self, data: _Data, gamma: float, lam0: float, ratio: float) -> None:
        self.data = data
        self.c = 1.0 - gamma
        self.lam0 = float(lam0)
        self.log_ratio = math.log(ratio)
        n_t = data.n_t
        self.status = np.zeros(n_t, dtype=np.int8)   # 0 active, 1 L-hat, 2 R-hat
        self.ref_of = np.full(n_t, -1, dtype=np.int32)
        self.refs: list[tuple[np.ndarray, float, float]] = []
        self.ref_count = np.zeros(0, dtype=np.int64)
        self.active = np.arange(n_t, dtype=np.int64)
        self.cnt = np.zeros(data.n_pairs)            # L-hat pair counts
        self.nL = 0
        self.nR = 0
        self._heap: list[int] = []
        self._buckets: dict[int, list[np.ndarray]] = {}
        # cost accounting (reported by the path)
        self.visited = 0
        self.seconds = 0.0

    def _key(self, thr: np.ndarray) -> np.ndarray:
        """Bucket of each threshold: ``floor(log(thr / lam_0) / log ratio)`` (``thr > 0``)."""
        return np.floor(np.log(thr / self.lam0) / self.log_ratio).astype(np.int64)

    def advance(self, lam: float, M0: np.ndarray, lam_ref: float, eps: float) -> tuple[int, int]:
        """Screening at ``lam`` from the reference ``(M0, lam_ref, eps)``.

        Returns ``(newly screened, returned to the problem)`` counts.
        """
        t0 = time.perf_counter()
        data = self.data
        # 1. buckets whose interval may end at this lambda go back to the candidates
        now = math.log(lam / self.lam0) / self.log_ratio
        expired = []
        while self._heap and self._heap[0] <= now + 1e-9:
            key = heapq.heappop(self._heap)
            expired.extend(self._buckets.pop(key))
        n_back = 0
        if expired:
            ex = np.concatenate(expired)
            nl, nr = _unscreen(ex, self.status, data.pa, data.pb, self.cnt)
            self.nL -= int(nl)
            self.nR -= int(nr)
            self.ref_count -= np.bincount(self.ref_of[ex], minlength=self.ref_count.size)
            self.ref_of[ex] = -1
            cand = np.concatenate([self.active, ex])
            n_back = int(ex.size)
        else:
            cand = self.active
        # 2. the candidates against the newest reference (Theorem 4.1)
        rid = len(self.refs)
        self.refs.append((M0, float(lam_ref), float(eps)))
        self.ref_count = np.append(self.ref_count, 0)
        thr = np.empty(cand.size)
        q0 = data.quad(M0)
        nl, nr = _range_eval(cand, q0, data.pa, data.pb, data.hn, sph.fnorm(M0),
                             float(lam_ref), float(eps), self.c, float(lam), self.status,
                             self.cnt, thr)
        self.visited += int(cand.size)
        hit = thr >= -0.5
        newly = cand[hit]
        self.active = cand[~hit]
        if newly.size:
            self.nL += int(nl)
            self.nR += int(nr)
            self.ref_of[newly] = rid
            self.ref_count[rid] += newly.size
            th = thr[hit]
            pos = th > 0
            if np.any(pos):
                # a non-positive threshold never expires (screened for every lam > 0)
                idx, keys = newly[pos], self._key(th[pos])
                order = np.argsort(keys, kind="stable")
                idx, keys = idx[order], keys[order]
                cuts = np.flatnonzero(np.diff(keys)) + 1
                for part, key in zip(np.split(idx, cuts), keys[np.r_[0, cuts]], strict=True):
                    k = int(key)
                    if k not in self._buckets:
                        self._buckets[k] = []
                        heapq.heappush(self._heap, k)
                    self._buckets[k].append(part)
        self.seconds += time.perf_counter() - t0
        return int(newly.size), n_back

    def spheres(self, lam: float) -> list[sph.Sphere]:
        """The RRPB balls at ``lam`` of every reference that still certifies a triplet."""
        return [sph.rrpb_sphere(M0, l0, lam, e0)
                for (M0, l0, e0), n in zip(self.refs, self.ref_count, strict=True) if n > 0]

    def folded_L(self) -> np.ndarray:
        """``H_L = sum over L-hat of H_t`` from the exact pair counts."""
        if self.nL == 0:
            return self.data.zeros()
        return self.data.assemble(self.cnt)
