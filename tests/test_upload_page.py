"""The dashboard's "your file" choice (AppTest): every page solves an uploaded file, shows
its preview, exports the learned model, and keeps the last good result after a bad file."""

from __future__ import annotations

import io

import numpy as np
import pytest
from pagekit import chart, metrics, model_page, ok

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _csv(model: str) -> bytes:
    rng = np.random.default_rng(0)
    n = 36 if model == "triplet_screening" else 60
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 3)) + 2.5 * np.eye(3)[y]
    task = np.array(["north", "south"])[np.arange(n) % 2]
    out = io.StringIO()
    if model in ("wwsvm", "triplet_screening"):
        out.write("a,b,c,species\n")
        for xi, yi in zip(X, y, strict=True):
            out.write(",".join(repr(float(v)) for v in xi) + f",{['x', 'y', 'z'][yi]}\n")
    else:
        target = (np.where(y == 0, "yes", "no") if model == "mtmkl"
                  else [repr(float(v)) for v in X @ np.array([1.0, -2.0, 0.5])
                        + 0.1 * rng.normal(size=n)])
        out.write("a,b,c,task,target\n")
        for xi, t, yi in zip(X, task, target, strict=True):
            out.write(",".join(repr(float(v)) for v in xi) + f",{t},{yi}\n")
    return out.getvalue().encode()


def _with_upload(model: str, name: str, data: bytes):
    from explorer.ui.upload import Upload

    at = model_page(model)
    at.session_state["data_source"] = "your file"
    at.session_state["dualscope.uploads"] = {model: {"upload": Upload(name, data),
                                                     "cache": {}}}
    return at


@pytest.mark.parametrize("model", ["wwsvm", "caso", "robust_mtl", "mtmkl",
                                   "triplet_screening"])
def test_every_page_solves_an_uploaded_file(model, monkeypatch, tmp_path):
    import streamlit
    from streamlit.delta_generator import DeltaGenerator

    got: dict = {}
    original = DeltaGenerator.download_button

    def spy(dg, label, data, *args, **kwargs):  # what each download button would deliver
        got[label] = data
        return original(dg, label, data, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "download_button", spy)
    monkeypatch.setattr(streamlit, "download_button",  # st.x: bound to the main area
                        lambda *a, **k: spy(streamlit._main, *a, **k))
    at = _with_upload(model, "mine.csv", _csv(model))
    at.run()
    ok(at)
    captions = " ".join(c.value for c in at.caption)
    assert "file mine.csv" in captions
    assert "does not carry" in captions  # the upload is not part of a shared link
    expanders = [e.label for e in at.expander]
    assert any(lab.startswith("Your file: mine.csv") for lab in expanders), expanders
    m = metrics(at)
    assert any("gap" in k for k in m), m
    downloads = [b.proto.label for b in at.get("download_button")]
    assert "Download the learned model (.npz)" in downloads
    assert "Download the learned model (JSON)" in downloads
    # the run export holds the learned model as the .npz download has it (load_model reads it)
    from solvers import saved

    (tmp_path / "run.json").write_text(
        got["Download this run (parameters, history and the learned model, JSON)"])
    (tmp_path / "m.npz").write_bytes(got["Download the learned model (.npz)"])
    run, npz = saved.load_model(tmp_path / "run.json"), saved.load_model(tmp_path / "m.npz")
    assert run.model == npz.model == model and sorted(run.arrays) == sorted(npz.arrays)
    for k, v in npz.arrays.items():
        assert run.arrays[k].dtype == v.dtype and run.arrays[k].tobytes() == v.tobytes(), k
    assert run.certificate == npz.certificate and run.params == npz.params
    # the URL names built-in datasets only
    assert at.query_params.get("dataset", [""])[0] in ("", *_builtin(model))


def _builtin(model):
    from explorer.registry import get

    return list(get(model).datasets)


def test_a_bad_file_shows_its_message_and_says_nothing_was_solved_for_it():
    at = _with_upload("wwsvm", "mine.csv", _csv("wwsvm"))
    at.run()
    ok(at)
    assert any("gap" in k for k in metrics(at))
    at.session_state["dualscope.uploads"] = {}
    from explorer.ui.upload import Upload

    at.session_state["dualscope.uploads"] = {"wwsvm": {"upload": Upload(
        "bad.csv", b"a,b,species\n1,2,x\n3,4,x\n"), "cache": {}}}
    at.run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("bad.csv: column 'species': one class only" in e for e in errors), errors
    # the previous result (mine.csv) is not shown under the new file's name
    assert "Showing the last successful run." not in [c.value for c in at.caption]
    assert not any("mine.csv" in c.value for c in at.caption)
    assert any("Nothing was solved for this file" in w.value for w in at.warning)
    assert metrics(at) == {}


def test_a_raw_upload_is_preprocessed_and_scored_on_held_out_rows(tmp_path):
    from penguinkit import write_penguins

    data = write_penguins(tmp_path / "penguins.csv").read_bytes()
    at = _with_upload("wwsvm", "penguins.csv", data)
    at.run()
    at.sidebar.selectbox(key="upload_label_wwsvm").set_value("species")
    at.sidebar.number_input(key="upload_test_wwsvm").set_value(0.3)
    at.run()
    ok(at)
    captions = " ".join(c.value for c in at.caption)
    assert ("Preprocessing: standardised 5 columns; one-hot island (3 values), sex (2 "
            "values); dropped 11 rows with missing values") in captions
    m = metrics(at)
    assert float(m["held-out accuracy"]) >= 0.95, m
    assert "held-out balanced_accuracy" in m
    confusion = chart(at, "training confusion matrix")
    assert confusion["data"][0]["x"] == ["Adelie", "Chinstrap", "Gentoo"]
    # without standardising: the same choices the CLI has, fitted on the training rows
    at.sidebar.selectbox(key="upload_scale_wwsvm").set_value("none")
    at.run()
    ok(at)
    assert "Preprocessing: one-hot island" in " ".join(c.value for c in at.caption)


