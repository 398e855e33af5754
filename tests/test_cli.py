"""The `dualscope` command line and the model registry."""

from __future__ import annotations

import importlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer import cli, limits, registry


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


def test_bench_real_refuses_a_model_without_real_data_tables(capsys):
    assert cli.main(["bench", "triplet_screening", "--real"]) == 2
    assert "no real-data tables" in capsys.readouterr().err


def test_bench_real_without_the_data_file_writes_no_table(tmp_path, monkeypatch, capsys):
    """``--real`` runs the model's ``real`` tables alone; without School there are none."""
    monkeypatch.setenv("DUALSCOPE_SCHOOL", str(tmp_path / "missing.mat"))
    path = tmp_path / "bench.json"
    assert cli.main(["bench", "robust_mtl", "--real", "--json", str(path)]) == 0
    assert json.loads(path.read_text())["tables"] == []
    assert "school.mat not found" in capsys.readouterr().err


def test_wwsvm_tail_rows_bracket_the_optimum():
    """The Debian tail table's rows, read from a run's history: at each gap reached, the
    dual is below and the certified primal above the final certificate."""
    from explorer.benchkit import BenchTable
    from explorer.models.wwsvm.bench import _tail_rows
    from explorer.models.wwsvm.data import blobs
    from solvers import wwsvm

    prob = blobs(seed=1, n=400, k=4, d=5, spread=1.0)
    res = wwsvm.solve(prob.data["X"], prob.data["y"], 1.0, tol=1e-7)
    table = BenchTable("t", ["C", "method", "g", "epoch", "time", "gap", "dual", "primal",
                             "ratio"])
    _tail_rows(table, 1.0, res)
    assert [r[2] for r in table.rows] == [1e-3, 1e-4, 1e-5, 1e-6]
    for _, method, g, epoch, _, gap, dual_lag, primal_lag, _ in table.rows:
        assert method == res.method
        assert 1 <= epoch <= res.n_iter and gap <= g * max(1.0, abs(res.primal))
        assert dual_lag >= 0.0 and primal_lag >= 0.0
        assert dual_lag + primal_lag == pytest.approx(gap, rel=1e-9, abs=1e-9)


def test_cpu_time_without_jit_times_again_after_a_compilation():
    """A run that compiled a numba kernel is run and timed again (its time without the
    compilation), and says what compiled; a run that compiled nothing runs once."""
    from numba import njit

    from explorer.benchkit import cpu_time_without_jit

    @njit
    def fresh_kernel(n):
        s = 0.0
        for i in range(n):
            s += i
        return s

    calls = []

    def fn():
        calls.append(1)
        return fresh_kernel(10)

    t, value, compiled = cpu_time_without_jit(fn)
    assert compiled == ["fresh_kernel"] and len(calls) == 2 and value == 45.0 and t >= 0
    t, value, compiled = cpu_time_without_jit(fn)
    assert compiled == [] and len(calls) == 3


