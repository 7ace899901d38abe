"""The LibreTranslate family: /translate (and its stream), /languages, /detect, /frontend/settings,
/spec, the WebUI.

Each route parses LibreTranslate's shape into the service's ``TranslationRequest``, runs it
through ``mtserve.api.calls``, and shapes LibreTranslate's answer. Translation logic
lives in ``mtserve.service``; no engine is named here.

Fields are read as LibreTranslate (Flask) reads them: a JSON object, or ``request.values``, the
query string's fields over a form's (UTF-8). The key is checked first, then the fields, and the
errors a client or monitor compares are LibreTranslate's own strings (its ``app.py``), with
mtserve's advice in ``hint``; mtserve's own fields (glossary, tm, timeout...) keep mtserve's words.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ValidationError
from sse_starlette.sse import EventSourceResponse

from mtserve.api.calls import event_stream, open_stream, relay, run_call, service_of
from mtserve.api.errors import ERRORS, ApiError, ErrorBody, clipped, describe_validation_error
from mtserve.api.fields import (
    FORM_TYPES,
    content_type_of,
    guidance_of,
    is_json,
    json_type,
    query_fields,
    read_fields,
    text_field,
    validation_context,
)
from mtserve.api.keys import admit, runtime_of
from mtserve.api.schemas import (
    DetectedLanguage,
    DetectRequest,
    LanguageInfo,
    TranslateRequest,
    TranslateResponse,
)
from mtserve.service.glossary import check_request_entries
from mtserve.service.request import Delta, Detected, Done, StreamEvent, TranslationRequest, Usage
from mtserve.settings import Settings
from mtserve.text.languages import language_name
from mtserve.webui import STATIC_DIR

log = logging.getLogger(__name__)
router = APIRouter()
Model = TypeVar("Model", bound=BaseModel)

TRANSLATE_ERRORS = {
    **ERRORS, 404: {"model": ErrorBody, "description": "No stored glossary has that glossary_id."},
}
# The WebUI waits this long after the last keystroke before it translates (LibreTranslate's
# frontendTimeout, in ms; the WebUI reads it from /frontend/settings).
FRONTEND_TIMEOUT_MS = 400


def _body_doc(model: type[BaseModel]) -> dict[str, Any]:
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": schema},
                "application/x-www-form-urlencoded": {"schema": schema},
            },
        }
    }


# --- helpers -------------------------------------------------------------------
def validate_as(request: Request, model: type[Model], data: dict[str, Any]) -> Model:
    """The fields as ``model``, or a 400 that names each field that is wrong."""
    try:
        return model.model_validate(data, context=validation_context(request))
    except ValidationError as exc:
        detail = describe_validation_error(exc).removeprefix("invalid request: ")
        raise ApiError(400, f"Invalid request: {detail}") from None


async def read_values(request: Request) -> dict[str, Any]:
    """The fields as LibreTranslate reads them: a JSON object, or its ``request.values`` (the query
    string's fields over a form's); a repeated form field becomes a list."""
    return await read_fields(request, query_first=True)


WHAT = {"q": "the text (a list of texts for a batch)", "target": "the target language code"}


def missing(request: Request, name: str, why: str = "") -> ApiError:
    """LibreTranslate's 400 for a field that is absent or empty, with where to send it as the hint."""
    hint = why or f"send {name}, {WHAT.get(name, name)}, as a JSON field, a form field or in the query string"
    media_type, _ = content_type_of(request)
    if media_type and media_type not in FORM_TYPES and not is_json(request):
        shown_type = media_type.decode("latin-1")[:60]
        hint += (f"; a body of type {shown_type} is not read: send JSON (Content-Type: application/json) "
                 "or form data")
    return ApiError(400, f"Invalid request: missing {name} parameter", hint=hint)


def over_limit(size: int, limit: int, hint: str) -> ApiError:
    """LibreTranslate's 400 for a request over its text or batch limit (it words both alike)."""
    return ApiError(400, f"Invalid request: request ({size}) exceeds text limit ({limit})", hint=hint)


