"""The HTTP server's configuration: one function builds it for `mtserve serve` and for the tests.

A test that starts the app in-process must meet the server that `mtserve serve` runs (the same
protocol class, limits and timeouts), or it proves nothing about it; so both build their uvicorn
configuration here.
"""

from __future__ import annotations

from typing import Any

import uvicorn
from fastapi import FastAPI

from mtserve.api.files import upload_limit_bytes
from mtserve.api.protocol import ConnectionLimits, hardened_protocol
from mtserve.settings import Settings


def server_config(app: FastAPI, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``, from ``settings``; ``overrides`` are uvicorn.Config's own
    arguments (a test's ``lifespan="on"``).

    The event loop and HTTP parser are named, not "auto": installing an extra (Ray brings uvloop
    and httptools) must not change the server that the tests and benchmarks measured.
    """
    largest_body = max(settings.max_body_bytes, upload_limit_bytes(settings))
    protocol = hardened_protocol(ConnectionLimits.from_settings(settings, largest_body))
    trusted = settings.forwarded_allow_ips.strip()
    options: dict[str, Any] = dict(
        host=settings.host, port=settings.port, log_config=None, loop="asyncio", http=protocol,
        timeout_graceful_shutdown=settings.shutdown_grace_s,
        # uvicorn believes X-Forwarded-For from 127.0.0.1 unless told otherwise (FORWARDED_ALLOW_IPS):
        # any local client could then choose the address its rate limit is counted by.
        proxy_headers=bool(trusted), forwarded_allow_ips=trusted,
    )
    options.update(overrides)
    return uvicorn.Config(app, **options)
