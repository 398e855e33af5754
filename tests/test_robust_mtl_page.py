"""The robust temporal multitask page headless (Streamlit AppTest): its own panels."""

from __future__ import annotations

import numpy as np
import pagekit as pk
from streamlit.testing.v1 import AppTest

VARIANTS = ["dual ascent (paper)", "pure smoothing (baseline)", "dual ascent + restart",
            "pure smoothing + restart"]


def _small(at: AppTest) -> None:
    for key, value in (("m", 5), ("d", 8), ("n", 15)):
        at.slider(key=key).set_value(value).run()


def test_structure_panel_and_an_honest_floor_at_the_default_mu():
    at = pk.loaded("robust_mtl")
    m = pk.metrics(at)
    for label in ("selected features", "true features found", "rank of W (true)",
                  "floor (price of μ)", "smoothed problem's gap", "floor reached"):
        assert label in m, label
    # the default mu puts the floor below tol: the default run converges, certified
    assert m["floor reached"] == "no"
    assert float(m["relative gap"]) <= 1e-6
    assert float(m["floor / max(1, |J|)"]) <= 1e-6
    # W as features x time (12 tasks, 30 features), its spectrum, residuals vs noise, floor
    heat = pk.chart(at, "learned W")
    assert pk.array(heat["data"][0]["z"]).shape == (30, 12)
    assert heat["data"][0]["x"][0] == "t1" and heat["data"][0]["x"][-1] == "t12"
    assert pk.chart(at, "generator's W_true")
    assert len(pk.chart(at, "singular values of W")["data"]) == 2
    res = pk.chart(at, "per-task residual norms")
    assert {"fitted", "noise"} <= {t["name"].split()[0] for t in res["data"]}
    floor = pk.chart(at, "certified gap = smoothed gap + floor")
    assert [t["name"] for t in floor["data"]][:3] == ["certified gap", "smoothed problem's gap",
                                                      "floor (price of mu)"]
    assert pk.chart(at, "inner work and momentum")
    captions = " ".join(c.value for c in at.caption)
    assert "correlation" in captions and "λdμ/4" in captions
    # light weights on the same data: the residuals follow the noise
    n_charts = len(pk.specs(at))
    at.button(key="run_light_fit").click().run()
    pk.ok(at)
    assert len(pk.specs(at)) == n_charts + 1
    assert any("follow each task's own noise" in c.value for c in at.caption)
    # a larger mu: the run stops at its floor, and the page says so
    at.select_slider(key="mu").set_value(1e-3).run()
    pk.ok(at)
    m = pk.metrics(at)
    assert m["floor reached"] == "yes"
    assert float(m["floor / max(1, |J|)"]) > 1e-6
    assert any("smoothing floor" in w.value for w in at.warning)
    assert "warm start" in " ".join(x.value for x in at.markdown if "start]" in x.value)


def test_comparison_variants_and_the_mu_sweep():
    at = pk.loaded("robust_mtl")
    _small(at)
    at.select_slider(key="mu").set_value(1e-3).run()
    at.number_input(key="max_iter").set_value(5000).run()
    at.button(key="run_comparison").click().run()
    pk.ok(at)
    kit, ours = at.dataframe[0].value, at.dataframe[1].value
    assert list(kit["method"]) == VARIANTS
    assert list(ours["method"]) == VARIANTS
    assert (ours["floor"] >= 0).all()
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


def test_real_data_page_and_p_switch():
    at = pk.loaded("robust_mtl")
    at.selectbox(key="dataset").set_value("diabetes").run()
    pk.ok(at)
    assert "rank of W" in pk.metrics(at)
    heat = pk.chart(at, "learned W")
    assert heat["data"][0]["y"][:3] == ["age", "sex", "bmi"]
    at.slider(key="m").set_value(4).run()
    at.select_slider(key="mu").set_value(1e-3).run()
    at.number_input(key="max_iter").set_value(5000).run()
    at.selectbox(key="p").set_value(1).run()
    pk.ok(at)
    m = pk.metrics(at)
    assert m["loss norm p"] == "1"
    assert int(m["iterations"]) >= 1
