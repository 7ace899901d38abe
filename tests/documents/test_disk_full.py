"""A full or read-only disk while an upload or a result is stored: a JSON 507 that says so, no partial
file left behind, and the connection still serves the next request.

The disk is not filled: the write boundary (``Path.write_bytes`` of the ``.part`` file the job store
writes first, or the job record's SQLite insert) fails as a full disk makes it fail, in the server's
own process, after it has started.
"""

from __future__ import annotations

import errno
import socket
import sqlite3
from pathlib import Path

import pytest

from mtserve.documents.jobs.records import JobRecords
from tests.documents.helpers import SwapEngine
from tests.hostile.bodies import MULTIPART, multipart
from tests.servers import serve

TEXT = "你好。".encode()


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One HTTP/1.1 response (with a Content-Length) from ``sock``: (status, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection: {data[:200]!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-body"
        body += chunk
    return int(head.split(b" ", 2)[1]), body


def upload_then_health(url: str) -> tuple[int, bytes, int]:
    """A /translate_file upload and then GET /health on the same connection: (status, body, health status)."""
    body = multipart([("source", None, b"zh"), ("target", None, b"en"), ("file", "a.txt", TEXT)])
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(f"POST /translate_file HTTP/1.1\r\nHost: test\r\nContent-Type: {MULTIPART}\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        status, answer = read_response(sock)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
        health, _ = read_response(sock)
    return status, answer, health


def fail_part_writes(monkeypatch, folder: str, error: int) -> None:
    """Writes of ``.part`` files under ``folder`` (uploads or results) stop after a few bytes with ``error``."""
    real = Path.write_bytes

    def write_bytes(self: Path, data: bytes) -> int:
        if self.name.endswith(".part") and self.parent.name == folder:
            real(self, data[:8])  # what a disk that fills mid-write leaves
            raise OSError(error, "No space left on device" if error == errno.ENOSPC else "Read-only file system")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)


@pytest.mark.parametrize("folder, error, words", [("uploads", errno.ENOSPC, "out of disk space"),
                                                  ("results", errno.ENOSPC, "out of disk space"),
                                                  ("uploads", errno.EROFS, "read-only")])
def test_a_full_disk_is_a_507_that_leaves_nothing_behind(tmp_path, monkeypatch, folder, error, words):
    with serve(SwapEngine(slots=1), home=tmp_path) as url:
        fail_part_writes(monkeypatch, folder, error)
        status, answer, health = upload_then_health(url)
        monkeypatch.undo()
    assert status == 507, answer
    message = answer.decode()
    assert words in message and str(tmp_path) not in message and ".part" not in message
    assert health == 200  # the same connection serves the next request
    assert list(tmp_path.rglob("*.part")) == []


def test_a_full_disk_for_the_job_record_is_a_507(tmp_path, monkeypatch):
    def full(self, row):
        exc = sqlite3.OperationalError("database or disk is full")
        exc.sqlite_errorcode = sqlite3.SQLITE_FULL
        raise exc

    with serve(SwapEngine(slots=1), home=tmp_path) as url:
        monkeypatch.setattr(JobRecords, "insert", full)
        status, answer, health = upload_then_health(url)
    assert status == 507 and b"out of disk space" in answer, answer
    assert health == 200
    assert list((tmp_path / "files" / "uploads").iterdir()) == []  # the stored upload went again
