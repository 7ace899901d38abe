"""``mtserve serve`` at start: a port in use is refused before the model loads; readable or JSON logs."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import re
import select
import socket
import subprocess
import sys
import time

import httpx
import pytest

from mtserve.logs import JsonFormatter, TextFormatter, configure_logging
from tests.servers import free_port, real_server, stop_server


def test_a_port_in_use_fails_at_once_in_one_line_before_the_model_loads(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        # the model does not exist: had the server tried to load it first, that would be the error
        env = {**os.environ, "MTSERVE_HOME": str(tmp_path), "MTSERVE_MODEL": str(tmp_path / "absent.gguf")}
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "mtserve.cli", "serve", "--port", str(port)],
                              env=env, capture_output=True, text=True, timeout=60)
        elapsed = time.monotonic() - started
    print(f"refused in {elapsed:.2f} s: {done.stderr.strip()}")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {port}" in lines[0] and "in use" in lines[0] and f"--port {port + 1}" in lines[0]
    assert "absent.gguf" not in done.stderr and "Traceback" not in done.stderr


def _record(**extra) -> logging.LogRecord:
    record = logging.LogRecord("mtserve.request", logging.INFO, __file__, 1, "request", (), None)
    record.__dict__.update(extra)
    return record


def test_text_lines_are_readable_and_json_lines_parse():
    record = _record(event="request", status=200, path="/translate", duration_ms=12.5, caller=None)
    text = TextFormatter().format(record)
    assert "info" in text and "request" in text and "status=200" in text and "path=/translate" in text
    assert "caller" not in text  # empty fields are left out
    with_space = TextFormatter().format(_record(error="engine died"))
    assert 'error="engine died"' in with_space
    parsed = json.loads(JsonFormatter().format(record))
    assert parsed["status"] == 200 and parsed["msg"] == "request" and parsed["level"] == "info"


def test_auto_is_json_off_a_terminal_and_the_setting_can_force_either(monkeypatch):
    stream = io.StringIO()  # not a TTY
    monkeypatch.setattr(sys, "stderr", stream)
    for fmt, kind in (("auto", JsonFormatter), ("json", JsonFormatter), ("text", TextFormatter)):
        configure_logging("info", fmt)
        assert isinstance(logging.getLogger().handlers[0].formatter, kind), fmt

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    configure_logging("info", "auto")
    assert isinstance(logging.getLogger().handlers[0].formatter, TextFormatter)
    configure_logging("info", "json")
    assert isinstance(logging.getLogger().handlers[0].formatter, JsonFormatter)


@pytest.mark.parametrize("where", ["under a regular file", "a regular file"])
def test_a_home_that_cannot_be_written_fails_at_once_in_one_line_naming_the_setting(tmp_path, where):
    """Tests run as root, whom chmod does not stop: a path through a regular file fails for root too."""
    regular = tmp_path / "not-a-directory"
    regular.write_text("")
    home = regular / "home" if where == "under a regular file" else regular
    env = {**os.environ, "MTSERVE_HOME": str(home), "MTSERVE_MODEL": str(tmp_path / "absent.gguf")}
    done = subprocess.run([sys.executable, "-m", "mtserve.cli", "serve", "--port", "0"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "MTSERVE_HOME" in lines[0] and "writ" in lines[0]
    assert "Traceback" not in done.stderr and "absent.gguf" not in done.stderr  # before the model is looked at


def test_uvicorns_coloured_copy_of_a_message_and_terminal_escapes_never_reach_a_log_line():
    record = _record(color_message="Started server process [\x1b[36m%d\x1b[0m]", note="\x1b[1mbold\x1b[0m")
    record.msg = "Started server process [42]"
    line = JsonFormatter().format(record)
    parsed = json.loads(line)
    assert "color_message" not in parsed and parsed["note"] == "bold"
    assert "\x1b" not in line and "\\u001b" not in line
    text = TextFormatter().format(record)
    assert "color_message" not in text and text.count("Started server process [42]") == 1


def test_a_plain_record_is_its_message_alone_on_a_terminal_and_json_otherwise():
    record = _record(event="serving", plain=True, url="http://127.0.0.1:8000", seconds=3.2)
    record.msg = "ready in 3.2 s: open http://127.0.0.1:8000"
    assert TextFormatter().format(record) == "ready in 3.2 s: open http://127.0.0.1:8000"
    parsed = json.loads(JsonFormatter().format(record))
    assert parsed["msg"] == "ready in 3.2 s: open http://127.0.0.1:8000" and parsed["event"] == "serving"
    assert parsed["url"] == "http://127.0.0.1:8000" and "plain" not in parsed


READY = re.compile(r"ready in \d+\.\d s: open http://127\.0\.0\.1:(\d+)")
QUICK_START = {"MTSERVE_WARM_STRICT": "", "MTSERVE_N_PARALLEL": "1"}  # no strict prompt to warm before ready


@pytest.mark.model
def test_on_a_terminal_the_log_is_plain_text_ending_in_where_to_open_it(model_path, tmp_path):
    port = free_port()
    env = {**os.environ, **QUICK_START, "MTSERVE_HOME": str(tmp_path), "MTSERVE_MODEL": str(model_path),
           "MTSERVE_PORT": str(port), "MTSERVE_CACHE_SIZE": "0"}
    env.pop("MTSERVE_LOG_FORMAT", None)
    terminal, stderr = pty.openpty()  # stderr is a terminal: the default (auto) is text
    proc = subprocess.Popen([sys.executable, "-m", "mtserve.cli", "serve"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=stderr)
    os.close(stderr)
    shown = b""
    try:
        deadline = time.monotonic() + 180
        while not READY.search(shown.decode(errors="replace")) and time.monotonic() < deadline:
            if select.select([terminal], [], [], 1.0)[0]:
                try:
                    shown += os.read(terminal, 65536)
                except OSError:  # the process closed its end
                    break
        text = shown.decode(errors="replace").replace("\r\n", "\n")
        ready = READY.search(text)
        assert ready, text
        answer = httpx.post(f"http://127.0.0.1:{port}/translate", json={"q": "我喜欢猫。", "source": "zh",
                                                                        "target": "en"}, timeout=60)
    finally:
        stop_server(proc)
        os.close(terminal)
    assert answer.status_code == 200 and "cat" in answer.json()["translatedText"].lower()  # it can translate
    assert int(ready.group(1)) == port
    lines = text.strip().splitlines()
    assert f"ready in {ready.group(0).split('ready in ')[1]}" in lines  # a line of its own, nothing around it
    assert lines[0].startswith("mtserve ") and "loading" in lines[0]
    assert "\x1b" not in text and not any(line.startswith("{") for line in lines)


@pytest.mark.model
def test_off_a_terminal_every_line_is_json_without_escapes_and_one_says_it_is_ready(model_path):
    with real_server(model_path, QUICK_START) as (url, proc):
        deadline = time.monotonic() + 30
        while "ready in" not in proc.log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        log = proc.log_path.read_text()
    records = [json.loads(line) for line in log.splitlines() if line.strip()]  # every line parses
    assert "\x1b" not in log and "\\u001b" not in log and not any("color_message" in r for r in records)
    [ready] = [r for r in records if r.get("event") == "serving"]
    assert READY.fullmatch(ready["msg"]) and ready["url"] == url and ready["seconds"] > 0
    assert any(r["msg"].startswith("Started server process") for r in records)  # uvicorn's, without colour
