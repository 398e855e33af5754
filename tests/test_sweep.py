"""Sweeps: same table on every backend, resume, error rows, warm-started chains, CLI, panel."""

from __future__ import annotations

import dataclasses
import math
import textwrap

import numpy as np
import pytest

from explorer import registry, sweep

SMALL = {"n": [60], "k": [3]}


def _spec(**kw) -> sweep.SweepSpec:
    base = dict(model="wwsvm", grid={"C": [0.1, 1.0, 10.0], "method": ["walrus", "iterative"]},
                sizes=SMALL, seeds=[0, 1], tol=1e-6, max_iter=300)
    base.update(kw)
    return sweep.SweepSpec(**base)


def _comparable(table):
    return [{k: v for k, v in r.items() if k != "time"} for r in table]


def _assert_same(a, b):
    assert [r["key"] for r in a] == [r["key"] for r in b]
    for ra, rb in zip(_comparable(a), _comparable(b), strict=True):
        assert ra.keys() == rb.keys()
        for k in ("primal", "dual", "gap"):
            assert math.isclose(ra[k], rb[k], rel_tol=1e-12, abs_tol=0.0), (k, ra, rb)
        same = {k: v for k, v in ra.items() if k not in ("primal", "dual", "gap", "rel_gap")}
        assert same == {k: rb[k] for k in same}


@pytest.fixture(scope="module")
def serial_table():
    return sweep.run(_spec(), backend="serial", progress=False)


def test_plan_chains_along_the_continuous_parameter():
    chains = sweep.plan(_spec())
    # method (a choice) x seeds x sizes are independent chains; C is the path
    assert len(chains) == 2 * 2
    assert all(c.path == "C" and [p["C"] for p in c.points] == [0.1, 1.0, 10.0]
               for c in chains)
    down = sweep.plan(_spec(descending=True))
    assert [p["C"] for p in down[0].points] == [10.0, 1.0, 0.1]
    flat = sweep.plan(_spec(path=""))
    assert len(flat) == 12 and all(len(c.points) == 1 for c in flat)
    assert len({k for c in chains for k in c.keys}) == 12
    with pytest.raises(KeyError, match="no parameter 'Cee'"):
        sweep.plan(_spec(grid={"Cee": [1.0]}))
    with pytest.raises(ValueError, match="no size 'm'"):
        sweep.plan(_spec(sizes={"m": [3]}))


def test_rows_carry_certificate_and_exact_point(serial_table):
    assert len(serial_table) == 12
    for r in serial_table:
        assert r["error"] is None
        for k in sweep.CERTIFICATE:
            assert r[k] is not None, k
        assert r["gap"] >= 0 and r["primal"] >= r["dual"]
        assert r["size_n"] == 60 and r["size_k"] == 3 and r["model"] == "wwsvm"
        assert r["data_seed"] in (0, 1) and r["method"] in ("walrus", "iterative")
        assert 0.0 <= r["struct_support_fraction"] <= 1.0
    # each chain: cold first point, then warm starts in order of C
    for chain in {r["chain"] for r in serial_table}:
        rows = [r for r in serial_table if r["chain"] == chain]
        assert [r["C"] for r in rows] == [0.1, 1.0, 10.0]
        assert [r["warm"] for r in rows] == [False, True, True]


# Dask runs tasks in worker threads, where the sweep leaves the (process-global) warnings
# filters alone: the unconverged points' ConvergenceWarnings reach pytest from there.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_backends_give_identical_tables(serial_table):
    import distributed  # in the test extra (dualscope[distributed]): never skipped
    procs = sweep.run(_spec(), backend="processes", workers=2, progress=False)
    _assert_same(serial_table, procs)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, timeout=30) as client:
        dask_table = sweep.run(_spec(), scheduler=client, progress=False)
    _assert_same(serial_table, dask_table)


