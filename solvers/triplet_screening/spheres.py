r"""Spheres that contain the optimal metric and the rules evaluated over them (private).

Section 3 of Yoshida, Takeuchi & Karasuyama, *Safe triplet screening for
distance metric learning*. A *sphere* ``{X : ||X - Q||_F <= r}`` is built from
a reference solution (step 1); a *rule* bounds ``<X, H_t>`` over the sphere,
optionally intersected with the PSD cone or a halfspace containing it
(step 2). A triplet is screened into L-hat when ``max <X, H_t> < 1 - gamma``
(rule R1) and into R-hat when ``min <X, H_t> > 1`` (rule R2).

Spheres (all hold the optimum ``M*`` of the problem at ``lam``):

- GB   (Thm 3.2): ``Q = M - grad/(2 lam)``, ``r = ||grad|| / (2 lam)``;
- PGB  (Thm 3.3): ``Q = [Q_GB]_+``, ``r^2 = r_GB^2 - ||[Q_GB]_-||^2``;
- DGB  (Thm 3.5): ``Q = M``, ``r^2 = 2 gap / lam``;
- CDGB (Thm 3.6): ``Q = M_lam(alpha)``, ``r^2 = (P(M_lam(alpha)) - D(alpha)) / lam``;
- RPB  (Thm 3.7): ``Q = (lam0 + lam1)/(2 lam1) M0*``, ``r = |lam0 - lam1|/(2 lam1) ||M0*||``
  (needs the *exact* optimum at ``lam0``: theoretical comparison only);
- RRPB (Thm 3.10): RPB's centre at an approximate ``M0`` with ``||M0 - M0*|| <= eps``,
  ``r = |lam0 - lam1|/(2 lam1) ||M0|| + (|lam0 - lam1| + lam0 + lam1)/(2 lam1) eps``.

Rules: the sphere rule (Eq. 4), the linear relaxation of the PSD constraint
(Thm 3.1) and the PSD-constrained rule via the 1-D SDLS dual (section 3.1.2;
for a diagonal metric the exact orthant rule of Appendix B). Everything works
on full matrices ``(d, d)`` and on diagonal metrics stored as vectors ``(d,)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from .. import prox
from ..validation import check_index_array
from .kernels import _orthant_bounds

__all__: list[str] = []

#: Relative safety margin of every rule (rounding in <Q, H> and r ||H||).
RULE_SLACK = 1e-11


# ---------------------------------------------------------------------------
# Geometry helpers (matrix or diagonal-as-vector)
# ---------------------------------------------------------------------------


def proj_pm(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(A_+, A_-)``: projections onto the PSD cone (:func:`solvers.prox.project_psd`)
    and its polar (``A = A_+ + A_-``); a diagonal metric stored as a vector is clipped."""
    if A.ndim == 1:
        return np.maximum(A, 0.0), np.minimum(A, 0.0)
    return prox.psd_split(A)


@njit(cache=True)
def pos_sq_vec(a: np.ndarray) -> float:  # pragma: no cover - compiled
    """``sum_k max(a_k, 0)^2`` in order (compiled: :func:`pos_sq_norm` and the compiled
    solver loop :mod:`.burst` sum alike)."""
    s = 0.0
    for k in range(a.shape[0]):
        v = max(a[k], 0.0)
        s += v * v
    return s


def pos_sq_norm(A: np.ndarray) -> float:
    """``||A_+||_F^2`` (:func:`solvers.prox.psd_sq_norm`; eigenvalues only)."""
    if A.ndim == 1:
        return float(pos_sq_vec(np.ascontiguousarray(A, dtype=float)))
    return prox.psd_sq_norm(A)


@njit(cache=True)
def dual_value(asum: float, a2: float, ap2: float, gamma: float,
               lam: float) -> float:  # pragma: no cover - compiled
    """The dual objective (Appendix A), written once (compiled: the compiled solver loop
    :func:`.burst._pgd_burst` uses it too)::

        D_lam(alpha) = sum alpha - gamma/2 sum alpha^2 - ||[sum alpha H]_+||^2 / (2 lam)

    from ``asum = sum alpha``, ``a2 = sum alpha^2`` and ``ap2 = ||[sum alpha H]_+||_F^2``.
    """
    return float(asum - 0.5 * gamma * a2 - ap2 / (2.0 * lam))


