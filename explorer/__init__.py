"""dualscope explorer: datasets, figures, dashboard pages, CLI and benchmarks.

Models plug in as subpackages of :mod:`explorer.models` (see
:mod:`explorer.registry`). Importing :mod:`explorer` does not import
streamlit or plotly; the page modules and :mod:`explorer.figures` do.
"""
