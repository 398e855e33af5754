"""Property-based tests of the error contract (issue 14), with hypothesis.

For every model's ``solve`` and the public helpers, any generated input (shapes,
scales from 1e-300 to 1e300, NaN/inf, tiny/huge/negative/non-numeric
parameters, labels of odd kinds) must either

* raise one of the contract's errors: ``ValueError`` / ``TypeError`` whose
  message names an argument of the function, or :class:`solvers.NumericalError`
  naming the iteration; or
* return a result with finite ``primal``, ``dual`` and ``gap``, ``gap >= 0``
  and ``dual <= primal`` (up to rounding);

and the inputs are never mutated (compared with copies taken before the call).
Any other exception (``ZeroDivisionError``, ``OverflowError``, numpy's
``LinAlgError``, ``IndexError``, ...) fails the property.

The solvers' properties are two-sided (:func:`outcome`): a draw with one argument
taken from its invalid values must raise a contract error naming that argument, and
a valid draw at moderate scales (data within 1e-8..1e8, parameters within
1e-3..1e3, :func:`is_moderate`) must return a certified result; only valid draws at
extreme scales may go either way.

Profiles (``HYPOTHESIS_PROFILE`` environment variable; set in ``tests/conftest.py``):

* ``ci`` (default): few examples per property, derandomised (the same examples
  on every run), the whole file in about a minute on a 2-core machine;
* ``deep``: 25 times more examples, random seeds, no deadline -- run on demand::

      HYPOTHESIS_PROFILE=deep python -m pytest tests/test_properties.py -q

Runs use small sizes and small ``max_iter`` (the properties are about the
contract, not about convergence; convergence warnings are silenced).
"""

from __future__ import annotations

import copy
import inspect
import math
import re
import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

from solvers import NumericalError, caso, mtmkl, prox, robust_mtl, triplet_screening, wwsvm
from solvers import validation as V

# the profiles ("ci", the default, and "deep") are registered in tests/conftest.py

# --------------------------------------------------------------------------- strategies

SCALES = [1.0, 1e-300, 1e-150, 1e-8, 1e8, 1e150, 1e300, -1.0, 0.0]
#: Positive numeric parameters across every decade that matters, and junk.
POSITIVE = [1e-300, 1e-12, 1e-3, 0.1, 1.0, 10.0, 1e3, 1e12, 1e300]
JUNK = [0.0, -1.0, math.nan, math.inf, -math.inf, "abc", None, True, [1.0], np.float64(2.0)]
#: Values no numeric parameter accepts (JUNK without 0 and the numpy float); with 0 for
#: the strictly positive ones.
BAD = [-1.0, math.nan, math.inf, -math.inf, "abc", None, True, [1.0]]
BAD_POSITIVE = [0.0, *BAD]

# half of the draws at moderate scales, where the two-sided properties demand a result
scales = st.one_of(st.sampled_from([1.0, -1.0, 10.0]), st.sampled_from(SCALES))
positive = st.one_of(st.sampled_from([1e-3, 0.1, 1.0, 10.0, 1e3]), st.sampled_from(POSITIVE))
param = st.one_of(positive, positive, st.sampled_from(JUNK))  # mostly valid
corruption = st.sampled_from([None, None, None, math.nan, math.inf, -math.inf])


def _corrupt(a: np.ndarray, value: float | None, pos: int) -> np.ndarray:
    if value is not None and a.size:
        a = a.copy()
        a.flat[pos % a.size] = value
    return a


