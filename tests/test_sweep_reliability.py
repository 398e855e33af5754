"""Sweep reliability: table files (atomic, validated, never a foreign file overwritten)."""

from __future__ import annotations

import contextlib
import random
import warnings

import numpy as np
import pytest

from explorer import cli, limits, sweep
from explorer.sweep.table import TableError, TableWarning, load_table

TINY = sweep.SweepSpec("wwsvm", grid={"C": [0.1, 1.0, 10.0]}, sizes={"n": [30]}, seeds=[0],
                       tol=1e-6, max_iter=300)


def _finished(tmp_path_factory, ext):
    """A finished 3-row table of ``TINY`` and its bytes."""
    out = tmp_path_factory.mktemp("runs") / f"runs.{ext}"
    sweep.run(TINY, backend="serial", out=out, progress=False)
    return out, out.read_bytes()


@pytest.fixture(scope="module")
def finished_csv(tmp_path_factory):
    return _finished(tmp_path_factory, "csv")


@pytest.fixture(scope="module")
def finished_parquet(tmp_path_factory):
    return _finished(tmp_path_factory, "parquet")


def _keys():
    return [k for c in sweep.plan(TINY) for k in c.keys]


def _rerun(path):
    """Resume ``TINY`` into ``path``: the rows recomputed and the warnings given."""
    new = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sweep.run(TINY, backend="serial", out=path, progress=False, on_row=new.append)
    return new, [str(w.message) for w in caught if issubclass(w.category, TableWarning)]


def _csv_corruptions(data: bytes) -> dict[str, tuple[bytes, int]]:
    """name -> (corrupted bytes, rows that survive)."""
    lines = data.splitlines(keepends=True)
    rng = random.Random(0)
    noise = bytes(rng.randrange(256) for _ in range(400))
    return {
        "truncated last line": (b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2], 2),
        "truncated inside the key": (b"".join(lines[:-1]) + lines[-1][:-12] + b"\n", 2),
        "garbage appended": (data + b"garbage\n", 3),
        "a short row appended": (data + b"1,2,3\n", 3),
        "random bytes appended": (data + noise, 3),
        "random bytes in the middle": (lines[0] + lines[1] + noise + b"\n" + lines[3], 2),
        "a row with an extra column": (data + lines[1].rstrip(b"\r\n") + b",extra\n", 3),
        "a duplicated row": (data + lines[1], 3),
        "a row with a forged key": (data + lines[1].replace(b'""seed"": 0', b'""seed"": 7'),
                                    3),
        "a row with text as primal": (
            lines[0] + lines[1] + lines[2] + _replace_field(lines[0], lines[3], "primal"), 2),
    }


def _replace_field(header: bytes, line: bytes, col: str) -> bytes:
    import csv
    import io

    cols = next(csv.reader(io.StringIO(header.decode())))
    fields = next(csv.reader(io.StringIO(line.decode())))
    fields[cols.index(col)] = "oops"
    buf = io.StringIO()
    csv.writer(buf).writerow(fields)
    return buf.getvalue().encode()


CSV_KINDS = ["truncated last line", "truncated inside the key", "garbage appended",
             "a short row appended", "random bytes appended", "random bytes in the middle",
             "a row with an extra column", "a duplicated row", "a row with a forged key",
             "a row with text as primal"]


@pytest.mark.parametrize("kind", CSV_KINDS)
def test_a_corrupt_csv_table_loses_no_row_and_keeps_no_junk(tmp_path, finished_csv, kind):
    _, data = finished_csv
    bad, survive = _csv_corruptions(data)[kind]
    path = tmp_path / "runs.csv"
    path.write_bytes(bad)
    found = load_table(path)
    assert len(found.rows) == survive
    assert {r["key"] for r in found.rows} <= set(_keys())
    assert found.dropped, kind
    for msg in found.dropped:
        assert str(path) in msg and "line " in msg and "dropped" in msg
    new, told = _rerun(path)
    assert len(new) == 3 - survive  # only the lost rows are recomputed
    assert len(told) == len(found.dropped)
    final = sweep.read_table(path)
    assert [r["key"] for r in final] == _keys()  # every point once, in plan order, no junk


