"""The MT-MKL dashboard page headless (Streamlit AppTest): its own panels and controls."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

TIMEOUT = 120


def _page() -> AppTest:
    return AppTest.from_string("from explorer.registry import get\nget('mtmkl').render_page()",
                               default_timeout=TIMEOUT)


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _titles(at: AppTest) -> list[str]:
    out = []
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec.get("layout", {}).get("title", {})
        out.append(title.get("text", "") if isinstance(title, dict) else str(title))
    return out


def _ok(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


@pytest.fixture(scope="module")
def page() -> AppTest:
    at = _page()
    at.run()
    _ok(at)
    return at


def test_structure_panel_tree_similarities_and_theta_history(page):
    titles = _titles(page)
    tree = [t for t in titles if t.startswith("learned node weights")]
    assert tree and "p = 2" in tree[0] and "‖θ‖_2 = 1" in tree[0] and "63/63" in tree[0]
    assert any(t.startswith("learned similarity Σ θ_m G_m, corr. with true") for t in titles)
    assert any(t.startswith("true similarity") for t in titles)
    assert "node weights over the iterations" in titles
    m = _metrics(page)
    assert float(m["corr(learned, true similarity)"]) > 0.6
    assert 0.55 < float(m["mean test AUC (this run)"]) < 0.75
    assert float(m["‖θ‖_2 (p on the slider)"]) == pytest.approx(1.0, abs=1e-3)
    assert float(m["Σθ (≠ 1 unless p = 1)"]) > 1.0
    captions = " ".join(c.value for c in page.caption)
    assert "σ = 20 every method is near chance" in captions
    assert "theta (p = 2" in captions


def test_comparison_runs_baselines_and_solver_variants(page):
    page.button(key="run_baselines").click().run()
    _ok(page)
    table = page.dataframe[-1].value
    assert list(table["method"]) == ["Union", "Individual", "Vanilla MTL", "MT-MKL p=1",
                                     "MT-MKL p=2 (slider)", "MT-MKL p=3"]
    assert table["converged"].all()
    auc = dict(zip(table["method"], table["mean AUC"], strict=True))
    assert auc["Individual"] < auc["Union"] < auc["MT-MKL p=2 (slider)"]
    titles = _titles(page)
    assert "mean ROC on held-out data" in titles and "AUC per task (◆ mean)" in titles
    assert "mean ROC minus Union's" in titles
    page.button(key="run_comparison").click().run()
    _ok(page)
    variants = page.dataframe[0].value
    assert list(variants["method"]) == ["Algorithm E.1 (interleaved θ-step)",
                                        "Algorithm 1 (alternating, exact W-step)"]
    assert variants["converged"].all()
    p0, p1 = variants["primal"]
    assert abs(p0 - p1) <= 1e-5 * max(1.0, abs(p0))


def test_a_control_change_resolves_warm_and_p_is_shown_with_the_weights(page):
    page.slider(key="p").set_value(3.0).run()
    _ok(page)
    assert any("warm start" in m.value for m in page.markdown if "start]" in m.value)
    tree = next(t for t in _titles(page) if t.startswith("learned node weights"))
    assert "p = 3" in tree and "‖θ‖_3 = 1" in tree
    assert "‖θ‖_3 (p on the slider)" in _metrics(page)


def test_bad_configuration_is_an_error_message():
    at = _page()
    at.run()
    at.slider(key="d").set_value(2).run()  # 5 sign flips per edge in 2 dimensions
    assert not at.exception
    assert any("flips" in e.value for e in at.error)


def test_digits_hierarchy_and_single_similarity_baselines():
    at = _page()
    at.run()
    at.selectbox(key="dataset").set_value("digits").run()
    _ok(at)
    tree = next(t for t in _titles(at) if t.startswith("learned node weights"))
    assert "/19 non-zero" in tree
    assert any(t.startswith("reference similarity") for t in _titles(at))
    assert any("negative transfer" in c.value for c in at.caption)
    at.selectbox(key="variant").set_value("union").run()
    _ok(at)
    assert any("no node weights" in i.value for i in at.info)
    assert _metrics(at)["corr(learned, true similarity)"] == "—"


def test_cvxpy_reference_at_a_small_size_lies_inside_the_certificate():
    at = _page()
    at.run()
    at.slider(key="depth").set_value(3).run()
    _ok(at)
    at.button(key="run_reference").click().run()
    _ok(at)
    m = _metrics(at)
    assert m["inside [dual, primal]"] == "yes"
    assert float(m["relative difference"]) <= 1e-5
