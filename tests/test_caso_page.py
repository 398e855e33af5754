"""The convex ASO dashboard page headless (Streamlit AppTest): its own panels and controls."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

TIMEOUT = 120


def _page() -> AppTest:
    return AppTest.from_string("from explorer.registry import get\nget('caso').render_page()",
                               default_timeout=TIMEOUT)


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def _title(spec: dict) -> str:
    title = spec.get("layout", {}).get("title", {})
    return title.get("text", "") if isinstance(title, dict) else str(title or "")


def _arr(v) -> np.ndarray:
    """A plotly data array: a list, or a typed array ``{"dtype", "bdata", "shape"}``."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            dims = shape if isinstance(shape, list) else [int(x) for x in str(shape).split(",")]
            a = a.reshape(dims)
        return a.astype(float)
    return np.asarray(v, dtype=float)


def _chart(at: AppTest, prefix: str) -> dict:
    found = [s for s in _specs(at) if _title(s).startswith(prefix)]
    assert found, f"no chart titled {prefix!r}; have {[_title(s) for s in _specs(at)]}"
    return found[0]


def _subplot_titles(at: AppTest) -> list[str]:
    return [a.get("text", "") for s in _specs(at)
            for a in s.get("layout", {}).get("annotations", [])]


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def page() -> AppTest:
    at = _page()
    at.run()
    _ok(at)
    return at


def test_structure_panel_spectra_similarities_subspace_and_m_step(page):
    m = _metrics(page)
    assert m["dim Θ = round(h)"] == "2" and m["tr M"] == "2"
    assert float(m["max angle to true Θ"].rstrip("°")) < 30.0
    assert float(m["rel. error of U"]) < 1.0
    spec_m = _chart(page, "eigenvalues of M")
    gamma = _arr(spec_m["data"][0]["y"])
    assert gamma.size == 20 and np.isclose(np.nansum(gamma), 2.0)
    # h is marked: a vertical line after the h-th eigenvalue
    assert any(sh.get("x0") == 2.5 for sh in spec_m["layout"].get("shapes", []))
    assert _chart(page, "singular values of U")["data"][0]["type"] == "bar"
    learned = _chart(page, "task similarity: cosine of the learned u_l (corr. with true")
    S = _arr(learned["data"][0]["z"])
    assert S.shape == (20, 20) and np.allclose(np.diag(S), 1.0) and np.allclose(S, S.T)
    _chart(page, "true task similarity")
    theta = _chart(page, "shared subspace Θ (2 × 20")
    T = _arr(theta["data"][0]["z"])
    assert np.allclose(T @ T.T, np.eye(2), atol=1e-8)  # orthonormal rows
    assert _chart(page, "principal angles")["data"][0]["type"] == "bar"
    _chart(page, "each task's weight inside the shared subspace")
    _chart(page, "M-step: the parametric solution, root t*")
    assert "Γ(t) = Σ_i γ_i(t) and the level h" in _subplot_titles(page)


def test_subspace_and_similarities_follow_h_alpha_and_eta(page):
    sim0 = _arr(_chart(page, "task similarity: cosine of the learned")["data"][0]["z"])
    page.slider(key="h").set_value(3.25).run()  # fractional h
    _ok(page)
    m = _metrics(page)
    assert m["dim Θ = round(h)"] == "3" and m["tr M"] == "3.25"
    assert any("warm start" in x.value for x in page.markdown if "start]" in x.value)
    _chart(page, "shared subspace Θ (3 × 20")
    gamma = _arr(_chart(page, "eigenvalues of M")["data"][0]["y"])
    assert np.isclose(np.nansum(gamma), 3.25)
    assert np.sum((gamma > 1e-9) & (gamma < 1 - 1e-9)) >= 1  # a fractional eigenvalue
    page.select_slider(key="alpha").set_value(10.0).run()
    _ok(page)
    sim1 = _arr(_chart(page, "task similarity: cosine of the learned")["data"][0]["z"])
    assert sim0.shape == sim1.shape and not np.allclose(sim0, sim1)
    share_hi = float(_metrics(page)["mean share in Θ"])
    page.select_slider(key="eta").set_value(0.01).run()
    _ok(page)
    gamma = _arr(_chart(page, "eigenvalues of M")["data"][0]["y"])
    assert np.sum(gamma > 1e-9) > 4  # small eta: a soft, spread-out spectrum
    assert float(_metrics(page)["mean share in Θ"]) != share_hi


def test_comparison_apg_bcd_objective_and_gap_against_time():
    at = _page()
    at.run()
    at.button(key="run_comparison").click().run()
    _ok(at)
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
    assert "gap vs time" in [_title(s) for s in _specs(at)]
    assert any("did not reach 1e-6 on the hinge loss" in c.value for c in at.caption)


def test_bad_configuration_is_an_error_message_and_the_last_result_stays():
    at = _page()
    at.run()
    good = _metrics(at)["primal"]
    at.slider(key="h").set_value(25.25).run()  # h > d = 20
    assert not at.exception
    assert any("h must lie in (0, 20]" in e.value for e in at.error)
    assert _metrics(at)["primal"] == good
    assert any("last successful run" in c.value for c in at.caption)


def test_digits_hinge_and_the_cvxpy_reference():
    at = _page()
    at.run()
    at.selectbox(key="dataset").set_value("digits").run()
    at.selectbox(key="loss").set_value("hinge").run()
    _ok(at)
    m = _metrics(at)
    assert m["tasks"] == "10"
    sim = _chart(at, "task similarity: cosine of the learned u_l")
    assert list(sim["data"][0]["x"]) == [str(k) for k in range(10)]
    _chart(at, "shared subspace Θ (2 × ")
    at.slider(key="d").set_value(6).run()
    _ok(at)
    at.button(key="run_reference").click().run()
    _ok(at)
    m = _metrics(at)
    assert m["inside [dual, primal]"] == "yes"
    assert float(m["relative difference"]) <= 1e-6