def test_a_corrupt_or_foreign_parquet_file_is_named_and_not_overwritten(tmp_path,
                                                                         finished_parquet):
    src, data = finished_parquet
    import pyarrow as pa
    import pyarrow.parquet as pq

    cases = {"truncated.parquet": data[: len(data) // 2],
             "garbage.parquet": data + b"garbage",
             "text.parquet": b"a,b\n1,2\n"}
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(TableError, match=rf"{name}.*refusing to overwrite"):
            sweep.run(TINY, backend="serial", out=path, progress=False)
        assert path.read_bytes() == content
    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"a": [1, 2]}), foreign)
    before = foreign.read_bytes()
    with pytest.raises(TableError, match="not a dualscope sweep table"):
        sweep.run(TINY, backend="serial", out=foreign, progress=False)
    assert foreign.read_bytes() == before
    with pytest.warns(TableWarning, match="overwriting it"):
        sweep.run(TINY, backend="serial", out=foreign, progress=False, force=True)
    assert [r["key"] for r in sweep.read_table(foreign)] == _keys()
    # a Parquet table with an edited row: that row is dropped and recomputed
    rows = sweep.read_table(src)
    rows[1] = dict(rows[1], key=rows[1]["key"][:20])
    edited = tmp_path / "edited.parquet"
    sweep.write_table(rows, edited)
    assert len(load_table(edited).rows) == 2 and "row 2" in load_table(edited).dropped[0]
    new, _ = _rerun(edited)
    assert len(new) == 1 and [r["key"] for r in sweep.read_table(edited)] == _keys()


@pytest.mark.parametrize("content", [
    b"a,b\n1,2\n", b"key\n1\n", b"\x89PNG\r\n\x1a\n" + bytes(range(256)), b'"unterminated\n',
    b"model,dataset,data_seed\nwwsvm,blobs,0\n"])
