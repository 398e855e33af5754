"""Open the teaching notebooks in JupyterLab: ``python -m explorer.notebooks [lab args]``.

The notebooks are jupytext percent-format ``.py`` files. This launcher starts
``jupyter lab`` in ``notebooks/`` with this package's JupyterLab settings override
(``explorer/jupyter/labconfig/default_setting_overrides.json``) on
``JUPYTER_CONFIG_PATH``, so a ``.py`` file opens as a notebook with one click
(right-click → Open With → Editor still shows the text). A non-editable install also
copies that file to ``<prefix>/etc/jupyter/labconfig``, where a plain ``jupyter lab``
finds it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["CONFIG_DIR", "lab_env", "main"]

#: the directory holding ``labconfig/default_setting_overrides.json``
CONFIG_DIR = Path(__file__).resolve().parent / "jupyter"


def lab_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: the environment) with :data:`CONFIG_DIR` first on
    ``JUPYTER_CONFIG_PATH``."""
    env = dict(os.environ if base is None else base)
    old = env.get("JUPYTER_CONFIG_PATH", "")
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([str(CONFIG_DIR)] + ([old] if old else []))
    return env


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    root = Path(__file__).resolve().parents[1] / "notebooks"
    if root.is_dir() and not any(a.startswith("--notebook-dir") or
                                 a.startswith("--ServerApp.root_dir") for a in args):
        args = [f"--ServerApp.root_dir={root}", *args]
    try:
        return subprocess.call([sys.executable, "-m", "jupyterlab", *args], env=lab_env())
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
