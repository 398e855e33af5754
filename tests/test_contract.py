"""The product contract, once, for every registered model (``explorer.registry.entries()``).

Bad parameter values are generated from each model's ``PARAMS`` spec; the callback stop,
the ``max_iter`` warning, warm start == cold start, the certificate bracketing cvxpy and
the JSON round trip of ``Result.to_dict`` are checked on a tiny instance of the model's
default dataset.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import warnings

import numpy as np
import pytest

from explorer.registry import entries
from solvers import ConvergenceWarning
from solvers.base import History

ENTRIES = {e.name: e for e in entries()}
NAMES = list(ENTRIES)

#: Tiny instances of each default dataset (each ENTRY's ``tiny``; without one: its
#: smallest sizes) and parameters that make them non-trivial (``tiny_params``).
TINY = {name: dict(e.tiny) for name, e in ENTRIES.items() if e.tiny}
TINY_PARAMS = {name: dict(e.tiny_params) for name, e in ENTRIES.items()}


def _module(name):
    return importlib.import_module(f"solvers.{name}")


def _problem(name):
    e = ENTRIES[name]
    ds = e.datasets[e.default_dataset]
    sizes = TINY.get(name, {k: v[1] for k, v in ds.sizes.items()})
    return ds(seed=0, **sizes)


def _call(name, *, required_data_only=False, **kw):
    """``solvers.<name>.solve`` on the tiny problem; required parameters from the spec.

    ``required_data_only``: drop optional data (e.g. prepared triplets, which make
    ``k`` irrelevant) so that every parameter is used.
    """
    mod = _module(name)
    sig = inspect.signature(mod.solve).parameters
    data = dict(_problem(name).data)
    if required_data_only:
        data = {k: v for k, v in data.items() if sig[k].default is inspect.Parameter.empty}
    kw = {**TINY_PARAMS.get(name, {}), **kw}
    for pname, par in sig.items():
        if par.default is inspect.Parameter.empty and pname not in data and pname not in kw:
            kw[pname] = mod.PARAMS.default(pname)
    return mod.solve(**data, **kw)


def _bad_values(spec):
    """Values outside the spec's admissible ones: wrong type, NaN, out of range, bad choice."""
    out = []
    if spec.kind == "float":
        out += ["x", math.nan]
        if spec.low is not None:
            out.append(spec.low - 1.0 if spec.low_inclusive else spec.low)
        if spec.high is not None:
            out.append(2.0 * spec.high + 1.0 if spec.high_inclusive else spec.high)
        elif not spec.allow_inf:
            out.append(math.inf)
    elif spec.kind == "int":
        out += ["x", 1.5]
        if spec.low is not None:
            out.append(math.ceil(spec.low) - 1 if spec.low_inclusive else math.floor(spec.low))
        if spec.high is not None:
            out.append(math.floor(spec.high) + 1)
    elif spec.kind == "choice":
        out.append("not-a-choice")
    elif spec.kind == "bool":
        out.append("yes")
    return out


BAD = [(name, spec.name, value)
       for name in NAMES for spec in _module(name).PARAMS.values()
       for value in _bad_values(spec)]


@pytest.mark.parametrize(("name", "param", "value"), BAD,
                         ids=[f"{n}-{p}-{v!r}" for n, p, v in BAD])
def test_bad_parameter_values_raise_naming_the_argument(name, param, value):
    # the contract: ValueError (wrong value) or TypeError (wrong kind), naming the argument
    with pytest.raises((ValueError, TypeError), match=rf"\b{param}\b"):
        _call(name, required_data_only=True, **{param: value})


@pytest.mark.parametrize("name", NAMES)
def test_every_registry_param_of_the_solver_is_derived_from_its_spec(name):
    specs = _module(name).PARAMS
    for p in ENTRIES[name].params:
        if p.name in specs:
            assert p.spec is specs[p.name], (name, p.name)
            # the user-facing default (the solver function's unless the spec sets one)
            assert p.default == specs[p.name].surface_default and \
                p.choices == specs[p.name].choices


@pytest.mark.parametrize("name", NAMES)
def test_callback_stops_cleanly_without_warning(name):
    seen = []

    def cb(state):
        seen.append(state.iteration)
        return state.iteration < 2

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = _call(name, tol=1e-15, callback=cb)
    assert res.stop_reason == "callback" and not res.converged
    assert seen[-1] == 2 and res.n_iter == 2


@pytest.mark.parametrize("name", NAMES)
def test_max_iter_warns_and_says_so(name):
    with pytest.warns(ConvergenceWarning, match="max_iter") as rec:
        res = _call(name, tol=1e-15, max_iter=1)
    assert rec[0].filename == __file__  # points at the caller's line
    assert res.stop_reason == "max_iter" and not res.converged and res.n_iter == 1


def _first_float(name):
    specs = _module(name).PARAMS
    return next(s for s in specs.values() if s.kind == "float" and s.name != "tol"
                and s.default is not None)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", NAMES)
def test_warm_start_reaches_the_cold_start_optimum(name):
    spec = _first_float(name)
    v = TINY_PARAMS.get(name, {}).get(spec.name, spec.default)
    cold = _call(name, tol=1e-9, **{spec.name: v})
    other = _call(name, tol=1e-9, **{spec.name: 2.0 * v})
    warm = _call(name, tol=1e-9, init=other, **{spec.name: v})
    # both primal values are within their certified gaps of the same optimum
    assert abs(warm.primal - cold.primal) <= warm.gap + cold.gap + 1e-12 * max(
        1.0, abs(cold.primal))
    assert warm.params == cold.params


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", NAMES)
def test_certificate_brackets_the_cvxpy_optimum(name):
    e = ENTRIES[name]
    prob = _problem(name)
    assert e.reference_refusal(prob) is None
    params = e.default_params()
    res = e.solve(prob, tol=1e-8, max_iter=e.max_iter, **params)
    ref = e.reference(prob, **params)
    slack = 1e-6 * max(1.0, abs(ref.value))  # cvxpy/Clarabel's own accuracy
    assert res.dual - slack <= ref.value <= res.primal + slack
    assert res.gap == pytest.approx(res.primal - res.dual, abs=1e-12 * max(1, abs(res.primal)))


@pytest.mark.parametrize("name", NAMES)
def test_result_to_dict_round_trips_through_json(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = _call(name, max_iter=3)
    d = res.to_dict(include_arrays=True)
    back = json.loads(json.dumps(d))
    assert back == d
    assert back["model"] == name and back["stop_reason"] == res.stop_reason
    hist = History.from_dict(back["history"])
    np.testing.assert_array_equal(hist.gap, res.history.gap)
    np.testing.assert_array_equal(hist.iteration, res.history.iteration)


@pytest.mark.parametrize("name", NAMES)
def test_result_records_every_declared_parameter(name):
    """``result.params`` says how the result was computed: every ``PARAMS`` name is there."""
    res = _call(name)
    missing = [p for p in _module(name).PARAMS if p not in res.params]
    assert missing == [], f"{name}: result.params misses {missing}"
