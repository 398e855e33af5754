"""The command line's shell: a light import path, ``list``'s conventions, one final row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer import cli

ROOT = Path(__file__).resolve().parents[1]

#: Libraries that ``import explorer.cli`` and ``dualscope --help`` must not import.
HEAVY = ("sklearn", "cvxpy", "streamlit", "plotly", "numba", "scipy", "pandas")

_PROBE = """
import contextlib, io, json, sys
import explorer.cli
before = sorted({{m.split(".")[0] for m in sys.modules}} & {heavy})
argv = {argv}
if argv is not None:
    with contextlib.redirect_stdout(io.StringIO()) as out, \\
            contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            code = explorer.cli.main(argv)
        except SystemExit as exc:
            code = exc.code
    text = out.getvalue() + err.getvalue()
    assert ("usage: dualscope" in text) if code == 0 else ("invalid choice" in text), text
after = sorted({{m.split(".")[0] for m in sys.modules}} & {heavy})
print(json.dumps([before, after]))
"""


@pytest.mark.parametrize("argv", [None, ["--help"], ["sweep", "--help"], ["nope"]],
                         ids=["import", "help", "sweep-help-builds-lazily", "typo"])
def test_cli_import_and_help_import_no_heavy_library(argv):
    """``import explorer.cli`` and ``dualscope --help`` import none of HEAVY (a fresh
    interpreter each; ``sweep --help`` does build its parser and may import models)."""
    code = _PROBE.format(heavy=set(HEAVY), argv=argv)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    before, after = json.loads(out.stdout.splitlines()[-1])
    assert before == []
    if argv in (["--help"], ["nope"]):
        assert after == [], f"dualscope {argv[0]} imported {after}"


def test_sub_command_help_still_lists_the_models(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["solve", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "wwsvm" in out and "--set" in out


def test_list_explains_its_conventions(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(cli.LIST_LEGEND)
    assert "n=0 (all) [0, 178]" in out  # the wine data set: n=0 is every sample
    assert "flips=5 [0, 50]" in out  # a synthetic count: 0 is a count, not "all"


def test_solve_prints_the_final_row_once(capsys):
    assert cli.main(["solve", "caso"]) == 0
    rows = [ln.split()[:5] for ln in capsys.readouterr().out.splitlines()
            if ln.strip()[:1].isdigit()]
    assert rows and len(rows) == len({tuple(r) for r in rows}), rows


def test_dashboard_options_agree_with_the_repository_config():
    """``dualscope app`` (explorer.serve) and ``streamlit run app.py`` (the repository's
    .streamlit/config.toml) run with the same options: no Deploy button, no telemetry."""
    import tomllib

    from explorer import serve

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    flat = {f"{section}.{key}": str(value).lower()
            for section, values in config.items() for key, value in values.items()}
    assert flat == serve.OPTIONS
    assert serve.OPTIONS["client.toolbarMode"] in ("viewer", "minimal")


def test_import_solvers_defers_scikit_learn_and_the_warning_stays_sklearns():
    """``import solvers`` does not import scikit-learn; ``solvers.ConvergenceWarning`` is
    built on first use, one class, a subclass of scikit-learn's, and pickles by name."""
    code = (
        "import pickle, sys\n"
        "import solvers, solvers.base\n"
        "assert 'sklearn' not in sys.modules, 'import solvers imported sklearn'\n"
        "from sklearn.exceptions import ConvergenceWarning as Sk\n"
        "from solvers.base import ConvergenceWarning as C\n"
        "assert solvers.ConvergenceWarning is C and issubclass(C, Sk)\n"
        "assert type(pickle.loads(pickle.dumps(C('x')))) is C\n"
        "assert 'ConvergenceWarning' in solvers.__all__\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
