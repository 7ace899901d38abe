"""What the WebUI tests share besides fixtures: the browser's settings and small page helpers."""

from __future__ import annotations

import json
import urllib.parse

CHROMIUM = "/usr/bin/chromium"
# The closed network refuses Chromium's background connections; these keep it quiet.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
UI_TIMEOUT_MS = 15_000  # anything that does not wait for the model


def open_ui(pg, base_url: str, query: str = "") -> None:
    pg.goto(f"{base_url}/{query}")
    # app.js marks the body once languages and settings are loaded.
    pg.wait_for_selector("body[data-ready='true']", state="attached")


def query_params(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).items()}


def sse(*events: tuple[str, dict]) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