def checked_fields(request: Request, fields: dict[str, Any], *, translate: bool = True) -> dict[str, Any]:
    """LibreTranslate's checks, in its order and words, before the request model's: the key, then q,
    target, format and alternatives. A missing source is ``auto``, where LibreTranslate asks for one."""
    admit(request, text_field(fields, "api_key", label="api_key") or None)
    if not fields.get("q"):  # absent, null, "" or []
        why = "q is an empty list; send at least one text" if fields.get("q") == [] else ""
        raise missing(request, "q", why)
    texts_of(fields["q"], batch=translate)
    if not translate:
        return fields
    if not fields.get("target"):
        raise missing(request, "target")
    fields = {**fields, "source": fields.get("source") or "auto", "format": fields.get("format") or "text"}
    if fields["format"] not in ("text", "html"):
        raise ApiError(400, f"{clipped(str(fields['format']))} format is not supported",
                       hint="format is text or html")
    if fields.get("alternatives") not in (None, ""):
        fields["alternatives"] = alternatives_of(fields["alternatives"], request.app.state.settings)
    return fields


def texts_of(q: Any, *, batch: bool = True) -> None:
    """q is a string (or, where a batch is taken, a list of strings); anything else is a 400 that says
    so in these words, where the request model would answer in pydantic's."""
    wanted = "a string or a list of strings" if batch else "a string"
    example = 'send the text as a JSON string, e.g. {"q": "你好"}' + (
        ', or several texts as a list of strings, e.g. {"q": ["你好", "谢谢"]}' if batch else "")
    if isinstance(q, str):
        return
    if batch and isinstance(q, list):
        wrong = next(((i, t) for i, t in enumerate(q) if not isinstance(t, str)), None)
        if wrong is None:
            return
        raise ApiError(400, f"q must be {wanted}", hint=f"q[{wrong[0]}] is {json_type(wrong[1])}; {example}")
    raise ApiError(400, f"q must be {wanted}", hint=f"q is {json_type(q)}; {example}")


def alternatives_of(value: Any, settings: Settings) -> int:
    """How many alternatives, read as LibreTranslate does (``max(0, int(value))``), within the limit."""
    try:
        count = max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        raise ApiError(400, "Invalid request: alternatives parameter is not a number",
                       hint=f"alternatives is a whole number from 0 to {settings.max_alternatives}") from None
    if count > settings.max_alternatives:
        raise ApiError(400, f"Invalid request: alternatives parameter must be <= {settings.max_alternatives}",
                       hint="the server's limit is MTSERVE_MAX_ALTERNATIVES")
    return count


def validate_translate(req: TranslateRequest, settings: Settings) -> list[str]:
    texts = req.q if isinstance(req.q, list) else [req.q]
    if len(texts) > settings.batch_limit:
        raise over_limit(len(texts), settings.batch_limit,
                         f"q has {len(texts)} texts; the batch limit is {settings.batch_limit} "
                         "(MTSERVE_BATCH_LIMIT): send them in several requests")
    chars = sum(len(t) for t in texts)
    if chars > settings.char_limit:
        raise over_limit(chars, settings.char_limit,
                         f"the request has {chars} characters, all its texts together; the limit is "
                         f"{settings.char_limit} (MTSERVE_CHAR_LIMIT): split the text into several requests")
    check_request_entries(req.glossary, settings.glossary_request_entries)  # GlossaryTooLarge: 413
    return texts


def translation_of(req: TranslateRequest, texts: list[str], settings: Settings) -> TranslationRequest:
    """LibreTranslate's fields as the service's request (``context``: an extension, DeepL's field)."""
    return TranslationRequest(texts, req.target, source=req.source, format=req.format,
                              glossary=req.glossary, glossary_id=req.glossary_id,
                              guidance=guidance_of(settings, req.context), memory=req.tm,
                              alternatives=req.alternatives, deadline_s=deadline_s(req, settings))


