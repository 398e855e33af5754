"""A saved model is validated when loaded (issue 41): one line naming the file and field."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

from solvers import saved
from solvers.saved import FORMAT, SavedModel, load_model

RNG = np.random.default_rng(0)


def _models() -> dict[str, SavedModel]:
    """One valid model of each kind, built directly (no solve)."""
    d = 3
    return {
        "wwsvm": SavedModel("wwsvm", {"W": RNG.normal(size=(d, 3)),
                                      "classes": np.arange(3), "intercept": np.zeros(3),
                                      "alpha": np.zeros((5, 3))},
                            class_names=np.array(["a", "b", "c"]),
                            feature_names=np.array(["x", "y", "z"])),
        "caso": SavedModel("caso", {"U": RNG.normal(size=(d, 2)), "M": np.eye(d)},
                           params={"loss": "hinge"}, class_names=np.array(["cat", "dog"]),
                           task_names=np.array(["n", "s"])),
        "robust_mtl": SavedModel("robust_mtl", {"W": RNG.normal(size=(d, 2))},
                                 task_names=np.array([2001, 2002])),
        "mtmkl": SavedModel("mtmkl", {"W": RNG.normal(size=(2, 2, d)),
                                      "theta": np.ones(2)},
                            class_names=np.array([-1.0, 1.0]), task_names=np.array(["n", "s"])),
        "triplet_screening": SavedModel("triplet_screening",
                                        {"L": np.eye(d), "M": np.eye(d),
                                         "X_ref": RNG.normal(size=(4, d)),
                                         "y_ref": np.array([0, 1, 1, 0])},
                                        class_names=np.array(["p", "q"])),
    }


WEIGHT = {"wwsvm": "W", "caso": "U", "robust_mtl": "W", "mtmkl": "W",
          "triplet_screening": "L"}


def _tasks(sm, n):
    return None if not sm.needs_tasks else np.resize(sm.task_names, n)


def _write_npz(path, meta, arrays):
    np.savez(path, __meta__=np.array(json.dumps(meta)), **arrays)


def _npz_parts(sm):
    with np.load(io.BytesIO(sm.to_bytes("npz"))) as z:
        return json.loads(str(z["__meta__"])), {k: z[k] for k in z.files if k != "__meta__"}


def _one_line_error(path, *fields):
    with pytest.raises(ValueError) as info:
        load_model(path)
    msg = str(info.value)
    assert "\n" not in msg and path.name in msg, msg
    for f in fields:
        assert f in msg, msg
    return msg


@pytest.mark.parametrize("model", list(WEIGHT))
@pytest.mark.parametrize("fmt", ["npz", "json"])
def test_valid_models_round_trip(tmp_path, model, fmt):
    sm = _models()[model]
    path = tmp_path / f"m.{fmt}"
    sm.save(path)
    back = load_model(path)
    X = RNG.normal(size=(6, 3))
    np.testing.assert_array_equal(back.predict(X, _tasks(sm, 6)), sm.predict(X, _tasks(sm, 6)))


@pytest.mark.parametrize("model", list(WEIGHT))
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused_at_load(tmp_path, model, bad):
    meta, arrays = _npz_parts(_models()[model])
    key = WEIGHT[model]
    arrays[key] = arrays[key].copy()
    arrays[key].flat[1] = bad
    _write_npz(tmp_path / "m.npz", meta, arrays)
    _one_line_error(tmp_path / "m.npz", f"arrays.{key}", "finite")
    doc = _models()[model].to_json()
    doc["arrays"][key]["data"][1] = bad  # json.dumps writes NaN / Infinity
    (tmp_path / "m.json").write_text(json.dumps(doc))
    _one_line_error(tmp_path / "m.json", f"arrays.{key}", "finite")


@pytest.mark.parametrize("mutate,fields", [
    (lambda m, a: a.update(W=a["W"][:, :1]), ["arrays.classes", "arrays.W axis 1 has 1"]),
    (lambda m, a: a.pop("W"), ["arrays.W", "missing"]),
    (lambda m, a: m.update(model="svm"), ["model", "unknown model kind 'svm'"]),
    (lambda m, a: m.update(model=["wwsvm"]), ["model", "unknown model kind"]),
    (lambda m, a: a.update(class_names=np.array(["a", "b"])), ["names.class_names",
                                                                "length 2"]),
    (lambda m, a: a.update(feature_names=np.array(["x"])), ["names.feature_names"]),
    (lambda m, a: a.update(W=a["W"].astype(str)), ["arrays.W", "dtype"]),
    (lambda m, a: a.update(intercept=np.zeros(5)), ["arrays.intercept"]),
    (lambda m, a: m.update(params=[1, 2]), ["params", "mapping"]),
    (lambda m, a: m.update(label_name=3), ["label_name"]),
    (lambda m, a: m.update(version=99), ["version"]),
])
def test_wwsvm_npz_defects_name_the_field(tmp_path, mutate, fields):
    meta, arrays = _npz_parts(_models()["wwsvm"])
    mutate(meta, arrays)
    _write_npz(tmp_path / "m.npz", meta, arrays)
    _one_line_error(tmp_path / "m.npz", *fields)


@pytest.mark.parametrize("model,mutate,fields", [
    ("caso", lambda m, a: a.pop("U"), ["arrays.U", "missing"]),
    ("caso", lambda m, a: a.pop("task_names"), ["names.task_names", "missing"]),
    ("caso", lambda m, a: a.update(task_names=np.array(["n"])), ["names.task_names"]),
    ("caso", lambda m, a: a.update(class_names=np.array(["a", "b", "c"])),
     ["names.class_names"]),
    ("robust_mtl", lambda m, a: a.update(W=np.ones(3)), ["arrays.W", "axes"]),
    ("mtmkl", lambda m, a: a.update(W=a["W"][:, :, :2]), ["feature"]),
    ("mtmkl", lambda m, a: a.update(task_names=np.array(["n", "n"])), ["repeat"]),
    ("triplet_screening", lambda m, a: a.pop("L"), ["arrays.L", "missing"]),
    ("triplet_screening", lambda m, a: a.update(y_ref=np.array([0, 1, 5, 0])),
     ["arrays.y_ref", "[0, 2)"]),
    ("triplet_screening", lambda m, a: a.pop("X_ref"), ["X_ref"]),
    ("triplet_screening", lambda m, a: a.update(X_ref=np.ones((4, 2))), ["arrays.X_ref"]),
])
def test_other_models_defects_name_the_field(tmp_path, model, mutate, fields):
    meta, arrays = _npz_parts(_models()[model])
    if model == "mtmkl" and fields == ["feature"]:
        arrays["feature_names"] = np.array(["x", "y", "z"])
        fields = ["arrays.W"]
    mutate(meta, arrays)
    _write_npz(tmp_path / "m.npz", meta, arrays)
    _one_line_error(tmp_path / "m.npz", *fields)


@pytest.mark.parametrize("mutate,fields", [
    (lambda d: d.update(arrays=[1, 2]), ["arrays", "must be an object"]),
    (lambda d: d.update(names="x"), ["names", "must be an object"]),
    (lambda d: d["arrays"]["W"].update(data=[str(v) for v in d["arrays"]["W"]["data"]]),
     ["arrays.W.data", "str"]),
    (lambda d: d["arrays"]["W"].update(shape=[10**6, 10**6]), ["arrays.W.data",
                                                               "1000000000000 entries"]),
    (lambda d: d["arrays"]["W"].update(shape=[-1, 3]), ["arrays.W.shape"]),
    (lambda d: d["arrays"]["W"].update(dtype="O"), ["arrays.W.dtype"]),
    (lambda d: d["arrays"]["W"].update(dtype="no such dtype"), ["arrays.W.dtype"]),
    (lambda d: d["arrays"]["W"].pop("data"), ["arrays.W", "no data"]),
    (lambda d: d["arrays"].update(W=5), ["arrays.W", "must be an object"]),
    (lambda d: d["names"].update(other={"dtype": "<i8", "shape": [1], "data": [1]}),
     ["names", "unknown"]),
    (lambda d: d.update(params=json.loads("[" * 40 + "]" * 40)), ["params", "nested"]),
    (lambda d: d.pop("model"), ["model", "unknown model kind None"]),
])
def test_json_defects_name_the_field(tmp_path, mutate, fields):
    doc = _models()["wwsvm"].to_json()
    mutate(doc)
    (tmp_path / "m.json").write_text(json.dumps(doc))
    _one_line_error(tmp_path / "m.json", *fields)


def test_deeply_nested_json_is_one_line(tmp_path):
    (tmp_path / "m.json").write_text("[" * 100_000 + "]" * 100_000)
    _one_line_error(tmp_path / "m.json", "not a dualscope model file")
    doc = _models()["wwsvm"].to_json()
    text = json.dumps(doc)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (tmp_path / "n.json").write_text(text)
    _one_line_error(tmp_path / "n.json", "nested too deeply")


def test_npz_member_with_a_huge_declared_shape_is_refused_from_its_header(tmp_path):
    """A member whose .npy header declares 10**12 floats (but holds 24 bytes) is refused
    from the header: nothing is allocated."""
    meta, arrays = _npz_parts(_models()["wwsvm"])
    _write_npz(tmp_path / "m.npz", meta, arrays)
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buf, {"descr": "<f8", "fortran_order": False, "shape": (10**6, 10**6)})
    with zipfile.ZipFile(tmp_path / "m.npz", "a") as z:
        z.writestr("huge.npy", buf.getvalue() + b"\0" * 24)
    t0 = time.perf_counter()
    _one_line_error(tmp_path / "m.npz", "'huge'", "declares shape (1000000, 1000000)")
    assert time.perf_counter() - t0 < 5


def test_npz_object_member_and_bad_meta(tmp_path):
    meta, arrays = _npz_parts(_models()["wwsvm"])
    np.savez(tmp_path / "m.npz", __meta__=np.array(json.dumps(meta)),
             **{**arrays, "junk": np.array([{"a": 1}], dtype=object)})
    _one_line_error(tmp_path / "m.npz", "'junk'", "object")
    np.savez(tmp_path / "n.npz", __meta__=np.arange(3), **arrays)
    _one_line_error(tmp_path / "n.npz", "__meta__")
    np.savez(tmp_path / "o.npz", __meta__=np.array("{not json"), **arrays)
    _one_line_error(tmp_path / "o.npz", "__meta__", "not JSON")


def test_other_extensions_and_missing_files(tmp_path):
    (tmp_path / "m.csv").write_text("a\n1\n")
    _one_line_error(tmp_path / "m.csv", ".npz or .json")
    with pytest.raises(ValueError, match="no such file"):
        load_model(tmp_path / "none.npz")
    (tmp_path / "d.npz").mkdir()
    _one_line_error(tmp_path / "d.npz", "directory")


def _load_in_subprocess(path, timeout=30):
    code = ("import sys; from solvers.saved import load_model\n"
            "try:\n    load_model(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, timeout=timeout)
    return out.stdout.strip(), time.perf_counter() - t0


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "m.npz"
    os.mkfifo(fifo)
    msg, secs = _load_in_subprocess(fifo)
    assert "m.npz: is a FIFO (named pipe), not a regular file" in msg


def test_a_link_to_a_device_is_refused(tmp_path):
    link = tmp_path / "m.json"
    link.symlink_to("/dev/urandom")
    msg, _ = _load_in_subprocess(link)
    assert "m.json: is a device, not a regular file" in msg


def test_size_bound(tmp_path, monkeypatch):
    sm = _models()["wwsvm"]
    sm.save(tmp_path / "m.json")
    monkeypatch.setattr(saved, "MAX_MODEL_BYTES", 100)
    _one_line_error(tmp_path / "m.json", "limit")


def test_writing_uses_the_same_schema(tmp_path):
    sm = _models()["wwsvm"]
    bad = SavedModel("wwsvm", {**sm.arrays, "W": sm.arrays["W"] * np.nan},
                     class_names=sm.class_names)
    with pytest.raises(ValueError, match=r"the model to save: arrays\.W"):
        bad.save(tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()
    assert sm.to_json()["format"] == FORMAT


def test_cli_predict_with_a_corrupt_model_is_one_line(tmp_path, capsys):
    from explorer import cli

    meta, arrays = _npz_parts(_models()["wwsvm"])
    arrays["W"] = arrays["W"].copy()
    arrays["W"][0, 0] = np.nan
    _write_npz(tmp_path / "m.npz", meta, arrays)
    (tmp_path / "x.csv").write_text("x,y,z\n1,2,3\n")
    assert cli.main(["predict", "--model", str(tmp_path / "m.npz"), "--data",
                     str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dualscope: m.npz: arrays.W: holds nan") and "\n" not in err


def test_a_corrupt_compressed_member_is_one_line(tmp_path):
    """Flipped bytes inside a deflated member: zlib's or zipfile's error becomes one line
    naming the file and the member."""
    sm = _models()["wwsvm"]
    meta, arrays = _npz_parts(sm)
    path = tmp_path / "m.npz"
    np.savez_compressed(path, __meta__=np.array(json.dumps(meta)), **arrays)
    with zipfile.ZipFile(path) as z:
        info = z.getinfo("W.npy")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    raw = bytearray(path.read_bytes())
    for i in range(start + 5, start + min(info.compress_size, 60)):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))
    _one_line_error(path, "'W'", "unreadable")
