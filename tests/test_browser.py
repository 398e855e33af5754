"""Real-browser smoke test: the dashboard as `dualscope app` starts it, driven by headless
Chromium.

Loads the WW-SVM page, moves the C slider with the keyboard, and checks that
the solver reran (metrics and the convergence chart's data changed), that the URL
query now carries the new C, that Back restores the previous C, and that a bad URL
value shows a message. Needs a Chromium: the system's (Debian ``chromium``, installed
by ``.ci/run`` when missing), ``$DUALSCOPE_CHROMIUM``, or playwright's own; without
one the test FAILS with a one-line instruction (never skips).
"""

from __future__ import annotations

import pytest
from browserkit import chromium

from explorer.browserbench import serve

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    # no background warm-up: the test process shares the machine with the rest of the suite
    with serve({"DUALSCOPE_WARMUP": "0"}) as url:
        yield url


def _wait_idle(page, timeout=90_000):
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']",
                           timeout=timeout)


def _metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']", has_text=label).first
    return box.locator("[data-testid='stMetricValue']").inner_text()


def _chart_signature(page) -> str:
    # y values of the first trace of the first plotly chart (the convergence panel)
    return page.evaluate(
        "() => { const d = document.querySelector('.js-plotly-plot');"
        " return d && d.data ? JSON.stringify(d.data[0].y).slice(0, 400) : null; }"
    )


def test_page_loads_control_changes_chart_updates_url_follows(server):
    with chromium("tests/test_browser.py") as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        # the paper's Walrus sweeps, which warm-start (the page's default method, auto,
        # runs the interior-point method at this d*k, which starts cold)
        page.goto(server + "/wwsvm?method=walrus")
        page.wait_for_selector("[data-testid='stMetric']", timeout=120_000)
        _wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=60_000)
        assert page.locator("[data-testid='stException']").count() == 0
        before_primal = _metric(page, "primal")
        before_chart = _chart_signature(page)
        assert before_chart

        # Move the C select-slider two steps to the left with the keyboard.
        thumb = page.locator("[role='group'][aria-label='C'] input[type='range']").first
        thumb.focus()
        thumb.press("ArrowLeft")  # one notch: one rerun, so no intermediate state to race
        page.wait_for_function(
            "() => new URL(window.location.href).searchParams.has('C')", timeout=30_000)
        _wait_idle(page)
        page.wait_for_function(
            "(before) => { const d = document.querySelector('.js-plotly-plot');"
            " return d && d.data && JSON.stringify(d.data[0].y).slice(0, 400) !== before; }",
            arg=before_chart, timeout=60_000,
        )
        _wait_idle(page)
        after_primal = _metric(page, "primal")
        assert after_primal != before_primal
        assert "warm start" in page.locator("[data-testid='stMarkdown']",
                                            has_text="start").first.inner_text()
        c_value = page.evaluate("() => new URL(window.location.href).searchParams.get('C')")
        assert float(c_value) < 1.0
        assert page.locator("[data-testid='stException']").count() == 0

        # Back restores the previous setting (the URL change was a history entry).
        page.go_back()
        page.wait_for_function(
            "() => !new URL(window.location.href).searchParams.has('C')", timeout=30_000)
        page.wait_for_function(
            "() => document.querySelector(\"[role='group'][aria-label='C'] "
            "input[type='range']\")?.getAttribute('aria-valuetext') === '1'",
            timeout=60_000)
        _wait_idle(page)
        page.go_forward()
        page.wait_for_function(
            "(c) => new URL(window.location.href).searchParams.get('C') === c",
            arg=c_value, timeout=30_000)
        _wait_idle(page)

        # The shared URL restores the configuration in a fresh page.
        page2 = browser.new_page(viewport={"width": 1400, "height": 1000})
        page2.goto(page.url)
        page2.wait_for_selector("[data-testid='stMetric']", timeout=120_000)
        _wait_idle(page2)
        restored = page2.locator("[role='group'][aria-label='C'] input[type='range']").first
        assert float(restored.get_attribute("aria-valuetext")) == float(c_value)
        # solved cold in the new session: the same optimum within the tolerance
        assert float(_metric(page2, "primal")) == pytest.approx(float(after_primal),
                                                                rel=1e-5)
        # A hand-written query selects a dataset by its short name.
        page3 = browser.new_page(viewport={"width": 1400, "height": 1000})
        page3.goto(server + "/wwsvm?dataset=iris&C=0.1&tol=abc")
        page3.wait_for_selector("[data-testid='stMetric']", timeout=120_000)
        _wait_idle(page3)
        assert page3.get_by_text("scikit-learn iris: 150 samples").count() >= 1
        assert page3.locator("[data-testid='stException']").count() == 0
        # ... and a bad value is named on the page with the value used instead
        note = page3.locator("[data-testid='stAlert']", has_text="tol=abc").first
        assert "using tol = 1e-6 instead" in note.inner_text()


