"""DeepL's document API through the official ``deepl`` client, on a server with a test-double engine.

translate_document_from_filepath uploads, polls the status and downloads the
result: the round trip every DeepL plugin that translates files makes.
"""

from __future__ import annotations

import re

import deepl
import httpx
import pytest

from mtserve.documents.jobs.store import Job, JobStatus
from tests.documents import samples
from tests.documents.helpers import SwapEngine, visible_text
from tests.documents.samples import has_han
from tests.servers import serve, wait_until

FORMATS = ["notes.txt", "report.docx", "slides.pptx", "page.html", "film.srt"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with serve(SwapEngine(slots=2), home=tmp_path_factory.mktemp("home")) as url:
        yield url


@pytest.fixture(scope="module")
def translator(server):
    return deepl.Translator("any-key", server_url=server)


@pytest.mark.parametrize("name", FORMATS)
def test_the_official_client_translates_a_document(translator, tmp_path, name):
    data = samples.all_samples()[name]
    source, output = tmp_path / name, tmp_path / f"out-{name}"
    source.write_bytes(data)
    status = translator.translate_document_from_filepath(source, output, source_lang="ZH", target_lang="EN-US")
    assert status.done and status.ok, status
    assert status.billed_characters and status.billed_characters > 0
    result = output.read_bytes()
    before, after = visible_text(name, data), visible_text(name, result)
    assert has_han(before) and not has_han(after), after[:300]
    assert samples.swap(before.strip().splitlines()[0]).strip() in after


def test_the_result_is_gone_once_downloaded_a_wrong_key_is_403_and_an_unknown_id_404(translator, server):
    handle = translator.translate_document_upload(samples.TXT.encode(), target_lang="EN-US", filename="a.txt")
    status = translator.translate_document_wait_until_done(handle)
    assert status.done
    wrong = httpx.post(f"{server}/v2/document/{handle.document_id}", json={"document_key": "0" * 64})
    assert wrong.status_code == 403 and "document_key" in wrong.json()["message"]
    unknown = httpx.post(f"{server}/v2/document/{'f' * 32}", json={"document_key": handle.document_key})
    assert unknown.status_code == 404 and "message" in unknown.json()
    first = httpx.post(f"{server}/v2/document/{handle.document_id}/result",
                       json={"document_key": handle.document_key})
    assert first.status_code == 200 and first.content
    again = httpx.post(f"{server}/v2/document/{handle.document_id}/result",
                       json={"document_key": handle.document_key})
    assert again.status_code == 404


def test_bad_uploads_are_deepl_errors(server):
    no_target = httpx.post(f"{server}/v2/document", files={"file": ("a.txt", b"\xe4\xbd\xa0\xe5\xa5\xbd")})
    assert no_target.status_code == 400 and "target_lang" in no_target.json()["message"]
    unknown_format = httpx.post(f"{server}/v2/document", data={"target_lang": "EN-US"},
                                files={"file": ("a.exe", b"MZ")})
    assert unknown_format.status_code == 400 and "format" in unknown_format.json()["message"]
    converted = httpx.post(f"{server}/v2/document", data={"target_lang": "EN-US", "output_format": "pdf"},
                           files={"file": ("a.txt", "你好。".encode())})
    assert converted.status_code == 400 and "output_format" in converted.json()["message"]


def test_document_jobs_share_the_job_store_with_jobs(translator, server):
    handle = translator.translate_document_upload("你好。".encode(), target_lang="EN-US", filename="b.txt")
    job = httpx.get(f"{server}/jobs/{handle.document_id}").json()
    assert job["id"] == handle.document_id.lower() and job["filename"] == "b.txt"  # /jobs shows ids lowercase


def test_document_ids_and_keys_are_uppercase_hex_as_deepl_s_and_either_case_is_taken(translator, server):
    handle = translator.translate_document_upload("你好。".encode(), target_lang="EN-US", filename="c.txt")
    assert re.fullmatch("[0-9A-F]{32}", handle.document_id) and re.fullmatch("[0-9A-F]{64}", handle.document_key)
    assert translator.translate_document_wait_until_done(handle).ok
    for document_id, key in ((handle.document_id, handle.document_key),
                             (handle.document_id.lower(), handle.document_key.lower())):
        status = httpx.post(f"{server}/v2/document/{document_id}", json={"document_key": key})
        assert status.status_code == 200 and status.json()["document_id"] == handle.document_id, status.text
    not_ascii = httpx.post(f"{server}/v2/document/{handle.document_id}", json={"document_key": "é" * 64})
    assert not_ascii.status_code == 403, not_ascii.text  # was a 500: compare_digest refuses such a str


def test_a_document_into_its_own_language_is_refused(translator, server):
    r = httpx.post(f"{server}/v2/document", data={"source_lang": "EN", "target_lang": "EN-US"},
                   files={"file": ("a.txt", b"Hello.")})
    assert r.status_code == 400 and "Source and target language are equal" in r.json()["message"], r.text
    with pytest.raises(deepl.DeepLException, match="Source and target language are equal"):
        translator.translate_document_upload("你好。".encode(), source_lang="ZH", target_lang="ZH-HANS",
                                             filename="d.txt")


def test_a_file_of_a_format_the_server_does_not_take_is_deepl_s_invalid_file(translator):
    with pytest.raises(deepl.DeepLException, match="Invalid file") as refused:  # deepl-python's tests match this
        translator.translate_document_upload(b"MZ", target_lang="EN-US", filename="virus.exe")
    assert "file extension '.exe'" in str(refused.value) and "allowed formats: .txt" in str(refused.value)


def test_seconds_remaining_is_the_time_per_segment_so_far_times_the_segments_left():
    job = Job(id="0" * 32, filename="a.txt", format="plain", source="zh", target="en", total=10)
    assert job.seconds_remaining(now=110.0) is None  # queued
    job.status, job.started_at = JobStatus.RUNNING, 100.0
    assert job.seconds_remaining(now=110.0) is None  # running, nothing done yet: nothing to tell
    job.done = 2
    assert job.seconds_remaining(now=104.0) == 16  # 2 s a segment, 8 left
    job.done = 10
    assert job.seconds_remaining(now=120.0) == 1  # every segment done, the file still to write


def test_a_translating_document_tells_its_seconds_remaining_on_get_and_post(tmp_path):
    text = "".join(f"第{n}行。\n" for n in range(8)).encode()
    with serve(SwapEngine(slots=1, delay_s=0.4), home=tmp_path, files_chunk=1) as url:
        translator = deepl.Translator("any-key", server_url=url)
        handle = translator.translate_document_upload(text, source_lang="ZH", target_lang="EN-US",
                                                      filename="lines.txt")
        status_url = f"{url}/v2/document/{handle.document_id}"

        def estimated() -> dict | None:
            body = httpx.get(status_url, params={"document_key": handle.document_key}).json()
            assert body["status"] in ("queued", "translating"), body  # the estimate must come while it runs
            assert "seconds_remaining" not in body or body["status"] == "translating", body
            return body if "seconds_remaining" in body else None

        body = wait_until(estimated, 20, "a status with seconds_remaining")
        assert isinstance(body["seconds_remaining"], int) and 1 <= body["seconds_remaining"] <= 30, body
        posted = httpx.post(status_url, json={"document_key": handle.document_key}).json()
        if posted["status"] == "translating":  # POST, as the deepl client polls (it may have finished since)
            assert 1 <= posted["seconds_remaining"] <= 30, posted
        done = translator.translate_document_wait_until_done(handle)
        assert done.ok and done.seconds_remaining is None  # done: nothing remains to estimate
        got = httpx.get(f"{status_url}/result", params={"document_key": handle.document_key})
        assert got.status_code == 200 and b"\xe7\xac\xac" not in got.content  # no Han left (swapped)
