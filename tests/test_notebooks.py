"""Execute every teaching notebook (jupytext percent format) with small sizes.

Each notebook asserts its own key claims (gap reaches tol, matches cvxpy, screening
is safe, ...); a failing assertion fails the cell and this test. Every figure output
must also carry self-contained HTML (so ``nbconvert --to html`` shows it), and the
``notebooks`` extra must hold what a user needs to open and run them. (Building a venv
from that extra alone takes minutes — JupyterLab and its dependencies — so the suite
checks the extra's content instead; see README "Notebooks".)
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import jupytext
import pytest

from explorer import docs

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
PLOTLY_JSON = "application/vnd.plotly.v1+json"


def _requirement_names(reqs: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in reqs}


def test_notebooks_extra_installs_everything_to_open_and_run_them():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = _requirement_names(project["optional-dependencies"]["notebooks"])
    needed = {"jupyterlab", "jupytext", "ipykernel", "nbclient", "plotly"}
    assert needed <= extra, f"notebooks extra lacks {sorted(needed - extra)}"
    # every third-party module the notebooks import is installed by the core or the extra
    provided = extra | _requirement_names(project["dependencies"])
    aliases = {"sklearn": "scikit-learn"}
    for path in NOTEBOOKS:
        for mod in re.findall(r"^\s*(?:import|from)\s+(\w+)", path.read_text(), flags=re.M):
            if mod in ("solvers", "explorer", "os", "math", "time", "warnings", "itertools",
                       "functools", "collections", "dataclasses", "json", "__future__",
                       "tempfile"):
                continue
            assert aliases.get(mod, mod) in provided, f"{path.name} imports {mod}"


def test_jupyterlab_opens_py_notebooks_as_notebooks():
    from explorer.notebooks import CONFIG_DIR, lab_env

    overrides = json.loads((CONFIG_DIR / "labconfig" / "default_setting_overrides.json")
                           .read_text())
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["python"] == "Jupytext Notebook"
    assert lab_env({})["JUPYTER_CONFIG_PATH"].split(os.pathsep)[0] == str(CONFIG_DIR)
    # JupyterLab's own reader of labconfig overrides finds it on that path
    from jupyter_server.services.config.manager import ConfigManager

    old = os.environ.get("JUPYTER_CONFIG_PATH")
    os.environ["JUPYTER_CONFIG_PATH"] = str(CONFIG_DIR)
    try:
        found = ConfigManager(config_dir_name="labconfig").get("default_setting_overrides")
    finally:
        if old is None:
            del os.environ["JUPYTER_CONFIG_PATH"]
        else:
            os.environ["JUPYTER_CONFIG_PATH"] = old
    assert found == overrides


def test_every_notebook_has_one_parameters_cell():
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        nb = jupytext.read(path)
        tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{path.name}: expected one cell tagged 'parameters'"
        assert "DUALSCOPE_NOTEBOOK_SMALL" in tagged[0].source
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, notebook_cache):
    """The notebook runs to its end (its asserts hold) with the small sizes. The run is
    shared with the site build of this session (``notebook_cache``): when that build has
    already run this notebook's code, its successful run is this one."""
    nb, _ = docs.execute_notebook(path, cache=notebook_cache)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code), "a cell did not run"
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if PLOTLY_JSON in data:
                # a static fallback for viewers without the plotly extension (nbconvert)
                assert "text/html" in data, f"{path.name}: a figure without HTML output"
