"""``dualscope bench caso``.

1. APG and BCD against cvxpy/Clarabel on synthetic shared-subspace tasks
   (alpha = 0.1, eta = 1, h = 3): cvxpy's optimum first, then each method run
   to a certified relative gap <= 1e-6 (hence an objective within 1e-6 of the
   optimum); the wall-time ratios, at the issue's d=50, m=100, n_l=100
   (cvxpy needs minutes and ~7 GB there: matrix_frac is one PSD cone of side
   d + m = 150).
2. APG (Algorithm 1), APG with adaptive restart, and BCD (Algorithm 2) at
   d=50, m=100, n_l=100: time and iterations to the same relative gaps,
   read from one run's history (best of ``repeat`` runs by final time).
3. The M-step (Eq. (71)): appendix C's median search against the sort-based
   sweep, time per call for growing d.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from solvers import caso
from solvers.reference import caso as ref

from ...benchkit import BenchReport, BenchTable, best_of, rel_diff, time_to_target
from .data import subspace

TARGETS = (1e-3, 1e-4, 1e-6)
PARAMS = {"alpha": 0.1, "eta": 1.0, "h": 3.0}


def _problem(d: int, m: int, n: int, loss: str, seed: int = 1):
    p = subspace(seed=seed, d=d, m=m, n=n, h_true=3)
    ys = p.data["ys"] if loss == "squared" else p.info["ys_sign"]
    return p.data["Xs"], ys


def _warm_up() -> None:
    Xs, ys = _problem(3, 2, 5, "hinge")
    for method in caso.METHODS:
        for loss in ("squared", "hinge"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                caso.solve(Xs, ys, loss=loss, method=method, max_iter=3)


def _vs_cvxpy(size: tuple[int, int, int], losses: tuple[str, ...], repeat: int, progress,
              note: str | None) -> BenchTable:
    d, m, n = size
    table = BenchTable(
        f"APG and BCD vs cvxpy/Clarabel, d={d}, m={m}, n_l={n} (synthetic, alpha=0.1, eta=1, "
        "h=3)",
        ["loss", "solver", "time [s]", "iterations", "objective", "rel. diff vs cvxpy",
         "certified rel. gap", "speed-up vs cvxpy"],
    )
    for loss in losses:
        Xs, ys = _problem(d, m, n, loss)
        progress(f"cvxpy/Clarabel, {loss} loss, d={d}, m={m}, n={n} ...")
        r = ref.solve(Xs, ys, loss=loss, **PARAMS)
        progress(f"cvxpy done in {r.time:.1f} s (status {r.status})")
        table.notes.append(f"{loss}: Clarabel status {r.status!r}.")
        table.add(loss, "cvxpy (Clarabel)", r.time, float("nan"), r.value, 0.0, float("nan"),
                  1.0)
        scale = 1e-9 * max(1.0, abs(r.value))
        for method in caso.METHODS:
            def run(method=method, Xs=Xs, ys=ys, loss=loss):
                return caso.solve(Xs, ys, loss=loss, method=method, tol=1e-6,
                                  max_iter=100_000, **PARAMS)

            t, res = best_of(run, repeat)
            progress(f"{method}: {t:.3f} s, {res.n_iter} iterations")
            inside = res.dual <= r.value + scale and r.value <= res.primal + scale
            table.add(loss, f"{method} (tol=1e-6)", t, res.n_iter, res.primal,
                      rel_diff(res.primal, r.value), res.rel_gap, r.time / t)
            table.notes.append(
                f"{loss}/{method}: cvxpy's optimum inside the certified [dual, primal]: "
                f"{inside}; converged: {res.converged}.")
    table.notes.append(
        "Each method stops on its own certificate (relative gap <= 1e-6, hence objective "
        f"within 1e-6 of the optimum); time is the best of {repeat} runs.")
    if note:
        table.notes.append(note)
    return table


VARIANTS = (("apg", False, "APG (Algorithm 1)"), ("apg", True, "APG + adaptive restart"),
            ("bcd", False, "BCD (Algorithm 2)"))


def _apg_vs_bcd(size: tuple[int, int, int], cases: tuple[tuple[str, float], ...],
                max_iter: int, repeat: int, progress) -> BenchTable:
    d, m, n = size
    cols = ["loss", "eta", "method"]
    for tg in TARGETS:
        cols += [f"iters to {tg:g}", f"time to {tg:g} [s]"]
    cols += ["final rel. gap", "time to 1e-6 / BCD's"]
    table = BenchTable(
        f"APG vs BCD, d={d}, m={m}, n_l={n} (synthetic, alpha=0.1, h=3; targets are "
        "certified relative gaps)", cols)
    for loss, eta in cases:
        Xs, ys = _problem(d, m, n, loss)
        rows = {}
        for method, restart, label in VARIANTS:
            def run(method=method, restart=restart, Xs=Xs, ys=ys, loss=loss, eta=eta):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return caso.solve(Xs, ys, loss=loss, method=method, restart=restart,
                                      alpha=0.1, eta=eta, h=3.0, tol=min(TARGETS),
                                      max_iter=max_iter)

            t0 = time.perf_counter()
            res = run()
            reps = repeat if time.perf_counter() - t0 < 5.0 else 1
            if reps > 1:
                _, res2 = best_of(run, reps - 1)
                if res2.time < res.time:
                    res = res2
            hits = [time_to_target(res.history, target_rel_gap=tg) for tg in TARGETS]
            rows[label] = (hits, res)
            progress(f"{loss} eta={eta} {label}: " + ", ".join(
                f"{tg:g}: {it} it / {t:.2f} s" for tg, (t, it) in zip(TARGETS, hits,
                                                                      strict=True)))
        t_bcd = rows["BCD (Algorithm 2)"][0][-1][0]
        for label, (hits, res) in rows.items():
            vals = []
            for t, it in hits:
                vals += [it if it >= 0 else float("nan"), t]
            t_me = hits[-1][0]
            speed = t_me / t_bcd if label != "BCD (Algorithm 2)" else 1.0
            table.add(loss, eta, label, *vals, res.rel_gap, speed)
    table.notes.append(
        f"One run per method (best of {repeat} by final time when a run takes < 5 s), "
        f"max_iter={max_iter}; '—' = target not reached within max_iter. Times include the "
        "certificate (one d x d eigendecomposition per iteration). The last column is "
        "(this method's time to 1e-6) / (BCD's time to 1e-6).")
    return table


def _m_step_table(dims: tuple[int, ...], progress) -> BenchTable:
    table = BenchTable(
        "M-step (Eq. 71): appendix C median search vs sort-based sweep (eta=1, h=d/10, "
        "Cauchy-distributed singular values)",
        ["d", "median search [ms]", "sort sweep [ms]", "ratio sort/median", "max |diff|"])
    rng = np.random.default_rng(0)
    for d in dims:
        sigma = np.abs(rng.standard_cauchy(size=d))
        h = d / 10.0
        reps = max(3, 200_000 // d)
        t_med, g1 = best_of(lambda s=sigma, h=h: caso.m_step_gamma(s, 1.0, h, method="median"),
                            reps)
        t_srt, g2 = best_of(lambda s=sigma, h=h: caso.m_step_gamma(s, 1.0, h, method="sort"),
                            reps)
        table.add(d, 1e3 * t_med, 1e3 * t_srt, t_srt / t_med, float(np.max(np.abs(g1 - g2))))
        progress(f"M-step d={d}: median {1e3 * t_med:.3f} ms, sort {1e3 * t_srt:.3f} ms")
    table.notes.append("Best of many calls, validation included; both are exact (the "
                       "difference is rounding).")
    return table


def run(quick: bool = False, progress=print) -> BenchReport:
    report = BenchReport("caso")
    _warm_up()
    if quick:
        report.tables.append(_vs_cvxpy((10, 20, 20), ("squared", "hinge"), 1, progress, None))
        report.tables.append(_apg_vs_bcd((20, 30, 30), (("squared", 1.0), ("hinge", 1.0)),
                                         2000, 1, progress))
        report.tables.append(_m_step_table((1_000, 100_000), progress))
    else:
        note = (
            "cvxpy's matrix_frac becomes one PSD cone of side d + m = 150 (11,325 entries); "
            "Clarabel's peak memory was about 7 GB at this size.")
        report.tables.append(_vs_cvxpy((50, 100, 100), ("squared", "hinge"), 3, progress,
                                       note))
        report.tables.append(_apg_vs_bcd(
            (50, 100, 100),
            (("squared", 1.0), ("squared", 0.1), ("hinge", 1.0), ("hinge", 0.1),
             ("logistic", 1.0), ("logistic", 0.1)),
            3000, 2, progress))
        report.tables.append(_m_step_table((100, 1_000, 10_000, 100_000, 1_000_000), progress))
    return report


__all__ = ["run"]
