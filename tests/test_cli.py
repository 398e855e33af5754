"""The `dualscope` command line and the model registry."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess

import pytest

from explorer import cli, registry


def test_console_script_is_installed():
    exe = shutil.which("dualscope")
    assert exe, "pip install -e . should install the dualscope console script"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True)
    for sub in ("app", "solve", "check", "bench"):
        assert sub in out.stdout


def test_list_names_every_registered_model(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for e in registry.entries():
        assert e.name in out


def test_solve_prints_history_and_writes_json(tmp_path, capsys):
    path = tmp_path / "run.json"
    code = cli.main(["solve", "wwsvm", "--dataset", "iris", "--set", "C=0.5",
                     "--set", "method=iterative", "--json", str(path)])
    assert code == 0
    out = capsys.readouterr().out
    assert "rel_gap" in out and "converged" in out
    data = json.loads(path.read_text())
    assert data["params"]["C"] == 0.5 and data["result"]["method"] == "iterative"
    hist = data["result"]["history"]
    # one row per certified iteration (WW-SVM certifies every few epochs), the last one
    assert len(hist["gap"]) == len(hist["iteration"])
    assert hist["iteration"][-1] == data["result"]["n_iter"]


def test_check_agrees_with_cvxpy(capsys):
    assert cli.main(["check", "wwsvm", "--dataset", "blobs", "--size", "n=120"]) == 0
    out = capsys.readouterr().out
    assert "relative difference" in out and "FAIL" not in out


def test_check_refuses_large_problems(capsys):
    code = cli.main(["check", "wwsvm", "--dataset", "digits", "--size", "n=1797"])
    assert code == 2
    assert "refused" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["solve", "wwsvm", "--set", "C=-1"], "C must lie in"),
        (["solve", "wwsvm", "--set", "nope=1"], "no parameter 'nope'"),
        (["solve", "wwsvm", "--set", "method=fast"], "method must be one of"),
        (["solve", "wwsvm", "--dataset", "mnist"], "no dataset 'mnist'"),
        (["solve", "wwsvm", "--size", "q=3"], "has no size 'q'"),
        (["solve", "wwsvm", "--set", "C"], "expects KEY=VALUE"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(argv, message, capsys):
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_bench_quick_prints_both_tables(tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert cli.main(["bench", "wwsvm", "--quick", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Walrus vs cvxpy" in out and "iterative" in out
    data = json.loads(path.read_text())
    rows = data["tables"][0]["rows"]
    walrus = next(r for r in rows if str(r[1]).startswith("walrus"))
    assert walrus[5] <= 1e-6  # same objective as cvxpy to 1e-6 relative


@pytest.mark.parametrize("entry", registry.entries(), ids=lambda e: e.name)
def test_registry_entries_are_complete(entry):
    for name, ds in entry.datasets.items():
        assert ds.name == name
        for key, (default, low, high) in ds.sizes.items():
            assert low <= default <= high, (name, key)
    for p in entry.params:
        if p.kind == "choice":
            assert p.default in p.choices
        if p.log:
            assert 0 < p.low <= p.default <= p.high
    for target in (entry.page, entry.bench):
        mod, _, fn = target.partition(":")
        assert callable(getattr(importlib.import_module(mod), fn)), target
    problem = entry.datasets[entry.default_dataset](seed=0)
    assert entry.reference_refusal(problem) is None, "the default problem must allow cvxpy"
