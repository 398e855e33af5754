"""Hostile dashboard links: every integer and float control of every page, read from the URL.

``?max_iter=inf`` once crashed every page inside Streamlit (``OverflowError``) and a
repeated key (``?k=3&k=5``) silently fell back to the default. Every numeric URL value
now goes through :func:`explorer.ui.controls.parse_url_number`: a value is used, or
refused with a note naming the parameter; a repeated key uses its first value, said in a
note.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from explorer import registry
from explorer.ui.controls import MAX_URL_VALUE, parse_url_number

PAGES = [e.name for e in registry.entries()]
HOSTILE = ["inf", "-inf", "nan", "1" * (MAX_URL_VALUE + 20), "0x1f"]


def _page(name: str) -> AppTest:
    return AppTest.from_string(f"from explorer.registry import get\nget({name!r}).render_page()",
                               default_timeout=120)


def _numeric_controls(entry: registry.ModelEntry) -> dict[str, tuple[str, float, float]]:
    """``url key -> (name in the notes, low, high)`` of the sidebar's numeric controls."""
    pnames = {p.name for p in entry.params}
    ds = entry.datasets[entry.default_dataset]
    out = {}
    for name, (_, low, high) in ds.sizes.items():
        key = f"data_{name}" if name in pnames or name in ("tol", "max_iter") else name
        out[key] = (name, low, high)
    out["data_seed"] = ("data seed", 0, 10_000)
    out["tol"] = ("tol", 1e-12, 0.01)
    out["max_iter"] = ("max_iter", 1, 1_000_000)
    for p in entry.params:
        if p.kind in ("int", "float") and p.low is not None and p.high is not None:
            out[p.name] = (p.name, p.low, p.high)
    return out


def _widget_value(at: AppTest, key: str):
    for kind in ("slider", "select_slider", "number_input"):
        found = [w for w in getattr(at, kind) if w.key == key]
        if found:
            return found[0].value
    return None  # pinned by the page: no widget


@pytest.mark.parametrize("bad", [
    "inf", "-inf", "+Infinity", "nan", "NaN", "1e400", "-1e999", "", " ", "abc", "0x1f",
    "1,5", "1e", "--1", "5%", "1" * (MAX_URL_VALUE + 1), "\x00", "١e٣٠٠٠"])
def test_parse_url_number_refuses_with_a_reason(bad):
    for integer in (True, False):
        with pytest.raises(ValueError, match=r"^is (not|too long)"):
            parse_url_number(bad, integer=integer)


def test_parse_url_number_reads_plain_numbers():
    assert parse_url_number(" 5 ", integer=True) == 5
    assert parse_url_number("5.0", integer=True) == 5
    assert parse_url_number("1e3", integer=True) == 1000
    assert parse_url_number("-0.25", integer=False) == -0.25
    assert parse_url_number("1e-300", integer=False) == 1e-300
    with pytest.raises(ValueError, match="is not a whole number"):
        parse_url_number("2.5", integer=True)


@pytest.mark.parametrize("bad", HOSTILE)
@pytest.mark.parametrize("page", PAGES)
def test_hostile_values_in_every_numeric_control_are_named_not_raised(page, bad):
    entry = registry.get(page)
    controls = _numeric_controls(entry)
    at = _page(page)
    at.query_params.update({key: bad for key in controls})
    at.run()
    assert not at.exception, at.exception
    notes = " | ".join(w.value for w in at.warning)
    shown = bad if len(bad) <= MAX_URL_VALUE else bad[:MAX_URL_VALUE] + "..."
    for key, (name, _, _) in controls.items():
        if _widget_value(at, key) is None:
            continue
        assert f"**{name}={shown}**" in notes, (key, notes)
        assert at.query_params.get(key, [""])[0] != bad  # the link now says the value used


@pytest.mark.parametrize("page", PAGES)
def test_repeated_keys_use_the_first_value_and_say_so(page):
    entry = registry.get(page)
    controls = {k: v for k, v in _numeric_controls(entry).items()
                if k in ("data_seed", "max_iter", "tol") or v[0] in
                entry.datasets[entry.default_dataset].sizes}
    first = {}
    query = {}
    for key, (_, low, high) in controls.items():
        a, b = (3, 5) if key == "data_seed" else (7, 9) if key == "max_iter" else \
            (1e-4, 1e-8) if key == "tol" else (low, high)
        first[key] = a
        query[key] = [str(a), str(b)]
    at = _page(page)
    at.query_params.update(query)
    at.run()
    assert not at.exception, at.exception
    notes = " | ".join(w.value for w in at.warning)
    for key, (name, _, _) in controls.items():
        assert f"**{name}={query[key][0]}, {query[key][1]}** is given 2 times" in notes, notes
        value = _widget_value(at, key)
        assert value == pytest.approx(first[key]), (key, value)
