"""Path screening: the RRPB rule at each new lambda, and its range-based extension.

Along the path ``lam_t = ratio * lam_{t-1}`` each new lambda has a new RRPB
reference (the previous solution ``M_{t-1}``, ``eps = sqrt(2 gap / lam)``,
Theorem 3.10). Two ways to screen with it, both carrying the state (status of every
triplet, L-hat as per-pair counts) from one lambda to the next:

* **per lambda** (default): the sphere rule with the newest reference's sphere on
  every triplet, in one sequential pass fused with the status update and the
  compaction of the remaining triplets (:func:`.kernels._path_rule`). When the
  triplets are stored in anchor blocks (one anchor, rows of same-class ``j`` sharing
  one list of other-class ``l``: how :func:`.triplets.triplets` builds them) the pass
  runs block by block (:func:`.kernels._path_rule_blocks`): the rule runs as one flat
  SIMD loop over each block's margins, row and column sums give the pair counts and
  the pairs still in use, and the compaction follows per row (rows screened whole
  skipped) with the pair ids already local to the pairs in use; same results, bit for
  bit, as the pair-id pass followed by :func:`.kernels._compact_pairs`. The L-hat pair
  counts change only for the triplets that enter or leave L-hat, so the folded
  ``H_L = sum_p cnt_p F_p F_p^T`` costs ``O(n d^2 + P d)`` (pairs without a count
  skipped).
* **range-based** (``incremental=True``, the paper's section 4 made incremental):
  Theorem 4.1 gives, for every triplet the RRPB rule screens, the interval
  ``(lam_a, lam_ref]`` on which it stays screened; a step of lambda evaluates only the
  triplets still in the problem and those whose interval expired
  (:func:`.kernels._path_scan`), and the screened set contains the per-lambda one.

The solve's first evaluation at the reference needs no pass: the previous lambda's
last evaluation there is the new reduced problem's (:attr:`.state._Ref.ev`).

Measured on this 2-core machine (four lambdas along the path, best of 9, per lambda):
wine with all 1,232,288 triplets (d = 13), the pair-id pass with the pair compaction
8.0 ms, the anchor-block pass 1.8-1.9 ms; digits PCA 20, k = 20 (718,800 triplets):
5.2-5.5 against 1.7-1.8 ms. Earlier, on wine with all triplets, the range-based scan
evaluated ~49 % of the triplets per lambda (the intervals of a 0.9-ratio path mostly
end within one step) yet cost ~10 ms, its scattered state (thresholds, references,
their counts) making each visit ~5x dearer; and it screened 1-2 triplets more out of
1.04 M. So per lambda is the default and the range-based scan an option
(``path(..., range_screening=True)``).

Safety: at ``lam``, every screened triplet is certified by the RRPB sphere of a
reference (the newest one, or for the range-based scan the one that screened it), a
ball that contains ``M*_lam``; :meth:`PathScreen.spheres` returns those balls for the
solver's exactness check.
"""

from __future__ import annotations

import numpy as np

from . import spheres as sph
from .kernels import _path_rule, _path_rule_blocks, _path_scan
from .pairs import _Data

__all__: list[str] = []

#: Cost of path screening in loss-pass visits (a loss pass costs 2-2.3 ns per triplet on
#: this 2-core machine). Per lambda: ``RULE_WEIGHT`` per triplet (the fused rule pass,
#: ~3 ns). Range-based: ``SCAN_WEIGHT`` per evaluated triplet (scattered reads and writes
#: of its state) plus ``PASS_WEIGHT`` per triplet for the threshold pass.
RULE_WEIGHT = 1.5
SCAN_WEIGHT = 6.0
PASS_WEIGHT = 0.5
#: Margin a screening round's best-case gain must clear (dynamic screening, see
#: :meth:`._Run.worth_screening`).
PAY_MARGIN = 2.0
#: Longest run of lambdas path screening sits out after it did not pay.
MAX_SKIP = 16


def _up32(x: np.ndarray) -> np.ndarray:
    """``x`` in float32, rounded up (relative 1e-6 > half an ulp)."""
    return (np.asarray(x, dtype=float) * (1.0 + 1e-6)).astype(np.float32)


