"""The MT-MKL dashboard page headless (Streamlit AppTest): its own panels and controls."""

from __future__ import annotations

import pagekit as pk
import pytest
from streamlit.testing.v1 import AppTest


@pytest.fixture
def page() -> AppTest:
    """A fresh page per test: a test that moves a control never changes what another
    test sees, in any order."""
    return pk.loaded("mtmkl")


def test_structure_panel_tree_similarities_and_theta_history(page):
    titles = pk.titles(page)
    tree = [t for t in titles if t.startswith("learned node weights")]
    assert tree and "p = 2" in tree[0] and "‖θ‖_2 = 1" in tree[0] and "63/63" in tree[0]
    assert any(t.startswith("learned similarity Σ θ_m G_m, corr. with true") for t in titles)
    assert any(t.startswith("true similarity") for t in titles)
    assert "node weights over the iterations" in titles
    m = pk.metrics(page)
    assert float(m["corr(learned, true similarity)"]) > 0.6
    assert 0.55 < float(m["mean test AUC (this run)"]) < 0.75
    assert float(m["‖θ‖_2 (p on the slider)"]) == pytest.approx(1.0, abs=1e-3)
    assert float(m["Σθ (≠ 1 unless p = 1)"]) > 1.0
    captions = " ".join(c.value for c in page.caption)
    assert "σ = 20 every method is near chance" in captions
    assert "theta (p = 2" in captions


def test_comparison_runs_baselines_and_solver_variants(page):
    page.button(key="run_baselines").click().run()
    pk.ok(page)
    table = page.dataframe[-1].value
    assert list(table["method"]) == ["Union", "Individual", "Vanilla MTL", "MT-MKL p=1",
                                     "MT-MKL p=2 (slider)", "MT-MKL p=3"]
    assert table["converged"].all()
    auc = dict(zip(table["method"], table["mean AUC"], strict=True))
    assert auc["Individual"] < auc["Union"] < auc["MT-MKL p=2 (slider)"]
    titles = pk.titles(page)
    assert "mean ROC on held-out data" in titles and "AUC per task (◆ mean)" in titles
    assert "mean ROC minus Union's" in titles
    page.button(key="run_comparison").click().run()
    pk.ok(page)
    variants = page.dataframe[0].value
    assert list(variants["method"]) == ["Algorithm E.1 (interleaved θ-step)",
                                        "Algorithm 1 (alternating, exact W-step)",
                                        "Algorithm 1 with a projected Newton W-step"]
    assert variants["converged"].all()
    p0, p1, p2 = variants["primal"]
    assert abs(p0 - p1) <= 1e-5 * max(1.0, abs(p0))
    assert abs(p0 - p2) <= 1e-5 * max(1.0, abs(p0))


def test_a_control_change_resolves_warm_and_p_is_shown_with_the_weights(page):
    page.slider(key="p").set_value(3.0).run()
    pk.ok(page)
    assert any("warm start" in m.value for m in page.markdown if "start]" in m.value)
    tree = next(t for t in pk.titles(page) if t.startswith("learned node weights"))
    assert "p = 3" in tree and "‖θ‖_3 = 1" in tree
    assert "‖θ‖_3 (p on the slider)" in pk.metrics(page)


def test_flips_above_d_cannot_be_chosen_and_are_explained():
    # issue 14: flips <= d is enforced by the control (it used to be an error after the fact)
    at = pk.model_page("mtmkl")
    at.run()
    at.slider(key="d").set_value(2).run()  # 5 sign flips per edge would not fit
    pk.ok(at)
    assert at.slider(key="flips").max == 2 and at.slider(key="flips").value == 2
    assert any("flips" in c.value and "d = 2" in c.value for c in at.sidebar.caption)


def test_digits_hierarchy_and_single_similarity_baselines():
    at = pk.model_page("mtmkl")
    at.run()
    at.selectbox(key="dataset").set_value("digits").run()
    pk.ok(at)
    tree = next(t for t in pk.titles(at) if t.startswith("learned node weights"))
    assert "/19 non-zero" in tree
    assert any(t.startswith("reference similarity") for t in pk.titles(at))
    assert any("negative transfer" in c.value for c in at.caption)
    at.selectbox(key="variant").set_value("union").run()
    pk.ok(at)
    assert any("no node weights" in i.value for i in at.info)
    assert pk.metrics(at)["corr(learned, true similarity)"] == "—"


def test_cvxpy_reference_at_a_small_size_lies_inside_the_certificate():
    at = pk.model_page("mtmkl")
    at.run()
    at.slider(key="depth").set_value(3).run()
    pk.ok(at)
    at.button(key="run_reference").click().run()
    pk.ok(at)
    m = pk.metrics(at)
    assert m["inside [dual, primal]"] == "yes"
    assert float(m["relative difference"]) <= 1e-5