#: A halfspace normal ``-A_-`` is used only when ``||A_-|| >= HALFSPACE_MIN ||A||``
#: (below that it is rounding noise with an arbitrary direction).
HALFSPACE_MIN = 1e-6


def halfspace_from(A: np.ndarray, Am: np.ndarray) -> np.ndarray | None:
    """``P = -A_-`` (PSD, so ``<P, X> >= 0`` on the PSD cone), or None if negligible."""
    na = fnorm(Am)
    if not na > HALFSPACE_MIN * fnorm(A):
        return None
    return -Am


def fnorm(A: np.ndarray) -> float:
    return float(np.sqrt(np.vdot(A, A)))


@dataclass(frozen=True, eq=False)
class Sphere:
    """A ball ``{X : ||X - center||_F <= radius}`` known to contain the optimum.

    Attributes
    ----------
    kind : str
        ``"gb"``, ``"pgb"``, ``"dgb"``, ``"cdgb"``, ``"rpb"`` or ``"rrpb"``.
    center : ndarray
        ``(d, d)`` matrix or, for a diagonal metric, the diagonal ``(d,)``.
    radius : float
    psd_center : bool
        Whether the centre is PSD (every sphere but GB's).
    halfspace : ndarray or None
        A PSD matrix ``P`` with ``<P, X> >= 0`` on the PSD cone that cuts the
        ball (GB: ``-[Q_GB]_-``); used by the linear rule.
    """

    kind: str
    center: np.ndarray
    radius: float
    psd_center: bool = True
    halfspace: np.ndarray | None = None

    def contains(self, M: np.ndarray, rtol: float = 1e-13) -> bool:
        """Whether ``M`` lies in the ball (up to rounding in the distance)."""
        dist = fnorm(M - self.center)
        return dist <= self.radius + rtol * (self.radius + fnorm(self.center) + fnorm(M))


def gb_sphere(M: np.ndarray, grad: np.ndarray, lam: float) -> Sphere:
    """Gradient bound (Thm 3.2) at a feasible ``M`` with (sub)gradient ``grad``.

    Parameters
    ----------
    M : ndarray, shape (d, d)
        A feasible (PSD) metric.
    grad : ndarray, shape (d, d)
        A (sub)gradient of the primal at ``M``.
    lam : float, > 0
        The regularisation weight.

    Returns
    -------
    Sphere
        Centre ``Q = M - grad / (2 lam)``, radius ``||grad|| / (2 lam)``, and the
        halfspace of ``Q``'s negative part.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import triplet_screening as ts
    >>> s = ts.gb_sphere(np.eye(2), np.eye(2), lam=0.5)
    >>> s.kind, s.center, round(s.radius, 6)
    ('gb', array([[0., 0.],
           [0., 0.]]), 1.414214)
    """
    Q = M - grad / (2.0 * lam)
    _, Qm = proj_pm(Q)
    return Sphere("gb", Q, fnorm(grad) / (2.0 * lam), psd_center=False,
                  halfspace=halfspace_from(Q, Qm))


def pgb_sphere(M: np.ndarray, grad: np.ndarray, lam: float) -> Sphere:
    """Projected gradient bound (Thm 3.3).

    Parameters
    ----------
    M : ndarray, shape (d, d)
        A feasible (PSD) metric.
    grad : ndarray, shape (d, d)
        A (sub)gradient of the primal at ``M``.
    lam : float, > 0
        The regularisation weight.

    Returns
    -------
    Sphere
        Centre ``[Q]_+`` (``Q`` the GB centre), radius
        ``sqrt(||grad||^2 / (4 lam^2) - ||[Q]_-||^2)``: never larger than GB's.
    """
    Q = M - grad / (2.0 * lam)
    Qp, Qm = proj_pm(Q)
    r2 = float(np.vdot(grad, grad)) / (4.0 * lam * lam) - float(np.vdot(Qm, Qm))
    return Sphere("pgb", Qp, float(np.sqrt(max(r2, 0.0))))


