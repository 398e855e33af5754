"""The BLAS thread policy (solvers._blas): one thread inside every solve, at every size."""

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from solvers import _blas, caso, mtmkl, robust_mtl


def _blas_threads() -> dict[str, int]:
    return {p["filepath"]: p["num_threads"] for p in threadpool_info()
            if p["user_api"] == "blas"}


def _caso(callback):
    rng = np.random.default_rng(0)
    d = 300  # above any "small matrix" threshold
    Xs = [rng.normal(size=(5, d)) for _ in range(2)]
    ys = [rng.normal(size=5) for _ in range(2)]
    caso.solve(Xs, ys, max_iter=2, tol=1e-30, callback=callback)


def _robust_mtl(callback):
    rng = np.random.default_rng(0)
    d = 300
    Xs = [rng.normal(size=(5, d)) for _ in range(3)]
    ys = [rng.normal(size=5) for _ in range(3)]
    robust_mtl.solve(Xs, ys, max_iter=2, tol=1e-30, callback=callback)


def _mtmkl(callback):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 300))
    y = np.where(rng.random(8) < 0.5, -1.0, 1.0)
    y[:2] = [-1.0, 1.0]
    mtmkl.solve(X, y, np.repeat([0, 1], 4), np.eye(2)[None], max_iter=2, tol=1e-30,
                callback=callback)


@pytest.mark.filterwarnings("ignore::solvers.ConvergenceWarning")
@pytest.mark.parametrize("run", [_caso, _robust_mtl, _mtmkl], ids=["caso", "robust_mtl", "mtmkl"])
def test_solves_run_blas_on_one_thread_at_large_d(run):
    seen = []

    def callback(state):
        seen.append(_blas_threads())

    # outside the solve BLAS may use two threads; inside, the policy limits it to one
    with threadpool_limits(limits=2, user_api="blas"):
        outside = _blas_threads()
        assert max(outside.values()) == 2
        run(callback)
        assert seen and all(set(s.values()) == {1} for s in seen)
        assert _blas_threads() == outside  # restored afterwards
        # the check can fail: with the policy switched off the solve sees two threads
        seen.clear()
        with _blas.blas_threads(None):
            run(callback)
        assert seen and all(s == outside for s in seen)
