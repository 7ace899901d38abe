"""The FastAPI application: wiring, request ids, one log line per request."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from mtserve import __version__
from mtserve.api.errors import BodyTooLarge, error_response, install_error_handlers
from mtserve.api.routes import router
from mtserve.engines.base import Engine
from mtserve.service.runtime import Runtime
from mtserve.settings import Settings
from mtserve.webui import STATIC_DIR

log = logging.getLogger("mtserve.request")

UNTRACKED_PATHS = ("/static/", "/favicon")


class RequestContextMiddleware:
    """Request id in and out, metrics, and the structured per-request log line.

    Pure ASGI rather than BaseHTTPMiddleware so that client disconnects reach
    the route untouched and cancel its work.
    """

    def __init__(self, app, runtime: Runtime):
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        request_id = headers.get(b"x-request-id", b"").decode("latin-1")[:64] or uuid.uuid4().hex[:16]
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        started = time.perf_counter()
        status = {"code": 500, "bytes": 0}

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [(b"x-request-id", request_id.encode())]
            elif message["type"] == "http.response.body":
                status["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            path = scope.get("path", "")
            if not path.startswith(UNTRACKED_PATHS):
                self._record(scope, state, path, request_id, status, time.perf_counter() - started)

    def _record(self, scope, state, path, request_id, status, elapsed_s) -> None:
        route = scope.get("route")
        route_name = getattr(route, "path", None) or "unmatched"
        metrics = self.runtime.metrics
        metrics.requests.labels(route=route_name, status=str(status["code"])).inc()
        usage = state.get("usage")
        fields = {
            "event": "request",
            "request_id": request_id,
            "method": scope.get("method"),
            "path": path,
            "status": status["code"],
            "duration_ms": round(elapsed_s * 1000, 1),
            "bytes_out": status["bytes"],
            "caller": state.get("caller"),
        }
        if usage is not None:
            metrics.request_latency.labels(route=route_name).observe(elapsed_s)
            fields.update(
                chars_in=state.get("chars_in", 0),
                chars_out=state.get("chars_out", 0),
                segments=usage.segments,
                cached_segments=usage.cached_segments,
                generated_tokens=usage.generated_tokens,
                queue_ms=round(usage.queue_ms, 1),
                engine_ms=round(usage.engine_ms, 1),
            )
        log.info("request", extra=fields)


class BodyLimitMiddleware:
    """Refuse bodies over the limit before they are read into memory.

    A declared Content-Length over the limit is answered at once; a chunked
    body is counted as it arrives and stopped when it passes the limit.
    """

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            response = error_response(413, str(BodyTooLarge(self.limit)))
            return await response(scope, receive, send)
        seen = 0

        async def counting_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        await self.app(scope, counting_receive, send)


def create_app(settings: Settings, engine: Engine | None = None) -> FastAPI:
    """Build the app. ``engine`` lets tests bring their own; by default the settings pick one."""
    runtime = Runtime(settings, engine)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        await runtime.start()
        try:
            yield
        finally:
            await runtime.stop()

    app = FastAPI(
        title="mtserve",
        version=__version__,
        description=(
            "Self-hosted machine translation. LibreTranslate-compatible API; "
            "errors are JSON {\"error\": \"...\"}."
        ),
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    app.state.settings = settings
    install_error_handlers(app)
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes)
    if settings.cors_origins.strip():
        origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["*"], expose_headers=["X-Request-Id", "Server-Timing"])
    app.add_middleware(RequestContextMiddleware, runtime=runtime)  # outermost: sees every response
    return app
