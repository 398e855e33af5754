"""dualscope explorer: datasets, figures, dashboard pages, CLI and benchmarks.

Models plug in as subpackages of :mod:`explorer.models` (see
:mod:`explorer.registry`). Importing :mod:`explorer` does not import
streamlit or plotly (except inside a Jupyter kernel, where it sets plotly's notebook
renderer); the page modules and :mod:`explorer.figures` do.
"""

import sys as _sys

if "ipykernel" in _sys.modules:
    # In a Jupyter kernel (only there), notebook figures carry self-contained HTML beside
    # the plotly JSON, so nbconvert shows them too (see explorer.figures).
    try:
        from . import figures as _figures  # noqa: F401
    except ImportError:  # plotly not installed: nothing to configure
        pass
