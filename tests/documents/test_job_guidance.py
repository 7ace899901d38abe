"""A document job's context, instructions and formality: written with its record (a column an older
jobs file gains), and still in the prompt when a restart resumes the job."""

from __future__ import annotations

import sqlite3
import time

import httpx

from mtserve.documents.jobs.records import JobRecords
from tests.documents.helpers import SwapEngine
from tests.servers import serve

TIMEOUT = 30


class PromptedSwap(SwapEngine):
    """SwapEngine that counts as an LLM, so a request's guidance reaches it."""

    prompted = True


def row(job_id: str, **changes) -> dict:
    base = {"id": job_id, "version": 1, "status": "queued", "filename": "a.txt", "format": "txt", "source": "zh",
            "target": "en", "total": 1, "done": 0, "section": None, "error": None, "error_status": None,
            "detected": None, "result_name": None, "result_filename": None, "notes": [], "upload": "a.txt",
            "glossary": None, "created_at": 1.0, "finished_at": None, "instance": "x", "chars": 3, "guidance": None,
            "owner": None}
    return {**base, **changes}


def test_a_jobs_file_from_an_older_mtserve_gains_the_guidance_column(tmp_path):
    path = tmp_path / "jobs.sqlite3"
    JobRecords(path).insert(row("a" * 32))
    with sqlite3.connect(path) as db:  # the file as an mtserve without guidance wrote it
        db.execute("ALTER TABLE jobs DROP COLUMN guidance")
    records = JobRecords(path)
    [old] = records.load()
    assert old["id"] == "a" * 32 and old["guidance"] is None
    guidance = {"context": "一个游戏的菜单", "instructions": ["Be brief."], "formality": "less"}
    records.insert(row("b" * 32, guidance=guidance, created_at=2.0))
    assert records.load()[1]["guidance"] == guidance


def test_a_resumed_job_keeps_its_context(tmp_path):
    slow = PromptedSwap(slots=1, delay_s=3.0)
    with serve(slow, home=tmp_path, files_jobs=1) as first:
        r = httpx.post(f"{first}/jobs", data={"source": "zh", "target": "de", "context": "一个游戏的菜单"},
                       files={"file": ("menu.txt", "开始游戏。\n退出。\n".encode())}, timeout=TIMEOUT)
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
    again = PromptedSwap(slots=1)
    with serve(again, home=tmp_path, files_jobs=1) as second:
        for _ in range(400):  # bounded: 20 s
            job = httpx.get(f"{second}/jobs/{job_id}", timeout=TIMEOUT).json()
            if job["status"] in ("done", "failed"):
                break
            time.sleep(0.05)
    assert job["status"] == "done", job
    assert any("restarted" in note for note in job["notes"])
    assert again.calls and {call.guidance.context for call in again.calls} == {"一个游戏的菜单"}
