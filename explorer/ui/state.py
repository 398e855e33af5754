"""Typed session state of the page kit.

Everything a model page remembers between reruns lives in one :class:`PageState`
per model (``st.session_state["dualscope.pages"][model]``), and every costly value
computed on request is a :class:`Stored` (the value with the settings key it was
computed for). No ``f"{model}__{name}"`` string keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import streamlit as st

__all__ = ["LastRun", "PageState", "Stored", "demand_store", "page_state"]

_PAGES = "dualscope.pages"
_DEMAND = "dualscope.on_demand"


@dataclass(frozen=True)
class Stored:
    """A value computed on request, with the settings key it was computed for."""

    key: Any
    value: Any


@dataclass(frozen=True)
class LastRun:
    """The last successful solve of a page (kept for warm starts and after errors)."""

    problem_key: tuple
    controls: Any  # explorer.ui.controls.Controls
    result: Any
    problem: Any  # explorer.registry.Problem
    warm: bool


@dataclass
class PageState:
    """What one model page keeps between reruns."""

    dataset: str | None = None
    last: LastRun | None = None
    reference: Stored | None = None
    #: off-grid values read from the URL, kept as extra slider options (key -> values)
    extra_options: dict[str, list[float]] = field(default_factory=dict)
    #: raw URL values already checked (key -> raw), so a message is shown once per value
    url_checked: dict[str, str] = field(default_factory=dict)
    #: size configurations the user confirmed despite the cost estimate
    confirmed: set[tuple] = field(default_factory=set)


def page_state(model: str) -> PageState:
    """The :class:`PageState` of model ``model`` in this session (created on first use)."""
    pages = st.session_state.setdefault(_PAGES, {})
    if model not in pages:
        pages[model] = PageState()
    return pages[model]


def demand_store() -> dict[str, Stored]:
    """The session's values computed on request (``state_key -> Stored``)."""
    return st.session_state.setdefault(_DEMAND, {})
