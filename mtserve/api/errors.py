"""Every error leaves the API as JSON ``{"error": "..."}`` with a fitting status.

Bad input is a 4xx that says what to fix; overload is 503 with Retry-After; a
missed deadline is 504. Only a real server fault is a 500, and it carries the
request id so the log line can be found, never a stack trace.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from mtserve.engines.base import EngineError
from mtserve.service.access import AccessDenied, RateLimited
from mtserve.service.glossary import GlossaryError, UnknownGlossary
from mtserve.service.scheduler import DeadlineExceeded, QueueFull, SchedulerStopped
from mtserve.service.translator import UnsupportedLanguage

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class BodyTooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the request body is over the limit of {limit} bytes (MTSERVE_MAX_BODY_BYTES)")


class NotReady(ApiError):
    def __init__(self, message: str = "the model is still loading; retry shortly"):
        super().__init__(503, message, {"Retry-After": "5"})


OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                      404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_error"}


def error_body(status: int, message: str, path: str = "") -> dict:
    """The error shape each API family's clients parse.

    LibreTranslate: {"error": "..."}; DeepL (/v2): {"message": "..."};
    OpenAI (/v1): {"error": {"message", "type", "param", "code"}}.
    """
    if path.startswith("/v2/"):
        return {"message": message}
    if path.startswith("/v1/"):
        kind = OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return {"error": message}


def error_response(status: int, message: str, headers: dict[str, str] | None = None,
                   path: str = "") -> JSONResponse:
    return JSONResponse(error_body(status, message, path), status_code=status, headers=headers)


def describe_validation_error(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "invalid request: " + "; ".join(parts)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return error_response(exc.status, exc.message, exc.headers, path=request.url.path)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        return error_response(400, describe_validation_error(exc), path=request.url.path)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404:
            message = f"no such endpoint: {request.method} {request.url.path}; see /docs"
        elif exc.status_code == 405:
            message = f"method {request.method} is not allowed on {request.url.path}; see /docs"
        return error_response(exc.status_code, message, getattr(exc, "headers", None), path=request.url.path)

    @app.exception_handler(UnsupportedLanguage)
    async def _language(request: Request, exc: UnsupportedLanguage):
        return error_response(400, str(exc), path=request.url.path)

    @app.exception_handler(UnknownGlossary)
    async def _unknown_glossary(request: Request, exc: UnknownGlossary):
        return error_response(404, str(exc), path=request.url.path)

    @app.exception_handler(GlossaryError)  # a glossary_id whose pair does not fit, bad entries
    async def _glossary(request: Request, exc: GlossaryError):
        return error_response(400, str(exc), path=request.url.path)

    @app.exception_handler(AccessDenied)
    async def _denied(request: Request, exc: AccessDenied):
        return error_response(403, str(exc), path=request.url.path)

    @app.exception_handler(RateLimited)
    async def _limited(request: Request, exc: RateLimited):
        return error_response(429, str(exc), {"Retry-After": str(exc.retry_after_s)}, path=request.url.path)

    @app.exception_handler(BodyTooLarge)
    async def _too_large(request: Request, exc: BodyTooLarge):
        return error_response(413, str(exc), path=request.url.path)

    @app.exception_handler(QueueFull)
    async def _full(request: Request, exc: QueueFull):
        return error_response(503, str(exc), {"Retry-After": str(exc.retry_after_s)}, path=request.url.path)

    @app.exception_handler(SchedulerStopped)
    async def _stopped(request: Request, exc: SchedulerStopped):
        return error_response(503, str(exc), {"Retry-After": "5"}, path=request.url.path)

    @app.exception_handler(DeadlineExceeded)
    async def _deadline(request: Request, exc: DeadlineExceeded):
        return error_response(
            504, f"translation did not finish within the deadline ({exc}); send shorter text or retry",
            path=request.url.path,
        )

    @app.exception_handler(EngineError)
    async def _engine(request: Request, exc: EngineError):
        return _internal(request, exc)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        return _internal(request, exc)


def _internal(request: Request, exc: Exception) -> JSONResponse:
    request_id = request.scope.get("state", {}).get("request_id", "-")
    log.error("request failed", exc_info=exc, extra={"event": "error", "request_id": request_id})
    return error_response(500, f"internal error while translating (request id {request_id})",
                          path=request.url.path)
