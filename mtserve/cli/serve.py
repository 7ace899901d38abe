"""``mtserve serve``: the WebUI and the API on one port (or Ray Serve replicas with ``--ray``)."""

from __future__ import annotations

import argparse
import signal
import sys

from mtserve import __version__
from mtserve.cli.common import (
    FILES_FIELDS,
    RAY_FIELDS,
    SERVER_FIELDS,
    SERVICE_FIELDS,
    add_setting_flags,
    fail,
    settings_from,
)
from mtserve.settings import Settings


def add_parser(commands) -> None:
    serve = commands.add_parser("serve", help="serve the WebUI and the API")
    add_setting_flags(serve, SERVER_FIELDS + SERVICE_FIELDS + FILES_FIELDS + RAY_FIELDS)
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from mtserve.api.app import create_app
    from mtserve.engines.factory import EngineConfigError
    from mtserve.logs import configure_logging
    from mtserve.models.store import ModelStoreError

    settings = settings_from(args)
    configure_logging(settings.log_level)
    if settings.ray:
        return _serve_on_ray(settings)
    try:
        app = create_app(settings)
    except (ModelStoreError, EngineConfigError) as exc:
        return fail(exc)
    print(f"mtserve {__version__}: serving {settings.model} on http://{settings.host}:{settings.port}",
          file=sys.stderr)
    # uvicorn drains in-flight requests on SIGTERM, then re-raises the signal so the
    # previous handler decides the exit; a drained shutdown is a success, so exit 0.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    # The event loop and HTTP parser are named, not "auto": installing an extra (Ray brings uvloop
    # and httptools) must not change the server that the tests and benchmarks measured.
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None, loop="asyncio", http="h11",
                timeout_graceful_shutdown=settings.shutdown_grace_s)
    return 0


def _serve_on_ray(settings: Settings) -> int:
    from mtserve.deploy.ray_serve import RayUnavailable, run

    try:
        return run(settings)  # bad replica counts (ValueError) are refused before Ray starts
    except (RayUnavailable, ValueError) as exc:
        return fail(exc)