@njit(cache=True)
def dgb_radius(gap: float, lam: float) -> float:  # pragma: no cover - compiled
    """``sqrt(2 gap / lam)`` (gap clamped at 0): the duality-gap ball's radius (Thm 3.5),
    compiled so the compiled solver loop's screening tests compute it alike."""
    return math.sqrt(2.0 * max(gap, 0.0) / lam)


def dgb_sphere(M: np.ndarray, gap: float, lam: float) -> Sphere:
    """Duality gap bound (Thm 3.5): ``||M* - M||^2 <= 2 gap / lam`` (gap clamped at 0).

    Parameters
    ----------
    M : ndarray, shape (d, d)
        A feasible (PSD) metric.
    gap : float
        A duality gap at ``M`` (primal at ``M`` minus a dual value).
    lam : float, > 0
        The regularisation weight.

    Returns
    -------
    Sphere
        Centre ``M``, radius ``sqrt(2 gap / lam)``.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import triplet_screening as ts
    >>> s = ts.dgb_sphere(np.eye(2), gap=2.0, lam=1.0)
    >>> s.radius, s.contains(np.zeros((2, 2)))  # ||0 - I|| = sqrt(2) <= 2
    (2.0, True)
    """
    return Sphere("dgb", M, float(dgb_radius(gap, lam)))


def cdgb_sphere(M_alpha: np.ndarray, gap_d: float, lam: float) -> Sphere:
    """Constrained duality gap bound (Thm 3.6) at ``M_lam(alpha) = [sum alpha H]_+ / lam``.

    Parameters
    ----------
    M_alpha : ndarray, shape (d, d)
        ``M_lam(alpha)`` of a feasible dual point ``alpha``.
    gap_d : float
        ``P(M_lam(alpha)) - D(alpha)``.
    lam : float, > 0
        The regularisation weight.

    Returns
    -------
    Sphere
        Centre ``M_alpha``, radius ``sqrt(gap_d / lam)``.
    """
    return Sphere("cdgb", M_alpha, float(np.sqrt(max(gap_d, 0.0) / lam)))


def path_scale(lam0: float, lam1: float) -> float:
    """``(lam0 + lam1) / (2 lam1)``: the RPB and RRPB centres are this multiple of the
    reference at ``lam0``."""
    return (lam0 + lam1) / (2.0 * lam1)


def rpb_sphere(M0_opt: np.ndarray, lam0: float, lam1: float) -> Sphere:
    """Regularisation path bound (Thm 3.7); ``M0_opt`` must be the exact optimum at ``lam0``.

    Parameters
    ----------
    M0_opt : ndarray, shape (d, d)
        The optimum at ``lam0``.
    lam0, lam1 : float, > 0
        The solved and the next regularisation weight.

    Returns
    -------
    Sphere
        Centre ``(lam0 + lam1) / (2 lam1) M0_opt``, radius
        ``|lam0 - lam1| / (2 lam1) ||M0_opt||``; it contains the optimum at ``lam1``.
    """
    r = abs(lam0 - lam1) / (2.0 * lam1) * fnorm(M0_opt)
    return Sphere("rpb", path_scale(lam0, lam1) * M0_opt, r)


def rrpb_sphere(M0: np.ndarray, lam0: float, lam1: float, eps: float) -> Sphere:
    """Relaxed regularisation path bound (Thm 3.10), ``||M0 - M0*|| <= eps``.

    Parameters
    ----------
    M0 : ndarray, shape (d, d)
        An approximate solution at ``lam0``.
    lam0, lam1 : float, > 0
        The solved and the next regularisation weight.
    eps : float, >= 0
        A bound of ``M0``'s distance to the optimum at ``lam0`` (e.g. the DGB radius).

    Returns
    -------
    Sphere
        The RPB sphere of ``M0`` with the radius widened by
        ``(|lam0 - lam1| + lam0 + lam1) / (2 lam1) eps``.
    """
    dl = abs(lam0 - lam1)
    r = dl / (2.0 * lam1) * fnorm(M0) + (dl + lam0 + lam1) / (2.0 * lam1) * max(eps, 0.0)
    return Sphere("rrpb", path_scale(lam0, lam1) * M0, r)


