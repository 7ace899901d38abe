"""With require_api_key on, every route that does or reveals work needs the key, and an upload's key
is checked before its body is read."""

from __future__ import annotations

import time

import httpx
import pytest

from mtserve.service.access import KeyStore
from tests.fakes import FakeEngine
from tests.hostile.bodies import BOUNDARY, MULTIPART, multipart
from tests.servers import raw_request, serve


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    """A server with keys required, and a key limited to 5 requests a minute."""
    home = tmp_path_factory.mktemp("home")
    secret, _ = KeyStore(home / "keys.sqlite3").add(name="test", rpm=5)
    with serve(FakeEngine(), home=home, api_keys=True, require_api_key=True) as url:
        yield url, secret


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.mark.parametrize("method, path, status", [  # a missing key: LibreTranslate's 400, OpenAI's 401
    ("GET", "/jobs/{job}", 400), ("GET", "/jobs/{job}/events", 400), ("DELETE", "/jobs/{job}", 400),
    ("GET", "/v1/models", 401),
])
def test_routes_that_reveal_work_need_the_key(keyed, method: str, path: str, status: int) -> None:
    url, _ = keyed
    r = httpx.request(method, url + path.format(job="0" * 32), timeout=10)
    assert r.status_code == status, r.text
    assert "API key" in r.text


@pytest.mark.parametrize("method, path", [
    ("POST", "/v2/translate"), ("GET", "/v2/languages"), ("GET", "/v2/usage"), ("GET", "/v2/glossaries"),
    ("POST", "/v2/document"), ("POST", "/v2/document/" + "A" * 32),
])
def test_a_deepl_route_without_the_key_names_deepl_s_header(keyed, method: str, path: str) -> None:
    url, _ = keyed
    r = httpx.request(method, url + path, timeout=10)
    assert r.status_code == 403, r.text  # DeepL's status for a missing key
    assert "Authorization: DeepL-Auth-Key <key>" in r.json()["message"] and "Bearer" not in r.text


def test_a_document_round_trip_with_the_key_in_a_header_and_in_the_url(keyed) -> None:
    url, secret = keyed
    created = httpx.post(f"{url}/jobs", files={"file": ("a.txt", "你好。".encode())},
                         data={"source": "zh", "target": "en"}, headers=bearer(secret), timeout=30)
    assert created.status_code == 202, created.text
    job = created.json()
    deadline = time.monotonic() + 10
    while job["status"] not in ("done", "failed") and time.monotonic() < deadline:
        job = httpx.get(f"{url}/jobs/{job['id']}", headers=bearer(secret)).json()  # polls: not rate limited
        time.sleep(0.05)
    assert job["status"] == "done", job
    polls = [httpx.get(f"{url}/jobs/{job['id']}", headers=bearer(secret)).status_code for _ in range(8)]
    assert polls == [200] * 8  # more than the key's 5 a minute: reading back work is not rate limited
    download = job["translatedFileUrl"]
    for key in ({}, {"api_key": secret}):  # the URL is the permission: LibreTranslate's clients fetch it bare
        got = httpx.get(download, params=key)
        assert got.status_code == 200 and got.text.startswith("<en>")
    assert httpx.get(f"{url}/download_file/{job['id']}.a.en.txt").status_code == 404  # not from the job id
    assert httpx.get(f"{url}/jobs/{job['id']}").status_code == 400
    assert httpx.get(f"{url}/jobs/{job['id']}?api_key=mts_wrong").status_code == 403  # a wrong key
    models = httpx.get(f"{url}/v1/models", headers=bearer(secret))
    assert models.status_code == 200 and models.json()["object"] == "list"


def test_metrics_can_be_protected_and_are_open_by_default(tmp_path) -> None:
    secret, _ = KeyStore(tmp_path / "keys.sqlite3").add(name="prometheus")
    with serve(FakeEngine(), home=tmp_path, api_keys=True) as url:
        open_metrics = httpx.get(f"{url}/metrics")
    with serve(FakeEngine(), home=tmp_path, api_keys=True, metrics_require_key=True) as url:
        refused = httpx.get(f"{url}/metrics")
        scraped = httpx.get(f"{url}/metrics", headers=bearer(secret))
    with serve(FakeEngine(), home=tmp_path, metrics_require_key=True) as url:
        no_keys = httpx.get(f"{url}/metrics")
    assert open_metrics.status_code == 200
    assert refused.status_code == 403 and "API key" in refused.json()["error"]
    assert scraped.status_code == 200 and "mtserve_requests_total" in scraped.text
    assert no_keys.status_code == 403 and "MTSERVE_API_KEYS" in no_keys.json()["error"]


