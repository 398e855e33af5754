"""Weston–Watkins SVM: partial selection, free-block acceleration, stopping rules, labels."""

import warnings

import numpy as np
import pytest
from test_wwsvm import _bisection

from solvers import ConvergenceWarning, wwsvm
from solvers import _wwsvm_kernels as kern
from solvers.base import IncompatibleWarmStart
from solvers.reference import wwsvm as ref

# ------------------------------------------------------- exact block with partial selection


def _vectors(rng, m):
    yield rng.normal(size=m)                                   # about half positive
    yield np.abs(rng.normal(size=m)) * 3 + 0.1                 # all positive
    yield np.round(rng.normal(size=m) * 2) / 2                 # many ties
    v = np.full(m, 0.7)
    v[: m // 3] = 1.3
    yield v                                                    # two tied plateaus
    yield np.full(m, 2.0)                                      # all equal
    v = -np.abs(rng.normal(size=m)) - 1e-3
    v[rng.integers(0, m, size=3)] = [5.0, 5.0, 0.2]            # a few positive, tied top
    yield v
    yield rng.exponential(size=m) ** 3                         # heavy tail


@pytest.mark.parametrize("m", [1, 7, 49, 120, 999, 1999])
@pytest.mark.parametrize("C", [1e-3, 0.05, 1.0, 1e3])
def test_partial_selection_is_exact(m, C):
    rng = np.random.default_rng(m)
    for v in _vectors(rng, m):
        b = wwsvm.solve_subproblem(v, C)
        full = wwsvm.solve_subproblem(v, C, full_sort=True)
        scale = max(1.0, np.abs(v).max())
        np.testing.assert_allclose(b, full, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(b, _bisection(v, C), rtol=0, atol=1e-9 * scale)
        # the optimality condition b = clip(v - sum(b)) (sum(b) rounds like m terms)
        np.testing.assert_allclose(b, np.clip(v - b.sum(), 0, C), rtol=0,
                                   atol=1e-12 * (m + 10) * scale)


@pytest.mark.parametrize("seed", range(6))
def test_select_top_puts_the_largest_first(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    a = np.round(rng.normal(size=n) * rng.choice([1, 4, 50]))  # many ties
    for t in sorted({1, n // 3, n // 2, n - 1, n}):
        w = a.copy()
        kern.select_top(w, n, t)
        np.testing.assert_array_equal(np.sort(w), np.sort(a))  # a permutation
        if t < n:
            assert w[:t].min() >= w[t:].max()


# ------------------------------------------------------- overlapping, ill-conditioned data


def _overlapping(seed, n=120, d=4, k=4, spread=2.5):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(k, d))
    y = np.arange(n) % k
    X = centers[y] + spread * rng.normal(size=(n, d))
    return X, y


@pytest.mark.parametrize(("seed", "accelerate"),
                         [(0, True), (1, True), (2, True), (3, True), (0, False), (3, False)])
def test_overlapping_instances_agree_with_cvxpy(seed, accelerate):
    # (the paper's sweeps alone need > 100,000 epochs for 1e-8 at seeds 1 and 2)
    X, y = _overlapping(seed, n=80 + 20 * seed)
    C = [1.0, 10.0, 100.0, 5.0][seed]
    res = wwsvm.solve(X, y, C, tol=1e-8, max_iter=100_000, accelerate=accelerate)
    assert res.converged and res.rel_gap <= 1e-8
    r = ref.solve(X, y, C)
    scale = max(1.0, abs(r.value))
    assert res.primal == pytest.approx(r.value, rel=1e-6)
    assert res.dual <= r.value + 1e-7 * scale and r.value <= res.primal + 1e-7 * scale
    assert wwsvm.primal_objective(res.W, X, y, C) == pytest.approx(res.primal, rel=1e-12)
    assert wwsvm.dual_objective(res.alpha, X, y, C) == pytest.approx(res.dual, rel=1e-12)
    assert np.linalg.norm(res.W - r.W) <= np.sqrt(2 * res.gap) + 1e-4 * max(
        1.0, np.linalg.norm(r.W))


@pytest.mark.parametrize("seed", range(3))
def test_acceleration_never_certifies_worse_than_plain_sweeps(seed):
    X, y = _overlapping(10 + seed, n=200, d=5, k=5, spread=3.0)
    C = 20.0
    for budget in (30, 150, 600):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            acc = wwsvm.solve(X, y, C, tol=1e-10, max_iter=budget)
            plain = wwsvm.solve(X, y, C, tol=1e-10, max_iter=budget, accelerate=False)
        assert acc.gap <= plain.gap * (1 + 1e-9) + 1e-12
        assert acc.dual >= plain.dual - 1e-9 * abs(plain.dual)
    full = wwsvm.solve(X, y, C, tol=1e-10, max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        slow = wwsvm.solve(X, y, C, tol=1e-10, max_iter=full.n_iter, accelerate=False)
    assert full.converged and full.n_accel_steps > 0
    assert slow.gap >= full.gap
    # the certified gap never increases along an accelerated run
    assert np.all(np.diff(full.history.gap) <= 1e-9 * full.history.gap[0])


def test_warm_start_equals_cold_start_on_overlapping_data():
    X, y = _overlapping(3, n=150)
    cold = wwsvm.solve(X, y, 4.0, tol=1e-10, max_iter=100_000)
    prev = wwsvm.solve(X, y, 2.0, tol=1e-10, max_iter=100_000)
    warm = wwsvm.solve(X, y, 4.0, tol=1e-10, max_iter=100_000, init=prev)
    assert warm.converged and cold.converged
    assert warm.primal == pytest.approx(cold.primal, rel=1e-9)
    np.testing.assert_allclose(warm.W, cold.W, atol=np.sqrt(2 * (warm.gap + cold.gap)) + 1e-9)
    again = wwsvm.solve(X, y, 4.0, tol=1e-10, max_iter=100_000, init=cold)
    assert again.n_iter <= 10


# ------------------------------------------------------- stopping rules


def test_paper_stopping_rule_stops_at_ratio_times_first_gap():
    X, y = _overlapping(5, n=150)
    for ratio in (0.1, 0.01, 0.0009):
        res = wwsvm.solve(X, y, 3.0, stopping="gap_ratio", ratio=ratio, max_iter=100_000)
        h = res.history
        assert res.converged and res.stop_reason == "converged"
        assert res.gap <= ratio * h.gap[0] * (1 + 1e-12)
        assert res.gap_ratio == pytest.approx(res.gap / h.gap[0])
        assert np.all(h.gap[:-1] > ratio * h.gap[0])  # not earlier than needed
        assert res.params["stopping"] == "gap_ratio" and res.params["ratio"] == ratio
    assert wwsvm.PARAMS.default("ratio") == 0.0009
    assert wwsvm.PARAMS.default("stopping") == "relative_gap"


# ------------------------------------------------------- labels


def test_labels_are_any_hashable_values():
    X, codes = _overlapping(7, n=90, k=3, spread=1.0)
    base = wwsvm.solve(X, codes, 1.0, tol=1e-10, max_iter=100_000)
    for labels in ([1, 5, 9], ["cat", "dog", "emu"], [-3, 0, 10**9], [0.5, 1.5, 2.5]):
        y = np.asarray(labels)[codes]
        res = wwsvm.solve(X, y, 1.0, tol=1e-10, max_iter=100_000)
        assert res.n_classes == 3 and res.W.shape == (X.shape[1], 3)
        np.testing.assert_array_equal(res.classes, np.sort(np.asarray(labels)))
        assert res.primal == pytest.approx(base.primal, rel=1e-9)
        pred = res.predict(X)
        np.testing.assert_array_equal(pred, np.asarray(labels)[base.predict(X)])
        assert wwsvm.primal_objective(res.W, X, y, 1.0) == pytest.approx(res.primal,
                                                                          rel=1e-12)
    # two classes with a huge label: no n x 10**9 allocation, k = 2
    y2 = np.where(codes == 0, 10**9, 3)
    res = wwsvm.solve(X, y2, 1.0)
    assert res.alpha.shape == (X.shape[0], 2) and list(res.classes) == [3, 10**9]
    # a warm start from another label set is refused
    other = wwsvm.solve(X, np.asarray([2, 5, 9])[codes], 1.0)
    with pytest.raises(IncompatibleWarmStart, match="classes"):
        wwsvm.solve(X, np.asarray([1, 5, 9])[codes], 1.0, init=other)


# ------------------------------------------------------- defaults converge


def test_readme_example_converges_without_warning():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = rng.integers(0, 4, size=300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = wwsvm.solve(X, y, C=1.0, tol=1e-8)
    assert res.converged


def _page_cases():
    base = {"n": 300, "k": 4, "d": 2, "spread": 1.0, "C": 1.0, "tol": 1e-6}
    yield base
    for key, vals in {"C": (0.5, 2.0), "n": (299, 301), "k": (3, 5), "d": (3,),
                      "spread": (0.962, 1.038), "tol": (1e-5, 1e-7)}.items():
        for v in vals:
            yield {**base, key: v}


def test_page_defaults_and_one_notch_either_way_converge():
    from explorer.models.wwsvm import ENTRY
    from explorer.models.wwsvm.data import blobs

    sizes = {name: spec[0] for name, spec in ENTRY.datasets["blobs"].sizes.items()}
    assert sizes == {"n": 300, "k": 4, "d": 2, "spread": 1.0}  # the cases below
    assert ENTRY.tol == 1e-6 and ENTRY.param("C").default == 1.0
    for case in _page_cases():
        prob = blobs(seed=0, n=case["n"], k=case["k"], d=case["d"], spread=case["spread"])
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            res = wwsvm.solve(prob.data["X"], prob.data["y"], case["C"], tol=case["tol"],
                              max_iter=ENTRY.max_iter)
        assert res.converged, case
