"""``dualscope warmup`` leaves nothing to compile for the dashboard's parameter choices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from explorer.registry import entries
from explorer.warmup import _variants

ROOT = Path(__file__).resolve().parents[1]

# In a fresh process (this one has compiled whatever the tests before it ran): warm every
# model as the dashboard's background thread does (quiet=False: a thread cannot silence
# warnings, so the warm-up must not raise any), then solve its default dataset with every
# pair of choice values, with and without a callback, and report the numba
# specialisations those solves added. A specialisation loaded from the disk cache counts
# as added too, so the check does not depend on what earlier processes left in the cache.
SCRIPT = r"""
import itertools, json, sys, warnings
warnings.simplefilter("ignore")
from numba.core.registry import CPUDispatcher
from explorer.registry import entries
from explorer.warmup import warm_entry

def signatures():
    out = set()
    for name, mod in list(sys.modules.items()):
        if name.startswith("solvers") and mod is not None:
            for attr, obj in list(vars(mod).items()):
                if isinstance(obj, CPUDispatcher):
                    out |= {f"{name}.{attr}{tuple(s)}" for s in obj.signatures}
    return out

added, warned = {}, []
for e in entries():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warm_entry(e, quiet=False)
    warned += [f"{e.name}: {w.category.__name__}: {w.message}" for w in caught]
    before = signatures()
    problem = e.datasets[e.default_dataset](seed=0)
    choices = {p.name: p.values for p in e.params if p.values}
    for a, b in itertools.combinations(choices, 2):
        for va, vb in itertools.product(choices[a], choices[b]):
            params = dict(e.default_params(), **{a: va, b: vb})
            for cb in (None, lambda s: s.iteration < 30):
                try:
                    e.solve(problem, tol=1e-3, max_iter=e.max_iter if cb else 30,
                            init=None, callback=cb, **params)
                except ValueError:
                    pass  # an invalid combination: its error is tested elsewhere
            new = signatures() - before
            if new:
                added[f"{e.name}: {a}={va!r}, {b}={vb!r}"] = sorted(new)
                before |= new
print(json.dumps({"added": added, "warned": warned}))
"""


def test_warmup_is_silent_and_leaves_no_kernel_for_any_pair_of_choices_to_compile():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["warned"] == [], out["warned"]
    assert out["added"] == {}, out["added"]


def test_the_extra_warm_combinations_are_valid_and_solved():
    for e in entries():
        variants = _variants(e)
        for combo in e.warm_combos:
            assert len(combo) >= 2, (e.name, combo)   # one at a time is the default
            for name, value in combo.items():
                p = e.param(name)                        # KeyError: no such parameter
                assert value in p.values
            assert dict(e.default_params(), **combo) in variants, (e.name, combo)
