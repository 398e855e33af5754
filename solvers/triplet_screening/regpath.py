"""The regularisation path (section 5) with path, dynamic and range screening."""

from __future__ import annotations

import math
import time
from typing import Any

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
from .loops import _run_solve
from .pathscreen import PathScreen
from .results import PathResult, TripletResult
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
    """The path's grid ending at ``lam``: ``lam_max, ratio lam_max, ratio^2 lam_max, ...``
    while above ``lam`` (a point within a relative 1e-9 of ``lam`` is dropped), then
    ``lam`` itself; ``[lam]`` when ``lam >= lam_max``. For :func:`path`'s ``lambdas``
    (each point is the previous one times ``ratio``, as :func:`path` steps its own grid).

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
    _retest: bool = True,
    _workset: str = "incremental",
    _compiled: bool = True,
    _chunk: int = CHUNK,
    _tuning: Tuning | None = None,
) -> PathResult:
    r"""Regularisation path ``lam_t = ratio * lam_{t-1}`` from ``lam_max`` with screening.

    ``lam_0 = lam_max`` (every triplet in L*, exact optimum ``[sum H]_+ / lam_0``);
    each next lambda is warm-started from the previous solution, which is the
    RRPB reference for path screening (``eps = sqrt(2 gap / lam)``), followed by
    dynamic screening (``dynamic``, as in :func:`solve`). Its first evaluation is the
    previous lambda's last one at that solution (lambda enters the objective only
    through ``lam ||M||^2 / 2``), not a new pass. With ``backoff=True`` path screening
    runs at a lambda only when predicted to pay (``PathScreen.skip``; the
    others are noted in ``notes``). The path stops by the paper's rule
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
        one fused pass, which is faster on a 0.9-ratio path (see
        :mod:`.pathscreen`). Needs ``"rrpb"`` in ``screening`` and ``rule="sphere"``.
    compare : sequence of "sphere:rule" or (sphere, rule)
        Extra (sphere, rule) pairs whose screening rate at the start of each
        lambda is recorded (not used to screen; ``"rpb"`` treats the previous
        solution as exact, for the theoretical comparison of section 3.2.3).
    warm_start : {"previous", "secant"}
        Where each lambda after the first starts. ``"previous"`` (the paper's): the
        previous lambda's solution ``M_{t-1}``, whose last evaluation is the new
        lambda's first (no pass). ``"secant"``: the predictor step of path following
        (Allgower & Georg, *Numerical continuation methods*, 1990, ch. 2), the path
        extrapolated linearly in ``log lam`` and projected,
        ``[M_{t-1} + s (M_{t-1} - M_{t-2})]_+`` with ``s`` the ratio of the last two steps
        of ``log lam`` (``s = 1`` on the geometric grid: ``[2 M_{t-1} - M_{t-2}]_+``; the
        dual method: its dual start ``clip(alpha_{t-1} + s (alpha_{t-1} - alpha_{t-2}),
        0, 1)``); it costs one loss pass
        per lambda and saves iterations wherever the path bends slowly (measured: 1.8-3x
        fewer iterations on the bench's paths). The RRPB reference stays ``M_{t-1}``
        (certified by its gap), so screening is unchanged. The first two lambdas start
        as with ``"previous"``.
    termination : bool
        Apply the paper's termination rule.
    callback : callable, optional
        ``callback(t, lam, result)`` after each lambda; ``False`` stops the path.
    _retest, _workset, _compiled, _chunk, _tuning
        As in :func:`solve`. The options :func:`solve` and :func:`path` share are
        validated by the same code (``api._options``), once for every lambda;
        ``_retest``: path screening's re-test along the path.

    Returns
    -------
    PathResult
        With the last lambda's whole :class:`TripletResult` as ``final``.
    """
    opts, loss_n, gamma_v, diagonal = _options(
        loss=loss, gamma=gamma, screening=screening, rule=rule, diagonal=diagonal,
        active_set=active_set, refresh=refresh, method=method, dynamic=dynamic,
        backoff=backoff, evaluation=evaluation, tol=tol, max_iter=max_iter,
        want_alpha=False, retest=_retest, workset=_workset, compiled=_compiled,
        chunk=_chunk, tuning=_tuning)
    kinds, rule = opts.screening, opts.rule
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
    if range_screening and rule != "sphere":
        raise ValueError("range_screening=True works with rule='sphere' (Theorem 4.1)")
    grid = None
    if lambdas is not None:
        if lam_max is not None:
            raise ValueError("lam_max and lambdas: give one (lambdas starts the path)")
        grid = _check_grid(lambdas)
        n_lambdas = grid.size
    prob = _make_problem(X, y, triplets, k, loss_n, gamma_v, diagonal)
    t_start = time.perf_counter()
    lmax_true = prob.lambda_max()
    if grid is None and lam_max is None and not lmax_true > 0:
        raise ValueError("lam_max: the optimum is M = 0 for every lambda on this data "
                         "([sum_t H_t]_+ = 0); there is no path to compute")
    if grid is not None:
        lam0 = float(grid[0])
    else:
        lam0 = lmax_true if lam_max is None else check_scalar(lam_max, "lam_max", low=0.0)
    if lam_min is not None:
        lam_min = check_scalar(lam_min, "lam_min", low=0.0)
        if lam_min > lam0:
            first = "lambdas[0]" if grid is not None else (
                "lam_max" if lam_max is not None else "lambda_max")
            raise ValueError(f"lam_min={lam_min:g} is above the path's first lambda "
                             f"({first}={lam0:g}): the path would be empty")
    # RRPB with the sphere rule screens with state carried along the path: one fused pass
    # per lambda, or the range-based scan (Theorem 4.1) with range_screening=True
    ps = PathScreen(prob.data, prob.gamma, n_lambdas, incremental=range_screening,
                    evaluation=opts.evaluation, retest=opts.retest,
                    tuning=opts.tuning) if ("rrpb" in kinds and rule == "sphere") else None
    rows: dict[str, list] = {k_: [] for k_ in (
        "lambdas", "Ms", "primal", "dual", "gap", "loss", "n_iter", "time", "rate_path",
        "rate_final", "rate_range", "dynamic", "converged", "visits")}
    by_sphere: dict[str, list] = {k_: [] for k_ in kinds}
    cmp_rows: dict[str, list] = {f"{a}:{b}": [] for a, b in specs}
    prof: dict[str, float] = {"loss_pass": 0.0, "pair_forms": 0.0, "eig": 0.0,
                              "screening": 0.0, "loss_pass_visits": 0.0}
    notes: list[str] = []
    lam = lam0
    prev: TripletResult | None = None
    res: TripletResult | None = None
    alpha_prev: np.ndarray | None = None
    alpha_old: np.ndarray | None = None
    terminated = "n_lambdas" if grid is None else "lambdas"
    for t in range(n_lambdas):
        if lam_min is not None and lam < lam_min:
            terminated = "lam_min"
            break
        if prev is None:
            M0 = prob.solution_above_lambda_max(lam) if lam >= lmax_true else prob.data.zeros()
            ref, step0, carry, alpha0 = None, None, None, None
        else:
            carry, alpha0 = prev._carry, alpha_prev
            if warm_start != "secant" or len(rows["Ms"]) < 2:
                M0 = prev.M.copy()
            else:
                # the ratio of the last two steps of log lam (1 on the geometric grid)
                s = 1.0 if grid is None else (
                    math.log(rows["lambdas"][-1] / lam)
                    / math.log(rows["lambdas"][-2] / rows["lambdas"][-1]))
                M0 = sph.proj_pm(prev.M + s * (prev.M - rows["Ms"][-2]))[0]
                carry = None   # not the previous lambda's point: a pass evaluates it
                if alpha_prev is not None and alpha_old is not None:
                    alpha0 = np.clip(alpha_prev + s * (alpha_prev - alpha_old), 0.0, 1.0)
            ref = _Ref.of(prev)
            step0 = prev.step * prev.lam / lam
        with single_threaded_blas():  # ~1 ms per lambda
            res, ex = _run_solve(prob, lam, M0, opts, ref, step0, ps=ps,
                                 compare=specs if prev is not None else (),
                                 carry=carry, alpha0=alpha0)
        # the dual method's last iterates: the next start
        alpha_old, alpha_prev = alpha_prev, ex.get("alpha")
        rows["lambdas"].append(lam)
        for key, v in res.profile.items():
            prof[key] += v
        notes.extend(f"lam={lam:.4g}: {n}" for n in res.notes)
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
        lam = lam * ratio if grid is None else float(grid[min(t + 1, grid.size - 1)])
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
        terminated_by=terminated, total_time=time.perf_counter() - t_start, final=res,
        converged=np.asarray(rows["converged"], dtype=bool),
        profile={**prof, "triplets_visited": float(np.sum(rows["visits"]))}, notes=notes,
        params={"loss": prob.loss, "gamma": prob.gamma, "ratio": ratio,
                "grid": "geometric" if grid is None else "given",
                "range_screening": range_screening, "diagonal": prob.diagonal,
                "warm_start": warm_start, **opts.params(),
                "n_triplets": prob.n_triplets},
    )
