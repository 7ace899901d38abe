"""Document uploads, read as a stream: the size limit, the key and the file's format are checked as
the bytes arrive, not after the whole body is in memory; then the job is queued for any family."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TypeVar

from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect

from mtserve.api.calls import charge, service_of
from mtserve.api.errors import CLIENT_CLOSED, ApiError
from mtserve.api.fields import GONE, part_callbacks, shown
from mtserve.api.keys import admit, key_id_of
from mtserve.documents.jobs.store import Job, JobStore
from mtserve.service.access import KeyRequired, QuotaExceeded
from mtserve.service.request import Guidance

T = TypeVar("T")
log = logging.getLogger(__name__)

UPLOAD_MAX_FIELDS = 16  # file, source, target, api_key, glossary, glossary_id, format...
UPLOAD_MAX_FIELD_BYTES = 64 * 1024  # one form field of an upload (a glossary as JSON text is the big one)
KEY_BEFORE_UPLOAD = (
    "an API key is required before a document of this size is read: send it in an Authorization: "
    "Bearer header, as ?api_key= in the URL, or as the api_key form field before the file field"
)



# --- document uploads ------------------------------------------------------------------------------
class UploadGate(Protocol):
    """What ``read_upload`` tells as the body streams in, so the key is checked before the bulk of it."""

    def on_field(self, name: str, value: str) -> None: ...

    def on_bytes(self, seen: int) -> None: ...


@dataclass
class Upload:
    fields: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    content: bytes | None = None  # None: the form had no file part


class KeyGate:
    """Admission of an upload that carries its key as a form field, before the bulk of the body is read.

    Where a key must come before the file (a document: keys required; a translation memory: keys
    on) and none is in a header or the URL, the key is checked the moment its ``api_key`` field
    arrives; until then at most ``allowance`` bytes (MTSERVE_MAX_BODY_BYTES, what any anonymous
    JSON request may send) are read. LibreTranslate's own web page sends the file before api_key,
    so a document that small still works that way; a bigger one gets a 400 that says how to send
    the key first.
    """

    def __init__(self, request: Request, allowance: int):
        self.request = request
        self.allowance = allowance
        self.admitted = False

    def on_field(self, name: str, value: str) -> None:
        if name == "api_key" and value and not self.admitted:
            admit(self.request, value)
            self.admitted = True

    def on_bytes(self, seen: int) -> None:
        if not self.admitted and seen > self.allowance:
            raise KeyRequired(KEY_BEFORE_UPLOAD)


async def read_upload(request: Request, *, max_file_bytes: int, limit_message: str,
                      gate: UploadGate | None = None,
                      check_file: Callable[[str, dict[str, str]], None] | None = None) -> Upload:
    """A multipart upload of one file and a few fields, parsed as it streams in.

    The file may be ``max_file_bytes`` long (a 413 with ``limit_message`` the moment it is
    passed); other fields are at most ``UPLOAD_MAX_FIELD_BYTES`` each, ``UPLOAD_MAX_FIELDS`` in all.
    ``gate`` sees each field when it completes and the bytes read so far after each chunk, and
    may stop the upload (an AccessDenied) before the rest of the body is read. ``check_file`` gets
    the file's name (and the fields before it) as soon as its part's headers arrive, and may refuse
    it (a DocumentError: a format the server does not take) before any of its bytes are read.
    """
    content_type, params = parse_options_header(request.headers.get("content-type"))
    boundary = params.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise ApiError(400, "send the document as multipart/form-data with fields file, source and target")
    upload = Upload()
    part: dict[str, Any] = {}
    file_data = bytearray()

    def bad(message: str) -> ApiError:
        return ApiError(400, f"could not read the multipart form: {message}")

    def on_headers(headers: dict[bytes, bytes]) -> None:
        _, options = parse_options_header(headers.get(b"content-disposition"))
        if b"name" not in options:
            raise bad('a part has no Content-Disposition name')
        part.update(name=_utf8(options[b"name"], "a field name"), data=bytearray(), file=False)
        if b"filename" in options:
            if upload.content is not None:
                raise bad("send one document per upload")
            if part["name"] != "file":
                raise bad(f"the document is in field {shown(part['name'])}; send it in a field named 'file'")
            part["file"] = True
            upload.filename = _utf8(options[b"filename"], "the file name")
            upload.content = b""
            if check_file is not None:
                check_file(upload.filename, upload.fields)
        elif len(upload.fields) >= UPLOAD_MAX_FIELDS:
            raise bad(f"more than {UPLOAD_MAX_FIELDS} fields")

    def on_data(data: bytes) -> None:
        if part["file"]:
            file_data.extend(data)
            if len(file_data) > max_file_bytes:
                raise ApiError(413, limit_message)
        else:
            part["data"].extend(data)
            if len(part["data"]) > UPLOAD_MAX_FIELD_BYTES:
                raise bad(f"field {part['name']!r} is over {UPLOAD_MAX_FIELD_BYTES:,} bytes")

    def on_end() -> None:
        if part["file"]:
            return
        name, value = part["name"], _utf8(bytes(part["data"]), f"field {part['name']!r}")
        upload.fields[name] = value
        if gate is not None:
            gate.on_field(name, value)

    callbacks = part_callbacks(part, on_headers, on_data, on_end)
    try:
        parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
        seen = 0
        async for chunk in request.stream():
            seen += len(chunk)
            if gate is not None:
                gate.on_bytes(seen)
            parser.write(chunk)
        parser.finalize()
    except FormParserError as exc:
        raise bad(str(exc) or type(exc).__name__) from None
    except ClientDisconnect:
        raise ApiError(CLIENT_CLOSED, GONE) from None
    if upload.content is not None:
        upload.content = bytes(file_data)
    return upload


def _utf8(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, f"could not read the multipart form: {what} is not UTF-8 text") from None


# --- documents -------------------------------------------------------------------------------------
async def queue_document(request: Request, store: JobStore, filename: str, data: bytes, source: str,
                         target: str, glossary: dict[str, str] | None = None,
                         glossary_id: str | None = None, guidance: Guidance | None = None) -> Job:
    """Queue a document job for any family (files, DeepL's /v2/document): parsed and checked by
    the job store, and its characters charged to the caller's quota (its text only: a context is
    not billed); a job the quota cannot pay for is removed again (QuotaExceeded)."""
    job = await store.submit(service_of(request), filename, data, source, target, glossary,
                             glossary_id=glossary_id, key_id=key_id_of(request), guidance=guidance)
    request.state.chars_in = job.chars
    try:
        charge(request, job.chars)
    except QuotaExceeded:
        await store.cancel(job)  # stops it
        await store.cancel(job)  # and, finished now, deletes it
        raise
    return job


