r"""Safe triplet screening for distance metric learning (RTLM).

Yoshida, Takeuchi & Karasuyama, *Safe triplet screening for distance metric
learning* (sections 2-5 and appendices). Triplets ``t = (i, j, l)`` with
``y_i = y_j``, ``i != j``, ``y_l != y_i``;
``H_t = a a^T - b b^T`` with ``a = x_i - x_l``, ``b = x_i - x_j``. Primal::

    min_{M PSD}  P_lam(M) = sum_t loss(<M, H_t>) + lam/2 ||M||_F^2

with the hinge ``max(0, 1 - x)`` or the smoothed hinge (``gamma > 0``): 0 for
``x > 1``, ``(1 - x)^2 / (2 gamma)`` on ``[1 - gamma, 1]``, ``1 - x - gamma/2``
below. Dual (Appendix A), ``0 <= alpha <= 1``::

    D_lam(alpha) = -gamma/2 ||alpha||^2 + 1^T alpha - 1/(2 lam) ||[sum_t alpha_t H_t]_+||_F^2,

``M_lam(alpha) = [sum alpha H]_+ / lam``; KKT: ``alpha_t = -loss'(<M*, H_t>)``.
``diagonal=True`` restricts ``M`` to a nonnegative diagonal (stored as a vector).

``H_t`` is never formed: ``<M, H_t> = a^T M a - b^T M b`` comes from per-pair
quadratic forms of the distinct pairs (far fewer than triplets) and
``sum_t w_t H_t = Delta^T diag(w_pairs) Delta`` over pairs;
``||H_t||_F^2 = ||a||^4 + ||b||^4 - 2 (a^T b)^2``.

Optimiser (section 5): projected gradient on the primal with the
Barzilai-Borwein step ``1/2 |<dM, dG>/<dG, dG> + <dM, dM>/<dM, dG>|``
(``method="pgd"``; a non-monotone Grippo-Lampariello-Lucidi safeguard halves
it when the objective exceeds the last 10 values), PSD projection every step,
dual point by the KKT map, stop on the relative duality gap. The hinge loss
is non-smooth, so primal projected (sub)gradient cannot reach small gaps;
``method="dual"`` (the default for the hinge) runs accelerated projected
gradient on the dual (``solvers.apg``), whose primal ``M_lam(alpha)`` is
PSD by construction.

Safe screening (section 3): spheres GB, PGB, DGB, CDGB, RPB (theoretical
comparison only), RRPB; rules sphere (Eq. 4), linear relaxation (Thm 3.1),
PSD-constrained via the SDLS dual (section 3.1.2; Appendix B for diagonal
``M``). Screened triplets leave the problem: R-hat is dropped, L-hat is fixed
on the linear part and folded into one running matrix ``H_L``:

    P~(M) = sum_{t active} loss(<M, H_t>) + lam/2 ||M||^2 + (1 - gamma/2)|L-hat| - <M, H_L>.

Screening runs at iteration 0 (regularisation-path screening, RRPB from the
previous lambda's solution) and every 10 iterations (dynamic screening).

Certificate. ``P~ <= P`` everywhere and ``P~ = P`` whenever every screened
triplet is in its region; that is the case when ``M`` lies in every sphere
that screened something (checked each iteration, ``O(d^2)`` per sphere), and
otherwise ``P(M) - P~(M)`` is evaluated over the screened triplets. So the
reported ``primal`` is always the full objective ``P(M)``, ``dual`` is the
full dual at a feasible ``alpha`` (1 on L-hat, 0 on R-hat) and
``gap = primal - dual`` is a true bound on ``P(M) - P*``, with
``||M - M*||_F <= sqrt(2 gap / lam)`` (``result.radius``). With
``active_set=True`` (the Weinberger et al. baseline: only triplets with positive
loss, refreshed every 10 iterations) the certificate needs all margins, so it
is computed, recorded and checked at the refreshes only.

Performance notes: the per-pair forms and scatter-adds are compiled loops
(``solvers/_triplet_kernels.py``); BLAS/LAPACK is limited to one thread during
a solve (``threadpoolctl`` if installed), since every dense operation is on a
``d x d`` matrix. ``result.triplet_visits`` counts the triplets touched by loss
passes and rules, the machine-independent part of the cost screening removes.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from . import _triplet_spheres as sph
from ._blas import single_threaded_blas
from ._triplet_kernels import (
    _apply_codes,
    _assemble_diag,
    _assemble_full,
    _compact_pairs,
    _extra_screened,
    _loss_only,
    _loss_pass,
    _pair_counts,
    _pair_diff,
    _quad_diag,
    _quad_full,
    _range_screen,
    _sphere_rule,
)
from ._triplet_spheres import (
    Sphere,
    cdgb_sphere,
    dgb_sphere,
    gb_sphere,
    linear_bounds,
    pgb_sphere,
    rpb_sphere,
    rrpb_ranges,
    rrpb_sphere,
    sdls_dual_value,
    sphere_bounds,
)
from .apg import APG
from .base import IncompatibleWarmStart, Monitor, NumericalError, Result, _frozen_array
from .validation import (
    check_bool,
    check_callback,
    check_choice,
    check_int,
    check_matrix,
    check_scalar,
    check_tol_max_iter,
)

__all__ = [
    "LOSSES",
    "METHODS",
    "RULES",
    "SPHERES",
    "PathResult",
    "Sphere",
    "TripletProblem",
    "TripletResult",
    "cdgb_sphere",
    "dgb_sphere",
    "dual_objective",
    "gb_sphere",
    "lambda_max",
    "linear_bounds",
    "path",
    "pgb_sphere",
    "primal_objective",
    "rpb_sphere",
    "rrpb_ranges",
    "rrpb_sphere",
    "sdls_dual_value",
    "solve",
    "sphere_bounds",
    "triplets",
]

LOSSES = ("smoothed_hinge", "hinge")
SPHERES = ("gb", "pgb", "dgb", "cdgb", "rpb", "rrpb")
RULES = ("sphere", "linear", "sdls")
METHODS = ("auto", "pgd", "dual")
#: Dynamic screening and active-set refresh period (iterations), as in the paper.
SCREEN_EVERY = 10
#: Refuse to build more triplets than this (memory: ~40 bytes per triplet).
MAX_TRIPLETS = 30_000_000
#: Padding of the gap in sphere radii against rounding in P and D.
_GAP_PAD = 1e-11
_GLL_MEMORY = 10


# ---------------------------------------------------------------------------
# Validation and triplets
# ---------------------------------------------------------------------------


def _check_xy(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    X = check_matrix(X, "X")
    y_arr = np.asarray(y)
    if y_arr.ndim != 1 or y_arr.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must be a 1-D array of {X.shape[0]} labels (one per row of X), "
            f"got shape {y_arr.shape}")
    if y_arr.dtype.kind == "f" and not np.all(np.isfinite(y_arr)):
        raise ValueError("y contains NaN or infinite labels")
    if y_arr.dtype == object:
        raise TypeError("y must contain class labels (numbers or strings), got objects")
    _, codes = np.unique(y_arr, return_inverse=True)
    codes = codes.astype(np.int64).ravel()
    counts = np.bincount(codes)
    if counts.size < 2:
        raise ValueError("y must contain at least two classes, found a single class")
    if counts.max() < 2:
        raise ValueError("y needs a class with at least two samples to form a triplet")
    return X, codes


def _check_k(k: Any) -> float:
    if k is None:
        return math.inf
    if isinstance(k, (float, np.floating)) and math.isinf(k) and k > 0:
        return math.inf
    if isinstance(k, (float, np.floating)) and float(k).is_integer():
        k = int(k)
    k = check_int(k, "k", low=1)
    return float(k)


def _n_triplets(codes: np.ndarray, k: float) -> int:
    counts = np.bincount(codes)
    n = codes.size
    same = np.minimum(counts[codes] - 1, k)
    other = np.minimum(n - counts[codes], k)
    return int(np.sum(same * other))


def triplets(X: Any, y: Any, k: float = 10) -> np.ndarray:
    """Triplets ``(i, j, l)`` of section 5: k nearest same-class ``j``, k nearest other-class ``l``.

    For every ``i``: its ``k`` nearest neighbours ``j != i`` in its class and its
    ``k`` nearest points ``l`` of the other classes (Euclidean; ties broken by
    index), and every combination. ``k = inf`` (or ``None``) takes all of them.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Class labels (at least two classes).
    k : int >= 1 or inf

    Returns
    -------
    ndarray of int64, shape (n_t, 3)
        Rows ``(i, j, l)`` sorted by ``i``, then neighbour rank of ``j``, then of ``l``.
    """
    X, codes = _check_xy(X, y)
    return _build_triplets(X, codes, _check_k(k))


def _build_triplets(X: np.ndarray, codes: np.ndarray, k: float) -> np.ndarray:
    n_t = _n_triplets(codes, k)
    if n_t == 0:
        raise ValueError("no triplets: every class needs two samples and another class")
    if n_t > MAX_TRIPLETS:
        raise ValueError(f"k={k:g} gives {n_t:,} triplets (limit {MAX_TRIPLETS:,}); "
                         "choose a smaller k or fewer samples")
    n = X.shape[0]
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty((n_t, 3), dtype=np.int64)
    pos = 0
    idx = np.arange(n)
    for i in range(n):
        same = idx[(codes == codes[i]) & (idx != i)]
        other = idx[codes != codes[i]]
        if same.size == 0 or other.size == 0:
            continue
        if math.isfinite(k):
            d2 = sq + sq[i] - 2.0 * (X @ X[i])
            if same.size > k:
                same = same[np.argsort(d2[same], kind="stable")[: int(k)]]
            else:
                same = same[np.argsort(d2[same], kind="stable")]
            if other.size > k:
                other = other[np.argsort(d2[other], kind="stable")[: int(k)]]
            else:
                other = other[np.argsort(d2[other], kind="stable")]
        m = same.size * other.size
        out[pos:pos + m, 0] = i
        out[pos:pos + m, 1] = np.repeat(same, other.size)
        out[pos:pos + m, 2] = np.tile(other, same.size)
        pos += m
    return out


def _check_triplets(T: Any, codes: np.ndarray) -> np.ndarray:
    arr = np.asarray(T)
    if arr.ndim != 2 or arr.shape[1] != 3 or arr.shape[0] == 0:
        raise ValueError(f"triplets must be a non-empty (n_t, 3) integer array, got shape "
                         f"{arr.shape}")
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"triplets must contain integer indices, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    n = codes.size
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"triplets must index rows of X (0..{n - 1})")
    i, j, l = arr[:, 0], arr[:, 1], arr[:, 2]
    if np.any(i == j):
        raise ValueError("triplets must have i != j")
    if np.any(codes[i] != codes[j]):
        raise ValueError("triplets must have y[i] == y[j]")
    if np.any(codes[i] == codes[l]):
        raise ValueError("triplets must have y[l] != y[i]")
    return arr


def _check_loss(loss: Any, gamma: Any) -> tuple[str, float, bool]:
    loss = check_choice(loss, "loss", LOSSES)
    gamma = check_scalar(gamma, "gamma", low=0.0, low_inclusive=True)
    if loss == "smoothed_hinge" and gamma <= 0.0:
        raise ValueError("gamma must be > 0 for the smoothed hinge (use loss='hinge' for 0)")
    if loss == "hinge":
        gamma = 0.0
    return loss, gamma, loss == "hinge"


def _check_screening(screening: Any, *, allow_rpb: bool = False) -> tuple[str, ...]:
    if screening is None or screening is False:
        return ()
    if isinstance(screening, str):
        screening = tuple(s for s in screening.replace("+", ",").split(",") if s.strip())
        screening = tuple(s.strip().lower() for s in screening)
        if screening in (("none",), ()):
            return ()
    try:
        kinds = tuple(screening)
    except TypeError as exc:
        raise TypeError("screening must be None, a sphere name or a sequence of sphere names"
                        ) from exc
    for s in kinds:
        check_choice(s, "screening", SPHERES)
    if "rpb" in kinds and not allow_rpb:
        raise ValueError("screening='rpb' needs the exact optimum at the previous lambda, "
                         "which no solver has; use 'rrpb' (or path(..., compare=...) for "
                         "RPB's screening rate as a theoretical comparison)")
    return tuple(dict.fromkeys(kinds))


# ---------------------------------------------------------------------------
# The pair formulation
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# The problem object (public: objectives, spheres, rules on a fixed triplet set)
# ---------------------------------------------------------------------------


class TripletProblem:
    r"""An RTLM instance in pair form: objectives, gradients, spheres and rules.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
    triplets : array_like of int, shape (n_t, 3), optional
        Explicit triplets ``(i, j, l)``; default :func:`triplets` ``(X, y, k)``.
    k : int or inf
        Neighbourhood size when ``triplets`` is not given.
    loss : {"smoothed_hinge", "hinge"}
    gamma : float
        Smoothing of the smoothed hinge (> 0; ignored by the hinge).
    diagonal : bool
        Diagonal metric (``M`` is a nonnegative vector of length ``d``).
    """

    def __init__(self, X: Any, y: Any, *, triplets: Any = None, k: float = 10,
                 loss: str = "smoothed_hinge", gamma: float = 0.05,
                 diagonal: bool = False) -> None:
        X, codes = _check_xy(X, y)
        self.loss, self.gamma, self.hinge = _check_loss(loss, gamma)
        self.diagonal = check_bool(diagonal, "diagonal")
        if triplets is None:
            self.k = _check_k(k)
            T = _build_triplets(X, codes, self.k)
        else:
            self.k = None
            T = _check_triplets(triplets, codes)
        self.X = X
        self.codes = codes
        self.data = _Data(X, T, self.diagonal)
        self.n_triplets = self.data.n_t
        self._fingerprint = None

    # basic quantities -----------------------------------------------------
    @property
    def triplets(self) -> np.ndarray:
        return self.data.T

    @property
    def h_norms(self) -> np.ndarray:
        """``||H_t||_F`` for every triplet (2-norm of the diagonal for diagonal metrics)."""
        return self.data.hn

    def fingerprint(self) -> tuple[int, int, int, bool]:
        if self._fingerprint is None:
            T = self.data.T
            s = int((T[:, 0] * 3 + T[:, 1] * 7 + T[:, 2] * 11).sum() % (2**61 - 1))
            self._fingerprint = (self.data.n_t, self.data.d, s, self.diagonal)
        return self._fingerprint

    def check_metric(self, M: Any, name: str = "M") -> np.ndarray:
        M = np.asarray(M, dtype=float)
        if self.diagonal and M.ndim == 2 and M.shape == (self.data.d, self.data.d):
            M = np.diag(M).copy()
        if M.shape != self.data.shape:
            raise ValueError(f"{name} must have shape {self.data.shape}, got {M.shape}")
        if not np.all(np.isfinite(M)):
            raise ValueError(f"{name} contains NaN or infinite values")
        return M

    def margins(self, M: Any) -> np.ndarray:
        """``<M, H_t>`` for every triplet."""
        return self.data.margins(self.check_metric(M))

    def loss_values(self, margins: np.ndarray) -> np.ndarray:
        u = 1.0 - np.asarray(margins, dtype=float)
        if self.hinge:
            return np.maximum(u, 0.0)
        g = self.gamma
        return np.where(u <= 0, 0.0, np.where(u >= g, u - 0.5 * g,
                                             0.5 * np.square(np.maximum(u, 0.0)) / g))

    def kkt_alpha(self, M: Any) -> np.ndarray:
        """``alpha_t = -loss'(<M, H_t>)`` (hinge: 1 where the margin is below 1)."""
        u = 1.0 - self.margins(M)
        if self.hinge:
            return (u > 0).astype(float)
        return np.clip(u / self.gamma, 0.0, 1.0)

    def primal(self, M: Any, lam: float) -> float:
        """``P_lam(M) = sum_t loss(<M, H_t>) + lam/2 ||M||_F^2``."""
        M = self.check_metric(M)
        lam = check_scalar(lam, "lam", low=0.0)
        q = _quad(self.data.F, M)
        loss = _loss_only(q, self.data.pa, self.data.pb, self.gamma, self.hinge)
        return float(loss + 0.5 * lam * np.vdot(M, M))

    def weighted_sum(self, w: Any) -> np.ndarray:
        """``sum_t w_t H_t`` (a ``(d, d)`` matrix, or its diagonal)."""
        w = np.asarray(w, dtype=float)
        if w.shape != (self.n_triplets,):
            raise ValueError(f"weights must have shape ({self.n_triplets},), got {w.shape}")
        P = self.data.n_pairs
        wp = np.bincount(self.data.pa, w, P) - np.bincount(self.data.pb, w, P)
        return self.data.assemble(self.data.F, wp)

    def gradient(self, M: Any, lam: float) -> np.ndarray:
        """``grad P_lam(M) = lam M - sum_t alpha_t H_t`` with the KKT map ``alpha``."""
        M = self.check_metric(M)
        return lam * M - self.weighted_sum(self.kkt_alpha(M))

    def dual(self, alpha: Any, lam: float) -> float:
        """``D_lam(alpha)``; raises if ``alpha`` is outside ``[0, 1]``."""
        alpha = np.asarray(alpha, dtype=float)
        lam = check_scalar(lam, "lam", low=0.0)
        if alpha.shape != (self.n_triplets,):
            raise ValueError(f"alpha must have shape ({self.n_triplets},), got {alpha.shape}")
        if np.any(alpha < 0) or np.any(alpha > 1) or not np.all(np.isfinite(alpha)):
            raise ValueError("alpha must lie in [0, 1]")
        Ap, _ = sph.proj_pm(self.weighted_sum(alpha))
        return float(-0.5 * self.gamma * np.vdot(alpha, alpha) + alpha.sum()
                     - np.vdot(Ap, Ap) / (2.0 * lam))

    def metric_from_dual(self, alpha: Any, lam: float) -> np.ndarray:
        """``M_lam(alpha) = [sum alpha H]_+ / lam``."""
        Ap, _ = sph.proj_pm(self.weighted_sum(np.asarray(alpha, dtype=float)))
        return Ap / lam

    def lambda_max(self) -> float:
        """``max_t <[sum_T H]_+, H_t> / (1 - gamma)``: above it every triplet is in L*."""
        c = 1.0 - self.gamma
        if c <= 0:
            raise ValueError("lambda_max needs gamma < 1 (the L* region is x < 1 - gamma)")
        Sp, _ = sph.proj_pm(self.weighted_sum(np.ones(self.n_triplets)))
        mx = float(np.max(self.data.margins(Sp)))
        if not mx > 0:
            # [sum H]_+ = 0: M* = 0 (every triplet in L*) for every lambda
            return 0.0
        return mx / c

    def solution_above_lambda_max(self, lam: float) -> np.ndarray:
        """The exact optimum ``[sum_T H]_+ / lam`` for ``lam >= lambda_max``."""
        Sp, _ = sph.proj_pm(self.weighted_sum(np.ones(self.n_triplets)))
        return Sp / lam

    # spheres and rules -------------------------------------------------------
    def spheres(self, M: Any, lam: float, *, kinds: Sequence[str] = SPHERES,
                ref: tuple[np.ndarray, float, float] | None = None) -> dict[str, Sphere]:
        """The spheres of section 3.2 at a feasible reference ``M`` for ``lam``.

        ``ref = (M0, lam0, eps)`` is the reference of RPB (``M0`` taken as the exact
        optimum at ``lam0``) and RRPB (``||M0 - M0*|| <= eps``); without it RRPB is
        taken with ``lam0 = lam`` and ``eps`` from the duality gap (then it equals DGB).
        """
        M = self.check_metric(M)
        lam = check_scalar(lam, "lam", low=0.0)
        alpha = self.kkt_alpha(M)
        A = self.weighted_sum(alpha)
        G = lam * M - A
        Ap, _ = sph.proj_pm(A)
        P = self.primal(M, lam)
        D = float(-0.5 * self.gamma * np.vdot(alpha, alpha) + alpha.sum()
                  - np.vdot(Ap, Ap) / (2.0 * lam))
        gap = max(P - D, 0.0)
        out: dict[str, Sphere] = {}
        for kind in kinds:
            check_choice(kind, "kinds", SPHERES)
            if kind == "gb":
                out[kind] = gb_sphere(M, G, lam)
            elif kind == "pgb":
                out[kind] = pgb_sphere(M, G, lam)
            elif kind == "dgb":
                out[kind] = dgb_sphere(M, gap, lam)
            elif kind == "cdgb":
                Ma = Ap / lam
                out[kind] = cdgb_sphere(Ma, self.primal(Ma, lam) - D, lam)
            elif kind == "rpb":
                if ref is None:
                    raise ValueError("rpb needs ref=(M0, lam0, eps)")
                out[kind] = rpb_sphere(self.check_metric(ref[0], "ref M0"), ref[1], lam)
            elif kind == "rrpb":
                if ref is None:
                    out[kind] = rrpb_sphere(M, lam, lam, math.sqrt(2.0 * gap / lam))
                else:
                    out[kind] = rrpb_sphere(self.check_metric(ref[0], "ref M0"), ref[1], lam,
                                            ref[2])
        return out

    def bounds(self, sphere: Sphere, rule: str = "sphere", *,
               halfspace: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Lower/upper bounds of ``<X, H_t>`` over the rule's region, for every triplet.

        ``rule="sphere"``: the ball (Eq. 4). ``"linear"``: the ball cut by
        ``<P, X> >= 0`` (Theorem 3.1) with ``P = halfspace`` or the sphere's own.
        ``"sdls"`` with a diagonal metric: ball intersected with the orthant
        (Appendix B, exact). For full matrices the SDLS rule only certifies
        (see :meth:`screen`), it gives no bounds.
        """
        rule = check_choice(rule, "rule", RULES)
        q = _quad(self.data.F, sphere.center)
        hq = _diff(q, self.data.pa, self.data.pb)
        hn = self.data.hn
        r = sphere.radius
        if rule == "sphere":
            return sphere_bounds(hq, hn, r)
        if rule == "linear":
            P = halfspace if halfspace is not None else sphere.halfspace
            if P is None:
                return sphere_bounds(hq, hn, r)
            qp = _quad(self.data.F, P)
            hp = _diff(qp, self.data.pa, self.data.pb)
            return linear_bounds(hq, hn, hp, r, float(np.vdot(P, P)),
                                 float(np.vdot(P, sphere.center)),
                                 _halfspace_delta(P, sphere.center, r))
        if not self.diagonal:
            raise ValueError("bounds(rule='sdls') exists for diagonal metrics only; use screen()")
        return sph.orthant_bounds(self.data.F, self.data.pa, self.data.pb, sphere.center,
                                  r * r)

    def screen(self, sphere: Sphere, rule: str = "sphere", *,
               halfspace: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Boolean masks ``(in L-hat, in R-hat)`` of the rule over ``sphere`` (all triplets)."""
        rule = check_choice(rule, "rule", RULES)
        sub = self.data.everything
        return _rule_masks(self.data, sub, sphere, rule, self.gamma,
                           halfspace if halfspace is not None else sphere.halfspace)

    def ranges(self, M0: Any, lam0: float, eps: float) -> dict[str, tuple[np.ndarray,
                                                                          np.ndarray]]:
        """Range-based extension (Theorem 4.1) of the RRPB sphere rule from ``(M0, lam0, eps)``."""
        M0 = self.check_metric(M0, "M0")
        return rrpb_ranges(self.data.margins(M0), self.data.hn, sph.fnorm(M0), lam0, eps,
                           self.gamma)

    def range_rate_matrix(self, Ms: Sequence[np.ndarray], lambdas: Sequence[float],
                          eps: Sequence[float], grid: Sequence[float] | None = None
                          ) -> np.ndarray:
        """Figure 6: fraction of triplets the RRPB range from reference ``s`` screens at
        each ``lam`` of ``grid`` (rows: grid, columns: references)."""
        grid = np.asarray(lambdas if grid is None else grid, dtype=float)
        out = np.zeros((grid.size, len(Ms)))
        for s, (M0, l0, e0) in enumerate(zip(Ms, lambdas, eps, strict=True)):
            rng = self.ranges(M0, l0, e0)
            for key in ("L_below", "R_below", "L_above", "R_above"):
                st, en = rng[key]
                ok = st < en
                st, en = np.sort(st[ok]), np.sort(en[ok])
                if key.endswith("below"):
                    # (st, l0]: count st < lam for grid lam <= l0
                    cnt = np.searchsorted(st, grid, side="left")
                    out[:, s] += np.where(grid <= l0, cnt, 0)
                else:
                    # [l0, en): count en > lam for grid lam > l0 (lam == l0 counted below)
                    cnt = en.size - np.searchsorted(en, grid, side="right")
                    out[:, s] += np.where(grid > l0, cnt, 0)
        return out / self.n_triplets


# ---------------------------------------------------------------------------
# Rules on a subset
# ---------------------------------------------------------------------------


def _rule_masks(data: _Data, sub: _Sub, sphere: Sphere, rule: str, gamma: float,
                halfspace: np.ndarray | None, cand: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """``(L, R)`` masks over ``sub.idx`` (restricted to ``cand`` positions if given)."""
    n = sub.idx.size
    L = np.zeros(n, dtype=bool)
    R = np.zeros(n, dtype=bool)
    pos = np.arange(n) if cand is None else np.flatnonzero(cand)
    if pos.size == 0:
        return L, R
    Q = sphere.center
    r = sphere.radius
    q = _quad(sub.F, Q)
    if rule == "sphere" or (rule == "linear" and (halfspace is None
                                                   or not np.vdot(halfspace, halfspace) > 0)):
        code = np.zeros(n, dtype=np.int8)
        if cand is not None:
            code[~cand] = 3
        _sphere_rule(q, sub.la, sub.lb, sub.hn, float(r), 1.0 - gamma, sph.RULE_SLACK, code)
        return code == 1, code == 2
    la, lb = sub.la[pos], sub.lb[pos]
    hq = _diff(q, la, lb)
    hn = sub.hn[pos]
    if rule == "linear" and halfspace is not None and np.vdot(halfspace, halfspace) > 0:
        qp = _quad(sub.F, halfspace)
        hp = _diff(qp, la, lb)
        lo, hi = linear_bounds(hq, hn, hp, r, float(np.vdot(halfspace, halfspace)),
                               float(np.vdot(halfspace, Q)), _halfspace_delta(halfspace, Q, r))
    else:
        lo, hi = sphere_bounds(hq, hn, r)
    l_, r_ = sph.decide(lo, hi, hq, hn, r, gamma)
    if rule == "sdls":
        rest = ~(l_ | r_)
        if data.diagonal:
            if np.any(rest):
                gpa = data.pa[sub.idx[pos[rest]]]
                gpb = data.pb[sub.idx[pos[rest]]]
                lo2, hi2 = sph.orthant_bounds(data.F, gpa, gpb, Q, r * r)
                l2, r2 = sph.decide(lo2, hi2, hq[rest], hn[rest], r, gamma)
                l_[rest] |= l2
                r_[rest] |= r2
        elif np.any(rest):
            l2, r2 = _sdls_masks(data, sub, pos[rest], sphere, hq[rest], gamma)
            l_[rest] |= l2
            r_[rest] |= r2
    L[pos] = l_
    R[pos] = r_
    return L, R


def _halfspace_delta(P: np.ndarray, Q: np.ndarray, r: float) -> float:
    """Rounding allowance of ``<P, X> >= 0`` over the ball (see ``linear_bounds``)."""
    return 1e-9 * sph.fnorm(P) * (sph.fnorm(Q) + r)


def _sdls_masks(data: _Data, sub: _Sub, pos: np.ndarray, sphere: Sphere, hq: np.ndarray,
                gamma: float) -> tuple[np.ndarray, np.ndarray]:
    Q = sphere.center
    r2 = sphere.radius ** 2
    if sphere.psd_center:
        Qm_norm = 0.0
        hq_plus = hq
    else:
        Qp, Qm = sph.proj_pm(Q)
        Qm_norm = sph.fnorm(Qm)
        qq = _quad(sub.F, Qp)
        hq_plus = _diff(qq, sub.la[pos], sub.lb[pos])
    gidx = sub.idx[pos]
    ga, gb_ = data.pa[gidx], data.pb[gidx]
    an2, bn2 = data.sq[ga], data.sq[gb_]
    ep, en = sph._h_eigs(an2, bn2, data.ab[gidx])
    c = 1.0 - gamma
    # Feasible points of the SDLS primal give upper bounds on its optimum: when one
    # lies within the ball the SDLS dual cannot exceed r^2 and the candidate is
    # skipped. R2 (lower <X, H> to 1): X = Q_+ + t b b^T; R1 (raise it to 1 - gamma):
    # X = Q_+ + t a a^T; both: the scaled centre mu Q_+.
    ab2 = data.ab[gidx] ** 2
    qn2p = float(np.vdot(Q, Q)) - Qm_norm ** 2  # ||Q_+||^2
    if sphere.psd_center:
        bQb = aQa = 0.0
    else:
        Qm = Q - Qp
        gq = _quad(data.F, Qm)
        bQb, aQa = gq[gb_], gq[ga]

    def feasible_dist2(target, up):
        with np.errstate(divide="ignore", invalid="ignore"):
            if up:  # add t a a^T, <a a^T, H> = ||a||^4 - (a.b)^2
                den, nv, cross = an2 * an2 - ab2, an2 * an2, aQa
                t = (target - hq_plus) / den
            else:   # add t b b^T, <b b^T, H> = (a.b)^2 - ||b||^4
                den, nv, cross = bn2 * bn2 - ab2, bn2 * bn2, bQb
                t = (hq_plus - target) / den
            d1 = np.where(den > 0, Qm_norm ** 2 - 2 * t * cross + t * t * nv, np.inf)
            mu = target / hq_plus
            d2 = np.where((hq_plus > 0) & (mu > 0), Qm_norm ** 2 + (1 - mu) ** 2 * qn2p,
                          np.inf)
        return np.minimum(d1, d2)

    hopeless_R = feasible_dist2(1.0, False) <= r2
    hopeless_L = feasible_dist2(c, True) <= r2
    # R2: min <X, H> > 1  (H' = H, C = 1)
    candR = (hq_plus > 1.0) & ~hopeless_R
    R = np.zeros(pos.size, dtype=bool)
    L = np.zeros(pos.size, dtype=bool)
    if np.any(candR):
        ii = np.flatnonzero(candR)
        R[ii] = sph.sdls_screen(Q, Qm_norm, r2, data.F[ga[ii]], data.F[gb_[ii]], 1.0, 1.0,
                                hq[ii], hq_plus[ii], ep[ii], en[ii], sphere.psd_center)
    # R1: max <X, H> < 1 - gamma  <=>  min <X, -H> > -(1 - gamma)
    candL = (hq_plus < c) & ~hopeless_L
    if np.any(candL):
        ii = np.flatnonzero(candL)
        L[ii] = sph.sdls_screen(Q, Qm_norm, r2, data.F[ga[ii]], data.F[gb_[ii]], -1.0, -c,
                                -hq[ii], -hq_plus[ii], -en[ii], -ep[ii], sphere.psd_center)
    return L, R


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, kw_only=True)
class TripletResult(Result):
    """Result of :func:`solve`.

    Attributes
    ----------
    M : ndarray, shape (d, d) or (d,)
        The learned metric (PSD), or its nonnegative diagonal.
    alpha : ndarray, shape (n_t,)
        KKT dual variables ``-loss'(<M, H_t>)`` at ``M`` for every triplet.
    screened_L, screened_R : ndarray of int64
        Indices (rows of the triplet array) screened into L-hat / R-hat.
    lam : float
    radius : float
        Certified distance to the optimum: ``||M - M*||_F <= sqrt(2 gap / lam)``.
    loss_value : float
        The data term ``sum_t loss(<M, H_t>)``.
    n_triplets : int
    screening_log : Mapping[str, ndarray]
        One entry per (round, sphere): ``iteration``, ``sphere``, ``rule``,
        ``radius``, ``new_L``, ``new_R`` (triplets newly screened by that sphere),
        ``total_L``, ``total_R`` after the round, ``seconds``.
    step : float
        Last projected-gradient step (reused by warm starts).
    triplet_visits : int
        Triplets touched by loss passes and rule evaluations (a machine-independent
        cost: the naive solver touches every triplet once per iteration).
    fingerprint : tuple
        Identifies the triplet set (warm starts must use the same one).
    """

    M: np.ndarray
    alpha: np.ndarray
    screened_L: np.ndarray
    screened_R: np.ndarray
    lam: float
    radius: float
    loss_value: float
    n_triplets: int
    screening_log: Mapping[str, np.ndarray] = field(default_factory=dict)
    step: float = float("nan")
    fingerprint: tuple = ()
    triplet_visits: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        log = {k: _frozen_array(v) for k, v in dict(self.screening_log).items()}
        object.__setattr__(self, "screening_log", MappingProxyType(log))

    @property
    def screening_rate(self) -> float:
        """Fraction of triplets screened at the end of the solve."""
        return (self.screened_L.size + self.screened_R.size) / max(self.n_triplets, 1)

    def status(self) -> np.ndarray:
        """Per triplet: 0 not screened, 1 screened into L-hat, 2 into R-hat."""
        s = np.zeros(self.n_triplets, dtype=np.int8)
        s[self.screened_L] = 1
        s[self.screened_R] = 2
        return s

    def transform(self, X: Any) -> np.ndarray:
        """Map ``X`` to the learned metric's space: ``X L`` with ``M = L L^T``."""
        X = check_matrix(X, "X", n_cols=self.M.shape[0])
        if self.M.ndim == 1:
            return X * np.sqrt(np.maximum(self.M, 0.0))
        w, V = np.linalg.eigh(self.M)
        return X @ (V * np.sqrt(np.maximum(w, 0.0)))


@dataclass(frozen=True, eq=False, kw_only=True)
class PathResult:
    """Result of :func:`path`: one entry per ``lambda`` of the regularisation path.

    Attributes
    ----------
    lambdas, primal, dual, gap, loss, n_iter, time : ndarray, shape (n_lam,)
        ``loss`` is the data term used by the termination rule; ``time`` the
        seconds spent on that lambda (screening included, ``compare`` excluded).
    Ms : ndarray, shape (n_lam, d, d) or (n_lam, d)
    rate_path : ndarray
        Fraction of triplets screened at the start of each lambda (path screening).
    rate_final : ndarray
        Fraction screened at the end of each lambda (path + dynamic screening).
    rate_range : ndarray
        Fraction screened by the range-based extension (``range_screening=True``).
    rate_by_sphere : Mapping[str, ndarray]
        Per sphere of ``screening``: fraction newly screened by it at path screening.
    compare_rates : Mapping[str, ndarray]
        ``"sphere:rule"`` -> fraction that sphere and rule alone screen at the start
        of each lambda (evaluated on all triplets, not used to screen).
    dynamic_rates : ndarray, shape (n_lam, n_rounds)
        Fraction screened after each screening round (NaN padded).
    triplet_visits : ndarray
        Per lambda: triplets touched by loss passes and screening rules.
    n_triplets : int
    lam_max : float
    terminated_by : str
        ``"rule"`` (the paper's loss-decrease rule), ``"n_lambdas"`` or ``"lam_min"``.
    total_time : float
    params : Mapping[str, Any]
    """

    lambdas: np.ndarray
    Ms: np.ndarray
    primal: np.ndarray
    dual: np.ndarray
    gap: np.ndarray
    loss: np.ndarray
    n_iter: np.ndarray
    time: np.ndarray
    rate_path: np.ndarray
    rate_final: np.ndarray
    rate_range: np.ndarray
    rate_by_sphere: Mapping[str, np.ndarray]
    compare_rates: Mapping[str, np.ndarray]
    dynamic_rates: np.ndarray
    triplet_visits: np.ndarray
    n_triplets: int
    lam_max: float
    terminated_by: str
    total_time: float
    converged: np.ndarray
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("lambdas", "Ms", "primal", "dual", "gap", "loss", "n_iter", "time",
                     "rate_path", "rate_final", "rate_range", "dynamic_rates", "converged",
                     "triplet_visits"):
            object.__setattr__(self, name, _frozen_array(getattr(self, name)))
        for name in ("rate_by_sphere", "compare_rates"):
            d = {k: _frozen_array(v) for k, v in dict(getattr(self, name)).items()}
            object.__setattr__(self, name, MappingProxyType(d))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    @property
    def total_iterations(self) -> int:
        return int(np.sum(self.n_iter))


# ---------------------------------------------------------------------------
# One solve at a fixed lambda
# ---------------------------------------------------------------------------


@dataclass
class _Ref:
    """Reference solution of the previous lambda (RRPB / RPB / range screening)."""

    M: np.ndarray
    lam: float
    eps: float


@dataclass
class _RangeState:
    side: np.ndarray
    thr: np.ndarray
    ref: np.ndarray
    refs: list


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

    def __len__(self) -> int:
        return self.n

    def contains_all(self, M: np.ndarray) -> bool:
        """``||M - Q_k|| <= r_k`` for every sphere (rounding allowance as ``Sphere.contains``)."""
        if self.n == 0:
            return True
        D = (self.C[: self.n] - M).reshape(self.n, -1)
        dist = np.sqrt(np.einsum("ij,ij->i", D, D))
        r = self.r[: self.n]
        return bool(np.all(dist <= r + 1e-13 * (r + self.cn[: self.n] + sph.fnorm(M))))


class _Run:
    """State of one solve at a fixed ``lam``: screening sets, folded L-hat, subsets."""

    def __init__(self, prob: TripletProblem, lam: float, *, active_set: bool) -> None:
        self.prob = prob
        self.data = prob.data
        self.lam = lam
        self.gamma = prob.gamma
        self.hinge = prob.hinge
        self.active_set = active_set
        n_t = self.data.n_t
        self.status = np.zeros(n_t, dtype=np.int8)  # 0 work, 1 L-hat, 2 R-hat, 3 inactive
        self.HL = self.data.zeros()
        self.nL = 0
        self.nR = 0
        self._Lcat: tuple[np.ndarray, np.ndarray] | None = None
        self._Rcat: tuple[np.ndarray, np.ndarray] | None = None
        self.regions = _Regions(self.data.shape)
        self.log: dict[str, list] = {k: [] for k in (
            "iteration", "sphere", "rule", "radius", "new_L", "new_R", "total_L", "total_R",
            "seconds")}
        self.unscr = self.data.everything
        self.work = self.unscr
        self.n_full_evals = 0
        self.visits = 0  # triplets touched (loss passes, rule evaluations): a cost measure

    # subsets ------------------------------------------------------------------
    def rebuild(self, remaining: np.ndarray | None = None) -> None:
        """New subsets after screening (``remaining``: the unscreened triplets, if known)."""
        if remaining is None:
            remaining = np.flatnonzero((self.status == 0) | (self.status == 3))
        self.unscr = self.data.compact(remaining)
        if self.active_set:
            self.work = self.data.compact(remaining[self.status[remaining] == 0])
        else:
            self.work = self.unscr

    @property
    def n_L(self) -> int:
        return self.nL

    @property
    def n_R(self) -> int:
        return self.nR

    # evaluation ---------------------------------------------------------------
    def evaluate(self, M: np.ndarray, sub: _Sub, *, margins: bool = False) -> _Eval:
        self.visits += sub.idx.size
        q = _quad(sub.F, M)
        w = np.empty(sub.pairs.size)
        mout = np.empty(sub.idx.size if margins else 0)
        loss, asum, a2 = _loss_pass(q, sub.la, sub.lb, self.gamma, self.hinge, w, mout)
        A = self.data.assemble(sub.F, w) + self.HL
        lam = self.lam
        P = loss + 0.5 * lam * float(np.vdot(M, M)) + (1.0 - 0.5 * self.gamma) * self.nL \
            - float(np.vdot(M, self.HL))
        return _Eval(P=P, loss=loss, G=lam * M - A, A=A, asum=asum + self.nL,
                     a2=a2 + self.nL, margins=mout if margins else None)

    def dual_value(self, ev: _Eval) -> tuple[float, np.ndarray]:
        Ap, Am = sph.proj_pm(ev.A)
        D = ev.asum - 0.5 * self.gamma * ev.a2 - float(np.vdot(Ap, Ap)) / (2.0 * self.lam)
        return D, Ap

    def extra(self, M: np.ndarray) -> float:
        """``P(M) - P~(M)`` over the screened triplets (>= 0)."""
        if self.nL == 0 and self.nR == 0:
            return 0.0
        if self._Lcat is None:
            Lidx = np.flatnonzero(self.status == 1)
            Ridx = np.flatnonzero(self.status == 2)
            self._Lcat = (self.data.pa[Lidx], self.data.pb[Lidx])
            self._Rcat = (self.data.pa[Ridx], self.data.pb[Ridx])
        q = _quad(self.data.F, M)
        self.n_full_evals += 1
        self.visits += self.nL + self.nR
        return float(_extra_screened(q, self._Lcat[0], self._Lcat[1], self._Rcat[0],
                                     self._Rcat[1], self.gamma, self.hinge))

    def exact(self, M: np.ndarray) -> bool:
        return self.regions.contains_all(M)

    def full_primal(self, M: np.ndarray, P_red: float) -> tuple[float, bool]:
        if self.exact(M):
            return P_red, True
        return P_red + self.extra(M), False

    # screening ------------------------------------------------------------------
    def _fold(self, cnt: np.ndarray) -> None:
        nz = np.flatnonzero(cnt)
        if nz.size:
            self.HL = self.HL + self.data.assemble(self.data.F[nz], cnt[nz])

    def apply(self, newL: np.ndarray, newR: np.ndarray) -> None:
        """Move triplets (global indices) into L-hat / R-hat."""
        if newL.size:
            self.status[newL] = 1
            cnt = np.zeros(self.data.n_pairs)
            _pair_counts(self.data.pa, self.data.pb, newL, cnt)
            self._fold(cnt)
            self.nL += int(newL.size)
        if newR.size:
            self.status[newR] = 2
            self.nR += int(newR.size)
        if newL.size or newR.size:
            self._Lcat = None

    def screen(self, spheres: list[Sphere], rule: str, halfspace: np.ndarray | None,
               iteration: int, labels: list[str] | None = None) -> int:
        sub = self.unscr
        n = sub.idx.size
        if n == 0 or not spheres:
            return 0
        code = np.zeros(n, dtype=np.int8)  # 0 still a candidate, 1 L-hat, 2 R-hat
        totL, totR = self.nL, self.n_R
        for k, sp in enumerate(spheres):
            t0 = time.perf_counter()
            self.visits += n
            hs = sp.halfspace if sp.halfspace is not None else halfspace
            use_kernel = rule == "sphere" or (rule == "linear" and hs is None)
            if use_kernel:
                q = _quad(sub.F, sp.center)
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
            if nl or nr:
                self.regions.append(sp)
            lg = self.log
            lg["iteration"].append(iteration)
            lg["sphere"].append(labels[k] if labels else sp.kind)
            lg["rule"].append(rule)
            lg["radius"].append(sp.radius)
            lg["new_L"].append(int(nl))
            lg["new_R"].append(int(nr))
            lg["total_L"].append(totL)
            lg["total_R"].append(totR)
            lg["seconds"].append(time.perf_counter() - t0)
        if totL == self.nL and totR == self.n_R:
            return 0
        cnt = np.zeros(self.data.n_pairs)
        rem, nl, nr = _apply_codes(code, sub.idx, self.status, self.data.pa, self.data.pb, cnt)
        self._fold(cnt)
        self.nL += int(nl)
        self.nR += int(nr)
        self._Lcat = None
        self.rebuild(rem)
        return int(nl + nr)

    def spheres_at(self, kinds: Sequence[str], M: np.ndarray, ev: _Eval, gap: float,
                   Ap: np.ndarray, D: float, ref: _Ref | None, first: bool) -> list[Sphere]:
        lam = self.lam
        out = []
        for kind in kinds:
            if kind == "gb":
                out.append(gb_sphere(M, ev.G, lam))
            elif kind == "pgb":
                out.append(pgb_sphere(M, ev.G, lam))
            elif kind == "dgb":
                out.append(dgb_sphere(M, gap, lam))
            elif kind == "cdgb":
                Ma = Ap / lam
                ev_a = self.evaluate(Ma, self.unscr)
                gap_d = ev_a.P - D
                out.append(cdgb_sphere(Ma, gap_d + _GAP_PAD * max(1.0, abs(ev_a.P)), lam))
            elif kind == "rrpb":
                if first and ref is not None:
                    out.append(rrpb_sphere(ref.M, ref.lam, lam, ref.eps))
                else:
                    out.append(rrpb_sphere(M, lam, lam, math.sqrt(2.0 * gap / lam)))
            elif kind == "rpb":
                if ref is not None:
                    out.append(rpb_sphere(ref.M, ref.lam, lam))
        return out

    def range_screen(self, rs: _RangeState, ref: _Ref) -> int:
        """Range-based screening (Thm 4.1) from the reference of the previous lambda."""
        lam = self.lam
        t0 = time.perf_counter()
        rs.refs.append(ref)
        self.visits += self.data.n_t
        q0 = _quad(self.data.F, ref.M)
        cnt = np.zeros(self.data.n_pairs)
        used = np.zeros(len(rs.refs), dtype=np.bool_)
        nl, nr = _range_screen(q0, self.data.pa, self.data.pb, self.data.hn,
                               sph.fnorm(ref.M), ref.lam, ref.eps, 1.0 - self.gamma, lam,
                               rs.side, rs.thr, rs.ref, len(rs.refs) - 1, self.status, cnt,
                               used)
        for r_id in np.flatnonzero(used):
            R0 = rs.refs[int(r_id)]
            self.regions.append(rrpb_sphere(R0.M, R0.lam, lam, R0.eps))
        self._fold(cnt)
        self.nL += int(nl)
        self.nR += int(nr)
        self._Lcat = None
        lg = self.log
        lg["iteration"].append(0)
        lg["sphere"].append("rrpb-range")
        lg["rule"].append("sphere")
        lg["radius"].append(float("nan"))
        lg["new_L"].append(int(nl))
        lg["new_R"].append(int(nr))
        lg["total_L"].append(self.nL)
        lg["total_R"].append(self.nR)
        lg["seconds"].append(time.perf_counter() - t0)
        if nl or nr:
            self.rebuild()
        return int(nl + nr)

    def compare(self, specs: Sequence[tuple[str, str]], M: np.ndarray, ref: _Ref | None
                ) -> dict[str, float]:
        """Screening rate of each (sphere, rule) alone at ``M`` (all triplets, not applied)."""
        prob = self.prob
        allsub = self.data.everything
        saved = (self.HL, self.nL)
        self.HL, self.nL = self.data.zeros(), 0
        ev = self.evaluate(M, allsub)
        self.HL, self.nL = saved
        Ap = sph.proj_pm(ev.A)[0]
        D = ev.asum - 0.5 * self.gamma * ev.a2 - float(np.vdot(Ap, Ap)) / (2 * self.lam)
        gap = max(ev.P - D, 0.0) + _GAP_PAD * max(1.0, abs(ev.P))
        out = {}
        cache: dict[str, Sphere] = {}
        for kind, rule in specs:
            if kind not in cache:
                if kind == "cdgb":
                    Ma = Ap / self.lam
                    gd = prob.primal(Ma, self.lam) - D
                    cache[kind] = cdgb_sphere(Ma, gd + _GAP_PAD * max(1.0, abs(ev.P)),
                                              self.lam)
                elif kind in ("rpb", "rrpb") and ref is None:
                    cache[kind] = dgb_sphere(M, gap, self.lam) if kind == "rrpb" else None
                else:
                    sp = self.spheres_at([kind], M, ev, gap, Ap, D, ref, True)
                    cache[kind] = sp[0] if sp else None
            sp = cache[kind]
            if sp is None:
                out[f"{kind}:{rule}"] = float("nan")
                continue
            L, R = _rule_masks(self.data, allsub, sp, rule, self.gamma, sp.halfspace)
            out[f"{kind}:{rule}"] = float(L.sum() + R.sum()) / self.data.n_t
        return out


def _pad(gap: float, P: float) -> float:
    return max(gap, 0.0) + _GAP_PAD * max(1.0, abs(P))


@dataclass
class _Opts:
    screening: tuple[str, ...]
    rule: str
    active_set: bool
    method: str
    tol: float
    max_iter: int
    callback: Any
    screen_every: int = SCREEN_EVERY
    want_alpha: bool = True


def _run_solve(prob: TripletProblem, lam: float, M0: np.ndarray, opts: _Opts,
               ref: _Ref | None, step0: float | None, rs: _RangeState | None = None,
               compare: Sequence[tuple[str, str]] = ()):
    """Solve at ``lam`` from ``M0``; returns ``(TripletResult, extras dict)``."""
    run = _Run(prob, lam, active_set=opts.active_set)
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
        M, step = _dual_loop(run, M0, opts, ref, rs, mon, extras)
    else:
        M, step = _pgd_loop(run, M0, opts, ref, step0, rs, mon, extras)
    fields = mon.result_fields()
    fields["time"] = max(fields["time"] - t_cmp, 0.0)
    data = prob.data
    if opts.want_alpha:
        m = data.margins(M)
        u = 1.0 - m
        alpha = (u > 0).astype(float) if prob.hinge else np.clip(u / prob.gamma, 0.0, 1.0)
        Ls = np.flatnonzero(run.status == 1)
        Rs = np.flatnonzero(run.status == 2)
    else:  # inside path(): the per-lambda arrays are not kept
        alpha = np.empty(0)
        Ls = Rs = np.empty(0, dtype=np.int64)
    # ``primal`` is the full objective at M, so the data term is exact
    loss_value = float(fields["primal"] - 0.5 * lam * np.vdot(M, M))
    log = {k: np.asarray(v) for k, v in run.log.items()}
    res = TripletResult(
        M=M, alpha=alpha, screened_L=Ls, screened_R=Rs, lam=lam,
        radius=math.sqrt(2.0 * max(fields["gap"], 0.0) / lam), loss_value=loss_value,
        n_triplets=data.n_t, screening_log=log, step=float(step),
        triplet_visits=int(run.visits),
        fingerprint=prob.fingerprint(), method=opts.method,
        params={"lam": lam, "loss": prob.loss, "gamma": prob.gamma,
                "screening": "+".join(opts.screening) or "none", "rule": opts.rule,
                "diagonal": prob.diagonal, "active_set": opts.active_set,
                "method": opts.method, "tol": opts.tol, "max_iter": opts.max_iter,
                "n_triplets": data.n_t},
        **fields,
    )
    extras["rate_final"] = (run.nL + run.nR) / data.n_t
    return res, extras


def _first_screening(run: _Run, M: np.ndarray, ev: _Eval, gap: float, Ap: np.ndarray,
                     D: float, Aneg: np.ndarray | None, opts: _Opts, ref: _Ref | None,
                     rs: _RangeState | None, extras: dict) -> bool:
    """Regularisation-path screening at iteration 0; returns whether anything changed."""
    n_t = run.data.n_t
    changed = 0
    kinds = list(opts.screening)
    if rs is not None and ref is not None and "rrpb" in kinds:
        c = run.range_screen(rs, ref)
        extras["rate_range"] = c / n_t
        extras["by_sphere"]["rrpb"] = c / n_t
        changed += c
        kinds.remove("rrpb")
    spheres = run.spheres_at(kinds, M, ev, gap, Ap, D, ref, True)
    if spheres:
        before = len(run.log["new_L"])
        changed += run.screen(spheres, opts.rule, Aneg, 0)
        for k in range(before, len(run.log["new_L"])):
            name = run.log["sphere"][k]
            extras["by_sphere"][name] = (run.log["new_L"][k] + run.log["new_R"][k]) / n_t
    extras["rate_path"] = (run.nL + run.n_R) / n_t
    return changed > 0


def _certify(run: _Run, M: np.ndarray, ev: _Eval) -> tuple[float, float, float, np.ndarray,
                                                           bool]:
    """``(full primal, dual, reduced gap (padded), [A]_+, exact)`` at ``M``."""
    D, Ap = run.dual_value(ev)
    P_full, exact = run.full_primal(M, ev.P)
    return P_full, D, _pad(ev.P - D, ev.P), Ap, exact


def _pgd_loop(run: _Run, M0: np.ndarray, opts: _Opts, ref: _Ref | None,
              step0: float | None, rs: _RangeState | None, mon: Monitor, extras: dict):
    lam = run.lam
    cb = opts.callback is not None
    M = M0.copy()
    aset = opts.active_set
    # iteration 0 ------------------------------------------------------------
    step = step0 if (step0 is not None and math.isfinite(step0) and step0 > 0) else 1.0 / lam
    # With RRPB alone (sphere rule) path screening needs only the reference: screen
    # first, then evaluate the reduced problem (no pass over all triplets).
    ref_only = (ref is not None and set(opts.screening) == {"rrpb"} and opts.rule == "sphere")
    if ref_only:
        _first_screening(run, M, None, 0.0, None, 0.0, None, opts, ref, rs, extras)
    ev = run.evaluate(M, run.unscr, margins=aset)
    if aset:
        _refresh(run, ev)
    P_full, D, gap_r, Ap, exact = _certify(run, M, ev)
    if opts.screening and not ref_only:
        # halfspace of the linear rule at iteration 0: from a trial gradient step
        A_try = M - step * ev.G
        Aneg = sph.halfspace_from(A_try, sph.proj_pm(A_try)[1])
        if _first_screening(run, M, ev, gap_r, Ap, D, Aneg, opts, ref, rs, extras):
            ev = run.evaluate(M, run.unscr, margins=aset)
            if aset:
                _refresh(run, ev)
            P_full, D, gap_r, Ap, exact = _certify(run, M, ev)
    if _record(run, mon, 0, M, ev, P_full, D, exact, step, cb):
        return M, step
    hist = deque([ev.P], maxlen=_GLL_MEMORY)
    for it in range(1, opts.max_iter + 1):
        dec_scale = 1e-12 * max(1.0, abs(ev.P))
        for _ls in range(60):
            A_try = M - step * ev.G
            M_new, Am = sph.proj_pm(A_try)
            ev_new = run.evaluate(M_new, run.work)
            dec = float(np.vdot(ev.G, M_new - M))
            if ev_new.P <= max(hist) + 1e-4 * dec + dec_scale:
                break
            step *= 0.5
        if not np.isfinite(ev_new.P):
            raise NumericalError(f"triplet_screening: non-finite objective at iteration {it}")
        s = M_new - M
        yv = ev_new.G - ev.G
        sy = float(np.vdot(s, yv))
        if sy > 0:
            ss = float(np.vdot(s, s))
            yy = float(np.vdot(yv, yv))
            bb = 0.5 * abs(sy / yy + ss / sy) if yy > 0 else step
            if np.isfinite(bb) and bb > 0:
                step = bb
        M, ev, Aneg = M_new, ev_new, sph.halfspace_from(A_try, Am)
        hist.append(ev.P)
        refresh_now = it % opts.screen_every == 0 or it == opts.max_iter
        if aset:
            if not refresh_now:
                continue
            ev = run.evaluate(M, run.unscr, margins=True)
            _refresh(run, ev)
            hist = deque([ev.P], maxlen=_GLL_MEMORY)
        P_full, D, gap_r, Ap, exact = _certify(run, M, ev)
        if _record(run, mon, it, M, ev, P_full, D, exact, step, cb):
            break
        if opts.screening and it % opts.screen_every == 0:
            spheres = run.spheres_at(opts.screening, M, ev, gap_r, Ap, D, ref, False)
            if run.screen(spheres, opts.rule, Aneg, it):
                ev = run.evaluate(M, run.unscr, margins=aset)
                if aset:
                    _refresh(run, ev)
                hist = deque([ev.P], maxlen=_GLL_MEMORY)
            extras["dynamic"].append((run.nL + run.n_R) / run.data.n_t)
    return M, step


def _refresh(run: _Run, ev: _Eval) -> None:
    """Active set: working triplets = unscreened ones with positive loss (margin < 1)."""
    m = ev.margins
    idx = run.unscr.idx
    st = np.where(m < 1.0, 0, 3).astype(np.int8)
    run.status[idx] = st
    run.work = run.data.compact(idx[st == 0])


def _record(run: _Run, mon: Monitor, it: int, M: np.ndarray, ev: _Eval, P_full: float,
            D: float, exact: bool, step: float, cb: bool) -> bool:
    iterate = None
    if cb:
        iterate = {"M": M.copy(), "status": run.status.copy()}
    return mon.record(
        it, P_full, D, iterate=iterate,
        n_L=run.nL, n_R=run.n_R, n_work=int(run.work.idx.size),
        n_unscreened=int(run.unscr.idx.size), exact=bool(exact), step=float(step),
        reduced_primal=float(ev.P),
    )


def _dual_loop(run: _Run, M0: np.ndarray, opts: _Opts, ref: _Ref | None,
               rs: _RangeState | None, mon: Monitor, extras: dict):
    """Accelerated projected gradient on the dual (``solvers.apg``) with screening."""
    lam = run.lam
    gamma = run.gamma
    data = run.data
    cb = opts.callback is not None

    def alpha_at(M, sub):
        q = _quad(sub.F, M)
        u = 1.0 - (_diff(q, sub.la, sub.lb))
        return (u > 0).astype(float) if run.hinge else np.clip(u / gamma, 0.0, 1.0)

    def make_engine(alpha0, sub, L0):
        Psub = sub.pairs.size

        def A_of(a):
            run.visits += a.size
            w = np.bincount(sub.la, a, Psub) - np.bincount(sub.lb, a, Psub)
            return data.assemble(sub.F, w) + run.HL

        def value(a):
            Ap, _ = sph.proj_pm(A_of(a))
            return float(np.vdot(Ap, Ap)) / (2 * lam) - a.sum() + 0.5 * gamma * np.vdot(a, a)

        def value_and_grad(a):
            Ap, _ = sph.proj_pm(A_of(a))
            q = _quad(sub.F, Ap / lam)
            g = (_diff(q, sub.la, sub.lb)) - 1.0 + gamma * a
            f = float(np.vdot(Ap, Ap)) / (2 * lam) - a.sum() + 0.5 * gamma * np.vdot(a, a)
            return f, g

        eng = APG(value_and_grad, lambda v, _s: np.clip(v, 0.0, 1.0), alpha0, value=value,
                  L0=L0, adaptive_restart=True)
        return eng, A_of

    def certify(alpha, A_of, sub):
        A = A_of(alpha)
        Ap, Am = sph.proj_pm(A)
        M = Ap / lam
        ev = run.evaluate(M, run.unscr)
        D = (alpha.sum() + run.nL) - 0.5 * gamma * (np.vdot(alpha, alpha) + run.nL) \
            - float(np.vdot(Ap, Ap)) / (2 * lam)
        P_full, exact = run.full_primal(M, ev.P)
        return M, ev, P_full, float(D), _pad(ev.P - D, ev.P), Ap, sph.halfspace_from(A, Am), \
            exact

    sub = run.work
    hn2 = data.hn[sub.idx] ** 2
    L0 = max(gamma + float(hn2.mean()) / lam if hn2.size else 1.0, 1e-12)
    alpha = alpha_at(M0, sub)
    eng, A_of = make_engine(alpha, sub, L0)
    M, ev, P_full, D, gap_r, Ap, Pneg, exact = certify(alpha, A_of, sub)
    if opts.screening:
        if _first_screening(run, M, ev, gap_r, Ap, D, Pneg, opts, ref, rs, extras):
            keep = np.isin(sub.idx, run.work.idx, assume_unique=True)
            sub = run.work
            alpha = alpha[keep]
            eng, A_of = make_engine(alpha, sub, eng.L)
            M, ev, P_full, D, gap_r, Ap, Pneg, exact = certify(alpha, A_of, sub)
    if _record(run, mon, 0, M, ev, P_full, D, exact, 1.0 / eng.L, cb):
        return M, 1.0 / eng.L
    for it in range(1, opts.max_iter + 1):
        alpha = eng.step()
        M, ev, P_full, D, gap_r, Ap, Pneg, exact = certify(alpha, A_of, sub)
        if _record(run, mon, it, M, ev, P_full, D, exact, 1.0 / eng.L, cb):
            break
        if opts.screening and it % opts.screen_every == 0:
            spheres = run.spheres_at(opts.screening, M, ev, gap_r, Ap, D, ref, False)
            if run.screen(spheres, opts.rule, Pneg, it):
                keep = np.isin(sub.idx, run.work.idx, assume_unique=True)
                sub = run.work
                old = eng
                eng, A_of = make_engine(alpha[keep], sub, old.L)
                # keep the momentum across the (smaller) problem
                eng.x_prev = old.x_prev[keep]
                eng.t_prev, eng.t_cur = old.t_prev, old.t_cur
            extras["dynamic"].append((run.nL + run.n_R) / data.n_t)
    return M, 1.0 / eng.L


# ---------------------------------------------------------------------------
# Public solvers
# ---------------------------------------------------------------------------


def _resolve_method(method: str, hinge: bool, active_set: bool) -> str:
    method = check_choice(method, "method", METHODS)
    if method == "auto":
        method = "dual" if hinge and not active_set else "pgd"
    if method == "dual" and active_set:
        raise ValueError("active_set=True needs method='pgd' (the active-set heuristic of the "
                         "paper runs on the primal projected gradient)")
    return method


def _parse_compare(compare: Any) -> tuple[tuple[str, str], ...]:
    if not compare:
        return ()
    out = []
    for item in compare:
        if isinstance(item, str):
            kind, _, rule = item.partition(":")
            rule = rule or "sphere"
        else:
            kind, rule = item
        check_choice(kind, "compare sphere", SPHERES)
        check_choice(rule, "compare rule", RULES)
        out.append((kind, rule))
    return tuple(out)


def _make_problem(X, y, triplets_, k, loss, gamma, diagonal) -> TripletProblem:
    if isinstance(triplets_, TripletProblem):
        return triplets_
    return TripletProblem(X, y, triplets=triplets_, k=k, loss=loss, gamma=gamma,
                          diagonal=diagonal)


def solve(
    X: Any,
    y: Any,
    lam: float,
    *,
    triplets: Any = None,
    k: float = 10,
    loss: str = "smoothed_hinge",
    gamma: float = 0.05,
    screening: Any = ("rrpb", "pgb"),
    rule: str = "sphere",
    diagonal: bool = False,
    active_set: bool = False,
    method: str = "auto",
    tol: float = 1e-6,
    max_iter: int = 5000,
    init: TripletResult | None = None,
    callback=None,
) -> TripletResult:
    r"""Learn a Mahalanobis metric by RTLM with safe triplet screening.

    Minimises ``sum_t loss(<M, H_t>) + lam/2 ||M||_F^2`` over PSD ``M`` (or a
    nonnegative diagonal), stopping when ``gap / max(1, |primal|) <= tol``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Class labels (at least two classes).
    lam : float, > 0
    triplets : array_like, shape (n_t, 3), or TripletProblem, optional
        Explicit triplets ``(i, j, l)`` (default :func:`triplets` ``(X, y, k)``); a
        prepared :class:`TripletProblem` skips the pair preprocessing.
    k : int or inf
        Neighbourhood size for the default triplets.
    loss : {"smoothed_hinge", "hinge"}
    gamma : float
        Smoothed-hinge parameter (> 0).
    screening : sequence of {"gb", "pgb", "dgb", "cdgb", "rrpb"} or None
        Spheres used for safe screening at iteration 0 and every 10 iterations.
        ``"rrpb"`` uses ``init`` (solved at another lambda) as its reference at
        iteration 0 and equals DGB afterwards (``lam1 = lam0``). ``None``: the
        naive optimisation.
    rule : {"sphere", "linear", "sdls"}
        Screening rule over each sphere: Eq. (4), the linear relaxation of the
        PSD cone (Theorem 3.1) or the PSD-constrained SDLS rule.
    diagonal : bool
        Diagonal metric (``M`` returned as its diagonal vector).
    active_set : bool
        The active-set baseline: gradient over triplets with positive loss only,
        refreshed (and certified) every 10 iterations. Combines with screening.
    method : {"auto", "pgd", "dual"}
        ``"pgd"``: primal projected gradient with the paper's BB step;
        ``"dual"``: accelerated projected gradient on the dual. ``"auto"`` picks
        ``"dual"`` for the hinge loss (non-smooth primal), ``"pgd"`` otherwise.
    tol : float
        Relative duality-gap tolerance.
    max_iter : int
    init : TripletResult, optional
        Warm start (same triplets and metric type); if it was solved for the same
        loss at another lambda it is RRPB's reference for path screening.
    callback : callable, optional
        ``callback(state)`` per certified iteration; ``state.iterate`` holds ``M``
        and ``status`` (0 active, 1 L-hat, 2 R-hat, 3 outside the active set).

    Returns
    -------
    TripletResult
    """
    lam = check_scalar(lam, "lam", low=0.0)
    loss_n, gamma_v, hinge = _check_loss(loss, gamma)
    kinds = _check_screening(screening)
    rule = check_choice(rule, "rule", RULES)
    diagonal = check_bool(diagonal, "diagonal")
    active_set = check_bool(active_set, "active_set")
    method = _resolve_method(method, hinge, active_set)
    tol, max_iter = check_tol_max_iter(tol, max_iter)
    callback = check_callback(callback)
    prob = _make_problem(X, y, triplets, k, loss_n, gamma_v, diagonal)
    if isinstance(triplets, TripletProblem) and (prob.loss != loss_n or prob.gamma != gamma_v
                                                 or prob.diagonal != diagonal):
        raise ValueError("triplets: the TripletProblem was built with another loss, gamma "
                         "or diagonal setting")
    ref = None
    step0 = None
    if init is None:
        M0 = prob.data.zeros()
    else:
        if not isinstance(init, TripletResult):
            raise TypeError(f"init must be a previous TripletResult (or None), got "
                            f"{type(init).__name__}")
        if tuple(init.fingerprint) != prob.fingerprint():
            raise IncompatibleWarmStart("init does not match this problem (other triplets, "
                                        "dimension or metric type)")
        M0 = prob.check_metric(init.M, "init.M")
        M0 = sph.proj_pm(M0)[0]
        step0 = init.step * init.lam / lam if math.isfinite(init.step) else None
        p = init.params
        if (p.get("loss") == prob.loss and p.get("gamma") == prob.gamma
                and init.lam != lam and np.isfinite(init.gap)):
            ref = _Ref(M=np.array(init.M), lam=float(init.lam),
                       eps=math.sqrt(2.0 * _pad(init.gap, init.primal) / init.lam))
    opts = _Opts(screening=kinds, rule=rule, active_set=active_set, method=method, tol=tol,
                 max_iter=max_iter, callback=callback)
    with single_threaded_blas():
        res, _ = _run_solve(prob, lam, M0, opts, ref, step0)
    return res


def lambda_max(X: Any, y: Any, *, triplets: Any = None, k: float = 10,
               loss: str = "smoothed_hinge", gamma: float = 0.05,
               diagonal: bool = False) -> float:
    """``lam_max = max_t <[sum_T H]_+, H_t> / (1 - gamma)``: for ``lam >= lam_max``
    every triplet is in L* and ``M* = [sum_T H]_+ / lam``."""
    return _make_problem(X, y, triplets, k, loss, gamma, diagonal).lambda_max()


def primal_objective(M: Any, X: Any, y: Any, lam: float, *, triplets: Any = None,
                     k: float = 10, loss: str = "smoothed_hinge", gamma: float = 0.05,
                     diagonal: bool = False) -> float:
    """``P_lam(M) = sum_t loss(<M, H_t>) + lam/2 ||M||_F^2`` (``M`` need not be PSD)."""
    prob = _make_problem(X, y, triplets, k, loss, gamma, diagonal)
    return prob.primal(M, lam)


def dual_objective(alpha: Any, X: Any, y: Any, lam: float, *, triplets: Any = None,
                   k: float = 10, loss: str = "smoothed_hinge", gamma: float = 0.05,
                   diagonal: bool = False) -> float:
    """``D_lam(alpha) = -gamma/2 ||alpha||^2 + 1^T alpha - ||[sum alpha H]_+||^2 / (2 lam)``."""
    prob = _make_problem(X, y, triplets, k, loss, gamma, diagonal)
    return prob.dual(alpha, lam)


def path(
    X: Any,
    y: Any,
    *,
    triplets: Any = None,
    k: float = 10,
    loss: str = "smoothed_hinge",
    gamma: float = 0.05,
    ratio: float = 0.9,
    n_lambdas: int = 100,
    lam_max: float | None = None,
    lam_min: float | None = None,
    screening: Any = ("rrpb", "pgb"),
    rule: str = "sphere",
    range_screening: bool = False,
    compare: Any = (),
    diagonal: bool = False,
    active_set: bool = False,
    method: str = "auto",
    tol: float = 1e-6,
    max_iter: int = 5000,
    termination: bool = True,
    callback=None,
) -> PathResult:
    r"""Regularisation path ``lam_t = ratio * lam_{t-1}`` from ``lam_max`` with screening.

    ``lam_0 = lam_max`` (every triplet in L*, exact optimum ``[sum H]_+ / lam_0``);
    each next lambda is warm-started from the previous solution, which is the
    RRPB reference for path screening (``eps = sqrt(2 gap / lam)``), followed by
    dynamic screening every 10 iterations. The path stops by the paper's rule
    ``(loss_{t-1} - loss_t)/loss_{t-1} * lam_{t-1}/(lam_{t-1} - lam_t) < 0.01``
    (``termination=True``), after ``n_lambdas`` values or below ``lam_min``.

    Parameters
    ----------
    X, y, triplets, k, loss, gamma, diagonal, active_set, method, tol, max_iter
        As in :func:`solve`.
    ratio : float in (0, 1)
        ``lam_t / lam_{t-1}`` (0.9; the paper's fine path uses 0.99).
    n_lambdas : int
        Maximum number of lambdas (``lam_max`` included).
    lam_max, lam_min : float, optional
        Start (default :func:`lambda_max`) and lower limit of the path.
    screening, rule
        Spheres and rule used to screen (``None``: the naive path).
    range_screening : bool
        Replace RRPB's per-lambda rule evaluation by the range-based extension
        (Theorem 4.1): a triplet screened on ``(lam_a, lam_ref]`` is not
        re-evaluated while the path stays in that range.
    compare : sequence of "sphere:rule" or (sphere, rule)
        Extra (sphere, rule) pairs whose screening rate at the start of each
        lambda is recorded (not used to screen; ``"rpb"`` treats the previous
        solution as exact, for the theoretical comparison of section 3.2.3).
    termination : bool
        Apply the paper's termination rule.
    callback : callable, optional
        ``callback(t, lam, result)`` after each lambda; ``False`` stops the path.

    Returns
    -------
    PathResult
    """
    loss_n, gamma_v, hinge = _check_loss(loss, gamma)
    kinds = _check_screening(screening)
    rule = check_choice(rule, "rule", RULES)
    diagonal = check_bool(diagonal, "diagonal")
    active_set = check_bool(active_set, "active_set")
    range_screening = check_bool(range_screening, "range_screening")
    termination = check_bool(termination, "termination")
    method = _resolve_method(method, hinge, active_set)
    ratio = check_scalar(ratio, "ratio", low=0.0, high=1.0, high_inclusive=False)
    n_lambdas = check_int(n_lambdas, "n_lambdas", low=1)
    tol, max_iter = check_tol_max_iter(tol, max_iter)
    specs = _parse_compare(compare)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable or None")
    if range_screening and "rrpb" not in kinds:
        raise ValueError("range_screening=True extends RRPB: include 'rrpb' in screening")
    if range_screening and rule != "sphere":
        raise ValueError("range_screening=True works with rule='sphere' (Theorem 4.1)")
    prob = _make_problem(X, y, triplets, k, loss_n, gamma_v, diagonal)
    t_start = time.perf_counter()
    lmax_true = prob.lambda_max()
    if lam_max is None and not lmax_true > 0:
        raise ValueError("lam_max: the optimum is M = 0 for every lambda on this data "
                         "([sum_t H_t]_+ = 0); there is no path to compute")
    lam0 = lmax_true if lam_max is None else check_scalar(lam_max, "lam_max", low=0.0)
    if lam_min is not None:
        lam_min = check_scalar(lam_min, "lam_min", low=0.0)
    opts = _Opts(screening=kinds, rule=rule, active_set=active_set, method=method, tol=tol,
                 max_iter=max_iter, callback=None, want_alpha=False)
    rs = None
    if range_screening:
        n_t = prob.n_triplets
        rs = _RangeState(side=np.zeros(n_t, dtype=np.int8), thr=np.full(n_t, np.inf),
                         ref=np.zeros(n_t, dtype=np.int32), refs=[])
    rows: dict[str, list] = {k_: [] for k_ in (
        "lambdas", "Ms", "primal", "dual", "gap", "loss", "n_iter", "time", "rate_path",
        "rate_final", "rate_range", "dynamic", "converged", "visits")}
    by_sphere: dict[str, list] = {k_: [] for k_ in kinds}
    cmp_rows: dict[str, list] = {f"{a}:{b}": [] for a, b in specs}
    lam = lam0
    prev: TripletResult | None = None
    terminated = "n_lambdas"
    for t in range(n_lambdas):
        if lam_min is not None and lam < lam_min:
            terminated = "lam_min"
            break
        if prev is None:
            M0 = prob.solution_above_lambda_max(lam) if lam >= lmax_true else prob.data.zeros()
            ref, step0 = None, None
        else:
            M0 = prev.M.copy()
            ref = _Ref(M=np.array(prev.M), lam=prev.lam,
                       eps=math.sqrt(2.0 * _pad(prev.gap, prev.primal) / prev.lam))
            step0 = prev.step * prev.lam / lam
        with single_threaded_blas():  # ~1 ms per lambda
            res, ex = _run_solve(prob, lam, M0, opts, ref, step0, rs=rs,
                                 compare=specs if prev is not None else ())
        rows["lambdas"].append(lam)
        rows["Ms"].append(np.array(res.M))
        rows["primal"].append(res.primal)
        rows["dual"].append(res.dual)
        rows["gap"].append(res.gap)
        rows["loss"].append(res.loss_value)
        rows["n_iter"].append(res.n_iter)
        rows["time"].append(res.time)
        rows["rate_path"].append(ex["rate_path"])
        rows["rate_final"].append(ex["rate_final"])
        rows["rate_range"].append(ex["rate_range"])
        rows["dynamic"].append(ex["dynamic"])
        rows["converged"].append(res.converged)
        rows["visits"].append(res.triplet_visits)
        for kind in kinds:
            by_sphere[kind].append(ex["by_sphere"].get(kind, 0.0))
        for key in cmp_rows:
            cmp_rows[key].append(ex["compare"].get(key, float("nan")))
        if callback is not None and callback(t, lam, res) is False:
            terminated = "callback"
            break
        if termination and prev is not None:
            l0, l1 = prev.loss_value, res.loss_value
            if l0 <= 0:
                terminated = "rule"
                break
            crit = (l0 - l1) / l0 * prev.lam / (prev.lam - lam)
            if crit < 0.01:
                terminated = "rule"
                break
        prev = res
        lam = lam * ratio
    n_r = max([len(d) for d in rows["dynamic"]] + [1])
    dyn = np.full((len(rows["dynamic"]), n_r), np.nan)
    for i, d in enumerate(rows["dynamic"]):
        dyn[i, : len(d)] = d
    return PathResult(
        lambdas=np.asarray(rows["lambdas"]), Ms=np.asarray(rows["Ms"]),
        primal=np.asarray(rows["primal"]), dual=np.asarray(rows["dual"]),
        gap=np.asarray(rows["gap"]), loss=np.asarray(rows["loss"]),
        n_iter=np.asarray(rows["n_iter"], dtype=int), time=np.asarray(rows["time"]),
        rate_path=np.asarray(rows["rate_path"]), rate_final=np.asarray(rows["rate_final"]),
        rate_range=np.asarray(rows["rate_range"]),
        rate_by_sphere={k_: np.asarray(v) for k_, v in by_sphere.items()},
        compare_rates={k_: np.asarray(v) for k_, v in cmp_rows.items()},
        dynamic_rates=dyn, triplet_visits=np.asarray(rows["visits"], dtype=np.int64),
        n_triplets=prob.n_triplets, lam_max=lmax_true,
        terminated_by=terminated, total_time=time.perf_counter() - t_start,
        converged=np.asarray(rows["converged"], dtype=bool),
        params={"loss": prob.loss, "gamma": prob.gamma, "ratio": ratio,
                "screening": "+".join(kinds) or "none", "rule": rule,
                "range_screening": range_screening, "diagonal": prob.diagonal,
                "active_set": active_set, "method": method, "tol": tol,
                "max_iter": max_iter, "n_triplets": prob.n_triplets},
    )


# --- BEGIN temporary PARAMS (issue-9) ---
# Minimal declaration of solve's parameters for solvers.estimators and the contract
# suite; the module's owner replaces it with the real one (same names as solve's).
from .params import MAX_ITER as _MAX_ITER_SPEC  # noqa: E402
from .params import TOL as _TOL_SPEC  # noqa: E402
from .params import ParamSpec as _PS  # noqa: E402
from .params import ParamSpecs as _PSs  # noqa: E402

PARAMS = _PSs(
    _PS("lam", 1.0, "regularisation weight lambda > 0", low=0.0),
    _PS("k", 10.0, "neighbourhood size of the default triplets (inf: all)", low=1.0,
        low_inclusive=True, allow_inf=True),
    _PS("loss", "smoothed_hinge", "triplet loss", choices=LOSSES),
    _PS("gamma", 0.05, "smoothing of the smoothed hinge", low=0.0, low_inclusive=True),
    _PS("screening", ("rrpb", "pgb"), "spheres used for safe screening (None: naive)",
        kind="object"),
    _PS("rule", "sphere", "screening rule", choices=RULES),
    _PS("diagonal", False, "diagonal metric"),
    _PS("active_set", False, "active-set heuristic (baseline)"),
    _PS("method", "auto", "optimiser (auto: pgd for the smoothed hinge, dual for the hinge)",
        choices=METHODS),
    _TOL_SPEC,
    _PS("max_iter", 5000, "iteration budget", kind="int", low=_MAX_ITER_SPEC.low,
        low_inclusive=True),
)
# --- END temporary PARAMS (issue-9) ---
