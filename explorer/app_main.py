"""Streamlit entry point (``dualscope app`` runs this file): navigation only.

Each page is a ``render()`` function called by ``st.navigation``; pages come
from the model registry, so a new model appears here by registration.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from explorer import home, warmup
from explorer.registry import entries


def build_pages() -> list:
    models = {e.name: st.Page(e.render_page, title=e.title, icon=e.icon, url_path=e.name)
              for e in entries()}
    home_page = st.Page(partial(home.render, models), title="Home", icon=":material/home:",
                        url_path="home", default=True)
    return [home_page, *models.values()]


def main() -> None:
    st.set_page_config(page_title="dualscope", page_icon=":material/insights:", layout="wide")
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
