"""``mtserve serve`` at start: a port in use is refused before the model loads; readable or JSON logs."""

from __future__ import annotations

import io
import json
import logging
import os
import socket
import subprocess
import sys
import time

import pytest

from mtserve.logs import JsonFormatter, TextFormatter, configure_logging


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
