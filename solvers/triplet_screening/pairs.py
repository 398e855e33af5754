"""Triplets in pair form: per-pair quadratic forms, weighted sums, compaction to subsets."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import NamedTuple

import numpy as np

from .kernels import (
    _blocks_match,
    _compact_pairs,
    _evaluate,
    _forms,
    _pair_diff,
    _point_rows,
    _triplet_weights,
    _work_set,
    _wsum,
)
from .tuning import DEFAULT, Tuning

#: Path screening takes the anchor-block pass (:func:`.kernels._path_rule_blocks`) when
#: the rows of the blocks hold at least this many triplets on average, instead of the
#: pair-id pass (:func:`.kernels._path_rule`) followed by :func:`.kernels._compact_pairs`.
BLOCK_ROW = 8


class _Blocks(NamedTuple):
    """Triplets stored in anchor blocks: block ``a`` holds the triplets
    ``t0[a] + s * nd[a] + o`` (``s < ns[a]``, ``o < nd[a]``) with pair ids
    ``pa[t] = PA[offd[a] + o]`` (pair ``(i, l)``) and ``pb[t] = PB[offs[a] + s]`` (pair
    ``(i, j)``): one anchor ``i``, its same-class points ``j`` in rows, its other-class
    points ``l`` in columns, which is how :func:`.triplets.triplets` builds them.

    ``CO``, ``RO``: the sorted pass's orders of each block's columns and rows by their
    forms (:func:`.kernels._sorted_loss_pass`), updated in place and kept between passes
    so each starts nearly sorted; empty: the loss pass visits triplets one by one."""

    t0: np.ndarray
    ns: np.ndarray
    nd: np.ndarray
    offs: np.ndarray
    offd: np.ndarray
    PA: np.ndarray
    PB: np.ndarray
    CO: np.ndarray
    RO: np.ndarray

    @property
    def layout(self) -> tuple:
        """The seven layout arrays (without the sort orders)."""
        return tuple(self)[:7]

    def sorted(self) -> _Blocks:
        """These blocks with sort orders (identity: each block's own order) for the
        sorted pass."""
        def local(n: np.ndarray) -> np.ndarray:
            return (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)).astype(np.int32)

        return self._replace(CO=local(self.nd), RO=local(self.ns))


_NONE32 = np.empty(0, dtype=np.int32)
#: No anchor blocks (the loss pass goes by pair ids): empty arrays of the block dtypes.
NO_BLOCKS = _Blocks(*(np.empty(0, dtype=np.int64) for _ in range(5)),
                    *(_NONE32 for _ in range(4)))


def _anchor_blocks(T: np.ndarray, pa: np.ndarray, pb: np.ndarray) -> _Blocks | None:
    """The anchor blocks of the triplets ``T`` (pair ids ``pa``, ``pb``) when they are
    stored that way (runs of one anchor, rows of one ``j`` sharing one list of ``l``),
    else None. The layout is verified triplet by triplet against ``pa`` and ``pb``."""
    n_t = T.shape[0]
    i, j = T[:, 0], T[:, 1]
    brk = np.empty(n_t, dtype=bool)
    brk[0] = True
    np.not_equal(i[1:], i[:-1], out=brk[1:])
    starts = np.flatnonzero(brk)
    rbrk = brk.copy()
    rbrk[1:] |= j[1:] != j[:-1]
    rstarts = np.flatnonzero(rbrk)
    rlen = np.diff(np.append(rstarts, n_t))
    arow = np.cumsum(brk[rstarts]) - 1                  # block of each row
    nd = rlen[np.searchsorted(rstarts, starts)]          # length of each block's first row
    if np.any(rlen != nd[arow]):
        return None
    ns = np.bincount(arow, minlength=starts.size)
    offs = np.concatenate([[0], np.cumsum(ns)[:-1]])
    offd = np.concatenate([[0], np.cumsum(nd)[:-1]])
    PB = np.ascontiguousarray(pb[rstarts], dtype=np.int32)
    PA = np.ascontiguousarray(pa[np.repeat(starts - offd, nd) + np.arange(nd.sum())],
                              dtype=np.int32)
    b = _Blocks(starts.astype(np.int64), ns.astype(np.int64), nd.astype(np.int64),
                offs.astype(np.int64), offd.astype(np.int64), PA, PB, _NONE32, _NONE32)
    # numba's Dispatcher stub miscounts star-expanded arguments
    return b if _blocks_match(*b.layout, np.ascontiguousarray(pa),  # type: ignore[call-arg]
                              np.ascontiguousarray(pb)) else None


def kkt_alpha(margins: np.ndarray, gamma: float, hinge: bool) -> np.ndarray:
    """The KKT map ``alpha_t = -loss'(<M, H_t>)`` at the margins ``m``: the smoothed
    hinge gives ``clip((1 - m) / gamma, 0, 1)``, the hinge ``1`` where ``m < 1``."""
    u = 1.0 - np.asarray(margins, dtype=float)
    if hinge:
        return (u > 0).astype(float)
    return np.clip(u / gamma, 0.0, 1.0)


def _route(n_pairs: int, n: int, diagonal: bool) -> str:
    """The cheapest route of :class:`_Forms` for ``n_pairs`` pairs of ``n`` points."""
    return "pairs" if diagonal or n_pairs <= n else "gram"


class _Forms:
    """Per-pair quadratic forms and weighted sums over a set of pairs ``p = (i, j)``,
    ``F_p = x_i - x_j`` (or ``F_p = (x_i - x_j)^2`` elementwise for a diagonal metric).

    Full metrics take the cheaper of two routes (``mode``, :func:`_route`):

    * ``"pairs"``: ``q_p = F_p^T M F_p`` per pair, ``O(P d^2)``;
    * ``"gram"`` (more pairs than points): through the points, with
      ``Z = X (M + M^T)`` and ``c_i = x_i^T M x_i``, ``q_p = c_i + c_j - x_j^T z_i``, and
      ``sum_p w_p F_p F_p^T = X^T diag(deg) X - X^T Y - Y^T X``, the symmetric part
      of ``X^T (diag(deg) X - 2 Y)``, with ``deg_i = sum_{p ∋ i} w_p`` and
      ``Y_i = sum_{p = (i, j)} w_p x_j``: ``O(n d^2 + P d)``, one gathered row per pair
      and no stored differences, so a subset of pairs is two index arrays (not via the
      n x n Gram matrix ``X M X^T``: ``n^2`` memory).

    ``X`` is centred (differences are unchanged; the products lose no digits to a
    common offset); the Gram route reads only the rows of the points the pairs use.
    ``F`` is kept only for the ``"pairs"`` route (else None).
    """

    __slots__ = ("F", "Xc", "_gram", "diagonal", "like", "mode", "pi", "pj")

    def __init__(self, F, pi, pj, Xc, diagonal):
        self.pi, self.pj, self.Xc, self.diagonal = pi, pj, Xc, diagonal
        self._gram = None   # the Gram route's src, built at the first call of src
        self.mode = _route(pi.shape[0], Xc.shape[0], diagonal)
        self.F = F if self.mode == "pairs" else None
        d = Xc.shape[1]
        self.like = np.empty(d if diagonal else (d, d))  # the metric's shape

    @property
    def src(self) -> tuple:
        """What the compiled route reads: ``(F,)`` per pair; Gram ``(X, pi, pj)`` with
        the rows of the points the pairs use and the pairs' point ids local to them
        (built at the first call)."""
        if self.mode == "pairs":
            return (self.F,)
        if self._gram is None:
            self._gram = _point_rows(self.Xc, self.pi, self.pj)
        return self._gram

    def evaluate(self, M: np.ndarray, la: np.ndarray, lb: np.ndarray, blk: _Blocks,
                 gamma: float, hinge: bool, mout: np.ndarray, HL: np.ndarray,
                 lam: float) -> tuple:
        """The forms at ``M``, the loss pass over the triplets ``(la, lb)`` (local pair
        ids; in anchor blocks ``blk`` unless it is :data:`NO_BLOCKS`) and the weighted
        sum in one compiled call (:func:`.kernels._evaluate`: its arguments after ``M``
        and the same results)."""
        if not M.flags.c_contiguous:
            M = np.ascontiguousarray(M)
        return _evaluate(self.src, M, self.pi.shape[0], la, lb, blk, gamma, hinge, mout, HL,
                         lam)

    def quad(self, M: np.ndarray) -> np.ndarray:
        """``F_p^T M F_p`` (diagonal: ``F_p^T m``) for every pair, by the route."""
        return _forms(self.src, np.ascontiguousarray(M, dtype=float), self.pi.shape[0])

    def assemble(self, w: np.ndarray) -> np.ndarray:
        """``sum_p w_p F_p F_p^T`` (diagonal: ``F^T w``), by the route."""
        return _wsum(self.src, np.ascontiguousarray(w, dtype=float), self.like)


def _diff(q: np.ndarray, la: np.ndarray, lb: np.ndarray) -> np.ndarray:
    """``q[la] - q[lb]``."""
    out = np.empty(la.shape[0])
    _pair_diff(q, la, lb, out)
    return out


class _Data:
    """Triplets in pair form: pair ids, pair differences, ``||H_t||``."""

    def __init__(self, X: np.ndarray, T: np.ndarray, diagonal: bool) -> None:
        n, d = X.shape
        self.n, self.d, self.diagonal = n, d, diagonal
        self.T = T
        self.n_t = T.shape[0]
        i, j, l = T[:, 0], T[:, 1], T[:, 2]
        ka = np.minimum(i, l) * n + np.maximum(i, l)
        kb = np.minimum(i, j) * n + np.maximum(i, j)
        if n <= 3000:
            used = np.zeros(n * n, dtype=bool)
            used[ka] = True
            used[kb] = True
            keys = np.flatnonzero(used)
            ids = np.full(n * n, -1, dtype=np.int32)
            ids[keys] = np.arange(keys.size, dtype=np.int32)
            self.pa = ids[ka]
            self.pb = ids[kb]
        else:
            keys, inv = np.unique(np.concatenate([ka, kb]), return_inverse=True)
            self.pa = inv[: T.shape[0]].astype(np.int32)
            self.pb = inv[T.shape[0]:].astype(np.int32)
        del ka, kb
        self.n_pairs = keys.size
        self.pi = (keys // n).astype(np.int32)
        self.pj = (keys % n).astype(np.int32)
        self.Xc = np.ascontiguousarray(X - X.mean(axis=0))
        D = X[self.pi] - X[self.pj]
        with np.errstate(over="ignore", invalid="ignore"):
            self.sq = np.einsum("ij,ij->i", D, D)
        ab = np.empty(self.n_t)
        step = max(1, 4_000_000 // max(d, 1))
        for s in range(0, self.n_t, step):
            sl = slice(s, s + step)
            A = X[i[sl]] - X[l[sl]]
            B = X[i[sl]] - X[j[sl]]
            with np.errstate(over="ignore", invalid="ignore"):
                ab[sl] = np.einsum("ij,ij->i", A * A, B * B) if diagonal else \
                    np.einsum("ij,ij->i", A, B)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow: ValueError below
            hn2 = self._h_norms2(D, ab)
        if diagonal:
            with np.errstate(over="ignore"):
                self.F = D * D
            self.ab = None
        else:
            self.F = D
            self.ab = ab
        self.F = np.ascontiguousarray(self.F)
        with np.errstate(over="ignore", invalid="ignore"):
            self.hn = np.sqrt(np.maximum(hn2, 0.0))
        big = float(np.max(self.hn)) if self.hn.size else 0.0
        if not (np.isfinite(big) and big <= 1e150):
            raise ValueError(
                "X: the triplet matrices H_t = a a^T - b b^T have norms "
                + (f"up to {big:.3g}" if np.isfinite(big) else "that overflow")
                + f" (squared pair distances up to {float(np.max(self.sq)):.3g}), beyond what "
                "the solver can square and invert without overflow; rescale X (e.g. "
                "standardise its columns)")
        self.forms = _Forms(self.F, self.pi, self.pj, self.Xc, diagonal)
        self.shape = (d,) if diagonal else (d, d)
        self._all: _Sub | None = None
        self._all_sorted: _Sub | None = None
        #: The anchor blocks of the loss pass over all triplets and of path screening;
        #: None when the triplets are not stored so or their rows average under
        #: :data:`BLOCK_ROW`. Found with the problem so that no solve pays for it.
        b = _anchor_blocks(T, self.pa, self.pb)
        self.blocks = b if (b is not None and self.n_t >= BLOCK_ROW * b.PB.size) else None

    def _h_norms2(self, D: np.ndarray, ab: np.ndarray) -> np.ndarray:
        """``||H_t||_F^2 = ||a||^4 + ||b||^4 - 2 (a^T b)^2`` (diagonal: of the diagonal)."""
        if self.diagonal:
            S = D * D
            f2 = np.einsum("ij,ij->i", S, S)
            return f2[self.pa] + f2[self.pb] - 2.0 * ab
        sa, sb = self.sq[self.pa], self.sq[self.pb]
        return sa * sa + sb * sb - 2.0 * ab * ab

    # geometry -------------------------------------------------------------
    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape)

    @cached_property
    def no_status(self) -> np.ndarray:
        """Every triplet's screening status 0, read-only (a solve's start, shared)."""
        z = np.zeros(self.n_t, dtype=np.int8)
        z.flags.writeable = False
        return z

    def assemble(self, w: np.ndarray) -> np.ndarray:
        """``sum_p w_p F_p F_p^T`` over all pairs."""
        return self.forms.assemble(w)

    def quad(self, M: np.ndarray) -> np.ndarray:
        """``F_p^T M F_p`` for all pairs."""
        return self.forms.quad(M)

    def margins(self, M: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        q = self.forms.quad(M)
        if idx is None:
            return _diff(q, self.pa, self.pb)
        return _diff(q, self.pa[idx], self.pb[idx])

    def compact(self, idx: np.ndarray) -> _Sub:
        """Pairs used by the triplets ``idx`` with local pair ids."""
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        pairs, la, lb = _compact_pairs(self.pa[idx], self.pb[idx], self.n_pairs)
        return _Sub(idx, pairs, la, lb, self.hn[idx], self._forms_of(pairs))

    def work_of(self, sub: _Sub, keep: np.ndarray, wst: np.ndarray,
                prev: _Sub | None = None) -> _Sub:
        """The active set's working set: the triplets of ``sub`` where ``keep`` (boolean,
        in ``sub``'s order), the arrays :meth:`compact` would give, built from ``sub``'s
        own arrays (:func:`.kernels._work_set`: no gathers from all triplets, no mark
        array over all pairs). ``wst`` (``sub``'s statuses, in its order) is set to 0
        where kept, 3 elsewhere. ``prev``: the working set last built from ``sub`` with
        these statuses, returned as is when no triplet entered or left it."""
        keep = np.ascontiguousarray(keep, dtype=np.bool_)
        changed, idx, la, lb, hn, used = _work_set(keep, sub.idx, sub.la, sub.lb, sub.hn,
                                                   sub.pairs.size, wst)
        if changed == 0 and prev is not None:
            return prev
        pairs = sub.pairs[used]
        return _Sub(idx, pairs, la, lb, hn, self._forms_of(pairs))

    def restrict(self, sub: _Sub, idx: np.ndarray, la: np.ndarray, lb: np.ndarray,
                 hn: np.ndarray, compaction: float = DEFAULT.pair_compaction) -> _Sub:
        """The triplets ``idx`` (pair ids ``la``, ``lb`` local to ``sub``, norms ``hn``)
        as a subset of ``sub``: its pairs, compacted to those still in use when fewer
        than ``compaction`` (:attr:`.Tuning.pair_compaction`) of them are."""
        used, nla, nlb = _compact_pairs(la, lb, sub.pairs.size)
        return self.in_use(sub, idx, la, lb, hn, used, nla, nlb, compaction)

    def in_use(self, sub: _Sub, idx: np.ndarray, la: np.ndarray, lb: np.ndarray,
               hn: np.ndarray, used: np.ndarray, nla: np.ndarray, nlb: np.ndarray,
               compaction: float = DEFAULT.pair_compaction) -> _Sub:
        """The triplets ``idx`` of ``sub`` (pair ids ``la``, ``lb`` local to ``sub``, or
        ``nla``, ``nlb`` local to ``used``, the pairs of ``sub`` in use in increasing
        order, as :func:`.kernels._compact_pairs` gives them): on ``sub``'s pairs, or on
        those in use when fewer than ``compaction`` (:attr:`.Tuning.pair_compaction`) of
        them are."""
        if used.size >= compaction * sub.pairs.size:
            return _Sub(idx, sub.pairs, la, lb, hn, sub.forms)
        gp = sub.pairs[used]
        return _Sub(idx, gp, nla, nlb, hn, self._forms_of(gp))

    def _forms_of(self, pairs: np.ndarray) -> _Forms:
        """:class:`_Forms` of a subset of the pairs (their differences gathered only for
        the per-pair route)."""
        F = self.F[pairs] if _route(pairs.size, self.n, self.diagonal) == "pairs" else None
        return _Forms(F, self.pi[pairs], self.pj[pairs], self.Xc, self.diagonal)

    @property
    def everything(self) -> _Sub:
        """All triplets as a subset (cached)."""
        if self._all is None:
            self._all = _Sub(np.arange(self.n_t), np.arange(self.n_pairs), self.pa, self.pb,
                             self.hn, self.forms,
                             NO_BLOCKS if self.blocks is None else self.blocks)
        return self._all

    def all_triplets(self, evaluation: str) -> _Sub:
        """All triplets as a subset whose loss pass is ``evaluation``'s: ``"triplets"``
        one visit per triplet (:attr:`everything`), ``"sorted"`` the sorted pass over the
        anchor blocks (:func:`.kernels._sorted_loss_pass`) with sort orders kept on this
        problem between solves; without anchor blocks, :attr:`everything`. Threads
        sharing a problem cannot interleave updates of the orders because the compiled
        kernels hold the GIL (a ``nogil`` kernel would need per-solve orders). Results
        never depend on the starting orders."""
        if evaluation != "sorted" or self.blocks is None:
            return self.everything
        if self._all_sorted is None:
            self._all_sorted = replace(self.everything, blocks=self.blocks.sorted())
        return self._all_sorted


@dataclass
class _Sub:
    """A subset of triplets (global indices ``idx``) with its own compacted pairs."""

    idx: np.ndarray
    pairs: np.ndarray
    la: np.ndarray
    lb: np.ndarray
    hn: np.ndarray
    forms: _Forms
    blocks: _Blocks = NO_BLOCKS   # all triplets in anchor blocks: the loss pass by blocks

    def pass_visits(self, tuning: Tuning) -> float:
        """Cost of a loss pass over these triplets in visits of the pair-id pass: one a
        triplet by pair ids; in anchor blocks ``tuning.block_pass_triplet`` a triplet and
        ``tuning.block_pass_row`` a row; the sorted pass ``tuning.sorted_pass_element`` a
        row and column of its blocks (its middle run's triplets, unknown beforehand, are
        not counted)."""
        b = self.blocks
        if b.CO.size:
            return tuning.sorted_pass_element * (b.PA.size + b.PB.size)
        if b.nd.size:
            return tuning.block_pass_triplet * self.idx.size + tuning.block_pass_row * b.PB.size
        return float(self.idx.size)

    def quad(self, M: np.ndarray) -> np.ndarray:
        return self.forms.quad(M)

    def assemble(self, w: np.ndarray) -> np.ndarray:
        return self.forms.assemble(w)

    def pair_weights(self, v: np.ndarray) -> np.ndarray:
        """The per-pair weights of ``sum_t v_t H_t`` over these triplets (``v`` in their
        order): ``sum_t v_t H_t = assemble(pair_weights(v))``."""
        return _triplet_weights(np.ascontiguousarray(v, dtype=float), self.la, self.lb,
                                self.blocks, np.empty(self.pairs.size))


@dataclass
class _Eval:
    P: float             # reduced primal P~(M)
    loss: float          # loss over the evaluated triplets
    G: np.ndarray        # gradient of P~ at M
    A: np.ndarray        # H_L + sum alpha H (= lam M - G)
    asum: float          # sum alpha (L-hat included)
    a2: float            # sum alpha^2 (L-hat included)
    margins: np.ndarray | None = None
