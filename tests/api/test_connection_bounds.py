"""A bounded number of connections, and deadlines for a client that connects and then sends too
little: nothing at all, a request head a byte at a time, or a body that stops. Against a real server
with mtserve's protocol, with tens of sockets; each wait is bounded and polled."""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
import time

import httpx

from tests.fakes import FakeEngine
from tests.servers import metric_value, serve

WAIT_S = 10.0  # far past each deadline below; a server that never closes fails at this bound


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def connect(url: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port_of(url)), timeout=WAIT_S)


def read_until_closed(sock: socket.socket, trickle: bytes = b"", every_s: float = 0.2) -> tuple[bytes, bool]:
    """Read (sending one byte of ``trickle`` every ``every_s``) until the server closes or WAIT_S
    passes: (what came back, whether the server closed)."""
    answer = b""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if trickle:
            try:
                sock.sendall(trickle[:1])
            except OSError:
                return answer, True
            trickle = trickle[1:]
        if select.select([sock], [], [], every_s)[0]:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return answer, True
            if not chunk:
                return answer, True
            answer += chunk
    return answer, False


def closed_by_server(sock: socket.socket) -> bool:
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(65536) == b""
    except ConnectionResetError:
        return True


def error_of(answer: bytes) -> tuple[int, str]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)["error"]


def test_a_connection_that_never_sends_a_request_is_closed():
    with serve(FakeEngine(), idle_timeout_s=0.5) as url, connect(url) as sock:
        answer, closed = read_until_closed(sock)
    assert closed and answer == b""


def test_a_request_head_sent_a_byte_at_a_time_gets_a_408_at_the_header_deadline():
    with serve(FakeEngine(), header_timeout_s=1.0) as url, connect(url) as sock:
        sock.sendall(b"GET /languages HTTP/1.1\r\n")
        answer, closed = read_until_closed(sock, trickle=b"X-Slow: " + b"a" * 1000)
        alive = httpx.get(url + "/health/live", timeout=5).status_code
    status, message = error_of(answer)
    assert status == 408 and "MTSERVE_HEADER_TIMEOUT_S" in message
    assert closed and alive == 200


def test_a_body_that_stops_arriving_gets_a_408():
    with serve(FakeEngine(), body_timeout_s=1.0) as url, connect(url) as sock:
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"q\": \"")
        answer, closed = read_until_closed(sock)
    status, message = error_of(answer)
    assert status == 408 and "MTSERVE_BODY_TIMEOUT_S" in message
    assert closed


def test_a_slow_but_steady_body_is_read():
    body = json.dumps({"q": "你好。", "source": "zh", "target": "en"}).encode()
    with serve(FakeEngine(), body_timeout_s=1.0) as url, connect(url) as sock:
        sock.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body))
        for i in range(0, len(body), 8):  # a piece every 0.3 s: slower in all than the deadline, never paused that long
            sock.sendall(body[i:i + 8])
            time.sleep(0.3)
        answer, _ = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_past_the_bound_the_oldest_idle_connections_make_room_and_health_answers():
    records = Records()
    logging.getLogger("mtserve.connections").addHandler(records)
    sockets: list[socket.socket] = []
    try:
        with serve(FakeEngine(), max_connections=20, idle_timeout_s=60) as url:
            for _ in range(60):
                sockets.append(connect(url))
            probes = [httpx.get(url + "/health/live", timeout=5).status_code for _ in range(5)]
            deadline = time.monotonic() + WAIT_S
            closed: set[int] = set()
            while len(closed) < 40 and time.monotonic() < deadline:
                closed |= {i for i, sock in enumerate(sockets) if i not in closed and closed_by_server(sock)}
                time.sleep(0.05)
            made_room = metric_value(url, 'mtserve_connections_closed_total{reason="over_limit"}', 0)
    finally:
        logging.getLogger("mtserve.connections").removeHandler(records)
        for sock in sockets:
            sock.close()
    assert probes == [200] * 5
    assert len(closed) >= 40, f"{len(closed)} of 60 idle connections closed with a bound of 20"
    assert min(closed) == 0  # the oldest went first
    assert made_room >= 40
    assert len(records.records) <= 2, [r.getMessage() for r in records.records]  # one line, not one per connection


def test_past_the_bound_with_every_connection_busy_a_new_one_is_refused_at_once():
    engine = FakeEngine(delay_s=3.0, slots=3)
    with serve(engine, max_connections=3) as url:
        busy = [threading.Thread(target=httpx.post, args=(url + "/translate",), daemon=True,
                                 kwargs={"json": {"q": f"慢{i}。", "source": "zh", "target": "en"}, "timeout": 30})
                for i in range(3)]
        for thread in busy:
            thread.start()
        deadline = time.monotonic() + WAIT_S
        while engine.in_flight < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert engine.in_flight == 3
        with connect(url) as sock:
            sock.sendall(b"GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
            answer, closed = read_until_closed(sock)
        for thread in busy:
            thread.join(timeout=30)
        after = httpx.get(url + "/health/live", timeout=5).status_code
    assert closed
    if answer:  # the 503 is written first; a reset may still reach the client before it
        status, message = error_of(answer)
        assert status == 503 and "MTSERVE_MAX_CONNECTIONS" in message
    assert after == 200


def test_the_open_files_limit_is_raised_to_fit_the_bound_or_else_the_bound_is_lowered(monkeypatch):
    """A process out of file descriptors cannot accept(): asyncio retries and logs that in a loop."""
    import resource

    from mtserve.api.server import FD_RESERVE, connection_bound

    limit = {"soft": 1024, "hard": 4096}
    monkeypatch.setattr(resource, "getrlimit", lambda _: (limit["soft"], limit["hard"]))
    monkeypatch.setattr(resource, "setrlimit", lambda _, values: limit.update(soft=values[0]))
    assert connection_bound(1000) == 1000 and limit["soft"] == 1000 + FD_RESERVE
    limit.update(soft=1024, hard=1024)
    assert connection_bound(5000) == 1024 - FD_RESERVE


def test_connections_answered_and_closing_make_room_first():
    """A connection the server has refused lingers a moment to read what its client still sends;
    at the bound, those go before anyone is refused."""
    with serve(FakeEngine(), max_connections=5) as url:
        answered = [connect(url) for _ in range(5)]
        for sock in answered:
            sock.sendall(b"GET /languages HTTP/1.1\r\nno colon in this header\r\n\r\n")
        for sock in answered:
            assert sock.recv(65536).startswith(b"HTTP/1.1 400")  # answered; the server lingers on it
        status = httpx.get(url + "/health/live", timeout=5).status_code
        for sock in answered:
            sock.close()
    assert status == 200
