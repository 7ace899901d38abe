"""Document routes: LibreTranslate's /translate_file and /download_file, and the job API.

``POST /translate_file`` is LibreTranslate's contract: it answers once the
document is translated, with ``{"translatedFileUrl": ...}``. For large files,
``POST /jobs`` answers at once (202) with a job; ``GET /jobs/{id}`` reports
progress, ``GET /jobs/{id}/events`` streams it (server-sent events), and
``DELETE /jobs/{id}`` cancels it (or deletes a finished one's result). With API
keys on, a job is its uploader's key's: any other caller gets the 404 of an
unknown id. The download URL is a capability that needs no key. The work itself
lives in ``mtserve.documents``; these routes only parse and map.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse
from sse_starlette.sse import EventSourceResponse

from mtserve.api.calls import ShuttingDown, closing_of, event_stream, next_before, service_of, until_disconnect
from mtserve.api.errors import ERRORS, ApiError, BodyTooLarge
from mtserve.api.fields import BadJson, decode_json, guidance_of, json_max_depth, shown
from mtserve.api.keys import admit, authorize, job_owner, request_key, runtime_of
from mtserve.api.uploads import KeyGate, queue_document, read_upload
from mtserve.documents.formats.registry import format_for
from mtserve.documents.jobs.store import Job, JobStatus, JobStore, redacted_download
from mtserve.settings import Settings

router = APIRouter()

MULTIPART_SLACK = 64 * 1024  # form fields and boundaries around the file itself
UPLOAD_PATHS = ("/translate_file", "/jobs", "/v2/document")  # where the body limit is files_max_mb, not max_body_bytes


def upload_limit_bytes(settings: Settings) -> int:
    """The body size an upload may have: the file limit plus room for the form around it."""
    return int(settings.files_max_mb * 1_000_000) + MULTIPART_SLACK
FILE_ERRORS = {
    **ERRORS,
    413: {"description": "The file is over the size or segment limit; the message names the limit."},
}
NOT_FOUND = {404: {"model": ERRORS[400]["model"], "description": "No such job or file, or it expired."}}
GLOSSARY_HELP = 'Optional JSON object of term -> translation, e.g. {"IBM公司": "IBM"}, as /translate takes.'
GLOSSARY_ID_HELP = ("Optional id of a stored glossary for exactly this source -> target pair (needs an "
                    "explicit source), as /translate takes; `glossary` overrides its entries.")
CONTEXT_HELP = ("Optional text that informs the translation and is neither translated nor billed (DeepL's "
                "field); replaces the format's own: a .po/.pot or .json catalog is 'user-interface strings of a "
                "software application', .srt/.vtt 'the subtitles of a video'. LLM engines only.")
_UPLOAD_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "target"],
                    "properties": {
                        "file": {"type": "string", "format": "binary",
                                 "description": "The document; its extension says its format."},
                        "source": {"type": "string", "default": "auto",
                                   "description": "Source language code, or 'auto' to detect it."},
                        "target": {"type": "string", "description": "Target language code."},
                        "glossary": {"type": "string", "description": GLOSSARY_HELP},
                        "glossary_id": {"type": "string", "description": GLOSSARY_ID_HELP},
                        "context": {"type": "string", "description": CONTEXT_HELP},
                        "api_key": {"type": "string",
                                    "description": "The API key, when the server requires one."},
                    },
                }
            }
        },
    }
}


def jobs_of(request: Request) -> JobStore:
    return request.app.state.jobs


def _download_url(request: Request, job: Job) -> str | None:
    """The result's URL: a capability, shown only to the job's owner, that downloads without a key."""
    name = jobs_of(request).download_name(job)
    return None if name is None else str(request.url_for("download_file", name=name))


DOWNLOAD_PREFIX = "/download_file/"


def logged_path(path: str) -> str:
    """A request path fit for the log: a download's token is cut short (the URL is the permission)."""
    if path.startswith(DOWNLOAD_PREFIX):
        return DOWNLOAD_PREFIX + redacted_download(path[len(DOWNLOAD_PREFIX):])
    return path


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


