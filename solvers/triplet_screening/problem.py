"""The RTLM problem in pair form: pair quadratic forms, objectives, KKT map, spheres."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..validation import (
    check_bool,
    check_choice,
    check_scalar,
)
from . import spheres as sph
from .kernels import _loss_only
from .pairs import _Data, _diff, kkt_alpha
from .rules import _halfspace_delta, _rule_masks
from .spheres import (
    Sphere,
    linear_bounds,
    rrpb_ranges,
    sphere_bounds,
)
from .triplets import (
    RULES,
    SPHERES,
    _build_triplets,
    _check_k,
    _check_loss,
    _check_triplets,
    _check_xy,
)

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
        self.k: float | None
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
        self._fingerprint: tuple[int, int, str, bool] | None = None
        self._sum_plus: np.ndarray | None = None
        self._lam_max: float | None = None

    # basic quantities -----------------------------------------------------
    @property
    def triplets(self) -> np.ndarray:
        return self.data.T

    @property
    def h_norms(self) -> np.ndarray:
        """``||H_t||_F`` for every triplet (2-norm of the diagonal for diagonal metrics)."""
        return self.data.hn

    def fingerprint(self) -> tuple[int, int, str, bool]:
        """``(n_t, d, digest, diagonal)``: a BLAKE2b digest of the ordered triplet array
        and of ``X``. Warm starts and the RRPB reference need the same triplets in the
        same order on the same data (an ``init`` from another problem is refused)."""
        if self._fingerprint is None:
            h = hashlib.blake2b(digest_size=16)
            h.update(np.ascontiguousarray(self.data.T, dtype=np.int64).tobytes())
            h.update(np.ascontiguousarray(self.X, dtype=float).tobytes())
            self._fingerprint = (self.data.n_t, self.data.d, h.hexdigest(), self.diagonal)
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

    def kkt_alpha(self, M: Any) -> np.ndarray:
        """``alpha_t = -loss'(<M, H_t>)`` (hinge: 1 where the margin is below 1)."""
        return kkt_alpha(self.margins(M), self.gamma, self.hinge)

    def primal(self, M: Any, lam: float) -> float:
        """``P_lam(M) = sum_t loss(<M, H_t>) + lam/2 ||M||_F^2``."""
        M = self.check_metric(M)
        lam = check_scalar(lam, "lam", low=0.0)
        q = self.data.quad(M)
        loss = _loss_only(q, self.data.pa, self.data.pb, self.gamma, self.hinge)
        return float(loss + 0.5 * lam * np.vdot(M, M))

    def weighted_sum(self, w: Any) -> np.ndarray:
        """``sum_t w_t H_t`` (a ``(d, d)`` matrix, or its diagonal)."""
        w = np.asarray(w, dtype=float)
        if w.shape != (self.n_triplets,):
            raise ValueError(f"weights must have shape ({self.n_triplets},), got {w.shape}")
        return self.data.assemble(self.data.everything.pair_weights(w))

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
        ap2 = sph.pos_sq_norm(self.weighted_sum(alpha))
        return sph.dual_value(alpha.sum(), float(np.vdot(alpha, alpha)), ap2, self.gamma, lam)

    def metric_from_dual(self, alpha: Any, lam: float) -> np.ndarray:
        """``M_lam(alpha) = [sum alpha H]_+ / lam``."""
        Ap, _ = sph.proj_pm(self.weighted_sum(np.asarray(alpha, dtype=float)))
        return Ap / lam

    def _plus_sum(self) -> np.ndarray:
        """``[sum_T H_t]_+`` (read-only), cached for :meth:`lambda_max` and
        :meth:`solution_above_lambda_max`."""
        if self._sum_plus is None:
            Sp, _ = sph.proj_pm(self.weighted_sum(np.ones(self.n_triplets)))
            Sp.setflags(write=False)
            self._sum_plus = Sp
        return self._sum_plus

    def lambda_max(self) -> float:
        """``max_t <[sum_T H]_+, H_t> / (1 - gamma)``: above it every triplet is in L*."""
        c = 1.0 - self.gamma
        if c <= 0:
            raise ValueError("lambda_max needs gamma < 1 (the L* region is x < 1 - gamma)")
        if self._lam_max is None:
            mx = float(np.max(self.data.margins(self._plus_sum())))
            # not mx > 0: [sum H]_+ = 0, M* = 0 (every triplet in L*) for every lambda
            self._lam_max = mx / c if mx > 0 else 0.0
        return self._lam_max

    def solution_above_lambda_max(self, lam: float) -> np.ndarray:
        """The exact optimum ``[sum_T H]_+ / lam`` for ``lam >= lambda_max``."""
        return self._plus_sum() / lam

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
        D = sph.dual_value(alpha.sum(), float(np.vdot(alpha, alpha)), float(np.vdot(Ap, Ap)),
                           self.gamma, lam)
        gap = max(P - D, 0.0)
        if ref is not None:
            ref = (self.check_metric(ref[0], "ref M0"), float(ref[1]), float(ref[2]))

        def cdgb():
            Ma = Ap / lam
            return Ma, self.primal(Ma, lam) - D

        out: dict[str, Sphere] = {}
        for kind in kinds:
            check_choice(kind, "kinds", SPHERES)
            if kind == "rpb" and ref is None:
                raise ValueError("rpb needs ref=(M0, lam0, eps)")
            sphere = sph.make_sphere(kind, lam, M, grad=G, gap=gap, cdgb=cdgb, ref=ref)
            assert sphere is not None  # only rpb without ref makes none (refused above)
            out[kind] = sphere
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
        q = self.data.quad(sphere.center)
        hq = _diff(q, self.data.pa, self.data.pb)
        hn = self.data.hn
        r = sphere.radius
        if rule == "sphere":
            return sphere_bounds(hq, hn, r)
        if rule == "linear":
            P = halfspace if halfspace is not None else sphere.halfspace
            if P is None:
                return sphere_bounds(hq, hn, r)
            qp = self.data.quad(P)
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
        at = np.asarray(lambdas if grid is None else grid, dtype=float)
        out = np.zeros((at.size, len(Ms)))
        for s, (M0, l0, e0) in enumerate(zip(Ms, lambdas, eps, strict=True)):
            rng = self.ranges(M0, l0, e0)
            for key in ("L_below", "R_below", "L_above", "R_above"):
                st, en = rng[key]
                ok = st < en
                st, en = np.sort(st[ok]), np.sort(en[ok])
                if key.endswith("below"):
                    # (st, l0]: count st < lam for grid lam <= l0
                    cnt = np.searchsorted(st, at, side="left")
                    out[:, s] += np.where(at <= l0, cnt, 0)
                else:
                    # [l0, en): count en > lam for grid lam > l0 (lam == l0 counted below)
                    cnt = en.size - np.searchsorted(en, at, side="right")
                    out[:, s] += np.where(at > l0, cnt, 0)
        return out / self.n_triplets
