"""The convex ASO dashboard page headless (Streamlit AppTest): its own panels and controls."""

from __future__ import annotations

import numpy as np
import pagekit as pk
import pytest
from streamlit.testing.v1 import AppTest


def _subplot_titles(at: AppTest) -> list[str]:
    return [a.get("text", "").replace("<br>", " ") for s in pk.specs(at)
            for a in s.get("layout", {}).get("annotations", [])]


@pytest.fixture
def page() -> AppTest:
    """A fresh page per test: a test that moves a control never changes what another
    test sees, in any order."""
    return pk.loaded("caso")


def test_structure_panel_spectra_similarities_subspace_and_m_step(page):
    m = pk.metrics(page)
    assert m["dim Θ = round(h)"] == "2" and m["tr M"] == "2"
    assert float(m["max angle to true Θ"].rstrip("°")) < 30.0
    assert float(m["rel. error of U"]) < 1.0
    spec_m = pk.chart(page, "eigenvalues of M")
    gamma = pk.array(spec_m["data"][0]["y"])
    assert gamma.size == 20 and np.isclose(np.nansum(gamma), 2.0)
    # h is marked: a vertical line after the h-th eigenvalue
    assert any(sh.get("x0") == 2.5 for sh in spec_m["layout"].get("shapes", []))
    assert pk.chart(page, "singular values of U")["data"][0]["type"] == "bar"
    learned = pk.chart(page, "task similarity: cosine of the learned u_l (correlation with")
    S = pk.array(learned["data"][0]["z"])
    assert S.shape == (20, 20) and np.allclose(np.diag(S), 1.0) and np.allclose(S, S.T)
    pk.chart(page, "true task similarity")
    theta = pk.chart(page, "shared subspace Θ (2 × 20")
    T = pk.array(theta["data"][0]["z"])
    assert np.allclose(T @ T.T, np.eye(2), atol=1e-8)  # orthonormal rows
    assert pk.chart(page, "principal angles")["data"][0]["type"] == "bar"
    pk.chart(page, "each task's weight inside the shared subspace")
    pk.chart(page, "M-step: the parametric solution, root t*")
    assert "Γ(t) = Σ_i γ_i(t) and the level h" in _subplot_titles(page)


def test_subspace_and_similarities_follow_h_alpha_and_eta(page):
    sim0 = pk.array(pk.chart(page, "task similarity: cosine of the learned")["data"][0]["z"])
    page.slider(key="h").set_value(3.25).run()  # fractional h
    pk.ok(page)
    m = pk.metrics(page)
    assert m["dim Θ = round(h)"] == "3" and m["tr M"] == "3.25"
    assert any("warm start" in x.value for x in page.markdown if "start]" in x.value)
    pk.chart(page, "shared subspace Θ (3 × 20")
    gamma = pk.array(pk.chart(page, "eigenvalues of M")["data"][0]["y"])
    assert np.isclose(np.nansum(gamma), 3.25)
    assert np.sum((gamma > 1e-9) & (gamma < 1 - 1e-9)) >= 1  # a fractional eigenvalue
    page.select_slider(key="alpha").set_value(10.0).run()
    pk.ok(page)
    sim1 = pk.array(pk.chart(page, "task similarity: cosine of the learned")["data"][0]["z"])
    assert sim0.shape == sim1.shape and not np.allclose(sim0, sim1)
    share_hi = float(pk.metrics(page)["mean share in Θ"])
    page.select_slider(key="eta").set_value(0.01).run()
    pk.ok(page)
    gamma = pk.array(pk.chart(page, "eigenvalues of M")["data"][0]["y"])
    assert np.sum(gamma > 1e-9) > 4  # small eta: a soft, spread-out spectrum
    assert float(pk.metrics(page)["mean share in Θ"]) != share_hi


def test_comparison_apg_bcd_objective_and_gap_against_time():
    at = pk.model_page("caso")
    at.run()
    at.button(key="run_comparison").click().run()
    pk.ok(at)
    table = at.dataframe[0].value
    assert list(table["method"]) == ["APG (Algorithm 1)", "APG + adaptive restart",
                                     "BCD (Algorithm 2)"]
    assert table["converged"].all()
    p = np.asarray(table["primal"], dtype=float)
    assert np.ptp(p) <= 1e-5 * abs(p[0])
    times = at.dataframe[1].value
    assert list(times["method"]) == list(table["method"])
    iters = dict(zip(times["method"], times["iters to 1e-06"], strict=True))
    assert iters["BCD (Algorithm 2)"] < iters["APG (Algorithm 1)"]
    subtitles = _subplot_titles(at)
    assert "objective vs time" in subtitles and "P(U_k) − best lower bound vs time" in subtitles
    assert "gap vs time" in [pk.title(s) for s in pk.specs(at)]
    assert any("did not reach 1e-6 on the hinge loss" in c.value for c in at.caption)


def test_h_above_d_cannot_be_chosen_and_is_explained():
    # issue 14: h <= d is enforced by the control (it used to be an error after the fact)
    at = pk.model_page("caso")
    at.run()
    at.slider(key="h").set_value(2.0).run()
    at.slider(key="d").set_value(3).run()
    pk.ok(at)
    assert at.slider(key="h").max == 3.0
    at.slider(key="d").set_value(2).run()  # h = 2 still fits
    pk.ok(at)
    assert at.slider(key="h").max == 2.0 and at.slider(key="h").value == 2.0
    assert any("0 < h ≤ d = 2" in c.value for c in at.sidebar.caption)


def test_digits_hinge_and_the_cvxpy_reference():
    at = pk.model_page("caso")
    at.run()
    at.selectbox(key="dataset").set_value("digits").run()
    at.selectbox(key="loss").set_value("hinge").run()
    pk.ok(at)
    m = pk.metrics(at)
    assert m["tasks"] == "10"
    sim = pk.chart(at, "task similarity: cosine of the learned u_l")
    assert list(sim["data"][0]["x"]) == [str(k) for k in range(10)]
    pk.chart(at, "shared subspace Θ (2 × ")
    at.slider(key="d").set_value(6).run()
    pk.ok(at)
    at.button(key="run_reference").click().run()
    pk.ok(at)
    m = pk.metrics(at)
    assert m["inside [dual, primal]"] == "yes"
    assert float(m["relative difference"]) <= 1e-6
