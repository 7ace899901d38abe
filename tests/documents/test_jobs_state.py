"""Document jobs as state: the queue limit under concurrent uploads, and jobs that outlive a restart."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

import mtserve.documents.jobs.store as jobs_module
from mtserve.documents.jobs.records import JobRecords
from tests.documents.helpers import SwapEngine
from tests.documents.samples import swap
from tests.servers import free_port, serve, wait_until

TIMEOUT = 30


def slow_parse(monkeypatch, delay_s: float) -> None:
    """Make every upload's parse take ``delay_s`` (in its worker thread, as a big file's would)."""
    real = jobs_module.parse_document

    async def read_slowly(*args, **kwargs):
        await asyncio.sleep(delay_s)
        return await real(*args, **kwargs)

    monkeypatch.setattr(jobs_module, "parse_document", read_slowly)


# --- files_queue holds under concurrent uploads ---------------------------------------------------
def test_concurrent_uploads_cannot_get_past_the_queue_limit(tmp_path, monkeypatch):
    slow_parse(monkeypatch, 0.4)
    engine = SwapEngine(slots=1, delay_s=2.0)  # the admitted jobs stay queued or running throughout
    with serve(engine, home=tmp_path, files_queue=2) as url:
        async def burst() -> list[httpx.Response]:
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                return await asyncio.gather(*[
                    client.post(f"{url}/jobs", data={"source": "zh", "target": "en"},
                                files={"file": (f"doc{i}.txt", f"第{i}份文件。".encode())})
                    for i in range(6)])

        answers = asyncio.run(burst())
        for r in answers:
            if r.status_code == 202:
                httpx.delete(f"{url}/jobs/{r.json()['id']}", timeout=TIMEOUT)
    statuses = sorted(r.status_code for r in answers)
    print("statuses of six concurrent uploads with files_queue=2:", statuses)
    assert statuses == [202, 202, 503, 503, 503, 503]
    refused = [r for r in answers if r.status_code == 503]
    assert all("MTSERVE_FILES_QUEUE" in r.json()["error"] and r.headers["retry-after"] for r in refused)


def test_a_refused_or_broken_upload_gives_its_place_back(tmp_path, monkeypatch):
    slow_parse(monkeypatch, 0.1)
    with serve(SwapEngine(), home=tmp_path, files_queue=1) as url:
        for _ in range(3):  # each failure releases the place it reserved
            broken = httpx.post(f"{url}/jobs", data={"source": "zh", "target": "en"},
                                files={"file": ("blank.txt", b"\n \n")}, timeout=TIMEOUT)
            assert broken.status_code == 400, broken.text
            wrong = httpx.post(f"{url}/jobs", data={"source": "zh", "target": "xx"},
                               files={"file": ("a.txt", "你好。".encode())}, timeout=TIMEOUT)
            assert wrong.status_code == 400, wrong.text
        good = httpx.post(f"{url}/jobs", data={"source": "zh", "target": "en"},
                          files={"file": ("a.txt", "你好。".encode())}, timeout=TIMEOUT)
    assert good.status_code == 202, good.text


# --- jobs outlive a restart -----------------------------------------------------------------------
def post_job(url: str, name: str, text: str, **fields) -> dict:
    r = httpx.post(f"{url}/jobs", data={"source": "zh", "target": "en", **fields},
                   files={"file": (name, text.encode())}, timeout=TIMEOUT)
    assert r.status_code == 202, r.text
    return r.json()


def job_of(url: str, job_id: str) -> dict:
    r = httpx.get(f"{url}/jobs/{job_id}", timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()


def wait_for(url: str, job_id: str, statuses=("done", "failed", "cancelled"), timeout_s: float = 20) -> dict:
    deadline = time.monotonic() + timeout_s
    job = job_of(url, job_id)
    while job["status"] not in statuses and time.monotonic() < deadline:
        time.sleep(0.05)
        job = job_of(url, job_id)
    assert job["status"] in statuses, job
    return job


QUICK, SLOW = "快句子。", "慢句子一。\n慢句子二。\n慢句子三。"


def test_queued_running_and_finished_jobs_answer_after_a_clean_restart(tmp_path):
    slow = SwapEngine(slots=1, delay_s=3.0, delays={QUICK: 0.0})
    with serve(slow, home=tmp_path, files_jobs=1) as first:
        finished = post_job(first, "quick.txt", QUICK)
        finished = wait_for(first, finished["id"])
        running = post_job(first, "slow.txt", SLOW)
        queued = post_job(first, "later.txt", "排队的文件。")
        wait_for(first, running["id"], statuses=("running",))
        on_disk = {row["id"]: row["status"] for row in JobRecords(tmp_path / "jobs.sqlite3").load()}
        before = {j: job_of(first, j)["status"] for j in (running["id"], queued["id"])}
    assert finished["status"] == "done"
    assert before == {running["id"]: "running", queued["id"]: "queued"}

    with serve(SwapEngine(slots=1), home=tmp_path, files_jobs=1) as second:
        kept = job_of(second, finished["id"])
        resumed = wait_for(second, running["id"])
        later = wait_for(second, queued["id"])
        download = httpx.get(f"{second}/download_file/{resumed['translatedFileUrl'].rsplit('/', 1)[1]}",
                             timeout=TIMEOUT)
        old_link = httpx.get(f"{second}/download_file/{kept['translatedFileUrl'].rsplit('/', 1)[1]}",
                             timeout=TIMEOUT)
        deleted = httpx.delete(f"{second}/jobs/{finished['id']}", timeout=TIMEOUT)
        gone = httpx.get(f"{second}/jobs/{finished['id']}", timeout=TIMEOUT)
    assert kept["status"] == "done" and kept["resultFilename"] == "quick.en.txt"
    assert kept["createdAt"] == finished["createdAt"] and kept["finishedAt"] == finished["finishedAt"]
    assert old_link.status_code == 200 and old_link.text == swap(QUICK)
    assert resumed["status"] == "done" and resumed["done"] == resumed["total"] == 3
    assert any("restarted" in note for note in resumed["notes"])
    assert download.status_code == 200 and download.text == "\n".join(swap(line) for line in SLOW.split("\n"))
    assert later["status"] == "done"
    assert deleted.status_code == 200 and deleted.json()["deleted"] is True and gone.status_code == 404
    assert {row["id"] for row in JobRecords(tmp_path / "jobs.sqlite3").load()} == {running["id"], queued["id"]}
    assert on_disk.get(queued["id"]) == "queued"  # the record was written before the 202 went out


CRASHING_SERVER = """
import sys
import uvicorn
from mtserve.api.app import create_app
from mtserve.settings import Settings
from tests.documents.helpers import SwapEngine

