"""`mtserve translate` and `translate-file` with --url (MTSERVE_URL): through a running server's HTTP API,
with no model loaded in the command; without it, in process, said in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from mtserve.service.access import KeyStore
from tests.documents import samples
from tests.documents.helpers import SwapEngine
from tests.documents.samples import has_han, swap
from tests.servers import engine_generates, serve


def mtserve(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
            timeout: int = 300) -> subprocess.CompletedProcess:
    """The command as a user runs it, with a model setting no process could load: a command that
    loaded one would fail, so a success came from the server."""
    environment = {**os.environ, "MTSERVE_MODEL": "/nonexistent/model.gguf"}
    environment.pop("MTSERVE_URL", None)
    environment.pop("MTSERVE_API_KEY", None)
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "mtserve.cli", *args], input=stdin, text=True,
                          capture_output=True, timeout=timeout, env=environment)


@pytest.mark.model
def test_translate_goes_through_the_server_line_by_line_keeping_empty_lines(live_server):
    with engine_generates(live_server):
        result = mtserve("translate", "--url", live_server, "-s", "zh", "-t", "en",
                         stdin="我喜欢猫。\n\n今天很冷。\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert "cat" in lines[0].lower() and "cold" in lines[2].lower()
    assert result.stderr == ""  # nothing loaded, nothing to say

    by_environment = mtserve("translate", "我喜欢音乐。", env={"MTSERVE_URL": live_server})
    assert by_environment.returncode == 0, by_environment.stderr
    assert "music" in by_environment.stdout.lower()


@pytest.mark.model
def test_translate_file_goes_through_the_servers_jobs_with_progress_and_notes(live_server, tmp_path):
    source = tmp_path / "film.srt"
    source.write_text(samples.SRT, encoding="utf-8")
    with engine_generates(live_server):
        result = mtserve("translate-file", str(source), "-t", "en", "--url", live_server)
    assert result.returncode == 0, result.stderr
    written = tmp_path / "film.en.srt"
    assert result.stdout.strip() == str(written)
    text = written.read_text(encoding="utf-8")
    assert "00:00:06,500 --> 00:00:08,000" in text and not has_han(text)
    assert "film.srt" in result.stderr and "4/4" in result.stderr  # the bar, finished
    assert "source language: zh (detected" in result.stderr
    assert "note: Numbering, timings" in result.stderr
    assert "loading" not in result.stderr


def test_the_key_is_forwarded_from_the_flag_or_the_environment(tmp_path):
    key, _ = KeyStore(tmp_path / "keys.sqlite3").add(name="cli")
    document = tmp_path / "notes.txt"
    document.write_text(samples.TXT, encoding="utf-8")
    with serve(SwapEngine(), home=tmp_path, api_keys=True, require_api_key=True) as url:
        refused = mtserve("translate", "你好", "-s", "zh", "--url", url)
        by_flag = mtserve("translate", "你好", "-s", "zh", "--url", url, "--api-key", key)
        by_environment = mtserve("translate-file", str(document), "-s", "zh", "-t", "en", "-q",
                                 env={"MTSERVE_URL": url, "MTSERVE_API_KEY": key})
        file_refused = mtserve("translate-file", str(document), "-t", "en", "--url", url, "--api-key", "wrong")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"the server at {url} answered /translate with 400" in refused.stderr
    assert "--api-key or MTSERVE_API_KEY" in refused.stderr
    assert by_flag.returncode == 0, by_flag.stderr
    assert by_flag.stdout.strip() == swap("你好")
    assert by_environment.returncode == 0 and by_environment.stderr == "", by_environment.stderr
    assert (tmp_path / "notes.en.txt").read_text(encoding="utf-8") == swap(samples.TXT)
    assert file_refused.returncode == 2 and "answered /jobs with 403" in file_refused.stderr
    assert "Traceback" not in refused.stderr + file_refused.stderr


def test_what_the_server_refuses_is_said_in_one_line_and_no_file_is_written(tmp_path):
    document = tmp_path / "tool.exe"
    document.write_bytes(b"MZ")
    with serve(SwapEngine(), home=tmp_path) as url:
        result = mtserve("translate-file", str(document), "-t", "en", "--url", url)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"mtserve: the server at {url} answered /jobs with 400: ") and ".exe" in line
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("tool")] == ["tool.exe"]


def test_an_unreachable_server_and_in_process_flags_with_a_url_are_one_line_each(tmp_path):
    unreachable = mtserve("translate", "你好", "--url", "http://127.0.0.1:9")
    assert unreachable.returncode == 2 and "Traceback" not in unreachable.stderr
    [line] = unreachable.stderr.strip().splitlines()
    assert "cannot reach the server at http://127.0.0.1:9" in line and "mtserve serve" in line

    mixed = mtserve("translate", "你好", "--url", "http://127.0.0.1:9", "--model", "other", "--threads", "2")
    assert mixed.returncode == 2
    assert "--model, --threads: settings of the work in this process; with --url the server" in mixed.stderr

    not_a_url = mtserve("translate", "你好", "--url", "127.0.0.1:8000")
    assert not_a_url.returncode == 2 and "not an http:// or https:// URL" in not_a_url.stderr


def test_without_a_server_it_says_it_loads_the_model_here(tmp_path):
    result = mtserve("translate", "你好", "--model", "no-such-model", "--home", str(tmp_path))
    assert result.returncode == 2
    first, *rest = result.stderr.strip().splitlines()
    assert first == ("mtserve: no server given: loading no-such-model in this process "
                     "(--url or MTSERVE_URL sends the work to a running server)")
    assert rest and "neither a known model name" in rest[0]


def test_a_job_whose_events_break_off_is_followed_to_its_end_by_asking_for_it(tmp_path):
    from mtserve.cli.remote import RemoteServer

    url = "http://127.0.0.1:9"
    job = {"id": "j1", "status": "queued", "done": 0, "total": 2, "section": None, "notes": ["kept"],
           "source": "auto", "events": f"{url}/jobs/j1/events"}
    asked = []

    def server(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "POST" and path == "/jobs":
            return httpx.Response(202, json=job)
        if path == "/jobs/j1/events":  # one progress event, then the stream ends: a proxy cut it
            running = json.dumps({**job, "status": "running", "done": 1})
            return httpx.Response(200, text=f"event: progress\r\ndata: {running}\r\n\r\n",
                                  headers={"content-type": "text/event-stream"})
        if path == "/jobs/j1":
            asked.append(path)
            if len(asked) < 2:
                return httpx.Response(200, json={**job, "status": "running", "done": 1})
            return httpx.Response(200, json={**job, "status": "done", "done": 2, "resultFilename": "a.en.txt",
                                             "detectedLanguage": {"language": "zh", "confidence": 90.0},
                                             "translatedFileUrl": f"{url}/download_file/x"})
        if path == "/download_file/x":
            return httpx.Response(200, content=b"translated")
        return httpx.Response(404, json={"error": f"no {path}"})

    seen = []
    result = RemoteServer(url, transport=httpx.MockTransport(server)).translate_file(
        tmp_path / "a.txt", b"text", "auto", "en", on_progress=lambda j: seen.append((j["status"], j["done"])))
    assert result.data == b"translated" and result.extension == "txt" and result.source == "zh"
    assert result.notes == ["kept"] and len(asked) == 2
    assert seen == [("queued", 0), ("running", 1), ("running", 1), ("done", 2)]
