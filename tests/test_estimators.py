"""scikit-learn estimators (:mod:`solvers.estimators`): conventions, equal to solve, routing."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import is_classifier
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import parametrize_with_checks

from solvers import ConvergenceWarning, caso, mtmkl, robust_mtl, triplet_screening, wwsvm
from solvers import estimators as E


def _run_array_api_check(name: str, keywords: dict) -> None:
    code = (
        "import warnings\n"
        "from sklearn.utils.estimator_checks import check_array_api_input\n"
        "from solvers import estimators as E\n"
        "warnings.simplefilter('ignore')\n"
        f"est = E.{name}()\n"
        f"check_array_api_input(type(est).__name__, est, **{keywords!r})\n"
        "print('ok')\n"
    )
    env = {**os.environ, "SCIPY_ARRAY_API": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


ALL = [E.WestonWatkinsSVC(), E.ConvexASORegressor(), E.ConvexASOClassifier(),
       E.RobustTemporalMTLRegressor(), E.MultiTaskMKLClassifier(),
       E.SafeTripletMetricLearner()]


# Every scikit-learn common check, with the real defaults. No expected failures and no
# skips: check_array_api_input skips itself unless SCIPY_ARRAY_API=1 was set before scipy
# was imported (a process-wide switch), so it runs in a fresh interpreter with it set.
# ConvergenceWarning is expected on some checks' data: it is a warning, not a failure.
@parametrize_with_checks(ALL)
def test_sklearn_common_checks(estimator, check):
    if getattr(check, "func", check).__name__ == "check_array_api_input":
        _run_array_api_check(type(estimator).__name__, dict(check.keywords))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


# ----------------------------------------------------------------- data


def _multiclass(seed=0, n=60, d=4, k=3):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(k, d))
    codes = rng.integers(k, size=n)
    X = centers[codes] + rng.normal(size=(n, d))
    return X, np.array(["ant", "bee", "cat", "dog"][:k])[codes]


def _tasks(seed=0, n=60, d=5, m=3, classify=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    base = rng.normal(size=d)
    ids = np.array(["t3", "t1", "t2"])[rng.integers(m, size=n)]  # unsorted labels
    U = {t: base + 0.3 * rng.normal(size=d) for t in np.unique(ids)}
    y = np.array([X[i] @ U[t] for i, t in enumerate(ids)]) + 0.1 * rng.normal(size=n)
    if classify:
        y = np.where(y > 0, "yes", "no")
    return X, y, ids


def _split(X, y, ids):
    labels = np.unique(ids)
    return [X[ids == t] for t in labels], [y[ids == t] for t in labels]


# ----------------------------------------------------------------- equal to solve


def test_wwsvm_estimator_equals_solve_with_string_labels():
    X, y = _multiclass()
    est = E.WestonWatkinsSVC(C=0.5).fit(X, y)
    classes, codes = np.unique(y, return_inverse=True)
    # the estimator's defaults are the user-facing ones (method="auto"; the solver
    # function's is the paper's "walrus")
    res = wwsvm.solve(X, codes, C=0.5, fit_intercept=True, method="auto")
    np.testing.assert_array_equal(est.classes_, classes)
    np.testing.assert_allclose(est.coef_, res.W.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(est.intercept_, res.intercept, rtol=1e-12, atol=1e-14)
    assert est.dual_gap_ == pytest.approx(res.gap) and est.n_iter_ == res.n_iter
    assert est.primal_ - est.dual_ == pytest.approx(est.dual_gap_)
    np.testing.assert_array_equal(est.predict(X), classes[res.predict(X)])
    assert est.score(X, y) > 0.9
    # labels {1, 5, 9}: three classes, never max(y) + 1
    est = E.WestonWatkinsSVC().fit(X, np.array([1, 5, 9])[codes])
    assert est.coef_.shape == (3, X.shape[1]) and set(est.predict(X)) <= {1, 5, 9}


def test_wwsvm_intercept_pipelines():
    from sklearn.datasets import load_iris
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.model_selection import cross_val_score

    X, y = load_iris(return_X_y=True)
    scores = cross_val_score(make_pipeline(StandardScaler(), E.WestonWatkinsSVC()), X, y, cv=5)
    assert scores.mean() >= 0.95
    docs = ["the cat sat on the mat", "dogs bark at cats", "a cat and a dog play",
            "stocks fell sharply today", "markets rose on earnings", "bond yields fell"] * 4
    labels = ["pets", "pets", "pets", "finance", "finance", "finance"] * 4
    pipe = make_pipeline(TfidfVectorizer(), E.WestonWatkinsSVC()).fit(docs, labels)
    assert list(pipe.predict(["my cat and dog", "earnings and yields"])) == ["pets", "finance"]
    assert pipe[-1].intercept_.shape == (2,)


def test_wwsvm_estimator_sparse_equals_dense():
    import scipy.sparse as sp

    X, y = _multiclass()
    X = np.where(np.abs(X) > 0.7, X, 0.0)
    dense = E.WestonWatkinsSVC(C=0.5, tol=1e-9).fit(X, y)
    for fmt in ("csr", "csc", "coo"):
        est = E.WestonWatkinsSVC(C=0.5, tol=1e-9).fit(sp.csr_matrix(X).asformat(fmt), y)
        assert est.primal_ == pytest.approx(dense.primal_, rel=1e-8)
        np.testing.assert_array_equal(est.predict(sp.csr_matrix(X).asformat(fmt)),
                                      dense.predict(X))
    assert E.WestonWatkinsSVC().__sklearn_tags__().input_tags.sparse


@pytest.mark.parametrize("cls", [E.ConvexASORegressor, E.ConvexASOClassifier])
def test_caso_estimators_equal_solve(cls):
    classify = cls is E.ConvexASOClassifier
    X, y, ids = _tasks(classify=classify)
    est = cls(h=1.5, alpha=0.2).fit(X, y, tasks=ids)
    target = np.where(y == "yes", 1.0, -1.0) if classify else y
    Xs, ys = _split(X, target, ids)
    res = caso.solve(Xs, ys, h=1.5, alpha=0.2, loss="hinge" if classify else "squared")
    np.testing.assert_array_equal(est.tasks_, ["t1", "t2", "t3"])
    np.testing.assert_allclose(est.coef_, res.U.T, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.shared_subspace_, res.Theta)
    assert est.shared_subspace_.shape == (2, X.shape[1])
    assert est.task_similarity_.shape == (3, 3)
    assert est.dual_gap_ == pytest.approx(res.gap)
    for t, label in enumerate(est.tasks_):
        rows = ids == label
        scores = res.decision_function(X[rows], t)
        out = est.decision_function(X[rows], ids[rows]) if classify else \
            est.predict(X[rows], ids[rows])
        np.testing.assert_allclose(out, scores, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="tasks is required"):
        est.predict(X)
    with pytest.raises(ValueError, match="tasks contains task ids not seen"):
        est.predict(X[:2], ["t1", "t9"])


def test_robust_estimator_equals_solve():
    X, y, ids = _tasks(n=45, d=4)
    est = E.RobustTemporalMTLRegressor(lam=0.5, rho=0.5).fit(X, y, tasks=ids)
    Xs, ys = _split(X, y, ids)
    res = robust_mtl.solve(Xs, ys, lam=0.5, rho=0.5)
    np.testing.assert_allclose(est.coef_, res.W.T, rtol=1e-10, atol=1e-12)
    assert est.dual_gap_ == pytest.approx(res.gap) and est.floor_ == pytest.approx(res.floor)
    pred = est.predict(X, ids)
    rows = ids == "t2"
    np.testing.assert_allclose(pred[rows], X[rows] @ res.W[:, 1])


def test_mtmkl_estimator_equals_solve_with_default_hierarchy_and_a_tree():
    X, y, ids = _tasks(classify=True)
    est = E.MultiTaskMKLClassifier(C=0.1).fit(X, y, tasks=ids)
    codes = np.unique(ids, return_inverse=True)[1]
    G = [np.ones((3, 3))] + [np.diag(np.eye(3)[t]) for t in range(3)]
    res = mtmkl.solve(X, np.where(y == "yes", 1.0, -1.0), codes, G, C=0.1)
    np.testing.assert_allclose(est.theta_, res.theta, rtol=1e-10)
    np.testing.assert_allclose(est.task_similarity_, res.similarity, rtol=1e-10)
    assert est.dual_gap_ == pytest.approx(res.gap)
    np.testing.assert_allclose(est.decision_function(X, ids), res.decision_function(X, codes),
                               rtol=1e-10, atol=1e-12)
    # a tree: root, {t1, t2}, and the leaves
    tree = [["t1", "t2"], "t3"]
    est = E.MultiTaskMKLClassifier(C=0.1, tree=tree).fit(X, y, tasks=ids)
    assert [sorted(s.tolist()) for s in est.nodes_] == [
        ["t1", "t2", "t3"], ["t1", "t2"], ["t1"], ["t2"], ["t3"]]
    assert est.theta_.shape == (5,)
    v = np.array([1.0, 1.0, 0.0])
    G = [np.ones((3, 3)), np.outer(v, v)] + [np.diag(np.eye(3)[t]) for t in range(3)]
    res = mtmkl.solve(X, np.where(y == "yes", 1.0, -1.0), codes, G, C=0.1)
    np.testing.assert_allclose(est.theta_, res.theta, rtol=1e-10)


def test_triplet_learner_equals_solve_and_follows_metric_learn(monkeypatch):
    X, y = _multiclass(n=30, d=3)
    est = E.SafeTripletMetricLearner(lam=2.0, k=3).fit(X, y)
    res = triplet_screening.solve(X, y, 2.0, k=3)
    M = est.get_mahalanobis_matrix()
    np.testing.assert_allclose(M, res.M, atol=1e-10 * max(1.0, np.abs(res.M).max()))
    L = est.components_
    np.testing.assert_allclose(est.transform(X), X @ L.T)
    diff = X[0] - X[1]
    assert np.sum((L @ diff) ** 2) == pytest.approx(diff @ res.M @ diff, rel=1e-8)
    assert est.get_metric()(X[0], X[1]) ** 2 == pytest.approx(diff @ res.M @ diff, rel=1e-8)
    pairs = np.stack([X[:5], X[5:10]], axis=1)
    dists = [np.sqrt((a - b) @ res.M @ (a - b)) for a, b in zip(X[:5], X[5:10], strict=True)]
    np.testing.assert_allclose(est.pair_distance(pairs), dists, rtol=1e-8)
    assert est.n_triplets_ == res.n_triplets and 0.0 <= est.screening_rate_ <= 1.0
    assert est.n_screened_L_ + est.n_screened_R_ == res.screened_L.size + res.screened_R.size
    # explicit triplets
    T = triplet_screening.triplets(X, y, k=2)
    est_t = E.SafeTripletMetricLearner(lam=2.0).fit(X, y, triplets=T)
    assert est_t.n_triplets_ == T.shape[0]
    # along the path with screening: same optimum, certified
    est_p = E.SafeTripletMetricLearner(lam=2.0, k=3, path=True).fit(X, y)
    lams = est_p.path_["lambdas"]
    assert lams[-1] == 2.0 and np.all(np.diff(lams) < 0) and lams.size > 1
    dist = np.linalg.norm(est_p.get_mahalanobis_matrix() - M)
    assert dist <= est_p.radius_ + est.radius_ + 1e-9
    # the secant start along the path: the same optimum, certified; the problem (its
    # triplets and pair forms) is built once for the whole path
    built = []
    init = triplet_screening.TripletProblem.__init__

    def counting(self, *a, **k):
        built.append(1)
        init(self, *a, **k)

    monkeypatch.setattr(triplet_screening.TripletProblem, "__init__", counting)
    est_s = E.SafeTripletMetricLearner(lam=2.0, k=3, path=True, path_start="secant",
                                       tol=1e-9).fit(X, y)
    assert len(built) == 1
    np.testing.assert_array_equal(est_s.path_["lambdas"], lams)
    assert est_s.result_.lam == 2.0 and est_s.path_["primal"][-1] == est_s.primal_
    dist = np.linalg.norm(est_s.get_mahalanobis_matrix() - M)
    assert dist <= est_s.radius_ + est.radius_ + 1e-9
    with pytest.raises(InvalidParameterError, match="path_start"):
        E.SafeTripletMetricLearner(path=True, path_start="linear").fit(X, y)
    # lam_max = 0 (alternating classes on a line: every impostor is nearer than the
    # genuine neighbours, M* = 0 for every lam): a path of the one lambda, certified
    X0 = np.arange(12.0)[:, None] * np.array([1.0, 0.5])
    y0 = np.arange(12) % 2
    assert triplet_screening.lambda_max(X0, y0, k=2) == 0.0
    est_0 = E.SafeTripletMetricLearner(lam=1.0, k=2, path=True).fit(X0, y0)
    np.testing.assert_array_equal(est_0.path_["lambdas"], [1.0])
    assert est_0.get_mahalanobis_matrix().max() == 0.0 and est_0.dual_gap_ <= 1e-12


# ----------------------------------------------------------------- conventions


def test_pipeline_gridsearch_with_string_labels_and_the_certificate_of_the_best_fit():
    X, y = _multiclass(n=90)
    pipe = make_pipeline(StandardScaler(), E.WestonWatkinsSVC())
    grid = GridSearchCV(pipe, {"westonwatkinssvc__C": [0.01, 1.0]}, cv=3).fit(X, y)
    best = grid.best_estimator_[-1]
    assert set(grid.predict(X)) <= set(y) and grid.score(X, y) > 0.8
    assert best.dual_gap_ >= 0 and best.dual_gap_ <= 1e-6 * max(1.0, abs(best.primal_))
    assert best.result_.converged


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # robust's floor
@pytest.mark.parametrize("cls", [E.ConvexASORegressor, E.ConvexASOClassifier,
                                 E.RobustTemporalMTLRegressor, E.MultiTaskMKLClassifier])
def test_tasks_are_routed_as_metadata(cls):
    classify = cls in (E.ConvexASOClassifier, E.MultiTaskMKLClassifier)
    X, y, ids = _tasks(n=60, d=4, classify=classify)
    with sklearn.config_context(enable_metadata_routing=True):
        est = cls().set_fit_request(tasks=True).set_score_request(tasks=True)
        cv = cross_validate(est, X, y, params={"tasks": ids}, cv=KFold(3, shuffle=True,
                                                                     random_state=0))
        assert np.all(np.isfinite(cv["test_score"]))
        first = next(iter(cls._parameter_constraints))
        grid = GridSearchCV(est, {first: [cls().get_params()[first]]}, cv=GroupKFold(2))
        # grouped by sample index parity so every task appears in every training fold
        grid.fit(X, y, tasks=ids, groups=np.arange(X.shape[0]) % 2)
        assert grid.best_estimator_.tasks_.size == 3
        assert np.isfinite(grid.score(X, y, tasks=ids))
        # predict requests: a pipeline hands tasks to the estimator's predict
        fitted = grid.best_estimator_.set_predict_request(tasks=True)
        pipe = make_pipeline(StandardScaler(), fitted)
        pipe.fit(X, y, tasks=ids)
        same = np.testing.assert_array_equal if classify else np.testing.assert_allclose
        same(pipe.predict(X, tasks=ids), pipe[-1].predict(pipe[0].transform(X), ids))


def test_defaults_come_from_the_spec_and_constraints_validate():
    for est, model in zip(ALL, ["wwsvm", "caso", "caso", "robust_mtl", "mtmkl",
                                "triplet_screening"], strict=True):
        specs = __import__(f"solvers.{model}", fromlist=["PARAMS"]).PARAMS
        params = est.get_params()
        for name, value in params.items():
            if name in specs:
                if name == "fit_intercept" and model == "wwsvm":
                    assert value is True  # scikit-learn's convention; the solver: the paper's
                elif not (name == "loss" and is_classifier(est)):  # a restricted choice
                    # the user-facing default (the CLI's and the page's too)
                    assert value == specs[name].surface_default, (model, name)
        if "seed" in specs:
            assert params["random_state"] == specs.default("seed")
    with pytest.raises(ValueError, match="'C' parameter of WestonWatkinsSVC"):
        E.WestonWatkinsSVC(C=-1.0).fit(*_multiclass())
    with pytest.raises(ValueError, match="'method' parameter"):
        E.WestonWatkinsSVC(method="nope").fit(*_multiclass())
    with pytest.raises(ValueError, match="'loss' parameter of ConvexASOClassifier"):
        E.ConvexASOClassifier(loss="squared").fit(*_tasks(classify=True)[:2])


def test_convergence_warning_points_at_the_caller_and_warm_start():
    X, y = _multiclass()
    with pytest.warns(ConvergenceWarning) as rec:
        est = E.WestonWatkinsSVC(max_iter=1, tol=1e-12).fit(X, y)
    assert rec[0].filename == __file__
    assert est.stop_reason_ == "max_iter" and not est.converged_
    assert issubclass(ConvergenceWarning, sklearn.exceptions.ConvergenceWarning)
    cold = E.WestonWatkinsSVC(C=2.0, tol=1e-8).fit(X, y)
    warm = E.WestonWatkinsSVC(C=1.0, tol=1e-8, warm_start=True).fit(X, y)
    warm.set_params(C=2.0).fit(X, y)
    assert warm.primal_ == pytest.approx(cold.primal_, rel=1e-7)
    assert warm.n_iter_ <= cold.n_iter_
    # random_state: an int is the solver's seed; a RandomState works too
    a = E.WestonWatkinsSVC(random_state=3, fit_intercept=False).fit(X, y)
    np.testing.assert_allclose(a.coef_, wwsvm.solve(X, np.unique(y, return_inverse=True)[1],
                                                    seed=3, method="auto").W.T)
    assert np.all(a.intercept_ == 0.0)
    E.WestonWatkinsSVC(random_state=np.random.RandomState(0)).fit(X, y)
    # fitted estimators (and their results) pickle
    back = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(back.predict(X), a.predict(X))
    assert back.result_.params == a.result_.params