def make_sphere(kind: str, lam: float, M: np.ndarray, *, grad: np.ndarray | None = None,
                gap: float = 0.0, cdgb=None, ref: tuple[np.ndarray, float, float] | None = None
                ) -> Sphere | None:
    """The one sphere factory: sphere ``kind`` for ``lam`` at the feasible point ``M``.

    ``grad``: gradient of the (reduced) primal at ``M`` (GB, PGB); ``gap``: its
    duality gap (DGB, and RRPB without reference); ``cdgb``: a callable returning
    ``(M_lam(alpha), P(M_lam(alpha)) - D(alpha))`` (CDGB); ``ref = (M0, lam0, eps)``:
    the previous solution (RPB takes it as exact, RRPB with ``||M0 - M0*|| <= eps``).
    RRPB without reference is taken at ``lam0 = lam`` (it then equals DGB); RPB
    without reference gives None.
    """
    if kind in ("gb", "pgb"):
        if grad is None:
            raise ValueError(f"the {kind} sphere needs grad")
        return (gb_sphere if kind == "gb" else pgb_sphere)(M, grad, lam)
    if kind == "dgb":
        return dgb_sphere(M, gap, lam)
    if kind == "cdgb":
        Ma, gap_d = cdgb()
        return cdgb_sphere(Ma, gap_d, lam)
    if kind == "rrpb":
        if ref is None:
            return rrpb_sphere(M, lam, lam, float(dgb_radius(gap, lam)))
        return rrpb_sphere(ref[0], ref[1], lam, ref[2])
    if kind == "rpb":
        return None if ref is None else rpb_sphere(ref[0], ref[1], lam)
    raise ValueError(f"unknown sphere {kind!r}")


# ---------------------------------------------------------------------------
# Rules: bounds on <X, H_t> over the region
# ---------------------------------------------------------------------------


