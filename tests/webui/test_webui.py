"""End-to-end checks of the WebUI in a real headless Chromium.

The two real-model tests run against ``live_server`` (a real mtserve with the real small model,
tests/conftest.py); the model runs on CPU here, so their waits allow up to two minutes. Checks that
only exercise the page's own logic (error display, character limit, layout) run against
``ui_server`` (the real app around a test double engine) and fake the API with ``page.route`` where
they need a particular answer, so they stay fast and need no model.

Chromium is the system one (/usr/bin/chromium); no browser is ever downloaded.
"""

from __future__ import annotations

import json
import re
import urllib.parse

import httpx
import pytest

from tests.servers import GENERATED_TOKENS, metric_value
from tests.webui.helpers import open_ui, query_params, sse

pytestmark = pytest.mark.webui

SOURCE_TEXT = "请在会议开始前把报告发给我。"
MODEL_TIMEOUT_MS = 120_000  # a real (slow, CPU) translation
SCREENSHOT = "/tmp/webui.png"
SCREENSHOT_DARK = "/tmp/webui-dark.png"

CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")

# True once a translation has finished streaming (output present, nothing in flight).
TRANSLATION_FINISHED = """() => {
  const out = document.querySelector('#target-text').textContent;
  return out.trim().length > 0 && !document.querySelector('#status').classList.contains('busy');
}"""


# ---------------------------------------------------------------- real model