def job_json(request: Request, job: Job) -> dict[str, Any]:
    """A job in the /jobs API's shape (camelCase, as LibreTranslate's fields are)."""
    body: dict[str, Any] = {
        "id": job.id, "status": job.status.value, "filename": job.filename, "format": job.format,
        "source": job.source, "target": job.target, "done": job.done, "total": job.total,
        "progress": round(job.done / job.total, 4) if job.total else 1.0, "section": job.section,
        "notes": job.notes, "createdAt": _iso(job.created_at),
    }
    if job.detected is not None:
        body["detectedLanguage"] = {"language": job.detected.language, "confidence": job.detected.confidence}
    if job.error:
        body["error"] = job.error
    if job.result_filename:
        body["resultFilename"] = job.result_filename
    if job.finished_at is not None:
        body["finishedAt"] = _iso(job.finished_at)
        body["expiresAt"] = _iso(job.finished_at + jobs_of(request).ttl_s)
    body["translatedFileUrl"] = _download_url(request, job)
    return body


def _job_or_404(request: Request, job_id: str) -> Job:
    """The caller's job; another key's answers as no job does (404), so ids cannot be probed."""
    job = jobs_of(request).get(job_id, job_owner(request))
    if job is None:
        raise ApiError(404, f"no job {shown(job_id)}: it never existed, was deleted, or expired "
                            f"(results are kept {jobs_of(request).ttl_s:g} s)")
    return job


async def _submit(request: Request) -> Job:
    """Read the multipart upload within the limits, the key first, and queue its translation."""
    store = jobs_of(request)
    if not store.formats:
        raise ApiError(403, "file translation is turned off on this server (MTSERVE_FILES_FORMATS is empty)")
    content_type = request.headers.get("content-type", "")
    if "multipart/form-data" not in content_type:
        raise ApiError(400, "send the document as multipart/form-data with fields file, source and target")
    declared = request.headers.get("content-length")
    too_big = f"the upload is over {store.settings.files_max_mb:g} MB, the limit (MTSERVE_FILES_MAX_MB)"
    if declared and declared.isdigit() and int(declared) > store.max_bytes + MULTIPART_SLACK:
        raise ApiError(413, f"the upload is {int(declared) / 1e6:,.1f} MB; the limit is "
                            f"{store.settings.files_max_mb:g} MB (MTSERVE_FILES_MAX_MB)")
    access = runtime_of(request).access
    gate = None
    if key := request_key(request):  # an Authorization header or ?api_key=: checked before the body is read
        admit(request, key)
    elif access.enabled and access.require_key:
        gate = KeyGate(request, store.settings.max_body_bytes)
    try:
        upload = await read_upload(request, max_file_bytes=store.max_bytes, limit_message=too_big, gate=gate,
                                   check_file=lambda filename, _: format_for(filename, store.formats))
    except BodyTooLarge:
        raise ApiError(413, too_big) from None
    fields = upload.fields
    if key is None and not (gate and gate.admitted):
        admit(request, fields.get("api_key") or None)
    service_of(request)  # a 503 before the upload is queued, while the model loads
    if upload.content is None:
        raise ApiError(400, "the form has no file; send the document in a field named 'file'")
    target = fields.get("target", "").strip()
    source = fields.get("source", "auto").strip() or "auto"
    if not target:
        raise ApiError(400, "target is missing; send the target language code, e.g. target=en")
    glossary = _glossary(fields.get("glossary"), json_max_depth(request), store.settings.glossary_request_entries)
    glossary_id = fields.get("glossary_id", "").strip() or None
    guidance = guidance_of(store.settings, fields.get("context") or None)
    return await queue_document(request, store, upload.filename or "", upload.content, source, target,
                                glossary, glossary_id, guidance)


def _glossary(value: str | None, max_depth: int, max_entries: int = 0) -> dict[str, str] | None:
    """The form's optional glossary: a JSON object of term -> translation, as /translate takes it
    (GlossaryError and GlossaryTooLarge are statuses by the one table)."""
    from mtserve.service.glossary import check_request_entries, validate_entries

    if value is None or value == "":
        return None
    try:
        raw = decode_json(value, max_depth, "the glossary")
    except BadJson as exc:
        raise ApiError(400, 'glossary must be a JSON object of term -> translation, e.g. {"猫": "cat"}: '
                            f"{exc}") from None
    entries = validate_entries(raw, "glossary")
    check_request_entries(entries, max_entries)
    return entries


