"""Every error leaves the API as JSON ``{"error": "..."}`` with a fitting status.

Bad input is a 4xx that says what to fix; overload is 503 with Retry-After; a
missed deadline is 504. Only a real server fault is a 500, and it carries the
request id so the log line can be found, never a stack trace.

Each family's errors have its clients' shape: DeepL's ``{"message": ...}`` on every path under
``/v2`` and ``/v3`` (an unknown one's 404 too), OpenAI's under ``/v1``. The LibreTranslate family
(every other path) words the errors its
clients and monitors compare as LibreTranslate's ``app.py`` does ("zz is not supported",
"Invalid API key"), and puts mtserve's longer advice in a ``hint`` field beside ``error``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from mtserve.documents.formats.base import (
    DocumentError,
    LimitExceeded,
    StorageUnavailable,
    TooManyDocuments,
    UnsupportedFormat,
)
from mtserve.engines.base import EngineError, PromptTooLong
from mtserve.service.access import AccessDenied, InvalidKey, KeyRequired, QuotaExceeded, RateLimited
from mtserve.service.glossary import (
    GlossaryError,
    GlossaryForbidden,
    GlossaryTooLarge,
    UnknownGlossary,
    UnusableGlossaryId,
)
from mtserve.service.glossary_store import UnknownDictionary
from mtserve.service.request import FormalityUnsupported, UnsupportedLanguage
from mtserve.service.scheduler import CallerBusy, DeadlineExceeded, QueueFull, SchedulerStopped
from mtserve.service.style_rules import StyleRuleError, StyleRuleForbidden, UnknownStyleRule
from mtserve.service.tm import TMBusy, TMError, TMTooLarge
from mtserve.service.tm_access import TMForbidden, UnknownEntry, UnknownMemory
from mtserve.text.languages import language_name

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An HTTP error: ``message`` is the error itself, ``hint`` the advice on what to do about it."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None,
                 hint: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.hint = hint


class BodyTooLarge(Exception):
    def __init__(self, limit: int):
        super().__init__(f"the request body is over the limit of {limit} bytes (MTSERVE_MAX_BODY_BYTES)")


class ClientGone(Exception):
    """The client closed the connection before its answer; its work was cancelled."""


CLIENT_CLOSED = 499  # nginx's code for "client closed the request"


class NotReady(ApiError):
    def __init__(self, message: str = "the model is still loading; retry shortly"):
        super().__init__(503, message, {"Retry-After": "5"})


class ErrorBody(BaseModel):
    """LibreTranslate's error shape, as the OpenAPI document shows it."""

    error: str
    hint: str | None = None  # mtserve's advice on what to do, beside LibreTranslate's words


# The error responses the OpenAPI document lists for the routes that translate.
ERRORS = {
    400: {"model": ErrorBody, "description": "Invalid request: the message says what to fix."},
    413: {"model": ErrorBody, "description": "Over a size limit (characters or texts)."},
    503: {"model": ErrorBody, "description": "Loading or at capacity; see Retry-After."},
    504: {"model": ErrorBody, "description": "The request's deadline passed."},
}

OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                      404: "not_found_error", 413: "invalid_request_error", 429: "rate_limit_error"}


# The path prefixes each family but LibreTranslate's owns: DeepL's v2 API and its v3 (glossaries, style
# rules, translation memories).
FAMILY_PREFIXES = (("/v2", "deepl"), ("/v3", "deepl"), ("/v1", "openai"))


def api_family(path: str) -> str:
    """Whose API ``path`` speaks: ``"deepl"`` (/v2, /v3), ``"openai"`` (/v1), else ``"libretranslate"``."""
    for prefix, family in FAMILY_PREFIXES:
        if path == prefix or path.startswith(prefix + "/"):
            return family
    return "libretranslate"


def is_libretranslate(path: str) -> bool:
    """Whether ``path`` belongs to the LibreTranslate family: everything outside DeepL's and OpenAI's."""
    return api_family(path) == "libretranslate"


def error_body(status: int, message: str, path: str = "", hint: str | None = None) -> dict:
    """The error shape each API family's clients parse.

    LibreTranslate: {"error": "...", "hint": "..."} (hint only when there is one); DeepL (/v2, /v3):
    {"message": "..."}; OpenAI (/v1): {"error": {"message", "type", "param", "code"}}. The two
    without a hint field carry it in the message.
    """
    family = api_family(path)
    if family == "libretranslate":
        return {"error": message, "hint": hint} if hint else {"error": message}
    if hint:
        message = f"{message} ({hint})"
    if family == "deepl":
        return {"message": message}
    kind = OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def error_response(status: int, message: str, headers: dict[str, str] | None = None,
                   path: str = "", hint: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, path, hint), status_code=status, headers=headers)


