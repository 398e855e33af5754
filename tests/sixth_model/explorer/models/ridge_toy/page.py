"""Ridge regression's page: the standard model page."""

from __future__ import annotations


def render() -> None:
    """Draw the page (controls, live gap, the standard tabs)."""
    from ...ui.page import model_page
    from . import ENTRY

    model_page(ENTRY, latex=r"\min_w \tfrac12\|Xw-y\|^2 + \tfrac\lambda2\|w\|^2",
               structure=lambda problem, res, c: None)
