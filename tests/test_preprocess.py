"""Preprocessing that travels with the model (:mod:`solvers.preprocess`), on a raw
palmerpenguins-like CSV: text columns, missing values, unscaled features."""

from __future__ import annotations

import csv
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from penguinkit import write_penguins

from explorer import cli, datafiles, registry
from explorer.datasource import DataSource
from solvers import preprocess, saved
from solvers.preprocess import Preprocessing

PREP = ["--categorical", "onehot", "--missing", "drop", "--scale", "standard"]


@pytest.fixture(scope="module")
def penguins(tmp_path_factory):
    return write_penguins(tmp_path_factory.mktemp("penguins") / "penguins.csv")


def _predictions(path):
    with open(path, newline="") as fh:
        return [r[-1] for r in list(csv.reader(fh))[1:]]


def test_raw_file_is_an_error_naming_the_option(penguins):
    with pytest.raises(datafiles.DataFileError, match=r"island.*--categorical onehot"):
        datafiles.read_table(penguins, label="species")
    with pytest.raises(datafiles.DataFileError, match=r"missing value.*--missing drop"):
        datafiles.read_table(penguins, label="species", prep=Preprocessing(
            categorical="drop"))


def test_penguins_solve_save_predict_match_the_estimator(penguins, tmp_path, capsys):
    model, run = tmp_path / "m.npz", tmp_path / "run.json"
    assert cli.main(["solve", "wwsvm", "--data", str(penguins), "--label", "species", *PREP,
                     "--test-size", "0.3", "--save", str(model), "--json", str(run),
                     "--quiet"]) == 0
    out = capsys.readouterr().out
    line = ("standardised 5 columns; one-hot island (3 values), sex (2 values); dropped 11 "
            "rows with missing values")
    assert f"preprocessing: {line}" in out
    doc = json.loads(run.read_text())
    assert doc["result"]["converged"] and doc["result"]["stop_reason"] == "converged"
    assert doc["preprocessing"] == line
    assert doc["held_out"]["accuracy"] >= 0.95
    assert f"held-out accuracy {doc['held_out']['accuracy']:.6g}" in out
    assert doc["result"]["method"] in ("ipm", "walrus")  # auto names what ran
    sm = saved.load_model(model)
    assert sm.preprocessing.describe() == line
    assert list(sm.feature_names) == [
        "island=Biscoe", "island=Dream", "island=Torgersen", "bill_length_mm",
        "bill_depth_mm", "flipper_length_mm", "body_mass_g", "sex=female", "sex=male", "year"]

    pred = tmp_path / "pred.csv"
    assert cli.main(["predict", "--model", str(model), "--data", str(penguins),
                     "--out", str(pred)]) == 0
    cli_pred = _predictions(pred)
    raw = pd.read_csv(penguins)
    assert len(cli_pred) == len(raw)  # one output row per data row
    complete = raw.drop(columns="species").notna().all(axis=1).to_numpy()
    assert [p for p, c in zip(cli_pred, complete, strict=True) if not c] == [""] * 11

    # the estimator on the same training rows, preprocessed by the same fit
    from solvers.estimators import WestonWatkinsSVC

    table = datafiles.read_table(penguins, label="species", prep=Preprocessing(
        categorical="onehot", missing="drop", scale="standard"))
    train, _ = datafiles.split_table(table, 0.3, seed=0)
    fp = train.extra["preprocessing"]
    est = WestonWatkinsSVC().fit(train.X, train.y)
    assert est.result_.method == doc["result"]["method"]
    rows = raw[complete]
    X_all = fp.transform({c: rows[c].to_numpy() for c in fp.columns})
    est_pred = est.predict(X_all)
    assert [p for p, c in zip(cli_pred, complete, strict=True) if c] == list(est_pred)
    # and the saved model on the raw frame (Python)
    assert list(sm.predict(rows)) == list(est_pred)


