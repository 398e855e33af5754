"""``dualscope bench robust_mtl``.

1. Accelerated dual ascent (the paper's method) against pure smoothing (its
   baseline) on synthetic temporal tasks, p = 2, m=50 tasks, d=200, n_i=100:
   every (mu, method, restart) run goes until its certified gap stalls at its
   mu floor (or a time budget); from the histories, the time, outer iterations
   and singular value decompositions (one per inner S-FISTA step of the dual
   method, one per FISTA step of the baseline) needed to reach a certified
   relative gap of 1e-4, 1e-5, 1e-6. A summary table takes, for each target,
   each method's best mu.
2. The same for p = 1 on a smaller problem, where smoothing the loss (only the
   baseline does) adds its own floor: the paper's argument for the dual method.
3. Both methods against cvxpy/Clarabel: mu is decreased until the primal
   objective gets within 1e-6 (relative) of cvxpy's optimum. cvxpy does not
   finish at m=50, d=200, n=100 on this machine (a trial run was killed by the
   kernel after using 17 GB of memory), so this table uses the largest size
   tried that it finished (m=20, d=80, n=40; 20-50 s).

The regularisation weights are set from the data: ``lam`` and ``rho`` are
fixed fractions of ``lam_max`` and ``rho_max``, the weights above which W = 0
is optimal, so that W has a few nonzero rows and a low rank at every size.

All solvers run with single-threaded BLAS (the solver sets it for these sizes),
and times are best of 3 for runs shorter than 2 s.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from solvers import robust_mtl
from solvers.reference import robust_mtl as ref

from ...benchkit import BenchReport, BenchTable, rel_diff, time_to_target
from .data import temporal_tasks

TARGETS = (1e-4, 1e-5, 1e-6)
CONFIGS = (("dual", False), ("smoothing", False), ("dual", True), ("smoothing", True))


def _label(method: str, restart: bool) -> str:
    return method + (" +restart" if restart else "")


#: Runs shorter than this are repeated (best of 3); set by :func:`run`.
_REPEAT_BELOW = {"value": 2.0}


def _run(Xs, ys, params: dict[str, Any], *, mu: float, method: str, restart: bool, tol: float,
         budget: float, stop_below: float | None = None):
    """One solve with a wall-clock budget; repeated (best of 3) when it is short.

    With ``stop_below``, the run also stops once its primal objective is below it.
    """

    def keep_going(s):
        return s.time < budget and (stop_below is None or s.primal > stop_below)

    def once():
        t0 = time.perf_counter()
        res = robust_mtl.solve(
            Xs, ys, **params, mu=mu, method=method, restart=restart, tol=tol,
            max_iter=10**7 if method == "smoothing" else 10**5,
            check_every=10 if method == "smoothing" else 1,
            callback=keep_going,
        )
        return time.perf_counter() - t0, res

    best_t, res = once()
    if best_t < _REPEAT_BELOW["value"]:
        for _ in range(2):
            t, r = once()
            if t < best_t:
                best_t, res = t, r
    return best_t, res


def _svds_at(res, target: float) -> tuple[float, int, int]:
    """(time, outer iterations, SVDs) when the certified relative gap first reached target."""
    t, it = time_to_target(res.history, target_rel_gap=target)
    if it < 0:
        return float("nan"), -1, -1
    k = int(np.nonzero(res.history.iteration == it)[0][0])
    return t, it, int(res.history.inner_total[k])


def _versus_baseline(title: str, prob, params: dict[str, Any], mus, budget: float,
                     progress) -> tuple[BenchTable, BenchTable]:
    Xs, ys = prob.data["Xs"], prob.data["ys"]
    cols = ["mu", "method", "final rel. gap", "at floor", "outer it.", "SVDs", "time [s]"]
    cols += [f"t to {d:g} [s]" for d in TARGETS] + [f"SVDs to {TARGETS[-2]:g}"]
    runs = BenchTable(title, cols)
    best: dict[tuple[str, bool, float], tuple[float, float, int, int]] = {}
    for mu in mus:
        for method, restart in CONFIGS:
            t, res = _run(Xs, ys, params, mu=mu, method=method, restart=restart, tol=1e-9,
                          budget=budget)
            hits = [_svds_at(res, d) for d in TARGETS]
            progress(f"{title[:30]}... mu={mu:g} {_label(method, restart)}: {t:.2f} s, "
                     f"rel gap {res.rel_gap:.2e}, {res.n_iter} it, {res.inner_iterations} SVDs")
            stopped = "budget" if (not res.converged and not res.floor_reached) else (
                "yes" if res.floor_reached else "no")
            runs.add(mu, _label(method, restart), res.rel_gap, stopped, res.n_iter,
                     res.inner_iterations, t, *[h[0] for h in hits],
                     hits[1][2] if hits[1][2] >= 0 else float("nan"))
            for d, h in zip(TARGETS, hits, strict=True):
                if h[1] >= 0:
                    key = (method, restart, d)
                    if key not in best or h[0] < best[key][1]:
                        best[key] = (mu, h[0], h[1], h[2])
    runs.notes.append(
        f"Each run stops when its certified relative gap stalls at the mu floor (the smoothed "
        f"problem's gap below 1% of the floor), or after {budget:g} s ('budget'). Times to a "
        "target come from the run's history (certificate included; the baseline certifies "
        "every 10 steps). 'SVDs' counts singular value thresholdings: inner S-FISTA steps "
        "of the dual method, FISTA steps of the baseline; 'outer it.' is the dual method's "
        "outer (theta) iterations and the baseline's FISTA steps.")
    summary = BenchTable(
        "Same certified precision, each method at its best mu: " + title,
        ["target rel. gap", "restart", "dual: mu", "dual: outer it.", "dual: SVDs",
         "dual: time [s]", "smoothing: mu", "smoothing: steps", "smoothing: time [s]",
         "time ratio smoothing/dual", "SVD ratio smoothing/dual"],
    )
    for d in TARGETS:
        for restart in (False, True):
            a = best.get(("dual", restart, d))
            b = best.get(("smoothing", restart, d))
            nan = float("nan")
            row = [d, restart]
            row += [a[0], a[2], a[3], a[1]] if a else [nan, nan, nan, nan]
            row += [b[0], b[3], b[1]] if b else [nan, nan, nan]
            row += [b[1] / a[1] if a and b else nan, b[3] / a[3] if a and b else nan]
            summary.add(*row)
    summary.notes.append("'—' means no run of that method reached the target (floor or budget).")
    return runs, summary


def _scaled(prob, p, a: float, b: float) -> dict[str, Any]:
    """lam = a lam_max, rho = b rho_max (2 significant digits), gamma = zeta = 1.

    ``lam_max`` (with rho = 0) and ``rho_max`` (with lam = 0) are the smallest
    weights for which W = 0 is optimal: the largest row norm and the spectral
    norm of ``V(theta_0)``, ``theta_0`` the dual point at W = 0.
    """
    Xs, ys = prob.data["Xs"], prob.data["ys"]
    t0 = [np.sign(y) if p == 1 else y / np.linalg.norm(y) for y in ys]
    V = np.column_stack([X.T @ t for X, t in zip(Xs, t0, strict=True)])
    lam_max = float(np.linalg.norm(V, axis=1).max())
    rho_max = float(np.linalg.norm(V, 2))
    return {"lam": float(f"{a * lam_max:.2g}"), "rho": float(f"{b * rho_max:.2g}"),
            "gamma": 1.0, "zeta": 1.0, "p": p}


def _versus_cvxpy(prob, params: dict[str, Any], mus, budget: float, progress) -> BenchTable:
    Xs, ys = prob.data["Xs"], prob.data["ys"]
    m, d, n = len(Xs), Xs[0].shape[1], Xs[0].shape[0]
    table = BenchTable(
        f"Against cvxpy/Clarabel, p=2, m={m}, d={d}, n_i={n} "
        f"(lam={params['lam']:g}, rho={params['rho']:g}, gamma={params['gamma']:g}, "
        f"zeta={params['zeta']:g})",
        ["solver", "mu", "time [s]", "outer it.", "SVDs", "objective", "rel. diff vs cvxpy",
         "certified rel. gap", "speed-up vs cvxpy"],
    )
    progress(f"cvxpy/Clarabel on m={m}, d={d}, n={n} ...")
    r = ref.solve(Xs, ys, **params)
    progress(f"cvxpy done in {r.time:.1f} s")
    nan = float("nan")
    table.add("cvxpy (Clarabel)", nan, r.time, nan, nan, r.value, 0.0, nan, 1.0)
    target = r.value + 1e-6 * max(1.0, abs(r.value))
    rep = (f"best of 3 below {_REPEAT_BELOW['value']:g} s" if _REPEAT_BELOW["value"] > 0
           else "single runs")
    for method, restart in CONFIGS:
        for mu in mus:
            t, res = _run(Xs, ys, params, mu=mu, method=method, restart=restart, tol=1e-9,
                          budget=budget, stop_below=target)
            diff = rel_diff(res.primal, r.value)
            progress(f"cvxpy table: {_label(method, restart)} mu={mu:g}: {t:.2f} s, "
                     f"rel diff {diff:.1e}")
            if diff <= 1e-6 or mu == mus[-1]:
                table.add(_label(method, restart), mu, t, res.n_iter, res.inner_iterations,
                          res.primal, diff, res.rel_gap, r.time / t)
                break
        scale = 1e-9 * max(1.0, abs(r.value))
        if not (res.dual <= r.value + scale and r.value <= res.primal + scale):
            table.notes.append(f"{_label(method, restart)}: cvxpy's optimum OUTSIDE the "
                               "certified bracket")
    table.notes.append(
        f"mu is decreased through {', '.join(f'{x:g}' for x in mus)}; each run stops as soon "
        f"as its objective is within 1e-6 of cvxpy's (or at its mu floor, or after "
        f"{budget:g} s); the first mu that succeeds is shown, with its wall time ({rep}). "
        "cvxpy's optimum lay inside every certified [dual, primal] bracket unless a note "
        "says otherwise.")
    table.notes.append(
        "cvxpy at m=50, d=200, n_i=100 (the size of the first tables) is not run: a trial "
        "on this machine was killed by the kernel after using 17 GB of memory (the nuclear "
        "norm becomes a 250 x 250 PSD cone). m=20, d=80, n_i=40 (a 100 x 100 cone) is the "
        "largest size tried that it finished (20-50 s across our runs, with the machine "
        "shared).")
    return table


def run(quick: bool = False, progress=print) -> BenchReport:
    report = BenchReport("robust_mtl")
    if quick:
        _REPEAT_BELOW["value"] = 0.0
        sizes, mus, budget = (12, 30, 40), (1e-3, 1e-4), 1.0
        sizes1, mus1, budget1 = (8, 20, 20), (1e-3,), 1.0
        sizesc, musc, budgetc = (8, 20, 15), (1e-5,), 1.5
    else:
        _REPEAT_BELOW["value"] = 2.0
        sizes, mus, budget = (50, 200, 100), (1e-3, 1e-4, 1e-5), 60.0
        sizes1, mus1, budget1 = (20, 60, 40), (1e-3, 1e-4), 30.0
        sizesc, musc, budgetc = (20, 80, 40), (1e-5, 3e-6, 1e-6), 60.0
    m, d, n = sizes
    prob = temporal_tasks(seed=0, m=m, d=d, n=n)
    params = _scaled(prob, 2, 1 / 3, 0.3)
    title = (f"p=2, m={m}, d={d}, n_i={n} (lam={params['lam']:g} = lam_max/3, "
             f"rho={params['rho']:g} = 0.3 rho_max, gamma=1, zeta=1)")
    runs, summary = _versus_baseline(title, prob, params, mus, budget, progress)
    report.tables += [summary, runs]
    m1, d1, n1 = sizes1
    prob1 = temporal_tasks(seed=0, m=m1, d=d1, n=n1, outliers=0.05)
    params1 = _scaled(prob1, 1, 0.3, 0.35)
    title1 = (f"p=1, 5% outliers, m={m1}, d={d1}, n_i={n1} (lam={params1['lam']:g} = "
              f"0.3 lam_max, rho={params1['rho']:g} = 0.35 rho_max, gamma=1, zeta=1)")
    runs1, summary1 = _versus_baseline(title1, prob1, params1, mus1, budget1, progress)
    report.tables += [summary1, runs1]
    mc, dc, nc = sizesc
    probc = temporal_tasks(seed=1, m=mc, d=dc, n=nc)
    report.tables.append(_versus_cvxpy(probc, _scaled(probc, 2, 1 / 3, 0.3), musc, budgetc,
                                       progress))
    return report


__all__ = ["run"]

if __name__ == "__main__":  # pragma: no cover
    import sys

    print(run(quick="--quick" in sys.argv).to_markdown())
