"""Structured logging on stderr: one JSON object per line, or readable lines on a terminal.

Both carry the same fields (event, request id, sizes, timings...); the text
form puts them after the message as ``key=value``, for a person reading a
terminal, and JSON is for log collectors.
"""

from __future__ import annotations

import json
import logging
import sys
import time

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        clock = time.strftime("%H:%M:%S", time.localtime(record.created))
        fields = " ".join(f"{k}={_short(v)}" for k, v in record.__dict__.items()
                          if k not in _STANDARD and k != "event" and v is not None)
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
    """``log_format``: text, json, or auto (text when stderr is a terminal)."""
    handler = logging.StreamHandler(sys.stderr)
    readable = log_format == "text" or (log_format == "auto" and sys.stderr.isatty())
    handler.setFormatter(TextFormatter() if readable else JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's access log would duplicate our per-request line
    logging.getLogger("uvicorn.access").disabled = True
