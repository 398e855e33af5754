# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: -jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # What a duality gap certifies
#
# Every solver in dualscope returns, next to its solution, a **duality gap**. This
# notebook shows on a small problem what that number guarantees — and what it does not.
#
# Take a convex problem $p^\star = \min_x P(x)$ and its Fenchel dual
# $d^\star = \max_\theta D(\theta)$. *Weak duality* says $D(\theta) \le P(x)$ for every
# primal point $x$ and every **feasible** dual point $\theta$. Hence
#
# $$ P(x) - p^\star \;\le\; P(x) - D(\theta) \;=\; \mathrm{gap}(x, \theta). $$
#
# The gap bounds the suboptimality of $x$ **without knowing $p^\star$**: a solver that
# stops at $\mathrm{gap} \le \varepsilon$ has *proved* it is $\varepsilon$-optimal.
# Two conditions make the bound honest:
#
# 1. $\theta$ must be dual *feasible* (an infeasible $\theta$ gives $D(\theta) = -\infty$
#    formally — plugging it into a formula anyway gives a number that certifies nothing);
# 2. the gap must be computed from the same $x$ that is returned.

# %% tags=["parameters"]
import os

SMALL = os.environ.get("DUALSCOPE_NOTEBOOK_SMALL", "0") == "1"
n, d = (40, 80) if SMALL else (150, 300)
lam_ratio = 0.05  # lambda as a fraction of lambda_max
seed = 0

# %% [markdown]
# ## A small problem: the lasso
#
# $$ P(w) = \tfrac12 \|Xw - y\|_2^2 + \lambda \|w\|_1, \qquad
#    D(\theta) = \tfrac12\|y\|_2^2 - \tfrac12\|y - \theta\|_2^2
#    \quad \text{s.t.}\ \|X^\top \theta\|_\infty \le \lambda. $$
#
# From any $w$ a feasible dual point is the rescaled residual
# $\theta = r \cdot \min\bigl(1, \lambda / \|X^\top r\|_\infty\bigr)$, $r = y - Xw$;
# at the optimum $\theta^\star = y - Xw^\star$ and the gap is zero.

# %%
import cvxpy as cp
import numpy as np

from explorer.figures import comparison_figure, lines_figure
from solvers import prox
from solvers.apg import APG
from solvers.base import Monitor

rng = np.random.default_rng(seed)
# correlated features (Toeplitz correlation 0.9): an ill-conditioned design
corr = 0.9 ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
X = rng.normal(size=(n, d)) @ np.linalg.cholesky(corr).T
w_true = np.zeros(d)
w_true[:5] = rng.normal(size=5) * 3
y = X @ w_true + 0.5 * rng.normal(size=n)
lam = lam_ratio * np.abs(X.T @ y).max()


def primal(w):
    r = X @ w - y
    return 0.5 * r @ r + lam * np.abs(w).sum()


def dual_point(w):
    r = y - X @ w
    return r * min(1.0, lam / max(np.abs(X.T @ r).max(), 1e-300))


def dual(theta):
    assert np.abs(X.T @ theta).max() <= lam * (1 + 1e-12), "theta must be feasible"
    return 0.5 * y @ y - 0.5 * (y - theta) @ (y - theta)


# %% [markdown]
# ## Weak duality, checked on random points
#
# Whatever primal point and feasible dual point we pick, the dual value never exceeds
# the primal value.

# %%
worst = np.inf
for _ in range(200):
    w = rng.normal(size=d) * rng.choice([0.01, 1.0, 10.0])
    theta = dual_point(rng.normal(size=d))
    worst = min(worst, primal(w) - dual(theta))
print(f"smallest P(w) - D(theta) over 200 random pairs: {worst:.3e}")
assert worst >= 0

# %% [markdown]
# ## Solving, with the gap as the stopping rule
#
# We run the project's accelerated proximal gradient engine (FISTA with backtracking)
# and record primal, dual and gap with the same `Monitor` every solver uses. The true
# suboptimality $P(w_k) - p^\star$ is computed afterwards from cvxpy's optimum: it stays
# below the gap at every iteration.

# %%
ref_w = cp.Variable(d)
ref = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(X @ ref_w - y) + lam * cp.norm1(ref_w)))
ref.solve(solver="CLARABEL")
p_star = ref.value


