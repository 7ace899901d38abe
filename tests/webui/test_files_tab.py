"""The WebUI's Files tab in a real headless Chromium, against a real server with a test double engine.

The document pipeline behind it is the real one (upload, job, progress
events, download); only the engine is the swapping double, so the tests are
fast and their expected output exact. Real-model document tests live in
tests/documents/test_documents_model.py.
"""

from __future__ import annotations

import pytest

from tests.documents import samples
from tests.documents.helpers import SwapEngine, visible_text
from tests.documents.samples import has_han, swap
from tests.servers import serve

pytestmark = pytest.mark.webui
SCREENSHOT = "/tmp/webui-files.png"


@pytest.fixture(scope="module")
def files_server(tmp_path_factory):
    with serve(SwapEngine(slots=2), home=tmp_path_factory.mktemp("home"), files_max_mb=1.0) as url:
        yield url


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory):
    with serve(SwapEngine(slots=1, delay_s=0.4), home=tmp_path_factory.mktemp("slow"), files_chunk=1) as url:
        yield url


def open_files(pg, url: str) -> None:
    pg.goto(f"{url}/#files")
    pg.wait_for_selector("body[data-ready='true']", state="attached")
    pg.wait_for_selector("#files-panel[data-ready='true']", state="attached")


def test_choose_a_file_see_progress_and_download(page, files_server):
    open_files(page, files_server)
    assert page.is_visible("#files-panel") and page.is_hidden("#text-panel")
    assert page.get_attribute("#tab-files", "aria-selected") == "true"
    accept = page.get_attribute("#file-input", "accept").split(",")
    assert {".docx", ".xlf", ".xliff", ".xlsx"} <= set(accept)
    assert "docx" in page.text_content("#file-formats") and "1 MB" in page.text_content("#file-formats")
    assert "xlsx" in page.text_content("#file-formats")
    page.select_option("#file-source-lang", "zh")
    page.select_option("#file-target-lang", "en")

    page.set_input_files("#file-input", files=[{"name": "report.docx", "mimeType": "application/octet-stream",
                                                "buffer": samples.docx_bytes()}])
    page.wait_for_selector("#file-download", state="visible")
    assert "Done" in page.text_content("#file-status")
    assert page.evaluate("document.querySelector('#file-progress').value") == \
        page.evaluate("document.querySelector('#file-progress').max")
    assert page.locator("#file-notes li").count() >= 1  # what the format keeps, said plainly
    page.screenshot(path=SCREENSHOT, full_page=True)

    with page.expect_download() as caught:
        page.click("#file-download")
    download = caught.value
    assert download.suggested_filename == "report.en.docx"
    with open(download.path(), "rb") as handle:
        text = visible_text("report.docx", handle.read())
    assert swap("年度报告") in text and not has_han(text)
    assert page.is_hidden("#file-error")


def test_drag_and_drop_a_file(page, files_server):
    open_files(page, files_server)
    page.select_option("#file-source-lang", "zh")
    transfer = page.evaluate_handle("""(text) => {
        const dt = new DataTransfer();
        dt.items.add(new File([text], 'film.srt', { type: 'application/x-subrip' }));
        return dt;
    }""", samples.SRT)
    page.dispatch_event("#file-drop", "dragenter", {"dataTransfer": transfer})
    assert "dragging" in page.get_attribute("#file-drop", "class")
    page.dispatch_event("#file-drop", "drop", {"dataTransfer": transfer})
    page.wait_for_selector("#file-download", state="visible")
    assert "dragging" not in page.get_attribute("#file-drop", "class")
    assert page.text_content("#file-name") == "film.srt"
    assert page.get_attribute("#file-download", "download") == "film.en.srt"
    href = page.get_attribute("#file-download", "href")
    srt = page.evaluate("(url) => fetch(url).then((r) => r.text())", href)
    assert "00:00:06,500 --> 00:00:08,000" in srt and swap("我是老师。") in srt


@pytest.mark.parametrize("name, data, message", [
    ("virus.exe", b"MZ", "unsupported file format '.exe'; allowed formats: .txt"),
    ("broken.docx", b"PK\x03\x04 broken", "could not read the .docx file"),
    ("scan.pdf", samples.scanned_pdf_bytes(), "OCR is not supported"),
])
def test_a_bad_file_gets_a_readable_error(page, files_server, name, data, message):
    open_files(page, files_server)
    page.set_input_files("#file-input", files=[{"name": name, "mimeType": "application/octet-stream",
                                                "buffer": data}])
    page.wait_for_selector("#file-error", state="visible")
    error = page.text_content("#file-error")
    assert message in error and "HTTP 400" in error
    assert page.get_attribute("#file-error", "role") == "alert"
    assert page.is_hidden("#file-job")


def test_a_file_over_the_limit_is_refused_before_uploading(page, files_server):
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    open_files(page, files_server)
    page.set_input_files("#file-input", files=[{"name": "huge.txt", "mimeType": "text/plain",
                                                "buffer": b"x" * 1_200_000}])
    page.wait_for_selector("#file-error", state="visible")
    assert "huge.txt is 1.2 MB; this server accepts documents up to 1 MB" in page.text_content("#file-error")
    assert sent == []


def test_progress_then_cancel(page, slow_server):
    open_files(page, slow_server)
    page.select_option("#file-source-lang", "zh")
    lines = "\n".join(f"第{i}句话。" for i in range(12))
    page.set_input_files("#file-input", files=[{"name": "long.txt", "mimeType": "text/plain",
                                                "buffer": lines.encode()}])
    page.wait_for_function("() => /Translating… [1-9]\\d* of 12 segments/"
                           ".test(document.querySelector('#file-status').textContent)")
    value = page.evaluate("document.querySelector('#file-progress').value")
    assert 0 < value < 12
    page.click("#file-cancel")
    page.wait_for_function("() => document.querySelector('#file-status').textContent === 'Cancelled'")
    assert page.is_hidden("#file-download") and page.is_visible("#file-again")
    page.click("#file-again")
    assert page.is_hidden("#file-job")


def test_tabs_switch_and_keep_the_text_translator(page, files_server):
    page.goto(files_server)
    page.wait_for_selector("body[data-ready='true']", state="attached")
    assert page.is_visible("#source-text") and page.is_hidden("#files-panel")
    page.click("#tab-files")
    assert page.is_visible("#file-drop") and page.is_hidden("#source-text")
    assert page.url.endswith("#files")
    page.focus("#tab-files")
    page.keyboard.press("ArrowLeft")
    assert page.is_visible("#source-text")
    assert page.evaluate("document.activeElement.id") == "tab-text"
    assert not page.url.endswith("#files")


def test_files_tab_fits_a_phone(new_page, files_server):
    new_page.errors.clear()
    pg = new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    open_files(pg, files_server)
    for selector in ("#tab-text", "#tab-files", "#file-drop", "#file-source-lang", "#file-target-lang"):
        assert pg.locator(selector).is_visible(), selector
    assert pg.evaluate("document.documentElement.scrollWidth") <= 390
    assert not new_page.errors, new_page.errors
    pg.context.close()