def test_unseen_category_is_an_error_naming_column_and_value(penguins, tmp_path):
    model = tmp_path / "m.npz"
    assert cli.main(["solve", "wwsvm", "--data", str(penguins), "--label", "species", *PREP,
                     "--save", str(model), "--quiet"]) == 0
    new = pd.read_csv(penguins).head(5)
    new.loc[2, "island"] = "Anvers"
    path = tmp_path / "new.csv"
    new.to_csv(path, index=False)
    with pytest.raises(datafiles.DataFileError, match=r"column 'island'.*'Anvers'"):
        datafiles.read_table(path, need_label=False, fitted=saved.load_model(model)
                             .preprocessing)
    assert cli.main(["predict", "--model", str(model), "--data", str(path)]) == 2


@pytest.mark.parametrize("fmt", ["npz", "json"])
def test_preprocessing_round_trips_bit_for_bit(penguins, tmp_path, fmt):
    prob = datafiles.load_problem("wwsvm", penguins, label="species", prep=Preprocessing(
        categorical="onehot", missing="mean", scale="standard", ignore=("year",)))
    fp = prob.info["preprocessing"]
    assert "year" not in fp.columns and fp.options.missing == "mean"
    res = registry.get("wwsvm").solve(prob, tol=1e-6, max_iter=1000, C=1.0)
    path = tmp_path / f"m.{fmt}"
    datafiles.fitted_model("wwsvm", prob, res).save(path)
    back = saved.load_model(path).preprocessing
    a, b = fp.to_arrays(), back.to_arrays()
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype.kind == b[k].dtype.kind and np.array_equal(a[k], b[k]), k
        if a[k].dtype.kind == "f":
            assert a[k].tobytes() == b[k].tobytes(), k
    raw = pd.read_csv(penguins)
    cols = {c: raw[c].to_numpy() for c in fp.columns}
    assert fp.transform(cols).tobytes() == back.transform(cols).tobytes()
    # missing values filled with the training mean (not NaN)
    assert np.all(np.isfinite(back.transform(cols)))


def test_mean_imputation_uses_training_rows_only(penguins):
    prep = Preprocessing(categorical="onehot", missing="mean", scale="standard")
    table = datafiles.read_table(penguins, label="species", prep=prep)
    train, test = datafiles.split_table(table, 0.3, seed=0)
    fp = train.extra["preprocessing"]
    raw = train.extra["raw"]["body_mass_g"].astype(float)
    j = fp.columns.index("body_mass_g")
    assert fp.center[j] == pytest.approx(np.nanmean(raw))
    assert test.extra["preprocessing"] is fp


def test_sparse_file_with_maxabs_stays_sparse(tmp_path, capsys):
    rng = np.random.default_rng(3)
    X = sp.random(60, 40, density=0.1, random_state=4, format="csr") * 1000.0
    X = sp.hstack([sp.csr_matrix(0.001 * rng.random((60, 1))), X[:, 1:]]).tocsr()
    y = rng.integers(0, 3, 60)
    path = tmp_path / "d.svm"
    from sklearn.datasets import dump_svmlight_file

    dump_svmlight_file(X, y, str(path), zero_based=True)
    table = datafiles.read_table(path, prep=Preprocessing(scale="maxabs"))
    assert sp.issparse(table.X) and table.X.nnz == X.nnz
    assert np.abs(table.X).max(axis=0).toarray().max() == pytest.approx(1.0)
    model = tmp_path / "m.npz"
    assert cli.main(["solve", "wwsvm", "--data", str(path), "--scale", "maxabs", "--save",
                     str(model), "--quiet"]) == 0
    assert "scaled 40 columns by max |x|" in capsys.readouterr().out
    sm = saved.load_model(model)
    assert cli.main(["predict", "--model", str(model), "--data", str(path)]) == 0
    out = capsys.readouterr().out.split()[1:]
    assert out == [str(v) for v in sm.predict(table.X)]