# --- the key before the body ---------------------------------------------------------------------
def upload_head(path: str, length: int, extra: str = "") -> str:
    return (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: {MULTIPART}\r\n"
            f"Content-Length: {length}\r\n{extra}\r\n")


def test_a_wrong_header_key_is_refused_before_the_upload_is_read(keyed) -> None:
    url, _ = keyed
    head = upload_head("/translate_file", 15_000_000, "Authorization: Bearer mts_wrong\r\n")
    answer = raw_request(url, head, b"")
    assert answer.startswith(b"HTTP/1.1 403"), answer[:200]
    assert b"Invalid API key" in answer  # LibreTranslate's words


@pytest.mark.parametrize("path, status", [("/v2/translate", 403), ("/v2/glossaries", 403),
                                          ("/v1/chat/completions", 401)])
def test_deepl_and_openai_keys_are_checked_before_the_body_is_read(keyed, path: str, status: int) -> None:
    url, _ = keyed  # their key is only ever in a header, so there is nothing to wait for
    head = (f"POST {path} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            "Content-Length: 900000\r\n\r\n")
    answer = raw_request(url, head, b'{"text": ["')
    assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:200]
    if status == 401:
        assert b"www-authenticate: Bearer" in answer.lower().replace(b"bearer", b"Bearer")


def test_an_upload_with_no_key_is_refused_once_more_than_a_plain_body_was_read(keyed) -> None:
    url, _ = keyed
    start = multipart([("target", None, b"en"), ("file", "big.txt", b"x" * 1_500_000)])[:1_400_000]
    answer = raw_request(url, upload_head("/jobs", 15_000_000), start)
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]  # a missing key, in LibreTranslate's status
    assert b"as the api_key form field before the file field" in answer


def test_a_wrong_key_field_before_the_file_is_refused_before_the_file_is_read(keyed) -> None:
    url, _ = keyed
    start = multipart([("api_key", None, b"mts_wrong"), ("file", "big.txt", b"x" * 100_000)])[:50_000]
    answer = raw_request(url, upload_head("/translate_file", 15_000_000), start)
    assert answer.startswith(b"HTTP/1.1 403"), answer[:200]
    assert b"Invalid API key" in answer  # LibreTranslate's words


def test_libretranslate_clients_that_send_the_key_after_a_small_file_still_work(keyed) -> None:
    url, secret = keyed
    body = multipart([("file", "a.txt", "你好。".encode()), ("source", None, b"zh"), ("target", None, b"en"),
                      ("api_key", None, secret.encode())])
    r = httpx.post(f"{url}/translate_file", content=body, headers={"content-type": MULTIPART}, timeout=30)
    assert r.status_code == 200, r.text
    assert BOUNDARY not in r.text


def test_a_big_upload_with_its_key_field_first_is_read(keyed) -> None:
    url, secret = keyed
    text = b"line\n" * 400_000  # 2 MB: past the unauthenticated allowance, so the key must lead
    body = multipart([("api_key", None, secret.encode()), ("source", None, b"en"), ("target", None, b"de"),
                      ("file", "big.txt", text)])
    r = httpx.post(f"{url}/jobs", content=body, headers={"content-type": MULTIPART}, timeout=30)
    assert r.status_code == 413, r.text  # read whole and parsed: refused for its segment count, not its key
    assert "MTSERVE_FILES_MAX_SEGMENTS" in r.json()["error"]


def test_each_familys_official_client_reads_a_refused_key_as_its_own_auth_error(keyed) -> None:
    import deepl
    import openai

    url, _ = keyed
    for key in ("", "mts_wrong"):  # openai's client sends an empty key as "Bearer " (no key)
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=key or "-", max_retries=0)
        if not key:
            client = client.with_options(default_headers={"Authorization": ""})
        with pytest.raises(openai.AuthenticationError) as refused:
            client.chat.completions.create(model="mtserve", messages=[{"role": "user", "content": "你好"}])
        assert refused.value.status_code == 401 and "API key" in refused.value.message
    with pytest.raises(deepl.AuthorizationException):
        deepl.Translator("mts_wrong", server_url=url).translate_text("你好", target_lang="EN-US")
