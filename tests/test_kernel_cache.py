"""A numba cache written by several processes never serves one kernel's code to another.

numba names compiled code by qualified name, argument types and a per-process uid, and
links callee copies with ``linkonce_odr`` linkage, so the first definition of a name
loaded into a process wins (numba issue #10486). Two processes that start from the same
state (forked workers; a warm-up and a test run) hand out the same uids, and numba's
``np.sort`` and ``np.argsort`` closures share a qualified name: the Walrus block (a sort)
and the triplet rule's orthant bound (an argsort) then define one symbol with two bodies.
These tests build exactly that cache, deterministically, and check that every kernel
still returns what a fresh single-process cache returns, in both load orders
(``solvers._jitcache`` makes the uids random per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Two kernel families: the Walrus block (np.sort inside, via prox.sort_prefix) and the
# triplet rule's orthant bounds (np.argsort inside). Each returns a JSON-able result.
SCRIPT = r"""
import json, os, re, sys
import numpy as np

def walrus():
    from solvers import wwsvm
    v = np.random.default_rng(3).normal(size=80) + 1.0   # ~ 67 positives: np.sort path
    return wwsvm.solve_subproblem(v, 0.001).tolist()

def orthant():
    from solvers.triplet_screening import spheres
    rng = np.random.default_rng(4)
    S = rng.random((60, 40))
    pa = np.arange(0, 30, dtype=np.int64)
    pb = np.arange(30, 60, dtype=np.int64)
    lo, hi = spheres.orthant_bounds(S, pa, pb, rng.random(40), 0.3)
    return [lo.tolist(), hi.tolist()]

KERNELS = {"walrus": walrus, "orthant": orthant}

def quicksort_uid():
    # the uid in the name of the float-array quicksort this process compiled last
    from numba.core.registry import cpu_target
    lib = cpu_target.target_context.codegen()
    uids = []
    import solvers._wwsvm_kernels as W
    import solvers.triplet_screening.kernels as T
    for disp in (W.walrus_block, T._orthant_bounds):
        for cres in disp.overloads.values():
            ir = str(cres.library._final_module)
            uids += [int(u) for u in re.findall(r"run_quicksort1B\d+v(\d+)B", ir)]
    return max(uids) if uids else None

mode = sys.argv[1]
if mode == "write":
    # a parent that imported everything, then forked children: equal uid counters
    import numba
    import solvers, solvers._wwsvm_kernels, solvers.triplet_screening.kernels  # noqa
    from numba.core.bytecode import FunctionIdentity
    real = numba.config.CACHE_DIR

    def child(name, pad, report):
        pid = os.fork()
        if pid == 0:
            for _ in range(pad):
                next(FunctionIdentity._unique_ids)
            KERNELS[name]()
            with open(report, "w") as f:
                json.dump(quicksort_uid(), f)
            os._exit(0)
        os.waitpid(pid, 0)
        with open(report) as f:
            return json.load(f)

    tmp = sys.argv[2]
    # dry run: where does each family's quicksort land? (then the cache is emptied:
    # the dispatchers fixed their cache folder at import, so the dry run wrote there)
    ua = child("walrus", 0, os.path.join(tmp, "ua"))
    ub = child("orthant", 0, os.path.join(tmp, "ub"))
    for dirpath, _, files in os.walk(real):
        for f in files:
            os.unlink(os.path.join(dirpath, f))
    d = ub - ua
    # sequential uids: pad the earlier one so both quicksorts get the same uid;
    # random uids: the difference means nothing (pad nothing)
    pad_a, pad_b = (d, 0) if 0 <= d < 10_000 else ((0, -d) if -10_000 < d < 0 else (0, 0))
    ra = child("walrus", pad_a, os.path.join(tmp, "ra"))
    rb = child("orthant", pad_b, os.path.join(tmp, "rb"))
    print(json.dumps({"dry": [ua, ub], "real": [ra, rb]}))
else:
    out = {name: KERNELS[name]() for name in sys.argv[2:]}
    print(json.dumps(out))