def test_upload_a_csv_on_the_wwsvm_page_and_read_its_certificate(server, tmp_path):
    """"your file": Playwright's set_input_files uploads a CSV; the page solves it and shows
    the certificate, equal to the solver's on the same rows; the URL names no file;
    removing the file clears the upload."""
    import numpy as np

    from solvers import wwsvm

    rng = np.random.default_rng(3)
    y = np.arange(90) % 3
    X = rng.normal(size=(90, 4)) + 2.0 * np.eye(3, 4)[y]
    species = np.array(["setosa", "versicolor", "virginica"])[y]
    path = tmp_path / "flowers.csv"
    with open(path, "w") as f:
        f.write("a,b,c,d,species\n")
        for xi, s in zip(X, species, strict=True):
            f.write(",".join(repr(float(v)) for v in xi) + f",{s}\n")
    # the upload panel standardises by default (fitted on the rows, as the CLI's --scale)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    expected = wwsvm.solve(Xs, y, C=1.0, tol=1e-6, method="auto")

    with chromium("tests/test_browser.py") as browser:
        page, sidebar = _upload_on_wwsvm(browser, server, path,
                                         "file flowers.csv: 90 samples, 4 features, 3 classes")
        _wait_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0
        primal = float(_metric(page, "primal"))
        dual = float(_metric(page, "dual (lower bound)"))
        rel = float(_metric(page, "relative gap"))
        assert dual <= primal and 0 <= rel <= 1e-6
        assert primal == pytest.approx(expected.primal, rel=1e-5)
        assert page.get_by_text("does not carry", exact=False).count() >= 1
        dataset = page.evaluate(
            "() => new URL(window.location.href).searchParams.get('dataset')")
        assert dataset in (None, "blobs", "digits", "wine", "iris")
        # removing the file from the uploader clears the upload (and its temporary copy)
        sidebar.locator("[data-testid='stFileChipDeleteBtn']").first.click()
        page.get_by_text("Choose a data file in the sidebar").first.wait_for(timeout=60_000)
        assert page.locator("[data-testid='stException']").count() == 0


