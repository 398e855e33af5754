"""Users' data files: every format into the same Problem, and every bad file refused clearly."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from explorer import cli, datafiles
from explorer.datafiles import DataFileError

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SCHOOL = SHARED / "school.mat"


def _blobs(n: int = 60, d: int = 3, k: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    X = rng.normal(size=(n, d)) + 3.0 * np.eye(k, d)[y]
    return X, y


def _csv(path: Path, X, y, *, sep: str = ",", label: str = "species", names=None,
         tasks=None) -> Path:
    names = names or [f"f{j}" for j in range(X.shape[1])]
    head = [*names] + (["task"] if tasks is not None else []) + [label]
    rows = [sep.join(head)]
    for i in range(X.shape[0]):
        cells = [repr(float(v)) for v in X[i]]
        if tasks is not None:
            cells.append(str(tasks[i]))
        cells.append(str(y[i]))
        rows.append(sep.join(cells))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


# ----------------------------------------------------------------- good files


def test_every_format_gives_the_same_problem(tmp_path):
    """CSV, TSV, csv.gz, svmlight, svmlight.gz, .npz, Parquet and .mat: one Problem."""
    import pandas as pd
    import scipy.sparse as sp
    from scipy.io import savemat
    from sklearn.datasets import dump_svmlight_file

    X, y = _blobs()
    names = ["a", "b", "c"]
    files = [_csv(tmp_path / "d.csv", X, y, names=names),
             _csv(tmp_path / "d.tsv", X, y, sep="\t", names=names)]
    gz = tmp_path / "d.csv.gz"
    gz.write_bytes(gzip.compress(files[0].read_bytes()))
    files.append(gz)
    dump_svmlight_file(X, y, str(tmp_path / "d.svm"), zero_based=True)
    files.append(tmp_path / "d.svm")
    sgz = tmp_path / "d.svm.gz"
    sgz.write_bytes(gzip.compress((tmp_path / "d.svm").read_bytes()))
    files.append(sgz)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    files.append(tmp_path / "d.npz")
    df = pd.DataFrame(X, columns=names)
    df["species"] = y
    df.to_parquet(tmp_path / "d.parquet")
    files.append(tmp_path / "d.parquet")
    savemat(tmp_path / "d.mat", {"X": X, "y": y.reshape(-1, 1)})
    files.append(tmp_path / "d.mat")
    for f in files:
        p = datafiles.load_problem("wwsvm", f)
        Xp = p.data["X"]
        assert Xp.shape == X.shape, f
        # WW-SVM takes sparse features: an svmlight file stays CSR
        assert sp.issparse(Xp) == (".svm" in f.name), f
        Xp = Xp.toarray() if sp.issparse(Xp) else Xp
        np.testing.assert_allclose(Xp, X, rtol=1e-12, atol=1e-12, err_msg=str(f))
        np.testing.assert_array_equal(p.data["y"], y, err_msg=str(f))
        assert p.info["source"] == str(f)
    # column names come from the header; the explicit override beats the extension
    assert datafiles.read_table(files[0]).feature_names == tuple(names)
    txt = tmp_path / "d.dat"
    txt.write_bytes(files[0].read_bytes())
    with pytest.raises(DataFileError, match="unknown file extension"):
        datafiles.read_table(txt)
    assert datafiles.read_table(txt, fmt="csv").n == X.shape[0]


def test_string_labels_named_label_column_and_tasks(tmp_path):
    X, y = _blobs(n=40, k=2)
    names = np.array(["no", "yes"])[y]
    tasks = np.array(["s1", "s2", "s3", "s4"])[np.arange(40) % 4]
    f = _csv(tmp_path / "m.csv", X, names, tasks=tasks, label="outcome")
    # the label is a named column that is not the last one here
    import pandas as pd

    df = pd.read_csv(f)
    df = df[["outcome", "f0", "f1", "f2", "task"]]
    df.to_csv(f, index=False)
    p = datafiles.load_problem("mtmkl", f, label="outcome")
    assert p.data["X"].shape == (40, 3) and set(p.data["y"]) == {-1.0, 1.0}
    assert list(p.info["class_names"]) == ["no", "yes"]
    assert list(p.info["task_names"]) == ["s1", "s2", "s3", "s4"]
    np.testing.assert_array_equal(p.data["y"], np.where(names == "yes", 1.0, -1.0))
    # held-out part: every task keeps training rows
    p = datafiles.load_problem("caso", f, label="outcome", test_size=0.25, seed=1)
    assert sum(len(v) for v in p.info["ys_test"]) == 8
    assert all(len(v) == 8 for v in p.data["ys"])


def test_time_column_orders_the_tasks(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = rng.normal(size=30)
    year = np.repeat([2003, 2001, 2002], 10)
    import pandas as pd

    pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "year": year, "y": y}).to_csv(
        tmp_path / "t.csv", index=False)
    p = datafiles.load_problem("robust_mtl", tmp_path / "t.csv", time="year", label="y")
    assert list(p.info["task_names"]) == [2001, 2002, 2003]
    np.testing.assert_array_equal(p.data["Xs"][0], X[10:20])


def test_school_mat_loads_in_malsar_layout():
    # the project's real data sit in ../shared/data beside the repository (as in CI)
    assert SCHOOL.exists(), f"tests/test_datafiles.py needs {SCHOOL} (../shared/data)"
    p = datafiles.load_problem("caso", SCHOOL)
    assert len(p.data["Xs"]) == 139
    assert sum(x.shape[0] for x in p.data["Xs"]) == 15362
    assert p.data["Xs"][0].shape[1] == 28


def test_sparse_svmlight_stays_sparse_for_wwsvm(tmp_path):
    import scipy.sparse as sp
    from sklearn.datasets import dump_svmlight_file

    X, y = _blobs()
    dump_svmlight_file(X, y, str(tmp_path / "s.svm"))
    t = datafiles.read_table(tmp_path / "s.svm")
    assert t.sparse
    p = datafiles.load_problem("wwsvm", tmp_path / "s.svm")
    assert sp.issparse(p.data["X"])
    np.testing.assert_array_equal(p.data["X"].toarray(), t.X.toarray())


def test_sparse_svmlight_densified_when_small_refused_when_big(tmp_path, monkeypatch):
    # the metric learner takes dense features only
    from sklearn.datasets import dump_svmlight_file

    X, y = _blobs()
    dump_svmlight_file(X, y, str(tmp_path / "s.svm"))
    t = datafiles.read_table(tmp_path / "s.svm")
    with pytest.warns(UserWarning, match=r"s\.svm: model triplet_screening takes dense "
                                         r"features: .* is densified"):
        p = datafiles.load_problem("triplet_screening", tmp_path / "s.svm")
    np.testing.assert_array_equal(p.data["X"], t.X.toarray())
    monkeypatch.setattr(datafiles, "MAX_DENSE_BYTES", 100)
    with pytest.raises(DataFileError,
                       match=r"s\.svm: model triplet_screening takes dense features"):
        datafiles.load_problem("triplet_screening", tmp_path / "s.svm")


# ------------------------------------------------------------------ bad files


def _bad(path: Path, match: str, model: str = "wwsvm", **kw) -> str:
    with pytest.raises(DataFileError) as info:
        datafiles.load_problem(model, path, **kw)
    msg = str(info.value)
    assert path.name in msg, msg
    assert "\n" not in msg
    import re

    assert re.search(match, msg), msg
    return msg


def test_empty_file(tmp_path):
    (tmp_path / "e.csv").write_text("")
    _bad(tmp_path / "e.csv", "empty")
    (tmp_path / "w.csv").write_text("\n\n  \n")
    _bad(tmp_path / "w.csv", "empty")


def test_header_only(tmp_path):
    (tmp_path / "h.csv").write_text("a,b,label\n")
    _bad(tmp_path / "h.csv", "no data rows")


def test_wrong_delimiter(tmp_path):
    (tmp_path / "s.csv").write_text("a;b;label\n1;2;0\n3;4;1\n")
    _bad(tmp_path / "s.csv", r"only one column.*wrong delimiter")


def test_non_numeric_cell_names_line_and_column(tmp_path):
    (tmp_path / "n.csv").write_text("a,b,label\n1,2,0\n3,x7,1\n5,6,1\n")
    _bad(tmp_path / "n.csv", r"line 3, column 'b': non-numeric value 'x7'")


@pytest.mark.parametrize("cell, what", [("", "missing value"), ("inf", "inf"),
                                        ("nan", "missing value")])
def test_nan_and_inf(tmp_path, cell, what):
    (tmp_path / "f.csv").write_text(f"a,b,label\n1,2,0\n3,4,1\n5,{cell},1\n")
    _bad(tmp_path / "f.csv", rf"line 4, column 'b': .*{what}")


def test_missing_label_cell(tmp_path):
    (tmp_path / "l.csv").write_text("a,b,label\n1,2,0\n3,4,\n5,6,1\n")
    _bad(tmp_path / "l.csv", r"line 3, column 'label': missing value")


def test_misnamed_label_and_task_columns(tmp_path):
    X, y = _blobs(n=20)
    f = _csv(tmp_path / "c.csv", X, y, tasks=np.arange(20) % 2)
    _bad(f, r"no label column 'specie' \(--label\); columns: f0, f1, f2, task, species",
         label="specie")
    _bad(f, r"no task column 'school'", model="caso", task="school")
    g = _csv(tmp_path / "g.csv", X, y)
    _bad(g, r"model caso needs a task column", model="caso")


def test_one_class(tmp_path):
    X, _ = _blobs(n=10)
    f = _csv(tmp_path / "o.csv", X, np.zeros(10, dtype=int))
    _bad(f, r"one class only")


def test_labels_the_model_cannot_use(tmp_path):
    X, y = _blobs(n=30, k=3)
    f = _csv(tmp_path / "k.csv", X, y, tasks=np.arange(30) % 2)
    _bad(f, r"3 classes; model mtmkl takes binary labels", model="mtmkl")
    g = _csv(tmp_path / "t.csv", X, np.array(["a", "b", "c"])[y], tasks=np.arange(30) % 2)
    _bad(g, r"text labels; robust_mtl takes real targets", model="robust_mtl")
    rng = np.random.default_rng(0)
    h = _csv(tmp_path / "r.csv", X, rng.normal(size=30))
    _bad(h, r"real-valued .* needs class labels")


def test_train_and_test_feature_counts_differ(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y = _blobs()
    dump_svmlight_file(X, y, str(tmp_path / "tr.svm"), zero_based=True)
    X2 = np.hstack([X, X])
    dump_svmlight_file(X2, y, str(tmp_path / "te.svm"), zero_based=True)
    with pytest.raises(DataFileError, match=r"te\.svm"):
        datafiles.load_problem("wwsvm", tmp_path / "tr.svm", test=tmp_path / "te.svm")
    np.savez(tmp_path / "tr.npz", X=X, y=y)
    np.savez(tmp_path / "te.npz", X=X[:, :2], y=y)
    with pytest.raises(DataFileError, match=r"te\.npz: 2 features, the training file tr\.npz "
                                            r"has 3"):
        datafiles.load_problem("wwsvm", tmp_path / "tr.npz", test=tmp_path / "te.npz")
    _csv(tmp_path / "tr.csv", X, y)
    _csv(tmp_path / "te.csv", X[:, :2], y)
    with pytest.raises(DataFileError, match=r"te\.csv: the feature columns f2 of the training"):
        datafiles.load_problem("wwsvm", tmp_path / "tr.csv", test=tmp_path / "te.csv")


def test_truncated_gz(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y = _blobs(n=2000, d=20)
    dump_svmlight_file(X, y, str(tmp_path / "b.svm"))
    data = gzip.compress((tmp_path / "b.svm").read_bytes())
    (tmp_path / "b.svm.gz").write_bytes(data[: len(data) // 2])
    _bad(tmp_path / "b.svm.gz", "truncated or corrupt gzip")
    text = _csv(tmp_path / "c.csv", X, y).read_bytes()
    (tmp_path / "c.csv.gz").write_bytes(gzip.compress(text)[:-100])
    _bad(tmp_path / "c.csv.gz", "truncated or corrupt gzip")


def test_binary_garbage_under_a_text_extension(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("g.csv", "g.svm", "g.txt"):
        (tmp_path / name).write_bytes(b"a,b\n" + rng.bytes(4000))
        _bad(tmp_path / name, r"binary content")


def test_mat_without_x_y(tmp_path):
    from scipy.io import savemat

    savemat(tmp_path / "m.mat", {"data": np.ones((3, 2)), "target": np.ones(3)})
    _bad(tmp_path / "m.mat", r"needs variables 'X' and 'Y' .*found: data, target")
    (tmp_path / "n.mat").write_bytes(b"not a mat file at all" * 10)
    _bad(tmp_path / "n.mat", r"not a readable MATLAB")


def test_npz_without_x_and_object_arrays(tmp_path):
    np.savez(tmp_path / "a.npz", data=np.ones((3, 2)))
    _bad(tmp_path / "a.npz", r"no array 'X'")
    np.savez(tmp_path / "o.npz", X=np.ones((3, 2)), y=np.array([1, "a", None], dtype=object))
    _bad(tmp_path / "o.npz", r"object arrays are not read")


def test_far_beyond_the_size_budget_is_refused_from_its_size(tmp_path):
    """A sparse 600 MB file: refused from ``stat`` before a byte of it is read."""
    big = tmp_path / "huge.csv"
    with open(big, "wb") as f:
        f.truncate(datafiles.MAX_FILE_BYTES + 1)  # no disk blocks: a hole
    msg = _bad(big, r"beyond the size budget .*refused before reading")
    assert "512 MB" in msg


def test_cli_bad_file_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "n.csv").write_text("a,b,label\n1,2,0\n3,x7,1\n5,6,1\n")
    code = cli.main(["solve", "wwsvm", "--data", str(tmp_path / "n.csv")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip() == ("dualscope: n.csv: line 3, column 'b': non-numeric value 'x7'; "
                           "for text columns use --categorical onehot or --categorical drop "
                           "(or --ignore b)")
    code = cli.main(["solve", "wwsvm", "--dataset", "iris", "--label", "y"])
    assert code == 2 and "--label applies to --data" in capsys.readouterr().err
    code = cli.main(["solve", "wwsvm", "--dataset", "iris", "--data", str(tmp_path / "n.csv")])
    assert code == 2 and "not both" in capsys.readouterr().err


def test_no_partial_output_after_a_bad_file(tmp_path, capsys):
    """A refused file leaves no model file behind (``--save`` is written after solving)."""
    (tmp_path / "h.csv").write_text("a,b,label\n")
    out = tmp_path / "m.npz"
    assert cli.main(["solve", "wwsvm", "--data", str(tmp_path / "h.csv"), "--save",
                     str(out)]) == 2
    assert not out.exists()
    assert os.listdir(tmp_path) == ["h.csv"]


def test_sweep_on_a_file_and_a_bad_one(tmp_path, capsys):
    X, y = _blobs(n=45)
    f = _csv(tmp_path / "s.csv", X, np.array(["a", "b", "c"])[y])
    assert cli.main(["sweep", "wwsvm", "--data", str(f), "--grid", "C=0.5,2", "--seeds", "0,1",
                     "--test-size", "0.3", "--backend", "serial", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "sweep wwsvm on file s.csv: 4 points" in out and "4 rows, 4 converged" in out
    (tmp_path / "b.csv").write_text("a,b,label\n")
    assert cli.main(["sweep", "wwsvm", "--data", str(tmp_path / "b.csv"), "--grid",
                     "C=1", "--backend", "serial"]) == 2
    assert capsys.readouterr().err.strip() == "dualscope: b.csv: no data rows (header only: a, " \
                                              "b, label)"


def test_a_file_is_a_dataset_name(tmp_path):
    """``file:PATH?label=...`` works wherever a dataset name does (data sources, sweeps)."""
    from explorer.datasource import DataSource, resolve

    X, y = _blobs(n=30)
    f = _csv(tmp_path / "with space.csv", X, y, label="lab")
    name = datafiles.file_spec(f, label="lab", test_size=0.2)
    ds_name, ds = resolve("wwsvm", name)
    assert ds_name == name == DataSource.from_file("wwsvm", f, label="lab", test_size=0.2).key
    a, b = ds(seed=0), ds(seed=1)
    assert a.data["X"].shape[0] + a.info["X_test"].shape[0] == 30
    assert not np.array_equal(a.info["X_test"], b.info["X_test"])  # the seed draws the split
    assert datafiles.parse_file_spec(name) == (str(f), {"label": "lab", "test_size": 0.2})
