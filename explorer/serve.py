"""Run the dashboard with its kernels warming from the first second.

``python -m explorer.serve [streamlit run flags]`` is ``streamlit run
explorer/app_main.py [flags]`` in this process, after starting
:func:`explorer.warmup.start_background`: the solvers, the page modules and every
model's numba kernels are imported and loaded (or compiled) while the server starts
and before the first browser connects, so the first page visit does not pay for them.
``dualscope app`` runs this.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["OPTIONS", "main"]

#: Streamlit options of the dashboard (a flag given on the command line wins). The same
#: values are in ``.streamlit/config.toml`` for ``streamlit run app.py`` from the
#: repository (``tests/test_shell.py`` checks they agree).
OPTIONS = {
    "client.toolbarMode": "viewer",  # no "Deploy" button or developer menu items
    "browser.gatherUsageStats": "false",  # no telemetry requests: the app works offline
}


def main(argv: list[str] | None = None) -> int:
    from streamlit.web import cli as st_cli

    from . import warmup

    args = list(sys.argv[1:] if argv is None else argv)
    given = {a.split("=", 1)[0].removeprefix("--") for a in args if a.startswith("--")}
    args = [x for k, v in OPTIONS.items() if k not in given for x in (f"--{k}", v)] + args
    warmup.start_background(preload=True)
    sys.argv = ["streamlit", "run", str(Path(__file__).with_name("app_main.py")), *args]
    return st_cli.main()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
