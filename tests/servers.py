"""Real servers for tests: `mtserve serve` in a subprocess, or the app in-process around a test double.

Test modules import these from here, never from one another (tests/conftest.py builds its fixtures on
them). No server started here reads or writes the user's ~/.cache/mtserve: each gets a temporary
MTSERVE_HOME unless the test names one. Subprocess servers also start with the translation cache off,
so every request a test sends reaches the engine; a test about the cache turns it on for its own server.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import httpx
import uvicorn
from prometheus_client.parser import text_string_to_metric_families

from mtserve.api.app import create_app
from mtserve.api.server import server_config
from mtserve.engines.base import Engine
from mtserve.settings import Settings

TEST_MODEL = os.environ.get("MTSERVE_TEST_MODEL", "qwen2.5-coder-0.5b-instruct-q4_k_m")
SERVER_START_TIMEOUT_S = 180
T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll ``predicate`` until it returns something true, and return that: the moment a test waits
    for, where a fixed sleep would race a loaded machine (or waste time on an idle one). An
    AssertionError naming ``what`` if it has not come within ``timeout_s``. From a coroutine whose
    loop must keep running meanwhile: ``await asyncio.to_thread(wait_until, ...)``."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
        time.sleep(interval_s)
    return value


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- `mtserve serve` in a subprocess ----------------------------------------------------------------
def start_server(port: int, model: Path | str, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `mtserve serve` on 127.0.0.1 with ``model`` (a .gguf path or a seq2seq directory).

    A temporary home (removed by stop_server) and no translation cache, unless ``extra_env`` sets
    MTSERVE_HOME or MTSERVE_CACHE_SIZE. The log goes to a file: a pipe could fill and stall it.
    """
    extra_env = dict(extra_env or {})
    own_home = None
    if "MTSERVE_HOME" not in extra_env:
        own_home = tempfile.mkdtemp(prefix=f"mtserve-home-{port}-")
        extra_env["MTSERVE_HOME"] = own_home
    env = {**os.environ, "MTSERVE_MODEL": str(model), "MTSERVE_PORT": str(port), "MTSERVE_HOST": "127.0.0.1",
           "MTSERVE_CACHE_SIZE": "0", **extra_env}
    log = tempfile.NamedTemporaryFile(prefix=f"mtserve-{port}-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "-m", "mtserve.cli", "serve"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    proc.own_home = own_home  # type: ignore[attr-defined]
    return proc


def server_log(proc: subprocess.Popen) -> str:
    return proc.log_path.read_text(errors="replace")[-3000:]  # type: ignore[attr-defined]


def stop_server(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    """SIGTERM, which lets the server drain; SIGKILL if it has not exited within ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if getattr(proc, "own_home", None):
        shutil.rmtree(proc.own_home, ignore_errors=True)  # type: ignore[attr-defined]


def wait_ready(proc: subprocess.Popen, url: str, timeout_s: float = SERVER_START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mtserve exited with {proc.returncode}: {server_log(proc)}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"mtserve was not ready within {timeout_s} s")


@contextlib.contextmanager
def real_server(model: Path | str, extra_env: dict[str, str] | None = None,
                timeout_s: float = SERVER_START_TIMEOUT_S) -> Iterator[tuple[str, subprocess.Popen]]:
    """A ready `mtserve serve` subprocess for one test: (url, process); stopped on exit."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(port, model, extra_env)
    try:
        wait_ready(proc, url, timeout_s)
        yield url, proc
    finally:
        stop_server(proc)


# --- the app in-process, around a test double ---------------------------------------------------------
@contextlib.contextmanager
def serve(engine: Engine, **settings) -> Iterator[str]:
    """The real app on a real uvicorn on loopback, in a thread, around ``engine``; yields its URL.

    ``settings`` are Settings fields; without ``home`` the server gets a temporary one.
    """
    with running_server(engine, **settings) as (url, _):
        yield url


@contextlib.contextmanager
def running_server(engine: Engine, **settings) -> Iterator[tuple[str, uvicorn.Server]]:
    """``serve``, yielding the uvicorn server too: ``server.should_exit = True`` is what SIGTERM does."""
    with contextlib.ExitStack() as stack:
        if "home" not in settings:
            settings["home"] = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mtserve-home-")))
        port = free_port()
        chosen = Settings(host="127.0.0.1", port=port, **settings)
        server = uvicorn.Server(server_config(create_app(chosen, engine=engine), chosen, lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        try:
            yield url, server
        finally:
            server.should_exit = True
            thread.join(timeout=10)


# --- a request whose body is only begun ------------------------------------------------------------
def raw_request(url: str, head: str, body_start: bytes, timeout_s: float = 5.0) -> bytes:
    """Send the head and only the start of the body, then read the server's answer, head and body.

    A server that waits for the whole body before it checks what it can check from the head and the
    start (the key, the file's format) answers nothing in time.
    """
    host, port = url.removeprefix("http://").split(":")
    answer = b""
    with socket.create_connection((host, int(port)), timeout=timeout_s) as sock:
        sock.sendall(head.encode() + body_start)
        try:
            while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < _content_length(answer):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except TimeoutError:
            pass
    return answer


def _content_length(answer: bytes) -> int:
    for line in answer.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


# --- /metrics, read as samples (a HELP or TYPE line is not a sample) ---------------------------------
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def metric_samples(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample a server's /metrics exposes: (name, labels) -> value."""
    text = httpx.get(f"{url}/metrics", timeout=30).text
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def samples_named(url: str, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The samples called ``name`` whose labels include ``labels``: labels -> value."""
    wanted = set(labels.items())
    return {found: value for (sample, found), value in metric_samples(url).items()
            if sample == name and wanted <= found}


def metric_value(url: str, sample: str, default: float | None = None) -> float:
    """One sample from a server's /metrics, written as Prometheus does, e.g. ``name{label="x"}``:
    exactly that name and those labels. ``default`` if it is not there yet (a labelled counter
    appears with its first increment), else an AssertionError."""
    match = _SAMPLE.match(sample)
    assert match, f"not a sample name: {sample!r}"
    key = (match["name"], frozenset(_LABEL.findall(match["labels"] or "")))
    samples = metric_samples(url)
    if key in samples:
        return samples[key]
    if default is None:
        raise AssertionError(f"{sample} not in /metrics")
    return default


# A gettext catalog as a translator exports it: two translated entries and a fuzzy one (never imported).
UI_PO = '''msgid ""
msgstr ""
"Language: zh_CN\\n"
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Save your changes"
msgstr "保存您的更改"

msgid "Open the settings"
msgstr "打开设置"

#, fuzzy
msgid "Delete the file"
msgstr "删除文件"
'''

GENERATED_TOKENS = "mtserve_generated_tokens_total"


@contextlib.contextmanager
def engine_generates(url: str) -> Iterator[None]:
    """Fail unless the engine generated tokens inside the block: the answer came from the model,
    not from a cache or a shortcut. Requests must not run concurrently with the block."""
    before = metric_value(url, GENERATED_TOKENS)
    yield
    after = metric_value(url, GENERATED_TOKENS)
    assert after > before, f"the engine generated no tokens ({GENERATED_TOKENS} stayed at {before})"
