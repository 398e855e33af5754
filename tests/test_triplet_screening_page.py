"""The safe triplet screening page headless (Streamlit AppTest): its own panels and controls."""

from __future__ import annotations

import numpy as np
import pagekit as pk
import pytest
from streamlit.testing.v1 import AppTest


def _table(at: AppTest, column: str):
    """The first dataframe on the page that has ``column``."""
    for df in at.dataframe:
        if column in df.value.columns:
            return df.value
    raise AssertionError(f"no table with a {column!r} column")


def _int(s: str) -> int:
    return int(s.replace(",", ""))


@pytest.fixture
def page() -> AppTest:
    """A fresh page per test: a test that moves a control never changes what another
    test sees, in any order."""
    # the page's default: back-off off, so the screening sets show
    at = pk.model_page("triplet_screening")
    at.run()
    pk.ok(at)
    return at


def test_default_page_screens_and_the_back_off_is_a_choice():
    # at the page's defaults the screening sets show (back-off off, said in one line)
    at = pk.loaded("triplet_screening")
    m = pk.metrics(at)
    assert float(m["screening rate"].rstrip("%")) > 50
    assert _int(m["screened into L̂"]) > 0 and _int(m["screened into R̂"]) > 0
    assert any(c.value.startswith("Back-off off (this page's default)") for c in at.caption)
    cnt = pk.chart(at, "triplet status per iteration")
    last = {t["name"].replace("<br>", " "): pk.array(t["y"]).astype(float)[-1]
            for t in cnt["data"]}
    assert last["screened into L̂ (loss linear, α = 1)"] > 0
    assert last["screened into R̂ (zero loss, α = 0)"] > 0
    assert any("What to look for" in md.value for md in at.markdown)
    # the solver's default (back-off on) skips the rounds on this small problem, and says so
    at.toggle(key="backoff").set_value(True).run()
    pk.ok(at)
    assert any(c.value.startswith("Back-off on: screening rounds") and "skipped" in c.value
               for c in at.caption)
    assert pk.metrics(at)["screening rate"] == "0.0%"


def test_structure_panel_statuses_counts_and_radii(page):
    m = pk.metrics(page)
    nL, nR, act = (_int(m[k]) for k in ("screened into L̂", "screened into R̂", "still active"))
    assert nL + nR + act == 4410  # the default synthetic problem (n=90, k=7)
    assert nL > 0 and nR > 0
    assert float(m["screening rate"].rstrip("%")) / 100 == pytest.approx((nL + nR) / 4410,
                                                                         abs=1e-3)
    assert float(m["relative gap"]) <= 1e-9
    assert int(m["iterations"]) >= 10  # at least one dynamic screening round
    # the triplet map: class points plus capped triplet segments per status
    emb = pk.chart(page, "triplets under the learned metric")
    names = [t.get("name", "") for t in emb["data"]]
    assert sum(n.startswith("class ") for n in names) == 3
    for label in ("screened into L̂", "screened into R̂", "still active"):
        assert any(n.startswith(label) for n in names), label
    segs = [t for t in emb["data"] if t.get("mode") == "lines"]
    # each segment is (anchor, end, NaN): at most 30 triplets per status
    assert segs and all(np.isnan(pk.array(t["x"]).astype(float)).sum() <= 30 for t in segs)
    # the counts per iteration add up to the triplet count and end at the metrics
    cnt = pk.chart(page, "triplet status per iteration")
    ys = {t["name"].replace("<br>", " "): pk.array(t["y"]).astype(float) for t in cnt["data"]}
    total = sum(ys.values())
    assert np.allclose(total, 4410)
    assert ys[next(k for k in ys if k.startswith("screened into L̂"))][-1] == nL
    # radii: the certified radius per iteration and one marker series per sphere
    rad = pk.chart(page, "sphere radii per screening round")
    rnames = [t["name"].replace("<br>", " ") for t in rad["data"]]
    assert rnames[0].startswith("√(2 gap / λ)") and "RRPB radius" in rnames
    assert "PGB radius" in rnames
    assert any("round" in e.label for e in page.expander)
    rounds = _table(page, "new into L̂")
    assert list(rounds["sphere"][:2]) == ["rrpb", "pgb"] and rounds["iteration"].max() >= 10
    assert rounds["total L̂"].iloc[-1] == nL and rounds["total R̂"].iloc[-1] == nR


def test_regularisation_path_rates_and_range_heatmap(page):
    page.button(key="run_path").click().run()
    pk.ok(page)
    rates = pk.chart(page, "regularisation-path screening rate")
    panels = {a["text"] for a in rates["layout"].get("annotations", [])}
    assert {"sphere rule", "linear rule"} <= panels
    spheres = {t["name"] for t in rates["data"] if t.get("mode") == "lines"}
    assert {"GB", "PGB", "DGB", "CDGB", "RPB", "RRPB"} <= spheres
    for t in rates["data"]:
        y = pk.array(t["y"]).astype(float)
        y = y[np.isfinite(y)]
        assert np.all((y >= 0) & (y <= 1))
    heat = pk.chart(page, "range-based screening rate")
    Z = pk.array(heat["data"][0]["z"]).astype(float)
    assert Z.shape[0] == Z.shape[1] > 10
    assert np.all((Z >= 0) & (Z <= 1)) and np.mean(np.diag(Z)[1:]) > 0.5
    caps = " ".join(c.value for c in page.caption)
    assert "λ from λ_max to" in caps and "Identical curves" in caps
    # the grid ends at the page's λ (0.01 λ_max) exactly, not at the ratio's point above it
    assert "to 0.01 λ_max (the end of the grid)" in caps
    assert "each λ started from the previous λ's solution" in caps
    # the page's other reruns keep the solve (no zero-iteration re-solve)
    assert int(pk.metrics(page)["iterations"]) >= 10


