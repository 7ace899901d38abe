"""mtserve's HTTP/1.1 protocol: uvicorn's h11 protocol, with bounds a public server needs.

uvicorn's h11 protocol trusts its peer further than a server on a network can:

- h11 bounds a request head only while it is incomplete (16 KiB), so a head that arrives in one
  read (up to 256 KiB) was parsed whole, whatever its request line, header bytes or header count;
  and it believes a chunk size of 20 hex digits, then waits for that much data.
- After answering a request before its body was read (a 413), it read and dropped the rest of the
  body and kept the connection for the next request.
- A client that stops reading a response is never noticed: its stream waits on a send for as long
  as the client likes, holding its engine work.
- Connections are not bounded in number (uvicorn's limit_concurrency answers *requests* with 503
  past its count, and keeps every connection), and its only timer, keep-alive, starts after a
  response: a connection that never sends a request, or sends its head a byte at a time, or stops
  half-way through its body, is held as long as the client likes. Enough of them run the process
  out of file descriptors, and asyncio's accept() then fails, logs and retries in a loop.

Here each bound holds however the bytes arrive (``ConnectionLimits``, from the settings), and the
parser's own answer to a request it cannot read is JSON ``{"error": ...}`` that says what to fix,
as every other error of the API. Past ``max_connections`` a new connection closes the one that has
waited longest for a request (an idle or a trickling client), so new clients, /health's probes
among them, are served while a flood of idle sockets lasts; only when every connection is busy
with a request is the new one refused at once.
"""

from __future__ import annotations

import asyncio
import collections
import http
import json
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from mtserve.service.metrics import Metrics
from mtserve.settings import Settings

log = logging.getLogger("mtserve.connections")

INVALID_HTTP = (
    "invalid HTTP request: its request line or a header could not be parsed. A URL is ASCII: "
    "percent-encode other characters (?q=%E4%BD%A0%E5%A5%BD for ?q=你好, as curl -G --data-urlencode does), "
    "and each header is one 'Name: value' line")
# After the server has answered a request it will not read to the end, what the client still sends is
# read and dropped this long before the connection closes: closing with those bytes unread would make
# the kernel reset the connection, which can destroy the answer before the client has read it.
LINGER_S = 2.0
LOG_EVERY_S = 10.0  # connections closed by the server are logged as counts, at most this often
# A translation stream still open this long before the shutdown grace period ends is ended by the app,
# with an event that says why, before uvicorn cancels what is left (which would end it without a word).
STREAM_CUT_MARGIN_S = 0.5


@dataclass(frozen=True)
class ConnectionLimits:
    """The bounds one server's connections are held to; see the settings of the same names."""

    max_connections: int
    header_timeout_s: float
    body_timeout_s: float
    write_timeout_s: float
    send_buffer_bytes: int
    max_request_line_bytes: int
    max_header_bytes: int
    max_headers: int
    max_body_bytes: int  # the largest body any route accepts: a chunk declared larger is refused at once

    @classmethod
    def from_settings(cls, settings: Settings, max_connections: int, max_body_bytes: int) -> "ConnectionLimits":
        return cls(max_connections=max_connections, header_timeout_s=settings.header_timeout_s,
                   body_timeout_s=settings.body_timeout_s, write_timeout_s=settings.write_timeout_s,
                   send_buffer_bytes=settings.send_buffer_bytes, max_request_line_bytes=settings.max_request_line_bytes,
                   max_header_bytes=settings.max_header_bytes, max_headers=settings.max_headers,
                   max_body_bytes=max_body_bytes)


class RequestRefused(h11.RemoteProtocolError):
    """A request the server will not read further; its message is the client's JSON error."""


