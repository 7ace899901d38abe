"""Shared fixtures: the real small model and a real mtserve server on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from mtserve.models.store import ModelStore, ModelStoreError
from mtserve.settings import Settings

TEST_MODEL = os.environ.get("MTSERVE_TEST_MODEL", "qwen2.5-coder-0.5b-instruct-q4_k_m")
SERVER_START_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The real small model from the store; `make test` pulls it first."""
    try:
        return ModelStore(Settings().models_dir).resolve(TEST_MODEL).path
    except ModelStoreError as exc:
        pytest.fail(f"{exc}\n(`make test` pulls it; or run `mtserve models pull {TEST_MODEL}`)")


def start_server(port: int, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start `mtserve serve`; its log goes to a file (a pipe could fill and stall it)."""
    env = {**os.environ, "MTSERVE_MODEL": TEST_MODEL, "MTSERVE_PORT": str(port),
           "MTSERVE_HOST": "127.0.0.1", **(extra_env or {})}
    log = tempfile.NamedTemporaryFile(prefix=f"mtserve-{port}-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "-m", "mtserve.cli", "serve"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    return proc


def server_log(proc: subprocess.Popen) -> str:
    return proc.log_path.read_text(errors="replace")[-3000:]  # type: ignore[attr-defined]


def stop_server(proc: subprocess.Popen, timeout_s: float = 20) -> None:
    """SIGTERM, which lets the server drain; SIGKILL if it has not exited within ``timeout_s``."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()


def metric_value(url: str, sample: str, default: float | None = None) -> float:
    """One sample from a server's /metrics, e.g. ``name{label="x"}``; ``default`` if it is not
    there yet (a labelled counter appears with its first increment), else an AssertionError."""
    for line in httpx.get(f"{url}/metrics", timeout=30).text.splitlines():
        if line.startswith(sample + " "):
            return float(line.split()[1])
    if default is None:
        raise AssertionError(f"{sample} not in /metrics")
    return default


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


@pytest.fixture(scope="session")
def live_server(model_path) -> str:
    """A real `mtserve serve` process with the small model, on a free loopback port."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(port, {"MTSERVE_N_PARALLEL": "2"})
    try:
        wait_ready(proc, url)
        yield url
    finally:
        stop_server(proc)
