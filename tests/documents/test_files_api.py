"""The document API on a real uvicorn with a test double engine: contract, jobs, limits, priority, expiry."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse

import httpx
import pytest

from mtserve.documents.formats.i18n import PLACEHOLDER
from tests.documents import samples
from tests.documents.helpers import SwapEngine, visible_text
from tests.documents.samples import has_han, swap
from tests.hostile.bodies import MULTIPART, multipart
from tests.servers import raw_request, serve, wait_until

TIMEOUT = 30


def upload(url: str, name: str, data: bytes, path: str = "/translate_file", **fields) -> httpx.Response:
    form = {"source": "zh", "target": "en", **fields}
    return httpx.post(f"{url}{path}", data=form, files={"file": (name, data)}, timeout=TIMEOUT)


def wait_for(url: str, job_id: str, statuses=("done", "failed", "cancelled"), timeout_s: float = 20) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/jobs/{job_id}", timeout=TIMEOUT).json()
        if job["status"] in statuses:
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not reach {statuses}: {job}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    engine = SwapEngine(slots=2)
    with serve(engine, home=tmp_path_factory.mktemp("home")) as url:
        yield url, engine


@pytest.fixture(scope="module")
def documents():
    return samples.all_samples()


# --- LibreTranslate's contract ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["notes.txt", "readme.md", "page.html", "film.srt", "film.vtt",
                                  "messages.po", "strings.json", "report.docx", "slides.pptx", "letter.odt",
                                  "book.epub", "report.pdf", "strings.xlf", "app.xliff", "budget.xlsx"])
def test_translate_file_then_download_every_format(server, documents, name):
    url, _ = server
    r = upload(url, name, documents[name])
    assert r.status_code == 200, r.text
    link = r.json()["translatedFileUrl"]
    assert link.startswith(f"{url}/download_file/")
    download = httpx.get(link, timeout=TIMEOUT)
    assert download.status_code == 200
    stem, extension = name.rsplit(".", 1)
    extension = {"xliff": "xlf"}.get(extension, extension)  # a format's canonical extension
    disposition = urllib.parse.unquote(download.headers["content-disposition"])
    assert f"{stem}.en.{extension}" in disposition and disposition.startswith("attachment")
    text = visible_text(name, download.content)  # parses with the format's own library
    assert text.strip()
    assert not has_han(text), text


def test_frontend_settings_list_the_formats(server):
    url, _ = server
    settings = httpx.get(f"{url}/frontend/settings").json()
    assert settings["filesTranslation"] is True
    assert {".docx", ".pdf", ".srt", ".po", ".json", ".md", ".xlf", ".xliff", ".xlsx"} <= set(
        settings["supportedFilesFormat"])
    assert settings["fileSizeLimitMb"] == 20.0


def test_source_auto_is_detected_once_for_the_document(server):
    url, _ = server
    r = upload(url, "auto.txt", "今天天气很好。\n我们去公园散步吧。\n".encode(), path="/jobs", source="auto")
    job = wait_for(url, r.json()["id"])
    assert job["status"] == "done"
    assert job["source"] == "auto" and job["detectedLanguage"]["language"] == "zh"


def test_segments_go_through_the_cache_in_document_order(tmp_path):
    engine = SwapEngine(slots=1)
    lines = ["第一句。", "第二句。", "第一句。", "第三句。", "第二句。"]
    with serve(engine, home=tmp_path, files_chunk=2) as url:
        r = upload(url, "repeat.txt", "\n".join(lines).encode())
        assert r.status_code == 200
        text = httpx.get(r.json()["translatedFileUrl"]).text
    assert text.split("\n") == [swap(line) for line in lines]
    # One engine call per distinct sentence, in the order the document has them.
    assert [c.text for c in engine.calls] == ["第一句。", "第二句。", "第三句。"]


def test_placeholders_survive_an_engine_that_breaks_them(tmp_path):
    class Breaking(SwapEngine):
        @staticmethod
        def render(request):
            return PLACEHOLDER.sub("", swap(request.text))  # drops every placeholder

    with serve(Breaking(), home=tmp_path) as url:
        r = upload(url, "messages.po", samples.PO.encode())
        assert r.status_code == 200, r.text
        import polib

        catalog = polib.pofile(httpx.get(r.json()["translatedFileUrl"]).text)
    first = catalog[0]
    for placeholder in ("%(name)s", "{count}"):
        assert placeholder in first.msgstr
    assert not has_han(first.msgstr)
    assert "%s" in catalog[1].msgstr and "%d" in catalog[2].msgstr_plural[1]


def test_xliff_codes_survive_an_engine_that_misplaces_them(tmp_path):
    """Tokens kept in number but unbalanced (</1> before <1>) are caught and re-translated between codes."""
    from lxml import etree

    class Misplacing(SwapEngine):
        @staticmethod
        def render(request):
            text = swap(request.text)
            return text.replace("<1>", "\0").replace("</1>", "<1>").replace("\0", "</1>")

    with serve(Misplacing(), home=tmp_path) as url:
        r = upload(url, "app.xlf", samples.XLIFF2.encode(), path="/translate_file")
        assert r.status_code == 200, r.text
        download = httpx.get(r.json()["translatedFileUrl"], timeout=TIMEOUT)
    assert download.headers["content-type"].startswith("application/xliff+xml")
    root = etree.fromstring(download.content)
    ns = "{urn:oasis:names:tc:xliff:document:2.0}"
    segment = next(s for s in root.iter(f"{ns}segment") if s.get("id") == "s1")
    target = segment.find(f"{ns}target")
    assert segment.get("state") == "translated" and root.get("trgLang") == "en"
    pc = target.find(f"{ns}pc")
    assert pc is not None and pc.get("dataRefStart") == "d1" and pc.text == swap("这里")
    assert "".join(target.itertext()) == swap("点击这里继续。")


def test_xliff_holding_another_languages_targets_is_a_400_at_upload(server):
    url, engine = server
    calls = len(engine.calls)
    french = samples.XLIFF2.replace('srcLang="zh-CN"', 'srcLang="zh-CN" trgLang="fr"')
    r = upload(url, "app.xliff", french.encode(), path="/jobs", target="de")
    assert r.status_code == 400, r.text
    assert "already holds 2 translation(s) into fr" in r.json()["error"]
    assert len(engine.calls) == calls  # refused before any translation


def test_xlsx_sheet_names_follow_the_setting(tmp_path):
    import io

    import openpyxl

    with serve(SwapEngine(), home=tmp_path, files_xlsx_sheet_names=True) as url:
        r = upload(url, "budget.xlsx", samples.xlsx_bytes(), path="/jobs")
        job = wait_for(url, r.json()["id"])
        assert job["status"] == "done", job
        data = httpx.get(job["translatedFileUrl"], timeout=TIMEOUT).content
    book = openpyxl.load_workbook(io.BytesIO(data))
    assert book.sheetnames == [swap("销售 数据"), swap("汇总"), "链接"]
    assert book[swap("汇总")]["A1"].value == f"='{swap('销售 数据')}'!B1+1"
    assert any("'链接' keeps its name" in note for note in job["notes"])


# --- jobs -----------------------------------------------------------------------------------------
def test_a_job_reports_progress_and_streams_events(tmp_path):
    engine = SwapEngine(slots=1, delay_s=0.02)
    lines = [f"第{i}行的句子。" for i in range(12)]
    with serve(engine, home=tmp_path, files_chunk=3) as url:
        r = upload(url, "long.txt", "\n".join(lines).encode(), path="/jobs")
        assert r.status_code == 202, r.text
        job = r.json()
        assert job["total"] == 12 and job["status"] in ("queued", "running")
        assert r.headers["location"].endswith(f"/jobs/{job['id']}")
        events = []
        with httpx.stream("GET", job["events"], timeout=TIMEOUT) as stream:
            kind = None
            for line in stream.iter_lines():
                if line.startswith("event:"):
                    kind = line.split(":", 1)[1].strip()
                elif line.startswith("data:"):
                    events.append((kind, json.loads(line.split(":", 1)[1])))
                    if kind != "progress":
                        break
        final = httpx.get(f"{url}/jobs/{job['id']}").json()
    done = [data["done"] for _, data in events]
    assert done == sorted(done) and done[-1] == 12
    assert len(set(done)) >= 3  # progress arrives chunk by chunk, not only at the end
    assert events[-1][0] == "done"
    assert final["status"] == "done" and final["progress"] == 1.0 and final["notes"]
    assert final["translatedFileUrl"].endswith(".en.txt")
    assert final["resultFilename"] == "long.en.txt" and final["expiresAt"]


def test_cancelling_a_running_job_stops_its_engine_work(tmp_path):
    engine = SwapEngine(slots=1, delay_s=2.0)  # long segments: the delete lands while one is in the engine
    with serve(engine, home=tmp_path, files_chunk=2) as url:
        r = upload(url, "slow.txt", "\n".join(f"慢句子{i}。" for i in range(20)).encode(), path="/jobs")
        job_id = r.json()["id"]
        wait_for(url, job_id, statuses=("running",))
        deadline = time.monotonic() + 30
        while engine.in_flight == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert engine.in_flight == 1
        cancelled = httpx.delete(f"{url}/jobs/{job_id}", timeout=TIMEOUT)
        calls_then = len(engine.calls)
        wait_until(lambda: engine.cancelled and not engine.in_flight, 10, "the segment in the engine stopped")
        time.sleep(0.3)  # room for a queued segment to start, had the cancel left one queued
        job = httpx.get(f"{url}/jobs/{job_id}").json()
        events = httpx.get(f"{url}/jobs/{job_id}/events", timeout=TIMEOUT).text
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["deleted"] is False
    assert job["status"] == "cancelled" and job["translatedFileUrl"] is None and job["done"] < 20
    assert engine.cancelled  # the segment in the engine was told to stop
    assert len(engine.calls) == calls_then  # and nothing more started
    assert "event: cancelled" in events


def test_deleting_a_finished_job_removes_its_result(server):
    url, _ = server
    r = upload(url, "gone.txt", "很快就删除。".encode(), path="/jobs")
    job = wait_for(url, r.json()["id"])
    link = job["translatedFileUrl"]
    assert httpx.get(link).status_code == 200
    deleted = httpx.delete(f"{url}/jobs/{job['id']}")
    assert deleted.json()["deleted"] is True
    assert httpx.get(link).status_code == 404
    missing = httpx.get(f"{url}/jobs/{job['id']}")
    assert missing.status_code == 404 and "expired" in missing.json()["error"]


def test_results_and_jobs_expire(tmp_path):
    ttl_s = 3.0  # long enough that a loaded machine still downloads the result before it expires
    with serve(SwapEngine(), home=tmp_path, files_ttl_s=ttl_s) as url:
        r = upload(url, "brief.txt", "一会儿就过期。".encode(), path="/jobs")
        job = wait_for(url, r.json()["id"])
        link = job["translatedFileUrl"]
        assert httpx.get(link).status_code == 200
        deadline = time.monotonic() + ttl_s + 15  # expired by then, whatever the load
        while (expired := httpx.get(link)).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
        job_url = f"{url}/jobs/{job['id']}"
        while (gone := httpx.get(job_url)).status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.2)
    assert expired.status_code == 404 and "expired" in expired.json()["error"]
    assert gone.status_code == 404
    leftovers = [p for p in (tmp_path / "files").rglob("*") if p.is_file()]
    assert leftovers == []


def test_interactive_requests_go_before_a_document(tmp_path):
    engine = SwapEngine(slots=1, delay_s=0.25)
    with serve(engine, home=tmp_path, files_chunk=4) as url:
        r = upload(url, "big.txt", "\n".join(f"文档句子{i}。" for i in range(24)).encode(), path="/jobs")
        job_id = r.json()["id"]
        wait_for(url, job_id, statuses=("running",))
        wait_until(lambda: engine.in_flight, 10, "a segment of the document in the engine")
        started = time.monotonic()
        quick = httpx.post(f"{url}/translate", json={"q": "急事。", "source": "zh", "target": "en"},
                           timeout=TIMEOUT)
        latency = time.monotonic() - started
        job = httpx.get(f"{url}/jobs/{job_id}").json()
        httpx.delete(f"{url}/jobs/{job_id}")
    assert quick.status_code == 200 and quick.json()["translatedText"] == swap("急事。")
    assert job["status"] == "running" and job["done"] < 24  # the document was still going
    assert latency < 1.5, latency  # one segment already in the engine, then this one


# --- errors ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    with serve(SwapEngine(), home=tmp_path_factory.mktemp("strict"), files_max_mb=0.05,
               files_max_segments=3, files_formats="txt,docx,pdf") as url:
        yield url


def test_a_file_over_the_size_limit_is_413(strict):
    r = upload(strict, "big.txt", ("长" * 30_000).encode())
    assert r.status_code == 413
    assert "0.05 MB" in r.json()["error"] and "MTSERVE_FILES_MAX_MB" in r.json()["error"]


def test_a_file_over_the_segment_limit_is_413(strict):
    r = upload(strict, "many.txt", "一\n二\n三\n四\n".encode())
    assert r.status_code == 413
    assert "4 segments" in r.json()["error"] and "limit is 3" in r.json()["error"]


def test_a_format_not_allowed_is_400_listing_the_allowed_ones(strict):
    r = upload(strict, "slides.pptx", samples.pptx_bytes())
    assert r.status_code == 400
    assert r.json()["error"] == "unsupported file format '.pptx'; allowed formats: .txt, .docx, .pdf"


UNKNOWN_BYTES = 19_000_000  # declared: the whole body would be ~19 MB, under MTSERVE_FILES_MAX_MB
SENT_BYTES = 200_000  # what the client has sent when the answer must already be there


@pytest.mark.parametrize("path, fields, refusal", [
    ("/translate_file", [("source", None, b"zh"), ("target", None, b"en")], b"unsupported file format '.exe'"),
    ("/jobs", [("target", None, b"en")], b"unsupported file format '.exe'"),
    ("/v2/document", [("target_lang", None, b"EN-US")], b"Invalid file data: the file extension '.exe'"),  # DeepL's
])
def test_a_file_of_an_unknown_format_is_refused_before_its_bytes_are_read(server, path, fields, refusal):
    url, _ = server
    body = multipart([*fields, ("file", "payload.exe", b"x" * UNKNOWN_BYTES)])
    head = (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: {MULTIPART}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    answer = raw_request(url, head, body[:SENT_BYTES])  # the rest is never sent
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert refusal in answer
    assert httpx.get(f"{url}/health/live", timeout=TIMEOUT).status_code == 200


def test_deepl_takes_the_filename_field_for_a_part_named_without_an_extension(server):
    url, _ = server
    after = multipart([("target_lang", None, b"EN-US"), ("file", "blob", "你好。".encode()),
                       ("filename", None, b"notes.txt")])  # a browser's Blob, named by the field after it
    r = httpx.post(f"{url}/v2/document", content=after, headers={"content-type": MULTIPART}, timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["document_id"], r.text
    named_first = httpx.post(f"{url}/v2/document", data={"target_lang": "EN-US", "filename": "a.exe"},
                             files={"file": ("a.txt", "你好。".encode())}, timeout=TIMEOUT)
    assert named_first.status_code == 400 and "'.exe'" in named_first.json()["message"]


@pytest.mark.parametrize("name, data, status, message", [
    ("broken.docx", b"PK\x03\x04broken", 400, "could not read the .docx file"),
    ("scan.pdf", samples.scanned_pdf_bytes(), 400, "no text layer"),
    ("virus.exe", b"MZ", 400, "unsupported file format '.exe'"),
    ("empty.txt", b"", 400, "is empty"),
    ("blank.txt", b"\n  \n", 400, "no text to translate"),
])
def test_bad_files_are_4xx_that_say_why(server, name, data, status, message):
    url, _ = server
    for path in ("/translate_file", "/jobs"):
        r = upload(url, name, data, path=path)
        assert r.status_code == status, r.text
        assert message in r.json()["error"]


def test_bad_forms_are_400(server):
    url, _ = server
    no_file = httpx.post(f"{url}/translate_file", data={"target": "en"}, files={"other": ("a.txt", b"x")})
    assert no_file.status_code == 400 and "field named 'file'" in no_file.json()["error"]
    no_target = httpx.post(f"{url}/translate_file", files={"file": ("a.txt", "你好".encode())})
    assert no_target.status_code == 400 and "target" in no_target.json()["error"]
    json_body = httpx.post(f"{url}/translate_file", json={"target": "en"})
    assert json_body.status_code == 400 and "multipart/form-data" in json_body.json()["error"]
    language = upload(url, "a.txt", "你好".encode(), target="xx")
    assert language.status_code == 400 and language.json()["error"] == "xx is not supported"  # LibreTranslate's
    assert "see GET /languages" in language.json()["hint"]


@pytest.mark.parametrize("name", ["..%2F..%2Fetc%2Fpasswd", "0" * 32 + ".x.en.txt", "passwd",
                                  "%2Fetc%2Fpasswd", "0" * 32 + ".a..en.txt"])
def test_downloads_take_safe_names_only(server, name):
    url, _ = server
    r = httpx.get(f"{url}/download_file/{name}")
    assert r.status_code == 404
    assert "error" in r.json()


def test_unknown_job_is_404(server):
    url, _ = server
    for method in ("GET", "DELETE"):
        r = httpx.request(method, f"{url}/jobs/{'f' * 32}")
        assert r.status_code == 404 and "no job" in r.json()["error"]
    assert httpx.get(f"{url}/jobs/{'f' * 32}/events").status_code == 404


def test_client_gone_cancels_translate_file(tmp_path):
    engine = SwapEngine(slots=1, delay_s=1.0)
    with serve(engine, home=tmp_path) as url:
        async def hang_up():
            async with httpx.AsyncClient(timeout=0.6) as client:
                with pytest.raises(httpx.ReadTimeout):
                    text = "\n".join(f"句{i}。" for i in range(6))
                    await client.post(f"{url}/translate_file", data={"source": "zh", "target": "en"},
                                      files={"file": ("a.txt", text.encode())})

        asyncio.run(hang_up())
        deadline = time.monotonic() + 5
        while not engine.cancelled and time.monotonic() < deadline:
            time.sleep(0.05)
    assert engine.cancelled


def test_the_glossary_reaches_every_segment_of_a_document(server):
    url, engine = server
    r = upload(url, "terms.txt", "国际商业机器公司发布了新产品。\n没有术语的一行。\n".encode(),
               glossary=json.dumps({"国际商业机器公司": "IBM"}, ensure_ascii=False))
    assert r.status_code == 200, r.text
    calls = {c.text: c for c in engine.calls}
    assert ("国际商业机器公司", "IBM") in calls["国际商业机器公司发布了新产品。"].glossary
    assert calls["没有术语的一行。"].glossary == ()
    bad = upload(url, "terms.txt", "你好。".encode(), glossary="not json")
    assert bad.status_code == 400 and "glossary must be a JSON object" in bad.json()["error"]


def test_a_full_document_queue_is_503_with_retry_after(tmp_path):
    engine = SwapEngine(slots=1, delay_s=0.5)
    with serve(engine, home=tmp_path, files_queue=1) as url:
        first = upload(url, "one.txt", "第一份文件。".encode(), path="/jobs")
        second = upload(url, "two.txt", "第二份文件。".encode(), path="/jobs")
        httpx.delete(f"{url}/jobs/{first.json()['id']}")
        third = upload(url, "three.txt", "第三份文件。".encode(), path="/jobs")
    assert first.status_code == 202
    assert second.status_code == 503 and second.headers["retry-after"] == "30"
    assert "MTSERVE_FILES_QUEUE" in second.json()["error"]
    assert third.status_code == 202  # a cancelled job frees its place
