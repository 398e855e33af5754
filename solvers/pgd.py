"""Projected gradient with the Barzilai-Borwein step and a non-monotone line search.

The optimiser of section 5 of Yoshida, Takeuchi & Karasuyama (*Safe triplet
screening for distance metric learning*), written once and generic in the
variable (an ndarray; blockwise vector operations as in :mod:`solvers.apg`)::

    min_{x in C}  f(x),      x_{k+1} = proj_C(x_k - s_k grad f(x_k)),

with the paper's Barzilai-Borwein step::

    s_{k+1} = 1/2 |<dx, dg> / <dg, dg> + <dx, dx> / <dx, dg>|     (when <dx, dg> > 0)

and the non-monotone safeguard of Grippo, Lampariello & Lucidi: the trial
point is accepted when::

    f(x_{k+1}) <= max_{last `memory` values} f + sigma <grad f(x_k), x_{k+1} - x_k>,

otherwise the step is halved. The engine performs iterations; stopping is the
caller's business (it certifies with its own duality gap). When the objective
itself changes (e.g. after screening removes terms, or an active set is
refreshed) the caller re-evaluates and calls :meth:`PGD.reset`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from .base import NumericalError

__all__ = ["PGD"]

# The step's arithmetic, written once and compiled: :class:`PGD` calls these, and so
# does a model's compiled loop that runs many iterations without Python (the triplet
# model's :func:`solvers.triplet_screening.burst._gll_step`), so both make the same
# decisions bit for bit.


@njit(cache=True)
def step_products(x: np.ndarray, x_new: np.ndarray, g: np.ndarray,
                  g_new: np.ndarray) -> tuple[float, float, float, float]:  # pragma: no cover
    """``(<g, s>, <s, y>, <y, y>, <s, s>)`` with ``s = x_new - x``, ``y = g_new - g``
    (C-contiguous float arrays, flattened): the line search's decrease and the
    Barzilai-Borwein products in one pass."""
    xf, xn, gf, gn = x.reshape(-1), x_new.reshape(-1), g.reshape(-1), g_new.reshape(-1)
    dec = 0.0
    sy = 0.0
    yy = 0.0
    ss = 0.0
    for k in range(xf.shape[0]):
        sk = xn[k] - xf[k]
        yk = gn[k] - gf[k]
        dec += gf[k] * sk
        sy += sk * yk
        yy += yk * yk
        ss += sk * sk
    return dec, sy, yy, ss


@njit(cache=True)
def accepts(P_new: float, ref: float, sigma: float, dec: float,
            scale: float) -> bool:  # pragma: no cover - compiled
    """The GLL test: ``P_new <= ref + sigma <grad, x_new - x> + scale``."""
    return P_new <= ref + sigma * dec + scale


@njit(cache=True)
def bb_step(sy: float, yy: float, ss: float, step: float) -> float:  # pragma: no cover
    """The paper's Barzilai-Borwein step ``1/2 |sy/yy + ss/sy|`` when ``sy > 0`` and it
    is finite and positive, else ``step`` unchanged."""
    if sy > 0:
        bb = 0.5 * abs(sy / yy + ss / sy) if yy > 0 else step
        if np.isfinite(bb) and bb > 0:
            return bb
    return step


def nonfinite(k: int, step: float) -> NumericalError:
    """The error of a step that reached a non-finite objective (:meth:`PGD.step`, and a
    model's compiled loop that runs the same steps)."""
    return NumericalError(f"PGD: non-finite objective at iteration {k} (step {step:.3e})")


def _contiguous(a: np.ndarray) -> np.ndarray:
    return a if (a.dtype == np.float64 and a.flags.c_contiguous) else \
        np.ascontiguousarray(a, dtype=np.float64)


class PGD:
    """Projected gradient with BB steps and a GLL non-monotone line search.

    Parameters
    ----------
    oracle : callable
        ``oracle(x) -> ev`` with ``ev.P`` (the value ``f(x)``) and ``ev.G`` (its
        gradient); any other attributes ride along (the caller's evaluation).
    project : callable
        ``project(z) -> (x, aux)``: the projection onto ``C`` and anything the
        caller wants to keep from it (kept as ``aux``).
    x0 : ndarray
        Feasible start.
    ev0 : object
        ``oracle(x0)`` (the caller has usually computed it already).
    step : float
        First step size (> 0).
    memory : int
        Length of the non-monotone window (1: monotone Armijo).
    sigma : float
        Sufficient-decrease constant.
    max_halvings : int
        Safety bound on line-search halvings per iteration.

    Attributes
    ----------
    x, ev : current iterate and its evaluation
    step : current step size
    aux : the projection's extra output at the current iterate (None at ``x0``)
    n_evals : total oracle calls
    """

    def __init__(self, oracle: Callable[[np.ndarray], Any],
                 project: Callable[[np.ndarray], tuple[np.ndarray, Any]], x0: np.ndarray,
                 ev0: Any, *, step: float, memory: int = 10, sigma: float = 1e-4,
                 max_halvings: int = 60) -> None:
        if not (step > 0 and math.isfinite(step)):
            raise ValueError(f"step must be a positive finite number, got {step!r}")
        self._oracle = oracle
        self._project = project
        self.x = x0
        self.ev = ev0
        self.step_size = float(step)
        self.aux = None
        self.sigma = float(sigma)
        self.max_halvings = int(max_halvings)
        self._hist: deque[float] = deque([float(ev0.P)], maxlen=int(memory))
        self.n_evals = 0
        self.k = 0

    def reset(self, ev: Any) -> None:
        """The objective changed at the current iterate: new evaluation, fresh window."""
        self.ev = ev
        self._hist.clear()
        self._hist.append(float(ev.P))

    def step(self) -> np.ndarray:
        """One projected-gradient iteration; returns the new iterate."""
        self.k += 1
        x, ev = self.x, self.ev
        ref = max(self._hist)
        scale = 1e-12 * max(1.0, abs(ev.P))
        for _ in range(self.max_halvings):
            x_new, aux = self._project(x - self.step_size * ev.G)
            ev_new = self._oracle(x_new)
            self.n_evals += 1
            dec, sy, yy, ss = step_products(_contiguous(x), _contiguous(x_new),
                                            _contiguous(ev.G), _contiguous(ev_new.G))
            if accepts(float(ev_new.P), ref, self.sigma, dec, scale):
                break
            self.step_size *= 0.5
        if not math.isfinite(ev_new.P):
            raise nonfinite(self.k, self.step_size)
        self.step_size = float(bb_step(sy, yy, ss, self.step_size))
        self.x, self.ev, self.aux = x_new, ev_new, aux
        self._hist.append(float(ev_new.P))
        return x_new
