"""The dashboard headless with Streamlit's AppTest: every page, a control change, errors."""

from __future__ import annotations

from pathlib import Path

import pagekit as pk
import pytest
from streamlit.testing.v1 import AppTest

from explorer.registry import entries
from explorer.ui import log_options

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = pk.TIMEOUT
MODELS = [e.name for e in entries()]


def _badges(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown if "start]" in m.value)


def test_home_page_lists_every_model():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "duality-gap certificate" in text
    for e in entries():
        assert e.summary[:40] in text


@pytest.mark.parametrize("name", MODELS)
def test_model_page_solves_and_reacts_to_a_slider(name):
    entry = next(e for e in entries() if e.name == name)
    at = pk.model_page(name)
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    m0 = pk.metrics(at)
    assert {"primal", "dual (lower bound)", "relative gap", "iterations"} <= set(m0)
    assert "cold start" in _badges(at)
    assert at.get("plotly_chart"), "no chart drawn"
    # the first log-scale parameter moves one notch: re-solve, warm-started
    p = next(p for p in entry.params if p.log)
    values = log_options(p.low, p.high, p.default)
    cur = values.index(min(values, key=lambda v: abs(v - at.select_slider(key=p.name).value)))
    new = values[cur - 1] if cur > 0 else values[cur + 1]
    at.select_slider(key=p.name).set_value(new).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.select_slider(key=p.name).value == new
    assert "warm start" in _badges(at)


def test_wwsvm_page_controls_comparison_reference_and_export():
    at = pk.model_page("wwsvm")
    at.run()
    before = pk.metrics(at)["primal"]
    at.select_slider(key="C").set_value(0.5).run()
    assert not at.exception and not at.error
    assert pk.metrics(at)["primal"] != before
    assert "warm start" in _badges(at)
    at.selectbox(key="method").set_value("iterative").run()
    assert "method **iterative**" in _badges(at)
    at.button(key="run_comparison").click().run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["method"]) == ["Walrus (exact block)", "iterative (Shark-style)"]
    assert table["converged"].all()
    at.button(key="run_reference").click().run()
    m = pk.metrics(at)
    assert m["inside [dual, primal]"] == "yes"
    assert float(m["relative difference"]) <= 1e-6
    assert at.get("download_button")


def test_wwsvm_reference_is_refused_above_the_size_limit():
    at = pk.model_page("wwsvm")
    at.run()
    at.selectbox(key="dataset").set_value("digits").run()
    at.slider(key="n").set_value(1797).run()
    assert not at.exception
    assert any("refused" in i.value for i in at.info)
    assert all(b.key != "run_reference" for b in at.button)


def test_errors_are_messages_and_the_last_good_result_stays():
    script = (
        "import streamlit as st\n"
        "from explorer.registry import get\n"
        "entry = get('wwsvm')\n"
        "if st.session_state.get('break_it'):\n"
        "    def bad(problem, **kw):\n"
        "        raise ValueError('C must lie in (0, inf), got -1')\n"
        "    object.__setattr__(entry, 'solve', bad)\n"
        "try:\n"
        "    entry.render_page()\n"
        "finally:\n"
        "    import explorer.models.wwsvm as m\n"
        "    object.__setattr__(entry, 'solve', m._solve)\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT)
    at.run()
    good = pk.metrics(at)["primal"]
    at.session_state["break_it"] = True
    at.select_slider(key="C").set_value(0.5).run()  # a change that triggers a solve
    assert not at.exception
    assert any("C must lie in" in e.value for e in at.error)
    assert pk.metrics(at)["primal"] == good
    assert any("last successful run" in c.value for c in at.caption)


def test_a_rerun_without_changes_reuses_the_certified_result():
    at = pk.model_page("wwsvm")
    at.run()
    first = pk.metrics(at)
    at.button(key="run_comparison").click().run()  # a rerun that changes no control
    assert pk.metrics(at) == first  # same result object: same time, same iterations


def test_switching_dataset_starts_from_its_default_sizes():
    at = pk.model_page("wwsvm")
    at.run()
    at.slider(key="n").set_value(5000).run()  # valid for blobs, above digits' 1797
    at.selectbox(key="dataset").set_value("digits").run()
    assert not at.exception, at.exception
    assert at.slider(key="n").value == 600
    assert "digits" in " ".join(c.value for c in at.caption)
