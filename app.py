"""dualscope dashboard: ``streamlit run app.py`` (or ``dualscope app``).

Kept thin on purpose: the navigation and every page live in ``explorer/``.
"""

import runpy
from pathlib import Path

import explorer

runpy.run_path(str(Path(explorer.__file__).with_name("app_main.py")), run_name="__main__")
