"""The BLAS thread policy (solvers._blas): one thread inside every solve, at every size."""

import subprocess
import sys
import textwrap

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


def test_the_policy_covers_blas_loaded_after_its_first_use():
    """The policy also limits the BLAS/LAPACK that SciPy ships (scipy.linalg's, and the
    compiled kernels' through numba), even when the first solve loads it: a fresh
    interpreter applies the policy before SciPy's library is loaded, then solves
    (triplet screening: eigendecompositions in compiled code) under an outside limit of
    two threads, and every BLAS seen inside the solve runs one thread."""
    code = textwrap.dedent("""
        import numpy as np
        from threadpoolctl import threadpool_info, threadpool_limits
        from solvers import _blas
        with _blas.single_threaded_blas():
            pass
        import solvers.triplet_screening as ts
        rng = np.random.default_rng(0)
        y = np.repeat([0, 1, 2], 10)
        X = rng.normal(size=(30, 4)) + y[:, None]
        seen = []
        with threadpool_limits(limits=2, user_api="blas"):
            ts.solve(X, y, 1.0, k=3, max_iter=3, tol=1e-30,
                     callback=lambda state: seen.append(
                         sorted((p["filepath"], p["num_threads"]) for p in threadpool_info()
                                if p["user_api"] == "blas")))
        libs = {path for path, _ in seen[-1]}
        print(len(libs), sorted({n for s in seen for _, n in s}))
    """)
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, check=True, timeout=300)
    n_libs, threads = out.stdout.split(maxsplit=1)
    assert int(n_libs) >= 2, out.stdout  # NumPy's and SciPy's OpenBLAS (as shipped)
    assert threads.strip() == "[1]", out.stdout
