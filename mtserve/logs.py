"""Structured logging on stderr: one JSON object per line, or readable lines on a terminal.

Both carry the same fields (event, request id, sizes, timings...); the text
form puts them after the message as ``key=value``, for a person reading a
terminal, and JSON is for log collectors. Neither carries terminal colours:
uvicorn's ``color_message`` (its message again, with ANSI escapes) is left out,
and an escape in any other field is removed from JSON. A record logged with
``extra={"plain": True}`` (the line that says the server is ready, and where)
is its message alone on a terminal.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import time

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}
_LEFT_OUT = {"color_message", "plain"}  # uvicorn's coloured copy of the message; the text form's marker
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _fields(record: logging.LogRecord) -> dict:
    return {k: v for k, v in record.__dict__.items() if k not in _STANDARD and k not in _LEFT_OUT}


def _uncoloured(value: object) -> object:
    return _ANSI.sub("", value) if isinstance(value, str) else value


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps({k: _uncoloured(v) for k, v in line.items()}, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "plain", False):
            return record.getMessage()
        clock = time.strftime("%H:%M:%S", time.localtime(record.created))
        fields = " ".join(f"{k}={_short(v)}" for k, v in _fields(record).items()
                          if k != "event" and v is not None)
        event = getattr(record, "event", None)
        head = f"{clock} {record.levelname.lower():<7} {record.getMessage()}"
        line = " ".join(part for part in (head, f"[{event}]" if event else "", fields) if part)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def _short(value: object) -> str:
    text = str(value)
    return json.dumps(text, ensure_ascii=False) if (" " in text or not text) else text


def configure_logging(level: str = "info", log_format: str = "auto") -> None:
    """``log_format``: text, json, or auto (text when stderr is a terminal, JSON otherwise)."""
    handler = logging.StreamHandler(sys.stderr)
    readable = log_format == "text" or (log_format == "auto" and sys.stderr.isatty())
    handler.setFormatter(TextFormatter() if readable else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's access log would duplicate our per-request line
    logging.getLogger("uvicorn.access").disabled = True
