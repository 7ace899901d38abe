"""Every case of tests/hostile/bodies.py against a real uvicorn with a test-double engine.

Each answer is in its case's status range, every error is a JSON body in its API's shape, no
request takes more than a generous 5 s, and the server is alive after each one.
"""

from __future__ import annotations

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
