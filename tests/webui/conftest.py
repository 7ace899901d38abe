"""Fixtures for the WebUI tests: the system Chromium driven by Playwright, and a fast server.

Chromium is the system one (/usr/bin/chromium); no browser is ever downloaded. Playwright is
imported when a browser is first needed, so `make test-unit` (which deselects these tests and does
not install it) still collects this package.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import FakeEngine
from tests.servers import serve
from tests.webui.helpers import CHROMIUM, CHROMIUM_ARGS, UI_TIMEOUT_MS


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api  # a test dependency: `make test` installs it

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM}; `make test` installs Debian's chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def new_page(browser):
    """Factory for a page in a fresh context; JS errors on any page fail the test."""
    contexts = []
    errors: list[str] = []

    def make(**context_options):
        options = {"viewport": {"width": 1280, "height": 800}, "locale": "en-US"}
        options.update(context_options)
        ctx = browser.new_context(**options)
        ctx.set_default_timeout(UI_TIMEOUT_MS)
        contexts.append(ctx)
        pg = ctx.new_page()
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        return pg

    make.errors = errors
    yield make
    for ctx in contexts:
        ctx.close()


@pytest.fixture
def page(new_page):
    new_page.errors.clear()
    pg = new_page()
    yield pg
    assert not new_page.errors, f"JavaScript errors on the page: {new_page.errors}"
    pg.context.close()


@pytest.fixture(scope="module")
def ui_server():
    """The real app around the test double engine: for checks of the page's own logic and layout,
    which need the page and its language lists but not a real translation."""
    with serve(FakeEngine(slots=2)) as url:
        yield url
