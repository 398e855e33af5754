"""Fitted models saved and loaded back (solvers.saved): predictions bit for bit, all five models."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from solvers import estimators as est
from solvers import saved


def _data(n=60, d=4, k=3, tasks=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    X = rng.normal(size=(n, d)) + 2.0 * np.eye(k, d)[y]
    t = np.array(["north", "south", "east"])[rng.integers(0, tasks, size=n)]
    return X, y, t


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    if a.dtype.kind == "f":
        assert a.tobytes() == b.tobytes()  # bit for bit
    else:
        np.testing.assert_array_equal(a, b)


def _roundtrip(fitted, tmp_path, X, tasks=None, **names):
    sm = saved.from_fitted(fitted, **names)
    pred = sm.predict(X, tasks)
    for ext in ("npz", "json"):
        path = tmp_path / f"m.{ext}"
        saved.save_model(path, fitted, **names)
        back = saved.load_model(path)
        assert back.model == sm.model
        _same(back.predict(X, tasks), pred)
        for k, v in sm.arrays.items():
            _same(back.arrays[k], v)
        assert back.certificate["gap"] == float(fitted.result_.gap if hasattr(
            fitted, "result_") else fitted.gap)
        assert back.certificate["gap"] >= 0
    return sm, pred


def test_wwsvm_estimator_roundtrip(tmp_path):
    X, y, _ = _data()
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    m = est.WestonWatkinsSVC(C=0.5).fit(X, labels)
    sm, pred = _roundtrip(m, tmp_path, X, feature_names=["a", "b", "c", "d"])
    _same(pred, m.predict(X))
    assert list(sm.class_names) == list(m.classes_)
    doc = json.loads((tmp_path / "m.json").read_text())
    assert set(doc["arrays"]) >= {"W", "alpha"} and doc["params"]["C"] == 0.5
    assert doc["names"]["feature_names"]["data"] == ["a", "b", "c", "d"]


def test_caso_estimators_roundtrip(tmp_path):
    X, y, t = _data()
    r = est.ConvexASORegressor(h=1).fit(X, X @ np.arange(4.0) + y, t)
    _, pred = _roundtrip(r, tmp_path, X, t)
    _same(pred, r.predict(X, t))
    c = est.ConvexASOClassifier(h=1).fit(X, np.where(y == 0, "a", "b"), t)
    _, pred = _roundtrip(c, tmp_path, X, t)
    _same(pred, c.predict(X, t))


def test_robust_mtl_estimator_roundtrip(tmp_path):
    X, y, t = _data()
    tt = np.where(t == "north", 2001, np.where(t == "south", 2002, 2003))
    r = est.RobustTemporalMTLRegressor().fit(X, X @ np.ones(4) + y, tt)
    _, pred = _roundtrip(r, tmp_path, X, tt)
    _same(pred, r.predict(X, tt))
    # task names read from a file as text match the saved integer ids
    _same(saved.from_fitted(r).predict(X, tt.astype(str)), pred)


def test_mtmkl_estimator_roundtrip(tmp_path):
    X, y, t = _data()
    m = est.MultiTaskMKLClassifier(C=1.0).fit(X, np.where(y == 0, 1, 0), t)
    sm, pred = _roundtrip(m, tmp_path, X, t)
    _same(pred, m.predict(X, t))
    _same(sm.decision_function(X, t), m.decision_function(X, t))
    assert "theta" in sm.arrays


def test_triplet_metric_roundtrip(tmp_path):
    X, y, _ = _data(n=30)
    m = est.SafeTripletMetricLearner(k=3).fit(X, y)
    sm, pred = _roundtrip(m, tmp_path, X, reference=(X, y))
    _same(sm.transform(X), m.transform(X))
    # 1-NN under the learned metric, with the reference points saved
    Z = m.transform(X)
    d2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    np.testing.assert_array_equal(pred, y[np.argmin(d2, axis=1)])
    assert "M" in sm.arrays and "L" in sm.arrays


def test_results_of_solve_roundtrip(tmp_path):
    """Plain ``solve`` results (not estimators) of every model save and predict."""
    from explorer import registry

    for e in registry.entries():
        name, ds = e.dataset()
        small = {k: v[1] if isinstance(v[0], int) and k in ("n", "m", "n_train", "depth")
                 else v[0] for k, v in ds.sizes.items()}
        prob = ds(**small)
        res = e.solve(prob, tol=1e-4, max_iter=e.max_iter, **e.default_params())
        ref = (prob.data["X"], prob.data["y"]) if e.name == "triplet_screening" else None
        sm = saved.from_fitted(res, model=e.name, reference=ref)
        X = prob.data["X"] if "X" in prob.data else np.vstack(prob.data["Xs"])
        tasks = None
        if sm.needs_tasks:
            tasks = prob.data["tasks"] if "tasks" in prob.data else np.concatenate(
                [np.full(len(x), i) for i, x in enumerate(prob.data["Xs"])])
        pred = sm.predict(X, tasks)
        saved.save_model(tmp_path / f"{e.name}.npz", sm)
        _same(saved.load_model(tmp_path / f"{e.name}.npz").predict(X, tasks), pred)


def test_bad_model_files_and_inputs(tmp_path):
    (tmp_path / "x.npz").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"x\.npz: not a dualscope model file"):
        saved.load_model(tmp_path / "x.npz")
    np.savez(tmp_path / "y.npz", W=np.ones(3))
    with pytest.raises(ValueError, match=r"y\.npz: not a dualscope model file"):
        saved.load_model(tmp_path / "y.npz")
    X, y, t = _data()
    sm = saved.from_fitted(est.ConvexASORegressor(h=1).fit(X, y.astype(float), t))
    with pytest.raises(ValueError, match=r"tasks: 'west' \(row 0\) is not a task"):
        sm.predict(X[:1], ["west"])
    with pytest.raises(ValueError, match=r"X must have shape \(n, 4\)"):
        sm.predict(X[:, :3], t)
    with pytest.raises(ValueError, match="tasks is required"):
        sm.predict(X)


def test_cli_save_then_predict_equals_the_estimator(tmp_path, capsys):
    """The issue's acceptance: solve --save, then predict, equals WestonWatkinsSVC's."""
    from explorer import cli

    X, y, _ = _data(n=90)
    species = np.array(["setosa", "versicolor", "virginica"])[y]
    for name, rows in (("train.csv", slice(0, 60)), ("test.csv", slice(60, 90))):
        with open(tmp_path / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["a", "b", "species", "c", "d"])
            for xi, s in zip(X[rows], species[rows], strict=True):
                w.writerow([*map(repr, map(float, xi[:2])), s, *map(repr, map(float, xi[2:]))])
    model, out = tmp_path / "m.npz", tmp_path / "pred.csv"
    assert cli.main(["solve", "wwsvm", "--data", str(tmp_path / "train.csv"), "--label",
                     "species", "--save", str(model), "--quiet"]) == 0
    assert cli.main(["predict", "--model", str(model), "--data", str(tmp_path / "test.csv"),
                     "--out", str(out)]) == 0
    got = [r["prediction"] for r in csv.DictReader(open(out))]
    ref = est.WestonWatkinsSVC().fit(X[:60], species[:60]).predict(X[60:])
    assert got == list(ref)
    err = capsys.readouterr().err
    assert "accuracy" in err


def test_wwsvm_predicts_from_sparse_rows():
    from scipy import sparse

    X, y, _ = _data()
    X[np.abs(X) < 0.8] = 0.0
    sm = saved.from_fitted(est.WestonWatkinsSVC().fit(X, y))
    S = sparse.csr_matrix(X)
    np.testing.assert_array_equal(sm.predict(S), sm.predict(X))
    np.testing.assert_allclose(sm.decision_function(S), sm.decision_function(X), rtol=1e-12,
                               atol=1e-12)
    with pytest.raises(ValueError, match=r"X must have shape \(n, 4\)"):
        sm.predict(S[:, :3])


@pytest.mark.parametrize("model", ["wwsvm", "caso"])
def test_cli_json_run_holds_the_model_load_model_reads(tmp_path, capsys, model):
    """``solve --json run.json`` keeps today's fields and adds the learned model, which
    ``load_model("run.json")`` reads back: the arrays, names and predictions of ``--save``'s
    file, bit for bit."""
    from explorer import cli

    X, y, t = _data(n=90)
    label = (np.array(["setosa", "versicolor", "virginica"])[y] if model == "wwsvm"
             else X @ np.array([1.0, -2.0, 0.5, 3.0]))
    with open(tmp_path / "train.csv", "w", newline="") as f:
        w = csv.writer(f)
        mt = model == "caso"
        w.writerow(["a", "b", "c", "d", *(["school"] if mt else []), "label"])
        for xi, ti, yi in zip(X, t, label, strict=True):
            w.writerow([*map(repr, map(float, xi)), *([ti] if mt else []),
                        repr(float(yi)) if mt else yi])
    run, npz = tmp_path / "run.json", tmp_path / "m.npz"
    argv = ["solve", model, "--data", str(tmp_path / "train.csv"), "--label", "label",
            "--json", str(run), "--save", str(npz), "--quiet"]
    if model == "caso":
        argv += ["--task", "school", "--set", "h=1"]
    assert cli.main(argv) == 0
    doc = json.loads(run.read_text())
    assert doc["model"] == model and doc["result"]["history"]["gap"]
    # the method asked for, and the one that ran ("auto", the default, picks one)
    asked, ran = doc["params"]["method"], doc["result"]["method"]
    assert ran == asked or (asked == "auto" and ran in ("ipm", "walrus")), (asked, ran)
    assert doc[saved.RUN_KEY]["format"] == saved.FORMAT
    back, ref = saved.load_model(run), saved.load_model(npz)
    assert back.model == ref.model == model
    assert sorted(back.arrays) == sorted(ref.arrays)
    for k, v in ref.arrays.items():
        _same(back.arrays[k], v)
    _same(back.feature_names, np.array(["a", "b", "c", "d"]))
    for name in ("class_names", "task_names"):
        if getattr(ref, name) is None:
            assert getattr(back, name) is None
        else:
            _same(getattr(back, name), getattr(ref, name))
    assert back.certificate == ref.certificate
    assert back.certificate["gap"] == doc["result"]["gap"]
    tasks = t if model == "caso" else None
    if model == "caso":
        _same(back.task_names, np.array(sorted(set(t))))
    else:
        _same(back.class_names, np.array(["setosa", "versicolor", "virginica"]))
    _same(back.predict(X, tasks), ref.predict(X, tasks))
    _same(back.decision_function(X, tasks), ref.decision_function(X, tasks))
    doc.pop(saved.RUN_KEY)
    (tmp_path / "old.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"old\.json: not a dualscope model file"):
        saved.load_model(tmp_path / "old.json")
