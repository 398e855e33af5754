"""The datasets' cost model (``registry.Dataset.estimate``) against real runs.

Memory: the estimate within 3x of the ``tracemalloc`` peak of building the problem and
solving it. Time: the seconds are ``setup + iterations x seconds per iteration`` with
constants fitted to measured CPU time (``explorer/estimates.py``); timing a run inside
the suite would be flaky on a shared 2-core machine, so the test checks the work the
model predicts instead — the iteration count — within 3x of the solver's real count,
and that the seconds follow from the same count.
"""

from __future__ import annotations

import tracemalloc
import warnings

import pytest

from explorer import estimates, registry

#: (model, dataset, sizes): small real runs, a default and a larger size per model
RUNS = [
    ("wwsvm", "blobs", {}),
    ("wwsvm", "blobs", {"n": 1000, "k": 6, "d": 20}),
    ("wwsvm", "wine", {}),
    ("caso", "subspace", {"d": 60, "m": 40, "n": 100}),
    ("robust_mtl", "temporal", {}),
    ("robust_mtl", "diabetes", {}),
    ("triplet_screening", "synthetic", {}),
    ("triplet_screening", "synthetic", {"n": 200, "d": 10, "k": 15}),
    ("mtmkl", "hierarchy", {"depth": 4, "n_test": 200}),
]


_WARM: set[tuple[str, str]] = set()


def test_every_registry_dataset_has_a_cost_model():
    for e in registry.entries():
        for name, ds in e.datasets.items():
            assert isinstance(ds.cost_model(), estimates.Cost), (e.name, name)
            mem, secs = ds.estimate({})
            assert secs is not None and secs > 0 and mem > 0, (e.name, name)


@pytest.mark.parametrize(("model", "dataset", "sizes"), RUNS,
                         ids=[f"{m}-{d}-{'-'.join(map(str, s.values())) or 'default'}"
                              for m, d, s in RUNS])
def test_estimate_within_3x_of_a_real_run(model, dataset, sizes):
    e = registry.get(model)
    ds = e.datasets[dataset]
    cost = ds.cost_model()
    full = ds.full_sizes(**sizes)
    mem, secs = ds.estimate(sizes)
    if (model, dataset) not in _WARM:
        # compiled kernels, cache loading and a real dataset's first read (kept in memory
        # by its loader) are not one solve's memory
        _WARM.add((model, dataset))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e.solve(ds(**sizes), tol=e.tol, max_iter=3, init=None, callback=None,
                    **e.default_params())
    tracemalloc.start()
    try:
        problem = ds(**sizes)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = e.solve(problem, tol=e.tol, max_iter=e.max_iter, init=None, callback=None,
                          **e.default_params())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 1 / 3 <= mem / peak <= 3, (mem, peak)
    predicted = cost.predicted_iterations(full)
    assert 1 / 3 <= predicted / max(res.n_iter, 1) <= 3, (predicted, res.n_iter)
    assert secs == pytest.approx(cost.setup(full) + predicted * cost.per_iteration(full))


def test_the_issue_cases_are_estimated_as_seconds_not_minutes():
    # WW-SVM n=5000, k=10, d=100 solves in about a second of CPU (the 1000-epoch budget);
    # the CLI's n=20000 is small; MT-MKL depth 7 (similarities in factor form) is about a
    # second, most of it building the data (1.3 s CPU measured), and depth 10 under a minute
    blobs = registry.get("wwsvm").datasets["blobs"]
    assert blobs.estimate({"n": 5000, "k": 10, "d": 100})[1] < 5
    assert blobs.estimate({"n": 20000})[1] < 5
    hier = registry.get("mtmkl").datasets["hierarchy"]
    assert 0.4 < hier.estimate({"depth": 7})[1] < 4
    assert hier.estimate({"depth": 10})[1] < 60
    assert hier.estimate({"depth": 7})[1] > 2 * hier.estimate({})[1]  # 4x the tasks