def test_triplet_bench_quick_paths_agree(tmp_path):
    """The triplet bench's smoke run: every screened path (smoothed hinge and the hinge's
    dual method) reaches the naive path's objectives, no lambda stops at max_iter."""
    path = tmp_path / "bench.json"
    assert cli.main(["bench", "triplet_screening", "--quick", "--json", str(path)]) == 0
    tables = json.loads(path.read_text())["tables"]
    hinge = next(t for t in tables if t["title"].startswith("Hinge loss"))
    cols = hinge["columns"]
    rows = {r[0]: dict(zip(cols, r, strict=True)) for r in hinge["rows"]}
    assert set(rows) == {"naive", "PGB", "RRPB", "RRPB+PGB"}
    for r in rows.values():
        assert r["lambdas at max_iter"] == 0 and r["max rel. obj. diff vs naive"] <= 1e-6
    assert rows["RRPB"]["triplets visited [M]"] < rows["naive"]["triplets visited [M]"]
    target = tables[0]
    i = target["columns"].index("max rel. obj. diff vs naive")
    assert all(r[i] <= 1e-6 for r in target["rows"])
    # the ceiling is on the row that screens at every lambda, and only there
    j, m = target["columns"].index("ceiling: free screening"), target["columns"].index("method")
    ceil = {r[m]: r[j] for r in target["rows"]}
    assert set(ceil) == {"naive", "RRPB", "RRPB+PGB", "RRPB at every lambda", "sorted pass",
                         "RRPB, sorted pass", "naive, secant start", "RRPB, secant start",
                         "sorted pass, secant start"}
    assert 0 < ceil.pop("RRPB at every lambda") < math.inf
    assert all(c is None or math.isnan(c) for c in ceil.values())
    # the metric learner with and without its path: certified, the same optimum
    from explorer.models.triplet_screening.bench import ESTIMATOR_FITS

    est = next(t for t in tables if t["title"].startswith("SafeTripletMetricLearner"))
    rows = [dict(zip(est["columns"], r, strict=True)) for r in est["rows"]]
    assert [r["fit"] for r in rows] == [label for label, _ in ESTIMATOR_FITS]
    assert rows[0]["lambdas"] == 1 and all(r["lambdas"] > 1 for r in rows[1:])
    for r in rows:
        assert 0 <= r["rel. gap"] <= r["tol"]
        # both objectives lie above the optimum by at most their gaps (scales ~equal)
        bound = (r["rel. gap"] + rows[0]["rel. gap"]) * (1 + 1e-6)
        assert r["rel. obj. diff vs path=False"] <= bound


def test_screening_ceiling_is_the_naive_path_with_free_screening():
    """The ceiling replaces the naive path's loss passes by the share of visits the
    screened path keeps (at the naive cost per visit) and its forms and eig by the
    screened path's; the rest is the naive path's."""
    from explorer.models.triplet_screening.bench import screening_ceiling

    naive = {"loss_pass": 6.0, "pair_forms": 2.0, "eig": 1.0, "loss_pass_visits": 1000.0}
    assert screening_ceiling(10.0, naive, naive) == pytest.approx(1.0)
    free = {"loss_pass": 9.0, "pair_forms": 0.0, "eig": 0.0, "loss_pass_visits": 0.0}
    assert screening_ceiling(10.0, naive, free) == pytest.approx(10.0)  # the rest: 1 s
    half = {"loss_pass": 9.0, "pair_forms": 1.0, "eig": 1.0, "loss_pass_visits": 500.0}
    assert screening_ceiling(10.0, naive, half) == pytest.approx(10.0 / (3 + 1 + 1 + 1))


def test_paper_table2_is_the_papers():
    """The practical tables quote the paper's Table 2: its rows as the paper prints them
    (the text extraction beside the project), and the speed-ups the note gives."""
    from explorer.models.triplet_screening.bench import PAPER_TABLE2, paper_speedups

    text = (Path(__file__).resolve().parents[1] / ".." / "shared" / "papers"
            / "safe_triplet_screening.txt").read_text()
    head = text[text.index("Table 2: Total CPU time"):]
    assert "Method\\Dataset " + " ".join(PAPER_TABLE2["datasets"]) in head
    for method in ("ActiveSet", "ActiveSet+RRPB", "ActiveSet+RRPB+PGB"):
        row = " ".join(f"{v:.1f}" for v in PAPER_TABLE2[method])
        assert f"\n{method} {row}\n" in head, method
    note = paper_speedups()
    assert "ActiveSet+RRPB 3.76x / 4.60x / 10.82x / 4.35x / 7.75x / 2.20x" in note
    assert "(range 2.48-10.52x)" in note
    assert "wine and digits are not among its data sets" in note


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


# --------------------------------------------------------------------------
# Issue 14: the error contract of the command line (in-process runs).

