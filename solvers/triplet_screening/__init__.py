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

``H_t`` is never formed: ``<M, H_t> = a^T M a - b^T M b`` comes from per-pair
quadratic forms of the distinct pairs (far fewer than triplets) and
``sum_t w_t H_t = Delta^T diag(w_pairs) Delta`` over pairs;
``||H_t||_F^2 = ||a||^4 + ||b||^4 - 2 (a^T b)^2``. With ``evaluation="sorted"`` the
loss pass over all triplets stored in anchor blocks does not visit them one by one: the
margins of anchor ``i`` are ``q_il - q_ij``, so with its pair forms sorted each row's
triplets at ``alpha = 1`` are a prefix summed in closed form and only the smoothed
hinge's curved piece is visited (the pairwise-ranking trick of Joachims, KDD 2006, and
Chapelle & Keerthi, Inf. Retr. 2010; exact, the same certificate; an option beside the
paper's pass, not screening).

Optimiser (section 5): projected gradient on the primal with the
Barzilai-Borwein step ``1/2 |<dM, dG>/<dG, dG> + <dM, dM>/<dM, dG>|``
(``method="pgd"``, the generic engine :class:`solvers.pgd.PGD`; a non-monotone
Grippo-Lampariello-Lucidi safeguard halves it when the objective exceeds the
last 10 values), PSD projection (:func:`solvers.prox.project_psd`) every step,
dual point by the KKT map, stop on the relative duality gap. The hinge loss
is non-smooth, so primal projected (sub)gradient cannot reach small gaps;
``method="dual"`` (the default for the hinge) runs accelerated projected
gradient on the dual (``solvers.apg``), whose primal ``M_lam(alpha)`` is
PSD by construction; on a path each lambda starts from the previous one's dual
iterate, and ``solve(init=res)`` from ``res.alpha``; its step may grow back at every
iteration (``shrink``; the box projection and the vector work in compiled passes).

Safe screening (section 3): spheres GB, PGB, DGB, CDGB, RPB (theoretical
comparison only), RRPB; rules sphere (Eq. 4), linear relaxation (Thm 3.1),
PSD-constrained via the SDLS dual (section 3.1.2; Appendix B for diagonal
``M``). Screened triplets leave the problem: R-hat is dropped, L-hat is fixed
on the linear part and folded into one running matrix ``H_L``:

    P~(M) = sum_{t active} loss(<M, H_t>) + lam/2 ||M||^2 + (1 - gamma/2)|L-hat| - <M, H_L>.

Screening runs at iteration 0 (regularisation-path screening, RRPB from the
previous lambda's solution, before the first evaluation) and during the
optimisation (dynamic screening): with ``dynamic="every10"`` every 10 iterations
(the paper), with ``dynamic="adaptive"`` (default) whenever the duality-gap ball
``B(M, sqrt(2 gap / lam))`` has shrunk below the last screening sphere; RRPB's
in-solve sphere (DGB) is then applied inside the next loss pass, re-centred at the
new point with radius ``r + ||M_new - M||`` (a ball that contains the old one), so
its margins come for free. Along :func:`path` the screening state is carried
across lambdas (:mod:`.pathscreen`): one fused pass per lambda (rule, status
update, L-hat pair counts, compaction), or with ``range_screening=True`` the
range-based extension (Theorem 4.1) that re-evaluates only the active and expired
triplets. Screening backs off when, counted in loss-pass visits, a round cannot
save more than it costs (``backoff=True``; ``result.notes`` says so); along a path,
the per-lambda pass runs when the loss-pass visits it is predicted to save (for the
share a fixed sample of the triplets says it screens, over as many evaluations as
the last solve ran, against a loss pass over all triplets by anchor blocks) reach
1.5 times its cost (a model fitted to its measured cost).

The solver returns the best certified iterate: the lowest full primal seen,
with ``gap = min P - max D`` over the certified iterates (every dual point is
feasible). The active-set refresh returns to that point and keeps the triplets
whose loss grew when the full objective rose (it used to cycle through M = 0).

Certificate. ``P~ <= P`` everywhere and ``P~ = P`` whenever every screened
triplet is in its region; that is the case when ``M`` lies in every sphere
that screened something (checked each iteration, ``O(d^2)`` per sphere), and
otherwise ``P(M) - P~(M)`` is evaluated over the screened triplets. So the
reported ``primal`` is always the full objective ``P(M)``, ``dual`` is the
full dual at a feasible ``alpha`` (1 on L-hat, 0 on R-hat) and
``gap = primal - dual`` is a true bound on ``P(M) - P*``, with
``||M - M*||_F <= sqrt(2 gap / lam)`` (``result.radius``). With
``active_set=True`` (the Weinberger et al. baseline: only triplets with positive
loss, refreshed every 10 iterations) the certificate needs all margins, so it
is computed, recorded and checked at the refreshes only.

Performance notes: the per-pair forms go through the points when pairs
outnumber them (``q_p = <F_p, z_i - z_j>`` with ``Z = X M``), the loss pass is
branch-free, all compiled (:mod:`.kernels`); BLAS/LAPACK is limited to one
thread during a solve. ``result.triplet_visits`` counts the triplets touched by
loss passes and rules; ``result.profile`` splits the time (loss passes,
screening bookkeeping, pair forms, eigendecompositions).

Layout: :mod:`.triplets` (construction, argument checks, ``PARAMS``),
:mod:`.pairs` (pair forms, KKT map), :mod:`.problem` (:class:`TripletProblem`),
:mod:`.spheres` and :mod:`.rules` (section 3), :mod:`.pathscreen` (path screening,
section 4), :mod:`.state` (one solve's screening state), :mod:`.loops` (the
optimisation loops), :mod:`.api` (:func:`solve`), :mod:`.regpath` (:func:`path`),
:mod:`.results`, :mod:`.kernels` (numba).
"""

from __future__ import annotations

from .api import dual_objective, lambda_max, primal_objective, solve
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
