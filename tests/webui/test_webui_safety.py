"""The WebUI shows hostile text as text: nothing in a translation is ever run as markup."""

from __future__ import annotations

import pytest

from tests.webui.helpers import open_ui, sse

pytestmark = pytest.mark.webui

PAYLOAD = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>'


def test_a_translation_with_markup_is_shown_as_text(page, ui_server):
    def fulfill(route):
        route.fulfill(status=200, content_type="text/event-stream",
                      body=sse(("delta", {"text": PAYLOAD}), ("done", {"translatedText": PAYLOAD})))

    page.route("**/translate/stream", fulfill)
    open_ui(page, ui_server)
    page.select_option("#source-lang", "zh")
    page.fill("#source-text", "随便什么。")
    page.wait_for_function("() => document.querySelector('#target-text').textContent.includes('onerror')")
    assert page.text_content("#target-text") == PAYLOAD
    assert page.locator("#target-text img, #target-text script").count() == 0
    page.wait_for_timeout(300)  # give an injected handler the chance it must not have
    assert page.evaluate("() => window.__pwned") is None
