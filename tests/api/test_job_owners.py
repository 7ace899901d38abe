"""With API keys on, a document job belongs to the key that uploaded it: to every other caller it does
not exist (404) on every route, and its download URL is a capability of its own, apart from the job id,
that works without a key and that the log never prints whole."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mtserve.service.access import KeyStore
from tests.fakes import FakeEngine
from tests.servers import serve

TIMEOUT = 30
TEXT = "你好。".encode()


def bearer(secret: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def deepl_auth(secret: str | None) -> dict[str, str]:
    return {"Authorization": f"DeepL-Auth-Key {secret}"} if secret else {}


def wait_done(url: str, job_id: str, secret: str | None, timeout_s: float = 20) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/jobs/{job_id}", headers=bearer(secret), timeout=TIMEOUT).json()
        if job.get("status") in ("done", "failed", "cancelled"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def post_job(url: str, secret: str | None) -> dict:
    created = httpx.post(f"{url}/jobs", files={"file": ("a.txt", TEXT)}, data={"source": "zh", "target": "en"},
                         headers=bearer(secret), timeout=TIMEOUT)
    assert created.status_code == 202, created.text
    return wait_done(url, created.json()["id"], secret)


def keyed_home(home: Path) -> tuple[str, str]:
    """Two keys, A and B, in the home's key store."""
    store = KeyStore(home / "keys.sqlite3")
    return store.add(name="a")[0], store.add(name="b")[0]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory) -> Iterator[tuple[str, str, str]]:
    """Keys on, anonymous use allowed: (url, key A, key B)."""
    home = tmp_path_factory.mktemp("home")
    key_a, key_b = keyed_home(home)
    with serve(FakeEngine(), home=home, api_keys=True) as url:
        yield url, key_a, key_b


def not_found_everywhere(url: str, job_id: str, headers: dict[str, str]) -> dict[str, int]:
    """The status of each route that reads or changes a job, for one caller."""
    return {
        "status": httpx.get(f"{url}/jobs/{job_id}", headers=headers, timeout=TIMEOUT).status_code,
        "events": httpx.get(f"{url}/jobs/{job_id}/events", headers=headers, timeout=TIMEOUT).status_code,
        "delete": httpx.delete(f"{url}/jobs/{job_id}", headers=headers, timeout=TIMEOUT).status_code,
    }


def test_another_keys_job_is_404_for_every_other_caller(keyed):
    url, key_a, key_b = keyed
    job = post_job(url, key_a)
    assert job["status"] == "done", job
    for other in (bearer(key_b), {}):  # another key, and a caller without one
        assert not_found_everywhere(url, job["id"], other) == {"status": 404, "events": 404, "delete": 404}
    unknown = httpx.get(f"{url}/jobs/{'0' * 32}", headers=bearer(key_b), timeout=TIMEOUT)
    theirs = httpx.get(f"{url}/jobs/{job['id']}", headers=bearer(key_b), timeout=TIMEOUT)
    assert theirs.json()["error"].replace(job["id"], "0" * 32) == unknown.json()["error"]  # nothing to tell apart
    still = httpx.get(f"{url}/jobs/{job['id']}", headers=bearer(key_a), timeout=TIMEOUT)
    assert still.status_code == 200 and still.json()["translatedFileUrl"] == job["translatedFileUrl"]
    assert httpx.get(job["translatedFileUrl"], timeout=TIMEOUT).text == "<en>你好。"  # B's delete did nothing


def test_the_download_url_is_a_capability_apart_from_the_job_id_and_never_logged_whole(keyed, caplog):
    url, key_a, key_b = keyed
    caplog.set_level(logging.INFO)
    answer = httpx.post(f"{url}/translate_file", files={"file": ("b.txt", TEXT)},
                        data={"source": "zh", "target": "en", "api_key": key_a}, timeout=TIMEOUT)
    assert answer.status_code == 200, answer.text
    link = answer.json()["translatedFileUrl"]
    [queued] = [r for r in caplog.records if getattr(r, "event", None) == "job_queued"]
    job_id = queued.job
    assert queued.owner.startswith("key:")
    name = link.rsplit("/", 1)[1]
    token = name.split(".", 1)[0]
    assert job_id not in link and len(token) >= 43
    assert httpx.get(f"{url}/download_file/{job_id}.b.en.txt", timeout=TIMEOUT).status_code == 404
    for caller in ({}, bearer(key_b)):  # the URL alone is the permission (LibreTranslate's clients send no key)
        download = httpx.get(link, headers=caller, timeout=TIMEOUT)
        assert download.status_code == 200 and download.text == "<en>你好。"
    assert "b.en.txt" in download.headers["content-disposition"]
    assert httpx.get(f"{url}/jobs/{job_id}", headers=bearer(key_b), timeout=TIMEOUT).status_code == 404
    mine = [r for r in caplog.records if r.name.startswith("mtserve")]  # `serve` turns uvicorn's access log off
    logged = [r.getMessage() + " " + " ".join(str(v) for v in vars(r).values()) for r in mine]
    downloads = [r for r in mine if str(getattr(r, "path", "")).startswith("/download_file/")]
    assert downloads and not any(token in line for line in logged)


