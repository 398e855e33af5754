"""The robust temporal multitask page headless (Streamlit AppTest): its own panels."""

from __future__ import annotations

import numpy as np
import pagekit as pk
import pytest
from streamlit.testing.v1 import AppTest

from explorer.ui import TOL_OPTIONS, log_options

VARIANTS = ["exact dual (default, no floor)", "dual ascent (paper)",
            "pure smoothing (baseline)", "dual ascent + restart", "pure smoothing + restart"]


def _small(at: AppTest) -> None:
    for key, value in (("m", 5), ("d", 8), ("n", 15)):
        at.slider(key=key).set_value(value).run()


def _badge(at: AppTest) -> str:
    return " ".join(x.value for x in at.markdown if "badge[" in x.value)


def _converged(at: AppTest) -> None:
    pk.ok(at)
    badge = _badge(at)
    assert "not converged" not in badge and "[converged]" in badge, badge


def _notch(options: list, value, step: int):
    return options[options.index(value) + step]


def test_defaults_converge_to_1e8_without_a_floor_and_after_one_notch_of_any_slider():
    at = pk.loaded("robust_mtl")
    _converged(at)
    m = pk.metrics(at)
    assert "exact_dual" in _badge(at)
    assert float(m["relative gap"]) <= 1e-8
    # mu and restart belong to the paper's methods: no widget for the default method
    assert not any(w.key == "mu" for w in at.select_slider)
    assert not any(w.key == "restart" for w in at.toggle)
    assert pk.chart(at, "certified gap of exact_dual")
    for label in ("selected features", "true features found", "rank of W (true)"):
        assert label in m, label
    heat = pk.chart(at, "learned W")
    assert pk.array(heat["data"][0]["z"]).shape == (30, 12)
    assert heat["data"][0]["x"][0] == "t1" and heat["data"][0]["x"][-1] == "t12"
    # one notch of every model slider (each from the defaults), warm-started
    for key in ("lam", "rho", "gamma", "zeta"):
        default = at.select_slider(key=key).value
        opts = log_options(1e-3, 100.0, default)
        for step in (-1, 1):
            at.select_slider(key=key).set_value(_notch(opts, default, step)).run()
            _converged(at)
        at.select_slider(key=key).set_value(default).run()
    assert "warm start" in _badge(at)
    for p in (1, float("inf")):
        at.selectbox(key="p").set_value(p).run()
        _converged(at)
    at.selectbox(key="p").set_value(2).run()
    at.select_slider(key="tol").set_value(_notch(TOL_OPTIONS, 1e-8, 1)).run()
    _converged(at)
    for key, step in (("m", 1), ("d", -1), ("n", 1)):
        at.slider(key=key).set_value(at.slider(key=key).value + step).run()
        _converged(at)


def test_paper_method_shows_mu_and_an_honest_floor():
    at = pk.loaded("robust_mtl")
    _small(at)
    at.selectbox(key="method").set_value("dual").run()
    pk.ok(at)
    m = pk.metrics(at)
    for label in ("floor (price of μ)", "smoothed problem's gap", "floor reached"):
        assert label in m, label
    floor = pk.chart(at, "certified gap = smoothed gap + floor")
    assert [t["name"] for t in floor["data"]][:3] == ["certified gap", "smoothed problem's gap",
                                                      "floor (price of mu)"]
    assert pk.chart(at, "inner work and momentum")
    # the default mu (1e-3) puts the floor above tol = 1e-8: the run stops there, and says so
    assert at.select_slider(key="mu").value == 1e-3
    assert m["floor reached"] == "yes"
    assert any("smoothing floor" in w.value for w in at.warning)
    captions = " ".join(c.value for c in at.caption)
    assert "λdμ/4" in captions
    before = float(m["floor / max(1, |J|)"])
    at.select_slider(key="mu").set_value(1e-5).run()
    pk.ok(at)
    assert float(pk.metrics(at)["floor / max(1, |J|)"]) < before / 10  # shrinks with mu


def test_comparison_variants_and_the_mu_sweep():
    at = pk.loaded("robust_mtl")
    _small(at)
    at.select_slider(key="tol").set_value(1e-6).run()
    at.button(key="run_comparison").click().run()
    pk.ok(at)
    kit, ours = at.dataframe[0].value, at.dataframe[1].value
    assert list(kit["method"]) == VARIANTS
    assert list(ours["method"]) == VARIANTS
    assert bool(kit["converged"].iloc[0])  # the floor-free default reaches tol
    assert ours["floor"].iloc[0] == 0.0 and (ours["floor"] >= 0).all()
    svd = pk.chart(at, "gap vs SVDs")
    assert [t["name"] for t in svd["data"]] == VARIANTS
    assert pk.chart(at, "objective vs time") and pk.chart(at, "objective vs iteration")
    at.button(key="run_mu_sweep").click().run()
    pk.ok(at)
    sweep = at.dataframe[2].value
    assert len(sweep) == 8 and set(sweep["method"]) == {"dual", "smoothing"}
    for method in ("dual", "smoothing"):  # the floor shrinks with mu
        floors = sweep[sweep["method"] == method].sort_values("mu")["floor"].to_numpy()
        assert floors[0] < floors[-1]
    fig = pk.chart(at, "final certified gap and its floor against mu")
    dual_floor = next(t for t in fig["data"] if t["name"] == "dual: floor")
    assert np.all(np.diff(pk.array(dual_floor["y"])) > 0)  # mu ascending on the x axis


def test_light_fit_button():
    at = pk.loaded("robust_mtl")
    n_charts = len(pk.specs(at))
    at.button(key="run_light_fit").click().run()
    pk.ok(at)
    assert len(pk.specs(at)) == n_charts + 1
    assert any("follow each task's own noise" in c.value for c in at.caption)


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
    at = AppTest.from_string(script, default_timeout=pk.TIMEOUT)
    at.run()
    _small(at)
    good = pk.metrics(at)["primal"]
    at.session_state["break_it"] = True
    at.select_slider(key="lam").set_value(2.0).run()
    assert not at.exception
    assert any("gamma must be > 0" in e.value for e in at.error)
    assert pk.metrics(at)["primal"] == good
    assert any("last successful run" in c.value for c in at.caption)


@pytest.mark.parametrize("p", [1, float("inf")])
def test_real_data_page_and_p_switch(p):
    at = pk.loaded("robust_mtl")
    at.selectbox(key="dataset").set_value("diabetes").run()
    _converged(at)
    assert "rank of W" in pk.metrics(at)
    heat = pk.chart(at, "learned W")
    assert heat["data"][0]["y"][:3] == ["age", "sex", "bmi"]
    at.slider(key="m").set_value(4).run()
    at.selectbox(key="p").set_value(p).run()
    _converged(at)
    m = pk.metrics(at)
    assert m["loss norm p"] == ("1" if p == 1 else "∞")


def test_page_defaults_recover_the_planted_rows_and_rank_on_one_colour_scale():
    at = pk.loaded("robust_mtl")
    m = pk.metrics(at)
    # the default temporal data: 9 active features of 30, rank 3
    assert m["selected features"] == "9 of 30"
    assert m["true features found"] == "9 of 9"
    assert m["rank of W (true)"] == "3 (3)"
    learned = pk.chart(at, "learned W")["data"][0]
    true = pk.chart(at, "generator's W_true")["data"][0]
    assert learned["zmax"] == true["zmax"] and learned["zmin"] == true["zmin"]
    assert any("What to look for" in md.value for md in at.markdown)
