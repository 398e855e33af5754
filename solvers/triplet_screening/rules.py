"""Screening rules over a subset of triplets: sphere, linear relaxation, SDLS (section 3.1)."""

from __future__ import annotations

import numpy as np

from . import spheres as sph
from .kernels import _sphere_rule
from .pairs import _Data, _diff, _Sub
from .spheres import Sphere, linear_bounds, sphere_bounds

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
    q = sub.quad(Q)
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
        qp = sub.quad(halfspace)
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
    """``(L, R)`` masks over ``pos`` by the SDLS rule (section 3.1.2); ``hq``: ``<Q, H_t>``."""
    Q = sphere.center
    r2 = sphere.radius ** 2
    if sphere.psd_center:
        Qm_norm = 0.0
        hq_plus = hq
    else:
        Qp, Qm = sph.proj_pm(Q)
        Qm_norm = sph.fnorm(Qm)
        qq = sub.quad(Qp)
        hq_plus = _diff(qq, sub.la[pos], sub.lb[pos])
    gidx = sub.idx[pos]
    assert data.sq is not None and data.ab is not None  # full (not diagonal) metrics
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
        gq = data.quad(Qm)
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
