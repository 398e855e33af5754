"""Browser history for the URL-bound controls: Back/Forward restore the settings.

Streamlit writes a changed, URL-bound widget value into the address bar with
``history.replaceState`` (no history entry), and on ``popstate`` it reruns the page
from the URL (its "history navigation", where the URL wins over session values).
This script, injected once per page, turns a *user's* query-string change into a
``pushState`` (a new entry), so Back/Forward walk through the settings.
"""

from __future__ import annotations

import streamlit as st

__all__ = ["enable_history"]

_SCRIPT = """
<script>
(() => {
  const w = window;
  if (w.__dualscopeHistory) return;
  w.__dualscopeHistory = true;
  let lastInput = 0;
  for (const ev of ["keydown", "pointerup", "change", "input"]) {
    w.addEventListener(ev, () => { lastInput = Date.now(); }, true);
  }
  const replace = w.history.replaceState.bind(w.history);
  w.history.replaceState = function (state, title, url) {
    try {
      if (url !== undefined && url !== null) {
        const next = new URL(url, w.location.href);
        if (next.pathname === w.location.pathname && next.search !== w.location.search
            && Date.now() - lastInput < 2000) {
          return w.history.pushState(state, title, url);
        }
      }
    } catch (e) { /* fall through to the original */ }
    return replace(state, title, url);
  };
})();
</script>
"""


def enable_history() -> None:
    """Make URL changes made by the user's control moves new browser-history entries."""
    st.html(_SCRIPT, unsafe_allow_javascript=True, width="content")
