"""Test and predict files in the training file's frame; bounded reads (issue 41)."""

from __future__ import annotations

import gzip
import io
import time
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from explorer import cli, datafiles
from explorer.datafiles import DataFileError, load_problem, read_table


def _svm(path: Path, X, y, base: int) -> Path:
    with open(path, "w") as f:
        for row, lab in zip(X.tolist(), np.asarray(y).tolist(), strict=True):
            f.write(f"{lab} " + " ".join(f"{j + base}:{v!r}" for j, v in enumerate(row)
                                         if v != 0) + "\n")
    return path


def _blobs(n=60, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % k
    return rng.normal(size=(n, d)) + 2.0 * np.eye(k, d)[y], y


def _err(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err, err
    return err


# ----------------------------------------------------------------- svmlight frame


@pytest.fixture
def svm_pair(tmp_path):
    """A zero-based training file and a test file that never uses feature 0."""
    X, y = _blobs()
    Xt = X.copy()
    Xt[:, 0] = 0.0
    return (_svm(tmp_path / "train0.svm", X, y, 0), _svm(tmp_path / "test0.svm", Xt, y, 0),
            X, Xt, y)


def test_a_test_file_is_read_with_the_training_files_index_base(svm_pair):
    train, test, X, Xt, y = svm_pair
    tab = read_table(train)
    assert tab.extra["zero_based"] is True and tab.d == 4
    alone = read_table(test)  # on its own the file looks one-based: shifted columns
    assert alone.d == 3
    framed = read_table(test, n_features=tab.d, zero_based=True)
    np.testing.assert_array_equal(framed.X.toarray(), Xt)
    prob = load_problem("wwsvm", train, test=test)
    np.testing.assert_array_equal(np.asarray(prob.info["X_test"].todense()
                                             if hasattr(prob.info["X_test"], "todense")
                                             else prob.info["X_test"]), Xt)


def test_one_based_training_files_keep_their_frame(tmp_path):
    X, y = _blobs()
    train = _svm(tmp_path / "train1.svm", X, y, 1)
    tab = read_table(train)
    assert tab.extra["zero_based"] is False and tab.d == 4
    np.testing.assert_array_equal(tab.X.toarray(), X)
    Xt = X.copy()
    Xt[:, 3] = 0.0  # the last feature never used: the test file still has 4 columns
    test = _svm(tmp_path / "test1.svm", Xt, y, 1)
    np.testing.assert_array_equal(
        read_table(test, n_features=4, zero_based=False).X.toarray(), Xt)
    # a one-based file read alone but with n_features (a model without a recorded base)
    np.testing.assert_array_equal(read_table(test, n_features=4).X.toarray(), Xt)
    # index 0 in a test file of a one-based training file
    bad = _svm(tmp_path / "bad.svm", X, y, 0)
    with pytest.raises(DataFileError, match=r"bad\.svm: uses feature index 0.*one-based"):
        load_problem("wwsvm", train, test=bad)


def test_a_test_file_beyond_the_training_features_is_refused(tmp_path):
    X, y = _blobs()
    train = _svm(tmp_path / "train0.svm", X, y, 0)
    wide = _svm(tmp_path / "wide.svm", np.hstack([X, X]), y, 0)
    with pytest.raises(DataFileError, match=r"wide\.svm: uses feature indices beyond the "
                                            r"training file's 4 features"):
        load_problem("wwsvm", train, test=wide)


def test_cli_solve_and_predict_agree_in_the_training_frame(svm_pair, tmp_path, capsys):
    train, test, X, Xt, y = svm_pair
    model = tmp_path / "m.npz"
    assert cli.main(["solve", "wwsvm", "--data", str(train), "--save", str(model),
                     "--quiet"]) == 0
    from solvers.saved import load_model

    sm = load_model(model)
    assert sm.zero_based is True
    expected = sm.predict(Xt)
    out = tmp_path / "p.csv"
    assert cli.main(["predict", "--model", str(model), "--data", str(test), "--out",
                     str(out)]) == 0
    got = pd.read_csv(out)["prediction"].to_numpy()
    np.testing.assert_array_equal(got, expected)


# ----------------------------------------------------------------- test labels


def _csv(path: Path, X, y, tasks=None, label="y") -> Path:
    df = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    if tasks is not None:
        df["task"] = tasks
    df[label] = y
    df.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("model,classes,extra", [
    ("wwsvm", ["cat", "dog", "eel"], {}),
    ("caso", ["cat", "dog"], {"tasks": True}),  # the audit's case: two classes, 'bird'
    ("mtmkl", ["cat", "dog"], {"tasks": True}),
    ("triplet_screening", ["cat", "dog"], {}),
])
def test_an_unseen_test_label_is_refused_by_every_model(tmp_path, model, classes, extra):
    X, y = _blobs(n=40, k=len(classes))
    labels = np.array(classes)[y]
    tasks = np.arange(40) % 2 if extra else None
    train = _csv(tmp_path / "train.csv", X, labels, tasks)
    test_labels = labels[:6].astype(object)
    test_labels[2] = "bird"
    test = _csv(tmp_path / "test.csv", X[:6], test_labels, None if tasks is None
                else tasks[:6])
    with pytest.raises(DataFileError, match=r"test\.csv: column 'y': labels \['bird'\] do "
                                            r"not occur in the training data train\.csv"):
        load_problem(model, train, test=test)


@pytest.mark.parametrize("model", ["wwsvm", "caso", "mtmkl", "triplet_screening"])
def test_a_fractional_test_label_is_refused_not_cast(tmp_path, model):
    X, y = _blobs(n=40, k=2)
    tasks = np.arange(40) % 2 if model in ("caso", "mtmkl") else None
    train = _csv(tmp_path / "train.csv", X, y, tasks)
    yt = y[:6].astype(float)
    yt[1] = 1.5
    test = _csv(tmp_path / "test.csv", X[:6], yt, None if tasks is None else tasks[:6])
    match = (r"labels \[1\.5\] are not integral" if model != "caso" else
             r"labels \[1\.5\] (are not integral|do not occur)")
    with pytest.raises(DataFileError, match=r"test\.csv: column 'y': " + match):
        load_problem(model, train, test=test)


def test_known_test_labels_still_read(tmp_path):
    X, y = _blobs(n=40, k=2)
    train = _csv(tmp_path / "train.csv", X, np.array(["cat", "dog"])[y], np.arange(40) % 2)
    test = _csv(tmp_path / "test.csv", X[:6], np.array(["cat", "dog"])[y[:6]],
                np.arange(6) % 2)
    prob = load_problem("caso", train, test=test)
    signs = np.concatenate(prob.info["ys_test"])
    assert set(signs.tolist()) == {-1.0, 1.0}


# ------------------------------------------------------ complex numbers and dates


def test_complex_mat_is_refused(tmp_path):
    from scipy.io import savemat

    X, y = _blobs(n=10)
    savemat(tmp_path / "c.mat", {"X": X + 1j, "y": y})
    with pytest.raises(DataFileError, match=r"c\.mat: X holds complex numbers"):
        read_table(tmp_path / "c.mat")
    cells = np.empty((1, 2), dtype=object)
    cells[0, 0], cells[0, 1] = X[:5], X[5:] * 1j
    ycells = np.empty((1, 2), dtype=object)
    ycells[0, 0], ycells[0, 1] = y[:5, None], y[5:, None]
    savemat(tmp_path / "cells.mat", {"X": cells, "Y": ycells})
    with pytest.raises(DataFileError, match=r"cells\.mat: X holds complex numbers"):
        read_table(tmp_path / "cells.mat")
    savemat(tmp_path / "cy.mat", {"X": X, "y": y + 1j})
    with pytest.raises(DataFileError, match=r"cy\.mat: y holds complex numbers"):
        read_table(tmp_path / "cy.mat")


@pytest.mark.parametrize("column", [
    pd.date_range("2020-01-01", periods=10),
    pd.date_range("2020-01-01", periods=10, tz="UTC"),
    pd.to_timedelta(np.arange(10), unit="D"),
])
def test_parquet_date_and_duration_columns_are_refused(tmp_path, column):
    X, y = _blobs(n=10)
    df = pd.DataFrame({"a": X[:, 0], "when": column, "y": y})
    df.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(DataFileError, match=r"d\.parquet: column 'when' holds dates/times"):
        read_table(tmp_path / "d.parquet")


def test_csv_date_strings_are_refused(tmp_path):
    (tmp_path / "d.csv").write_text("a,when,y\n1,2020-01-01,0\n2,2020-01-02,1\n")
    with pytest.raises(DataFileError, match=r"d\.csv: line 2, column 'when': non-numeric"):
        read_table(tmp_path / "d.csv")


# -------------------------------------------------------------- huge indices


def test_a_huge_svmlight_index_is_one_line_everywhere(tmp_path, capsys, monkeypatch):
    path = tmp_path / "big.svm"
    path.write_text(f"1 {2 * 10**12}:1\n2 1:1\n")
    with pytest.raises(DataFileError, match=r"big\.svm: a feature index \(or qid\) is too large"):
        read_table(path)
    with pytest.raises(DataFileError, match=r"big\.svm: a feature index \(or qid\) is too large"):
        load_problem("wwsvm", path)
    assert cli.main(["solve", "wwsvm", "--data", str(path)]) == 2
    err = _err(capsys)
    assert err.startswith("dualscope: big.svm: a feature index (or qid) is too large")
    (tmp_path / "qid.svm").write_text(f"1 qid:{10**30} 1:2\n2 qid:1 1:1\n")
    with pytest.raises(DataFileError, match=r"qid\.svm: a feature index \(or qid\) is too"):
        read_table(tmp_path / "qid.svm")
    from explorer import registry
    from explorer.ui import upload

    store: dict = {}
    monkeypatch.setattr(upload, "_store", lambda: store)
    upload.set_upload("wwsvm", "big.svm", path.read_bytes())  # the page's upload
    with pytest.raises(DataFileError, match=r"big\.svm: a feature index \(or qid\) is too large"):
        upload.upload_source(registry.get("wwsvm"), {}).read()
    upload.clear_upload("wwsvm")


def test_a_foreign_reader_error_names_the_file(tmp_path, monkeypatch):
    def boom(*_a, **_k):
        raise ZeroDivisionError("deep inside")

    monkeypatch.setitem(datafiles.READERS, "csv", boom)
    (tmp_path / "x.csv").write_text("a,y\n1,0\n")
    with pytest.raises(DataFileError, match=r"^x\.csv: cannot be read as csv "
                                            r"\(ZeroDivisionError: deep inside\)$"):
        read_table(tmp_path / "x.csv")


def test_a_fifo_data_file_is_refused(tmp_path):
    import os

    os.mkfifo(tmp_path / "d.csv")
    with pytest.raises(DataFileError, match=r"d\.csv: not a regular file"):
        read_table(tmp_path / "d.csv")


# --------------------------------------------------------------- bounded reads


def test_a_gz_bomb_with_one_long_line_is_refused_quickly(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "MAX_LINE_BYTES", 4 * 1024**2)
    path = tmp_path / "bomb.csv.gz"
    with gzip.open(path, "wb") as f:
        f.write(b"a,b\n")
        for _ in range(64):
            f.write(b"1" * (1 << 20))  # one 64 MB line
    assert path.stat().st_size < 1024**2
    t0 = time.perf_counter()
    with pytest.raises(DataFileError, match=r"bomb\.csv\.gz: a line longer than 4 MB"):
        read_table(path)
    assert time.perf_counter() - t0 < 10


@pytest.mark.parametrize("name", ["bomb.csv.gz", "bomb.svm.gz"])
def test_a_gz_bomb_of_many_rows_is_refused_by_what_it_yields(tmp_path, name):
    path = tmp_path / name
    row = b"1,2\n" if name.endswith(".csv.gz") else b"1 1:2\n"
    with gzip.open(path, "wb") as f:
        f.write(b"a,b\n" if name.endswith(".csv.gz") else b"")
        for _ in range(64):
            f.write(row * ((1 << 20) // len(row)))  # 64 MB of rows
    assert path.stat().st_size * 5 < 16 * 1024**2  # within the on-disk budget
    t0 = time.perf_counter()
    with pytest.raises(DataFileError, match=r"more than 16 MB of decompressed text"):
        read_table(path, max_bytes=16 * 1024**2)
    assert time.perf_counter() - t0 < 10


def test_a_long_line_in_a_plain_file_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "MAX_LINE_BYTES", 1024**2)
    path = tmp_path / "long.svm"
    path.write_bytes(b"1 " + b" ".join(f"{j}:1".encode() for j in range(1, 400_000)) + b"\n")
    with pytest.raises(DataFileError, match=r"long\.svm: a line longer than 1 MB"):
        read_table(path)


def _forge_member(zpath: Path, name: str, shape) -> None:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(zpath, "a") as z:
        z.writestr(f"{name}.npy", buf.getvalue() + b"\0" * 64)


def test_npz_reads_only_the_needed_members(tmp_path):
    X, y = _blobs(n=20)
    np.savez(tmp_path / "d.npz", X=X, y=y)
    _forge_member(tmp_path / "d.npz", "unused", (10**6, 10**6))  # declares 8 TB
    t0 = time.perf_counter()
    tab = read_table(tmp_path / "d.npz")
    assert time.perf_counter() - t0 < 5
    np.testing.assert_array_equal(tab.X, X)


def test_npz_member_headers_are_checked_before_reading(tmp_path):
    y = np.arange(4)
    np.savez(tmp_path / "d.npz", y=y)
    _forge_member(tmp_path / "d.npz", "X", (10**6, 10**6))
    with pytest.raises(DataFileError, match=r"d\.npz: array 'X': its header declares "
                                            r"shape \(1000000, 1000000\)"):
        read_table(tmp_path / "d.npz")
    # a compressed member: small on disk, counted by what it yields
    np.savez_compressed(tmp_path / "e.npz", X=np.zeros((2000, 50)), y=np.arange(2000))
    assert (tmp_path / "e.npz").stat().st_size < 100_000
    with pytest.raises(DataFileError, match=r"e\.npz: array 'X'.*beyond 0 MB"):
        read_table(tmp_path / "e.npz", max_bytes=200_000)


def test_a_wide_csv_is_refused_from_its_header_and_a_narrower_one_read_fast(tmp_path):
    cols = datafiles.MAX_COLUMNS
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.normal(size=(10, cols + 5)),
                        columns=[f"c{j}" for j in range(cols + 5)])
    wide.to_csv(tmp_path / "wide.csv", index=False)
    t0 = time.perf_counter()
    with pytest.raises(DataFileError, match=rf"wide\.csv: {cols + 5:,} columns, more than "
                                            rf"the {cols:,}"):
        read_table(tmp_path / "wide.csv")
    assert time.perf_counter() - t0 < 5
    narrow = wide.iloc[:, :cols]
    narrow.to_csv(tmp_path / "narrow.csv", index=False)
    t0 = time.perf_counter()
    tab = read_table(tmp_path / "narrow.csv")
    assert time.perf_counter() - t0 < 30 and tab.d == cols - 1
    np.testing.assert_array_equal(tab.X, narrow.to_numpy()[:, :-1])


def test_npz_complex_or_date_roles_are_refused(tmp_path):
    X, y = _blobs(n=10)
    np.savez(tmp_path / "c.npz", X=X, y=y + 1j)
    with pytest.raises(DataFileError, match=r"c\.npz: array 'y': dtype complex128 is not "
                                            r"read here"):
        read_table(tmp_path / "c.npz")
    np.savez(tmp_path / "t.npz", X=X, y=y,
             time=np.arange(10).astype("datetime64[D]"))
    with pytest.raises(DataFileError, match=r"t\.npz: array 'time': dtype datetime64"):
        read_table(tmp_path / "t.npz")
    np.savez(tmp_path / "b.npz", X=X, y=y.astype(bool))  # booleans are labels
    assert read_table(tmp_path / "b.npz").y.dtype == bool