def test_saved_preprocessing_is_validated(penguins, tmp_path):
    prob = datafiles.load_problem("wwsvm", penguins, label="species", prep=Preprocessing(
        categorical="onehot", missing="drop", scale="standard"))
    res = registry.get("wwsvm").solve(prob, tol=1e-6, max_iter=1000, C=1.0)
    sm = datafiles.fitted_model("wwsvm", prob, res)
    pre = saved.PREP_PREFIX
    bad = {
        f"{pre}scale": ("scale", lambda a: np.zeros_like(a)),
        f"{pre}center": ("center", lambda a: np.full_like(a, np.nan)),
        f"{pre}categories_0": ("categories_0", lambda a: a[::-1].copy()),
        f"{pre}options": ("options", lambda a: np.array(["huge", "onehot", "drop"])),
        f"{pre}columns": ("numeric", lambda a: a[:-1].copy()),
    }
    for key, (field, change) in bad.items():
        arrays = dict(sm.arrays)
        arrays[key] = change(arrays[key])
        broken = saved.SavedModel(**{**sm.__dict__, "arrays": arrays})
        with pytest.raises(ValueError, match=field):
            saved.validate(broken)
    names = sm.feature_names.copy()
    names[0] = "bill"
    with pytest.raises(ValueError, match="feature_names"):
        saved.validate(saved.SavedModel(**{**sm.__dict__, "feature_names": names}))


def test_file_spec_carries_the_preprocessing(penguins):
    prep = Preprocessing(scale="maxabs", categorical="drop", missing="drop",
                         ignore=("year",))
    spec = datafiles.file_spec(penguins, label="species", prep=prep)
    path, opts = datafiles.parse_file_spec(spec)
    assert opts["prep"] == prep and opts["label"] == "species"
    src = DataSource.parse("wwsvm", spec)
    assert src.options["prep"] == prep and src.key == spec
    prob = src.problem()
    assert prob.info["preprocessing"].describe() == (
        "scaled 4 columns by max |x|; dropped text columns island, sex; dropped 11 rows "
        "with missing values")


# every model whose roles fit the file: text columns encoded, incomplete rows dropped, no
# scaling and the default parameters: certified before max_iter (MT-MKL through its
# user-facing default, method=auto: the paper's E.1 alone stops at max_iter here)
CASES = {"wwsvm": ["--label", "species"], "triplet_screening": ["--label", "species"],
         "caso": ["--label", "sex", "--task", "species"],
         "robust_mtl": ["--label", "body_mass_g", "--time", "year"],
         "mtmkl": ["--label", "sex", "--task", "species"]}


@pytest.mark.parametrize("model", sorted(CASES))
def test_default_flags_converge(penguins, tmp_path, model):
    run = tmp_path / "run.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=UserWarning)
        assert cli.main(["solve", model, "--data", str(penguins), *CASES[model],
                         "--categorical", "onehot", "--missing", "drop", "--test-size", "0.3",
                         "--json", str(run), "--quiet"]) == 0
    doc = json.loads(run.read_text())
    assert doc["result"]["stop_reason"] == "converged", doc["result"]["stop_reason"]
    assert doc["held_out"]  # every model prints a held-out score