def _upload_on_wwsvm(browser, server: str, path, shown: str):
    """The WW-SVM page with ``path`` uploaded as "your file", once ``shown`` is on it;
    returns ``(page, sidebar)``."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(server + "/wwsvm")
    page.wait_for_selector("[data-testid='stMetric']", timeout=120_000)
    _wait_idle(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.get_by_text("your file", exact=True).first.click()
    _wait_idle(page)
    sidebar.locator("input[type='file']").set_input_files(str(path))
    page.get_by_text(shown).first.wait_for(timeout=120_000)
    return page, sidebar


def _select(page, label: str, option: str) -> None:
    """Pick ``option`` in the sidebar selectbox labelled ``label``."""
    box = page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']",
                       has_text=label).first
    box.click()
    page.get_by_role("option", name=option, exact=True).first.click()
    _wait_idle(page)


def test_upload_a_raw_penguins_csv_and_read_held_out_accuracy_and_class_names(server,
                                                                              tmp_path):
    """A raw CSV (text columns, 11 incomplete rows, body mass in grams) uploaded on the
    WW-SVM page: with the panel's default preprocessing and a held-out fraction, the page
    shows the held-out accuracy and the class names on the confusion matrix."""
    from penguinkit import write_penguins

    path = write_penguins(tmp_path / "penguins.csv")
    with chromium("tests/test_browser.py") as browser:
        page, sidebar = _upload_on_wwsvm(browser, server, path, "file penguins.csv")
        _wait_idle(page)
        _select(page, "label column", "species")
        held = sidebar.locator("[data-testid='stNumberInput']",
                               has_text="held-out fraction").locator("input").first
        held.fill("0.3")
        held.press("Enter")
        page.locator("[data-testid='stMetric']", has_text="held-out accuracy").first \
            .wait_for(timeout=120_000)
        _wait_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0
        assert float(_metric(page, "held-out accuracy")) >= 0.95
        assert page.get_by_text("dropped 11 rows with missing values", exact=False) \
            .count() >= 1
        page.get_by_text("Structure", exact=False).first.click()
        page.wait_for_function(
            "() => [...document.querySelectorAll('.js-plotly-plot')].some(d => d.layout &&"
            " JSON.stringify(d.layout.title || '').includes('confusion'))", timeout=60_000)
        labels = page.evaluate(
            "() => { for (const d of document.querySelectorAll('.js-plotly-plot'))"
            " if (d.layout && JSON.stringify(d.layout.title || '').includes('confusion'))"
            " return d.data[0].x; return null; }")
        assert list(labels) == ["Adelie", "Chinstrap", "Gentoo"], labels


#: Text that overflows its box: chart titles, axis titles and legend entries outside their
#: chart's SVG, and display formulas wider than their column (KaTeX cuts them).
_CLIPPED_JS = """() => {
  const out = [];
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const svg = plot.querySelector('svg.main-svg');
    if (!svg) continue;
    const box = svg.getBoundingClientRect();
    if (box.width === 0) continue;
    for (const t of plot.querySelectorAll('.gtitle, .annotation-text, .g-xtitle text,'
                                          + ' .g-ytitle text, .legendtext')) {
      const r = t.getBoundingClientRect();
      if (r.width === 0) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1
          || r.bottom > box.bottom + 1) out.push('chart: ' + (t.textContent || '').slice(0, 80));
    }
  }
  // KaTeX's display box measures 2 px wider than the column even when the formula fits
  for (const k of document.querySelectorAll('.katex-display'))
    if (k.scrollWidth > k.clientWidth + 4) out.push('formula: ' + k.textContent.slice(0, 60));
  return out;
}"""


def _open(browser, url: str, width: int):
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.goto(url)
    page.wait_for_selector("[data-testid='stMetric']", timeout=120_000)
    _wait_idle(page)
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    # the whole page in the viewport, so every chart is drawn
    height = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\")"
                           ".scrollHeight")
    page.set_viewport_size({"width": width, "height": min(int(height) + 50, 12_000)})
    page.wait_for_timeout(1500)
    assert page.locator("[data-testid='stException']").count() == 0
    return page


def test_pages_at_their_defaults_show_their_point_with_nothing_clipped(server):
    with chromium("tests/test_browser.py") as browser:
        # the screening page screens at its defaults (no control touched)
        page = _open(browser, server + "/triplet_screening", 1280)
        rate = _metric(page, "screening rate")
        assert float(rate.rstrip("%")) > 0, rate
        assert page.evaluate(_CLIPPED_JS) == []
        page.close()
        # every page at 800 px (the sidebar open): no title, label or formula cut
        for name in ("wwsvm", "caso", "robust_mtl", "triplet_screening", "mtmkl"):
            page = _open(browser, f"{server}/{name}", 800)
            assert page.evaluate(_CLIPPED_JS) == [], name
            page.close()


def test_app_works_offline_home_alias_no_deploy_button(server):
    """Every request the pages make goes to the local server (all others are blocked and
    recorded): ``/home`` shows the home page, a model page solves and draws its charts,
    the tab icon is local and Streamlit's "Deploy" button is absent."""
    from urllib.parse import urlsplit

    external: list[str] = []

    def block(route):
        host = urlsplit(route.request.url).hostname or ""
        if route.request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1",
                                                                        "localhost"):
            route.continue_()
        else:
            external.append(route.request.url)
            route.abort()

    with chromium("tests/test_browser.py") as browser:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.route("**/*", block)
        page = context.new_page()
        page.goto(server + "/home")
        page.wait_for_selector(".katex", timeout=120_000)  # the home page's formula
        _wait_idle(page)
        assert urlsplit(page.url).path in ("", "/")  # /home leads to the home page
        assert page.get_by_text("Page not found").count() == 0
        assert page.locator("[data-testid='stAppDeployButton']").count() == 0
        icon = "() => document.querySelector(\"link[rel='shortcut icon']\")?.href || ''"
        assert page.evaluate(icon)
        assert urlsplit(page.evaluate(icon)).hostname in (None, "127.0.0.1")

        page.goto(server + "/wwsvm")
        page.wait_for_selector("[data-testid='stMetric']", timeout=120_000)
        _wait_idle(page)
        page.wait_for_selector(".js-plotly-plot", timeout=60_000)
        assert page.locator("[data-testid='stException']").count() == 0
        assert urlsplit(page.evaluate(icon)).hostname in (None, "127.0.0.1")
        assert external == []
