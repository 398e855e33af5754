"""Docs that stay true: the README's Python runs, notebooks round-trip, one version,
the license and the typing marker ship."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import solvers
from explorer import registry

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SNIPPETS = re.findall(r"```python\n(.+?)\n```", README, flags=re.S)

_RUNNER = """
import sys, warnings
warnings.simplefilter("error", RuntimeWarning)
for i, code in enumerate(sys.argv[1:]):
    exec(compile(code, f"README.md python block {i + 1}", "exec"), {"__name__": "__main__"})
"""


def test_readme_python_blocks_run_as_written(tmp_path):
    """Every ```python block of the README runs on its own (a fresh namespace each, one
    fresh interpreter: the blocks may set global configuration such as sklearn's)."""
    assert len(SNIPPETS) >= 2
    out = subprocess.run([sys.executable, "-c", _RUNNER, *SNIPPETS], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]


def test_readme_states_no_drifting_counts_or_timings():
    """Test counts and suite durations change with every commit: the README does not
    state them (benchmarks print their own measurements)."""
    assert not re.search(r"\b\d[\d,]* tests\b", README)
    assert not re.search(r"\b\d+ min \d+ s\b", README)


def test_readme_says_how_a_model_plugs_in_without_a_list():
    assert "no list of models is edited" in README
    # the lists the project once kept by hand are derived from the registry's models
    names = {e.name for e in registry.entries()}
    assert set(solvers.MODELS) == names
    for name in names:
        assert (ROOT / "solvers" / "reference" / f"{name}.py").exists()


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.py")),
                         ids=lambda p: p.name)
def test_notebook_jupytext_round_trip_is_byte_identical(path):
    """Reading a notebook as JupyterLab's jupytext does and writing it back changes no
    byte (its header is what jupytext writes: no version, ipykernel's kernelspec)."""
    import jupytext  # the test extra installs it (notebooks)
    text = path.read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="py:percent")
    assert jupytext.writes(nb, fmt="py:percent") == text
    assert nb.metadata["kernelspec"]["display_name"] == "Python 3 (ipykernel)"


def test_version_is_written_once():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    attr = project["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "solvers.__version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+(\.dev\d+)?", solvers.__version__)
    assert importlib.metadata.version("dualscope") == solvers.__version__


def test_license_typing_marker_changelog_and_contributing_ship():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == {"text": "BSD-3-Clause"}
    license_text = (ROOT / "LICENSE").read_text()
    assert license_text.startswith("BSD 3-Clause License")
    assert "the dualscope developers" in license_text
    package_data = project["tool"]["setuptools"]["package-data"]
    for pkg in ("solvers", "explorer"):
        assert (ROOT / pkg / "py.typed").exists()
        assert "py.typed" in package_data[pkg]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(r"^## Unreleased$", changelog, flags=re.M)
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert "## Adding a model" in contributing
    assert "- [ ]" in contributing


def test_the_changelog_has_a_section_per_version_newest_first_and_dated():
    """Each release is a ``## X.Y.Z (YYYY-MM-DD)`` section below "Unreleased" (0.1.0, cut
    before the changelog existed, has no date); the newest is ``solvers.__version__``
    (the release moved "Unreleased" under it) and is dated."""
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.+)$", changelog, flags=re.M)
    assert headings[0] == "Unreleased"
    versions = [re.fullmatch(r"(\d+\.\d+\.\d+)(?: \((\d{4}-\d\d-\d\d)\))?", h) or h
                for h in headings[1:]]
    assert versions and all(isinstance(v, re.Match) for v in versions), versions
    numbers = [tuple(int(x) for x in v.group(1).split(".")) for v in versions]
    assert numbers == sorted(numbers, reverse=True) and len(set(numbers)) == len(numbers)
    dates = [v.group(2) for v in versions if v.group(2)]
    assert dates == sorted(dates, reverse=True)
    assert versions[0].group(1) == solvers.__version__.split(".dev")[0]
    assert versions[0].group(2), "the newest release has no date"
