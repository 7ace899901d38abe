"""Whose address a request comes from: the socket's, unless the operator names a trusted proxy
(MTSERVE_FORWARDED_ALLOW_IPS). A client that may set X-Forwarded-For itself must not pick the
address its anonymous rate limit is counted by."""

from __future__ import annotations

import httpx

from tests.fakes import FakeEngine
from tests.servers import serve


def translate_as(url: str, forwarded_for: str) -> int:
    return httpx.post(f"{url}/translate", json={"q": "你好。", "source": "zh", "target": "en"},
                      headers={"X-Forwarded-For": forwarded_for}, timeout=30).status_code


def test_a_rotating_forwarded_for_header_does_not_escape_the_anonymous_limit(tmp_path):
    with serve(FakeEngine(), home=tmp_path, api_keys=True, anonymous_rpm=3) as url:
        statuses = [translate_as(url, f"203.0.113.{i}") for i in range(6)]
    assert statuses == [200, 200, 200, 429, 429, 429]


def test_behind_a_named_proxy_each_forwarded_client_has_its_own_limit(tmp_path):
    with serve(FakeEngine(), home=tmp_path, api_keys=True, anonymous_rpm=2,
               forwarded_allow_ips="127.0.0.1") as url:
        rotated = [translate_as(url, f"203.0.113.{i}") for i in range(4)]
        repeated = [translate_as(url, "198.51.100.7") for _ in range(3)]
    assert rotated == [200, 200, 200, 200]
    assert repeated == [200, 200, 429]
