"""numba's disk cache of the solvers is keyed on every solver source (solvers._jitcache)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import solvers
from solvers import _jitcache

# Calls the Walrus block (in _wwsvm_kernels.py; it compiles in prox.py's sort and root
# finder) from a copy of the package and reports whether numba loaded it from the cache.
SCRIPT = r"""
import json, sys, types
if sys.argv[1] == "without":
    stub = types.ModuleType("solvers._jitcache")
    stub.install = lambda: False
    sys.modules["solvers._jitcache"] = stub
import numpy as np
from solvers import _wwsvm_kernels as K
v = np.array([0.3, -1.0, 2.0, 0.7, 0.1])
out = np.empty(5)
K.walrus_block_fullsort(v, 1.0, out, np.empty(5))
st = K.walrus_block_fullsort.stats
print(json.dumps({"hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values()),
                  "out": out.tolist()}))
"""


def _run(root: Path, mode: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE")}
    env["PYTHONPATH"] = str(root)
    done = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_sources_hash_sees_every_solver_source_but_the_references(tmp_path):
    (tmp_path / "reference").mkdir()
    (tmp_path / "sub").mkdir()
    for rel in ("a.py", "sub/b.py", "reference/c.py"):
        (tmp_path / rel).write_text("x = 1\n")
    h0 = _jitcache.sources_hash(tmp_path)
    (tmp_path / "reference" / "c.py").write_text("x = 2\n")
    assert _jitcache.sources_hash(tmp_path) == h0
    (tmp_path / "sub" / "b.py").write_text("x = 2\n")
    h1 = _jitcache.sources_hash(tmp_path)
    assert h1 != h0
    (tmp_path / "sub" / "b.py").rename(tmp_path / "sub" / "d.py")  # a rename counts too
    assert _jitcache.sources_hash(tmp_path) != h1
    assert _jitcache.install()  # in place (solvers imported it), and idempotent


def test_an_edit_to_an_inlined_module_is_never_served_from_a_stale_cache(tmp_path):
    """With the package's locator an edit to prox.py alone makes the Walrus block compile
    anew; numba alone (the control) would load the build that inlined the old prox.py."""
    src = Path(solvers.__file__).resolve().parent
    shutil.copytree(src, tmp_path / "solvers",
                    ignore=shutil.ignore_patterns("__pycache__", "reference"))
    prox = tmp_path / "solvers" / "prox.py"
    first = _run(tmp_path, "with")
    assert first["misses"] == 1 and first["hits"] == 0
    again = _run(tmp_path, "with")
    assert again["hits"] == 1 and again["misses"] == 0       # unchanged sources: cached
    prox.write_text(prox.read_text() + "\n# an edit\n")
    edited = _run(tmp_path, "with")
    assert edited["misses"] == 1 and edited["hits"] == 0     # compiled anew
    # the control: numba's own key (the defining file only) would serve a stale build
    ctl = _run(tmp_path, "without")
    assert ctl["misses"] == 1                                 # its own stamp format
    prox.write_text(prox.read_text() + "\n# another edit\n")
    stale = _run(tmp_path, "without")
    assert stale["hits"] == 1 and stale["misses"] == 0
    np.testing.assert_array_equal(first["out"], edited["out"])
