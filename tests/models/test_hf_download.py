"""Hugging Face downloads against a misbehaving local HTTP server on 127.0.0.1.

The server drops the connection mid-body, lies about Content-Length, and honours or ignores
Range, as flaky networks and proxies do. A download must never leave a truncated file under the
model's name: it resumes or restarts, and keeps ``NAME.part`` until the bytes are complete.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import mtserve.models.store as store_module
from mtserve.models.registry import HuggingFaceSource, ModelEntry
from mtserve.models.store import ModelStore, ModelStoreError

PAYLOAD = b"GGUF" + os.urandom(200_000)
REPO, FILE = "tester/tiny-GGUF", "tiny-Q4_K_M.gguf"


@dataclass
class Behaviour:
    payload: bytes = PAYLOAD
    honour_range: bool = True
    drops: int = 0  # this many responses stop after ``drop_after`` body bytes and close
    drop_after: int = 80_000
    claimed_length: int | None = None  # a Content-Length that is not the body's
    requests: list[dict] = field(default_factory=list)


@pytest.fixture
def hub():
    """A local stand-in for huggingface.co: (endpoint URL, Behaviour to set per test)."""
    behaviour = Behaviour()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def do_GET(self):
            behaviour.requests.append({"path": self.path, "range": self.headers.get("Range")})
            if self.path != f"/{REPO}/resolve/main/{FILE}":
                self.send_error(404)
                return
            data, start = behaviour.payload, 0
            found = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
            if found and behaviour.honour_range:
                start = int(found.group(1))
                if start >= len(data):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(data)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            else:
                self.send_response(200)
            body = data[start:]
            claim = behaviour.claimed_length
            if claim is not None and claim < len(data):  # a short claim: that many bytes, at most the rest
                claim = min(claim, len(body))
            self.send_header("Content-Length", str(claim or len(body)))
            self.end_headers()
            if behaviour.drops > 0:
                behaviour.drops -= 1
                self.wfile.write(body[:behaviour.drop_after])
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # the connection drops mid-body
                self.close_connection = True
                return
            self.wfile.write(body[:claim] if claim else body)
            self.close_connection = True

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", behaviour
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def no_pauses(monkeypatch):
    monkeypatch.setattr(store_module, "HF_RETRY_PAUSE_S", 0.0)


def store_at(tmp_path: Path, endpoint: str, entries: list[ModelEntry] = ()) -> ModelStore:
    return ModelStore(tmp_path / "models", registry={e.name: e for e in entries}, hf_endpoint=endpoint)


def leftovers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "models").rglob("*") if p.is_file())


def test_a_dropped_connection_is_resumed_with_range(tmp_path, hub):
    endpoint, behaviour = hub
    behaviour.drops = 1
    path = store_at(tmp_path, endpoint).fetch_huggingface(f"{REPO}:{FILE}")
    assert path.read_bytes() == PAYLOAD
    assert [r["range"] for r in behaviour.requests] == ["bytes=0-", f"bytes={behaviour.drop_after}-"]
    assert leftovers(tmp_path) == [FILE]  # no .part left behind


def test_a_server_that_ignores_range_is_downloaded_again_from_the_start(tmp_path, hub):
    endpoint, behaviour = hub
    behaviour.honour_range, behaviour.drops = False, 2
    path = store_at(tmp_path, endpoint).fetch_huggingface(f"{REPO}:{FILE}")
    assert path.read_bytes() == PAYLOAD and len(behaviour.requests) == 3


def test_a_body_shorter_than_its_content_length_never_becomes_the_model(tmp_path, hub):
    endpoint, behaviour = hub
    behaviour.honour_range, behaviour.drops = False, 99  # every attempt is cut short
    store = store_at(tmp_path, endpoint)
    with pytest.raises(ModelStoreError, match=r"stopped 5 times .*closed after 80,000 of 200,004 bytes"
                                              r".*running the same command again resumes"):
        store.fetch_huggingface(f"{REPO}:{FILE}")
    assert leftovers(tmp_path) == [f"{FILE}.part"]  # kept to resume, under a name no pull takes for a model
    assert not (tmp_path / "models" / "hf" / "tester--tiny-GGUF" / FILE).exists()
    behaviour.honour_range, behaviour.drops = True, 0  # the network is back: the next pull resumes
    behaviour.requests.clear()
    assert store.fetch_huggingface(f"{REPO}:{FILE}").read_bytes() == PAYLOAD
    assert behaviour.requests[0]["range"] == "bytes=80000-"


def test_a_content_length_smaller_than_the_file_is_caught_by_content_range(tmp_path, hub):
    endpoint, behaviour = hub
    behaviour.claimed_length = 50_000  # says 50,000 and sends 50,000, of a 200,004-byte file
    path = store_at(tmp_path, endpoint).fetch_huggingface(f"{REPO}:{FILE}")
    assert path.read_bytes() == PAYLOAD  # Content-Range's total said there was more: resumed until complete
    assert len(behaviour.requests) == 5


def test_a_content_length_larger_than_the_file_ends_with_the_file(tmp_path, hub):
    endpoint, behaviour = hub
    behaviour.claimed_length = len(PAYLOAD) + 1000  # promises 1,000 bytes more than there are
    path = store_at(tmp_path, endpoint).fetch_huggingface(f"{REPO}:{FILE}")
    assert path.read_bytes() == PAYLOAD  # the resume is answered 416 bytes */SIZE: it was complete


def hf_entry(**fields) -> ModelEntry:
    return ModelEntry(name="tiny-hf", description="", family="qwen", file="tiny-hf.gguf",
                      source=HuggingFaceSource(REPO, FILE), languages=("en", "zh"), **fields)


def test_registry_size_and_sha256_are_checked_before_the_file_takes_its_name(tmp_path, hub):
    endpoint, behaviour = hub
    good = hf_entry(size=len(PAYLOAD), sha256=hashlib.sha256(PAYLOAD).hexdigest())
    behaviour.drops = 1
    assert store_at(tmp_path / "a", endpoint, [good]).pull("tiny-hf").read_bytes() == PAYLOAD

    wrong_hash = hf_entry(size=len(PAYLOAD), sha256="0" * 64)
    with pytest.raises(ModelStoreError, match="SHA-256 .* expected 0000"):
        store_at(tmp_path / "b", endpoint, [wrong_hash]).pull("tiny-hf")
    assert leftovers(tmp_path / "b") == []

    behaviour.honour_range, behaviour.claimed_length = False, 50_000  # a lying proxy without Range
    with pytest.raises(ModelStoreError, match="50,000 bytes but the registry expects 200,004"):
        store_at(tmp_path / "c", endpoint, [hf_entry(size=len(PAYLOAD))]).pull("tiny-hf")
    assert leftovers(tmp_path / "c") == []


@pytest.mark.parametrize("spec, message", [
    ("tester/tiny-GGUF:../../../../etc/evil.gguf", "not a file name"),
    ("tester/tiny-GGUF:/etc/evil.gguf", "not a file name"),
    ("tester/tiny-GGUF:sub/../../x.gguf", "not a file name"),
    ("tester/tiny-GGUF:..\\..\\x.gguf", "not a file name"),
    ("tester/tiny-GGUF:a b.gguf", "not a file name"),
    ("tester/tiny-GGUF:x.gguf\x00", "not a file name"),
    ("tester/..:x.gguf", "not a Hugging Face repo id"),
    ("../tiny:x.gguf", "not a Hugging Face repo id"),
    ("tester/a--b:x.gguf", "not a Hugging Face repo id"),
    ("tester/tiny/extra:x.gguf", "not a Hugging Face repo id"),
    ("tester/.hidden:x.gguf", "not a Hugging Face repo id"),
])
def test_names_that_could_leave_the_models_folder_are_refused_before_any_request(tmp_path, hub, spec, message):
    endpoint, behaviour = hub
    with pytest.raises(ModelStoreError, match=message):
        store_at(tmp_path, endpoint).fetch_huggingface(spec)
    assert behaviour.requests == []
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_a_registry_entry_with_an_escaping_file_name_is_refused(tmp_path, hub):
    endpoint, behaviour = hub
    entry = ModelEntry(name="evil", description="", family="qwen", file="evil.gguf",
                       source=HuggingFaceSource(REPO, "../../evil.gguf"), languages=("en",))
    with pytest.raises(ModelStoreError, match="not a file name"):
        store_at(tmp_path, endpoint, [entry]).pull("evil")
    assert behaviour.requests == []


def test_a_missing_file_is_a_clear_error_without_retries(tmp_path, hub):
    endpoint, behaviour = hub
    with pytest.raises(ModelStoreError, match="HTTP 404.*Check the repo id and file name"):
        store_at(tmp_path, endpoint).fetch_huggingface(f"{REPO}:missing.gguf")
    assert len(behaviour.requests) == 1


def test_an_unreachable_hub_says_so_at_once(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ModelStoreError, match="Hugging Face hub is unreachable"):
        store_at(tmp_path, f"http://127.0.0.1:{port}").fetch_huggingface(f"{REPO}:{FILE}")


def test_hf_endpoint_in_the_environment_points_downloads_at_a_mirror(tmp_path, hub, monkeypatch):
    endpoint, behaviour = hub
    monkeypatch.setenv("HF_ENDPOINT", endpoint + "/")
    path = ModelStore(tmp_path / "models", registry={}).fetch_huggingface(f"{REPO}:{FILE}")
    assert path.read_bytes() == PAYLOAD and behaviour.requests[0]["path"] == f"/{REPO}/resolve/main/{FILE}"
