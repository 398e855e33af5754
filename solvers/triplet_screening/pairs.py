"""Triplets in pair form: per-pair quadratic forms, weighted sums, compaction to subsets."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels import (
    _assemble_diag,
    _assemble_full,
    _compact_pairs,
    _pair_diff,
    _quad_diag,
    _quad_full,
)

# ---------------------------------------------------------------------------
# The pair formulation
# ---------------------------------------------------------------------------


def kkt_alpha(margins: np.ndarray, gamma: float, hinge: bool) -> np.ndarray:
    """The KKT map ``alpha_t = -loss'(<M, H_t>)``, written once: the smoothed hinge
    gives ``clip((1 - m) / gamma, 0, 1)``, the hinge ``1`` where ``m < 1``."""
    u = 1.0 - np.asarray(margins, dtype=float)
    if hinge:
        return (u > 0).astype(float)
    return np.clip(u / gamma, 0.0, 1.0)


def _quad(F: np.ndarray, M: np.ndarray) -> np.ndarray:
    """Per-pair quadratic forms ``F_p^T M F_p`` (or ``F_p^T m`` for a diagonal metric)."""
    out = np.empty(F.shape[0])
    if M.ndim == 1:
        _quad_diag(F, np.ascontiguousarray(M, dtype=float), out)
    else:
        _quad_full(F, np.ascontiguousarray(M, dtype=float), out)
    return out


def _assemble(F: np.ndarray, w: np.ndarray, diagonal: bool) -> np.ndarray:
    """``sum_p w_p F_p F_p^T`` (or ``F^T w`` for a diagonal metric)."""
    w = np.ascontiguousarray(w, dtype=float)
    if diagonal:
        a = np.empty(F.shape[1])
        _assemble_diag(F, w, a)
        return a
    A = np.empty((F.shape[1], F.shape[1]))
    _assemble_full(F, w, A)
    return A


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
        D = X[keys // n] - X[keys % n]
        self.sq = np.einsum("ij,ij->i", D, D)
        ab = np.empty(self.n_t)
        step = max(1, 4_000_000 // max(d, 1))
        for s in range(0, self.n_t, step):
            sl = slice(s, s + step)
            A = X[i[sl]] - X[l[sl]]
            B = X[i[sl]] - X[j[sl]]
            ab[sl] = np.einsum("ij,ij->i", A * A, B * B) if diagonal else \
                np.einsum("ij,ij->i", A, B)
        if diagonal:
            self.F = D * D
            f2 = np.einsum("ij,ij->i", self.F, self.F)
            hn2 = f2[self.pa] + f2[self.pb] - 2.0 * ab
            self.ab = None
        else:
            self.F = D
            sa, sb = self.sq[self.pa], self.sq[self.pb]
            hn2 = sa * sa + sb * sb - 2.0 * ab * ab
            self.ab = ab
        self.F = np.ascontiguousarray(self.F)
        self.hn = np.sqrt(np.maximum(hn2, 0.0))
        self.shape = (d,) if diagonal else (d, d)
        self._all: _Sub | None = None

    # geometry -------------------------------------------------------------
    def zeros(self) -> np.ndarray:
        return np.zeros(self.shape)

    def assemble(self, F: np.ndarray, w: np.ndarray) -> np.ndarray:
        return _assemble(F, w, self.diagonal)

    def margins(self, M: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        q = _quad(self.F, M)
        if idx is None:
            return _diff(q, self.pa, self.pb)
        return _diff(q, self.pa[idx], self.pb[idx])

    def compact(self, idx: np.ndarray) -> _Sub:
        """Pairs used by the triplets ``idx`` with local pair ids."""
        idx = np.ascontiguousarray(idx, dtype=np.int64)
        pairs, la, lb = _compact_pairs(self.pa, self.pb, idx, self.n_pairs)
        return _Sub(idx, pairs, la, lb, self.F[pairs], self.hn[idx])

    @property
    def everything(self) -> _Sub:
        """All triplets as a subset (cached)."""
        if self._all is None:
            self._all = _Sub(np.arange(self.n_t), np.arange(self.n_pairs), self.pa, self.pb,
                             self.F, self.hn)
        return self._all


@dataclass
class _Sub:
    idx: np.ndarray
    pairs: np.ndarray
    la: np.ndarray
    lb: np.ndarray
    F: np.ndarray
    hn: np.ndarray


@dataclass
class _Eval:
    P: float             # reduced primal P~(M)
    loss: float          # loss over the evaluated triplets
    G: np.ndarray        # gradient of P~ at M
    A: np.ndarray        # H_L + sum alpha H (= lam M - G)
    asum: float          # sum alpha (L-hat included)
    a2: float            # sum alpha^2 (L-hat included)
    margins: np.ndarray | None = None