class PathScreen:
    """Screening state carried along a regularisation path (one per :func:`path` call)."""

    def __init__(self, data: _Data, gamma: float, n_lambdas: int,
                 incremental: bool = False) -> None:
        self.data = data
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
        self._skip = 0
        self._fails = 0
        self._n_acc = 0
        self.advanced = False

    @property
    def active(self) -> np.ndarray:
        return self.sub.idx

    def advance(self, lam: float, M0: np.ndarray, lam_ref: float, eps: float) -> int:
        """Screening at ``lam`` from the reference ``(M0, lam_ref, eps)``; returns the
        number of triplets evaluated (active or expired). :attr:`sub` becomes the active
        triplets (their pairs compacted when few remain in use, :meth:`_Data.restrict`)
        and :attr:`newest` the reference's RRPB sphere at ``lam``."""
        data = self.data
        idx, la, lb, hn = self._bufs
        sp = sph.rrpb_sphere(M0, float(lam_ref), float(lam), float(eps))
        self.newest = sp
        if self.incremental:
            rid = len(self.refs)
            if rid >= self.ref_count.size:
                self.ref_count = np.concatenate([self.ref_count,
                                                 np.zeros_like(self.ref_count)])
            self.refs.append((M0, float(lam_ref), float(eps)))
            q0 = data.quad(M0)
            na, dl, dr, ev = _path_scan(q0, data.pa, data.pb, self.hn32, sph.fnorm(M0),
                                        float(lam_ref), float(eps), self.c, float(lam), rid,
                                        self.status, self.thr, self.ref_of, self.ref_count,
                                        self.cnt, idx, la, lb, hn)
            self._last_cost = SCAN_WEIGHT * ev + PASS_WEIGHT * data.n_t
        else:
            b = data.blocks
            args = (self.hn32, float(sp.radius), self.c, sph.RULE_SLACK, self.status,
                    self.cnt, idx, la, lb, hn)
            if b is not None:
                # the pairs in use and the local pair ids come out of the same call
                na, nl, nr, nu = _path_rule_blocks(data.quad(sp.center), *b, *args,
                                                   self._used)
                used = self._used[:nu].copy()
            else:
                na, nl, nr = _path_rule(data.quad(sp.center), data.pa, data.pb, *args)
            dl, dr, ev = nl - self.nL, nr - self.nR, data.n_t
            self._last_cost = RULE_WEIGHT * data.n_t
        # views of the scratch buffers: the subset lives until the next advance
        if self.incremental or b is None:
            self.sub = data.restrict(data.everything, idx[:na], la[:na], lb[:na], hn[:na])
        else:
            self.sub = data.in_use(data.everything, idx[:na], la[:na], lb[:na], hn[:na],
                                   used, la[:na], lb[:na])
        self.nL += int(dl)
        self.nR += int(dr)
        self.visited += int(ev)
        self.advanced = True
        return int(ev)

    def skip(self) -> bool:
        """Whether path screening backs off at this lambda (see :meth:`account`)."""
        self.advanced = False
        if self._skip > 0:
            self._skip -= 1
            return True
        return False

    def account(self, n_evals: int) -> str | None:
        """After a lambda screened by :meth:`advance`: did path screening pay? Gain: the
        screened triplets times the loss passes run at this lambda (visits saved); cost:
        the pass, in the same units (``RULE_WEIGHT`` loss-pass visits per triplet; for
        the range-based scan ``SCAN_WEIGHT`` per evaluated triplet and ``PASS_WEIGHT``
        per triplet, its first scan, which builds the state, not counted). When the gain
        is below the cost, path screening sits out the next 1, 2, 4, ... (at most
        ``MAX_SKIP``) lambdas, doubling while it keeps not paying, and a note says so.
        Counts, not clocks: the decisions do not depend on the machine's load."""
        if not self.advanced:
            return None
        self.advanced = False
        self._n_acc += 1
        if self.incremental and self._n_acc == 1:
            return None
        gain = float(self.data.n_t - self.active.size) * max(n_evals, 1)
        if gain >= self._last_cost:
            self._fails = 0
            return None
        self._fails += 1
        self._skip = min(2 ** (self._fails - 1), MAX_SKIP)
        return (f"path screening sits out the next {self._skip} lambda(s): it saved about "
                f"{gain:,.0f} triplet visits of loss passes and cost about "
                f"{self._last_cost:,.0f}")

    def spheres(self, lam: float) -> list[sph.Sphere]:
        """The RRPB balls at ``lam`` of every reference that still certifies a triplet."""
        if not self.incremental:
            return [self.newest] if (self.newest is not None and self.nL + self.nR) else []
        return [sph.rrpb_sphere(M0, l0, lam, e0)
                for (M0, l0, e0), n in zip(self.refs, self.ref_count, strict=False) if n > 0]

    def folded_L(self) -> np.ndarray:
        """``H_L = sum over L-hat of H_t`` from the exact pair counts."""
        if self.nL == 0:
            return self.data.zeros()
        return self.data.assemble(self.cnt)
