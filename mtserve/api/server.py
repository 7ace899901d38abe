"""The HTTP server's configuration: one function builds it for `mtserve serve` and for the tests.

A test that starts the app in-process must meet the server that `mtserve serve` runs (the same
protocol class, limits and timeouts), or it proves nothing about it; so both build their uvicorn
configuration here.
"""

from __future__ import annotations

import logging
import resource
from typing import Any

import uvicorn
from fastapi import FastAPI

from mtserve.api.files import upload_limit_bytes
from mtserve.api.protocol import ConnectionBoard, ConnectionLimits, hardened_protocol, quiet_uvicorn_parser_log
from mtserve.settings import Settings

log = logging.getLogger(__name__)

# File descriptors the process needs besides its connections: listeners, the model file, the SQLite
# stores, log files, the document workers' pipes.
FD_RESERVE = 256


def server_config(app: FastAPI, settings: Settings, **overrides: Any) -> uvicorn.Config:
    """uvicorn's configuration for ``app``, from ``settings``; ``overrides`` are uvicorn.Config's own
    arguments (a test's ``lifespan="on"``).

    The event loop and HTTP parser are named, not "auto": installing an extra (Ray brings uvloop
    and httptools) must not change the server that the tests and benchmarks measured.
    """
    quiet_uvicorn_parser_log()
    largest_body = max(settings.max_body_bytes, upload_limit_bytes(settings))
    limits = ConnectionLimits.from_settings(settings, connection_bound(settings.max_connections), largest_body)
    protocol = hardened_protocol(ConnectionBoard(limits, app.state.runtime.metrics, app.state.closing))
    trusted = settings.forwarded_allow_ips.strip()
    options: dict[str, Any] = dict(
        host=settings.host, port=settings.port, log_config=None, loop="asyncio", http=protocol,
        timeout_graceful_shutdown=settings.shutdown_grace_s, timeout_keep_alive=settings.idle_timeout_s,
        # uvicorn believes X-Forwarded-For from 127.0.0.1 unless told otherwise (FORWARDED_ALLOW_IPS):
        # any local client could then choose the address its rate limit is counted by.
        proxy_headers=bool(trusted), forwarded_allow_ips=trusted,
    )
    options.update(overrides)
    return uvicorn.Config(app, **options)


def connection_bound(wanted: int) -> int:
    """``wanted``, after raising the soft limit on open files to fit it if need be; less, with a
    warning, if even the hard limit is too low. A process out of descriptors cannot accept(), and
    asyncio retries and logs that in a loop while nothing is answered."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = wanted + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return wanted
    bound = max(1, soft - FD_RESERVE)
    log.warning("max_connections lowered to fit the limit on open files",
                extra={"event": "max_connections_lowered", "wanted": wanted, "bound": bound,
                       "open_files_limit": soft})
    return bound
