"""The Mehrotra step of the hinge-loss primal QP, shared by the interior-point methods.

``min 1/2 ||W||^2 + C 1^T xi`` subject to ``A W + xi - s = 1``, ``xi, s >= 0``, with
multipliers ``lambda`` (of ``A W + xi >= 1``) and ``mu`` (of ``xi >= 0``) (Nocedal &
Wright, *Numerical Optimization*, 2nd ed., 2006, Sec. 16.6, Alg. 16.4 with Mehrotra's
corrector). ``W`` is a ``d x k`` array (``k = 1`` for a binary SVM) and the per-constraint
arrays are ``n x m``; the caller supplies the products with ``A`` and the Cholesky
factor of the normal matrix ``I + A^T D A``. Used by :mod:`solvers.wwsvm`
(``method="ipm"``) and :mod:`solvers.mtmkl` (``method="ipm"``'s W-step).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import scipy.linalg as sla

#: Fraction of the step to the boundary of the positive orthant.
IPM_STEP = 0.99


def ipm_direction(state: tuple, rc1: np.ndarray, rc2: np.ndarray,
                  A_mul: Callable[[np.ndarray], tuple], AT_mul: Callable[[np.ndarray], np.ndarray]
                  ) -> tuple[np.ndarray, ...]:
    """Newton direction of the KKT system for complementarity targets ``rc1``
    (of ``lambda s``) and ``rc2`` (of ``mu xi``).

    ``state = (xi, s, lam, mu, r_w, r_xi, r_s, D, L)`` with the residuals ``r_w = W -
    A^T lam``, ``r_xi = C - lam - mu``, ``r_s = A W + xi - 1 - s``, ``D = 1 / (xi / mu + s /
    lam)`` and ``L`` the ``sla.cho_factor`` of ``I + A^T D A``. Eliminating ``ds``,
    ``dmu``, ``dxi`` and ``dlam`` leaves ``(I + A^T D A) dw = -r_w + A^T (q + D h)``.
    ``A_mul(W)`` returns ``(A W, anything)``. Returns ``(dW, dxi, dlam, dmu, ds)``.
    """
    xi, s_, lam, mu, r_w, r_xi, r_s, Dm, L = state
    d, k = r_w.shape
    q = r_xi - rc2 / xi
    E = 1.0 + (s_ / lam) * (mu / xi)
    h = -r_s + rc1 / lam - (s_ / lam) * q
    rhs = -r_w + AT_mul(q + Dm * h)
    dW = sla.cho_solve(L, rhs.T.reshape(-1), check_finite=False).reshape(k, d).T
    dxi = (h - A_mul(dW)[0]) / E
    dlam = q + (mu / xi) * dxi
    dmu = r_xi - dlam
    ds = (rc1 - s_ * dlam) / lam
    return dW, dxi, dlam, dmu, ds


def ipm_max_step(pairs: Iterable[tuple[np.ndarray, np.ndarray]]) -> float:
    """Largest ``t <= 1`` keeping every ``x + t dx`` non-negative."""
    t = 1.0
    for x, dx in pairs:
        neg = dx < 0
        if np.any(neg):
            t = min(t, float(np.min(-x[neg] / dx[neg])))
    return t


def mehrotra_step(state: tuple, A_mul: Callable[[np.ndarray], tuple],
                  AT_mul: Callable[[np.ndarray], np.ndarray]) -> tuple:
    """Mehrotra's predictor-corrector step from ``state`` (as :func:`ipm_direction`
    takes it): the affine direction, the centring ``sigma = (tau_aff / tau)^3`` with
    ``tau`` the mean complementarity of ``(lambda s, mu xi)``, the corrected direction,
    and the step ``t = min(1, IPM_STEP * t_max)`` to the boundary of the positive
    orthant. Returns ``(dW, dxi, dlam, dmu, ds, t)``."""
    xi, s_, lam, mu = state[:4]
    n2 = 2 * lam.size
    tau = (float(np.sum(lam * s_)) + float(np.sum(mu * xi))) / n2
    dW, dxi, dlam, dmu, ds = ipm_direction(state, -lam * s_, -mu * xi, A_mul, AT_mul)
    t_aff = ipm_max_step(((xi, dxi), (s_, ds), (lam, dlam), (mu, dmu)))
    tau_aff = (float(np.sum((lam + t_aff * dlam) * (s_ + t_aff * ds)))
               + float(np.sum((mu + t_aff * dmu) * (xi + t_aff * dxi)))) / n2
    sigma = (tau_aff / tau) ** 3
    dW, dxi, dlam, dmu, ds = ipm_direction(state, sigma * tau - lam * s_ - dlam * ds,
                                           sigma * tau - mu * xi - dmu * dxi, A_mul, AT_mul)
    t = min(1.0, IPM_STEP * ipm_max_step(((xi, dxi), (s_, ds), (lam, dlam), (mu, dmu))))
    return dW, dxi, dlam, dmu, ds, t