"""


def _run(cache: Path, *args: str) -> dict:
    """Run SCRIPT with ``args`` (or, with ``("-", source)``, that source) in a fresh
    interpreter on the cache folder ``cache``; its last stdout line is JSON."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = str(ROOT)
    code, rest = (args[1], []) if args[:1] == ("-",) else (SCRIPT, list(args))
    done = subprocess.run([sys.executable, "-c", code, *rest], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (
        f"{args}: exit {done.returncode} (a negative code is a signal: -11 = segfault)\n"
        f"{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(900)
def test_forked_writers_never_share_a_symbol_with_two_bodies(tmp_path):
    shared = tmp_path / "shared"
    written = _run(shared, "write", str(tmp_path))
    ra, rb = written["real"]
    # the cached quicksorts of the two families carry different names
    assert ra != rb, written
    fresh = _run(tmp_path / "fresh", "read", "walrus", "orthant")
    for order in (["orthant", "walrus"], ["walrus", "orthant"]):
        got = _run(shared, "read", *order)
        assert got == fresh, f"load order {order}: cached kernels differ from a fresh build"


# Every kernel family's known-answer outputs and a small solve of every model (but the
# triplet path, whose kernels compile for a minute: the test above covers its family),
# as digests of the exact bits.
OUTPUTS = r"""
import hashlib, json, warnings
import numpy as np
warnings.simplefilter("ignore")
from solvers import kernel_checks
from explorer import registry

def digest(x):
    h = hashlib.sha256()
    for a in (x if isinstance(x, (list, tuple)) else [x]):
        h.update(np.ascontiguousarray(np.asarray(a, dtype=float)).tobytes())
    return h.hexdigest()[:16]

out = {}
for fam, check in kernel_checks.CHECKS.items():
    for i, (name, got, _, _) in enumerate(check()):
        out[f"{fam}.{name}.{i}"] = digest(got)
for entry in registry.entries():
    if entry.name == "triplet_screening":  # its whole compiled path takes a minute
        continue
    problem = entry.datasets[entry.default_dataset](seed=0)
    res = entry.solve(problem, tol=1e-4, max_iter=60, init=None, callback=None,
                      **entry.default_params())
    out[entry.name] = digest([res.primal, res.dual, res.gap])
bad = [c for c in kernel_checks.verify() if not c.ok]
out["failures"] = [f"{c.family}.{c.kernel}" for c in bad]
print(json.dumps(out))
"""


@pytest.mark.timeout(900)
def test_a_cache_written_beside_a_warmup_gives_fresh_build_results(tmp_path):
    """A warm-up compiles into an empty cache while another process compiles and runs
    every kernel family into the same cache; afterwards a process loading that cache
    computes the same bits as a process with a fresh cache of its own."""
    shared = tmp_path / "shared"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env.update(NUMBA_CACHE_DIR=str(shared), PYTHONPATH=str(ROOT))
    warm = subprocess.Popen([sys.executable, "-m", "explorer.warmup", "wwsvm", "caso",
                             "mtmkl", "robust_mtl"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        beside = _run(shared, "-", OUTPUTS)
    finally:
        _, err = warm.communicate(timeout=600)
    assert warm.returncode == 0, err[-2000:]
    again = _run(shared, "-", OUTPUTS)
    fresh = _run(tmp_path / "fresh", "-", OUTPUTS)
    assert fresh["failures"] == []
    assert beside == fresh
    assert again == fresh


# ------------------------------------------------- index arrays checked at the boundary

def test_a_sparse_matrix_with_edited_indices_is_refused_naming_it():
    import numpy as np
    import scipy.sparse as sp

    from solvers import wwsvm

    X = sp.random(40, 6, density=0.5, format="csr", random_state=0)
    y = np.arange(40) % 3
    X.indices[3] = 60  # beyond the 6 columns: read outside the data in a kernel
    with pytest.raises(ValueError, match="X is not a valid sparse matrix"):
        wwsvm.solve(X, y)
    X = sp.random(40, 6, density=0.5, format="csr", random_state=0)
    X.indptr[5] = X.indptr[6] + 3  # not non-decreasing
    with pytest.raises(ValueError, match="X is not a valid sparse matrix"):
        wwsvm.solve(X, y)


def test_orthant_bounds_checks_its_pair_indices():
    import numpy as np

    from solvers.triplet_screening import spheres

    S = np.random.default_rng(0).random((10, 4))
    q = np.full(4, 0.5)
    ok = spheres.orthant_bounds(S, np.array([0, 9]), np.array([1, 2]), q, 0.1)
    assert np.all(ok[0] <= ok[1])
    with pytest.raises(ValueError, match=r"pa must index 0\.\.9, got 10 at position 1"):
        spheres.orthant_bounds(S, np.array([0, 10]), np.array([1, 2]), q, 0.1)
    with pytest.raises(ValueError, match="pb must index"):
        spheres.orthant_bounds(S, np.array([0, 1]), np.array([-1, 2]), q, 0.1)
    with pytest.raises(TypeError, match="pa must contain integer"):
        spheres.orthant_bounds(S, np.array([0.0, 1.0]), np.array([1, 2]), q, 0.1)
    with pytest.raises(ValueError, match="same length"):
        spheres.orthant_bounds(S, np.array([0, 1]), np.array([1]), q, 0.1)


# ------------------------------------------------------- consumers of a failed check

def test_pages_do_not_solve_after_a_failed_kernel_check(monkeypatch):
    from explorer import registry
    from explorer.ui import solve
    from solvers import kernel_checks

    monkeypatch.setattr(kernel_checks, "_found", {("wwsvm", "walrus_block")})
    entry = registry.get("wwsvm")
    with pytest.raises(RuntimeError, match=r"known-answer check \(wwsvm.walrus_block\)"):
        solve.solve_with_warm_start(entry, None, None)


def test_a_failed_check_is_named_by_verify_report_and_ensure_verified(monkeypatch):
    from explorer import warmup
    from solvers import kernel_checks

    def broken():
        return [("walrus_block", [1.0, 2.0], [1.0, 2.5], 1e-10)]

    monkeypatch.setitem(kernel_checks.CHECKS, "wwsvm", broken)
    monkeypatch.setattr(kernel_checks, "_verified", {})
    monkeypatch.setattr(kernel_checks, "_found", set())
    line = warmup.verify_report(print_to=None)
    assert line.startswith("compiled kernels failed their known-answer check (wwsvm."
                           "walrus_block)") and "dualscope warmup --clear" in line
    with pytest.raises(RuntimeError, match=r"wwsvm.walrus_block: differs from the numpy "
                                           r"reference by 0.5"):
        kernel_checks.ensure_verified(["wwsvm"])
    assert kernel_checks.known_failures() == ["wwsvm.walrus_block"]
    assert kernel_checks.families_for("wwsvm") == ["base", "prox", "wwsvm"]


# ------------------------------------------------------------- finding the families

def test_kernel_families_are_found_on_first_use_without_cvxpy_or_scikit_learn():
    """Importing kernel_checks reads no source; the families are the shared ones and
    every model kernel module's (in their declared order), and verifying them all
    imports neither cvxpy nor scikit-learn nor the explorer."""
    code = r"""
import json, sys
from solvers import kernel_checks as k
lazy = "CHECKS" not in vars(k)
families = list(k.CHECKS)
bad = [f"{c.family}.{c.kernel}" for c in k.verify() if not c.ok]
heavy = [m for m in ("sklearn", "cvxpy", "explorer") if m in sys.modules]
print(json.dumps({"lazy": lazy, "families": families, "bad": bad, "heavy": heavy,
                  "for": k.families_for("caso"), "none": k.families_for("nothing")}))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["lazy"]
    assert got["families"] == ["base", "prox", "wwsvm", "caso", "mtmkl", "robust_mtl",
                               "triplet_screening"]
    assert got["bad"] == [] and got["heavy"] == []
    assert got["for"] == ["base", "prox", "caso"] and got["none"] == ["base", "prox"]


def test_a_module_offers_known_answers_only_with_a_family_and_the_function():
    from solvers import kernel_checks

    declared = kernel_checks._declared
    both = "KNOWN_ANSWERS_FAMILY = 'm'\nKNOWN_ANSWERS_RANK = 2\ndef known_answers():\n  pass\n"
    assert declared(both) == ("m", 2.0)
    typed = 'KNOWN_ANSWERS_FAMILY: str = "m_2"\n\n\ndef known_answers() -> list:\n  pass\n'
    assert declared(typed) == ("m_2", float("inf"))
    assert declared("KNOWN_ANSWERS_FAMILY = 'm'\n") is None
    assert declared("def known_answers():\n  pass\n") is None
    nested = "def f():\n  KNOWN_ANSWERS_FAMILY = 'm'\ndef known_answers():\n  pass\n"
    assert declared(nested) is None
    assert declared("# KNOWN_ANSWERS_FAMILY = 'm'\ndef known_answers():\n  pass\n") is None


def test_a_kernel_module_in_an_added_package_folder_is_found(tmp_path):
    """A model whose files sit in another folder of ``solvers.__path__`` (as the sixth
    model of the contributing checklist does) has its known answers checked, after the
    ranked families."""
    folder = tmp_path / "solvers"
    folder.mkdir()
    (folder / "_toy_kernels.py").write_text(
        'KNOWN_ANSWERS_FAMILY = "toy"\n\n\n'
        'def known_answers():\n    return [("double", 2.0 * 1.5, 3.0, 0.0),\n'
        '            ("half", 0.5, 0.25, 0.0)]\n')
    code = rf"""
import json, sys
import solvers
solvers.__path__.append({str(folder)!r})
from solvers import kernel_checks as k
out = [(c.family, c.kernel, c.ok) for c in k.verify(["toy"])]
print(json.dumps({{"families": list(k.CHECKS), "out": out, "for": k.families_for("toy")}}))
"""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["families"][-1] == "toy" and got["families"][:2] == ["base", "prox"]
    assert got["out"] == [["toy", "double", True], ["toy", "half", False]]
    assert got["for"] == ["base", "prox", "toy"]