@st.composite
def matrices(draw, n=(1, 8), d=(1, 4)):
    """A small float matrix at an extreme scale, sometimes with one NaN/inf entry."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    shape = (draw(st.integers(*n)), draw(st.integers(*d)))
    X = rng.standard_normal(shape) * draw(scales)
    return _corrupt(X, draw(corruption), draw(st.integers(0, 99)))


# --------------------------------------------------------------------------- the contract


def _event(text: str) -> None:
    """Record an outcome for ``--hypothesis-show-statistics`` (no-op outside a test)."""
    if currently_in_test_context():
        event(text)


def _names(fn, extra: tuple[str, ...] = ()) -> set[str]:
    return set(inspect.signature(fn).parameters) | set(extra)


def _names_an_argument(msg: str, names: set[str]) -> bool:
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", msg)
               for n in names)


def _snapshot(obj: Any) -> Any:
    return copy.deepcopy(obj)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(
            _same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:
        return a is b


def call(fn, extra_names: tuple[str, ...] = (), **kwargs) -> Any:
    """Call ``fn(**kwargs)``; enforce the error contract and non-mutation.

    Returns the result, or ``None`` when a contract error was raised.
    """
    return call_ex(fn, extra_names, **kwargs)[0]


def call_ex(fn, extra_names: tuple[str, ...] = (), **kwargs) -> tuple[Any, BaseException | None]:
    """:func:`call`, also returning the contract error raised (None: none)."""
    before = {k: _snapshot(v) for k, v in kwargs.items()}
    out = None
    err = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence / overflow warnings are not errors
            with np.errstate(all="ignore"):
                out = fn(**kwargs)
    except NumericalError as exc:
        err = exc
        _event("NumericalError")
        assert "iteration" in str(exc), f"NumericalError without its iteration: {exc}"
    except (ValueError, TypeError) as exc:
        err = exc
        _event(f"{type(exc).__name__}: {str(exc)[:70]}")
        assert _names_an_argument(str(exc), _names(fn, extra_names)), (
            f"{type(exc).__name__} names no argument of {fn.__name__}: {exc}")
    if out is not None:
        _event("returned")
    for k, v in kwargs.items():
        assert _same(v, before[k]), f"{fn.__name__} mutated its argument {k!r}"
    return out, err


def is_moderate(value: Any) -> bool:
    """Whether a valid value is at a moderate scale: numbers within 1e-3..1e3 (or inf, a
    choice such as ``p``), numeric arrays within 1e-8..1e8 in magnitude (not all zero);
    non-numeric values (labels, choices, flags) are."""
    if isinstance(value, bool | str) or value is None:
        return True
    if isinstance(value, list | tuple) and value and not isinstance(value[0], int | float):
        return all(is_moderate(v) for v in value)
    if isinstance(value, int | float | np.integer | np.floating):
        x = abs(float(value))
        return math.isinf(x) or 1e-3 <= x <= 1e3 or (isinstance(value, int | np.integer))
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return True
    if a.size == 0 or not np.all(np.isfinite(a)):
        return False
    big = float(np.abs(a).max())
    return 1e-8 <= big <= 1e8


def outcome(fn, kw: dict, target: str | None, *, names: tuple[str, ...] = (),
            **fixed: Any) -> Any:
    """Both sides of the contract: ``target`` (the argument drawn from its invalid values)
    must be refused with an error naming it (or one of ``names``); a valid draw at a
    moderate scale must give a certified result. Returns the result (None if refused)."""
    res, err = call_ex(fn, **kw, **fixed)
    if target is not None:
        _event("invalid draw")
        assert res is None, f"{fn.__name__} accepted an invalid {target}: {kw[target]!r}"
        if all(is_moderate(v) for k, v in kw.items() if k != target):
            # the other arguments are valid for sure (an extreme one may be refused first)
            assert isinstance(err, ValueError | TypeError), (target, err)
            assert _names_an_argument(str(err), {target, *names}), (
                f"the error for an invalid {target} names another argument: {err}")
    elif all(is_moderate(v) for v in kw.values()):
        _event("valid moderate draw")
        assert res is not None, f"{fn.__name__} refused a valid input: {err}"
    if res is not None:
        certified(res)
    return res


def certified(res) -> None:
    """A returned result: finite primal/dual/gap, gap >= 0, dual <= primal (rounding)."""
    p, d, g = float(res.primal), float(res.dual), float(res.gap)
    assert math.isfinite(p) and math.isfinite(d) and math.isfinite(g), (p, d, g)
    assert g >= 0.0, g
    assert d <= p + 1e-9 * max(1.0, abs(p)), (d, p)


# --------------------------------------------------------------------------- wwsvm

LABEL_KINDS = {
    "int": [0, 1, 2],
    "sparse": [1, 5, 9],
    "huge": [0, 10**9],
    "negative": [-3, 7],
    "str": ["cat", "dog", "emu"],
    "float": [0.5, 1.5],
    "bool": [True, False],
}
BAD_LABEL_KINDS = {
    "single": [4],
    "nan": [0.0, math.nan],
    "none": [1, None],
    "mixed": [1, "a"],
}


@st.composite
def labels(draw, n: int, bad: bool = False):
    """``n`` labels of one kind (every label of the pool present, n >= pool size)."""
    kinds = BAD_LABEL_KINDS if bad else LABEL_KINDS
    pool = kinds[draw(st.sampled_from(sorted(kinds)))]
    y = draw(st.permutations([pool[i % len(pool)] for i in range(n)]))
    return np.asarray(y) if draw(st.booleans()) and not bad else y


@st.composite
def arguments(draw, valid: dict, junk: dict):
    """Valid values for every argument, except (half of the time) one taken from ``junk``."""
    target = draw(st.sampled_from([None] * len(junk) + sorted(junk)))
    return {k: draw(junk[k] if k == target else v) for k, v in valid.items()}, target


def _with_nan(X: np.ndarray, value: float) -> np.ndarray:
    return _corrupt(X, value, X.size // 2)


nonfinite = st.sampled_from([math.nan, math.inf, -math.inf])


@st.composite
def clean_matrices(draw, n=(1, 8), d=(1, 4)):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    shape = (draw(st.integers(*n)), draw(st.integers(*d)))
    return rng.standard_normal(shape) * draw(scales)


@st.composite
def wwsvm_cases(draw):
    X = draw(clean_matrices(n=(3, 9), d=(1, 3)))
    n = X.shape[0]
    return draw(arguments(
        valid={"X": st.just(X), "y": labels(n), "C": positive,
               "method": st.sampled_from(["walrus", "iterative"]), "shrinking": st.booleans()},
        junk={"X": nonfinite.map(lambda v: _with_nan(X, v)), "y": labels(n, bad=True),
              "C": st.sampled_from(BAD_POSITIVE), "method": st.just("nope"),
              "shrinking": st.just("yes")}))


_R = np.random.default_rng(0)
_X9 = _R.standard_normal((9, 2))


@given(case=wwsvm_cases())
@example(case=({"X": _X9, "y": np.array([1, 5, 9] * 3)}, None))
@example(case=({"X": _X9, "y": np.array([0, 10**9] * 4 + [0])}, None))
def test_wwsvm_solve_contract(case):
    kw, target = case
    res = outcome(wwsvm.solve, kw, target, max_iter=20)
    if res is not None:
        y = kw["y"]
        k = len(set(y.tolist() if isinstance(y, np.ndarray) else y))
        assert k in (res.W.shape[0], res.W.shape[-1]), (
            f"{k} distinct labels but W has shape {res.W.shape}")


@given(v=matrices(n=(1, 1), d=(1, 6)), C=param, tol=st.sampled_from([1e-12, 1e-3, 0.0, -1.0,
                                                                     math.nan]))
def test_wwsvm_subproblems_contract(v, C, tol):
    v = v[0]
    for fn, kw in ((wwsvm.solve_subproblem, {}),
                   (wwsvm.solve_subproblem_iterative, {"tol": tol})):
        b = call(fn, v=v, C=C, **kw)
        if b is not None:
            Cf = float(C)
            assert b.shape == v.shape and np.all(np.isfinite(b)), b
            assert np.all(b >= 0) and np.all(b <= Cf * (1 + 1e-12)), (b, Cf)


# --------------------------------------------------------------------------- caso


@st.composite
def task_lists(draw, binary: bool, min_m: int = 1):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    m = draw(st.integers(min_m, 3))
    d = draw(st.integers(1, 3))
    scale = draw(scales)
    Xs = [rng.standard_normal((draw(st.integers(2, 5)), d)) * scale for _ in range(m)]
    if binary:
        ys = [np.where(rng.standard_normal(len(X)) > 0, 1.0, -1.0) for X in Xs]
    else:
        ys = [rng.standard_normal(len(X)) * draw(scales) for X in Xs]
    return Xs, ys


@st.composite
def bad_task_lists(draw, binary: bool, min_m: int = 1):
    Xs, ys = draw(task_lists(binary, min_m))
    how = draw(st.sampled_from(["nan-X", "nan-y", "shape", "empty", "ragged-d"]
                               + (["labels"] if binary else [])))
    if how == "nan-X":
        Xs[0] = _with_nan(Xs[0], draw(nonfinite))
    elif how == "nan-y":
        ys[-1] = _with_nan(ys[-1], draw(nonfinite))
    elif how == "shape":
        ys[0] = ys[0][:-1]
    elif how == "empty":
        Xs, ys = [], []
    elif how == "ragged-d":
        Xs[-1] = np.ones((3, Xs[-1].shape[1] + 1))
        ys[-1] = np.ones(3)
    else:
        ys[0] = ys[0] * 3.0 + 0.5
    return Xs, ys


@st.composite
def caso_cases(draw):
    loss = draw(st.sampled_from(["squared", "hinge", "logistic"]))
    Xs, ys = draw(task_lists(binary=loss != "squared"))
    d = Xs[0].shape[1]
    bXs, bys = draw(bad_task_lists(binary=loss != "squared"))
    kw, bad = draw(arguments(
        valid={"Xs": st.just(Xs), "ys": st.just(ys), "alpha": positive, "eta": positive,
               "h": st.sampled_from([0.5, 1.0, float(d), d / 2 + 0.25]),
               "method": st.sampled_from(["apg", "bcd"])},
        junk={"Xs": st.just(bXs), "ys": st.just(bys), "alpha": st.sampled_from(BAD_POSITIVE),
              "eta": st.sampled_from(BAD_POSITIVE), "h": st.sampled_from([0.0, -1.0, d + 1.0,
                                                                           1e300, math.nan]),
              "method": st.just("nope")}))
    if bad in ("Xs", "ys"):
        kw["Xs"], kw["ys"] = bXs, bys
    kw["loss"] = loss
    return kw, bad


_XS = [_R.standard_normal((6, 3)) for _ in range(3)]
_YS = [X @ np.ones(3) for X in _XS]


@given(case=caso_cases())
@example(case=({"Xs": _XS, "ys": _YS, "eta": 1e-300, "method": "bcd"}, None))
@example(case=({"Xs": _XS, "ys": _YS, "alpha": 1e-300, "eta": 1e-300, "method": "apg"}, None))
@example(case=({"Xs": _XS, "ys": _YS, "alpha": 0.1, "method": "apg"}, None))
def test_caso_solve_contract(case):
    kw, target = case
    outcome(caso.solve, kw, target, names=("Xs", "ys"), max_iter=30)


@given(eigs=st.lists(st.sampled_from([0.0, 1.0, -2.0, 3.5, 1e300, -1e300, math.nan,
                                      math.inf]), min_size=0, max_size=5),
       h=st.sampled_from([0.0, 0.5, 1.0, 2.5, 5.0, -5.0, math.nan, math.inf, "x", None]))
@example(eigs=[math.nan, 2.0], h=1.0)
@example(eigs=[1.0], h=-5.0)
def test_caso_helpers_contract(eigs, h):
    s = call(caso.sum_largest, eigs=eigs, h=h)
    if s is not None:
        assert math.isfinite(s), f"sum_largest({eigs}, {h}) = {s}"
    k = call(caso.subspace_dim, h=h)
    if k is not None:
        assert isinstance(k, int) and 1 <= k, k
        assert k <= max(1, math.floor(float(h) + 0.5))
        assert float(h) > 0, f"subspace_dim({h}) = {k}: h must be positive"


@given(sigma=matrices(n=(1, 1), d=(1, 5)), eta=param,
       h=st.sampled_from([0.5, 1.0, 2.0, 0.0, -1.0, 10.0, math.nan]),
       method=st.sampled_from(["median", "sort"]))
@example(sigma=np.array([[0.126]]), eta=1e-300, h=0.5, method="median")
def test_caso_m_step_gamma_contract(sigma, eta, h, method):
    sigma = np.abs(sigma[0])
    g = call(caso.m_step_gamma, sigma=sigma, eta=eta, h=h, method=method)
    if g is not None:
        assert np.all(np.isfinite(g)) and np.all(g >= -1e-12) and np.all(g <= 1 + 1e-12), g
        assert math.isclose(float(np.sum(g)), float(h), rel_tol=1e-9, abs_tol=1e-9)


# --------------------------------------------------------------------------- robust_mtl


@st.composite
def robust_cases(draw):
    Xs, ys = draw(task_lists(binary=False, min_m=2))
    bXs, bys = draw(bad_task_lists(binary=False, min_m=2))
    junk, junk_positive = st.sampled_from(BAD), st.sampled_from(BAD_POSITIVE)
    kw, bad = draw(arguments(
        valid={"Xs": st.just(Xs), "ys": st.just(ys), "lam": positive, "gamma": positive,
               "zeta": positive, "rho": positive, "mu": positive,
               "p": st.sampled_from([1, 2, math.inf])},
        junk={"Xs": st.just(bXs), "ys": st.just(bys), "lam": junk, "gamma": junk_positive,
              "zeta": junk, "rho": junk, "mu": junk_positive,
              "p": st.sampled_from([3, "2", 0.5])}))
    if bad in ("Xs", "ys"):
        kw["Xs"], kw["ys"] = bXs, bys
    kw["method"] = draw(st.sampled_from(["dual", "smoothing"]))
    return kw, bad


@given(case=robust_cases())
@example(case=({"Xs": [[[0.0]], [[1e300]]], "ys": [[0.0], [0.0]]}, None))
def test_robust_mtl_solve_contract(case):
    kw, target = case
    outcome(robust_mtl.solve, kw, target, names=("Xs", "ys"), max_iter=5, max_inner=50)


# --------------------------------------------------------------------------- triplets


@st.composite
def triplet_cases(draw):
    X = draw(clean_matrices(n=(4, 9), d=(1, 3)))
    n = X.shape[0]
    kw, bad = draw(arguments(
        valid={"X": st.just(X), "y": labels(n), "lam": positive,
               "gamma": st.sampled_from([0.05, 0.5, 1e-12]), "k": st.sampled_from([1, 2,
                                                                                   math.inf])},
        junk={"X": nonfinite.map(lambda v: _with_nan(X, v)), "y": labels(n, bad=True),
              "lam": st.sampled_from(BAD_POSITIVE), "gamma": st.sampled_from([-1.0, math.nan,
                                                                               "x"]),
              "k": st.sampled_from([0, -1, 2.5, "3"])}))
    kw["loss"] = draw(st.sampled_from(["smoothed_hinge", "hinge"]))
    kw["diagonal"] = draw(st.booleans())
    kw["method"] = draw(st.sampled_from(["auto", "pgd", "dual"]))
    kw["dynamic"] = draw(st.sampled_from(["adaptive", "every10"]))
    return kw, bad


_XT = _R.standard_normal((30, 4))
_YT = np.arange(30) % 3


@settings(max_examples=max(10, settings().max_examples * 2 // 5))  # its valid draws solve
@given(case=triplet_cases())
@example(case=({"X": _XT, "y": _YT, "lam": 1e-300, "k": 3}, None))
@example(case=({"X": _XT * 1e300, "y": _YT, "lam": 1.0, "k": 3}, None))
def test_triplet_screening_solve_contract(case):
    kw, target = case
    outcome(triplet_screening.solve, kw, target, max_iter=20)


@st.composite
def triplet_helper_cases(draw):
    X = draw(clean_matrices(n=(2, 8), d=(1, 3)))
    n = X.shape[0]
    kw, _ = draw(arguments(
        valid={"X": st.just(X), "y": labels(n), "k": st.sampled_from([1, 3, math.inf])},
        junk={"X": nonfinite.map(lambda v: _with_nan(X, v)), "y": labels(n, bad=True),
              "k": st.sampled_from([0, -2, 1.5, None, "3"])}))
    return kw


@given(kw=triplet_helper_cases())
@example(kw={"X": _XT[:3, :3] * 1e300, "y": [True, False, True], "k": 1})
def test_triplets_and_lambda_max_contract(kw):
    t = call(triplet_screening.triplets, **kw)
    if t is not None:
        assert t.ndim == 2 and t.shape[1] == 3
    lm = call(triplet_screening.lambda_max, **kw)
    if lm is not None:
        assert math.isfinite(lm) and lm >= 0


# --------------------------------------------------------------------------- mtmkl


@st.composite
def mtmkl_data(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    T = draw(st.integers(1, 3))
    n = draw(st.integers(2, 8))
    X = rng.standard_normal((n, draw(st.integers(1, 3)))) * draw(scales)
    y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    tasks = rng.integers(0, T, size=n)
    G = []
    for _ in range(draw(st.integers(1, 3))):
        A = rng.standard_normal((T, T))
        G.append((A @ A.T + np.eye(T)) * abs(draw(scales)))  # positive semidefinite
    return X, y, tasks, G


@settings(max_examples=max(10, settings().max_examples * 2 // 5))  # the slowest solve
@given(data=st.data(), inputs=mtmkl_data(),
       method=st.sampled_from(["e1", "alternating", "ipm"]))
def test_mtmkl_solve_contract(data, inputs, method):
    X, y, tasks, G = inputs
    T, M, n = G[0].shape[0], len(G), len(y)
    kw, bad = data.draw(arguments(
        valid={"X": st.just(X), "y": st.just(y), "tasks": st.just(tasks), "G": st.just(G),
               "C": positive, "p": st.sampled_from([1.0, 1.5, 2.0, math.inf]),
               "theta0": st.sampled_from([None, np.ones(M), np.arange(1.0, M + 1)])},
        junk={"X": nonfinite.map(lambda v: _with_nan(X, v)),
              "y": st.sampled_from([y * 2, y - 1, np.zeros(n), y[:-1]]),
              "tasks": st.sampled_from([tasks - 1, tasks + 0.5, tasks[:-1]]),
              "G": st.sampled_from([[np.full((T, T), 1.79e308)], [-np.eye(T)],
                                    [np.ones((T + 1, T + 1))], [np.full((T, T), math.nan)]]),
              "C": st.sampled_from(BAD_POSITIVE), "p": st.sampled_from([0.5, math.nan, "2"]),
              "theta0": st.sampled_from([-np.ones(M), np.ones(M + 1), "x"])}))
    outcome(mtmkl.solve, kw, bad, names=("X", "y", "tasks", "G"), method=method, max_iter=5)


@given(s=matrices(n=(1, 1), d=(1, 5)),
       p=st.sampled_from([1.0, 1.5, 2.0, math.inf, 0.5, math.nan, "2"]),
       M=st.sampled_from([1, 3, 0, -1, 2.5]))
def test_mtmkl_helpers_contract(s, p, M):
    s = s[0]
    v = call(mtmkl.dual_norm, s=s, p=p)
    if v is not None:
        assert math.isfinite(v) and v >= 0
    th = call(mtmkl.uniform_theta, M=M, p=p)
    if th is not None:
        assert np.all(np.isfinite(th)) and np.all(th > 0)
    norms = np.abs(s)
    th = call(mtmkl.theta_step, norms=norms, p=p)
    if th is not None:
        assert np.all(np.isfinite(th)) and np.all(th >= 0)


# ------------------------------------------------------------- weak duality at any point

moderate = st.sampled_from([1e-8, 1e-3, 1.0, 1e3, 1e8])


@given(seed=st.integers(0, 2**16), extra=st.integers(0, 6), d=st.integers(1, 3),
       k=st.integers(2, 4), scale=moderate, wscale=moderate, C=moderate)
def test_wwsvm_weak_duality_at_any_point(seed, extra, d, k, scale, wscale, C):
    """``dual(alpha) <= primal(W)`` for every feasible alpha and every W: the certificate
    the solver reports is a true bound wherever it stops."""
    rng = np.random.default_rng(seed)
    n = k + extra  # every class present
    X = rng.standard_normal((n, d)) * scale
    y = np.arange(n) % k
    W = rng.standard_normal((d, k)) * wscale
    alpha = rng.uniform(0, C, size=(n, k))
    alpha[np.arange(n), y] = 0.0
    p = wwsvm.primal_objective(W, X, y, C)
    dv = wwsvm.dual_objective(alpha, X, y, C)
    assert math.isfinite(p) and math.isfinite(dv)
    assert dv <= p + 1e-9 * max(1.0, abs(p), abs(dv)), (dv, p)


@given(seed=st.integers(0, 2**16), n=st.integers(4, 9), d=st.integers(1, 3),
       scale=moderate, mscale=moderate, lam=moderate,
       loss=st.sampled_from(["smoothed_hinge", "hinge"]), diagonal=st.booleans())
def test_triplet_weak_duality_at_any_point(seed, n, d, scale, mscale, lam, loss, diagonal):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * scale
    y = np.arange(n) % 2
    T = triplet_screening.triplets(X, y, k=2)
    A = rng.standard_normal((d, d)) * mscale
    M = np.abs(np.diag(A)) if diagonal else A @ A.T
    alpha = rng.uniform(0, 1, size=T.shape[0])
    kw = {"triplets": T, "loss": loss, "diagonal": diagonal}
    p = triplet_screening.primal_objective(M, X, y, lam, **kw)
    dv = triplet_screening.dual_objective(alpha, X, y, lam, **kw)
    assert math.isfinite(p) and math.isfinite(dv)
    assert dv <= p + 1e-9 * max(1.0, abs(p), abs(dv)), (dv, p)


# --------------------------------------------------------------------------- validation


@given(value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                       st.sampled_from(JUNK), st.text(max_size=3)),
       low=st.sampled_from([None, 0.0, -1.0]), high=st.sampled_from([None, 1.0, 1e300]))
def test_check_scalar_returns_a_float_in_range_or_names_it(value, low, high):
    out = call(V.check_scalar, extra_names=("alpha",), value=value, name="alpha", low=low,
               high=high)
    if out is not None:
        assert isinstance(out, float) and math.isfinite(out)
        assert low is None or out > low
        assert high is None or out <= high


@given(value=st.one_of(st.integers(-10**20, 10**20), st.floats(), st.sampled_from(JUNK)),
       low=st.sampled_from([None, 0, 1]))
def test_check_int_contract(value, low):
    out = call(V.check_int, extra_names=("max_iter",), value=value, name="max_iter", low=low)
    if out is not None:
        assert isinstance(out, int) and not isinstance(out, bool)
        assert low is None or out >= low


@given(a=st.one_of(matrices(), st.sampled_from([[], [[1, 2], [3]], "abc", None, [1j, 2j],
                                                [[True, False]], np.zeros((0, 3))])))
def test_check_matrix_and_psd_contract(a):
    out = call(V.check_matrix, extra_names=("X",), a=a, name="X")
    if out is not None:
        assert out.ndim == 2 and out.dtype == np.float64 and np.all(np.isfinite(out))
    G = call(V.check_psd, extra_names=("G",), G=a, name="G")
    if G is not None:
        assert np.allclose(G, G.T)


@given(y=st.data())
def test_encode_labels_contract(y):
    y = y.draw(labels(6))
    out = call(V.encode_labels, extra_names=("y",), y=y, name="y")
    if out is not None:
        classes, codes = out
        assert len(classes) == len({*np.asarray(y).tolist()}) >= 2
        assert codes.min() == 0 and codes.max() == len(classes) - 1
        assert np.array_equal(np.asarray(classes)[codes], np.asarray(y))


# --------------------------------------------------------------------------- prox


@given(x=matrices(n=(1, 5), d=(1, 5)),
       radius=st.sampled_from([0.0, 1e-300, 0.5, 1.0, 1e300]))
def test_prox_projections_are_feasible(x, radius):
    """Finite inputs at any scale: the projections land in their sets (internal operators
    take float arrays; they are not user-facing validators)."""
    assume(np.all(np.isfinite(x)))
    v = x.ravel()
    with np.errstate(all="ignore"):
        p2 = prox.project_l2_ball(v, radius)
        p1 = prox.project_l1_ball(v, radius)
        total = max(radius, 0.5)
        ps = prox.project_simplex(v, total)
        pb = prox.project_box(v, -radius, radius)
    for out in (p2, p1, ps, pb):
        assert out.shape == v.shape and np.all(np.isfinite(out))
    assert np.linalg.norm(p2) <= radius * (1 + 1e-9) + 1e-300
    assert np.sum(np.abs(p1)) <= radius * (1 + 1e-9) + 1e-300
    # the simplex sum is exact up to the rounding of the largest entry's scale
    assert np.all(ps >= 0)
    assert abs(float(ps.sum()) - total) <= 1e-9 * max(total, float(np.abs(v).max()))
    assert np.all(np.abs(pb) <= radius)
    assert np.all(np.isfinite(x)), "input mutated"


@given(W=matrices(n=(1, 5), d=(1, 5)), tau=st.sampled_from([0.0, 1e-300, 0.5, 1.0, 1e300]))
def test_prox_shrinkage_operators(W, tau):
    assume(np.all(np.isfinite(W)))
    W0 = W.copy()
    with np.errstate(all="ignore"):
        st_ = prox.soft_threshold(W, tau)
        gs = prox.group_shrink_rows(W, tau)
        sv = prox.svt(W, tau)
    for out in (st_, gs, sv):
        assert out.shape == W.shape and np.all(np.isfinite(out))
    assert np.all(np.abs(st_) <= np.abs(W))
    with np.errstate(all="ignore"):
        big = np.abs(W).max()
        Wn = W / big if big > 0 else W  # compare row norms at unit scale (no overflow)
        assert np.all(np.linalg.norm(gs / (big or 1.0), axis=1)
                      <= np.linalg.norm(Wn, axis=1) * (1 + 1e-12) + 1e-300)
    assert np.array_equal(W, W0), "input mutated"


@given(M=matrices(n=(3, 3), d=(3, 3)), h=st.sampled_from([0.5, 1.0, 2.0, 3.0]))
def test_prox_psd_and_fantope(M, h):
    assume(np.all(np.isfinite(M)) and np.max(np.abs(M)) < 1e150)
    S = M + M.T
    with np.errstate(all="ignore"):
        P = prox.project_psd(S)
        F = prox.project_fantope(S, h)
    tol = 1e-9 * max(1.0, float(np.abs(S).max()))
    assert np.linalg.eigvalsh(P).min() >= -tol
    ev = np.linalg.eigvalsh(F)
    assert ev.min() >= -1e-9 and ev.max() <= 1 + 1e-9
    assert math.isclose(float(np.trace(F)), h, rel_tol=1e-9, abs_tol=1e-9)


# --------------------------------------------------------------------------- reproducers

# The issue-14 reproducers that the model owners fix (explicit, so that the property
# suite does not depend on hypothesis finding them). Data from default_rng(0).

_rng = np.random.default_rng(0)
_X = _rng.standard_normal((30, 4))
_y = np.arange(30) % 3


@pytest.mark.parametrize(
    "case",
    [
        "caso-eta-tiny-bcd",
        "caso-eta-huge",
        "robust-overflow",
        'triplet-scaled',
        'triplet-lam-tiny',
        "mtmkl-huge-G",
        "wwsvm-sparse-labels",
        "sum_largest-nan",
        "subspace_dim-negative",
        "subproblem-negative-tol",
    ],
)
def test_issue14_reproducers(case):
    Xs = [_X[:10], _X[10:20], _X[20:]]
    ys = [v[:, 0] for v in (_X[:10], _X[10:20], _X[20:])]
    if case == "caso-eta-tiny-bcd":
        certified_or_error(caso.solve, Xs=Xs, ys=ys, eta=1e-300, method="bcd", max_iter=30)
    elif case == "caso-eta-huge":
        certified_or_error(caso.solve, Xs=Xs, ys=ys, eta=1e300, max_iter=30,
                           must_name="eta")
    elif case == "robust-overflow":
        certified_or_error(robust_mtl.solve, Xs=[[[0.0]], [[1e300]]], ys=[[0.0], [0.0]],
                           max_iter=5)
    elif case == "triplet-scaled":
        certified_or_error(triplet_screening.solve, X=_X * 1e300, y=_y, lam=1.0, k=3,
                           max_iter=20)
    elif case == "triplet-lam-tiny":
        certified_or_error(triplet_screening.solve, X=_X, y=_y, lam=1e-300, k=3, max_iter=20)
    elif case == "mtmkl-huge-G":
        certified_or_error(mtmkl.solve, X=_X[:6], y=np.array([1.0, -1] * 3),
                           tasks=np.array([0, 1, 2] * 2), G=[np.full((3, 3), 1.79e308)],
                           max_iter=5)
    elif case == "wwsvm-sparse-labels":
        res = wwsvm.solve(_X, np.array([1, 5, 9])[_y], max_iter=20)
        assert res.W.shape[0] == 3 or res.W.shape[-1] == 3, res.W.shape
    elif case == "sum_largest-nan":
        certified_or_error(caso.sum_largest, eigs=[math.nan, 2.0], h=1.0, must_raise=True)
    elif case == "subspace_dim-negative":
        certified_or_error(caso.subspace_dim, h=-5.0, must_raise=True)
    elif case == "subproblem-negative-tol":
        certified_or_error(wwsvm.solve_subproblem_iterative, v=np.array([1.0, 2.0]), C=1.0,
                           tol=-1.0, must_raise=True)


def certified_or_error(fn, *, must_name: str | None = None, must_raise: bool = False,
                       **kwargs):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call(fn, **kwargs)
    except AssertionError:
        raise
    if must_raise:
        assert out is None, f"{fn.__name__} accepted nonsense and returned {out!r}"
        return
    if out is not None and hasattr(out, "gap"):
        certified(out)
    if must_name is not None and out is None:
        try:
            fn(**kwargs)
        except (ValueError, TypeError, NumericalError) as exc:
            assert must_name in str(exc), f"the message names no {must_name}: {exc}"