def test_a_foreign_csv_file_is_never_overwritten(tmp_path, capsys, content):
    path = tmp_path / "f.csv"
    path.write_bytes(content)
    code = cli.main(["sweep", "wwsvm", "--grid", "C=1", "--size", "n=30", "--backend",
                     "serial", "--out", str(path), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and path.read_bytes() == content
    assert "f.csv is not a dualscope sweep table" in err and "--force" in err
    assert "Traceback" not in err
    code = cli.main(["sweep", "wwsvm", "--grid", "C=1", "--size", "n=30", "--backend",
                     "serial", "--out", str(path), "--quiet", "--force"])
    assert code == 0 and len(sweep.read_table(path)) == 1


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_writing_is_atomic(tmp_path, ext):
    path = tmp_path / f"t.{ext}"
    rows = [{"model": "wwsvm", "dataset": "blobs", "data_seed": 0, "x": 1.5, "key": "k"}]
    sweep.write_table(rows, path)
    before = path.read_bytes()

    class Exploding:
        def __str__(self):
            raise RuntimeError("disk full")

        __repr__ = __str__

    with pytest.raises(RuntimeError, match="disk full"):
        sweep.write_table([*rows, dict(rows[0], x=Exploding())], path)
    assert path.read_bytes() == before  # the old table, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left


# ----------------------------------------------------------------- size guard, CLI values

def _sweep_cli(capsys, *argv):
    code = cli.main(["sweep", "wwsvm", "--quiet", "--backend", "serial", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize(("argv", "named"), [
    (["--size", "n=100000000"], "n=100000000 is outside"),
    (["--size", "n=60,100000000"], "n=100000000 is outside"),
    (["--size", "d=2000000", "--size", "n=5000"], "needs more than"),
    (["--grid", "C=geom:1:2:1000000000"], "--grid C: range"),
    (["--grid", "C=lin:1:2:1000000000"], "--grid C: range"),
    (["--size", "n=lin:20:60:1000000000"], "--size n: range"),
    (["--grid", "C=geom:1:2:1000", "--grid", "method=walrus,iterative", "--seeds",
      ",".join(map(str, range(60)))], "points (limit"),
])
def test_sweep_sizes_and_grids_pass_the_cost_guard(capsys, argv, named):
    code, out, err = _sweep_cli(capsys, *argv)
    assert code == 2 and named in err and "--force" in err and out == ""


def test_force_lifts_the_guards(capsys, monkeypatch):
    from explorer.sweep import cli as sweep_cli
    from explorer.sweep import guard

    monkeypatch.setattr(sweep_cli, "MAX_POINTS", 2)  # a grid range's cap
    monkeypatch.setattr(guard, "MAX_POINTS", 2)  # the sweep's cap
    code, _, err = _sweep_cli(capsys, "--grid", "C=geom:1:2:3", "--size", "n=30")
    assert code == 2 and "has 3 points (limit 2)" in err
    code, out, _ = _sweep_cli(capsys, "--grid", "C=1,2,4", "--size", "n=30")
    assert code == 2
    code, out, _ = _sweep_cli(capsys, "--grid", "C=geom:1:2:3", "--size", "n=30", "--force")
    assert code == 0 and "3 rows" in out
    # the dataset guard is the one of `solve` (range, then the cost model), warned on --force
    code, out, err = _sweep_cli(capsys, "--size", "n=15", "--force")
    assert code == 0 and "warning: --force: dataset 'blobs': n=15 is outside" in err


# ------------------------------------------------ the same guard for the library and the panel

#: wwsvm blobs at n=5000, d=15000: ~1.2 GB per solve (above the slider's d range, but a
#: cheap estimate: one solve runs with a note), 2.4 GB for two solves at once
BIG = {"n": [5000], "d": [15000]}


@pytest.mark.parametrize("call", ["run", "iter_rows"])
@pytest.mark.parametrize(("sizes", "named"), [
    ({"n": [60, 100_000_000]}, "n=100000000 is outside [20, 5000]"),
    ({"n": 5000, "d": 2_000_000}, "n=5000, d=2000000 needs more than 2.0 GB"),
])
def test_library_sweeps_pass_the_cost_guard(call, sizes, named):
    """``sweep.run`` / ``sweep.iter_rows`` refuse what ``dualscope sweep`` refuses, when
    called (no generator to advance), with a ValueError naming the size and the estimate."""
    spec = sweep.SweepSpec("wwsvm", grid={"C": [1.0]}, sizes=sizes)
    fn = getattr(sweep, call)
    with pytest.raises(ValueError, match="estimated memory") as exc:
        fn(spec, backend="serial", **({"progress": False} if call == "run" else {}))
    assert isinstance(exc.value, sweep.CostError)
    assert named in str(exc.value) and "force=True" in str(exc.value)


def test_library_force_lifts_the_guard(monkeypatch):
    from explorer.sweep import guard

    small = sweep.SweepSpec("wwsvm", grid={"C": [1.0]}, sizes={"n": [15]}, tol=1e-6,
                            max_iter=300)
    with pytest.raises(ValueError, match=r"n=15 is outside \[20, 5000\]"):
        sweep.run(small, backend="serial", progress=False)
    with pytest.warns(sweep.SizeWarning, match="--force: dataset 'blobs': n=15 is outside"):
        table = sweep.run(small, backend="serial", progress=False, force=True)
    assert len(table) == 1 and table[0]["error"] is None and table[0]["converged"]
    monkeypatch.setattr(guard, "MAX_POINTS", 2)
    with pytest.raises(ValueError, match="this sweep has 3 points"):
        sweep.iter_rows(TINY, backend="serial")
    assert len(sweep.run(TINY, backend="serial", progress=False, force=True)) == 3


def test_memory_guard_counts_the_workers_at_once(capsys):
    """W workers at once need W x the per-solve estimate: refused with processes, not
    serially; a local Dask cluster counts its workers, a remote scheduler's workers do not
    share this machine's memory."""
    spec = sweep.SweepSpec("wwsvm", grid={"C": [1.0]}, sizes=BIG, seeds=[0, 1, 2, 3])
    with pytest.warns(sweep.SizeWarning, match="within the limits, so it runs"):
        sweep.guard_sweep(spec, backend="serial")
        sweep.guard_sweep(spec, backend="dask", scheduler="tcp://127.0.0.1:1")
    with pytest.raises(ValueError) as exc:
        sweep.iter_rows(spec, backend="processes", workers=2)
    msg = str(exc.value)
    assert "2 workers solving at once at n=5000, d=15000 need more than 2.0 GB" in msg
    assert "2 x the per-solve estimate" in msg and "for 2 solves at once" in msg
    with pytest.raises(ValueError, match="3 workers solving at once"):
        sweep.guard_sweep(spec, backend="dask", workers=3)
    # at most one worker per chain: one chain is one solve at a time
    with pytest.warns(sweep.SizeWarning):
        sweep.guard_sweep(sweep.SweepSpec("wwsvm", grid={"C": [1.0, 2.0]}, sizes=BIG),
                          backend="processes", workers=4)
    assert sweep.solves_at_once(sweep.ProcessBackend(3), n_chains=8) == 3
    assert sweep.solves_at_once(sweep.SerialBackend(), n_chains=8) == 1
    # the command line: the same guard, the same message, nothing run
    code, out, err = _sweep_cli(capsys, "--size", "n=5000", "--size", "d=15000", "--seeds",
                                "0,1", "--backend", "processes", "--workers", "2")
    assert code == 2 and out == "" and "2 workers solving at once" in err


def test_cli_says_a_forced_size_once(capsys):
    code, out, err = _sweep_cli(capsys, "--size", "n=15", "--force")
    assert code == 0 and err.count("n=15 is outside") == 1, err


PANEL_BIG = """
from explorer import registry, sweep_panel
entry = registry.get("wwsvm")
sweep_panel.render(entry, "blobs", {"n": 100000000, "k": 3}, 0, entry.default_params())
"""


def test_sweep_panel_shows_the_guard_instead_of_running():
    from streamlit.testing.v1 import AppTest

    from explorer import registry, sweep_panel

    at = AppTest.from_string(PANEL_BIG, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "Could not start this sweep" in errors[0], errors
    assert "n=100000000, k=3 needs more than 2.0 GB" in errors[0]
    assert "estimated memory" in errors[0]
    assert at.button(key="sweep_wwsvm_run").disabled  # nothing to start
    assert "sweep_wwsvm_result" not in at.session_state
    ok = AppTest.from_string(PANEL_BIG.replace("100000000", "40"), default_timeout=60)
    ok.run()
    assert not ok.exception and not ok.error and not ok.button(key="sweep_wwsvm_run").disabled
    # the panel's planning function: the workers at once count, as in the library
    spec = sweep.SweepSpec("wwsvm", grid={"C": [1.0]}, sizes=BIG, seeds=[0, 1],
                           dataset="blobs")
    err, notes = sweep_panel.check_sweep(spec, backend="serial", workers=2)
    assert err is None and len(notes) == 1 and "so it runs" in notes[0]
    err, notes = sweep_panel.check_sweep(spec, backend="processes", workers=2)
    assert isinstance(err, ValueError) and "2 workers solving at once" in str(err)
    mem = registry.get("wwsvm").dataset("blobs")[1].estimate({"n": 5000, "d": 15000})[0]
    assert mem < limits.COMMAND_LINE.memory < 2 * mem


@pytest.mark.parametrize(("argv", "named"), [
    (["--grid", "C=1,abc"], "--grid C"),
    (["--grid", "C=abc"], "--grid C"),
    (["--grid", "C=nan"], "--grid C"),
    (["--grid", "C=-1"], "--grid C"),
    (["--grid", "C=1,,2"], "--grid C"),
    (["--grid", "C="], "--grid C"),
    (["--grid", "C=1,2", "--grid", "C=3"], "--grid C is given twice"),
    (["--grid", "C=1,1.0"], "--grid C: the value 1.0 is given twice"),
    (["--grid", "C=geom:0:1:3"], "--grid C"),
    (["--grid", "C=geom:1:inf:3"], "--grid C"),
    (["--grid", "C=geom:1:2:x"], "--grid C"),
    (["--grid", "C=geom:1:2:0"], "--grid C"),
    (["--grid", "C=geom:1:2"], "--grid C"),
    (["--grid", "method=fastest"], "--grid method"),
    (["--grid", "Cee=1"], "--grid Cee"),
    (["--grid", "=1"], "--grid"),
    (["--grid", "C"], "--grid"),
    (["--set", "C=abc"], "--set C"),
    (["--set", "C=1,2"], "--set C"),
    (["--set", "C=1", "--set", "C=2"], "--set C is given twice"),
    (["--set", "C=1", "--grid", "C=2"], "--set both give C"),
    (["--size", "n=abc"], "--size n"),
    (["--size", "n=20.5"], "--size n"),
    (["--size", "n=1e400"], "--size n"),
    (["--size", "n=nan"], "--size n"),
    (["--size", "n="], "--size n"),
    (["--size", "m=3"], "--size m"),
    (["--size", "n=30", "--size", "n=40"], "--size n is given twice"),
    (["--seeds", "a,b"], "--seeds"),
    (["--seeds", "1,,2"], "--seeds"),
    (["--seeds", ""], "--seeds"),
    (["--seeds", "-1"], "--seeds"),
    (["--seeds", str(2**64)], "--seeds"),
    (["--seeds", "1,1"], "--seeds"),
    (["--seeds", "inf"], "--seeds"),
    (["--workers", "-2"], "--workers"),
    (["--workers", "0"], "--workers"),
    (["--cv", "1"], "--cv"),
    (["--cv", "-3"], "--cv"),
    (["--tol", "nan"], "--tol"),
    (["--tol", "-1"], "--tol"),
    (["--tol", "inf"], "--tol"),
    (["--max-iter", "0"], "--max-iter"),
    (["--max-iter", "-5"], "--max-iter"),
    (["--path", "Cee"], "--path"),
    (["--dataset", "nope"], "--dataset"),
    (["--scheduler", ""], "--scheduler"),
    (["--backend", "processes", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
    (["--out", ""], "--out"),
])
def test_every_sweep_value_error_names_its_option(capsys, argv, named):
    # --backend serial is given first: a later --backend overrides it
    code, out, err = _sweep_cli(capsys, "--size", "n=30", *argv) if argv[0] != "--size" \
        else _sweep_cli(capsys, *argv)
    assert code == 2, (argv, out, err)
    assert named in err and err.startswith("dualscope: ") and len(err.strip().splitlines()) == 1
    assert "internal error" not in err


def test_cv_on_a_model_without_a_split_names_the_option(capsys):
    code = cli.main(["sweep", "mtmkl", "--cv", "2", "--quiet"])
    assert code == 2 and "--cv" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "named"), [
    (["--json", ""], "--json is empty"),
    (["--set", "C=1", "--set", "C=2"], "--set C is given twice"),
    (["--size", "n=30", "--size", "n=40"], "--size n is given twice"),
])
def test_solve_refuses_silent_nonsense(capsys, argv, named):
    code = cli.main(["solve", "wwsvm", "--quiet", *argv])
    err = capsys.readouterr().err
    assert code == 2 and named in err, err


# ----------------------------------------------------------------- scores

def test_more_folds_than_rows_is_an_error_row_not_a_silent_nan(capsys):
    code = cli.main(["sweep", "wwsvm", "--cv", "30", "--size", "n=20", "--quiet",
                     "--backend", "serial"])
    out, err = capsys.readouterr()
    assert code == 1 and "30 error(s)" in out and "nan" not in out.lower()
    assert "cv=30 folds need at least 30 rows; the data has 20" in out
    assert "Mean of empty slice" not in err and "RuntimeWarning" not in err
    # the multitask split says which task is too small
    table = sweep.run(sweep.SweepSpec("caso", grid={"alpha": [0.1]}, cv=4,
                                      sizes={"d": [4], "m": [2], "n": [3]}),
                      backend="serial", progress=False)
    assert all("cv=4 folds need at least 4 rows; the task 1 has 3" in r["error"]
               for r in table)


class _Hooks(sweep.ModelHooks):
    def __init__(self, score):
        self._score = score

    def score(self, problem, result):
        return self._score()


@pytest.mark.parametrize(("score", "reason"), [
    (lambda: sweep.Score("accuracy", np.mean(np.array([]))),
     "ScoreError: accuracy is nan (Mean of empty slice"),
    (lambda: sweep.Score("auc", np.float64(1.0) / np.float64(0.0)), "ScoreError: auc is inf"),
    (lambda: sweep.Score("auc", float("nan")), "ScoreError: auc is nan"),
    (lambda: 1 / 0, "ZeroDivisionError"),
])
def test_a_score_that_cannot_be_computed_is_named_in_its_row(monkeypatch, capsys, score,
                                                             reason):
    monkeypatch.setattr(sweep.chain, "hooks_of", lambda entry: _Hooks(score))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = sweep.run(TINY, backend="serial", progress=False)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    for r in table:
        assert r["error"] is None and r["converged"] is True  # the certificate stands
        assert r["score"] is None and r["score_error"].startswith(reason), r["score_error"]
    code = cli.main(["sweep", "wwsvm", "--grid", "C=1", "--size", "n=30", "--quiet",
                     "--backend", "serial"])
    err = capsys.readouterr().err
    assert code == 0 and "warning: 1 row(s) without a held-out score: " + reason in err


# ----------------------------------------------------------------- a lost Dask cluster

@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_lost_scheduler_keeps_the_finished_rows_and_says_how_to_resume(tmp_path):
    import distributed

    spec = sweep.SweepSpec("wwsvm", grid={"C": [0.1, 1.0]}, sizes={"n": [30]},
                           seeds=list(range(6)), tol=1e-6, max_iter=300)
    out = tmp_path / "lost.csv"
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    client = distributed.Client(cluster, timeout=1)
    seen = []

    def kill_the_scheduler(row):
        seen.append(row)
        if len(seen) == 2:  # one chain finished
            cluster.sync(cluster.scheduler.close)

    try:
        with pytest.raises(sweep.ClusterLostError) as lost:
            sweep.run(spec, scheduler=client, out=out, progress=False, on_row=kill_the_scheduler)
    finally:
        client.close()
        with contextlib.suppress(TimeoutError):  # its worker waits for the scheduler
            cluster.close(timeout=1)
        # a close that timed out leaves the cluster's event-loop thread running (it kept
        # Dask threads alive beside later tests' kernels): stop it
        cluster._loop_runner.stop()
    msg = str(lost.value)
    assert lost.value.address.startswith("inproc://") and lost.value.address in msg
    assert f"finished row(s) are kept in {out}" in msg and "rerun the same command" in msg
    kept = sweep.read_table(out)
    assert len(kept) >= 2 and len(kept) < 12
    new = []
    sweep.run(spec, backend="serial", out=out, progress=False, on_row=new.append)
    assert len(new) == 12 - len(kept)  # the finished rows are not recomputed
    assert sorted(r["key"] for r in sweep.read_table(out)) == \
        sorted(k for c in sweep.plan(spec) for k in c.keys)


def test_a_cluster_without_workers_is_lost_not_waited_for(monkeypatch):
    import distributed

    from explorer.sweep import backends

    monkeypatch.setattr(backends, "NO_WORKER_GRACE", 0.5)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as c, \
            distributed.Client(c) as client, pytest.raises(sweep.ClusterLostError,
                                                           match="has had no worker"):
        sweep.run(TINY, scheduler=client, progress=False)


def test_a_killed_worker_makes_error_rows_of_its_chain():
    from distributed import KilledWorker

    from explorer.sweep.backends import DaskBackend

    class Dead:
        status = "error"

        def result(self):
            worker = type("WorkerState", (), {"address": "tcp://127.0.0.1:1"})()
            raise KilledWorker("run_chain-1", worker, 3)

    chain = sweep.plan(TINY)[0]
    rows = DaskBackend(scheduler="tcp://127.0.0.1:1")._rows(Dead(), chain)
    assert [r["key"] for r in rows] == list(chain.keys)
    assert all(r["error"].startswith("KilledWorker") and r["primal"] is None for r in rows)


def test_the_cli_says_a_lost_cluster_in_one_line(monkeypatch, capsys):
    from explorer.sweep import cli as sweep_cli

    def lost(*args, **kwargs):
        import logging

        logging.getLogger("distributed.client").error("Traceback (most recent call last)")
        raise sweep.ClusterLostError("lost the connection to the Dask scheduler tcp://h:1 "
                                     "(scheduler-connection-lost); rerun", "tcp://h:1")

    monkeypatch.setattr(sweep_cli, "run", lost)
    code = cli.main(["sweep", "wwsvm", "--size", "n=30", "--scheduler", "tcp://h:1"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == ["dualscope: lost the connection to the Dask scheduler "
                                        "tcp://h:1 (scheduler-connection-lost); rerun"]