class GuardedConnection(h11.Connection):
    """h11's server side, with the request head and a chunked body's framing held to ``limits``."""

    def __init__(self, limits: ConnectionLimits):
        # h11's own bound, on a head still incomplete, is the two bounds together; the parts are
        # told apart below, and a complete head is measured once parsed.
        super().__init__(h11.SERVER, max_incomplete_event_size=limits.max_request_line_bytes
                         + limits.max_header_bytes + 4)
        self.limits = limits
        self.refusal: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        reading_head = self.their_state is h11.IDLE
        try:
            event = super().next_event()
            if isinstance(event, h11.Request):
                self._check_head(event)
            elif self.their_state is h11.SEND_BODY:
                self._check_chunk()
            return event
        except h11.RemoteProtocolError as exc:
            self.refusal = self._explained(exc, reading_head)
            raise

    def _check_head(self, request: h11.Request) -> None:
        limits = self.limits
        line = len(request.method) + len(request.target) + len(b"  HTTP/1.1")
        if line > limits.max_request_line_bytes:
            raise _line_too_long(limits)
        if len(request.headers) > limits.max_headers:
            raise _too_many_headers(limits)
        size = sum(len(name) + len(value) + 4 for name, value in request.headers)
        if size > limits.max_header_bytes:
            raise _headers_too_big(limits)

    def _check_chunk(self) -> None:
        # h11 keeps the size of the chunk being read to itself (h11 0.16: its ChunkedReader's
        # _bytes_in_chunk); tests/api/test_request_heads.py fails if a new h11 hides it elsewhere.
        declared = getattr(getattr(self, "_reader", None), "_bytes_in_chunk", 0)
        if declared > self.limits.max_body_bytes:
            raise RequestRefused(
                f"a chunk of the body declares {declared:,} bytes, more than the largest body this server "
                f"accepts ({self.limits.max_body_bytes:,} bytes: MTSERVE_MAX_BODY_BYTES, or MTSERVE_FILES_MAX_MB "
                "for documents)", error_status_hint=413)

    def _explained(self, exc: h11.RemoteProtocolError, reading_head: bool) -> h11.RemoteProtocolError:
        """h11's "Receive buffer too long" (an incomplete event over its bound), said as which bound."""
        if isinstance(exc, RequestRefused) or exc.error_status_hint != 431:
            return exc
        if not reading_head:
            return RequestRefused(
                f"a chunk-size line or trailer of the body is over {self._max_incomplete_event_size:,} bytes",
                error_status_hint=400)
        pending = self.trailing_data[0]
        first_line_end = pending.find(b"\n")
        if first_line_end < 0 or first_line_end > self.limits.max_request_line_bytes:
            return _line_too_long(self.limits)
        if pending.count(b"\n") - 1 > self.limits.max_headers:
            return _too_many_headers(self.limits)
        return _headers_too_big(self.limits)


def _line_too_long(limits: ConnectionLimits) -> RequestRefused:
    return RequestRefused(
        f"the request line (method and URL) is over {limits.max_request_line_bytes:,} bytes "
        "(MTSERVE_MAX_REQUEST_LINE_BYTES): send long text in a POST body, not in the URL", error_status_hint=414)


def _too_many_headers(limits: ConnectionLimits) -> RequestRefused:
    return RequestRefused(f"the request has more than {limits.max_headers} headers (MTSERVE_MAX_HEADERS)",
                          error_status_hint=431)


def _headers_too_big(limits: ConnectionLimits) -> RequestRefused:
    return RequestRefused(
        f"the request's headers are over {limits.max_header_bytes:,} bytes together "
        "(MTSERVE_MAX_HEADER_BYTES); send fewer or shorter headers", error_status_hint=431)


