"""Projected gradient with the Barzilai-Borwein step and a non-monotone line search.

The optimiser of section 5 of Yoshida, Takeuchi & Karasuyama (*Safe triplet
screening for distance metric learning*), written once and generic in the
variable (an ndarray; blockwise vector operations as in :mod:`solvers.apg`):

    min_{x in C}  f(x),      x_{k+1} = proj_C(x_k - s_k grad f(x_k)),

with the paper's Barzilai-Borwein step

    s_{k+1} = 1/2 |<dx, dg> / <dg, dg> + <dx, dx> / <dx, dg>|     (when <dx, dg> > 0)

and the non-monotone safeguard of Grippo, Lampariello & Lucidi: the trial
point is accepted when

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

from .base import NumericalError

__all__ = ["PGD"]


class PGD:
    """Projected gradient with BB steps and a GLL non-monotone line search.

    Parameters
    ----------
    oracle : callable
        ``oracle(x) -> ev`` with ``ev.P`` (the value ``f(x)``) and ``ev.G`` (its
        gradient); any other attributes ride along (the caller's evaluation).
    project : callable
        ``project(z) -> (x, aux)``: the projection onto ``C`` and anything the
        caller wants to keep from it (kept as :attr:`aux`).
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
            dec = float(np.vdot(ev.G, x_new - x))
            if ev_new.P <= ref + self.sigma * dec + scale:
                break
            self.step_size *= 0.5
        if not math.isfinite(ev_new.P):
            raise NumericalError(f"PGD: non-finite objective at iteration {self.k} "
                                 f"(step {self.step_size:.3e})")
        s = x_new - x
        yv = ev_new.G - ev.G
        sy = float(np.vdot(s, yv))
        if sy > 0:
            yy = float(np.vdot(yv, yv))
            bb = 0.5 * abs(sy / yy + float(np.vdot(s, s)) / sy) if yy > 0 else self.step_size
            if math.isfinite(bb) and bb > 0:
                self.step_size = bb
        self.x, self.ev, self.aux = x_new, ev_new, aux
        self._hist.append(float(ev_new.P))
        return x_new
