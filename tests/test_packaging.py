"""The repository contract: README commands, CI script, layout rules."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text, flags=re.S)


def test_readme_has_the_two_commands_and_ci_runs_the_test_one_verbatim():
    cmds = _readme_commands()
    app = [c for c in cmds if "dualscope app" in c]
    test = [c for c in cmds if "pytest" in c]
    assert len(app) == 1 and len(test) == 1
    ci = (ROOT / ".ci" / "run").read_text()
    assert test[0].strip() in ci.splitlines()


def test_ci_script_is_executable_and_treats_no_tests_as_failure():
    ci = ROOT / ".ci" / "run"
    assert ci.stat().st_mode & 0o111
    text = ci.read_text()
    assert '"$rc" -eq 5' in text and "exit 1" in text


def test_solvers_are_numerics_only():
    offenders = []
    for path in (ROOT / "solvers").rglob("*.py"):
        for line in path.read_text().splitlines():
            if re.match(r"\s*(import|from)\s+(streamlit|plotly)\b", line):
                offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not offenders


def test_app_py_is_thin():
    lines = [ln for ln in (ROOT / "app.py").read_text().splitlines()
             if ln.strip() and not ln.lstrip().startswith("#")]
    assert len(lines) < 15


def test_ruff_is_clean():
    out = subprocess.run(["ruff", "check", str(ROOT)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_numba_kernels_are_cached():
    offenders = []
    for path in (ROOT / "solvers").rglob("*.py"):
        for m in re.finditer(r"@(?:numba\.)?njit(\([^)]*\))?", path.read_text()):
            if "cache=True" not in (m.group(1) or ""):
                offenders.append(f"{path.name}: {m.group(0)}")
    assert not offenders, offenders


def test_readme_extras_exist_and_the_app_command_warms_the_kernels():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    text = (ROOT / "README.md").read_text()
    for name in re.findall(r'pip install (?:-q )?-e "\.\[(\w+)\]"', text):
        assert name in extras, f"README installs the missing extra {name!r}"
    app = next(c for c in _readme_commands() if "dualscope app" in c)
    assert "dualscope warmup" in app
    from explorer.cli import make_parser

    assert make_parser().parse_args(["warmup"]).command == "warmup"


def test_no_panel_catches_a_bare_exception():
    # the dashboard's code: the page kit, the pages, home, navigation, the sweep panel
    ex = ROOT / "explorer"
    panels = [*(ex / "ui").glob("*.py"), *(ex / "models").glob("*/page.py"),
              *(p for p in (ex / "home.py", ex / "app_main.py", ex / "sweep_panel.py")
                if p.exists())]
    assert len(panels) > 8
    offenders = []
    for path in panels:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"except\s+(Exception|BaseException)\b", line) and "#" not in line:
                offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, offenders
