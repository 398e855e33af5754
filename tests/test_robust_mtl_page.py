"""The robust temporal multitask page headless (Streamlit AppTest): its own panels."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

TIMEOUT = 120
VARIANTS = ["dual ascent (paper)", "pure smoothing (baseline)", "dual ascent + restart",
            "pure smoothing + restart"]


def _page() -> AppTest:
    return AppTest.from_string(
        "from explorer.registry import get\nget('robust_mtl').render_page()",
        default_timeout=TIMEOUT,
    )


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _small(at: AppTest) -> None:
    for key, value in (("m", 5), ("d", 8), ("n", 15)):
        at.slider(key=key).set_value(value).run()


def test_structure_panel_and_an_honest_floor_at_the_default_mu():
    at = _page()
    at.run()
    assert not at.exception and not at.error
    m = _metrics(at)
    for label in ("selected features", "true features found", "rank of W (true)",
                  "floor (price of μ)", "smoothed problem's gap", "floor reached"):
        assert label in m, label
    # the default mu puts the floor below tol: the default run converges, certified
    assert m["floor reached"] == "no"
    assert float(m["relative gap"]) <= 1e-6
    assert float(m["floor / max(1, |J|)"]) <= 1e-6
    # convergence, W and W_true heatmaps, singular values, residuals, floor, inner work
    assert len(at.get("plotly_chart")) >= 7
    captions = " ".join(c.value for c in at.caption)
    assert "correlation" in captions and "λdμ/4" in captions
    # light weights on the same data: the residuals follow the noise
    n_charts = len(at.get("plotly_chart"))
    at.button(key="run_light_fit").click().run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == n_charts + 1
    assert any("follow each task's own noise" in c.value for c in at.caption)
    # a larger mu: the run stops at its floor, and the page says so
    at.select_slider(key="mu").set_value(1e-3).run()
    assert not at.exception and not at.error
    m = _metrics(at)
    assert m["floor reached"] == "yes"
    assert float(m["floor / max(1, |J|)"]) > 1e-6
    assert any("smoothing floor" in w.value for w in at.warning)
    assert "warm start" in " ".join(x.value for x in at.markdown if "start]" in x.value)


def test_comparison_variants_and_the_mu_sweep():
    at = _page()
    at.run()
    _small(at)
    at.select_slider(key="mu").set_value(1e-3).run()
    at.number_input(key="max_iter").set_value(5000).run()
    at.button(key="run_comparison").click().run()
    assert not at.exception and not at.error
    kit, ours = at.dataframe[0].value, at.dataframe[1].value
    assert list(kit["method"]) == VARIANTS
    assert list(ours["method"]) == VARIANTS
    assert (ours["floor"] >= 0).all()
    n_charts = len(at.get("plotly_chart"))
    at.button(key="run_mu_sweep").click().run()
    assert not at.exception and not at.error
    sweep = at.dataframe[2].value
    assert len(sweep) == 8 and set(sweep["method"]) == {"dual", "smoothing"}
    # the floor shrinks with mu for each method
    for method in ("dual", "smoothing"):
        floors = sweep[sweep["method"] == method].sort_values("mu")["floor"].to_numpy()
        assert floors[0] < floors[-1]
    assert len(at.get("plotly_chart")) == n_charts + 1


def test_a_bad_configuration_is_a_message_and_the_last_result_stays():
    script = (
        "import streamlit as st\n"
        "from explorer.registry import get\n"
        "import explorer.models.robust_mtl as m\n"
        "entry = get('robust_mtl')\n"
        "if st.session_state.get('break_it'):\n"
        "    def bad(problem, **kw):\n"
        "        return m._solve(problem, **dict(kw, gamma=-1.0))\n"
        "    object.__setattr__(entry, 'solve', bad)\n"
        "try:\n"
        "    entry.render_page()\n"
        "finally:\n"
        "    object.__setattr__(entry, 'solve', m._solve)\n"
    )
    at = AppTest.from_string(script, default_timeout=TIMEOUT)
    at.run()
    _small(at)
    good = _metrics(at)["primal"]
    at.session_state["break_it"] = True
    at.select_slider(key="lam").set_value(2.0).run()
    assert not at.exception
    assert any("gamma must be > 0" in e.value for e in at.error)
    assert _metrics(at)["primal"] == good
    assert any("last successful run" in c.value for c in at.caption)


def test_real_data_page_and_p_switch():
    at = _page()
    at.run()
    at.selectbox(key="dataset").set_value("diabetes").run()
    assert not at.exception and not at.error
    assert "rank of W" in _metrics(at)
    at.slider(key="m").set_value(4).run()
    at.select_slider(key="mu").set_value(1e-3).run()
    at.number_input(key="max_iter").set_value(5000).run()
    at.selectbox(key="p").set_value(1).run()
    assert not at.exception and not at.error
    m = _metrics(at)
    assert m["loss norm p"] == "1"
    assert int(m["iterations"]) >= 1