class WithoutInvalidRequestLines(logging.Filter):
    """Drops uvicorn's line per request head h11 refuses: a flood of bad heads would be a line each.
    The protocol counts them (mtserve_connections_closed_total{reason="refused"}) and logs the counts."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != "Invalid HTTP request received."


def quiet_uvicorn_parser_log() -> None:
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, WithoutInvalidRequestLines) for f in logger.filters):
        logger.addFilter(WithoutInvalidRequestLines())


def json_answer(status: int, message: str) -> bytes:
    """A whole HTTP/1.1 response that carries ``{"error": message}`` and closes the connection."""
    body = json.dumps({"error": message}, ensure_ascii=False).encode("utf-8")
    head = (f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("latin-1") + body


class ServerClosing:
    """The server's shutdown as the app's streams see it: ``begun()`` resolves when it starts,
    ``cut()`` when the grace period is nearly over. Set by the protocol: uvicorn tells each
    connection when it shuts down, and nothing else tells the app before the grace period ends."""

    def __init__(self, grace_s: float):
        self.grace_s = grace_s
        self._begun: asyncio.Future[None] | None = None
        self._cut: asyncio.Future[None] | None = None

    def begun(self) -> asyncio.Future[None]:
        if self._begun is None:
            self._begun = asyncio.get_running_loop().create_future()
        return self._begun

    def cut(self) -> asyncio.Future[None]:
        if self._cut is None:
            self._cut = asyncio.get_running_loop().create_future()
        return self._cut

    def begin(self) -> None:
        begun = self.begun()
        if begun.done():
            return
        begun.set_result(None)
        cut = self.cut()
        asyncio.get_running_loop().call_later(max(0.0, self.grace_s - STREAM_CUT_MARGIN_S),
                                              lambda: cut.done() or cut.set_result(None))


class ConnectionBoard:
    """What one server's connections share: their limits, those waiting for a request (the one that
    has waited longest first), and the count of those the server closed, logged now and then."""

    def __init__(self, limits: ConnectionLimits, metrics: Metrics | None = None,
                 closing: ServerClosing | None = None):
        self.limits = limits
        self.metrics = metrics
        self.closing = closing
        self.waiting: dict[HardenedH11Protocol, None] = {}
        self.lingering: dict[HardenedH11Protocol, None] = {}  # answered, and about to close: first to go
        self._unlogged: collections.Counter[str] = collections.Counter()
        self._logged_at = -LOG_EVERY_S

    def make_room(self, open_now: int) -> bool:
        """Whether a new connection may stay: within the bound, or once the connection that has waited
        longest for a request is closed for it."""
        if open_now <= self.limits.max_connections:
            return True
        oldest = next(iter(self.lingering), None) or next(iter(self.waiting), None)
        self.closed("over_limit")
        if oldest is None:
            return False
        oldest.evict()
        return True

    def closed(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.connections_closed.labels(reason=reason).inc()
        if reason == "idle":
            return  # a kept-alive connection's ordinary end
        self._unlogged[reason] += 1
        now = time.monotonic()
        if now - self._logged_at >= LOG_EVERY_S:
            counts = dict(self._unlogged)
            log.warning("connections closed by the server: %s", ", ".join(f"{k} {v}" for k, v in counts.items()),
                        extra={"event": "connections_closed", **counts,
                               "max_connections": self.limits.max_connections})
            self._unlogged.clear()
            self._logged_at = now

    def open_now(self, count: int) -> None:
        if self.metrics is not None:
            self.metrics.connections_open.set(count)


class HardenedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, held to its board's limits (``hardened_protocol`` makes the class for a
    server). The keep-alive timer, which uvicorn starts after each response, also runs from the
    moment a connection is made: it is the idle timeout (idle_timeout_s)."""

    board: ConnectionBoard

    def __init__(self, config: Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.limits = self.board.limits
        self.conn = GuardedConnection(self.limits)
        self._lingering = False
        self._linger_timer: asyncio.TimerHandle | None = None
        self._read_timer: asyncio.TimerHandle | None = None  # the head's, or the body's
        self._write_timer: asyncio.TimerHandle | None = None
        self._head_started = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        sock = transport.get_extra_info("socket")
        if self.limits.send_buffer_bytes and sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.limits.send_buffer_bytes)
            except OSError:
                pass
        self.board.open_now(len(self.connections))
        if not self.board.make_room(len(self.connections)):
            transport.write(json_answer(503, (
                f"the server has its most connections open ({self.limits.max_connections}: "
                "MTSERVE_MAX_CONNECTIONS), all busy with requests; retry shortly")))
            transport.close()
            return
        self.board.waiting[self] = None
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # answered already: what the client still sends is dropped
        if not self._head_started and self.conn.their_state is h11.IDLE:
            self._head_started = True  # the head's deadline counts from its first byte
            self._set_read_timer(self.limits.header_timeout_s, self._head_timed_out)
        super().data_received(data)
        self._follow_request()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._linger_timer, self._read_timer, self._write_timer):
            if timer is not None:
                timer.cancel()
        self.board.waiting.pop(self, None)
        self.board.lingering.pop(self, None)
        super().connection_lost(exc)
        self.board.open_now(len(self.connections))

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request h11 refused; here the refusal's own status and JSON message."""
        refusal = self.conn.refusal
        if isinstance(refusal, RequestRefused):
            self._refuse(refusal.error_status_hint, str(refusal))
        else:
            self._refuse(400, INVALID_HTTP)

    def on_response_complete(self) -> None:
        body_unread = self.conn.their_state is h11.SEND_BODY
        super().on_response_complete()
        if body_unread:  # answered before its body was read (a 413): the rest is not read
            self._close_gently()
            return
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            self._follow_request()  # closing, or a pipelined request has begun
            return
        self.board.waiting[self] = None  # waits for its next request: the newest in line
        self._head_started = bool(self.conn.trailing_data[0])
        if self._head_started:
            self._set_read_timer(self.limits.header_timeout_s, self._head_timed_out)

    def pause_writing(self) -> None:
        """The socket's buffers are full: the client is not reading. From now, write_timeout_s runs."""
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(self.limits.write_timeout_s, self._write_stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _write_stalled(self) -> None:
        """The client took nothing for write_timeout_s: drop the connection, which the app sees as a
        hang-up (its stream ends, and the stream's engine work is cancelled)."""
        self._write_timer = None
        if self.flow.write_paused:
            self.board.closed("write_stall")
            self.transport.abort()

    def timeout_keep_alive_handler(self) -> None:
        if not self.transport.is_closing():
            self.board.closed("idle")
        super().timeout_keep_alive_handler()

    def evict(self) -> None:
        """Close a connection that waits for a request, or has been answered, to make room for a new one."""
        self.board.waiting.pop(self, None)
        self.board.lingering.pop(self, None)
        self.transport.abort()

    def _follow_request(self) -> None:
        """After bytes arrive: once the head is complete the connection no longer waits; a body gets
        its own deadline, renewed by each piece; a request being answered has none."""
        if self._lingering or self.transport.is_closing() or self.conn.their_state is h11.IDLE:
            return
        self._head_started = False
        self.board.waiting.pop(self, None)
        if self.conn.their_state is h11.SEND_BODY:
            self._set_read_timer(self.limits.body_timeout_s, self._body_timed_out)
        elif self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _set_read_timer(self, delay_s: float, callback: Any) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
        self._read_timer = self.loop.call_later(delay_s, callback)

    def _head_timed_out(self) -> None:
        self._read_timer = None
        if self.conn.their_state is h11.IDLE:
            self._refuse(408, f"the request's line and headers did not arrive within "
                              f"{self.limits.header_timeout_s:g} s of their first byte (MTSERVE_HEADER_TIMEOUT_S)",
                         reason="header_timeout")

    def _body_timed_out(self) -> None:
        self._read_timer = None
        if self.conn.their_state is not h11.SEND_BODY:
            return
        if self.flow.read_paused or (self.cycle is not None and self.cycle.waiting_for_100_continue):
            # the server is not reading (the app has yet to take what came), or the client waits for
            # the server's 100 Continue: the pause is not the client's
            self._set_read_timer(self.limits.body_timeout_s, self._body_timed_out)
            return
        self._refuse(408, f"the request body stopped arriving: nothing came for {self.limits.body_timeout_s:g} s "
                          "(MTSERVE_BODY_TIMEOUT_S)", reason="body_timeout")

    def _should_upgrade(self) -> bool:
        return False  # the API has no WebSocket routes: an Upgrade header is ignored, not logged

    def _refuse(self, status: int, message: str, reason: str = "refused") -> None:
        """Answer ``status`` with a JSON error and close: the request is read no further."""
        if self.transport.is_closing():
            return
        self.board.closed(reason)
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app's work on the request stops, as when a client hangs up
            cycle.message_event.set()
            if cycle.response_started:  # its answer is under way and cannot be replaced
                self.transport.abort()
                return
        self.transport.write(json_answer(status, message))
        self._close_gently()

    def _close_gently(self) -> None:
        """Half-close, drop what the client still sends for LINGER_S, then close."""
        if self._lingering or self.transport.is_closing():
            return
        self._lingering = True
        self._unset_keepalive_if_required()
        self.board.waiting.pop(self, None)
        self.board.lingering[self] = None
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None
        if self.cycle is not None:
            self.cycle.disconnected = True  # nothing more is written on this connection
            self.cycle.waiting_for_100_continue = False
        self.flow.resume_reading()
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()
        self._linger_timer = self.loop.call_later(LINGER_S, self._end_linger)

    def _end_linger(self) -> None:
        # an answer still unsent by now is not being read: close() would wait for it for ever
        if self.transport.get_write_buffer_size():
            self.transport.abort()
        else:
            self.transport.close()

    def shutdown(self) -> None:
        if self.board.closing is not None:
            self.board.closing.begin()
        if self.transport.is_closing() or self._lingering:
            self.transport.close()
            return
        super().shutdown()


def hardened_protocol(board: ConnectionBoard) -> type[HardenedH11Protocol]:
    """The protocol class for one server: uvicorn builds each connection's instance from a class."""
    return type("HardenedH11Protocol", (HardenedH11Protocol,), {"board": board})