def test_unconverged_run_on_unscaled_file_suggests_scaling(penguins, capsys):
    assert cli.main(["solve", "wwsvm", "--data", str(penguins), "--label", "species",
                     "--categorical", "onehot", "--missing", "drop", "--set", "method=walrus",
                     "--max-iter", "3", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "NOT converged" in out and "--scale standard" in out and "method=auto" in out


def test_time_order_round_trips_through_predict(penguins, tmp_path, capsys):
    args = ["solve", "robust_mtl", "--data", str(penguins), "--label", "body_mass_g",
            "--categorical", "onehot", "--missing", "drop", "--test-size", "0.3", "--quiet"]
    docs = {}
    for role in ("--time", "--task"):
        run, model = tmp_path / f"{role[2:]}.json", tmp_path / f"{role[2:]}.npz"
        assert cli.main([*args, role, "year", "--json", str(run), "--save", str(model)]) == 0
        docs[role] = json.loads(run.read_text())
        assert cli.main(["predict", "--model", str(model), "--data", str(penguins)]) == 0
        out = capsys.readouterr()
        assert "mse" in out.err and "mae" in out.err and "r2" in out.err
    assert docs["--time"]["held_out"] == docs["--task"]["held_out"]
    assert cli.main(["predict", "--model", str(tmp_path / "time.npz"), "--data",
                     str(penguins), "--time", "year"]) == 0


def test_triplet_estimator_takes_pandas_labels(penguins):
    from solvers.estimators import SafeTripletMetricLearner

    df = pd.read_csv(penguins).dropna()
    X = df[["bill_length_mm", "bill_depth_mm", "flipper_length_mm"]].to_numpy()
    X = (X - X.mean(0)) / X.std(0)
    a = SafeTripletMetricLearner().fit(X, df.species)
    b = SafeTripletMetricLearner().fit(X, df.species.astype("category"))
    c = SafeTripletMetricLearner().fit(X, np.unique(df.species, return_inverse=True)[1])
    assert np.array_equal(a.components_, c.components_)
    assert np.array_equal(b.components_, c.components_)


def test_wwsvm_user_default_is_auto_everywhere():
    from solvers import wwsvm
    from solvers.estimators import WestonWatkinsSVC

    assert WestonWatkinsSVC().method == "auto"
    assert registry.get("wwsvm").default_params()["method"] == "auto"
    assert wwsvm.PARAMS["method"].default == "walrus"  # the paper's, for the solver and benches


def test_scores_name_the_users_classes():
    from solvers.scoring import score_predictions

    acc, bal = score_predictions("classification", np.array(["a", "b", "b", "c"]),
                                 np.array(["a", "b", "c", "c"]))
    assert (acc.name, acc.value) == ("accuracy", 0.75)
    assert bal.value == pytest.approx((1 + 0.5 + 1) / 3)
    mse, mae, r2 = score_predictions("regression", [1.0, 2.0, 3.0], [1.0, 2.0, 4.0])
    assert (mse.value, mae.value) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert r2.value == pytest.approx(0.5)
    assert preprocess.is_missing(np.array(["x", None, "", float("nan")], dtype=object)
                                 ).tolist() == [False, True, True, True]


def test_regression_targets_are_standardised_with_the_features_and_mapped_back(
        penguins, tmp_path, capsys):
    run, model = tmp_path / "run.json", tmp_path / "m.npz"
    assert cli.main(["solve", "robust_mtl", "--data", str(penguins), "--label", "body_mass_g",
                     "--time", "year", *PREP, "--test-size", "0.3", "--json", str(run),
                     "--save", str(model), "--quiet"]) == 0
    doc = json.loads(run.read_text())
    assert "targets standardised" in doc["preprocessing"]
    assert doc["result"]["stop_reason"] == "converged" and doc["held_out"]["r2"] > 0.5
    fp = saved.load_model(model).preprocessing
    y = pd.read_csv(penguins)["body_mass_g"].dropna().to_numpy()
    assert 0.5 * y.std() < fp.target_scale < 2.0 * y.std()
    pred = tmp_path / "pred.csv"
    capsys.readouterr()
    assert cli.main(["predict", "--model", str(model), "--data", str(penguins), "--out",
                     str(pred)]) == 0
    p = np.array([float(v) for v in _predictions(pred) if v])
    assert p.size == 333 and abs(p.mean() - y.mean()) < 0.1 * y.std()  # in grams again


@pytest.mark.parametrize("model", sorted(CASES))
def test_standardised_file_converges_for_every_model(penguins, tmp_path, model):
    run = tmp_path / "run.json"
    roles = CASES[model]
    assert cli.main(["solve", model, "--data", str(penguins), *roles, *PREP, "--test-size",
                     "0.3", "--json", str(run), "--quiet"]) == 0
    doc = json.loads(run.read_text())
    assert doc["result"]["stop_reason"] == "converged", doc["result"]["stop_reason"]
    assert doc["preprocessing"].startswith("standardised")


def test_features_and_ignore_choose_the_columns(penguins):
    t = datafiles.read_table(penguins, label="species", prep=Preprocessing(
        features=("bill_length_mm", "island"), categorical="onehot", missing="drop"))
    assert t.feature_names == ("bill_length_mm", "island=Biscoe", "island=Dream",
                               "island=Torgersen")
    assert t.n == 342  # only the rows missing a chosen column are dropped
    t = datafiles.read_table(penguins, label="species", prep=Preprocessing(
        ignore=("island", "sex"), missing="drop"))
    assert "sex" not in " ".join(t.feature_names) and t.n == 342
    with pytest.raises(datafiles.DataFileError, match="no column 'beak'"):
        datafiles.read_table(penguins, label="species", prep=Preprocessing(
            ignore=("beak",), categorical="drop", missing="drop"))
