"""Outputs never overwrite what is not ours (issue 41): --out, --save, --json, atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from explorer import cli
from explorer.outputs import PREDICTIONS, OverwriteError, guard_output
from solvers import fileio


def _train(path: Path, n: int = 40, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.array(["cat", "dog"])[np.arange(n) % 2]
    X[y == "dog"] += 2.0
    lines = ["a,b,c,species"] + [",".join(map(repr, r.tolist())) + f",{lab}"
                                 for r, lab in zip(X, y, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A training file, a model saved from it and its run JSON (one solve per module)."""
    d = tmp_path_factory.mktemp("fitted")
    train = _train(d / "train.csv")
    assert cli.main(["solve", "wwsvm", "--data", str(train), "--save", str(d / "m.npz"),
                     "--json", str(d / "run.json"), "--quiet"]) == 0
    return d


def _err(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def _snapshot(*paths: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


def test_predict_out_refuses_the_input_data_file(fitted, tmp_path, capsys):
    train = _train(tmp_path / "train.csv")
    before = _snapshot(train)
    assert cli.main(["predict", "--model", str(fitted / "m.npz"), "--data", str(train),
                     "--out", str(train)]) == 2
    err = _err(capsys)
    assert "is the input file of --data" in err and "--force" in err
    assert _snapshot(train) == before
    # the same file through another spelling (a symlink, ../) is the same file
    link = tmp_path / "link.csv"
    link.symlink_to(train)
    assert cli.main(["predict", "--model", str(fitted / "m.npz"), "--data", str(train),
                     "--out", str(link)]) == 2
    assert "is the input file of --data" in _err(capsys)
    assert _snapshot(train) == before


def test_predict_out_refuses_the_model_file(fitted, tmp_path, capsys):
    model = tmp_path / "m.npz"
    model.write_bytes((fitted / "m.npz").read_bytes())
    before = _snapshot(model)
    assert cli.main(["predict", "--model", str(model), "--data", str(fitted / "train.csv"),
                     "--out", str(model)]) == 2
    assert "is the input file of --model" in _err(capsys)
    assert _snapshot(model) == before


@pytest.mark.parametrize("content", ["notes\n", "a,b\n1,2\n", "prediction,x,y\n1,2,3\n",
                                     "prediction\n1\n2,3\n", ""])
def test_predict_out_refuses_a_foreign_file(fitted, tmp_path, capsys, content):
    out = tmp_path / "notes.txt"
    out.write_text(content)
    assert cli.main(["predict", "--model", str(fitted / "m.npz"), "--data",
                     str(fitted / "train.csv"), "--out", str(out)]) == 2
    err = _err(capsys)
    assert "exists and is not a dualscope predictions CSV" in err and "notes.txt" in err
    assert out.read_text() == content


def test_predict_out_overwrites_its_own_predictions_and_force_anything(fitted, tmp_path,
                                                                        capsys):
    out = tmp_path / "pred.csv"
    argv = ["predict", "--model", str(fitted / "m.npz"), "--data", str(fitted / "train.csv"),
            "--out", str(out)]
    assert cli.main(argv) == 0
    first = out.read_text()
    assert first.splitlines()[0] == "prediction" and len(first.splitlines()) == 41
    assert cli.main(argv) == 0  # a rerun replaces its own output
    assert out.read_text() == first
    assert PREDICTIONS.recognise(out) == 40
    capsys.readouterr()
    out.write_text("my notes\n")
    assert cli.main([*argv, "--force"]) == 0
    assert out.read_text() == first
    assert "overwriting it (--force)" in capsys.readouterr().err


@pytest.mark.parametrize("option,name,content", [
    ("--save", "other.npz", None),  # a foreign .npz (X only)
    ("--save", "notes.json", '{"a": 1}'),
    ("--save", "x.npz", "not a zip"),
    ("--json", "notes.json", '{"a": 1}'),
    ("--json", "list.json", "[1, 2]"),
    ("--json", "text.json", "hello"),
])
def test_solve_save_and_json_refuse_a_foreign_file(fitted, tmp_path, capsys, option, name,
                                                    content):
    out = tmp_path / name
    if content is None:  # a foreign npz (not a dualscope model)
        np.savez(out, X=np.zeros((2, 2)))
    else:
        out.write_text(content)
    before = _snapshot(out)
    assert cli.main(["solve", "wwsvm", "--data", str(fitted / "train.csv"), option, str(out),
                     "--quiet"]) == 2
    err = _err(capsys)
    assert f"{option} " in err and "exists and is not" in err and "--force" in err
    assert _snapshot(out) == before


def test_solve_outputs_refuse_the_data_and_test_files(fitted, tmp_path, capsys):
    train = _train(tmp_path / "train.csv")
    test = _train(tmp_path / "test.csv", seed=1)
    before = _snapshot(train, test)
    for option, target, which in (("--json", train, "--data"), ("--save", test, "--test"),
                                  ("--json", test, "--test")):
        assert cli.main(["solve", "wwsvm", "--data", str(train), "--test", str(test),
                         option, str(target), "--quiet"]) == 2
        assert f"is the input file of {which}" in _err(capsys)
    assert _snapshot(train, test) == before


def test_solve_overwrites_its_own_model_and_run_json(fitted, tmp_path, capsys):
    model, run = tmp_path / "m.npz", tmp_path / "run.json"
    model.write_bytes((fitted / "m.npz").read_bytes())
    run.write_bytes((fitted / "run.json").read_bytes())
    assert cli.main(["solve", "wwsvm", "--data", str(fitted / "train.csv"), "--set", "C=2",
                     "--save", str(model), "--json", str(run), "--quiet"]) == 0
    assert json.loads(run.read_text())["params"]["C"] == 2.0
    from solvers.saved import load_model

    assert load_model(model).params["C"] == 2.0
    assert cli.main(["solve", "wwsvm", "--data", str(fitted / "train.csv"),
                     "--save", str(tmp_path / "new.json"), "--json", str(tmp_path / "new.json"),
                     "--quiet"]) == 2
    assert "name the same file" in _err(capsys)


def test_an_output_that_is_a_fifo_is_refused_without_blocking(fitted, tmp_path, capsys):
    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    assert cli.main(["predict", "--model", str(fitted / "m.npz"), "--data",
                     str(fitted / "train.csv"), "--out", str(fifo)]) == 2
    assert "not a regular file" in _err(capsys)


def test_guard_output_api(tmp_path):
    data = _train(tmp_path / "d.csv")
    with pytest.raises(OverwriteError, match="input file of --data"):
        guard_output(data, inputs=[("--data", data)])
    assert guard_output(tmp_path / "new.csv", kind=PREDICTIONS) is None
    with pytest.warns(UserWarning, match="overwriting"):
        assert guard_output(data, kind=PREDICTIONS, force=True) is None


def test_write_atomic_leaves_the_old_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "out.json"
    target.write_text("old")
    os.chmod(target, 0o640)

    def boom(*_a):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        fileio.write_atomic(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left
    fileio.write_atomic(target, "new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640


def test_save_with_another_extension_is_refused_before_solving(fitted, tmp_path, capsys):
    assert cli.main(["solve", "wwsvm", "--data", str(fitted / "train.csv"), "--save",
                     str(tmp_path / "m.txt"), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "ends in .npz or .json" in captured.err and "iter" not in captured.out
    assert not (tmp_path / "m.txt").exists()