def test_chain_passes_previous_result_as_init(monkeypatch):
    entry = registry.get("wwsvm")
    seen = []

    def recording(problem, *, init=None, **kw):
        seen.append((kw["C"], None if init is None else init.params["C"]))
        return entry.solve(problem, init=init, **kw)

    fake = dataclasses.replace(entry, solve=recording)
    monkeypatch.setattr(sweep.registry, "get", lambda name: fake)
    spec = _spec(grid={"C": [1.0, 0.01, 0.1]}, seeds=[0], descending=True)
    table = sweep.run(spec, backend="serial", progress=False)
    assert seen == [(1.0, None), (0.1, 1.0), (0.01, 0.1)]
    assert [r["warm"] for r in table] == [False, True, True]
    # warm start == cold start (within the certified tolerance)
    cold = sweep.run(dataclasses.replace(spec, warm=False), backend="serial", progress=False)
    assert [r["warm"] for r in cold] == [False, False, False]
    for w, c in zip(table, cold, strict=True):
        assert abs(w["primal"] - c["primal"]) <= 2e-6 * max(1.0, abs(c["primal"]))


def test_broken_point_becomes_an_error_row():
    spec = _spec(grid={"C": [-1.0, 1.0]}, seeds=[0])
    table = sweep.run(spec, backend="serial", progress=False)
    assert len(table) == 2
    bad, good = table
    assert bad["C"] == -1.0 and bad["error"].startswith("ValueError:") and "C" in bad["error"]
    assert bad["primal"] is None
    assert good["error"] is None and good["converged"] in (True, False)
    assert good["warm"] is False  # nothing to warm-start from
    # a dataset that cannot be built: every point of the chain reports it (k=1 is below
    # its range: the cost guard refuses it unless forced)
    with pytest.warns(sweep.SizeWarning, match="k=1 is outside"):
        broken = sweep.run(_spec(grid={"C": [1.0]}, sizes={"n": [60], "k": [1]}, seeds=[0]),
                           backend="serial", progress=False, force=True)
    assert len(broken) == 1 and broken[0]["error"]


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_resume_skips_finished_rows(tmp_path, ext):
    out = tmp_path / f"runs.{ext}"
    first = sweep.run(_spec(seeds=[0], grid={"C": [0.1, 1.0]}), backend="serial", out=out,
                      progress=False)
    assert len(sweep.read_table(out)) == 2
    new = []
    full = sweep.run(_spec(seeds=[0, 1], grid={"C": [0.1, 1.0]}), backend="serial", out=out,
                     progress=False, on_row=new.append)
    assert len(new) == 2 and {r["data_seed"] for r in new} == {1}
    assert len(full) == 4
    on_disk = sweep.read_table(out)
    assert [r["key"] for r in on_disk] == [r["key"] for r in full]
    for r0 in first:  # finished rows kept exactly (floats round-trip)
        r1 = next(r for r in on_disk if r["key"] == r0["key"])
        assert r1["primal"] == r0["primal"] and r1["gap"] == r0["gap"]
        assert r1["n_iter"] == r0["n_iter"] and r1["converged"] == r0["converged"]
    again = []
    sweep.run(_spec(seeds=[0, 1], grid={"C": [0.1, 1.0]}), backend="serial", out=out,
              progress=False, on_row=again.append)
    assert again == []


def test_cross_validation_scores_each_fold():
    spec = _spec(grid={"C": [0.1, 1.0]}, seeds=[0], cv=3)
    table = sweep.run(spec, backend="serial", progress=False)
    assert len(table) == 6 and sorted({r["fold"] for r in table}) == [0, 1, 2]
    assert all(r["score_name"] == "accuracy" and 0.0 <= r["score"] <= 1.0 for r in table)
    assert np.mean([r["score"] for r in table]) > 0.5  # three blobs: far above chance 1/3
    with pytest.raises(ValueError, match="cross-validation"):
        sweep.plan(sweep.SweepSpec("mtmkl", grid={"C": [1e-3]}, cv=2))


def test_parse_values():
    C = registry.get("wwsvm").param("C")
    assert sweep.parse_values(C, "0.1,1,10") == [0.1, 1.0, 10.0]
    assert np.allclose(sweep.parse_values(C, "geom:0.01:1:3"), [0.01, 0.1, 1.0])
    assert sweep.parse_values(registry.get("wwsvm").param("method"), "walrus") == ["walrus"]
    with pytest.raises(ValueError):
        sweep.parse_values(C, "geom:0:1:3")


