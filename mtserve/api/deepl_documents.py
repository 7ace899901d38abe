"""DeepL's document API (``/v2/document``), so DeepL clients and plugins translate files too.

Upload (``POST /v2/document``: multipart ``file``, ``target_lang``, optional
``source_lang``, ``filename``, ``glossary_id``, ``formality``, ``output_format``, and
mtserve's ``context``, which replaces the format's own default context) answers
``document_id`` and ``document_key``, uppercase hex as DeepL's are (either case is
taken back); a ``source_lang`` equal to ``target_lang`` is refused, as DeepL refuses
it. The status (``/v2/document/{id}``, GET or POST as DeepL takes it, with the key)
is ``queued``, ``translating``, ``done`` or ``error``: while translating with
``seconds_remaining``, estimated from the time its segments so far took (absent
before the first is done), once done with ``billed_characters``. The result
(``/v2/document/{id}/result``, GET or POST) is the file, deleted once downloaded. A
wrong key is a 403 and an unknown id a 404, as DeepL answers. With API keys on,
a document belongs to the key that uploaded it: to any other caller its id is
unknown (404), whatever ``document_key`` it sends.

The documents are mtserve's document jobs: the same job store, formats, limits
and queue as ``/jobs`` and ``/translate_file``.
"""

from __future__ import annotations

from pathlib import PurePath

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from mtserve.api.calls import service_of
from mtserve.api.deepl import fields_of, formality_of, to_mtserve
from mtserve.api.errors import ApiError
from mtserve.api.fields import guidance_of
from mtserve.api.keys import admit, job_owner
from mtserve.api.uploads import Upload, queue_document, read_upload
from mtserve.documents.formats.registry import format_for
from mtserve.documents.jobs.store import Job, JobStatus, JobStore
from mtserve.text.languages import language_name

router = APIRouter(prefix="/v2", tags=["DeepL API v2"])

STATUS = {JobStatus.QUEUED: "queued", JobStatus.RUNNING: "translating", JobStatus.DONE: "done",
          JobStatus.FAILED: "error", JobStatus.CANCELLED: "error"}


def jobs_of(request: Request) -> JobStore:
    return request.app.state.jobs


@router.post("/document")
async def upload_document(request: Request):
    """Queue a document; answers its id and the key that status and result calls need."""
    store = jobs_of(request)
    if not store.formats:
        raise ApiError(403, "Document translation is turned off on this server (MTSERVE_FILES_FORMATS is empty)")
    admit(request, None)  # the key travels in Authorization: DeepL-Auth-Key, so before the body is read
    if "multipart/form-data" not in request.headers.get("content-type", ""):
        raise ApiError(400, "Send the document as multipart/form-data with fields file and target_lang")
    too_big = f"The document is over {store.settings.files_max_mb:g} MB, the limit (MTSERVE_FILES_MAX_MB)"
    upload = await read_upload(request, max_file_bytes=store.max_bytes, limit_message=too_big,
                               check_file=lambda filename, fields: _check_format_early(store, filename, fields))
    return await _queue(request, store, upload)


def _check_format_early(store: JobStore, part_filename: str, fields: dict[str, str]) -> None:
    """Refuse a document of a format the server does not take before its bytes are read.

    DeepL's ``filename`` field names the file instead of the part's name: sent before the file, it
    is the one checked. A part's name without an extension waits for the field (a browser names a
    Blob "blob"); one with an extension the server does not take is refused now, so send
    ``filename`` before the file to rename such a file.
    """
    named = fields.get("filename")
    if not named and not PurePath(part_filename).suffix:
        return
    format_for(PurePath(named or part_filename).name, store.formats)  # DocumentError: 400


async def _queue(request: Request, store: JobStore, upload: Upload) -> dict:
    service = service_of(request)
    if upload.content is None:
        raise ApiError(400, "Parameter 'file' not specified: send the document in a field named 'file'")
    fields = upload.fields
    if not fields.get("target_lang"):
        raise ApiError(400, "Parameter 'target_lang' not specified.")
    supported = service.languages
    target = to_mtserve(fields["target_lang"], "target_lang", supported)
    source = to_mtserve(fields["source_lang"], "source_lang", supported) if fields.get("source_lang") else "auto"
    if source == target:
        raise ApiError(400, f"Source and target language are equal: both are {language_name(target)}; "
                            "send another target_lang")
    # formality as /v2/translate takes it; context (an mtserve extension) overrides the format's default
    guidance = guidance_of(store.settings, fields.get("context") or None,
                           formality=formality_of(fields.get("formality")))
    filename = PurePath(fields.get("filename") or upload.filename or "").name
    fmt = format_for(filename, store.formats)  # DocumentError: 400
    output_format = fields.get("output_format", "").strip().lower().lstrip(".")
    if output_format and output_format not in fmt.extensions:
        raise ApiError(400, f"Value for 'output_format' not supported: a .{fmt.extensions[0]} document is "
                            f"translated into a .{fmt.extensions[0]} document")
    glossary_id = fields.get("glossary_id", "").strip() or None
    if glossary_id and source == "auto":
        raise ApiError(400, "Use of a glossary requires the 'source_lang' parameter to be specified")
    job = await queue_document(request, store, filename, upload.content, source, target, None, glossary_id,
                               guidance)
    request.app.state.runtime.usage_chars += job.chars
    return {"document_id": job.id.upper(), "document_key": store.document_key(job).upper()}


async def _job(request: Request, document_id: str) -> Job:
    """The job for an id and its key: 404 for an unknown id (or another API key's), 403 for a wrong key."""
    admit(request, None)
    store = jobs_of(request)
    job = store.get(document_id, job_owner(request))
    if job is None:
        raise ApiError(404, f"Document not found: {document_id!r} (it never existed, was downloaded, "
                            f"or expired after {store.ttl_s:g} s)")
    fields = await fields_of(request)
    key = fields.get("document_key")
    if not isinstance(key, str) or not store.key_matches(job, key):
        raise ApiError(403, "Invalid document_key for this document")
    return job


@router.get("/document/{document_id}", operation_id="deepl_document_status_get")
@router.post("/document/{document_id}", operation_id="deepl_document_status_post")
async def document_status(request: Request, document_id: str):
    """The document's status; while it is translating, ``seconds_remaining`` once its progress tells."""
    job = await _job(request, document_id)
    body = {"document_id": job.id.upper(), "status": STATUS[job.status]}
    if (seconds := job.seconds_remaining()) is not None:
        body["seconds_remaining"] = seconds
    if job.status is JobStatus.DONE:
        body["billed_characters"] = job.chars
    if job.status in (JobStatus.FAILED, JobStatus.CANCELLED):
        body["error_message"] = job.error or f"the translation was {job.status.value}"
    return body


@router.get("/document/{document_id}/result", operation_id="deepl_document_result_get")
@router.post("/document/{document_id}/result", operation_id="deepl_document_result_post")
async def document_result(request: Request, document_id: str):
    """The translated file, once; it is deleted after this download, as DeepL does."""
    job = await _job(request, document_id)
    store = jobs_of(request)
    if job.status is not JobStatus.DONE:
        raise ApiError(503, "Document translation is not finished yet; poll its status first",
                       {"Retry-After": "5"})
    path = store.result_path(job.result_name or "")
    if path is None:
        raise ApiError(404, f"Document not found: {document_id!r} (its result expired)")
    return FileResponse(path, filename=job.result_filename or path.name,
                        media_type="application/octet-stream",
                        background=BackgroundTask(store.cancel, job))