def test_a_deepl_document_belongs_to_its_key_and_document_key_still_guards_it(keyed):
    url, key_a, key_b = keyed
    uploaded = httpx.post(f"{url}/v2/document", files={"file": ("c.txt", TEXT)}, data={"target_lang": "EN-US"},
                          headers=deepl_auth(key_a), timeout=TIMEOUT)
    assert uploaded.status_code == 200, uploaded.text
    document_id, document_key = uploaded.json()["document_id"], uploaded.json()["document_key"]
    assert wait_done(url, document_id, key_a)["status"] == "done"
    for other in (deepl_auth(key_b), {}):
        for path in (f"/v2/document/{document_id}", f"/v2/document/{document_id}/result"):
            r = httpx.post(url + path, json={"document_key": document_key}, headers=other, timeout=TIMEOUT)
            assert r.status_code == 404, (path, r.text)
    wrong = httpx.post(f"{url}/v2/document/{document_id}", json={"document_key": "0" * 64},
                       headers=deepl_auth(key_a), timeout=TIMEOUT)
    assert wrong.status_code == 403 and "document_key" in wrong.json()["message"]
    status = httpx.post(f"{url}/v2/document/{document_id}", json={"document_key": document_key},
                        headers=deepl_auth(key_a), timeout=TIMEOUT)
    assert status.status_code == 200 and status.json()["status"] == "done"
    result = httpx.post(f"{url}/v2/document/{document_id}/result", json={"document_key": document_key},
                        headers=deepl_auth(key_a), timeout=TIMEOUT)
    assert result.status_code == 200 and result.text == "<en>你好。"


def test_an_anonymous_job_is_the_anonymous_callers_and_no_keys(keyed):
    url, _, key_b = keyed
    job = post_job(url, None)
    assert job["status"] == "done"
    assert httpx.get(f"{url}/jobs/{job['id']}", timeout=TIMEOUT).status_code == 200
    assert httpx.get(f"{url}/jobs/{job['id']}", headers=bearer(key_b), timeout=TIMEOUT).status_code == 404
    assert httpx.get(job["translatedFileUrl"], timeout=TIMEOUT).status_code == 200


def test_owners_and_download_urls_survive_a_restart(tmp_path):
    key_a, key_b = keyed_home(tmp_path)
    with serve(FakeEngine(), home=tmp_path, api_keys=True) as first:
        job = post_job(first, key_a)
    with serve(FakeEngine(), home=tmp_path, api_keys=True) as second:
        mine = httpx.get(f"{second}/jobs/{job['id']}", headers=bearer(key_a), timeout=TIMEOUT)
        others = [httpx.get(f"{second}/jobs/{job['id']}", headers=caller, timeout=TIMEOUT).status_code
                  for caller in (bearer(key_b), {})]
        link = mine.json()["translatedFileUrl"]
        download = httpx.get(link.replace(first, second), timeout=TIMEOUT)
    assert mine.status_code == 200 and others == [404, 404]
    assert link.rsplit("/", 1)[1] == job["translatedFileUrl"].rsplit("/", 1)[1]
    assert download.status_code == 200 and download.text == "<en>你好。"


def test_a_job_recorded_before_owners_is_an_anonymous_callers(tmp_path):
    key_a, key_b = keyed_home(tmp_path)
    with serve(FakeEngine(), home=tmp_path, api_keys=True) as first:
        job = post_job(first, key_a)
    with sqlite3.connect(tmp_path / "jobs.sqlite3") as db:  # the file as an mtserve without owners wrote it
        db.execute("ALTER TABLE jobs DROP COLUMN owner")
    with serve(FakeEngine(), home=tmp_path, api_keys=True) as second:
        statuses = [httpx.get(f"{second}/jobs/{job['id']}", headers=caller, timeout=TIMEOUT).status_code
                    for caller in (bearer(key_a), bearer(key_b), {})]
    assert statuses == [404, 404, 200]
