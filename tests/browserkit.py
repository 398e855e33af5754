"""A headless Chromium for the real-browser tests (tests/test_browser.py, the docs site)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest


@contextlib.contextmanager
def chromium(owner: str) -> Iterator[Any]:
    """A headless Chromium (playwright's sync API, a fresh temporary profile). The test
    FAILS with a one-line instruction naming ``owner`` when none can be launched (never
    skips)."""
    from playwright.sync_api import sync_playwright

    from explorer.browserbench import launch

    with sync_playwright() as pw:
        try:
            browser = launch(pw)
        except RuntimeError as exc:
            pytest.fail(f"{owner}: {exc}", pytrace=False)
        try:
            yield browser
        finally:
            browser.close()