# --- LibreTranslate's contract -----------------------------------------------------------------
@router.post("/translate_file", responses=FILE_ERRORS, openapi_extra=_UPLOAD_FORM)
async def translate_file(request: Request):
    """Translate a document and answer with the URL to download it from (LibreTranslate's contract)."""
    job = await _submit(request)
    store = jobs_of(request)
    await until_disconnect(request, store.wait(job))
    if job.status is not JobStatus.DONE:
        raise ApiError(job.error_status or 500, job.error or f"the translation was {job.status.value}")
    return {"translatedFileUrl": _download_url(request, job)}


@router.get("/download_file/{name}", name="download_file", responses=NOT_FOUND)
async def download_file(request: Request, name: str):
    """A translated document, while it lasts. The URL is the permission (LibreTranslate's clients
    fetch it without a key): only the job's owner is ever shown it."""
    store = jobs_of(request)
    found = store.download(name)
    if found is None:
        raise ApiError(404, f"no translated file {shown(redacted_download(name))}: the name is wrong or the "
                            f"file expired (files are kept {store.ttl_s:g} s); translate the document again")
    path, filename = found
    media = _MEDIA_TYPES.get(path.suffix.lstrip("."), "application/octet-stream")
    return FileResponse(path, media_type=media, filename=filename)


_MEDIA_TYPES = {
    "txt": "text/plain; charset=utf-8", "md": "text/markdown; charset=utf-8", "html": "text/html",
    "srt": "application/x-subrip", "vtt": "text/vtt; charset=utf-8",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "odt": "application/vnd.oasis.opendocument.text", "epub": "application/epub+zip",
    "pdf": "application/pdf", "po": "text/x-gettext-translation; charset=utf-8", "json": "application/json",
    "xlf": "application/xliff+xml", "xliff": "application/xliff+xml",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
}


# --- jobs ---------------------------------------------------------------------------------------
@router.post("/jobs", status_code=202, responses=FILE_ERRORS, openapi_extra=_UPLOAD_FORM)
async def create_job(request: Request):
    """Queue a document; the answer (202) is the job, with links to follow its progress."""
    job = await _submit(request)
    body = job_json(request, job)
    location = str(request.url_for("get_job", job_id=job.id))
    body["events"] = str(request.url_for("job_events", job_id=job.id))
    return JSONResponse(body, status_code=202, headers={"Location": location})


@router.get("/jobs/{job_id}", name="get_job", responses=NOT_FOUND)
async def get_job(request: Request, job_id: str):
    """Status and progress: segments done out of total, the current section, the result's URL when done."""
    authorize(request)
    return job_json(request, _job_or_404(request, job_id))


JOB_EVENTS_CUT = ("the server is shutting down; the job is kept and will resume when the server is back: "
                  "follow it again then (this URL, or GET /jobs/{id})")


@router.get("/jobs/{job_id}/events", name="job_events", response_class=EventSourceResponse,
            responses=NOT_FOUND)
async def job_events(request: Request, job_id: str):
    """Server-sent events: `progress` with the job after each change, then `done`, `failed` or `cancelled`."""
    authorize(request)
    job = _job_or_404(request, job_id)
    store = jobs_of(request)

    async def events():
        watching = store.watch(job)
        try:  # a job outlives the server (it resumes after a restart), so its watchers are told at once
            while (current := await next_before(watching, closing_of(request).begun())) is not None:
                kind = current.status.value if current.status.finished else "progress"
                yield {"event": kind, "data": json.dumps(job_json(request, current), ensure_ascii=False)}
        except ShuttingDown:
            yield {"event": "error", "data": json.dumps({"error": JOB_EVENTS_CUT}, ensure_ascii=False)}
        finally:
            await watching.aclose()

    return event_stream(request, events())


@router.delete("/jobs/{job_id}", responses=NOT_FOUND)
async def delete_job(request: Request, job_id: str):
    """Cancel a queued or running job; for a finished one, delete it and its result."""
    authorize(request)
    job = _job_or_404(request, job_id)
    cancelled = await jobs_of(request).cancel(job)
    body = job_json(request, job)
    body["deleted"] = not cancelled
    if not cancelled:
        body["translatedFileUrl"] = None
    return body
