"""Accelerated proximal gradient (Nesterov / FISTA) with backtracking, written once.

This is Algorithm 1 of the convex ASO paper's appendix A (Beck & Teboulle's
FISTA with the doubling line search of its Eq. (37)) for

    min_Z  F(Z) = f(Z) + g(Z),

``f`` smooth (gradient Lipschitz), ``g`` convex with a cheap prox (or the
indicator of a convex set, whose prox is the projection). The variable may be
a single array or a tuple of arrays (e.g. ``(U, M)``); all vector operations
act blockwise.

One iteration from the search point ``S``:

    Z_hat = prox_{g / L}(S - grad f(S) / L),
    accept if f(Z_hat) <= f(S) + <grad f(S), Z_hat - S> + L/2 ||Z_hat - S||^2,
    else L <- backtrack * L and retry;
    t_next = (1 + sqrt(1 + 4 t^2)) / 2,  beta = (t - 1) / t_next,
    S_next = Z + beta (Z - Z_prev).

Traps handled here, once:

- the search point can leave the domain of ``f`` (e.g. ``eta I + M`` losing
  definiteness in cASO): ``f`` returns ``inf`` there and the engine restarts
  the momentum from the last feasible ``Z``;
- optional gradient-based adaptive restart (O'Donoghue & Candès);
- ``fixed_step=True`` keeps ``L`` constant (no line search), as S-FISTA does;
- ``shrink < 1`` lets the step grow back: ``L <- shrink * L`` before each line
  search (TFOCS, Becker, Candès & Grant 2011, does so with its "line search
  increase parameter", 0.9 by default); the doubling search then only ever finds a
  local ``L``. The momentum sequence here does not account for the changing
  ``L`` (accelerated schemes with a varying ``L`` adjust it), so no O(1/k^2)
  guarantee is claimed; the adaptive restart and the callers' duality-gap stops
  keep every run certified;
- ``box=(lo, hi)``: ``g`` is the indicator of a box and the variable one float
  array; the vector work of an iteration (search point; projected step with the
  line search's ``<grad f(S), Z - S>`` and ``||Z - S||^2``; the restart test) then
  runs in three compiled passes instead of about a dozen numpy operations, which
  dominate when the variable is long (the triplet dual: one entry per triplet).

The engine performs iterations; stopping is the caller's business (each model
stops on its own duality gap through :class:`solvers.base.Monitor`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from .base import NumericalError

__all__ = ["APG", "tree_add", "tree_dot", "tree_scale", "tree_sqnorm", "tree_sub"]

Tree = Any  # an ndarray or a tuple of ndarrays


def _is_tuple(x: Tree) -> bool:
    return isinstance(x, tuple)


def tree_add(x: Tree, y: Tree, alpha: float = 1.0) -> Tree:
    """``x + alpha * y`` blockwise."""
    if _is_tuple(x):
        return tuple(a + alpha * b for a, b in zip(x, y, strict=True))
    return x + alpha * y


def tree_sub(x: Tree, y: Tree) -> Tree:
    """``x - y`` blockwise."""
    return tree_add(x, y, -1.0)


def tree_scale(x: Tree, alpha: float) -> Tree:
    """``alpha * x`` blockwise."""
    if _is_tuple(x):
        return tuple(alpha * a for a in x)
    return alpha * x


def tree_dot(x: Tree, y: Tree) -> float:
    """Euclidean (Frobenius) inner product summed over blocks."""
    if _is_tuple(x):
        return float(sum(np.vdot(a, b) for a, b in zip(x, y, strict=True)))
    return float(np.vdot(x, y))


def tree_sqnorm(x: Tree) -> float:
    """Squared Frobenius norm summed over blocks."""
    return tree_dot(x, x)


@njit(cache=True)
def _extrapolate(x, x_prev, beta):  # pragma: no cover - compiled
    # S = x + beta (x - x_prev), as tree_add(x, tree_sub(x, x_prev), beta) rounds it
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + beta * (x[i] - x_prev[i])
    return out


@njit(cache=True)
def _box_step(S, g, step, lo, hi):  # pragma: no cover - compiled
    # Z = clip(S - step g, lo, hi) with <g, Z - S> and ||Z - S||^2, one pass
    Z = np.empty_like(S)
    gd = 0.0
    dd = 0.0
    for i in range(S.shape[0]):
        z = S[i] - step * g[i]
        z = lo if z < lo else (hi if z > hi else z)
        Z[i] = z
        d = z - S[i]
        gd += g[i] * d
        dd += d * d
    return Z, gd, dd


@njit(cache=True)
def _restart_product(S, Z, x):  # pragma: no cover - compiled
    # <S - Z, Z - x> (the adaptive restart's test), one pass
    s = 0.0
    for i in range(S.shape[0]):
        s += (S[i] - Z[i]) * (Z[i] - x[i])
    return s


class APG:
    """FISTA with backtracking on ``L`` and momentum restarts.

    Parameters
    ----------
    value_and_grad : callable
        ``value_and_grad(Z) -> (f(Z), grad f(Z))``. May return ``(inf, None)``
        outside the domain of ``f``.
    prox : callable or None
        ``prox(V, step) -> argmin_Z g(Z) + ||Z - V||^2 / (2 step)`` (None with
        ``box``).
    x0 : ndarray or tuple of ndarrays
        Starting point; it should be feasible (``prox(x0, .)`` = ``x0``).
    value : callable, optional
        ``value(Z) -> f(Z)`` (cheaper than ``value_and_grad`` during the line
        search). Defaults to the first output of ``value_and_grad``.
    L0 : float
        Initial Lipschitz estimate (``1 / L0`` is the first step size).
    backtrack : float
        Factor (> 1) multiplying ``L`` when the sufficient-decrease test fails.
    fixed_step : bool
        Keep ``L = L0`` throughout (no line search); ``L0`` must then be a
        true Lipschitz constant.
    adaptive_restart : bool
        Reset the momentum when ``<S - Z_new, Z_new - Z> > 0`` (the step
        opposes the momentum direction).
    max_backtracks : int
        Safety bound on line-search doublings per iteration.
    shrink : float
        In ``(0, 1]``: ``L`` is multiplied by it before each line search (1: ``L``
        never decreases, Beck & Teboulle's backtracking).
    box : (float, float), optional
        ``g`` is the indicator of ``[lo, hi]^n`` and ``x0`` a 1-D float array: the
        projection (:func:`solvers.prox.project_box`, compiled into the step) and the
        vector work of an iteration run in compiled passes (the same formulas; inner
        products summed in order rather than by BLAS). ``prox`` is then not used.

    Attributes
    ----------
    x : current iterate ``Z_k`` (feasible)
    L : current Lipschitz estimate
    beta : momentum coefficient used to form the latest search point
    n_backtracks : line-search doublings in the latest iteration
    n_restarts : total momentum restarts (domain exits and adaptive restarts)
    n_evals : total evaluations of ``f``
    fx : ``f`` at the current iterate as the line search evaluated it (``None``
        before the first step and with ``fixed_step``); saves callers that report
        ``f(Z_k)`` an evaluation per iteration
    """

    def __init__(
        self,
        value_and_grad: Callable[[Tree], tuple[float, Tree]],
        prox: Callable[[Tree, float], Tree] | None,
        x0: Tree,
        *,
        value: Callable[[Tree], float] | None = None,
        L0: float = 1.0,
        backtrack: float = 2.0,
        fixed_step: bool = False,
        adaptive_restart: bool = False,
        max_backtracks: int = 60,
        box: tuple[float, float] | None = None,
        shrink: float = 1.0,
    ) -> None:
        if not (L0 > 0 and math.isfinite(L0)):
            raise ValueError(f"L0 must be a positive finite number, got {L0!r}")
        if not backtrack > 1:
            raise ValueError(f"backtrack must be > 1, got {backtrack!r}")
        if not 0 < shrink <= 1:
            raise ValueError(f"shrink must lie in (0, 1], got {shrink!r}")
        if box is not None:
            lo, hi = float(box[0]), float(box[1])
            if not lo <= hi:
                raise ValueError(f"box must satisfy lo <= hi, got {box!r}")
            x0 = np.ascontiguousarray(x0, dtype=float)
            if x0.ndim != 1:
                raise ValueError(f"box needs a 1-D variable, got shape {x0.shape}")
            self._box: tuple[float, float] | None = (lo, hi)
        elif prox is None:
            raise ValueError("prox is required without box")
        else:
            self._box = None
        self._vg = value_and_grad
        self._value = value if value is not None else (lambda z: value_and_grad(z)[0])
        self._prox = prox
        self.x = x0
        self.x_prev = x0
        # t_cur = t_k of the coming search point, t_prev = t_{k-1} (t_1 = 1).
        self.t_prev = 1.0
        self.t_cur = 1.0
        self.L = float(L0)
        self.backtrack = float(backtrack)
        self.shrink = float(shrink)
        self.fixed_step = fixed_step
        self.adaptive_restart = adaptive_restart
        self.max_backtracks = int(max_backtracks)
        self.beta = 0.0
        self.n_backtracks = 0
        self.n_restarts = 0
        self.n_evals = 0
        self.k = 0
        self.fx: float | None = None

    def search_point(self) -> Tree:
        """Extrapolated point ``S = Z + beta (Z - Z_prev)``, ``beta = (t_{k-1} - 1) / t_k``."""
        self.beta = (self.t_prev - 1.0) / self.t_cur
        if self.beta == 0.0:
            return self.x
        if self._box is not None:
            return _extrapolate(self.x, self.x_prev, self.beta)
        return tree_add(self.x, tree_sub(self.x, self.x_prev), self.beta)

    def restart(self) -> None:
        """Drop the momentum: the next search point is the current iterate."""
        self.t_prev = self.t_cur = 1.0
        self.x_prev = self.x
        self.n_restarts += 1

    def step(self) -> Tree:
        """One accelerated iteration (with line search); returns the new iterate."""
        self.k += 1
        S = self.search_point()
        fS, gS = self._vg(S)
        self.n_evals += 1
        if not math.isfinite(fS) or gS is None:
            # Search point outside the domain of f: restart from the feasible Z.
            self.restart()
            self.beta = 0.0
            S = self.x
            fS, gS = self._vg(S)
            self.n_evals += 1
            if not math.isfinite(fS):
                raise NumericalError(
                    f"APG: objective not finite at the feasible iterate (iteration {self.k})"
                )
        self.n_backtracks = 0
        if not self.fixed_step:
            self.L *= self.shrink
        box = self._box
        while True:
            step = 1.0 / self.L
            if box is not None:
                Z, gD, DD = _box_step(S, gS, step, box[0], box[1])
            else:
                assert self._prox is not None  # required without a box (checked above)
                Z = self._prox(tree_add(S, gS, -step), step)
            if self.fixed_step:
                break
            if box is None:
                D = tree_sub(Z, S)
                gD, DD = tree_dot(gS, D), tree_sqnorm(D)
            fZ = self._value(Z)
            self.n_evals += 1
            bound = fS + gD + 0.5 * self.L * DD
            if math.isfinite(fZ) and fZ <= bound + 1e-12 * max(1.0, abs(fS)):
                break
            self.n_backtracks += 1
            if self.n_backtracks > self.max_backtracks:
                raise NumericalError(
                    f"APG: line search failed after {self.max_backtracks} doublings "
                    f"(iteration {self.k}, L={self.L:.3e})"
                )
            self.L *= self.backtrack
        restart = False
        if self.adaptive_restart and self.beta > 0.0:
            if box is not None:
                restart = _restart_product(S, Z, self.x) > 0.0
            else:
                restart = tree_dot(tree_sub(S, Z), tree_sub(Z, self.x)) > 0.0
        self.x_prev, self.x = self.x, Z
        self.fx = None if self.fixed_step else fZ
        if restart:
            self.t_prev = self.t_cur = 1.0
            self.n_restarts += 1
        else:
            self.t_prev = self.t_cur
            self.t_cur = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * self.t_cur * self.t_cur))
        return Z
