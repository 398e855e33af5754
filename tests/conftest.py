"""Test-suite configuration: the hypothesis profiles.

``HYPOTHESIS_PROFILE`` selects one (default ``ci``):

* ``ci``: few examples per property, derandomised (the same examples on every run), no
  shrinking; ``tests/test_properties.py`` in about a minute on a 2-core machine;
* ``deep``: 25 times more examples, random seeds, no deadline (on demand).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci", max_examples=100, deadline=None, derandomize=True, print_blob=True,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # no shrinking in CI: fast
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.register_profile(
    "deep", max_examples=2500, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# ---------------------------------------------------------------------------
# Nothing a test module starts or patches outlives it
# ---------------------------------------------------------------------------

import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

_SIMPLE = (bool, int, float, str, bytes, tuple, frozenset, type(None))


def _switches() -> dict[tuple[str, str], object]:
    """Every upper-case module global of the project with a plain value: the constants
    and switches that compiled code or solvers read (a test must not leave one patched)."""
    out: dict[tuple[str, str], object] = {}
    for name, mod in list(sys.modules.items()):
        if mod is None or name.split(".")[0] not in ("solvers", "explorer"):
            continue
        for key, val in list(vars(mod).items()):
            if key.isupper() and isinstance(val, _SIMPLE):
                out[(name, key)] = val
    return out


#: Process-wide singletons of libraries, started once on first use and kept by design
#: (not a cluster, a server or a pool that a test forgot): distributed's offload thread.
_SINGLETONS = ("Dask-Offload",)


def _threads() -> dict[int, str]:
    return {t.ident or 0: t.name for t in threading.enumerate()
            if not t.name.startswith(_SINGLETONS)}


@pytest.fixture(autouse=True, scope="module")
def _module_leaves_no_threads_or_patches(request):
    """After each test module: no thread it started is still alive (a grace of a few
    seconds for pools shutting down) and no project constant or switch differs."""
    threads = _threads()
    switches = _switches()
    yield
    changed = [f"{m}.{k}: {switches[(m, k)]!r} -> {v!r}" for (m, k), v in _switches().items()
               if (m, k) in switches and switches[(m, k)] != v]
    deadline = time.monotonic() + 10.0
    while True:
        left = {i: n for i, n in _threads().items() if i not in threads}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    problems = []
    if changed:
        problems.append("module state left patched: " + "; ".join(changed))
    if left:
        problems.append("threads left running: " + ", ".join(sorted(left.values())))
    if problems:
        pytest.fail(f"{request.module.__name__}: " + " | ".join(problems), pytrace=False)


# ---------------------------------------------------------------------------
# One notebook execution per session for the notebook tests and the docs site
# ---------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory) -> Path:
    """A folder of this session shared by every pytest-xdist worker (each worker's own
    temporary folders sit in it; without xdist it is the session's), for what is built
    once per session under a lock (``filelock``), such as the documentation site."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def notebook_cache(tmp_path_factory):
    """A jupyter-cache folder fresh for this session, shared by ``tests/test_notebooks.py``
    (:func:`explorer.docs.execute_notebook`) and the site build of
    ``tests/test_docs_site.py`` (:func:`explorer.docs.build`): whichever runs a teaching
    notebook first caches its outputs and the other reads them, so each notebook runs
    once per session and worker (under pytest-xdist the site is built by one worker, and
    another worker's notebook tests execute the notebooks again) against this session's
    code (never a stale cache)."""
    return tmp_path_factory.mktemp("jupyter_cache")