def test_regularisation_path_with_the_secant_start(page):
    page.selectbox(key="path_warm").set_value("secant").run()
    page.button(key="run_path").click().run()
    pk.ok(page)
    pk.chart(page, "regularisation-path screening rate")
    caps = " ".join(c.value for c in page.caption)
    assert "each λ started from the path extrapolated in log λ (secant)" in caps, caps[-600:]


def test_regularisation_path_in_the_papers_practical_setting(page):
    from explorer.models.triplet_screening.page import PATH_SETTINGS

    practical = next(k for k, v in PATH_SETTINGS.items() if v is not None)
    page.radio(key="path_setting").set_value(practical).run()
    assert page.select_slider(key="path_ratio").disabled
    page.button(key="run_path").click().run()
    pk.ok(page)
    pk.chart(page, "regularisation-path screening rate")
    caps = " ".join(c.value for c in page.caption)
    assert "active-set method (working set refreshed every 10 iterations), ratio 0.99" in caps
    n = int(caps.split(" λ from λ_max to ")[0].split()[-1])
    assert n > 10
    page.radio(key="path_setting").set_value("sidebar's solver").run()
    assert not page.select_slider(key="path_ratio").disabled


def test_comparison_variants_and_the_path_table(page):
    page.button(key="run_comparison").click().run()
    pk.ok(page)
    table = _table(page, "converged")
    labels = ["naive", "screened (RRPB+PGB)", "screened, no back-off (RRPB+PGB)", "active set",
              "active set + screening (RRPB+PGB)"]
    assert list(table["method"]) == labels
    assert table["converged"].all()
    p = np.asarray(table["primal"], dtype=float)
    assert np.all(np.abs(p - p[0]) <= 1e-8 * abs(p[0]))
    extra = _table(page, "triplet visits")
    assert list(extra["method"]) == labels
    assert extra["screening rate"][0] == 0 and extra["screening rate"][2] > 0.5
    # the default screened solve screens, or says why it backed off
    assert extra["screening rate"][1] > 0.5 or "screening skipped" in extra["notes"][1]
    assert (extra["screening [ms]"][2] > 0) and extra["screening [ms]"][0] == 0
    page.button(key="run_path_comparison").click().run()
    pk.ok(page)
    path = _table(page, "visits: naive / this")
    assert list(path["method"]) == labels
    n = path["λ"][0]
    assert len(set(path["λ"])) == 1 and n > 10
    assert (path["max rel. obj. diff vs naive"] <= 1e-6).all()
    skipped = path["λ without path screening (back-off)"]
    # screening removes per-triplet work; with the back-off the path pass runs only at
    # the λ where it is predicted to pay, and the table counts the others
    assert path["visits: naive / this"][2] > 1.0 and skipped[2] == 0
    assert skipped[0] == 0 and 0 <= skipped[1] <= n - 1
    assert path["visits: naive / this"][1] > 1.0 or skipped[1] == n - 1
    assert pk.chart(page, "seconds per λ along the path")
    assert pk.chart(page, "time per λ relative to naive")
    assert any("1.16–1.21× faster" in c.value for c in page.caption)


def test_a_lambda_move_resolves_warm_and_screens_at_iteration_zero(page):
    before = pk.metrics(page)["primal"]
    page.select_slider(key="lam_rel").set_value(0.005).run()
    pk.ok(page)
    assert pk.metrics(page)["primal"] != before
    assert any("warm start" in m.value for m in page.markdown if "start]" in m.value)
    cnt = pk.chart(page, "triplet status per iteration")
    first = sum(pk.array(t["y"])[0] for t in cnt["data"] if t["name"].startswith("screened"))
    assert first > 0  # RRPB from the previous lambda screened before the first step
    rad = pk.chart(page, "sphere radii per screening round")
    rrpb = next(t for t in rad["data"] if t["name"] == "RRPB radius")
    assert pk.array(rrpb["x"])[0] == 0


def test_bad_configuration_is_an_error_message():
    at = pk.model_page("triplet_screening")
    at.run()
    at.selectbox(key="loss").set_value("hinge").run()
    pk.ok(at)
    at.selectbox(key="method").set_value("dual").run()
    at.toggle(key="active_set").set_value(True).run()
    assert not at.exception
    assert any("active_set=True needs method='pgd'" in e.value for e in at.error)
    assert any("last successful run" in c.value for c in at.caption)


def test_diagonal_metric_and_cvxpy_reference():
    at = pk.model_page("triplet_screening")
    at.run()
    at.toggle(key="diagonal").set_value(True).run()
    pk.ok(at)
    emb = pk.chart(at, "triplets under the learned metric")
    assert "of tr M" in emb["layout"]["xaxis"]["title"]["text"]
    at.button(key="run_reference").click().run()
    pk.ok(at)
    m = pk.metrics(at)
    assert m["inside [dual, primal]"] == "yes"
    assert float(m["relative difference"]) <= 1e-6
