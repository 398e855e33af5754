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
# # Certified models inside scikit-learn
#
# Every dualscope model is also a scikit-learn estimator (`solvers.estimators`): it fits
# in a `Pipeline`, tunes in `GridSearchCV` and cross-validates like any other, and every
# fit keeps its **certificate**: `primal_`, `dual_` and `dual_gap_ = primal_ - dual_`,
# a bound on how far the fitted model's objective is from the optimum.
#
# The hyper-parameters, their defaults and their admissible values are not written in
# the estimators: they are generated from each solver's `PARAMS` spec, the same one the
# solver, the dashboard and the CLI use.

# %% tags=["parameters"]
import os

SMALL = os.environ.get("DUALSCOPE_NOTEBOOK_SMALL", "0") == "1"
n, d, k = (90, 4, 3) if SMALL else (600, 10, 5)
n_tasks, n_per_task = (3, 20) if SMALL else (8, 60)
seed = 0

# %%
import numpy as np
import sklearn
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from solvers import wwsvm
from solvers.estimators import ConvexASORegressor, WestonWatkinsSVC

rng = np.random.default_rng(seed)
names = np.array(["setosa", "versicolor", "virginica", "tulip", "rose"])[:k]
centers = rng.normal(scale=2.5, size=(k, d))
codes = rng.integers(k, size=n)
X = centers[codes] + rng.normal(size=(n, d))
y = names[codes]  # string labels: the estimator encodes them itself
print(WestonWatkinsSVC())
print(WestonWatkinsSVC().get_params())  # defaults from wwsvm.PARAMS

# %% [markdown]
# ## GridSearchCV over the Weston–Watkins SVM
#
# `C` is searched on a log grid inside a pipeline with a `StandardScaler`. The best
# model's certificate is printed: its relative gap is below the solver's `tol`.

# %%
pipe = make_pipeline(StandardScaler(), WestonWatkinsSVC())
grid = GridSearchCV(pipe, {"westonwatkinssvc__C": np.logspace(-2, 1, 4)}, cv=3).fit(X, y)
best = grid.best_estimator_[-1]
rel = best.dual_gap_ / max(1.0, abs(best.primal_))
print(f"best C = {grid.best_params_['westonwatkinssvc__C']:g}, "
      f"CV accuracy = {grid.best_score_:.3f}")
print(f"certificate of the best fit: primal {best.primal_:.6g}, dual {best.dual_:.6g}, "
      f"gap {best.dual_gap_:.2e} (relative {rel:.1e}) after {best.n_iter_} epochs, "
      f"stop reason: {best.stop_reason_}")
assert set(grid.predict(X)) <= set(names) and list(best.classes_) == sorted(set(y))
assert best.converged_ and 0.0 <= rel <= best.tol
assert grid.best_score_ > 0.7

# %% [markdown]
# The estimator is a thin wrapper: the same `wwsvm.solve` on the scaled data and the
# label codes, with the estimator's method (`auto` by default, as on the CLI and the page;
# `solve` itself defaults to the paper's `walrus`) and intercept (LIBLINEAR's regularised
# bias feature, on by default in the estimator, off in `solve`, the paper's model), gives
# the same weights and offsets.

# %%
Xs = grid.best_estimator_[0].transform(X)
res = wwsvm.solve(Xs, np.searchsorted(best.classes_, y), C=best.C, method=best.method,
                  fit_intercept=best.fit_intercept, intercept_scaling=best.intercept_scaling)
np.testing.assert_allclose(best.coef_, res.W.T, rtol=1e-10, atol=1e-12)
np.testing.assert_allclose(best.intercept_, res.intercept, rtol=1e-10, atol=1e-12)
print("same solution as wwsvm.solve; its gap:", f"{res.gap:.2e}")

# %% [markdown]
# ## A multitask model cross-validated with `tasks` routed as metadata
#
# The multitask estimators take `fit(X, y, tasks=...)`: each sample's task id. With
# scikit-learn's metadata routing, `cross_validate` slices `tasks` along with `X` and `y`
# and hands the right slice to `fit` and `score`. Here tasks share a 2-dimensional
# subspace, which convex ASO learns (`shared_subspace_`).