port, home = int(sys.argv[1]), sys.argv[2]
app = create_app(Settings(port=port, home=home, files_jobs=1), engine=SwapEngine(slots=1, delay_s=3.0))
uvicorn.run(app, host="127.0.0.1", port=port, log_config=None, http="h11")
"""


def test_after_a_crash_jobs_resume_or_fail_with_the_reason(tmp_path):
    port = free_port()
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-c", CRASHING_SERVER, str(port), str(tmp_path)], cwd=root,
                               env={**os.environ, "PYTHONPATH": str(root)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        running = post_job(url, "slow.txt", SLOW)
        lost = post_job(url, "lost.txt", "上传文件会丢失。")
        markdown = post_job(url, "notes.md", "# 标题\n\n正文。\n")
        wait_for(url, running["id"], statuses=("running",))
        answered = [job_of(url, j["id"])["status"] for j in (running, lost, markdown)]
    finally:
        process.kill()  # no shutdown: the records say what the jobs were doing when it died
        process.wait(timeout=10)
    assert answered == ["running", "queued", "queued"]
    (tmp_path / "files" / "uploads" / f"{lost['id']}.txt").unlink()

    with serve(SwapEngine(), home=tmp_path, files_formats="txt") as second:
        resumed = wait_for(second, running["id"])
        failed = wait_for(second, lost["id"])
        disabled = wait_for(second, markdown["id"])
    assert resumed["status"] == "done" and resumed["translatedFileUrl"]
    assert failed["status"] == "failed" and "upload is gone" in failed["error"]
    assert "upload the document again" in failed["error"]
    assert disabled["status"] == "failed" and "no longer takes its format" in disabled["error"]
    assert "'.md'" in disabled["error"]
    leftovers = sorted(p.name for p in (tmp_path / "files" / "uploads").iterdir())
    assert leftovers == []  # every upload was read again or given up, none is left to expire unseen


def test_expiry_deletes_records_and_files_together(tmp_path):
    with serve(SwapEngine(), home=tmp_path, files_ttl_s=0.6) as url:
        job = wait_for(url, post_job(url, "brief.txt", "一会儿就过期。")["id"])
        assert JobRecords(tmp_path / "jobs.sqlite3").count() == 1
        wait_until(lambda: JobRecords(tmp_path / "jobs.sqlite3").count() == 0
                   and not [p for p in (tmp_path / "files").rglob("*") if p.is_file()],
                   15, "the job's record and files deleted on expiry")
        gone = httpx.get(f"{url}/jobs/{job['id']}", timeout=TIMEOUT)
    assert gone.status_code == 404
    assert JobRecords(tmp_path / "jobs.sqlite3").count() == 0
    assert [p for p in (tmp_path / "files").rglob("*") if p.is_file()] == []


def test_a_second_live_server_on_the_same_home_leaves_the_first_ones_jobs_alone(tmp_path):
    slow = SwapEngine(slots=1, delay_s=0.6)
    with serve(slow, home=tmp_path, files_jobs=1) as first:
        running = post_job(first, "slow.txt", SLOW)
        wait_for(first, running["id"], statuses=("running",))
        other = SwapEngine()
        with serve(other, home=tmp_path) as second:  # a Ray replica on the same node, say
            unknown_there = httpx.get(f"{second}/jobs/{running['id']}", timeout=TIMEOUT)
            own = wait_for(second, post_job(second, "own.txt", "第二台的文件。")["id"])
        done = wait_for(first, running["id"])
    assert unknown_there.status_code == 404  # not resumed there: its own server still runs it
    assert other.calls and all("慢句子" not in c.text for c in other.calls)
    assert own["status"] == "done" and done["status"] == "done"
    assert done["notes"] and not any("restarted" in note for note in done["notes"])
