"""Every case of tests/hostile/bodies.py against a real uvicorn with a test-double engine.

Each answer is in its case's status range, every error is a JSON body in its API's shape, no
request takes more than a generous 5 s, and the server is alive after each one.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from tests.fakes import FakeEngine
from tests.hostile.bodies import HostileRequest, error_message, hostile_requests
from tests.servers import serve

REQUEST_BOUND_S = 5.0  # generous: each of these is refused (or translated by the fake) in milliseconds


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """One server with the default settings and one with keys required, for the whole module."""
    home = tmp_path_factory.mktemp("keys")
    with serve(FakeEngine(slots=2), home=tmp_path_factory.mktemp("plain")) as plain, \
            serve(FakeEngine(slots=2), home=home, api_keys=True, require_api_key=True) as keyed:
        yield {"": plain, "keys": keyed}


def send(url: str, case: HostileRequest) -> tuple[httpx.Response, float]:
    started = time.monotonic()
    response = httpx.request(case.method, url + case.path, timeout=30, **case.httpx_kwargs())
    return response, time.monotonic() - started


@pytest.mark.parametrize("case", hostile_requests(), ids=lambda case: case.name)
def test_a_hostile_request_gets_a_clear_answer_and_the_server_lives_on(servers, case: HostileRequest):
    url = servers[case.needs]
    response, elapsed = send(url, case)
    print(f"{case.name}: {response.status_code} in {elapsed * 1000:.0f} ms")
    low, high = case.status
    assert low <= response.status_code <= high, response.text[:300]
    if response.status_code >= 400:
        message = error_message(case.path, response.json())
        assert message, response.text[:300]
        assert len(message) < 1000, "an error message does not echo hostile input back whole"
        assert "internal error" not in message
    assert elapsed < REQUEST_BOUND_S
    assert httpx.get(url + "/health/live", timeout=5).status_code == 200


@pytest.mark.parametrize("raw", [
    "GET /translate?q=你好&source=zh&target=en HTTP/1.1\r\nHost: x\r\n\r\n".encode(),  # curl sends a URL unencoded
    b"POST /translate HTTP/1.1\r\nHost: x\r\nno colon in this header\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(32) + b"\r\n\r\n",  # a TLS hello to the plain port
], ids=["raw-utf8-url", "header-without-colon", "tls-hello"])
def test_bytes_that_are_not_http_get_the_apis_json_error(servers, raw: bytes):
    """The HTTP parser answers these before the app sees them; the answer is still JSON that says what to fix."""
    url = servers[""]
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), head
    assert b"content-type: application/json" in head.lower()
    assert "percent-encode" in json.loads(body)["error"]
    assert httpx.get(url + "/health/live", timeout=5).status_code == 200
