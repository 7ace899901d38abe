"""The parse sandbox: documents are read and rendered in a worker process under memory, CPU and time
limits, and what happens there stays out of the server's memory."""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time

import httpx
import psutil
import pytest

from mtserve.documents import DocumentError, LimitExceeded, read_document
from mtserve.documents.formats.limits import Limits
from mtserve.documents.jobs import sandbox as sandbox_module
from mtserve.documents.jobs.sandbox import SandboxedDocument, parse_document, read_tm_file
from mtserve.service.tm import TMCancelled
from mtserve.settings import Settings
from tests.documents import samples
from tests.documents.helpers import SwapEngine
from tests.hostile import files
from tests.servers import serve


def parse(filename: str, data: bytes, **settings):
    return asyncio.run(parse_document(Settings(**settings), filename, data))


def heavy_docx(paragraphs: int = 150_000) -> bytes:
    """Legal under every cap but the segments' (~900,000 nodes), yet its tree takes ~150 MB to parse."""
    text = "字" * 20
    return files.docx(files.word_xml(f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" * paragraphs))


def slow_markdown() -> bytes:
    """Linear, legal, and still several seconds of CPU: 200,000 unclosed link targets."""
    return b"a " + b"[a](" * 200_000


@pytest.mark.parametrize("name", ["report.docx", "slides.pptx", "letter.odt", "book.epub", "report.pdf",
                                  "readme.md", "page.html", "film.srt", "messages.po", "strings.json"])
def test_a_document_is_read_and_rendered_in_a_worker_exactly_as_in_process(name):
    data = samples.all_samples()[name]
    document = parse(name, data)
    assert isinstance(document, SandboxedDocument)
    local = read_document(name, data)
    assert (document.format, document.segments, document.sections, document.notes) == \
        (local.format, local.segments, local.sections, local.notes)
    translations = [samples.swap(s) for s in document.segments]
    assert document.render(translations, "en").data == local.render(translations, "en").data or \
        name.endswith((".docx", ".pptx", ".odt", ".epub", ".pdf"))  # zips and PDFs carry timestamps


def test_the_worker_is_another_process_and_stays_warm():
    sandbox = sandbox_module.shared(1)
    first = sandbox.call(_ping())
    started = time.monotonic()
    second = sandbox.call(_ping())
    warm_s = time.monotonic() - started
    print(f"a request to the warm worker: {warm_s * 1000:.0f} ms")
    assert first == second and first[0] == "ok" and first[1] != os.getpid()
    assert warm_s < 2


def _ping():
    from mtserve.documents.formats.limits import Limits
    from mtserve.documents.jobs.sandbox import WorkerLimits, _Request

    return _Request("ping", "", b"", (), Limits.defaults(), WorkerLimits(64 * 2**20, 10, 30))


def test_a_parse_over_the_memory_limit_is_413_naming_it_and_the_worker_recovers():
    with pytest.raises(LimitExceeded, match="MTSERVE_FILES_PARSE_MEMORY_MB"):
        parse("heavy.docx", heavy_docx(), files_parse_memory_mb=20, files_max_segments=200_000)
    assert parse("report.docx", samples.docx_bytes()).segments  # a fresh worker took over


def test_a_parse_over_the_cpu_limit_is_413_naming_it():
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match="MTSERVE_FILES_PARSE_CPU_S"):
        parse("slow.md", slow_markdown(), files_parse_cpu_s=1, files_parse_timeout_s=60)
    elapsed = time.monotonic() - started
    print(f"stopped after {elapsed:.1f} s")
    assert elapsed < 30


def test_a_parse_over_the_time_limit_is_413_naming_it():
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match="took longer than 1 s.*MTSERVE_FILES_PARSE_TIMEOUT_S"):
        parse("slow.md", slow_markdown(), files_parse_cpu_s=120, files_parse_timeout_s=1)
    elapsed = time.monotonic() - started
    print(f"killed after {elapsed:.1f} s")
    assert elapsed < 15
    assert parse("ok.md", "# 你好".encode()).segments == ["你好"]


def test_the_server_memory_does_not_hold_the_parse():
    data = heavy_docx()
    process = psutil.Process()
    parse("warm.txt", "你好".encode())  # the worker is up before measuring
    gc.collect()
    before = process.memory_info().rss
    document = parse("heavy.docx", data, files_max_segments=200_000)
    sandboxed = (process.memory_info().rss - before) / 2**20
    assert len(document.segments) == 150_000
    del document
    gc.collect()
    before = process.memory_info().rss
    limits = Limits.from_settings(Settings(files_max_segments=200_000))
    local = read_document("heavy.docx", data, limits=limits)
    in_process = (process.memory_info().rss - before) / 2**20
    print(f"RSS growth of this process: {sandboxed:.0f} MiB parsing in the worker, "
          f"{in_process:.0f} MiB parsing here")
    assert local.segments
    # What comes back is the segments (150,000 strings, ~25 MB); the tree stayed in the worker.
    assert sandboxed < 100 and sandboxed < in_process / 2, (sandboxed, in_process)


def test_without_workers_the_caps_still_hold():
    case = next(c for c in files.hostile_files() if c.name == "pdf-flate-bomb")
    with pytest.raises(LimitExceeded, match="MTSERVE_FILES_MAX_PDF_STREAM_MB"):
        parse(case.filename, case.data, files_parse_workers=0)
    with pytest.raises(DocumentError, match="is empty"):
        parse("empty.docx", b"")


def test_over_http_a_worker_limit_is_a_json_413(tmp_path):
    with serve(SwapEngine(), home=tmp_path, files_parse_memory_mb=20, files_max_segments=200_000) as url:
        r = httpx.post(f"{url}/translate_file", data={"source": "zh", "target": "en"},
                       files={"file": ("heavy.docx", heavy_docx())}, timeout=120)
        ok = httpx.post(f"{url}/translate_file", data={"source": "zh", "target": "en"},
                        files={"file": ("a.txt", "你好".encode())}, timeout=120)
    assert r.status_code == 413, r.text
    assert "MTSERVE_FILES_PARSE_MEMORY_MB" in r.json()["error"]
    assert ok.status_code == 200


def test_a_tm_read_is_stopped_when_its_request_ends_and_its_worker_is_replaced():
    """An import cut by the shutdown grace must not keep the process waiting for its parse."""
    settings = Settings()
    worker = psutil.Process(sandbox_module.shared(1).call(_ping())[1])
    catalog = 'msgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n\n' + "".join(
        f'msgid "Open file number {i}"\nmsgstr "打开第{i}个文件"\n\n' for i in range(300_000))  # polib: ~20 s
    cancel, outcome = threading.Event(), {}

    def read() -> None:
        try:
            outcome["pairs"] = read_tm_file(settings, "big.po", catalog.encode(), "po", None, None, cancel=cancel)
        except TMCancelled as exc:
            outcome["cancelled"] = str(exc)

    started = worker.cpu_times().user
    reader = threading.Thread(target=read)
    reader.start()
    deadline = time.monotonic() + 60
    while worker.cpu_times().user < started + 0.5:  # until the worker is parsing
        assert time.monotonic() < deadline and reader.is_alive()
        time.sleep(0.05)
    cancel.set()
    reader.join(timeout=30)
    assert not reader.is_alive() and outcome == {"cancelled": "reading the .po file was stopped: its request ended"}
    worker.wait(timeout=10)  # killed, not left parsing (psutil.TimeoutExpired otherwise)
    assert not worker.is_running()
    tsv = read_tm_file(settings, "a.tsv", "打开\tOpen\n".encode(), "tsv", "zh", "en")
    assert tsv.pairs == [("打开", "Open")]
