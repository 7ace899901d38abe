"""Document jobs as state: the queue limit under concurrent uploads, and jobs that outlive a restart."""

from __future__ import annotations

import asyncio
import time

import httpx

import mtserve.documents.jobs as jobs_module
from tests.api.test_api_behaviour import serve
from tests.documents.helpers import SwapEngine

TIMEOUT = 30


def slow_parse(monkeypatch, delay_s: float) -> None:
    """Make every upload's parse take ``delay_s`` (in its worker thread, as a big file's would)."""
    real = jobs_module.read_document

    def read_slowly(*args, **kwargs):
        time.sleep(delay_s)
        return real(*args, **kwargs)

    monkeypatch.setattr(jobs_module, "read_document", read_slowly)


# --- files_queue holds under concurrent uploads (issue 14, defect 6) ------------------------------
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
