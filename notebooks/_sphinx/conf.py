"""Sphinx configuration of the dualscope site (built by ``python -m explorer.docs build``).

The sources are ``notebooks/``: the MyST pages (``index.md``, ``models/``, ``api/``, ...)
beside the jupytext notebooks, which myst-nb executes at build time with
``DUALSCOPE_NOTEBOOK_SMALL=1`` (cached in ``notebooks/_build/.jupyter_cache``). This file
lives in ``notebooks/_sphinx/`` so that ``notebooks/*.py`` holds notebooks only.
Nothing on a built page is loaded from another host: MathJax, plotly.js, fonts and
search are files of the site (:mod:`explorer.docs_sphinx`).
"""

from __future__ import annotations

import os
from pathlib import Path

import solvers

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent
os.environ.setdefault("DUALSCOPE_NOTEBOOK_SMALL", "1")

project = "dualscope"
author = "the dualscope developers"
copyright = "the dualscope developers, BSD-3-Clause"
release = solvers.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "explorer.docs_sphinx",
]

exclude_patterns = ["_build", "_sphinx", "**/.ipynb_checkpoints", "**/.jupyter_cache",
                    "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
root_doc = "index"

# --- MyST and the notebooks ---------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "substitution"]
myst_substitutions = {"release": release}  # {{ release }} on a page
myst_heading_anchors = 3
myst_update_mathjax = False  # its window.MathJax is MathJax 3's; mathjax2_config below
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_execution_mode = os.environ.get("DUALSCOPE_DOCS_EXECUTE", "cache")
# explorer.docs.build names the cache (the test suite shares one with its notebook runs)
nb_execution_cache_path = os.environ.get("DUALSCOPE_DOCS_CACHE",
                                         str(SOURCE / "_build" / ".jupyter_cache"))
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_in_temp = False
nb_merge_streams = True
nb_ipywidgets_js: dict[str, dict[str, str]] = {}  # no widget manager from a CDN

# --- API reference -------------------------------------------------------------------
autodoc_default_options = {"members": True, "undoc-members": True,
                           "member-order": "bysource"}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_class_signature = "separated"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_ivar = True
napoleon_use_rtype = False
# A word of a type field ("ndarray, shape (n_tasks,)") or an attribute name that several
# classes share ("primal") links to the first match instead of warning; unresolved
# references do not warn (not nitpicky). Every other warning fails the build.
suppress_warnings = ["ref.python"]

# --- HTML: nothing from another host -------------------------------------------------
html_theme = "furo"
html_title = f"dualscope {release}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_copy_source = False
html_theme_options = {"top_of_page_buttons": []}
# MathJax 2.7 from the jupyter-server-mathjax wheel, copied to _static/mathjax/
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]],
                               "displayMath": [["\\[", "\\]"]],
                               "processEscapes": True,
                               "processClass": "tex2jax_process|mathjax_process|math",
                               "ignoreClass": "tex2jax_ignore|mathjax_ignore"},
                   # the wheel ships the STIX-Web fonts only (as the Jupyter notebook)
                   "HTML-CSS": {"availableFonts": ["STIX-Web"], "preferredFont": "STIX-Web",
                                "webFont": "STIX-Web", "imageFont": None},
                   "SVG": {"font": "STIX-Web"},
                   "menuSettings": {"zoom": "None"}}