def deadline_s(req: TranslateRequest, settings: Settings) -> float:
    """The server's deadline, or the client's if it asked for a shorter one."""
    if req.timeout is None:
        return settings.request_timeout_s
    return min(req.timeout, settings.request_timeout_s)


def detected_json(detection) -> dict[str, Any] | None:
    if detection is None:
        return None
    return {"language": detection.language, "confidence": detection.confidence}


# --- pages -----------------------------------------------------------------------
@router.get("/", include_in_schema=False)
async def index(request: Request):
    page = STATIC_DIR / "index.html"
    if not page.is_file():
        raise ApiError(404, "the WebUI is not installed")
    return FileResponse(page, media_type="text/html")


@router.get("/favicon.ico", include_in_schema=False)
async def favicon():
    return FileResponse(STATIC_DIR / "favicon.svg", media_type="image/svg+xml")


# --- translation -------------------------------------------------------------------
@router.post(
    "/translate", response_model=TranslateResponse, response_model_exclude_none=True,
    responses=TRANSLATE_ERRORS, openapi_extra=_body_doc(TranslateRequest),
)
async def translate(request: Request):
    """Translate a text or a list of texts (LibreTranslate's contract)."""
    settings: Settings = request.app.state.settings
    fields = checked_fields(request, await read_values(request))
    req = validate_as(request, TranslateRequest, fields)
    texts = validate_translate(req, settings)
    results, usage = await run_call(request, translation_of(req, texts, settings))
    single = not isinstance(req.q, list)
    body: dict[str, Any] = {
        "translatedText": results[0].text if single else [r.text for r in results]
    }
    if req.source == "auto":
        detected = [detected_json(r.detected) for r in results]
        body["detectedLanguage"] = detected[0] if single else detected
    if req.alternatives:
        alts = [r.alternatives for r in results]
        body["alternatives"] = alts[0] if single else alts
    body.update(memory_use(usage))
    body.update(review_use(usage))
    return JSONResponse(body, headers={"Server-Timing": server_timing(usage)})


def memory_use(usage: Usage) -> dict[str, Any]:
    """An extension of the answer: how many segments came from the translation memory as stored."""
    return {"translationMemory": {"segments": usage.tm_segments}} if usage.tm_segments else {}


def review_use(usage: Usage) -> dict[str, Any]:
    """An extension of the answer: what its reader should check. ``unplacedTags``: tags whose words
    could not be found in the translation, kept empty at their sentence's end; ``droppedContent``:
    segments that still lack part of their source after a stricter retry."""
    review = {"unplacedTags": usage.markup_unplaced, "droppedContent": usage.content_dropped}
    return {"review": {name: n for name, n in review.items() if n}} if any(review.values()) else {}


def server_timing(usage: Usage) -> str:
    """Where the time went, for benchmarks and browser dev tools (W3C Server-Timing)."""
    return (
        f"queue;dur={usage.queue_ms:.1f}, engine;dur={usage.engine_ms:.1f}, "
        f'segments;desc="{usage.segments} segments, {usage.cached_segments} cached, '
        f'{usage.generated_tokens} tokens"'
    )


async def _stream(request: Request, fields: dict[str, Any]):
    settings: Settings = request.app.state.settings
    req = validate_as(request, TranslateRequest, checked_fields(request, fields))
    if isinstance(req.q, list):
        raise ApiError(400, "the stream endpoint takes one text in q, not a list")
    texts = validate_translate(req, settings)
    stream = await open_stream(request, translation_of(req, texts, settings))

    def render(event: StreamEvent) -> list[dict[str, str]]:
        if isinstance(event, Detected):
            return [sse("detected", detected_json(event.detection))]
        if isinstance(event, Delta):
            return [sse("delta", {"text": event.text})]
        if isinstance(event, Done):
            body: dict[str, Any] = {"translatedText": event.translation.text}
            if event.translation.detected is not None:
                body["detectedLanguage"] = detected_json(event.translation.detected)
            return [sse("done", {**body, **memory_use(stream.usage), **review_use(stream.usage)})]
        return []  # SegmentDone: the OpenAI stream's granularity; not part of this protocol

    def failed(message: str) -> dict[str, str]:
        return {"event": "error", "data": json.dumps({"error": message}, ensure_ascii=False)}

    return event_stream(request, relay(request, stream, render, failed))


