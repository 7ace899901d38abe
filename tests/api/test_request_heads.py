"""Bounds on a request's head and a chunked body's framing that hold however the bytes arrive.

h11 bounds a request head only while it is incomplete; one that arrives in a single read was parsed
whole, whatever its size. Each case is sent in one write and in small pieces, to a real server with
mtserve's protocol; each gets a JSON error that names its setting, and the connection is closed.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import time

import httpx
import pytest

from tests.fakes import FakeEngine
from tests.servers import serve

BODY_LIMIT = 1_000


@pytest.fixture(scope="module")
def url():
    with serve(FakeEngine(), max_body_bytes=BODY_LIMIT) as url:
        yield url


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def exchange(url: str, data: bytes, piece: int | None = None, wait_s: float = 10.0) -> tuple[bytes, bool]:
    """Send ``data`` (in pieces of ``piece`` bytes if given), then read until the server closes the
    connection or ``wait_s`` passes: (what came back, whether the server closed)."""
    with socket.create_connection(("127.0.0.1", port_of(url)), timeout=wait_s) as sock:
        try:
            for start in range(0, len(data), piece or len(data)):
                sock.sendall(data[start:start + (piece or len(data))])
        except OSError:  # the server answered and closed before it had everything: that is allowed
            pass
        answer = b""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if not select.select([sock], [], [], 0.1)[0]:
                continue
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return answer, True
            if not chunk:
                return answer, True
            answer += chunk
        return answer, False


def error_of(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"content-type: application/json" in head.lower(), head
    return status, json.loads(body)["error"]


HEADS = {
    "a 64 KB request line": (b"GET /languages?q=" + b"a" * 65_536 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                             414, "MTSERVE_MAX_REQUEST_LINE_BYTES"),
    "a 100 KB header": (b"GET /languages HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 100_000 + b"\r\n\r\n",
                        431, "MTSERVE_MAX_HEADER_BYTES"),
    "10,000 headers": (b"GET /languages HTTP/1.1\r\nHost: x\r\n"
                       + b"".join(b"X-H%d: v\r\n" % i for i in range(10_000)) + b"\r\n",
                       431, "MTSERVE_MAX_HEADERS"),
}


@pytest.mark.parametrize("piece", [None, 1024], ids=["one-write", "in-pieces"])
@pytest.mark.parametrize("name", HEADS)
def test_an_oversized_request_head_is_refused_with_the_setting_named(url, name: str, piece: int | None):
    data, status, setting = HEADS[name]
    answer, closed = exchange(url, data, piece)
    assert answer, "no answer"
    assert error_of(answer)[0] == status, answer[:300]
    assert setting in error_of(answer)[1]
    assert closed
    assert httpx.get(url + "/health/live", timeout=5).status_code == 200


def test_a_head_within_the_bounds_is_served(url):
    headers = {f"X-H{i}": "v" * 100 for i in range(80)}  # 80 headers, about 9 KB
    assert httpx.get(url + "/languages", headers=headers, timeout=10).status_code == 200


CHUNKED_HEAD = (b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")


def test_a_chunk_larger_than_any_body_is_refused_before_its_data(url):
    answer, closed = exchange(url, CHUNKED_HEAD + b"FFFFFFFFFFFFFFFFFFFF\r\n")  # 20 hex digits, and no data
    assert answer, "the server waited for the chunk's data"
    status, message = error_of(answer)
    assert status == 413 and "MTSERVE_MAX_BODY_BYTES" in message
    assert closed


def test_after_a_413_on_a_chunked_body_the_connection_is_closed(url):
    """The client goes on sending; the server answers 413 and closes instead of reading the rest."""
    chunk = b"%x\r\n%s\r\n" % (500, b"x" * 500)
    with socket.create_connection(("127.0.0.1", port_of(url)), timeout=10) as sock:
        sock.sendall(CHUNKED_HEAD)
        answer, closed = b"", False
        deadline = time.monotonic() + 10
        while not closed and time.monotonic() < deadline:
            try:
                sock.sendall(chunk)
            except OSError:
                closed = True
            while select.select([sock], [], [], 0.05)[0]:
                try:
                    data = sock.recv(65536)
                except ConnectionResetError:
                    data = b""
                if not data:
                    closed = True
                    break
                answer += data
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert closed, "the server kept reading a body it had refused"


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_a_flood_of_bad_request_heads_is_counted_not_logged_one_line_each(url):
    records = Records()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "mtserve.connections")]
    for logger in loggers:
        logger.addHandler(records)
    try:
        for _ in range(30):
            answer, _ = exchange(url, b"GET /languages HTTP/1.1\r\nno colon in this header\r\n\r\n", wait_s=5)
            assert answer.startswith(b"HTTP/1.1 400")
    finally:
        for logger in loggers:
            logger.removeHandler(records)
    assert len(records.records) <= 2, [r.getMessage() for r in records.records]