def describe_validation_error(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query"))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "invalid request: " + "; ".join(parts)


# One table: which service exception is which status, with its headers. Each API family renders
# the message in its own shape (``error_body``); a family may name its own status for one (DeepL's
# 456 for a spent quota). The first class that matches wins, so subclasses come first.
def _retry_after(seconds: Callable[[Exception], object]) -> Callable[[Exception], dict[str, str]]:
    return lambda exc: {"Retry-After": str(seconds(exc))}


@dataclass(frozen=True)
class ErrorStatus:
    status: int
    headers: Callable[[Exception], dict[str, str]] = lambda exc: {}
    family_status: dict[str, int] = field(default_factory=dict)  # api_family -> status, where it differs


STATUS_OF: tuple[tuple[type[Exception], ErrorStatus], ...] = (
    (UnsupportedLanguage, ErrorStatus(400)),
    (FormalityUnsupported, ErrorStatus(400)),
    # A glossary_id a translation names, as a field: DeepL answers 400 for an unknown one. The glossary
    # a route is about, not there: 404.
    (UnusableGlossaryId, ErrorStatus(404, family_status={"deepl": 400})),
    (UnknownGlossary, ErrorStatus(404)),
    (UnknownDictionary, ErrorStatus(404)),  # a glossary without the language pair a route names
    (GlossaryForbidden, ErrorStatus(403)),
    (GlossaryTooLarge, ErrorStatus(413)),
    (GlossaryError, ErrorStatus(400)),  # a glossary_id whose pair does not fit, bad entries
    (UnknownStyleRule, ErrorStatus(404)),  # a style_id (on /v2/translate too, as DeepL) or rule list not there
    (StyleRuleForbidden, ErrorStatus(403)),
    (StyleRuleError, ErrorStatus(400)),  # a style rule for another target language, bad fields
    # LibreTranslate answers a missing key with 400 and a wrong one with 403 (its app.py and
    # test_api_keys.py); OpenAI answers both with 401; DeepL both with 403.
    (KeyRequired, ErrorStatus(403, family_status={"openai": 401, "libretranslate": 400})),
    (InvalidKey, ErrorStatus(403, family_status={"openai": 401})),
    (AccessDenied, ErrorStatus(403)),
    (QuotaExceeded, ErrorStatus(429, family_status={"deepl": 456})),  # DeepL: "Quota exceeded"
    (RateLimited, ErrorStatus(429, _retry_after(lambda exc: exc.retry_after_s))),
    (UnknownEntry, ErrorStatus(404)),
    (UnknownMemory, ErrorStatus(404)),  # a translation_memory_id that is none of the caller's views
    (TMForbidden, ErrorStatus(403)),  # another key's entries, a cap, suggestions off
    (TMTooLarge, ErrorStatus(413)),  # a file past the parse limits
    (TMBusy, ErrorStatus(503, lambda exc: {"Retry-After": "5"})),
    (TMError, ErrorStatus(400)),
    (BodyTooLarge, ErrorStatus(413)),
    (LimitExceeded, ErrorStatus(413)),
    (TooManyDocuments, ErrorStatus(503, lambda exc: {"Retry-After": "30"})),
    (StorageUnavailable, ErrorStatus(507)),  # the disk is full or read-only: no upload or result stored
    (DocumentError, ErrorStatus(400)),
    (QueueFull, ErrorStatus(503, _retry_after(lambda exc: exc.retry_after_s))),
    (CallerBusy, ErrorStatus(429, _retry_after(lambda exc: exc.retry_after_s))),
    (SchedulerStopped, ErrorStatus(503, lambda exc: {"Retry-After": "5"})),
    (DeadlineExceeded, ErrorStatus(504)),
    (PromptTooLong, ErrorStatus(413)),  # a segment the model's context cannot hold, even without its context
)
# What a family's clients are told to read for the languages, after a service message.
LANGUAGE_HINTS = {"deepl": "see GET /v2/languages", "openai": "see GET /v1/models",
                  "libretranslate": "see GET /languages"}


def status_of(exc: Exception, path: str = "") -> tuple[int, dict[str, str]] | None:
    """(status, headers) of a service exception for a request to ``path``; None for a real fault."""
    for kind, entry in STATUS_OF:
        if isinstance(exc, kind):
            status = entry.family_status.get(api_family(path), entry.status)
            headers = entry.headers(exc)
            if status == 401:  # RFC 9110: a 401 names the scheme that would be accepted
                headers = {**headers, "WWW-Authenticate": "Bearer"}
            return status, headers
    return None


def words_of(exc: Exception, path: str = "") -> tuple[str, str | None]:
    """(message, hint) of a service exception for a request to ``path``, in its family's words."""
    if is_libretranslate(path):
        words = libretranslate_words(exc)
        if words is not None:
            return words
    message = str(exc)
    if isinstance(exc, DeadlineExceeded):
        return f"translation did not finish within the deadline ({message}); send shorter text or retry", None
    if isinstance(exc, UnknownGlossary) and not isinstance(exc, UnusableGlossaryId) and api_family(path) == "deepl":
        return f"Glossary not found: {exc.glossary_id}", None  # DeepL's words, which its clients show
    if isinstance(exc, KeyRequired) and api_family(path) == "deepl":  # where DeepL's clients send the key
        return "an API key is required: send it in an Authorization: DeepL-Auth-Key <key> header", None
    if isinstance(exc, UnsupportedFormat) and api_family(path) == "deepl":  # DeepL's words, which its clients match
        what = (f"the file extension '.{exc.extension}' is not supported" if exc.extension
                else "the file has no file extension to tell its format")
        return f"Invalid file data: {what}; allowed formats: {exc.allowed}", None
    if isinstance(exc, (UnsupportedLanguage, FormalityUnsupported)):
        return f"{message} ({LANGUAGE_HINTS[api_family(path)]})", None
    return message, None


def clipped(code: str, limit: int = 40) -> str:
    """A client's language code echoed back, cut short: hostile input is not echoed whole."""
    return code if len(code) <= limit else code[:limit] + "..."


def libretranslate_words(exc: Exception) -> tuple[str, str | None] | None:
    """LibreTranslate's own error string for ``exc`` (from its app.py), with mtserve's advice as the
    hint; None where LibreTranslate has no such error, and mtserve's message stands."""
    if isinstance(exc, UnsupportedLanguage):
        if exc.pair is not None:
            source, target = exc.pair
            return (f"{language_name(target)} ({target}) is not available as a target language from "
                    f"{language_name(source)} ({source})",
                    f"{exc}; see GET /languages for each source's targets")
        if exc.code is not None:
            return (f"{clipped(exc.code)} is not supported",
                    f"{exc.role} must be one of: {', '.join(exc.supported)}; see GET /languages")
    if isinstance(exc, InvalidKey):
        return "Invalid API key", "the key is none of this server's; check it, or ask the operator for one"
    if isinstance(exc, KeyRequired):
        return "Please contact the server operator to get an API key", str(exc)
    if isinstance(exc, RateLimited) and exc.limit:
        return f"Slowdown: {exc.limit} per 1 minute", str(exc)  # flask-limiter's words for the limit
    return None


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return error_response(exc.status, exc.message, exc.headers, path=request.url.path, hint=exc.hint)

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

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone):
        return Response(status_code=CLIENT_CLOSED)  # nobody is there to read a body

    async def _mapped(request: Request, exc: Exception):
        found = status_of(exc, request.url.path)
        if found is None:
            return _internal(request, exc)
        status, headers = found
        message, hint = words_of(exc, request.url.path)
        return error_response(status, message, headers or None, path=request.url.path, hint=hint)

    for kind, _ in STATUS_OF:
        app.add_exception_handler(kind, _mapped)

    @app.exception_handler(EngineError)
    async def _engine(request: Request, exc: EngineError):
        return _internal(request, exc)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        return _internal(request, exc)


def _internal(request: Request, exc: Exception) -> JSONResponse:
    request_id = request.scope.get("state", {}).get("request_id", "-")
    log.error("request failed", exc_info=exc, extra={"event": "error", "request_id": request_id})
    path = request.url.path
    if is_libretranslate(path) and path.startswith("/translate"):  # LibreTranslate's words for a 500
        return error_response(500, f"Cannot translate text: internal error (request id {request_id})",
                              path=path, hint="the server's log has the details under this request id")
    return error_response(500, f"internal error while translating (request id {request_id})", path=path)