def test_the_sweep_tab_runs_on_an_uploaded_file():
    at = _with_upload("wwsvm", "mine.csv", _csv("wwsvm"))
    at.run()
    ok(at)
    at.selectbox(key="sweep_wwsvm_backend").set_value("serial")
    at.button(key="sweep_wwsvm_run").click()
    at.run()
    ok(at)
    stored = at.session_state["sweep_wwsvm_result"]
    assert stored["rows"] and not any(r.get("error") for r in stored["rows"]), stored["rows"]
    assert all(r["dataset"].startswith("file:") and r["converged"] for r in stored["rows"])


def test_the_cost_guard_uses_the_files_real_size(monkeypatch):
    """Above the page's budget an upload is not solved until confirmed (estimate shown)."""
    import dataclasses

    from explorer import limits

    # a budget of 1000 bytes: any real file exceeds it
    monkeypatch.setattr(limits, "PAGE", dataclasses.replace(limits.PAGE, memory=1000))
    at = _with_upload("wwsvm", "mine.csv", _csv("wwsvm"))
    at.run()
    assert not at.exception
    warn = " ".join(w.value for w in at.warning)
    assert "This file makes a problem of" in warn and "Solve anyway" in [b.label for b in
                                                                       at.button]
    assert not metrics(at)  # nothing solved yet
    next(b for b in at.button if b.label == "Solve anyway").click()
    at.run()
    ok(at)
    assert any("gap" in k for k in metrics(at))


def test_your_file_before_any_upload_is_an_invitation_not_an_error():
    at = model_page("caso")
    at.session_state["data_source"] = "your file"
    at.run()
    ok(at)
    assert any("Choose a data file" in i.value for i in at.info)


def test_the_sweeps_temporary_copy_is_removed_with_its_upload(monkeypatch, tmp_path):
    """The Sweep tab's private copy of an upload goes when the upload is replaced or cleared,
    when the session's state is dropped, and at interpreter exit; a sweep reading it keeps
    it until that sweep ends."""
    import gc
    import os
    import subprocess
    import sys
    from types import SimpleNamespace

    from explorer import datafiles, registry
    from explorer.ui import upload

    store: dict = {}
    monkeypatch.setattr(upload, "_store", lambda: store)
    entry = registry.get("wwsvm")
    options = {"label": "species"}

    def folder() -> str:
        path = datafiles.parse_file_spec(upload.upload_spec(entry, options))[0]
        assert os.path.isfile(path) and oct(os.stat(os.path.dirname(path)).st_mode)[-3:] \
            == "700"
        return os.path.dirname(path)

    upload.set_upload("wwsvm", "a.csv", _csv("wwsvm"))
    first = folder()
    assert folder() == first  # one copy per upload
    upload.set_upload("wwsvm", "b.csv", _csv("wwsvm"))  # replaced
    assert not os.path.exists(first)
    second = folder()
    upload.clear_upload("wwsvm")  # cleared
    assert not os.path.exists(second) and "wwsvm" not in store
    upload.set_upload("wwsvm", "c.csv", _csv("wwsvm"))
    c = SimpleNamespace(source=upload.upload_source(entry, options))  # the page's controls
    with upload.sweep_upload_spec(entry, c) as spec:  # a running sweep reads it
        path = datafiles.parse_file_spec(spec)[0]
        upload.set_upload("wwsvm", "d.csv", _csv("wwsvm"))  # replaced meanwhile
        upload.clear_upload("wwsvm")
        assert datafiles.file_dataset("wwsvm", spec)(seed=0).data["X"].shape == (60, 3)
    assert not os.path.exists(os.path.dirname(path))  # gone when the sweep ended
    upload.set_upload("wwsvm", "e.csv", _csv("wwsvm"))
    last = folder()
    store.clear()  # the session's state dropped
    gc.collect()
    assert not os.path.exists(last)
    # at interpreter exit (atexit), in a fresh interpreter
    probe = ("import explorer.ui.upload as u\n"
             "u._store = lambda s={}: s\n"
             "u.set_upload('wwsvm', 'f.csv', b'a,species\\n1,x\\n2,y\\n')\n"
             "print(u.upload_spec(__import__('explorer.registry').registry.get('wwsvm'), "
             "{}))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env={**os.environ})
    spec = out.stdout.strip().splitlines()[-1]
    made = os.path.dirname(datafiles.parse_file_spec(spec)[0])
    assert "dualscope_upload_" in made and not os.path.exists(made)


@pytest.mark.parametrize("model,first", [("wwsvm", "accuracy"), ("caso", "mse"),
                                         ("robust_mtl", "mse"), ("mtmkl", "accuracy"),
                                         ("triplet_screening", "nn_accuracy")])
def test_every_page_shows_the_held_out_score_of_a_file(model, first):
    at = _with_upload(model, "mine.csv", _csv(model))
    at.run()
    at.sidebar.number_input(key=f"upload_test_{model}").set_value(0.3)
    at.run()
    ok(at)
    m = metrics(at)
    assert f"held-out {first}" in m, m
    assert np.isfinite(float(m[f"held-out {first}"]))
