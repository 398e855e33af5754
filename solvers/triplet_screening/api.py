"""Public solver functions: solve, lambda_max, objectives."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._blas import single_threaded_blas
from ..base import IncompatibleWarmStart
from ..validation import (
    check_bool,
    check_callback,
    check_choice,
    check_int,
)
from . import spheres as sph
from .loops import _run_solve
from .problem import TripletProblem
from .results import TripletResult
from .state import CHUNK, _Opts, _Ref
from .triplets import METHODS, PARAMS, _check_lam, _check_loss, _check_screening
from .tuning import DEFAULT, Tuning

# ---------------------------------------------------------------------------
# Public solvers
# ---------------------------------------------------------------------------


def _resolve_method(method: str, hinge: bool, active_set: bool) -> str:
    method = check_choice(method, "method", METHODS)
    if method == "auto":
        method = "dual" if hinge and not active_set else "pgd"
    if method == "dual" and active_set:
        raise ValueError("active_set=True needs method='pgd' (the active-set heuristic of the "
                         "paper runs on the primal projected gradient)")
    return method


def _options(*, loss: Any, gamma: Any, screening: Any, rule: Any, diagonal: Any,
             active_set: Any, refresh: Any, method: Any, dynamic: Any, backoff: Any,
             evaluation: Any, tol: Any, max_iter: Any, callback: Any = None,
             want_alpha: bool = True, compiled: Any = True, chunk: Any = CHUNK,
             tuning: Any = None) -> tuple[_Opts, str, float, bool]:
    """Validate the options :func:`solve` and :func:`.regpath.path` share, once.

    Returns
    -------
    opts : _Opts
        The solver's options (``callback``: :func:`solve`'s per-iteration one;
        ``want_alpha``: keep each solve's dual point and screened sets).
    loss, gamma, diagonal
        The problem's settings, validated (a :class:`TripletProblem` is built or
        checked from them).
    """
    v = PARAMS.validate(rule=rule, diagonal=diagonal, active_set=active_set, tol=tol,
                        max_iter=max_iter, backoff=backoff, dynamic=dynamic,
                        evaluation=evaluation, refresh=refresh)
    loss_n, gamma_v, hinge = _check_loss(loss, gamma)
    if tuning is None:
        tuning = DEFAULT
    if not isinstance(tuning, Tuning):
        raise TypeError(f"_tuning must be a Tuning (or None), got {type(tuning).__name__}")
    opts = _Opts(screening=_check_screening(screening), rule=v["rule"],
                 active_set=v["active_set"],
                 method=_resolve_method(method, hinge, v["active_set"]), tol=v["tol"],
                 max_iter=v["max_iter"], callback=check_callback(callback),
                 want_alpha=want_alpha, backoff=v["backoff"],
                 dynamic=v["dynamic"], evaluation=v["evaluation"],
                 refresh=v["refresh"], compiled=check_bool(compiled, "_compiled"),
                 chunk=check_int(chunk, "_chunk", low=1), tuning=tuning)
    return opts, loss_n, gamma_v, v["diagonal"]


def _make_problem(X, y, triplets_, k, loss, gamma, diagonal) -> TripletProblem:
    if isinstance(triplets_, TripletProblem):
        return triplets_
    return TripletProblem(X, y, triplets=triplets_, k=k, loss=loss, gamma=gamma,
                          diagonal=diagonal)


def solve(
    X: Any,
    y: Any,
    lam: float,
    *,
    triplets: Any = None,
    k: float = PARAMS.default("k"),
    loss: str = PARAMS.default("loss"),
    gamma: float = PARAMS.default("gamma"),
    screening: str | Sequence[str] | None = PARAMS.default("screening"),
    rule: str = PARAMS.default("rule"),
    diagonal: bool = PARAMS.default("diagonal"),
    active_set: bool = PARAMS.default("active_set"),
    refresh: str = PARAMS.default("refresh"),
    method: str = PARAMS.default("method"),
    dynamic: str = PARAMS.default("dynamic"),
    backoff: bool = PARAMS.default("backoff"),
    evaluation: str = PARAMS.default("evaluation"),
    tol: float = PARAMS.default("tol"),
    max_iter: int = PARAMS.default("max_iter"),
    init: TripletResult | None = None,
    callback=None,
    _compiled: bool = True,
    _chunk: int = CHUNK,
    _tuning: Tuning | None = None,
) -> TripletResult:
    r"""Learn a Mahalanobis metric by RTLM with safe triplet screening.

    Minimises ``sum_t loss(<M, H_t>) + lam/2 ||M||_F^2`` over PSD ``M`` (or a
    nonnegative diagonal), stopping when ``gap / max(1, |primal|) <= tol``.

    Parameters
    ----------
    X : array_like, shape (n, d)
    y : array_like, shape (n,)
        Class labels (at least two classes).
    lam : float, > 0
    triplets : array_like, shape (n_t, 3), or TripletProblem, optional
        Explicit triplets ``(i, j, l)`` (default :func:`triplets` ``(X, y, k)``); a
        prepared :class:`TripletProblem` skips the pair preprocessing.
    k : int or inf
        Neighbourhood size for the default triplets.
    loss : {"smoothed_hinge", "hinge"}
    gamma : float
        Smoothed-hinge parameter (> 0).
    screening : str, sequence of {"gb", "pgb", "dgb", "cdgb", "rrpb"} or None
        Spheres used for safe screening at iteration 0 and during the optimisation
        (``dynamic``). ``"rrpb"`` uses ``init`` (solved at another lambda) as its
        reference at iteration 0 and equals DGB afterwards (``lam1 = lam0``). ``None``:
        the naive optimisation.
    rule : {"sphere", "linear", "sdls"}
        Screening rule over each sphere: Eq. (4), the linear relaxation of the
        PSD cone (Theorem 3.1) or the PSD-constrained SDLS rule.
    diagonal : bool
        Diagonal metric (``M`` returned as its diagonal vector).
    active_set : bool
        The active-set baseline: gradient over triplets with positive loss only,
        refreshed (and certified) every 10 iterations. Combines with screening.
    refresh : {"every10", "converged"}
        With ``active_set``: when the working set is refreshed and the solve certified.
        ``"every10"``: every 10 iterations (Weinberger et al.'s schedule, as in the
        paper). ``"converged"``: also as soon as the working set's own problem (with the
        folded L-hat) meets ``tol`` at the KKT dual point (the paper's section 5.3), if
        that refresh costs fewer triplet visits than the steps left to the scheduled one.
    dynamic : {"adaptive", "every10"}
        When dynamic screening runs during the optimisation. ``"every10"``: every 10
        iterations (section 5 of the paper). ``"adaptive"``: whenever the duality-gap
        ball's radius ``sqrt(2 gap / lam)`` has fallen to half the radius of the last
        sphere that screened at this lambda (the path's RRPB sphere, or the previous
        round's). Both use the same safe spheres and rules.
    backoff : bool
        Skip a screening round when, from the rounds so far, it cannot save more
        loss-pass visits than it costs (dynamic screening: after two rounds in a row
        that did not pay); noted in ``result.notes``. ``False`` always screens.
    evaluation : {"triplets", "sorted"}
        The loss pass over all triplets (the naive optimisation, and a screened one
        before or without screening). ``"triplets"``: every triplet visited, as in the
        paper. ``"sorted"``: for triplets stored in anchor blocks (one anchor, every
        same-class ``j`` with one list of other-class ``l``, as :func:`triplets` builds
        them for ``k = inf``), the margins of anchor ``i`` are ``a_l - b_j`` with
        ``a_l = q_il``, ``b_j = q_ij``; with both sorted, each row's triplets at
        ``alpha = 1`` are a prefix summed in closed form and only those in the
        smoothed hinge's curved piece are visited, ``O((n_j + n_l) log)`` per anchor
        instead of ``O(n_j n_l)`` (the pairwise-ranking trick of Joachims, KDD 2006,
        and Chapelle & Keerthi, Inf. Retr. 2010). Same objective, gradient and
        certificate to rounding; screening rules, the active set and the triplets left
        after screening still visit each triplet. Other layouts: ``"triplets"`` (noted
        in ``result.notes``).
    method : {"auto", "pgd", "dual"}
        ``"pgd"``: primal projected gradient with the paper's BB step;
        ``"dual"``: accelerated projected gradient on the dual. ``"auto"`` picks
        ``"dual"`` for the hinge loss (non-smooth primal), ``"pgd"`` otherwise.
    tol : float
        Relative duality-gap tolerance.
    max_iter : int
    init : TripletResult, optional
        Warm start (same triplets and metric type); solved for the same loss at another
        lambda, it is RRPB's reference for path screening. With the same loss the solve
        starts at ``init.M`` with the data term's parts kept there (``sum alpha H``, the
        loss, ``sum alpha``, ``sum alpha^2``; lambda enters only through
        ``lam ||M||^2 / 2``), so its first evaluation needs no pass over the triplets.
        The dual method starts from ``init.alpha`` (its dual point over all triplets),
        not from the KKT map of ``init.M``.
    callback : callable, optional
        ``callback(state)`` per certified iteration; ``state.iterate`` holds ``M``
        and ``status`` (0 active, 1 L-hat, 2 R-hat, 3 outside the active set).
    _compiled, _chunk : optional
        Private. ``_compiled``: runs of iterations in one compiled call (``False``: the
        compiled steps return to Python after every iteration, to be certified and, with
        an active set, for the working set's own test: the reference the tests compare
        the compiled certificates with, bit for bit). ``_chunk``: most iterations per
        compiled call.
    _tuning : Tuning, optional
        Private: the cost model's weights (default :data:`.tuning.DEFAULT`); they decide
        which screening rounds and refreshes run, never what is certified. The fields
        that differ from the default are in ``result.params["_tuning"]``.

    Returns
    -------
    TripletResult

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import triplet_screening as ts
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((15, 3)); y = np.arange(15) % 3
    >>> lam = ts.lambda_max(X, y, k=3) / 10
    >>> res = ts.solve(X, y, lam, k=3, tol=1e-6)
    >>> res.stop_reason, res.M.shape
    ('converged', (3, 3))
    >>> bool(np.linalg.eigvalsh(res.M).min() >= -1e-10)  # a PSD metric
    True
    """
    lam = _check_lam(lam)
    opts, loss_n, gamma_v, diagonal = _options(
        loss=loss, gamma=gamma, screening=screening, rule=rule, diagonal=diagonal,
        active_set=active_set, refresh=refresh, method=method, dynamic=dynamic,
        backoff=backoff, evaluation=evaluation, tol=tol, max_iter=max_iter,
        callback=callback, compiled=_compiled,
        chunk=_chunk, tuning=_tuning)
    prob = _make_problem(X, y, triplets, k, loss_n, gamma_v, diagonal)
    if isinstance(triplets, TripletProblem) and (prob.loss != loss_n or prob.gamma != gamma_v
                                                 or prob.diagonal != diagonal):
        raise ValueError("triplets: the TripletProblem was built with another loss, gamma "
                         "or diagonal setting")
    ref = None
    step0 = None
    carry = None
    alpha0 = None
    if init is None:
        M0 = prob.data.zeros()
    else:
        if not isinstance(init, TripletResult):
            raise TypeError(f"init must be a previous TripletResult (or None), got "
                            f"{type(init).__name__}")
        if tuple(init.fingerprint) != prob.fingerprint():
            raise IncompatibleWarmStart(
                "init does not match this problem (other triplets, triplet order, data, "
                "dimension or metric type)")
        M0 = prob.check_metric(init.M, "init.M")
        p = init.params
        same_loss = p.get("loss") == prob.loss and p.get("gamma") == prob.gamma
        # the data term's parts at init.M (the first evaluation, without a pass)
        carry = getattr(init, "_carry", None) if same_loss else None
        if carry is None:
            M0 = sph.proj_pm(M0)[0]
        else:
            M0 = np.array(init.M)  # the solver's own PSD iterate, where carry was taken
        step0 = init.step * init.lam / lam if math.isfinite(init.step) else None
        if same_loss and init.lam != lam and np.isfinite(init.gap):
            ref = _Ref.of(init)
        if np.shape(init.alpha) == (prob.data.n_t,):
            alpha0 = np.asarray(init.alpha)  # where the dual method starts
    with single_threaded_blas():
        res, _ = _run_solve(prob, lam, M0, opts, ref, step0, carry=carry, alpha0=alpha0)
    return res


def lambda_max(X: Any, y: Any, *, triplets: Any = None, k: float = 10,
               loss: str = "smoothed_hinge", gamma: float = 0.05,
               diagonal: bool = False) -> float:
    """``lam_max = max_t <[sum_T H]_+, H_t> / (1 - gamma)``: for ``lam >= lam_max``
    every triplet is in L* and ``M* = [sum_T H]_+ / lam``.

    Parameters
    ----------
    X, y, triplets, k, loss, gamma, diagonal
        As in :func:`solve`.

    Returns
    -------
    float
        ``lam_max``: the start of a regularisation path.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import triplet_screening as ts
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((15, 3)); y = np.arange(15) % 3
    >>> lmax = ts.lambda_max(X, y, k=3)
    >>> bool(lmax > 0)
    True
    """
    return _make_problem(X, y, triplets, k, loss, gamma, diagonal).lambda_max()


def primal_objective(M: Any, X: Any, y: Any, lam: float, *, triplets: Any = None,
                     k: float = 10, loss: str = "smoothed_hinge", gamma: float = 0.05,
                     diagonal: bool = False) -> float:
    """``P_lam(M) = sum_t loss(<M, H_t>) + lam/2 ||M||_F^2`` (``M`` need not be PSD).

    Parameters
    ----------
    M : array_like, shape (d, d), or (d,) for a diagonal metric
        The metric.
    X, y, triplets, k, loss, gamma, diagonal
        As in :func:`solve`.
    lam : float, > 0
        The regularisation weight.

    Returns
    -------
    float
        ``P_lam(M)``.

    Examples
    --------
    >>> import numpy as np
    >>> from solvers import triplet_screening as ts
    >>> X = np.array([[0.0], [1.0], [3.0]]); y = np.array([0, 0, 1])
    >>> t = np.array([[0, 1, 2]])  # x_1 should be nearer x_0 than x_2 is
    >>> ts.primal_objective(np.zeros((1, 1)), X, y, 1.0, triplets=t, loss="hinge")
    1.0
    """
    prob = _make_problem(X, y, triplets, k, loss, gamma, diagonal)
    return prob.primal(M, lam)


def dual_objective(alpha: Any, X: Any, y: Any, lam: float, *, triplets: Any = None,
                   k: float = 10, loss: str = "smoothed_hinge", gamma: float = 0.05,
                   diagonal: bool = False) -> float:
    """``D_lam(alpha) = -gamma/2 ||alpha||^2 + 1^T alpha - ||[sum alpha H]_+||^2 / (2 lam)``.

    Parameters
    ----------
    alpha : array_like, shape (n_t,)
        Dual variables in ``[0, 1]``, one per triplet.
    X, y, triplets, k, loss, gamma, diagonal
        As in :func:`solve`.
    lam : float, > 0
        The regularisation weight.

    Returns
    -------
    float
        ``D_lam(alpha)``, a lower bound of ``min P_lam``.
    """
    prob = _make_problem(X, y, triplets, k, loss, gamma, diagonal)
    return prob.dual(alpha, lam)