def value_and_grad(w):
    r = X @ w - y
    return 0.5 * r @ r, X.T @ r


def l1_prox(v, step):
    return prox.soft_threshold(v, lam * step)


eng = APG(value_and_grad, l1_prox, np.zeros(d), L0=1.0, adaptive_restart=True)
mon = Monitor("lasso", tol=1e-9, max_iter=50000)
subopt = []
for k in range(1, 50001):
    w = eng.step()
    subopt.append(primal(w) - p_star)
    if mon.record(k, primal(w), dual(dual_point(w))):
        break
hist, converged = mon.finish()
subopt = np.array(subopt)
print(f"converged={converged} after {len(hist)} iterations; final gap {hist.gap[-1]:.2e}")
slack = 1e-9 * max(1.0, abs(p_star))
assert converged
assert np.all(subopt <= hist.gap + slack), "the gap must bound the true suboptimality"

# %%
lines_figure(hist.iteration, {"duality gap (certificate)": hist.gap,
                              "true suboptimality P(w_k) - p*": np.maximum(subopt, 1e-16)},
             log_y=True, ylabel="value", title="the gap is an upper bound you can compute")

# %% [markdown]
# ## What the gap does not say
#
# The gap bounds the **objective**, not the distance to the solution. Only strong
# convexity turns one into the other: if $P$ is $\mu$-strongly convex,
# $\tfrac{\mu}{2}\|w - w^\star\|^2 \le P(w) - p^\star \le \mathrm{gap}$, so the solution lies
# in a ball of radius $\sqrt{2\,\mathrm{gap}/\mu}$. The lasso is not strongly convex when
# $d > n$; the Weston–Watkins SVM ($\mu = 1$) and the regularised metric learning problem
# ($\mu = \lambda$) are, and their tests check solutions against cvxpy inside exactly that
# radius. Safe screening (notebook 04) is built on the same ball.
#
# An **infeasible** dual point is the classic mistake: the unscaled residual
# $r = y - Xw$ usually violates $\|X^\top r\|_\infty \le \lambda$ early on, and plugging
# it into $D$ anyway can produce a "gap" that is *smaller than the true suboptimality*.
# At the usual starting point $w = 0$ it even reports a gap of exactly zero:

# %%
w0 = np.zeros(d)  # the usual starting point
r = y - X @ w0
fake_gap = primal(w0) - (0.5 * y @ y - 0.5 * (y - r) @ (y - r))
true_sub = primal(w0) - p_star
honest_gap = primal(w0) - dual(dual_point(w0))
print(f"at w = 0: true suboptimality {true_sub:.4g}; honest gap {honest_gap:.4g}; "
      f"'gap' from the infeasible residual {fake_gap:.4g}")
assert honest_gap >= true_sub - slack
assert fake_gap < true_sub, "the infeasible residual underestimates: it certifies nothing"

# %% [markdown]
# ## Gap against time for two algorithms
#
# The gap also makes algorithms comparable on equal terms: "iterations to a certified
# $10^{-8}$" means the same thing for every method. Plain proximal gradient (no momentum),
# FISTA, and FISTA with gradient-based adaptive restart on the same problem. Near the
# solution the lasso restricted to its support is strongly convex; plain FISTA then
# oscillates, and restarting the momentum recovers a fast linear rate.

# %%
def run(accelerated, restart=False):
    eng = APG(value_and_grad, l1_prox, np.zeros(d), L0=1.0, adaptive_restart=restart)
    mon = Monitor("lasso", tol=1e-8, max_iter=50000)
    for k in range(1, 50001):
        if not accelerated:
            eng.restart()  # drop the momentum every step: plain proximal gradient
        w = eng.step()
        if mon.record(k, primal(w), dual(dual_point(w))):
            break
    return mon.finish()[0]


runs = {"FISTA": run(True), "FISTA + adaptive restart": run(True, restart=True),
        "proximal gradient": run(False)}
for name, h in runs.items():
    print(f"{name:>25}: {len(h)} iterations to relative gap 1e-8")
assert len(runs["FISTA + adaptive restart"]) < len(runs["FISTA"]) < len(runs["proximal gradient"])
comparison_figure(runs, x="iteration", title="certified gap: FISTA vs proximal gradient")
