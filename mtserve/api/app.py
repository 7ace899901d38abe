"""The FastAPI application: wiring, request ids, one log line per request."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from mtserve import __version__
from mtserve.api.deepl import router as deepl_router
from mtserve.api.deepl_documents import router as deepl_documents_router
from mtserve.api.deepl_v3 import router as deepl_v3_router
from mtserve.api.errors import BodyTooLarge, api_family, error_response, install_error_handlers
from mtserve.api.files import UPLOAD_PATHS, logged_path, upload_limit_bytes
from mtserve.api.files import router as files_router
from mtserve.api.libretranslate import router as libretranslate_router
from mtserve.api.openai import router as openai_router
from mtserve.api.ops import router as ops_router
from mtserve.api.protocol import ServerClosing
from mtserve.api.schemas import DetectRequest, TranslateRequest
from mtserve.api.tm import IMPORT_PATHS as TM_IMPORT_PATHS
from mtserve.api.tm import router as tm_router
from mtserve.documents.jobs.store import JobStore
from mtserve.engines.base import Engine
from mtserve.service.metrics import watch_event_loop
from mtserve.service.runtime import Runtime
from mtserve.settings import Settings
from mtserve.webui import STATIC_DIR

log = logging.getLogger("mtserve.request")
start_log = logging.getLogger("mtserve.serve")

UNTRACKED_PATHS = ("/static/", "/static-offline-docs/", "/favicon")
# The API docs pages may load nothing from outside mtserve (ReDoc's bundle asks a CDN for its logo).
DOCS_PATHS = ("/docs", "/redoc")
DOCS_POLICY = (b"default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
               b"script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; font-src 'self' data:")


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
                status["started"] = True
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [(b"x-request-id", request_id.encode())]
                if scope.get("path") in DOCS_PATHS:
                    message["headers"].append((b"content-security-policy", DOCS_POLICY))
            elif message["type"] == "http.response.body":
                status["bytes"] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except asyncio.CancelledError:
            # uvicorn cancels what is still running when the shutdown grace period ends;
            # the client gets a clear JSON 503 instead of a bare 500.
            if status["code"] == 500 and not status.get("started"):
                await error_response(
                    503, "the server is shutting down; retry against another instance or shortly",
                    {"Retry-After": "5"}, path=scope.get("path", ""),
                )(scope, receive, send_with_id)
            raise
        finally:
            path = scope.get("path", "")
            if not path.startswith(UNTRACKED_PATHS):
                self._record(scope, state, path, request_id, status, time.perf_counter() - started)

    def _record(self, scope, state, path, request_id, status, elapsed_s) -> None:
        route = scope.get("route")
        route_name = getattr(route, "path", None) or "unmatched"
        metrics = self.runtime.metrics
        metrics.requests.labels(api=api_family(path), route=route_name, status=str(status["code"])).inc()
        usage = state.get("usage")
        fields = {
            "event": "request",
            "request_id": request_id,
            "method": scope.get("method"),
            "path": logged_path(path),  # a download URL is a permission: its token is not logged whole
            "status": status["code"],
            "duration_ms": round(elapsed_s * 1000, 1),
            "bytes_out": status["bytes"],
            "api": api_family(path),
            "caller": state.get("caller"),
        }
        if usage is not None:
            metrics.request_latency.labels(api=api_family(path), route=route_name).observe(elapsed_s)
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

    def __init__(self, app, limit: int, upload_limit: int = 0, upload_paths: tuple[str, ...] = ()):
        self.app = app
        self.limit = limit
        self.upload_limit = upload_limit  # document uploads (files_max_mb) have their own limit
        self.upload_paths = upload_paths

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        uploading = scope.get("path") in self.upload_paths
        limit = max(self.limit, self.upload_limit) if uploading else self.limit
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            message = (f"the upload is over the limit of {self.upload_limit:,} bytes (MTSERVE_FILES_MAX_MB)"
                       if uploading else str(BodyTooLarge(limit)))
            response = error_response(413, message, path=scope.get("path", ""))
            return await response(scope, receive, send)
        seen = 0

        async def counting_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, counting_receive, send)


def install_body_schemas(app: FastAPI, models) -> None:
    """Put the request-body models into the OpenAPI components.

    Routes that take JSON *or* form data parse the body themselves, so FastAPI
    does not see their models; their ``openapi_extra`` refers to these entries.
    """
    base = app.openapi

    def openapi():
        if app.openapi_schema is None:
            schema = base()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in models:
                definition = model.model_json_schema(ref_template="#/components/schemas/{model}")
                components.update(definition.pop("$defs", {}))
                components[model.__name__] = definition
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi


def browser_url(host: str, port: int) -> str:
    """Where a person on this machine opens a server listening on ``host``: a wildcard address is
    loopback, an IPv6 address goes in brackets."""
    host = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


async def announce_ready(app: FastAPI, runtime: Runtime) -> None:
    """Once the server can translate, one plain line: how long it took, and where to open it.
    ``app.state.started`` (time.monotonic()) and ``app.state.url`` are what `mtserve serve` measured
    and bound; without them, the app's own creation and its settings' address. With
    ``app.state.server`` (uvicorn's), the line waits for it to accept connections too."""
    await runtime.wait_ready()
    if not runtime.ready:  # the load failed: its error is logged, and /health/details says it
        return
    server = getattr(app.state, "server", None)
    while server is not None and not server.started:  # the lifespan's startup ends before uvicorn serves
        await asyncio.sleep(0.05)
    settings: Settings = app.state.settings
    url = getattr(app.state, "url", None) or browser_url(settings.host, settings.port)
    seconds = time.monotonic() - app.state.started
    start_log.info(f"ready in {seconds:.1f} s: open {url}",
                   extra={"event": "serving", "plain": True, "url": url, "seconds": round(seconds, 1)})


def create_app(settings: Settings, engine: Engine | None = None) -> FastAPI:
    """Build the app. ``engine`` lets tests bring their own; by default the settings pick one."""
    created = time.monotonic()
    runtime = Runtime(settings, engine, serving=True)
    jobs = JobStore(settings, lambda: runtime.service)  # document jobs: /translate_file, /jobs

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        watcher = asyncio.create_task(watch_event_loop(runtime.metrics.event_loop_lag))
        announcer = None
        try:
            await runtime.start()
            await jobs.start()
            announcer = asyncio.create_task(announce_ready(app, runtime))
            try:
                yield
            finally:
                announcer.cancel()
                await jobs.stop()
                await runtime.stop()
        finally:
            watcher.cancel()

    # /docs and /redoc serve Swagger UI and ReDoc from mtserve itself (no CDN: it runs offline).
    app = FastAPIOffline(
        title="mtserve",
        version=__version__,
        description=(
            "Self-hosted machine translation. LibreTranslate-compatible API; "
            "errors are JSON {\"error\": \"...\"}."
        ),
        lifespan=lifespan,
    )
    install_body_schemas(app, (TranslateRequest, DetectRequest))
    app.state.runtime = runtime
    app.state.settings = settings
    app.state.started = created  # `mtserve serve` sets it earlier, and app.state.url to the address it bound
    app.state.jobs = jobs
    app.state.closing = ServerClosing(settings.shutdown_grace_s)  # mtserve's protocol begins it
    install_error_handlers(app)
    app.include_router(libretranslate_router)
    app.include_router(ops_router)
    app.include_router(deepl_router)
    app.include_router(deepl_documents_router)
    app.include_router(deepl_v3_router)
    app.include_router(openai_router)
    app.include_router(files_router)
    app.include_router(tm_router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static")
    app.add_middleware(BodyLimitMiddleware, limit=settings.max_body_bytes,
                       upload_limit=upload_limit_bytes(settings), upload_paths=UPLOAD_PATHS + TM_IMPORT_PATHS)
    if settings.cors_origins.strip():
        origins = [o.strip() for o in settings.cors_origins.split(",") if o.strip()]
        app.add_middleware(CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["*"], expose_headers=["X-Request-Id", "Server-Timing"])
    app.add_middleware(RequestContextMiddleware, runtime=runtime)  # outermost: sees every response
    return app