def _run(argv, capsys):
    """Run the CLI in-process; assert the contract; return (code, stdout, error lines)."""
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert all(ln.startswith("dualscope: ") for ln in lines), err
    errors = [ln for ln in lines if not ln.startswith("dualscope: warning: ")]
    if code == 2:
        assert len(errors) == 1, err  # exactly one error line
    return code, out, errors


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", "caso", "--set", "alpha=1e-300", "--set", "method=apg", "--quiet"],
        ["solve", "caso", "--set", "eta=1e-300", "--quiet"],
        ["solve", "caso", "--set", "eta=1e300", "--quiet"],
        ["solve", "triplet_screening", "--set", "lam_rel=1e-300", "--quiet"],
    ],
    ids=["caso-alpha-apg", "caso-eta-tiny", "caso-eta-huge", "triplet-lam-tiny"],
)
def test_issue14_solver_reproducers_give_one_line_or_succeed(argv, capsys):
    code, out, errors = _run(argv, capsys)
    assert code in (0, 2)
    if code == 0:
        assert "(final)" in out


def test_issue14_caso_huge_eta_names_eta(capsys):
    code, _, errors = _run(["solve", "caso", "--set", "eta=1e300", "--quiet"], capsys)
    assert code == 0 or "eta" in errors[0]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["solve", "wwsvm", "--size", "n=inf"], "dualscope: --size n must be finite, got 'inf'"),
        (["solve", "wwsvm", "--size", "n=nan"], "dualscope: --size n must be finite, got 'nan'"),
        (["solve", "wwsvm", "--size", "n=abc"], "dualscope: --size n must be an integer, "
                                                "got 'abc'"),
        (["solve", "wwsvm", "--size", "n=2.5"], "dualscope: --size n must be an integer, "
                                                "got '2.5'"),
        (["solve", "wwsvm", "--set", "C=abc"], "dualscope: --set C: C must be a number, "
                                               "got 'abc'"),
        (["solve", "wwsvm", "--set", "seed=1.5"], "seed must be an integer, got '1.5'"),
        (["solve", "wwsvm", "--set", "nope=1"], "dualscope: model 'wwsvm' has no parameter "
                                                "'nope'; available: ['C', 'method', 'seed', "
                                                "'accelerate', 'stopping', 'ratio', "
                                                "'fit_intercept', 'intercept_scaling']"),
        (["solve", "wwsvm", "--set", "method=fast"], "method must be one of"),
        (["solve", "wwsvm", "--tol", "nan"], "tol must be finite"),
        (["solve", "wwsvm", "--max-iter", "0"], "max_iter must be >= 1"),
        (["solve", "wwsvm", "--seed", "-1"], "--seed must be >= 0"),
        (["solve", "wwsvm", "--bogus"], "dualscope: error: unrecognized arguments: --bogus"),
        (["solve", "nomodel"], "invalid choice: 'nomodel'"),
        (["app", "--port", "0"], "--port must be >= 1"),
    ],
)
def test_bad_input_is_one_exact_line(argv, message, capsys):
    code, _, errors = _run(argv, capsys)
    assert code == 2
    assert message in errors[0]
    # quotes come in pairs: no message loses its closing quote (the old .strip("'\""))
    assert errors[0].count("'") % 2 == 0, errors[0]


def test_key_error_message_keeps_its_quotes(capsys):
    code, _, errors = _run(["solve", "wwsvm", "--dataset", "mnist"], capsys)
    assert code == 2
    assert errors[0].endswith("available: ['blobs', 'digits', 'wine', 'iris']"), errors[0]


@pytest.mark.parametrize("where", ["missing-dir", "directory", "parent-is-file", "unwritable"])
def test_output_path_rejected_before_solving(where, tmp_path, capsys):
    path = {
        "missing-dir": "/no/such/dir/out.json",
        "directory": str(tmp_path),
        "parent-is-file": str(tmp_path / "f.txt" / "out.json"),
        "unwritable": "/proc/version" if os.geteuid() == 0 else str(tmp_path / "ro" / "x.json"),
    }[where]
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o500)
    code, out, errors = _run(["solve", "wwsvm", "--json", path], capsys)
    assert code == 2
    assert "--json" in errors[0] and repr(path) in errors[0]
    assert out == "", "nothing may be solved before the output path is known good"
    assert not (tmp_path / "ro" / "x.json").exists()


def test_output_path_probe_keeps_an_existing_file(tmp_path):
    f = tmp_path / "keep.json"
    f.write_text("old")
    assert cli.check_output_path(str(f)) == f
    assert f.read_text() == "old"
    new = tmp_path / "new.json"
    cli.check_output_path(str(new))
    assert not new.exists(), "the probe must not leave a file behind"