# %%
basis = np.linalg.qr(rng.normal(size=(d, 2)))[0]
task_ids = np.repeat([f"store-{t}" for t in range(n_tasks)], n_per_task)
Xm = rng.normal(size=(task_ids.size, d))
W_true = {t: basis @ rng.normal(size=2) for t in np.unique(task_ids)}
ym = np.array([x @ W_true[t] for x, t in zip(Xm, task_ids, strict=True)])
ym += 0.1 * rng.normal(size=ym.size)

with sklearn.config_context(enable_metadata_routing=True):
    est = ConvexASORegressor(h=2.0).set_fit_request(tasks=True).set_score_request(tasks=True)
    cv = cross_validate(est, Xm, ym, params={"tasks": task_ids},
                        cv=KFold(3, shuffle=True, random_state=seed),
                        return_estimator=True)
print("R^2 per fold:", np.round(cv["test_score"], 3))
for fold in cv["estimator"]:
    print(f"  gap {fold.dual_gap_:.1e}, tasks {fold.tasks_.tolist()}, "
          f"subspace {fold.shared_subspace_.shape}")
assert np.all(cv["test_score"] > 0.8)
assert all(f.converged_ for f in cv["estimator"])

# %% [markdown]
# The learned subspace is the true one: the principal angles between `shared_subspace_`
# and the generator's basis are small.

# %%
fit = ConvexASORegressor(h=2.0).fit(Xm, ym, tasks=task_ids)
cosines = np.linalg.svd(fit.shared_subspace_ @ basis, compute_uv=False)
print("cosines of the principal angles:", np.round(cosines, 4))
assert cosines.min() > 0.95

# %% [markdown]
# ## A metric learned along its regularisation path
#
# `SafeTripletMetricLearner(path=True)` fits along `lam_max, 0.9 lam_max, ...` down to
# `lam`: one `triplet_screening.path` over triplets built once, each lambda screened
# from the previous one's certified solution (RRPB) where that is predicted to pay (on
# this small set it mostly is not: `result_.notes` say why). `path_start="secant"`
# starts each lambda from the path extrapolated in `log lam` instead: other iterates,
# fewer of them, the same certified optimum. `transform` maps into the learned metric, so a k-NN
# classifier placed after it in a pipeline measures distances in that metric.

# %%
from sklearn.datasets import load_wine
from sklearn.model_selection import cross_val_score
from sklearn.neighbors import KNeighborsClassifier

from solvers import triplet_screening
from solvers.estimators import SafeTripletMetricLearner

Xw, yw = load_wine(return_X_y=True)
if SMALL:
    Xw, yw = Xw[::3], yw[::3]
Xw = StandardScaler().fit_transform(Xw)
lam_w = 0.01 * triplet_screening.lambda_max(Xw, yw, k=10)
fits = {start: SafeTripletMetricLearner(lam=lam_w, k=10, path=True, path_start=start)
        .fit(Xw, yw) for start in ("previous", "secant")}
for start, f in fits.items():
    print(f"{start:8s}: {f.path_['lambdas'].size} lambdas, {f.path_['n_iter'].sum()} "
          f"iterations, primal {f.primal_:.8g}, gap {f.dual_gap_:.1e}; screening ran at "
          f"{np.count_nonzero(f.path_['screening_rate'])} lambda(s)")
a, b = fits.values()
assert abs(a.primal_ - b.primal_) <= max(a.dual_gap_, b.dual_gap_)  # both certified
knn = make_pipeline(SafeTripletMetricLearner(lam=lam_w, k=10, path=True,
                                             path_start="secant"),
                    KNeighborsClassifier(5))
plain = cross_val_score(KNeighborsClassifier(5), Xw, yw, cv=3).mean()
learned = cross_val_score(knn, Xw, yw, cv=3).mean()
print(f"k-NN accuracy (3-fold CV): {plain:.3f} in the Euclidean metric, "
      f"{learned:.3f} in the learned one")
