"""Streamlit entry point (``dualscope app`` runs this file): navigation only.

Each page is a ``render()`` function called by ``st.navigation``; pages come
from the model registry, so a new model appears here by registration.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from explorer import home, warmup
from explorer.registry import entries

#: The browser tab's icon: an emoji, drawn by the browser itself (a ``:material/...:``
#: favicon is fetched from an external font server, which fails offline).
PAGE_ICON = "\N{CHART WITH DOWNWARDS TREND}"


def build_pages() -> list:
    """Home (served at ``/``, also reachable as ``/home``) and one page per model.

    Streamlit serves the default page at ``/`` only; the hidden ``home`` page sends a
    visitor of ``/home`` there (with any query parameters).
    """
    models = {e.name: st.Page(e.render_page, title=e.title, icon=e.icon, url_path=e.name)
              for e in entries()}
    home_page = st.Page(partial(home.render, models), title="Home", icon=":material/home:",
                        url_path="start", default=True)

    def to_home() -> None:
        st.switch_page(home_page, query_params=dict(st.query_params))

    alias = st.Page(to_home, title="Home", url_path="home", visibility="hidden")
    return [home_page, *models.values(), alias]


def main() -> None:
    st.set_page_config(page_title="dualscope", page_icon=PAGE_ICON, layout="wide")
    # full page names in the sidebar (Streamlit truncates long ones with an ellipsis)
    st.html("<style>[data-testid='stSidebarNavLink']{height:auto;min-height:2rem;}"
            "[data-testid='stSidebarNavLink'] span,[data-testid='stSidebarNavLink'] div,"
            "[data-testid='stSidebarNavLink'] p{white-space:normal;overflow:visible;"
            "text-overflow:clip;line-height:1.3;}</style>")
    nav = st.navigation(build_pages())
    nav.run()
    # After the first page is drawn (so it does not compete with it), load or compile
    # every model's numba kernels in the background, once per server process, so the
    # next pages do not stall on compilation.
    warmup.start_background()


main()
