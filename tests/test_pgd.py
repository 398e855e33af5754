"""solvers.pgd: projected gradient with BB steps and the GLL non-monotone search."""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy.optimize import nnls

from solvers.base import NumericalError
from solvers.pgd import PGD


def _nnls_engine(A, b, step=1.0, memory=10):
    def oracle(x):
        r = A @ x - b
        return SimpleNamespace(P=0.5 * float(r @ r), G=A.T @ r)

    def project(z):
        return np.maximum(z, 0.0), None

    x0 = np.zeros(A.shape[1])
    return PGD(oracle, project, x0, oracle(x0), step=step, memory=memory)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("memory", [1, 10])
def test_reaches_the_nnls_solution(seed, memory):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(30, 8))
    b = rng.normal(size=30)
    x_ref, _ = nnls(A, b)
    eng = _nnls_engine(A, b, memory=memory)
    for _ in range(3000):
        eng.step()
    assert np.all(eng.x >= 0)
    np.testing.assert_allclose(eng.x, x_ref, atol=1e-7)
    assert eng.ev.P == pytest.approx(0.5 * np.sum((A @ x_ref - b) ** 2), rel=1e-10)


def test_monotone_with_memory_one_and_reset():
    rng = np.random.default_rng(7)
    A = rng.normal(size=(20, 5))
    b = rng.normal(size=20)
    eng = _nnls_engine(A, b, step=10.0, memory=1)  # too long a first step: halved
    values = [eng.ev.P]
    for _ in range(50):
        eng.step()
        values.append(eng.ev.P)
    assert np.all(np.diff(values) <= 1e-12 * max(values))
    eng.reset(SimpleNamespace(P=1e300, G=eng.ev.G))  # a changed objective: fresh window
    eng.step()
    with pytest.raises(ValueError, match="step"):
        _nnls_engine(A, b, step=0.0)


def test_non_finite_objective_raises_naming_the_iteration():
    def oracle(x):
        return SimpleNamespace(P=float("nan") if x[0] > 0 else 1.0, G=-np.ones(1))

    eng = PGD(oracle, lambda z: (z, None), np.zeros(1), oracle(np.zeros(1)), step=1.0,
              max_halvings=3)
    with pytest.raises(NumericalError, match="iteration 1"):
        eng.step()