@pytest.fixture
def extra_subcommand():
    saved = list(cli.SUBCOMMANDS)
    yield cli.register
    cli.SUBCOMMANDS[:] = saved


def _raiser(exc):
    def run(args):
        raise exc
    return run


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ValueError("x must be positive, got -1"), "dualscope: x must be positive, got -1"),
        (TypeError("y must be an array"), "dualscope: y must be an array"),
        (KeyError("no model 'q'"), "dualscope: no model 'q'"),
        ("numerical", "dualscope: solver: non-finite gap at iteration 3"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
        (OverflowError("int too large"), "OverflowError: int too large"),
        (FileNotFoundError(2, "No such file or directory", "/x/y"),
         "dualscope: No such file or directory: '/x/y'"),
        (np.linalg.LinAlgError("SVD did not converge"), "linear-algebra failure"),
        (MemoryError(), "out of memory"),
        (RuntimeError("boom\nsecond line"), "internal error: RuntimeError: boom second line"),
        (AssertionError(), "internal error: AssertionError"),
        (RuntimeError("x" * 1000), "internal error: RuntimeError: " + "x" * 297 + "... ("),
        ("solver-error", "the cvxpy reference failed: SolverError: Solver 'CLARABEL' failed"),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v)[:20],
)
def test_every_error_is_one_line_exit_2(exc, expected, extra_subcommand, capsys):
    if exc == "numerical":
        from solvers import NumericalError

        exc = NumericalError("solver: non-finite gap at iteration 3")
    elif exc == "solver-error":
        from cvxpy.error import SolverError

        exc = SolverError("Solver 'CLARABEL' failed. Try another solver.")
    extra_subcommand(cli.Subcommand("boom", "raise", lambda p: None, _raiser(exc)))
    code, _, errors = _run(["boom"], capsys)
    assert code == 2
    assert expected in errors[0]
    if expected.startswith("internal error") or "numerical failure" in errors[0]:
        assert "--debug" in errors[0]