@pytest.mark.model
def test_translate_as_you_type(page, live_server):
    generated_before = metric_value(live_server, GENERATED_TOKENS)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    open_ui(page, live_server)

    # The page's static assets and the language lists came from the server.
    assert page.locator("#source-lang option").first.get_attribute("value") == "auto"
    page.select_option("#source-lang", "zh")
    page.select_option("#target-lang", "en")

    page.fill("#source-text", SOURCE_TEXT)
    page.wait_for_function(
        """() => /report/i.test(document.querySelector('#target-text').textContent)
                 && !document.querySelector('#status').classList.contains('busy')""",
        timeout=MODEL_TIMEOUT_MS,
    )
    translation = page.text_content("#target-text")
    assert re.search(r"report", translation, re.IGNORECASE), translation
    assert not CJK.search(translation), f"translation still has Chinese: {translation!r}"
    assert page.is_hidden("#error")
    assert "Translated" in page.text_content("#status")

    # URL state (updated with a short debounce).
    page.wait_for_function("() => new URLSearchParams(location.search).get('q') !== null")
    params = query_params(page.url)
    assert params.get("q") == SOURCE_TEXT
    assert params.get("source") == "zh"
    assert params.get("target") == "en"
    assert metric_value(live_server, GENERATED_TOKENS) > generated_before  # the model wrote it, not a cache

    # Character counter: 14 code points, against the server's limit (or unlimited).
    counter = page.text_content("#char-count").strip()
    assert re.match(rf"^{len(SOURCE_TEXT)}(\s*/\s*[\d,.\s]+|\s+characters)$", counter), counter
    assert "over" not in (page.get_attribute("#char-count", "class") or "")

    # For a human to look at: light, then dark (after the colour transitions settle).
    page.screenshot(path=SCREENSHOT, full_page=True)
    page.emulate_media(color_scheme="dark")
    page.wait_for_timeout(500)
    page.screenshot(path=SCREENSHOT_DARK, full_page=True)
    page.emulate_media(color_scheme="light")

    # Copy button with feedback.
    page.click("#copy")
    page.wait_for_function("() => document.querySelector('#copy').textContent.includes('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == translation


@pytest.mark.model
def test_query_in_url_translates_on_load(page, live_server):
    generated_before = metric_value(live_server, GENERATED_TOKENS)
    open_ui(page, live_server, "?" + urllib.parse.urlencode(
        {"source": "zh", "target": "en", "q": "你好"}))

    assert page.input_value("#source-text") == "你好"
    assert page.input_value("#source-lang") == "zh"
    assert page.input_value("#target-lang") == "en"

    page.wait_for_function(TRANSLATION_FINISHED, timeout=MODEL_TIMEOUT_MS)
    translation = page.text_content("#target-text").strip()
    assert re.search(r"[A-Za-z]", translation), translation
    assert not CJK.search(translation), f"translation still has Chinese: {translation!r}"
    assert page.is_hidden("#error")
    assert metric_value(live_server, GENERATED_TOKENS) > generated_before


GIT_BUTTON = "这是 Git 图形客户端里的一个按钮：把暂存的更改记录到仓库。"


@pytest.mark.model
def test_the_context_field_reaches_the_translation(page, live_server):
    """The same word as a Git client's button: the context makes it "commit", not a form's "submit"."""
    open_ui(page, live_server, "?source=zh&target=en")
    page.fill("#context-text", GIT_BUTTON)
    page.fill("#source-text", "提交")
    page.wait_for_function(TRANSLATION_FINISHED, timeout=MODEL_TIMEOUT_MS)
    translation = page.text_content("#target-text").strip()
    assert "commit" in translation.lower(), translation
    assert "git" not in translation.lower(), f"the context was translated too: {translation!r}"


# ------------------------------------------------- page logic, faked answers


def test_the_context_is_sent_kept_in_the_url_and_retranslates(page, ui_server):
    bodies: list[dict] = []
    page.on("request", lambda r: bodies.append(json.loads(r.post_data)) if "/translate" in r.url else None)
    open_ui(page, ui_server, "?source=zh&target=en")

    page.fill("#source-text", "测试")
    page.wait_for_function(TRANSLATION_FINISHED)
    assert bodies and "context" not in bodies[-1]  # no context field: the request is as it always was

    with page.expect_request(lambda r: "/translate" in r.url):  # a new context translates again
        page.fill("#context-text", "  A button label  ")
    page.wait_for_function(TRANSLATION_FINISHED)
    assert bodies[-1]["context"] == "A button label" and bodies[-1]["q"] == "测试"
    page.wait_for_function("() => new URLSearchParams(location.search).get('context') !== null")
    assert query_params(page.url)["context"] == "A button label"

    sent = len(bodies)
    open_ui(page, ui_server, "?" + urllib.parse.urlencode({"source": "zh", "target": "en", "q": "测试",
                                                           "context": "A menu item"}))
    assert page.input_value("#context-text") == "A menu item"
    page.wait_for_function(TRANSLATION_FINISHED)
    assert len(bodies) > sent and bodies[-1]["context"] == "A menu item"


def test_a_translation_from_the_memory_says_so(page, tmp_path):
    """The status line tells a translator that the answer is their stored translation, not the engine's."""
    from mtserve.service.tm import TranslationMemory
    from tests.fakes import FakeEngine
    from tests.servers import serve

    TranslationMemory(tmp_path / "tm.sqlite3").add([("保存您的更改", "Save your changes")], "zh", "en")
    with serve(FakeEngine(slots=1), home=tmp_path) as url:
        open_ui(page, url, "?source=zh&target=en")
        page.fill("#source-text", "保存您的更改")
        page.wait_for_function(TRANSLATION_FINISHED)
        assert page.text_content("#target-text").strip() == "Save your changes"
        assert page.text_content("#status").endswith(" · one segment from the translation memory")
        page.fill("#source-text", "打开设置")  # the engine's: the status says nothing of the memory
        page.wait_for_function("() => !document.querySelector('#status').textContent.includes('memory')"
                               " && !document.querySelector('#status').classList.contains('busy')")
        assert page.text_content("#status").startswith("Translated in ")


def test_server_error_is_shown_then_cleared(page, ui_server):
    page.route("**/translate/stream", lambda route: route.fulfill(
        status=400, content_type="application/json", body=json.dumps({"error": "boom"})))
    open_ui(page, ui_server, "?source=zh&target=en")

    page.fill("#source-text", "测试")
    page.wait_for_selector("#error", state="visible")
    error = page.locator("#error")
    assert "boom" in error.text_content()
    assert error.get_attribute("role") == "alert"
    assert page.text_content("#target-text") == ""

    # The next successful translation clears the message; done replaces deltas.
    page.unroute("**/translate/stream")
    page.route("**/translate/stream", lambda route: route.fulfill(
        status=200, content_type="text/event-stream",
        body=sse(("delta", {"text": "fake "}), ("delta", {"text": "draft"}),
                 ("done", {"translatedText": "fake final"}))))
    page.press("#source-text", "Control+Enter")
    page.wait_for_function(
        "() => document.querySelector('#target-text').textContent === 'fake final'")
    assert page.is_hidden("#error")


def test_the_hint_is_shown_after_libretranslates_error(page, ui_server):
    page.route("**/translate/stream", lambda route: route.fulfill(
        status=400, content_type="application/json",
        body=json.dumps({"error": "zz is not supported", "hint": "target must be one of: en, zh; see GET /languages"})))
    open_ui(page, ui_server, "?source=zh&target=en")

    page.fill("#source-text", "测试")
    page.wait_for_selector("#error", state="visible")
    assert "zz is not supported — target must be one of: en, zh; see GET /languages" in page.text_content("#error")


def test_the_typing_delay_is_the_servers_frontend_timeout(page, ui_server):
    settings = httpx.get(f"{ui_server}/frontend/settings").json()
    assert settings["frontendTimeout"] == 400  # the page's own default, from the server
    page.route("**/frontend/settings", lambda route: route.fulfill(
        content_type="application/json", body=json.dumps({**settings, "frontendTimeout": 60_000})))
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/translate" in r.url else None)
    open_ui(page, ui_server, "?source=zh&target=en")

    page.fill("#source-text", "测试")
    page.wait_for_timeout(1500)  # well past 400 ms, far short of the server's 60 s
    assert sent == []
    page.press("#source-text", "Control+Enter")  # translating now does not wait
    page.wait_for_function("() => document.querySelector('#target-text').textContent.includes('测试')")
    assert sent


def test_over_limit_text_is_not_sent(page, ui_server):
    page.route("**/frontend/settings", lambda route: route.fulfill(
        content_type="application/json",
        body=json.dumps({"charLimit": 10, "keyRequired": False,
                         "language": {"source": {"code": "zh", "name": "Chinese"},
                                      "target": {"code": "en", "name": "English"}}})))
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if "/translate" in r.url else None)
    open_ui(page, ui_server)

    page.fill("#source-text", "一二三四五六七八九十十一")  # 12 > 10
    page.wait_for_selector("#error", state="visible")
    assert "limit" in page.text_content("#error")
    assert page.text_content("#char-count").strip() == "12 / 10"
    assert "over" in page.get_attribute("#char-count", "class")
    page.press("#source-text", "Control+Enter")
    page.wait_for_timeout(800)  # longer than the debounce
    assert sent == []

    # Emptying the box clears everything without a request either.
    page.fill("#source-text", "")
    page.wait_for_timeout(800)
    assert sent == []
    assert page.is_hidden("#error")
    assert page.text_content("#target-text") == ""


# ----------------------------------------------------------------- layout


def test_panes_side_by_side_on_desktop(page, ui_server):
    open_ui(page, ui_server)
    src = page.locator("#source-text").bounding_box()
    tgt = page.locator("#target-text").bounding_box()
    assert src["x"] + src["width"] <= tgt["x"]
    assert abs(src["y"] - tgt["y"]) < 5
    docs = page.locator("footer a[href='/docs']")
    assert docs.is_visible()


def test_panes_stack_on_phone(new_page, ui_server):
    new_page.errors.clear()
    pg = new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    open_ui(pg, ui_server)
    src = pg.locator("#source-text").bounding_box()
    tgt = pg.locator("#target-text").bounding_box()
    assert src["y"] + src["height"] <= tgt["y"], (src, tgt)
    # Nothing sticks out sideways.
    assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    for selector in ("#source-lang", "#target-lang", "#swap", "#copy"):
        assert pg.locator(selector).is_visible(), selector
    assert not new_page.errors, new_page.errors
    pg.context.close()
