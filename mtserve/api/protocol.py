"""The HTTP parser's own answer to bytes that are not HTTP, in the API's shape.

A request line or header that h11 cannot parse (a URL with raw non-ASCII bytes, a header without a
colon) never reaches the app: uvicorn answers it with a plain-text "Invalid HTTP request received.".
Every other error of the API is JSON ``{"error": ...}`` that says what to fix, so this one is too.
"""

from __future__ import annotations

import json

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

INVALID_HTTP = json.dumps({"error": (
    "invalid HTTP request: its request line or a header could not be parsed. A URL is ASCII: "
    "percent-encode other characters (?q=%E4%BD%A0%E5%A5%BD for ?q=你好, as curl -G --data-urlencode does), "
    "and each header is one 'Name: value' line")}, ensure_ascii=False).encode("utf-8")


class JSONErrorsH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, whose 400 for an unparseable request is the API's JSON error."""

    def send_400_response(self, msg: str) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(INVALID_HTTP)).encode()),
                   (b"connection", b"close")]
        self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
        self.transport.write(self.conn.send(h11.Data(data=INVALID_HTTP)))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()
