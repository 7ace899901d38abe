"""``mtserve serve``: the WebUI and the API on one port (or Ray Serve replicas with ``--ray``)."""

from __future__ import annotations

import argparse
import errno
import logging
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

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

log = logging.getLogger("mtserve.serve")


def add_parser(commands) -> None:
    serve = commands.add_parser(
        "serve", help="serve the WebUI and the API",
        usage="%(prog)s [--host HOST] [--port PORT] [--model MODEL] [option ...]",
        description="Serve the WebUI and the HTTP API on one port, with the model loaded once. Every "
                    "setting below is also an environment variable, MTSERVE_<NAME>.")
    add_setting_flags(serve, SERVER_FIELDS, "the server: network, limits, access (each also MTSERVE_<NAME>)")
    add_setting_flags(serve, SERVICE_FIELDS, "the model and the engine (each also MTSERVE_<NAME>)")
    add_setting_flags(serve, FILES_FIELDS, "documents: /translate_file and /jobs (each also MTSERVE_<NAME>)")
    add_setting_flags(serve, RAY_FIELDS, "scaling out: Ray Serve replicas (each also MTSERVE_<NAME>)")
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    started = time.monotonic()  # "ready in N s" counts from here
    import uvicorn

    from mtserve.api.app import browser_url, create_app
    from mtserve.api.server import server_config
    from mtserve.engines.factory import EngineConfigError
    from mtserve.logs import configure_logging
    from mtserve.models.store import ModelStoreError

    settings = settings_from(args)
    configure_logging(settings.log_level, settings.log_format)
    if (problem := home_problem(settings.home)) is not None:  # before anything is written or loaded
        return fail(problem)
    if settings.ray:
        return _serve_on_ray(settings)
    try:  # before the model loads: a port in use is said at once, in one line
        listener = bind(settings.host, settings.port)
    except OSError as exc:
        return fail(port_problem(settings.host, settings.port, exc))
    try:
        app = create_app(settings)
    except (ModelStoreError, EngineConfigError) as exc:
        listener.close()
        return fail(exc)
    app.state.started = started
    app.state.url = browser_url(settings.host, listener.getsockname()[1])  # --port 0: the port it got
    log.info(f"mtserve {__version__}: loading {settings.model}, then serving the WebUI and the API on "
             f"http://{settings.host}:{listener.getsockname()[1]}", extra={"event": "starting", "plain": True})
    # uvicorn drains in-flight requests on SIGTERM, then re-raises the signal so the
    # previous handler decides the exit; a drained shutdown is a success, so exit 0.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    app.state.server = uvicorn.Server(server_config(app, settings))
    app.state.server.run(sockets=[listener])
    return 0


def home_problem(home: Path) -> str | None:
    """Why the server could not keep its files (keys, jobs, uploads, memory) under ``home``, in one
    line that names the setting; None when it can write there."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=home):
            pass
    except OSError as exc:
        return (f"MTSERVE_HOME ({home}) is not a directory mtserve can write to ({exc.strerror or exc}); "
                "set MTSERVE_HOME (or --home) to a writable directory")
    return None


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now, so uvicorn serves on exactly what was checked."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        listener.bind((host, port))
        listener.listen(2048)
        listener.set_inheritable(True)
    except OSError:
        listener.close()
        raise
    return listener


def port_problem(host: str, port: int, exc: OSError) -> str:
    if exc.errno == errno.EADDRINUSE:
        return (f"port {port} on {host} is already in use (another mtserve?); stop that server, "
                f"or serve on another port with --port {port + 1}")
    if exc.errno == errno.EACCES:
        return f"no permission to listen on port {port}; use a port above 1023 with --port"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}; check --host and --port"


def _serve_on_ray(settings: Settings) -> int:
    from mtserve.deploy.ray_serve import RayUnavailable, run

    try:
        return run(settings)  # bad replica counts (ValueError) are refused before Ray starts
    except (RayUnavailable, ValueError) as exc:
        return fail(exc)
