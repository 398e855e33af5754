"""Safe triplet screening for distance metric learning (RTLM, Yoshida et al.)."""

from __future__ import annotations

from ...registry import Dataset, ModelEntry, Param, Problem
from . import data

#: Screening choices offered by the CLI and the page ("+" joins spheres).
SCREENINGS = ("rrpb+pgb", "rrpb", "pgb", "gb", "dgb", "cdgb", "gb+pgb+dgb+cdgb+rrpb", "none")

_cache: dict = {}


def _problem(problem: Problem, loss: str, gamma: float, diagonal: bool):
    """The prepared TripletProblem of a dataset instance (pair form built once)."""
    from solvers.triplet_screening import TripletProblem

    T = problem.data["triplets"]
    key = (id(T), T.shape, loss, float(gamma), bool(diagonal))
    hit = _cache.get(key)
    if hit is not None and hit[0] is T:  # the page's dataset cache returns the same object
        return hit[1]
    prob = TripletProblem(problem.data["X"], problem.data["y"], triplets=T, loss=loss,
                          gamma=gamma, diagonal=diagonal)
    while len(_cache) >= 6:
        _cache.pop(next(iter(_cache)))
    _cache[key] = (T, prob)
    return prob


def prepared(problem: Problem, loss: str = "smoothed_hinge", gamma: float = 0.05,
             diagonal: bool = False):
    """The :class:`~solvers.triplet_screening.TripletProblem` of a dataset instance (cached)."""
    return _problem(problem, loss, gamma, diagonal)


def lam_from(problem: Problem, lam_rel: float, loss: str = "smoothed_hinge",
             gamma: float = 0.05, diagonal: bool = False) -> float:
    """``lam = lam_rel * lam_max`` for this dataset."""
    return float(lam_rel) * _problem(problem, loss, gamma, diagonal).lambda_max()


def _solve(problem: Problem, *, tol: float, max_iter: int, init=None, callback=None,
           lam_rel: float = 0.01, loss: str = "smoothed_hinge", gamma: float = 0.05,
           screening: str = "rrpb+pgb", rule: str = "sphere", diagonal: bool = False,
           active_set: bool = False, method: str = "auto"):
    from solvers import triplet_screening as ts

    prob = _problem(problem, loss, gamma, diagonal)
    lam = float(lam_rel) * prob.lambda_max()
    return ts.solve(problem.data["X"], problem.data["y"], lam, triplets=prob, loss=loss,
                    gamma=gamma, screening=None if screening == "none" else screening,
                    rule=rule, diagonal=diagonal, active_set=active_set, method=method,
                    tol=tol, max_iter=max_iter, init=init, callback=callback)


def _reference(problem: Problem, *, lam_rel: float = 0.01, loss: str = "smoothed_hinge",
               gamma: float = 0.05, diagonal: bool = False, **_ignored):
    from solvers.reference import triplet_screening as ref

    prob = _problem(problem, loss, gamma, diagonal)
    return ref.solve(problem.data["X"], problem.data["y"], float(lam_rel) * prob.lambda_max(),
                     triplets=prob)


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
                             sizes={"n": (90, 12, 2000), "d": (5, 2, 100), "classes": (3, 2, 10),
                                    "informative": (2, 1, 100), "k": (7, 0, 100),
                                    "spread": (1.0, 0.2, 4.0)},
                             memory="explorer.estimates:triplet_synthetic_memory",
                             seconds="explorer.estimates:triplet_synthetic_seconds"),
        "iris": Dataset("iris", "scikit-learn iris (4-D, 3 classes)", data.real("iris"),
                        sizes={"n": (0, 0, 150), "k": (5, 0, 150)}, real=True,
                        memory="explorer.estimates:triplet_iris_memory",
                        seconds="explorer.estimates:triplet_iris_seconds"),
        "wine": Dataset("wine", "scikit-learn wine (13-D, 3 classes)", data.real("wine"),
                        sizes={"n": (0, 0, 178), "k": (5, 0, 178)}, real=True,
                        memory="explorer.estimates:triplet_wine_memory",
                        seconds="explorer.estimates:triplet_wine_seconds"),
        "breast_cancer": Dataset("breast_cancer", "scikit-learn breast cancer (30-D, 2 classes)",
                                 data.real("breast_cancer"),
                                 sizes={"n": (0, 0, 569), "k": (5, 0, 100)}, real=True,
                                 memory="explorer.estimates:triplet_breast_cancer_memory",
                                 seconds="explorer.estimates:triplet_breast_cancer_seconds"),
        "digits": Dataset("digits", "scikit-learn digits (64-D, 10 classes)", data.real("digits"),
                          sizes={"n": (600, 0, 1797), "k": (3, 0, 20)}, real=True,
                          memory="explorer.estimates:triplet_digits_memory",
                          seconds="explorer.estimates:triplet_digits_seconds"),
    },
    params=(
        Param("lam_rel", 0.01, "lambda as a fraction of lambda_max", low=1e-6, high=1.0,
              log=True),
        Param("loss", "smoothed_hinge", "triplet loss", kind="choice",
              choices=("smoothed_hinge", "hinge")),
        Param("gamma", 0.05, "smoothing of the smoothed hinge", low=1e-3, high=0.5, log=True),
        Param("screening", "rrpb+pgb", "spheres used for safe screening", kind="choice",
              choices=SCREENINGS),
        Param("rule", "sphere", "screening rule", kind="choice",
              choices=("sphere", "linear", "sdls")),
        Param("diagonal", False, "diagonal metric", kind="bool"),
        Param("active_set", False, "active-set heuristic (baseline)", kind="bool"),
        Param("method", "auto", "optimiser (auto: pgd for the smoothed hinge, dual for the "
              "hinge)", kind="choice", choices=("auto", "pgd", "dual")),
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
)