def test_debug_prints_the_traceback(extra_subcommand, capsys):
    extra_subcommand(cli.Subcommand("boom", "raise", lambda p: None,
                                    _raiser(ZeroDivisionError("division by zero"))))
    assert cli.main(["boom", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.rstrip().splitlines()[-1].startswith("dualscope: ")


def test_keyboard_interrupt_exits_130(extra_subcommand, capsys):
    extra_subcommand(cli.Subcommand("boom", "raise", lambda p: None,
                                    _raiser(KeyboardInterrupt())))
    assert cli.main(["boom"]) == 130
    assert capsys.readouterr().err == "dualscope: interrupted\n"


def test_closed_pipe_ends_quietly(extra_subcommand, capsys):
    extra_subcommand(cli.Subcommand("boom", "raise", lambda p: None,
                                    _raiser(BrokenPipeError(32, "Broken pipe"))))
    fd = os.dup(1)
    try:
        assert cli.main(["boom"]) == 141
    finally:
        os.dup2(fd, 1)
        os.close(fd)
    assert capsys.readouterr().err == ""


def test_console_run_prints_no_traceback():
    """The real entry point in a subprocess (one run: the in-process tests cover the rest)."""
    out = subprocess.run([sys.executable, "-m", "explorer.cli", "solve", "wwsvm", "--size",
                          "n=inf"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr == "dualscope: --size n must be finite, got 'inf'\n"


def test_registered_subcommand_gets_output_checks(extra_subcommand, tmp_path, capsys):
    ran = []

    def configure(p):
        p.add_argument("--out")

    extra_subcommand(cli.Subcommand("sweepish", "test", configure,
                                    lambda a: ran.append(a.out) or 0, outputs=("out",)))
    code, _, errors = _run(["sweepish", "--out", str(tmp_path / "no" / "x.csv")], capsys)
    assert code == 2 and "--out" in errors[0] and not ran
    assert cli.main(["sweepish", "--out", str(tmp_path / "x.csv")]) == 0
    assert ran == [str(tmp_path / "x.csv")]


def test_warnings_become_one_readable_line(extra_subcommand, capsys):
    import warnings

    from solvers import ConvergenceWarning

    def run(args):
        for _ in range(3):  # repeated warnings are printed once
            warnings.warn("Solution may be\n inaccurate.", UserWarning, stacklevel=1)
        warnings.warn("stopped at max_iter", ConvergenceWarning, stacklevel=1)
        warnings.warn("old API", DeprecationWarning, stacklevel=1)  # hidden, as by Python
        return 0

    extra_subcommand(cli.Subcommand("warny", "warn", lambda p: None, run))
    code, _, _ = _run(["warny"], capsys)
    assert code == 0
    # _run consumed the output; run again to look at it
    cli.main(["warny"])
    err = capsys.readouterr().err.splitlines()
    assert err == ["dualscope: warning: Solution may be inaccurate.",
                   "dualscope: warning: stopped at max_iter [ConvergenceWarning]"]


def test_check_caso_prints_no_raw_warning(capsys):
    # at the default size Clarabel says "Solution may be inaccurate" through cvxpy's
    # UserWarning: _run asserts that every stderr line is a one-line "dualscope: ..."
    code, out, _ = _run(["check", "caso", "--quiet"], capsys)
    assert code in (0, 1) and "cvxpy optimum" in out


def test_sizes_outside_the_registry_range_need_force(capsys):
    # above the memory budget by the cost model
    code, _, errors = _run(["solve", "wwsvm", "--size", "n=1000000000"], capsys)
    assert code == 2
    assert "n=1000000000 is outside [20, 5000]" in errors[0]
    assert "estimated memory" in errors[0] and "--force" in errors[0]
    # a real data set has no more rows than its range
    code, _, errors = _run(["solve", "wwsvm", "--dataset", "wine", "--size", "n=500"], capsys)
    assert code == 2 and "n=500 is outside [0, 178]" in errors[0] and "--force" in errors[0]
    # below a range's low end
    code, _, errors = _run(["solve", "wwsvm", "--size", "n=12", "--size", "k=2"], capsys)
    assert code == 2 and "n=12 is outside [20, 5000]" in errors[0]
    code, out, errors = _run(["solve", "wwsvm", "--size", "n=12", "--size", "k=2",
                              "--force", "--quiet"], capsys)
    assert code == 0 and "(final)" in out


def test_a_cheap_synthetic_size_beyond_its_range_runs_with_a_note(capsys):
    # the slider's range is not a budget: the cost model's estimate decides
    code, out, _ = _run(["solve", "wwsvm", "--size", "n=6000", "--max-iter", "3",
                         "--quiet"], capsys)
    assert code in (0, 1) and "(final)" in out
    cli.main(["solve", "wwsvm", "--size", "n=6000", "--max-iter", "3", "--quiet"])
    err = capsys.readouterr().err
    assert "note: dataset 'blobs': n=6000 is outside [20, 5000]" in err
    assert "within the limits" in err and "estimated memory" in err


def test_force_prints_the_estimate(capsys):
    assert cli.main(["solve", "wwsvm", "--size", "n=12", "--size", "k=2", "--force",
                     "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "dualscope: warning: --force" in err and "estimated memory" in err


@pytest.mark.parametrize("entry", registry.entries(), ids=lambda e: e.name)
def test_every_dataset_estimates_its_default_size_within_limits(entry):
    for ds in entry.datasets.values():
        mem, secs = ds.estimate({})
        assert 0 < mem <= limits.COMMAND_LINE.memory, (ds.name, mem)
        assert secs is None or secs >= 0
        # the largest allowed sizes are estimated too (finite, positive)
        mem_hi, secs_hi = ds.estimate({k: v[2] for k, v in ds.sizes.items()})
        assert 0 < mem_hi < float("inf") and (secs_hi is None or secs_hi >= 0)


def test_estimate_hook_and_default():
    calls = []
    ds = registry.Dataset("toy", "toy", lambda seed=0, **s: None,
                          sizes={"n": (10, 1, 100), "d": (3, 1, 9), "spread": (1.0, 0, 2)})
    mem, secs = ds.estimate({"n": 100})
    assert mem == 8 * 8 * 100 * 3 and secs is None  # default: from the integer sizes
    ds2 = registry.Dataset("toy", "toy", lambda seed=0, **s: None, sizes=ds.sizes,
                           memory=lambda s: calls.append(dict(s)) or 123.0,
                           cost="explorer.models.wwsvm.costs:BLOBS")
    with pytest.raises(KeyError):  # the named cost is resolved and its seconds called
        ds2.estimate({"n": 5})
    assert calls == [{"n": 5, "d": 3, "spread": 1.0}]


def test_mtmkl_paper_maximum_needs_force(capsys):
    # the MT-MKL size extremes need > 10 GB (issue 14): refused without --force
    code, _, errors = _run(["solve", "mtmkl", "--size", "depth=7", "--size", "d=1000",
                            "--size", "n_test=5000"], capsys)
    assert code == 2 and "more than 2.0 GB" in errors[0] and "--force" in errors[0]


def test_list_shows_ranges_and_help(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for e in registry.entries():
        for d in e.datasets.values():
            for key, (default, low, high) in d.sizes.items():
                # a real data set's count at 0 means all of it, and says so
                all_at_zero = d.real and isinstance(low, int) and low == default == 0
                mark = " (all)" if all_at_zero else ""
                assert f"{key}={default}{mark} [{low}, {high}]" in out
        for p in e.params:
            assert f"{p.name}={p.default}  {cli.param_range(p)}" in out
            if p.spec is not None:
                assert p.spec.describe() in out
    assert "C=1.0  (0, inf)" in out  # wwsvm's C, from its ParamSpec


def _app_cmd(argv, monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd, env=None: calls.append(cmd) or 0)
    assert cli.main(argv) == 0
    capsys.readouterr()
    (cmd,) = calls
    return cmd


def test_app_binds_to_localhost_by_default(monkeypatch, capsys):
    cmd = _app_cmd(["app", "--headless"], monkeypatch, capsys)
    assert cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--server.port") + 1] == "8501"
    assert cmd[cmd.index("--server.headless") + 1] == "true"


def test_app_host_option(monkeypatch, capsys):
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd, env=None: calls.append(cmd) or 0)
    assert cli.main(["app", "--host", "0.0.0.0", "--port", "9000"]) == 0
    err = capsys.readouterr().err
    cmd = calls[0]
    assert cmd[cmd.index("--server.address") + 1] == "0.0.0.0"
    assert cmd[cmd.index("--server.port") + 1] == "9000"
    assert "reachable from other machines" in err


def test_sweep_subcommand_shares_the_error_contract(capsys):
    code, out, errors = _run(["sweep", "wwsvm", "--grid", "C=0.1,1", "--size", "n=60",
                              "--backend", "serial", "--out", "/no/such/dir/runs.csv"], capsys)
    assert code == 2 and "--out '/no/such/dir/runs.csv'" in errors[0] and out == ""
    code, _, errors = _run(["sweep", "wwsvm", "--grid", "C=0.1", "--bogus"], capsys)
    assert code == 2 and "unrecognized arguments: --bogus" in errors[0]
    code = cli.main(["sweep", "wwsvm", "--grid", "C=-1", "--size", "n=60", "--quiet",
                     "--backend", "serial", "--debug"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" in err
    assert err.rstrip().splitlines()[-1].startswith("dualscope: ") and "C" in err


def test_history_rows_do_not_print_a_zero_gap_as_a_measurement():
    from types import SimpleNamespace

    from explorer.cli import _row

    exact = SimpleNamespace(iteration=3, time=0.5, primal=1.25, dual=1.25, gap=0.0,
                            rel_gap=0.0)
    row = _row(exact)
    assert "0.000e+00" not in row and row.split()[-2:] == ["0", "0"]
    assert len(row) == len(_row(SimpleNamespace(**{**vars(exact), "gap": 1e-3,
                                                  "rel_gap": 8e-4})))
    assert _row(SimpleNamespace(**{**vars(exact), "gap": 1e-3})).split()[-2] == "1.000e-03"
