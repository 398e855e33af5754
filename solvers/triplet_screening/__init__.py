r"""Safe triplet screening for distance metric learning (RTLM).

Yoshida, Takeuchi & Karasuyama, *Safe triplet screening for distance metric
learning* (sections 2-5 and appendices). Triplets ``t = (i, j, l)`` with
``y_i = y_j``, ``i != j``, ``y_l != y_i``;
``H_t = a a^T - b b^T`` with ``a = x_i - x_l``, ``b = x_i - x_j``. Primal::

    min_{M PSD}  P_lam(M) = sum_t loss(<M, H_t>) + lam/2 ||M||_F^2

with the hinge ``max(0, 1 - x)`` or the smoothed hinge (``gamma > 0``): 0 for
``x > 1``, ``(1 - x)^2 / (2 gamma)`` on ``[1 - gamma, 1]``, ``1 - x - gamma/2``
below. Dual (Appendix A), ``0 <= alpha <= 1``::

    D_lam(alpha) = -gamma/2 ||alpha||^2 + 1^T alpha - 1/(2 lam) ||[sum_t alpha_t H_t]_+||_F^2,

``M_lam(alpha) = [sum alpha H]_+ / lam``; KKT: ``alpha_t = -loss'(<M*, H_t>)``.
``diagonal=True`` restricts ``M`` to a nonnegative diagonal (stored as a vector).
``H_t`` is never formed: ``<M, H_t> = a^T M a - b^T M b`` comes from the quadratic
forms of the distinct pairs, and ``sum_t w_t H_t = Delta^T diag(w_pairs) Delta``.

Optimisers (section 5): ``method="pgd"``, projected gradient on the primal with the
Barzilai-Borwein step and a non-monotone safeguard (:class:`solvers.pgd.PGD`), the
paper's; ``method="dual"`` (default for the hinge), accelerated projected gradient on
the dual (:mod:`solvers.apg`), whose ``M_lam(alpha)`` is PSD by construction.
``evaluation="sorted"`` computes the loss pass per anchor from its sorted pair forms
(the pairwise-ranking evaluation of Joachims, KDD 2006; exact, not screening).

Safe screening (section 3): spheres GB, PGB, DGB, CDGB, RPB (comparison only) and
RRPB; rules sphere (Eq. 4), linear relaxation (Thm 3.1) and PSD-constrained via the
SDLS dual (section 3.1.2; Appendix B for diagonal ``M``). Triplets screened into
R-hat are dropped; those in L-hat are fixed on the linear part of the loss and folded
into one matrix ``H_L``::

    P~(M) = sum_{t active} loss(<M, H_t>) + lam/2 ||M||^2 + (1 - gamma/2)|L-hat| - <M, H_L>.

Screening runs before the first iteration (regularisation-path screening, RRPB from
the previous lambda's solution) and during the solve (``dynamic="every10"``: every 10
iterations, the paper's; ``"adaptive"``: whenever the gap ball
``B(M, sqrt(2 gap / lam))`` has shrunk to half the last screening sphere's radius). Along
:func:`path` the screening state is carried across lambdas (``pathscreen``;
``range_screening=True``: the range-based extension, Theorem 4.1). With
``backoff=True`` a round is skipped (noted in ``result.notes``) when its predicted
saving in loss-pass visits is below its cost; the cost model's weights are one table,
``tuning.Tuning``, passed as ``_tuning``.

Certificate: ``P~ <= P`` everywhere, with equality while ``M`` lies in every sphere
that screened something (checked each iteration); otherwise ``P(M) - P~(M)`` is
evaluated over the screened triplets. The reported ``primal`` is the full ``P(M)`` at
the best certified iterate, ``dual`` the full dual at a feasible ``alpha`` (1 on
L-hat, 0 on R-hat), and ``gap = primal - dual >= P(M) - P*``, with
``||M - M*||_F <= sqrt(2 gap / lam)`` (``result.radius``). ``active_set=True`` (the
Weinberger et al. baseline: triplets with positive loss, refreshed every 10
iterations) certifies at the refreshes only. ``result.triplet_visits`` counts the
triplets touched by loss passes and rules; ``result.profile`` splits the time.

Layout: ``triplets`` (construction, argument checks, ``PARAMS``),
``pairs`` (pair forms, KKT map), ``problem`` (:class:`TripletProblem`),
``spheres`` and ``rules`` (section 3), ``pathscreen`` (path screening,
section 4), ``state`` (one solve's screening state), ``loops`` (the
optimisation loops), ``api`` (:func:`solve`), ``regpath`` (:func:`path`),
``results``, ``kernels`` (numba), ``burst`` (compiled loops),
``tuning`` (the cost model's weights).
"""

from __future__ import annotations

from .api import dual_objective, lambda_max, primal_objective, solve
from .fitted import SAVED_FORM as SAVED_FORM  # found by solvers.saved.form_of
from .problem import TripletProblem
from .regpath import WARM_STARTS, geometric_grid, path
from .results import PathResult, TripletResult
from .spheres import (
    Sphere,
    cdgb_sphere,
    dgb_sphere,
    gb_sphere,
    linear_bounds,
    pgb_sphere,
    rpb_sphere,
    rrpb_ranges,
    rrpb_sphere,
    sdls_dual_value,
    sphere_bounds,
)
from .triplets import (
    LOSSES,
    MAX_TRIPLETS,
    METHODS,
    PARAMS,
    RULES,
    SCREEN_EVERY,
    SCREENING_PRESETS,
    SPHERES,
    triplets,
)

__all__ = [
    "LOSSES",
    "MAX_TRIPLETS",
    "METHODS",
    "PARAMS",
    "RULES",
    "SCREENING_PRESETS",
    "SCREEN_EVERY",
    "SPHERES",
    "WARM_STARTS",
    "PathResult",
    "Sphere",
    "TripletProblem",
    "TripletResult",
    "cdgb_sphere",
    "dgb_sphere",
    "dual_objective",
    "gb_sphere",
    "geometric_grid",
    "lambda_max",
    "linear_bounds",
    "path",
    "pgb_sphere",
    "primal_objective",
    "rpb_sphere",
    "rrpb_ranges",
    "rrpb_sphere",
    "sdls_dual_value",
    "solve",
    "sphere_bounds",
    "triplets",
]


# Public classes report the package as their module (Result.to_dict names the model by it).
for _cls in (PathResult, Sphere, TripletProblem, TripletResult):
    _cls.__module__ = __name__
del _cls