def test_cli_sweep(tmp_path, capsys):
    from explorer import cli

    out = tmp_path / "runs.csv"
    code = cli.main(["sweep", "wwsvm", "--grid", "C=0.1,1", "--seeds", "0,1", "--size", "n=60",
                     "--size", "k=3", "--max-iter", "200", "--backend", "serial",
                     "--out", str(out), "--quiet"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "4 rows" in text and "0 error(s)" in text
    assert len(sweep.read_table(out)) == 4
    code = cli.main(["sweep", "wwsvm", "--grid", "C=-1", "--size", "n=60", "--quiet",
                     "--backend", "serial"])
    assert code == 2  # the command line validates parameter values up front
    assert "C" in capsys.readouterr().err


PANEL = textwrap.dedent("""
    from explorer import registry, sweep_panel
    entry = registry.get("wwsvm")
    sweep_panel.render(entry, "blobs", {"n": 40, "k": 3}, 0, entry.default_params())
""")


def test_panel_draws_heatmap_over_two_parameters():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_string(PANEL, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    at.multiselect(key="sweep_wwsvm_params").set_value(["C", "method"])
    at.run()
    at.number_input(key="sweep_wwsvm_n_C").set_value(3)
    at.selectbox(key="sweep_wwsvm_backend").set_value("serial")
    at.number_input(key="sweep_wwsvm_seeds").set_value(1)
    at.button(key="sweep_wwsvm_run").click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    import json

    figs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert any(t.get("type") == "heatmap" for f in figs for t in f["data"]), figs
    n = 3 * len(registry.get("wwsvm").param("method").choices)  # 3 C values x every method
    assert any(f"{n} rows of {n}" in m.value for m in at.caption), [m.value for m in at.caption]


def test_split_tasks_partitions_every_task():
    problem = registry.get("caso").datasets["subspace"](seed=0, d=4, m=3, n=10)
    folds = [sweep.split_tasks(problem, 3, f, seed=1) for f in range(3)]
    for t, X in enumerate(problem.data["Xs"]):
        held = np.vstack([f.info["Xs_test"][t] for f in folds])
        assert held.shape == X.shape  # every row held out exactly once
        assert np.array_equal(np.sort(held, axis=0), np.sort(X, axis=0))
        for f in folds:  # training and held-out rows are disjoint and complete
            both = np.vstack([f.data["Xs"][t], f.info["Xs_test"][t]])
            assert np.array_equal(np.sort(both, axis=0), np.sort(X, axis=0))
            assert len(f.info["ys_sign"][t]) == len(f.data["ys"][t])
    table = sweep.run(sweep.SweepSpec("caso", grid={"alpha": [0.1]}, cv=2,
                                      sizes={"d": [4], "m": [3], "n": [10]}),
                      backend="serial", progress=False)
    assert [r["score_name"] for r in table] == ["mse", "mse"]  # solvers.scoring names
    assert all(r["score"] > 0 and r["error"] is None for r in table)


def test_the_backend_bench_grid_comes_from_a_model_that_offers_one():
    """sweep_bench runs the grid of the first model whose hooks offer one (or --model's);
    the hooks' default offers none, and a model without one is refused by name."""
    from explorer import sweep_bench

    offering = [e.name for e in registry.entries()
                if sweep.hooks_of(e).bench_grid(True) is not None]
    assert offering, "some model offers the sweep backends' bench grid"
    assert sweep.ModelHooks().bench_grid(True) is None
    assert isinstance(sweep.NO_HOOKS, sweep.SweepHooks)
    quick, full = sweep_bench.grid_spec(True), sweep_bench.grid_spec(False)
    assert quick.model == offering[0] == full.model
    assert sweep_bench.grid_spec(True, offering[-1]).model == offering[-1]
    keys = [k for c in sweep.plan(quick) for k in c.keys]
    assert len(keys) == len(set(keys)) == sum(len(c.keys) for c in sweep.plan(full))
    # the warm-up before timing solves every method once, briefly
    warm = sweep_bench._warmup_spec(quick)
    assert warm.max_iter == 5 and len(warm.seeds) == 1
    assert {k: v for k, v in warm.grid.items() if len(v) > 1} == {
        k: list(v) for k, v in quick.grid.items()
        if registry.get(quick.model).param(k).kind != "float"}
    lacking = [e.name for e in registry.entries() if e.name not in offering]
    if lacking:
        with pytest.raises(ValueError, match=f"model '{lacking[0]}' offers no"):
            sweep_bench.grid_spec(True, lacking[0])
