"""The dashboard's home page."""

from __future__ import annotations

import importlib
import re

import streamlit as st

from . import docs
from .registry import ModelEntry, entries
from .ui.fmt import pretty


def objective(entry: ModelEntry) -> str | None:
    """The first line (the objective) of the model page's ``PROBLEM`` LaTeX, if any."""
    module = entry.page.partition(":")[0]
    try:
        latex = getattr(importlib.import_module(module), "PROBLEM", None)
    except ImportError:
        return None
    if not latex:
        return None
    first = re.split(r"\\\\(?:\[[^\]]*\])?", latex)[0]
    # a row cut out of an alignment environment: drop the environment and its '&'
    env = r"\\(begin|end)\{(aligned|align\*?|split|gathered)\}"
    if re.search(env, first):
        first = re.sub(env, "", first).replace("&", "") + r"\;+\;\cdots"
    return first


def documentation() -> None:
    """A link to the documentation site when it is built, else how to build it.

    The dashboard is served over HTTP and browsers do not follow a ``file://`` link from
    such a page, so besides the link the page offers a button that opens the site in
    the default browser of the machine running the dashboard (the local site).
    """
    index = docs.built_index()
    if index is None:
        st.caption("The documentation site (model pages, executed notebooks, API "
                   "reference) is not built here: `dualscope docs build`.")
        return
    st.markdown(f"**Documentation**: the local site is built, "
                f"[{index}]({index.as_uri()}) (the model pages, the executed notebooks, "
                "the API reference).")
    if st.button("Open the documentation site", key="open_docs"):
        docs.open_site(index.parent)


def render(pages: dict | None = None) -> None:
    """Home: what a duality gap certifies, and one card per model.

    ``pages`` maps model names to their ``st.Page`` (for links); without it the
    cards have no links (e.g. when rendered on its own in a test).
    """
    st.title("dualscope")
    st.markdown(
        "An interactive explorer for five structured convex learning models. Every solver "
        "implements its paper's algorithm next to the paper's baseline, and every result "
        "carries a **duality-gap certificate**: for a minimisation problem with optimal "
        "value $p^\\star$, any primal point $x$ and any dual-feasible point $\\theta$ satisfy"
    )
    st.latex(r"D(\theta)\ \le\ p^\star\ \le\ P(x),\qquad "
             r"P(x)-p^\star\ \le\ \mathrm{gap}=P(x)-D(\theta).")
    st.markdown(
        "So the gap bounds how far the returned solution is from optimal *without knowing "
        "the optimum*. Solvers stop when the relative gap "
        "$\\mathrm{gap}/\\max(1,|P|)$ falls below `tol`; the tests cross-check every solver "
        "against a cvxpy formulation of the same objective. Times shown exclude numba "
        "compilation (reported separately when it happens)."
    )
    documentation()
    st.subheader("Models")
    for e in entries():
        with st.container(border=True):
            if pages and e.name in pages:
                st.page_link(pages[e.name], label=e.title, icon=e.icon)
            else:
                st.markdown(f"**{e.title}**")
            obj = objective(e)
            if obj:
                st.latex(obj)
            st.markdown(pretty(e.summary))
