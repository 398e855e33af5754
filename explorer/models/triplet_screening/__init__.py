"""Safe triplet screening for distance metric learning (RTLM, Yoshida et al.).

Size maxima keep a page solve within about 30 s and 2 GB: synthetic n <= 600 with
k <= 30 (k = 0, all triplets, is refused above the solver's MAX_TRIPLETS), digits
k <= 20 (720k triplets).
"""

from __future__ import annotations

import numpy as np

from solvers.params import ParamSpecs

from ...registry import Dataset, ModelEntry, Param, Problem, ui_param
from . import data


def _specs() -> ParamSpecs:
    from solvers import triplet_screening

    return triplet_screening.PARAMS


def _presets() -> tuple[str, ...]:
    from solvers import triplet_screening

    return triplet_screening.SCREENING_PRESETS


#: Screening choices offered by the CLI and the page ("+" joins spheres).
SCREENINGS = _presets()
#: Prepared problems kept (pair forms are the expensive part), bounded by their memory.
CACHE_BYTES = 1_000_000_000

_cache: dict = {}


def _nbytes(prob) -> int:
    d = prob.data
    return int(sum(a.nbytes for a in (d.T, d.pa, d.pb, d.hn, d.F, d.sq)
                   if isinstance(a, np.ndarray)) + (d.ab.nbytes if d.ab is not None else 0))


def _problem(problem: Problem, loss: str, gamma: float, diagonal: bool):
    """The prepared TripletProblem of a dataset instance (pair form built once)."""
    from solvers.triplet_screening import TripletProblem

    T = problem.data["triplets"]
    key = (id(T), T.shape, loss, float(gamma), bool(diagonal))
    hit = _cache.get(key)
    if hit is not None and hit[0] is T:  # the page's dataset cache returns the same object
        _cache[key] = _cache.pop(key)  # most recently used last
        return hit[1]
    prob = TripletProblem(problem.data["X"], problem.data["y"], triplets=T, loss=loss,
                          gamma=gamma, diagonal=diagonal)
    size = _nbytes(prob)
    while _cache and sum(v[2] for v in _cache.values()) + size > CACHE_BYTES:
        _cache.pop(next(iter(_cache)))  # least recently used first
    if size <= CACHE_BYTES:
        _cache[key] = (T, prob, size)
    return prob


def _lam(prob, lam_rel: float) -> float:
    """``lam = lam_rel * lam_max``, explained when ``lam_max = 0``."""
    lmax = prob.lambda_max()
    if not lmax > 0:
        raise ValueError(
            "nothing to learn on this dataset: lambda_max = 0, the optimal metric is M = 0 "
            "for every lambda. Summed over the triplets, the other-class neighbours are "
            "nowhere farther than the same-class ones ([sum_t H_t]_+ = 0), which happens "
            "when the classes overlap (e.g. many classes in few informative directions). "
            "Use fewer classes, more informative directions, a smaller spread or more "
            "points per class.")
    return float(lam_rel) * lmax


def prepared(problem: Problem, loss: str = "smoothed_hinge", gamma: float = 0.05,
             diagonal: bool = False):
    """The :class:`~solvers.triplet_screening.TripletProblem` of a dataset instance (cached)."""
    return _problem(problem, loss, gamma, diagonal)


def lam_from(problem: Problem, lam_rel: float, loss: str = "smoothed_hinge",
             gamma: float = 0.05, diagonal: bool = False) -> float:
    """``lam = lam_rel * lam_max`` for this dataset."""
    return _lam(_problem(problem, loss, gamma, diagonal), lam_rel)


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           lam_rel: float = 0.01, loss: str = _specs().default("loss"),
           gamma: float = _specs().default("gamma"),
           screening: str = _specs().default("screening"), rule: str = _specs().default("rule"),
           diagonal: bool = _specs().default("diagonal"),
           active_set: bool = _specs().default("active_set"),
           refresh: str = _specs().default("refresh"),
           method: str = _specs().default("method"),
           dynamic: str = _specs().default("dynamic"),
           backoff: bool = _specs().default("backoff"),
           evaluation: str = _specs().default("evaluation")):
    from solvers import triplet_screening as ts

    prob = _problem(problem, loss, gamma, diagonal)
    lam = _lam(prob, lam_rel)
    return ts.solve(problem.data["X"], problem.data["y"], lam, triplets=prob, loss=loss,
                    gamma=gamma, screening=None if screening == "none" else screening,
                    rule=rule, diagonal=diagonal, active_set=active_set, refresh=refresh,
                    method=method,
                    dynamic=dynamic, backoff=backoff, evaluation=evaluation, tol=tol,
                    max_iter=max_iter, init=init,
                    callback=callback)


