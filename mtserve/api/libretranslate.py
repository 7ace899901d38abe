"""The LibreTranslate family: /translate, its stream, /languages, /detect, /frontend/settings, the WebUI.

Each route parses LibreTranslate's shape, calls the shared path in
``mtserve.api.common``, and shapes LibreTranslate's answer. Translation logic
lives in ``mtserve.service``; no engine is named here.
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

from mtserve.api.common import (
    admit,
    guidance_of,
    key_id_of,
    open_stream,
    read_fields,
    relay,
    run_call,
    runtime_of,
    service_of,
    validation_context,
)
from mtserve.api.errors import ERRORS, ApiError, ErrorBody, describe_validation_error
from mtserve.api.schemas import (
    DetectedLanguage,
    DetectRequest,
    LanguageInfo,
    TranslateRequest,
    TranslateResponse,
)
from mtserve.service.glossary import GlossaryTooLarge, check_request_entries
from mtserve.service.translator import StreamEvent, Usage
from mtserve.settings import Settings
from mtserve.text.languages import language_name
from mtserve.webui import STATIC_DIR

log = logging.getLogger(__name__)
router = APIRouter()
Model = TypeVar("Model", bound=BaseModel)

TRANSLATE_ERRORS = {
    **ERRORS, 404: {"model": ErrorBody, "description": "No stored glossary has that glossary_id."},
}


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
        raise ApiError(400, describe_validation_error(exc)) from None


async def parse_body(request: Request, model: type[Model]) -> Model:
    """JSON or form data, like LibreTranslate; a repeated form field becomes a list."""
    return validate_as(request, model, await read_fields(request))


def validate_translate(req: TranslateRequest, settings: Settings) -> list[str]:
    texts = req.q if isinstance(req.q, list) else [req.q]
    if isinstance(req.q, list) and not texts:
        raise ApiError(400, "q is an empty list; send at least one text")
    if len(texts) > settings.batch_limit:
        raise ApiError(413, f"q has {len(texts)} texts; the batch limit is {settings.batch_limit}")
    chars = sum(len(t) for t in texts)
    if chars > settings.char_limit:
        raise ApiError(413, f"the request has {chars} characters; the limit is {settings.char_limit}")
    if req.alternatives > settings.max_alternatives:
        raise ApiError(400, f"alternatives is {req.alternatives}; the most allowed is {settings.max_alternatives}")
    try:
        check_request_entries(req.glossary, settings.glossary_request_entries)
    except GlossaryTooLarge as exc:
        raise ApiError(413, str(exc)) from None
    return texts


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
    req = await parse_body(request, TranslateRequest)
    admit(request, req.api_key)
    texts = validate_translate(req, settings)
    guidance = guidance_of(settings, req.context)  # an extension: DeepL's context, not billed
    service = service_of(request)
    usage = Usage()
    results = await run_call(request, lambda: service.translate(
        texts, req.source, req.target, req.format, req.alternatives, timeout_s=deadline_s(req, settings),
        usage=usage, glossary=req.glossary, glossary_id=req.glossary_id, key_id=key_id_of(request), tm=req.tm,
        guidance=guidance,
    ), sum(len(t) for t in texts), usage)
    request.state.chars_out = sum(len(r.text) for r in results)
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
    if usage.tm_segments:  # an extension: how many segments came from the translation memory as stored
        body["translationMemory"] = {"segments": usage.tm_segments}
    return JSONResponse(body, headers={"Server-Timing": server_timing(usage)})


def server_timing(usage: Usage) -> str:
    """Where the time went, for benchmarks and browser dev tools (W3C Server-Timing)."""
    return (
        f"queue;dur={usage.queue_ms:.1f}, engine;dur={usage.engine_ms:.1f}, "
        f'segments;desc="{usage.segments} segments, {usage.cached_segments} cached, '
        f'{usage.generated_tokens} tokens"'
    )


async def _stream(request: Request, req: TranslateRequest):
    settings: Settings = request.app.state.settings
    if isinstance(req.q, list):
        raise ApiError(400, "the stream endpoint takes one text in q, not a list")
    admit(request, req.api_key)
    validate_translate(req, settings)
    guidance = guidance_of(settings, req.context)
    service = service_of(request)
    usage = Usage()
    events = service.stream(req.q, req.source, req.target, req.format,
                            timeout_s=deadline_s(req, settings), usage=usage, glossary=req.glossary,
                            glossary_id=req.glossary_id, key_id=key_id_of(request), tm=req.tm,
                            guidance=guidance)
    first = await open_stream(request, events, len(req.q), usage)

    def render(event: StreamEvent) -> list[dict[str, str]]:
        if event.kind == "segment":  # the OpenAI stream's granularity; not part of this protocol
            return []
        return [{"event": event.kind, "data": json.dumps(event.data, ensure_ascii=False)}]

    def failed(message: str) -> dict[str, str]:
        return {"event": "error", "data": json.dumps({"error": message}, ensure_ascii=False)}

    return EventSourceResponse(relay(request, events, first, render, failed), ping=15)


@router.post(
    "/translate/stream", responses=TRANSLATE_ERRORS, openapi_extra=_body_doc(TranslateRequest),
    response_class=EventSourceResponse,
)
async def translate_stream(request: Request):
    """Server-sent events: `detected`, then `delta` (text to append), then `done` (final text)."""
    return await _stream(request, await parse_body(request, TranslateRequest))


@router.get("/translate/stream", responses=TRANSLATE_ERRORS, response_class=EventSourceResponse)
async def translate_stream_get(request: Request, q: str, target: str, source: str = "auto",
                               format: str = "text", api_key: str | None = None,
                               glossary: str | None = None, glossary_id: str | None = None,
                               context: str | None = None):
    """The same stream for EventSource clients, with the fields in the query string."""
    fields = {"q": q, "source": source, "target": target, "format": format, "api_key": api_key,
              "glossary": glossary, "glossary_id": glossary_id, "context": context}
    return await _stream(request, validate_as(request, TranslateRequest, fields))


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
    req = await parse_body(request, DetectRequest)
    admit(request, req.api_key)
    settings: Settings = request.app.state.settings
    if len(req.q) > settings.char_limit:
        raise ApiError(413, f"q has {len(req.q)} characters; the limit is {settings.char_limit}")
    service = service_of(request)
    found = await asyncio.to_thread(service.detect, req.q)
    return [DetectedLanguage(language=d.language, confidence=d.confidence) for d in found]


@router.get("/frontend/settings")
async def frontend_settings(request: Request):
    """What the WebUI needs to know: limits, default languages, the model."""
    settings: Settings = request.app.state.settings
    runtime = runtime_of(request)
    return {
        "charLimit": settings.char_limit,
        "batchLimit": settings.batch_limit,
        "keyRequired": settings.api_keys and settings.require_api_key,
        "apiKeys": settings.api_keys,
        "suggestions": False,
        # Document translation (LibreTranslate's keys, plus the upload limit); see mtserve/api/files.py.
        "filesTranslation": bool(request.app.state.jobs.formats),
        "supportedFilesFormat": request.app.state.jobs.extensions,
        "fileSizeLimitMb": settings.files_max_mb,
        "language": {
            "source": {"code": "zh", "name": language_name("zh")},
            "target": {"code": "en", "name": language_name("en")},
        },
        "model": runtime.model.model,
        "engine": runtime.model.engine,
    }
