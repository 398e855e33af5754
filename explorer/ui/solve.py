"""Solving for a page: the live convergence panel and warm starts."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import streamlit as st

from solvers.base import IncompatibleWarmStart

from .. import figures
from ..registry import ModelEntry, Problem
from .state import page_state

__all__ = ["LivePanel", "solve_with_warm_start"]

#: a solve shorter than this shows only its final figure (one chart draw per rerun)
_LIVE_AFTER = 0.4
#: seconds between live chart refreshes of a longer solve
_LIVE_EVERY = 0.5


class LivePanel:
    """A placeholder that redraws the convergence figure while a long solve runs."""

    def __init__(self, gap_label: str = "duality gap", reference: float | None = None,
                 x: str = "both"):
        self.box = st.empty()
        self.gap_label = gap_label
        self.x = x
        self.reference = reference
        self.rows: dict[str, list[float]] = {k: [] for k in
                                             ("iteration", "time", "primal", "dual", "gap")}
        self._t0 = time.perf_counter()
        self._last = -math.inf
        self.status = None

    def callback(self, state) -> None:
        for k in self.rows:
            self.rows[k].append(getattr(state, k))
        now = time.perf_counter()
        if now - self._t0 >= _LIVE_AFTER and now - self._last >= _LIVE_EVERY:
            self._last = now
            h = SimpleNamespace(**{k: np.asarray(v) for k, v in self.rows.items()})
            fig = figures.convergence_figure(h, gap_label=self.gap_label, x=self.x,
                                             title=f"solving … iteration {state.iteration}, "
                                                   f"relative gap {state.rel_gap:.2e}")
            self.box.plotly_chart(fig, width="stretch")

    def final(self, history: Any, reference: float | None = None, title: str = "") -> None:
        fig = figures.convergence_figure(history, gap_label=self.gap_label, x=self.x,
                                         reference=reference, title=title)
        self.box.plotly_chart(fig, width="stretch")


def solve_with_warm_start(entry: ModelEntry, problem: Problem, c: Any,
                          callback: Callable | None = None) -> tuple[Any, bool]:
    """Solve, warm-started from the last result on the same problem if there is one.

    A previous result that does not fit (another method's state, other shapes) makes
    the solver raise :class:`solvers.base.IncompatibleWarmStart`; the page then solves
    from a cold start (the badge says so). When the background warm-up found a kernel
    that fails its known-answer check, this raises ``RuntimeError`` with that finding
    (the page shows it as a message) instead of solving.
    """
    from solvers import kernel_checks

    bad = kernel_checks.known_failures()
    if bad:  # the background warm-up's known-answer check failed: no solve from bad code
        raise RuntimeError("compiled kernels failed their known-answer check ("
                           + ", ".join(bad) + "); restart the app after "
                           "`dualscope warmup --clear`")
    last = page_state(entry.name).last
    init = None
    if last is not None and last.problem_key == c.problem_key(entry):
        init = last.result
    try:
        res = entry.solve(problem, tol=c.tol, max_iter=c.max_iter, init=init,
                          callback=callback, **c.params)
    except IncompatibleWarmStart:
        if init is None:
            raise
        init = None
        res = entry.solve(problem, tol=c.tol, max_iter=c.max_iter, init=None,
                          callback=callback, **c.params)
    return res, init is not None