def _reference(problem: Problem, *, lam_rel: float = 0.01,
               loss: str = _specs().default("loss"), gamma: float = _specs().default("gamma"),
               diagonal: bool = _specs().default("diagonal"), **_ignored):
    from solvers.reference import triplet_screening as ref

    prob = _problem(problem, loss, gamma, diagonal)
    return ref.solve(problem.data["X"], problem.data["y"], _lam(prob, lam_rel), triplets=prob)


def _cost(problem: Problem) -> int:
    return int(problem.data["triplets"].shape[0])


ENTRY = ModelEntry(
    name="triplet_screening",
    title="Safe triplet screening (metric learning)",
    summary=(
        "Mahalanobis metric learning over triplets (regularised triplet loss, PSD metric) "
        "with safe triplet screening (Yoshida, Takeuchi & Karasuyama): spheres around the "
        "optimum (GB, PGB, DGB, CDGB, RRPB) certify which triplets stay in the linear or the "
        "zero part of the loss, so they leave the problem without changing the solution."
    ),
    datasets={
        "synthetic": Dataset("synthetic", "Gaussian classes, few informative directions",
                             data.synthetic,
                             sizes={"n": (90, 12, 600), "d": (5, 2, 100), "classes": (3, 2, 10),
                                    "informative": (2, 1, 100), "k": (7, 0, 30),
                                    "spread": (1.0, 0.2, 4.0)},
                             cost="explorer.models.triplet_screening.costs:SYNTHETIC"),
        "iris": Dataset("iris", "scikit-learn iris (4-D, 3 classes)", data.real("iris"),
                        sizes={"n": (0, 0, 150), "k": (5, 0, 150)}, real=True,
                        cost="explorer.models.triplet_screening.costs:IRIS"),
        "wine": Dataset("wine", "scikit-learn wine (13-D, 3 classes)", data.real("wine"),
                        sizes={"n": (0, 0, 178), "k": (5, 0, 178)}, real=True,
                        cost="explorer.models.triplet_screening.costs:WINE"),
        "breast_cancer": Dataset("breast_cancer", "scikit-learn breast cancer (30-D, 2 classes)",
                                 data.real("breast_cancer"),
                                 sizes={"n": (0, 0, 569), "k": (5, 0, 100)}, real=True,
                                 cost="explorer.models.triplet_screening.costs:BREAST_CANCER"),
        "digits": Dataset("digits", "scikit-learn digits (64-D, 10 classes)", data.real("digits"),
                          sizes={"n": (600, 0, 1797), "k": (3, 0, 20)}, real=True,
                          cost="explorer.models.triplet_screening.costs:DIGITS"),
    },
    params=(
        Param("lam_rel", 0.01, "lambda as a fraction of lambda_max", low=1e-6, high=1.0,
              log=True),
        ui_param(_specs()["loss"]),
        ui_param(_specs()["gamma"], low=1e-3, high=0.5, log=True),
        ui_param(_specs()["screening"]),
        ui_param(_specs()["rule"]),
        ui_param(_specs()["diagonal"]),
        ui_param(_specs()["active_set"]),
        ui_param(_specs()["refresh"]),
        ui_param(_specs()["method"]),
        ui_param(_specs()["dynamic"]),
        ui_param(_specs()["backoff"]),
        ui_param(_specs()["evaluation"]),
    ),
    solve=_solve,
    reference=_reference,
    reference_cost=_cost,
    reference_limit=5_000,
    bench="explorer.models.triplet_screening.bench:run",
    page="explorer.models.triplet_screening.page:render",
    order=40,
    icon=":material/straighten:",
    tol=1e-9,
    max_iter=5000,
    # the dual method's compiled loop for a diagonal metric (the hinge's default method);
    # the loss of screened triplets outside the spheres, which CDGB without back-off
    # evaluates
    warm_combos=({"loss": "hinge", "diagonal": True}, {"screening": "cdgb", "backoff": False},
                 {"active_set": True, "diagonal": True}),
    tiny={"n": 15, "d": 3, "classes": 3, "informative": 2, "k": 3},
)
