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

from explorer.browserbench import launch, serve

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
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        # playwright gives the browser a fresh temporary profile of its own
        missing = None
        try:
            browser = launch(pw)
        except RuntimeError as exc:
            missing = str(exc)
        if missing:
            pytest.fail(f"tests/test_browser.py: {missing}", pytrace=False)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(server + "/wwsvm")
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
        finally:
            browser.close()


def test_app_works_offline_home_alias_no_deploy_button(server):
    """Every request the pages make goes to the local server (all others are blocked and
    recorded): ``/home`` shows the home page, a model page solves and draws its charts,
    the tab icon is local and Streamlit's "Deploy" button is absent."""
    from urllib.parse import urlsplit

    from playwright.sync_api import sync_playwright

    external: list[str] = []

    def block(route):
        host = urlsplit(route.request.url).hostname or ""
        if route.request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1",
                                                                        "localhost"):
            route.continue_()
        else:
            external.append(route.request.url)
            route.abort()

    with sync_playwright() as pw:
        try:
            browser = launch(pw)
        except RuntimeError as exc:
            pytest.fail(f"tests/test_browser.py: {exc}", pytrace=False)
        try:
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
        finally:
            browser.close()