def sphere_bounds(hq: np.ndarray, hn: np.ndarray, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (4): ``<Q, H> -/+ r ||H||`` bound ``<X, H>`` over the ball.

    Parameters
    ----------
    hq : ndarray, shape (T,)
        ``<Q, H_t>`` per triplet (``Q`` the centre).
    hn : ndarray, shape (T,)
        ``||H_t||`` per triplet.
    r : float, >= 0
        The radius.

    Returns
    -------
    lower, upper : ndarray, shape (T,)
        ``hq - r hn`` and ``hq + r hn``.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import triplet_screening as ts
    >>> ts.sphere_bounds(np.array([1.0]), np.array([2.0]), 0.25)
    (array([0.5]), array([1.5]))
    """
    return hq - r * hn, hq + r * hn


def _linear_lower(hq, hn, hp, r, pp, pq):
    # min <X, H> s.t. ||X - Q|| <= r, <P, X> >= 0 (Theorem 3.1, Appendix C).
    lo = hq - r * hn
    if pp <= 0.0:
        return lo
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(hn > 0, hp / np.where(hn > 0, hn, 1.0), 0.0)
        plane_cut = pq - r * ratio < 0.0  # the ball's minimiser violates <P, X> >= 0
        den = r * r * pp - pq * pq
        num = pp * hn * hn - hp * hp
        ok = plane_cut & (den > 0.0) & (num > 1e-14 * pp * hn * hn)
        a = np.sqrt(np.where(ok, num, 1.0) / (den if den > 0 else 1.0))
        b = (hp - a * pq) / pp
        val = hq + (b * hp - hn * hn) / np.where(ok, a, 1.0)
    # the constrained minimum is never below the ball's (rounding guard: max)
    return np.where(ok, np.maximum(val, lo), lo)


def linear_bounds(hq, hn, hp, r, pp, pq, delta: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 3.1: bounds of ``<X, H>`` over ``{||X - Q|| <= r, <P, X> >= -delta}``.

    ``hq = <Q, H>``, ``hn = ||H||``, ``hp = <P, H>`` per triplet; ``pp = ||P||^2``,
    ``pq = <P, Q>``. The upper bound is ``-lower(-H)``. ``delta >= 0`` relaxes the
    halfspace for rounding: with ``X' = X + delta P / ||P||^2`` it is Theorem 3.1
    for the centre ``Q' = Q + delta P / ||P||^2``, shifted back.

    Parameters
    ----------
    hq, hn, hp : ndarray, shape (T,)
        ``<Q, H_t>``, ``||H_t||`` and ``<P, H_t>`` per triplet.
    r : float, >= 0
        The radius.
    pp, pq : float
        ``||P||^2`` and ``<P, Q>``.
    delta : float, >= 0
        The halfspace's relaxation.

    Returns
    -------
    lower, upper : ndarray, shape (T,)
        Bounds of ``<X, H_t>`` over the ball cut by the halfspace (never looser than
        :func:`sphere_bounds`).
    """
    if delta > 0 and pp > 0:
        sh = delta * hp / pp
        lo = _linear_lower(hq + sh, hn, hp, r, pp, pq + delta) - sh
        hi = -_linear_lower(-hq - sh, hn, -hp, r, pp, pq + delta) - sh
        return lo, hi
    lo = _linear_lower(hq, hn, hp, r, pp, pq)
    hi = -_linear_lower(-hq, hn, -hp, r, pp, pq)
    return lo, hi


def decide(lo, hi, hq, hn, r, gamma) -> tuple[np.ndarray, np.ndarray]:
    """``(in L-hat, in R-hat)`` from bounds, with a relative rounding margin."""
    slack = RULE_SLACK * (np.abs(hq) + r * hn + 1.0)
    return hi < (1.0 - gamma) - slack, lo > 1.0 + slack


# ---------------------------------------------------------------------------
# SDLS rule (sphere + PSD), full matrices
# ---------------------------------------------------------------------------


def sdls_dual_value(Q: np.ndarray, H: np.ndarray, C: float, y: float) -> float:
    """``D_SDLS(y) = -||[Q + y H]_+||^2 + 2 C y + ||Q||^2``: a lower bound of
    ``min ||X - Q||^2 s.t. <X, H> = C, X PSD`` for every ``y`` (weak duality).

    Parameters
    ----------
    Q : ndarray, shape (d, d)
        The sphere's centre.
    H : ndarray, shape (d, d)
        A triplet's matrix.
    C : float
        The level of ``<X, H>``.
    y : float
        The dual variable.

    Returns
    -------
    float
        ``D_SDLS(y)``.
    """
    Zp, _ = proj_pm(Q + y * H)
    return float(-np.vdot(Zp, Zp) + 2.0 * C * y + np.vdot(Q, Q))


def _h_eigs(an2, bn2, ab):
    # Non-zero eigenvalues (e+ >= 0 >= e-) of a a^T - b b^T.
    tr = an2 - bn2
    disc = np.sqrt(np.maximum(tr * tr + 4.0 * np.maximum(an2 * bn2 - ab * ab, 0.0), 0.0))
    return 0.5 * (tr + disc), 0.5 * (tr - disc)


#: At most this many candidates per SDLS call (the most promising by the sphere-rule
#: value); each costs several ``d x d`` eigendecompositions.
SDLS_MAX_CANDIDATES = 1000


def sdls_screen(Q, Qm_norm, r2, Av, Bv, sign, C, hqp, hq_plus, e_pos, e_neg, psd_center,
                max_iter=30, chunk_elems=4_000_000, max_candidates=SDLS_MAX_CANDIDATES):
    """Which candidates the SDLS dual ascent certifies.

    For ``H' = sign (a a^T - b b^T)`` (rows of ``Av``, ``Bv``; ``<Q, H'> = hqp``,
    ``<Q_+, H'> = hq_plus``, eigenvalues ``e_pos >= 0 >= e_neg``) and target ``C`` (R2:
    ``sign=+1, C=1``; R1: ``sign=-1, C=-(1-gamma)``), a candidate with ``<Q_+, H'> > C``
    is certified when some ``y`` gives ``phi(y) = 2y(C - <Q, H'>) - y^2 ||H'||^2
    + ||[Q + y H']_-||^2 > r^2`` (``r2``; the SDLS dual of section 3.1.2 written with
    ``||[Z]_+||^2 = ||Z||^2 - ||[Z]_-||^2``). With a PSD centre ``Q + y H'`` has
    at most one negative eigenvalue, so only the minimum eigenpair enters
    ``phi`` and its derivative. ``phi`` is concave; its maximiser lies in
    ``[-u, 0]`` with ``u = 2 beta / e_-^2`` (``beta = <Q, H'> - C + e_+ ||Q_-||``,
    from ``||[Q + y H']_-|| <= ||Q_-|| + |y| e_+``), where the derivative changes
    sign; a safeguarded false-position search on the derivative (:func:`_sdls_search`)
    stops as soon as ``phi`` exceeds ``r^2`` (weak duality makes any ``y`` safe). Only
    the ``max_candidates`` candidates closest to passing the sphere rule are tried
    (skipping one is always safe: it just stays in the problem), in chunks of about
    ``chunk_elems`` matrix entries.
    """
    n = Av.shape[0]
    out = np.zeros(n, dtype=bool)
    if n == 0:
        return out
    d = Q.shape[0]
    qm2 = Qm_norm * Qm_norm
    hn2 = e_pos * e_pos + e_neg * e_neg
    beta = hqp - C + e_pos * Qm_norm
    ok = (hq_plus > C) & (e_neg < 0) & (hn2 > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        upper = qm2 + np.where(ok, beta * beta / np.where(ok, e_neg * e_neg, 1.0), 0.0)
    thresh = r2 * (1.0 + 1e-10) + 1e-300
    ok &= upper > thresh
    idx_all = np.nonzero(ok)[0]
    if idx_all.size > max_candidates:
        sphere_val = (hqp[idx_all] - C) ** 2 / hn2[idx_all]  # the sphere rule's value
        idx_all = idx_all[np.argsort(-sphere_val, kind="stable")[:max_candidates]]
    step = max(1, chunk_elems // max(d * d, 1))
    for s in range(0, idx_all.size, step):
        idx = idx_all[s:s + step]
        a, b = Av[idx], Bv[idx]
        Hs = sign * (a[:, :, None] * a[:, None, :] - b[:, :, None] * b[:, None, :])
        cand = (Hs, a, b, hqp[idx], hn2[idx])
        lo = -1.01 * 2.0 * beta[idx] / (e_neg[idx] ** 2)  # slope > 0 there
        out[idx] = _sdls_search(Q, sign, C, psd_center, cand, lo, hq_plus[idx], qm2, thresh,
                                max_iter)
    return out


def _sdls_phi(Q, sign, C, psd_center, cand, y, sel):
    """``phi`` of :func:`sdls_screen` and its derivative at ``y`` for the candidates
    ``sel`` of ``cand = (H', a, b, <Q, H'>, ||H'||^2)``."""
    Hs, a, b, hq, h2 = cand
    Z = Q[None, :, :] + y[:, None, None] * Hs[sel]
    w, V = np.linalg.eigh(Z)
    if psd_center:
        neg = np.minimum(w[:, 0], 0.0)
        v = V[:, :, 0]
        vhv = sign * (np.einsum("ij,ij->i", v, a[sel]) ** 2
                      - np.einsum("ij,ij->i", v, b[sel]) ** 2)
        negsq = neg * neg
        dneg = neg * vhv
    else:
        neg = np.minimum(w, 0.0)
        va = np.einsum("ijk,ij->ik", V, a[sel])
        vb = np.einsum("ijk,ij->ik", V, b[sel])
        negsq = np.sum(neg * neg, axis=1)
        dneg = np.sum(neg * sign * (va * va - vb * vb), axis=1)
    ph = 2.0 * y * (C - hq[sel]) - y * y * h2[sel] + negsq
    dph = 2.0 * (C - hq[sel]) - 2.0 * y * h2[sel] + 2.0 * dneg
    return ph, dph


def _sdls_search(Q, sign, C, psd_center, cand, lo, hq_plus, qm2, thresh, max_iter):
    """The safeguarded false-position (Illinois) search of :func:`sdls_screen` on
    ``[lo, 0]`` for the candidates ``cand`` (as :func:`_sdls_phi` takes them; ``phi(0) =
    ||Q_-||^2 = qm2``, slope ``2 (C - <Q_+, H'>)`` there): which reach ``phi > thresh``."""
    def phi(y, sel):
        return _sdls_phi(Q, sign, C, psd_center, cand, y, sel)

    hq_, h2 = cand[3], cand[4]
    m = hq_.size
    done = np.zeros(m, dtype=bool)
    hit = np.zeros(m, dtype=bool)
    hi = np.zeros(m)
    f_hi = 2.0 * (C - hq_plus)  # slope at y = 0 (< 0)
    ph_hi = np.full(m, qm2)
    # first the sphere-rule optimum y0, then the left bracket end
    y0 = (C - hq_) / h2
    alive = np.arange(m)
    ph, dph = phi(y0, alive)
    hit |= ph > thresh
    pos = dph > 0
    lo = np.where(pos, y0, lo)
    f_lo = np.where(pos, dph, np.nan)
    ph_lo = np.where(pos, ph, np.nan)
    hi = np.where(pos, hi, y0)
    f_hi = np.where(pos, f_hi, dph)
    ph_hi = np.where(pos, ph_hi, ph)
    need = np.nonzero(~hit & ~pos)[0]
    if need.size:
        ph2, dph2 = phi(lo[need], need)
        hit[need] |= ph2 > thresh
        f_lo[need] = dph2
        ph_lo[need] = ph2
    done |= hit
    t_lo, t_hi = f_lo.copy(), f_hi.copy()  # true slopes (Illinois halves f_lo/f_hi)
    side = np.zeros(m)  # Illinois bookkeeping: last endpoint moved (-1 lo, +1 hi)
    for _ in range(max_iter):
        # phi is concave: it lies below both end tangents, so their crossing bounds
        # its maximum; stop as soon as that bound cannot exceed r^2
        with np.errstate(divide="ignore", invalid="ignore"):
            yc = (ph_hi - ph_lo + t_lo * lo - t_hi * hi) / (t_lo - t_hi)
            upper = np.minimum(ph_lo + t_lo * (yc - lo), ph_hi + t_hi * (yc - hi))
        done |= np.isfinite(upper) & (upper <= thresh)
        alive = np.nonzero(~done)[0]
        if alive.size == 0:
            break
        l, h = lo[alive], hi[alive]
        fl, fh = f_lo[alive], f_hi[alive]
        with np.errstate(divide="ignore", invalid="ignore"):
            y = (l * fh - h * fl) / (fh - fl)
        bad = ~np.isfinite(y) | (y <= l) | (y >= h)
        y = np.where(bad, 0.5 * (l + h), y)
        ph, dph = phi(y, alive)
        hit[alive] |= ph > thresh
        move_lo = dph > 0
        a_lo = alive[move_lo]
        a_hi = alive[~move_lo]
        lo[a_lo] = y[move_lo]
        f_lo[a_lo] = t_lo[a_lo] = dph[move_lo]
        ph_lo[a_lo] = ph[move_lo]
        f_hi[a_lo] *= np.where(side[a_lo] == -1, 0.5, 1.0)
        side[a_lo] = -1
        hi[a_hi] = y[~move_lo]
        f_hi[a_hi] = t_hi[a_hi] = dph[~move_lo]
        ph_hi[a_hi] = ph[~move_lo]
        f_lo[a_hi] *= np.where(side[a_hi] == 1, 0.5, 1.0)
        side[a_hi] = 1
        width = hi[alive] - lo[alive]
        conv = width <= 1e-12 * np.abs(lo[alive]) + 1e-300
        done[alive] |= hit[alive] | conv
    return hit


# ---------------------------------------------------------------------------
# Range-based extension (section 4, Theorem 4.1)
# ---------------------------------------------------------------------------


def _solve_linear(a, b, lo, hi):
    # {lam in (lo, hi) : a lam > b} as (start, end) arrays (empty when start >= end).
    a = np.asarray(a, dtype=float)
    b = np.broadcast_to(np.asarray(b, dtype=float), a.shape)
    start = np.full(a.shape, float(lo))
    end = np.full(a.shape, float(hi))
    pos = a > 0
    neg = a < 0
    start[pos] = np.maximum(lo, b[pos] / a[pos])
    end[neg] = np.minimum(hi, b[neg] / a[neg])
    empty = ~pos & ~neg & ~(b < 0)
    start[empty] = np.inf
    end[empty] = -np.inf
    return start, end


def rrpb_ranges(h0, hn, m0n, lam0, eps, gamma):
    """Ranges of ``lam`` over which the RRPB sphere rule screens each triplet.

    ``h0 = <H_t, M0>``, ``hn = ||H_t||``, ``m0n = ||M0||``. Returns a dict with
    ``"R_below"``, ``"R_above"``, ``"L_below"``, ``"L_above"``: ``(start, end)``
    arrays; on ``lam <= lam0`` (``below``) the sets are ``(start, lam0]``, on
    ``lam >= lam0`` (``above``) they are ``[lam0, end)``. For R this is Theorem
    4.1: ``start = lam_a``, ``end = lam_b``.

    Parameters
    ----------
    h0, hn : ndarray, shape (T,)
        ``<H_t, M0>`` and ``||H_t||`` per triplet.
    m0n : float
        ``||M0||``.
    lam0 : float, > 0
        The reference's regularisation weight.
    eps : float, >= 0
        A bound of ``M0``'s distance to the optimum at ``lam0``.
    gamma : float, in [0, 1)
        The smoothing of the smoothed hinge loss.

    Returns
    -------
    dict of str to (ndarray, ndarray)
        The four ``(start, end)`` pairs described above (``start = inf`` when empty).
    """
    c = 1.0 - gamma
    mh = m0n * hn
    e2 = 2.0 * eps * hn
    out = {}
    # lam <= lam0: r = (lam0 - lam)/(2 lam) ||M0|| + lam0 eps / lam
    out["R_below"] = _solve_linear(h0 + mh - 2.0, lam0 * (mh - h0 + e2), 0.0, lam0)
    out["L_below"] = _solve_linear(2.0 * c - h0 + mh, lam0 * (h0 + mh + e2), 0.0, lam0)
    # lam >= lam0: r = (lam - lam0)/(2 lam) ||M0|| + eps
    out["R_above"] = _solve_linear(h0 - mh - e2 - 2.0, -lam0 * (h0 + mh), lam0, np.inf)
    out["L_above"] = _solve_linear(2.0 * c - h0 - mh - e2, lam0 * (h0 - mh), lam0, np.inf)
    return out


def orthant_bounds(S, pa, pb, q, r2):
    """Appendix B: exact bounds of ``<x, h_t>`` over ``{||x - q|| <= r, x >= 0}``.

    ``h_t = S[pa[t]] - S[pb[t]]``; ``pa`` and ``pb`` are checked to index rows of ``S``
    (the compiled loop reads ``S`` at them without bounds checks).
    """
    S = np.ascontiguousarray(S, dtype=float)
    pa = check_index_array(pa, "pa", S.shape[0])
    pb = check_index_array(pb, "pb", S.shape[0])
    if pa.shape != pb.shape:
        raise ValueError(f"pa and pb must have the same length, got {pa.shape} and {pb.shape}")
    if np.shape(q) != (S.shape[1],):
        raise ValueError(f"q must have shape ({S.shape[1]},), got {np.shape(q)}")
    lo = np.empty(pa.shape[0])
    hi = np.empty(pa.shape[0])
    if pa.shape[0]:
        _orthant_bounds(S, pa, pb, np.ascontiguousarray(q, dtype=float), float(r2), lo, hi)
    return lo, hi
