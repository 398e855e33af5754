"""The regularisation path (section 5) with path, dynamic and range screening."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from .._blas import single_threaded_blas
from ..validation import (
    check_bool,
    check_choice,
    check_int,
    check_scalar,
)
from . import spheres as sph
from .api import _make_problem, _options
from .loops import _run_solve, _Solved
from .pathscreen import PathScreen
from .problem import TripletProblem
from .results import PathResult
from .state import CHUNK, _Ref
from .triplets import PARAMS, RULES, SPHERES
from .tuning import Tuning

#: Where each lambda of :func:`path` after the first starts (see its ``warm_start``).
WARM_STARTS = ("previous", "secant")
#: ``lam_t / lam_{t-1}`` of the path's grid (:func:`path`, :func:`geometric_grid`).
RATIO = 0.9


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



def geometric_grid(lam_max: float, lam: float, ratio: float = RATIO) -> np.ndarray:
    """The path's grid from ``lam_max`` down to ``lam``, for :func:`path`'s ``lambdas``.

    ``lam_max, ratio lam_max, ratio^2 lam_max, ...`` while above ``lam`` (a point within
    a relative 1e-9 of ``lam`` is dropped), then ``lam`` itself; ``[lam]`` when
    ``lam >= lam_max``. Each point is the previous one times ``ratio``, as :func:`path`
    steps its own grid.

    Parameters
    ----------
    lam_max : float >= 0
        Start (usually :func:`lambda_max`).
    lam : float > 0
        End.
    ratio : float in (0, 1)

    Returns
    -------
    ndarray
        Strictly decreasing.
    """
    lam_max = check_scalar(lam_max, "lam_max", low=0.0, low_inclusive=True)
    lam = check_scalar(lam, "lam", low=0.0)
    ratio = check_scalar(ratio, "ratio", low=0.0, high=1.0, high_inclusive=False)
    grid = []
    v = lam_max
    while v > lam * (1.0 + 1e-9):
        grid.append(v)
        v *= ratio
    return np.array([*grid, lam])


def _check_grid(lambdas: Any) -> np.ndarray:
    """``lambdas`` as a float array: 1-D, nonempty, positive, finite, strictly decreasing."""
    try:
        g = np.asarray(lambdas, dtype=float)
    except (TypeError, ValueError):
        raise TypeError("lambdas must be a 1-D array of positive floats") from None
    if g.ndim != 1 or g.size == 0:
        raise ValueError(f"lambdas must be a nonempty 1-D array, got shape {g.shape}")
    if not (np.all(np.isfinite(g)) and np.all(g > 0)):
        raise ValueError("lambdas must be positive and finite")
    if np.any(np.diff(g) >= 0):
        raise ValueError("lambdas must be strictly decreasing (a path from large to small "
                         "lambda)")
    return g


def path(
    X: Any,
    y: Any,
    *,
    triplets: Any = None,
    k: float = 10,
    loss: str = "smoothed_hinge",
    gamma: float = 0.05,
    ratio: float = RATIO,
    n_lambdas: int = 100,
    lam_max: float | None = None,
    lam_min: float | None = None,
    lambdas: Any = None,
    screening: Any = ("rrpb", "pgb"),
    rule: str = "sphere",
    range_screening: bool = False,
    compare: Any = (),
    diagonal: bool = False,
    active_set: bool = False,
    refresh: str = PARAMS.default("refresh"),
    method: str = "auto",
    dynamic: str = PARAMS.default("dynamic"),
    backoff: bool = True,
    evaluation: str = PARAMS.default("evaluation"),
    warm_start: str = "previous",
    tol: float = 1e-6,
    max_iter: int = 5000,
    termination: bool = True,
    callback=None,
    _compiled: bool = True,
    _chunk: int = CHUNK,
    _tuning: Tuning | None = None,
) -> PathResult:
    r"""Regularisation path ``lam_t = ratio * lam_{t-1}`` from ``lam_max`` with screening.

    ``lam_0 = lam_max`` (every triplet in L*, exact optimum ``[sum H]_+ / lam_0``);
    each next lambda is warm-started (``warm_start``) from the previous solution, which
    is the RRPB reference for path screening (``eps = sqrt(2 gap / lam)``), followed by
    dynamic screening (``dynamic``, as in :func:`solve`). With ``backoff=True`` path
    screening runs at a lambda only when predicted to pay (``PathScreen.skip``; skips
    are noted in ``notes``). The path stops by the paper's rule
    ``(loss_{t-1} - loss_t)/loss_{t-1} * lam_{t-1}/(lam_{t-1} - lam_t) < 0.01``
    (``termination=True``), after ``n_lambdas`` values or below ``lam_min``.

    Parameters
    ----------
    X, y, triplets, k, loss, gamma, diagonal, active_set, refresh, method
        As in :func:`solve`.
    dynamic, backoff, evaluation, tol, max_iter
        As in :func:`solve`.
    ratio : float in (0, 1)
        ``lam_t / lam_{t-1}`` (0.9; the paper's fine path uses 0.99).
    n_lambdas : int
        Maximum number of lambdas (``lam_max`` included).
    lam_max, lam_min : float, optional
        Start (default :func:`lambda_max`) and lower limit of the path.
    lambdas : array-like of float, optional
        An explicit grid instead of ``lam_max * ratio**t``: positive, finite, strictly
        decreasing (e.g. :func:`geometric_grid`, which ends exactly at a given ``lam``,
        as :class:`solvers.estimators.SafeTripletMetricLearner` uses with ``path=True``).
        It replaces ``lam_max`` (an error to give both), ``ratio`` and ``n_lambdas``; a
        first lambda below :func:`lambda_max` starts from ``M = 0``.
    screening, rule
        Spheres and rule used to screen (``None``: the naive path).
    range_screening : bool
        Path screening by the range-based extension (Theorem 4.1, made incremental):
        a triplet screened on ``(lam_a, lam_ref]`` is not re-evaluated while the path
        stays in that range (a superset of the per-lambda RRPB rule). Default
        (``False``): RRPB with the sphere rule screens every triplet at each lambda in
        one fused pass (see :mod:`.pathscreen`). Needs ``"rrpb"`` in ``screening`` and
        ``rule="sphere"``.
    compare : sequence of "sphere:rule" or (sphere, rule)
        Extra (sphere, rule) pairs whose screening rate at the start of each
        lambda is recorded (not used to screen; ``"rpb"`` treats the previous
        solution as exact, for the theoretical comparison of section 3.2.3).
    warm_start : {"previous", "secant"}
        Where each lambda after the first starts. ``"previous"`` (the paper's): the
        previous lambda's solution ``M_{t-1}``, whose last evaluation is the new
        lambda's first (lambda enters the objective only through ``lam ||M||^2 / 2``,
        so no pass is needed). ``"secant"``: the predictor step of path following
        (Allgower & Georg, *Numerical continuation methods*, 1990, ch. 2), the path
        extrapolated linearly in ``log lam`` and projected,
        ``[M_{t-1} + s (M_{t-1} - M_{t-2})]_+`` with ``s`` the ratio of the last two steps
        of ``log lam`` (``s = 1`` on the geometric grid: ``[2 M_{t-1} - M_{t-2}]_+``; the
        dual method: its dual start ``clip(alpha_{t-1} + s (alpha_{t-1} - alpha_{t-2}),
        0, 1)``); it costs one loss pass per lambda. The RRPB reference stays
        ``M_{t-1}`` (certified by its gap), so screening is unchanged. The first two
        lambdas start as with ``"previous"``.
    termination : bool
        Apply the paper's termination rule.
    callback : callable, optional
        ``callback(t, lam, result)`` after each lambda; ``False`` stops the path.
    _compiled, _chunk, _tuning
        As in :func:`solve`.

    Returns
    -------
    PathResult
        With the last lambda's whole :class:`TripletResult` as ``final``.
    """
    opts, loss_n, gamma_v, diagonal = _options(
        loss=loss, gamma=gamma, screening=screening, rule=rule, diagonal=diagonal,
        active_set=active_set, refresh=refresh, method=method, dynamic=dynamic,
        backoff=backoff, evaluation=evaluation, tol=tol, max_iter=max_iter,
        want_alpha=False, compiled=_compiled,
        chunk=_chunk, tuning=_tuning)
    kinds = opts.screening
    range_screening = check_bool(range_screening, "range_screening")
    termination = check_bool(termination, "termination")
    warm_start = check_choice(warm_start, "warm_start", WARM_STARTS)
    ratio = check_scalar(ratio, "ratio", low=0.0, high=1.0, high_inclusive=False)
    n_lambdas = check_int(n_lambdas, "n_lambdas", low=1)
    specs = _parse_compare(compare)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable or None")
    if range_screening and "rrpb" not in kinds:
        raise ValueError("range_screening=True extends RRPB: include 'rrpb' in screening")
    if range_screening and opts.rule != "sphere":
        raise ValueError("range_screening=True works with rule='sphere' (Theorem 4.1)")
    prob = _make_problem(X, y, triplets, k, loss_n, gamma_v, diagonal)
    t_start = time.perf_counter()
    grid, lmax_true = _grid(prob, ratio, n_lambdas, lam_max, lam_min, lambdas)
    # RRPB with the sphere rule keeps its state along the path (fused pass or range scan)
    ps = PathScreen(prob.data, prob.gamma, len(grid.lams), incremental=range_screening,
                    evaluation=opts.evaluation, tuning=opts.tuning) \
        if ("rrpb" in kinds and opts.rule == "sphere") else None
    log = _PathLog(kinds, specs)
    terminated = grid.stop
    prev: _Solved | None = None
    alphas: list[np.ndarray | None] = [None, None]  # the dual method's last two iterates
    path_state: dict = {}  # what each lambda's solve leaves for the next (_Run)
    with single_threaded_blas():  # once per path (the callback runs inside too)
        for t, lam in enumerate(grid.lams):
            if lam == grid.cut:
                terminated = "lam_min"
                break
            start = _start(prob, lam, lmax_true, prev, log, alphas, warm_start, grid.given)
            res, ex = _run_solve(prob, lam, opts=opts, ps=ps, path_state=path_state,
                                 compare=specs if prev is not None else (), **start)
            alphas = [alphas[1], ex.get("alpha")]
            log.add(lam, res, ex)
            if callback is not None and callback(t, lam, res.result()) is False:
                terminated = "callback"
                break
            if termination and prev is not None and _paper_rule_stops(prev, res):
                terminated = "rule"
                break
            prev = res
    return log.result(prob, lmax_true, terminated, time.perf_counter() - t_start, params={
        "loss": prob.loss, "gamma": prob.gamma, "k": prob.k, "ratio": ratio,
        "grid": "given" if grid.given else "geometric", "range_screening": range_screening,
        "diagonal": prob.diagonal, "warm_start": warm_start, **opts.params(),
        "n_triplets": prob.n_triplets})


class _Grid(NamedTuple):
    """The lambdas a path may visit, in order; ``stop``: why it ends after the last one
    (``"n_lambdas"`` or ``"lambdas"``); ``cut``: the first one below ``lam_min``, where
    the path ends (``"lam_min"``), or None; ``given``: an explicit grid."""

    lams: list[float]
    stop: str
    cut: float | None
    given: bool


def _grid(prob: TripletProblem, ratio: float, n_lambdas: int, lam_max: Any, lam_min: Any,
          lambdas: Any) -> tuple[_Grid, float]:
    """:func:`path`'s grid, checked, and the problem's :func:`lambda_max`."""
    if lambdas is not None and lam_max is not None:
        raise ValueError("lam_max and lambdas: give one (lambdas starts the path)")
    given = _check_grid(lambdas) if lambdas is not None else None
    lmax_true = prob.lambda_max()
    if given is None and lam_max is None and not lmax_true > 0:
        raise ValueError("lam_max: the optimum is M = 0 for every lambda on this data "
                         "([sum_t H_t]_+ = 0); there is no path to compute")
    if given is not None:
        lam0 = float(given[0])
    else:
        lam0 = lmax_true if lam_max is None else check_scalar(lam_max, "lam_max", low=0.0)
    if lam_min is not None:
        lam_min = check_scalar(lam_min, "lam_min", low=0.0)
        if lam_min > lam0:
            first = "lambdas[0]" if given is not None else (
                "lam_max" if lam_max is not None else "lambda_max")
            raise ValueError(f"lam_min={lam_min:g} is above the path's first lambda "
                             f"({first}={lam0:g}): the path would be empty")
    if given is not None:
        lams = [float(v) for v in given]
    else:  # repeated products, not lam0 * ratio**t: the same values as geometric_grid
        lams = [lam0]
        while len(lams) < n_lambdas:
            lams.append(lams[-1] * ratio)
    cut = next((v for v in lams if lam_min is not None and v < lam_min), None)
    return _Grid(lams, "n_lambdas" if given is None else "lambdas", cut,
                 given is not None), lmax_true


def _start(prob: TripletProblem, lam: float, lmax_true: float, prev: _Solved | None,
           log: _PathLog, alphas: list, warm_start: str, given: bool) -> dict[str, Any]:
    """Where the solve at ``lam`` starts (:func:`.loops._run_solve`'s ``M0``, ``ref``,
    ``step0``, ``carry``, ``alpha0``): the exact solution above :func:`lambda_max` or 0 at
    the first lambda; then the previous solution (its last evaluation and dual iterate
    carried) or, with ``warm_start="secant"`` from the third lambda on, the secant
    predictor (:func:`path`)."""
    if prev is None:
        M0 = prob.solution_above_lambda_max(lam) if lam >= lmax_true else prob.data.zeros()
        return dict(M0=M0, ref=None, step0=None, carry=None, alpha0=None)
    alpha_old, alpha_prev = alphas
    carry, alpha0 = prev._carry, alpha_prev
    lams, Ms = log.rows["lambdas"], log.rows["Ms"]
    if warm_start != "secant" or len(Ms) < 2:
        M0 = prev.M.copy()
    else:
        # the ratio of the last two steps of log lam (1 on the geometric grid)
        s = math.log(lams[-1] / lam) / math.log(lams[-2] / lams[-1]) if given else 1.0
        M0 = sph.proj_pm(prev.M + s * (prev.M - Ms[-2]))[0]
        carry = None   # not the previous lambda's point: a pass evaluates it
        if alpha_prev is not None and alpha_old is not None:
            alpha0 = np.clip(alpha_prev + s * (alpha_prev - alpha_old), 0.0, 1.0)
    return dict(M0=M0, ref=_Ref.of(prev), step0=prev.step * prev.lam / lam, carry=carry,
                alpha0=alpha0)


def _paper_rule_stops(prev: _Solved, res: _Solved) -> bool:
    """The paper's termination rule between two consecutive lambdas (see :func:`path`),
    or no loss left."""
    l0, l1 = prev.loss_value, res.loss_value
    return l0 <= 0 or (l0 - l1) / l0 * prev.lam / (prev.lam - res.lam) < 0.01


class _PathLog:
    """The per-lambda rows of a :class:`PathResult`, filled one solve at a time."""

    FIELDS = ("lambdas", "Ms", "primal", "dual", "gap", "loss", "n_iter", "time",
              "rate_path", "rate_final", "rate_range", "dynamic", "converged", "visits")

    def __init__(self, kinds: Sequence[str], specs: Sequence[tuple[str, str]]) -> None:
        self.rows: dict[str, list] = {k: [] for k in self.FIELDS}
        self.by_sphere: dict[str, list] = {k: [] for k in kinds}
        self.compare: dict[str, list] = {f"{a}:{b}": [] for a, b in specs}
        self.prof: dict[str, float] = {"loss_pass": 0.0, "pair_forms": 0.0, "eig": 0.0,
                                       "screening": 0.0, "loss_pass_visits": 0.0}
        self.notes: list[str] = []
        self.final: _Solved | None = None

    def add(self, lam: float, res: _Solved, ex: dict) -> None:
        """The solve at ``lam`` (``ex``: :func:`.loops._run_solve`'s extras)."""
        self.final = res
        for key, seconds in res.profile.items():
            self.prof[key] += seconds
        self.notes.extend(f"lam={lam:.4g}: {n}" for n in res.notes)
        for key, v in (("lambdas", lam), ("Ms", np.array(res.M)), ("primal", res.primal),
                       ("dual", res.dual), ("gap", res.gap), ("loss", res.loss_value),
                       ("n_iter", res.n_iter), ("time", res.time),
                       ("rate_path", ex["rate_path"]), ("rate_final", ex["rate_final"]),
                       ("rate_range", ex["rate_range"]), ("dynamic", ex["dynamic"]),
                       ("converged", res.converged), ("visits", res.triplet_visits)):
            self.rows[key].append(v)
        for kind, col in self.by_sphere.items():
            col.append(ex["by_sphere"].get(kind, 0.0))
        for key, col in self.compare.items():
            col.append(ex["compare"].get(key, float("nan")))

    def result(self, prob: TripletProblem, lam_max: float, terminated: str, total: float,
               params: dict) -> PathResult:
        """The :class:`PathResult` of the rows so far."""
        rows = self.rows
        dyn = rows["dynamic"]
        rates = np.full((len(dyn), max([len(d) for d in dyn] + [1])), np.nan)
        for i, d in enumerate(dyn):
            rates[i, : len(d)] = d
        arr = {k: np.asarray(rows[k]) for k in (
            "lambdas", "Ms", "primal", "dual", "gap", "loss", "time", "rate_path",
            "rate_final", "rate_range")}
        return PathResult(
            **arr, n_iter=np.asarray(rows["n_iter"], dtype=int),
            rate_by_sphere={k: np.asarray(v) for k, v in self.by_sphere.items()},
            compare_rates={k: np.asarray(v) for k, v in self.compare.items()},
            dynamic_rates=rates, triplet_visits=np.asarray(rows["visits"], dtype=np.int64),
            n_triplets=prob.n_triplets, lam_max=lam_max, terminated_by=terminated,
            total_time=total, final=None if self.final is None else self.final.result(),
            converged=np.asarray(rows["converged"], dtype=bool),
            profile={**self.prof, "triplets_visited": float(np.sum(rows["visits"]))},
            notes=tuple(self.notes), params=params)