def sse(kind: str, data: Any) -> dict[str, str]:
    return {"event": kind, "data": json.dumps(data, ensure_ascii=False)}


@router.post(
    "/translate/stream", responses=TRANSLATE_ERRORS, openapi_extra=_body_doc(TranslateRequest),
    response_class=EventSourceResponse,
)
async def translate_stream(request: Request):
    """Server-sent events: `detected`, then `delta` (text to append), then `done` (final text)."""
    return await _stream(request, await read_values(request))


@router.get("/translate/stream", responses=TRANSLATE_ERRORS, response_class=EventSourceResponse)
async def translate_stream_get(request: Request, q: str | None = None, target: str | None = None,
                               source: str = "auto", format: str = "text", api_key: str | None = None,
                               glossary: str | None = None, glossary_id: str | None = None,
                               context: str | None = None):
    """The same stream for EventSource clients, with the fields in the query string (q and target
    are required; the parameters are named here for the API document, and read as UTF-8 below)."""
    return await _stream(request, query_fields(request))


# --- languages and detection ------------------------------------------------------
@router.get("/languages", response_model=list[LanguageInfo])
async def languages(request: Request):
    """Languages the loaded model translates, each with its possible targets."""
    model = runtime_of(request).model  # a Marian model translates one direction: its pairs say which
    return [LanguageInfo(code=c, name=language_name(c), targets=model.targets(c)) for c in model.languages]


@router.post("/detect", response_model=list[DetectedLanguage], responses=ERRORS,
             openapi_extra=_body_doc(DetectRequest))
async def detect(request: Request):
    """Candidate languages of q, best first, with confidence 0-100."""
    fields = checked_fields(request, await read_values(request), translate=False)
    req = validate_as(request, DetectRequest, fields)
    settings: Settings = request.app.state.settings
    if len(req.q) > settings.char_limit:
        raise over_limit(len(req.q), settings.char_limit, f"q has {len(req.q)} characters; the limit is "
                         f"{settings.char_limit} (MTSERVE_CHAR_LIMIT)")
    service = service_of(request)
    found = await asyncio.to_thread(service.detect, req.q)
    return [DetectedLanguage(language=d.language, confidence=d.confidence) for d in found]


@router.get("/frontend/settings")
async def frontend_settings(request: Request):
    """What the WebUI needs to know: LibreTranslate's fields with its meanings, then mtserve's own."""
    settings: Settings = request.app.state.settings
    runtime = runtime_of(request)
    jobs = request.app.state.jobs
    return {
        # LibreTranslate's fields (its app.py, frontend_settings), with its meanings.
        "charLimit": settings.char_limit,  # characters per request (-1 would be none; mtserve always has one)
        "frontendTimeout": FRONTEND_TIMEOUT_MS,  # ms the WebUI waits after typing before it translates
        "apiKeys": settings.api_keys,  # whether API keys are on
        "keyRequired": bool(settings.api_keys and settings.require_api_key),
        "suggestions": settings.suggestions,  # POST /suggest takes them (mtserve/api/tm.py)
        "filesTranslation": bool(jobs.formats),
        "supportedFilesFormat": jobs.extensions,  # ".txt", ".docx"...: POST /translate_file takes them
        "language": {
            "source": {"code": "zh", "name": language_name("zh")},
            "target": {"code": "en", "name": language_name("en")},
        },
        # mtserve's own.
        "batchLimit": settings.batch_limit,  # texts per request when q is a list
        "alternativesLimit": settings.max_alternatives,
        "fileSizeLimitMb": settings.files_max_mb,
        "model": runtime.model.model,
        "engine": runtime.model.engine,
    }


@router.get("/spec", include_in_schema=False)
async def spec(request: Request):
    """The OpenAPI document, where LibreTranslate serves its own (the same as /openapi.json)."""
    return JSONResponse(request.app.openapi())
