"""The request path the three API families share: read a request's fields within bounds, check its key.

LibreTranslate (``/translate``...), DeepL (``/v2``) and OpenAI (``/v1``) routes each shape their own
answers, but every field they read comes through here first, so hostile input meets one set of bounds
and gets a 400 that says what is wrong instead of an exception that becomes a 500:

- JSON (``decode_json``): parsed by pydantic-core's Rust parser, which refuses an integer of
  more than 4,300 digits, invalid UTF-8 and lone surrogates, and bounds its own recursion (never
  the Python stack's); nesting deeper than ``json_max_depth`` is refused too. JSON carried in a
  text field (a form's ``glossary``) goes through the same function.
- Form data (``read_form``) and query strings (``query_fields``): UTF-8, as Flask and
  LibreTranslate read them, unless the Content-Type names another charset (an unknown one is a
  400); URL-encoded and multipart bodies are parsed here with bounded field counts and sizes
  (starlette's parsers read bytes that are not UTF-8 as Latin-1, mojibake to translate). A document
  upload (``read_upload``) is read as a stream, so its size limit and its key are checked as the
  bytes arrive, not after the whole body is in memory.
- Loosely typed fields (``text_field``, ``int_field``...): DeepL and OpenAI bodies are read as
  plain dicts, and a field of the wrong JSON type is refused by name.
- Keys (``admit``, ``authorize``): from the body's ``api_key``, an ``Authorization`` header, or an
  ``api_key`` query parameter (LibreTranslate reads ``request.values``, and an EventSource or a
  download link cannot send headers).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, Protocol, TypeVar
from urllib.parse import parse_qsl

import pydantic_core
from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from sse_starlette.sse import EventSourceResponse
from starlette.requests import ClientDisconnect

from mtserve.api.errors import CLIENT_CLOSED, ApiError, ClientGone, NotReady
from mtserve.api.protocol import ServerClosing
from mtserve.documents.jobs.store import ALL_OWNERS, Job, JobStore
from mtserve.service.access import AccessDenied, KeyRequired, QuotaExceeded
from mtserve.service.request import Done, Guidance, StreamEvent, Translation, TranslationRequest, Usage
from mtserve.service.runtime import Runtime
from mtserve.service.translator import TranslationService
from mtserve.settings import Settings

T = TypeVar("T")
log = logging.getLogger(__name__)

JSON_DEPTH_DEFAULT: int = Settings.model_fields["json_max_depth"].default  # where no settings are at hand
FORM_EXTRA_FIELDS = 32  # a form's fields besides its texts (q or text, repeated up to batch_limit)
UPLOAD_MAX_FIELDS = 16  # file, source, target, api_key, glossary, glossary_id, format...
FORM_FIELD_MAX_BYTES = 1024 * 1024  # one field of a plain form: starlette's own bound, kept
UPLOAD_MAX_FIELD_BYTES = 64 * 1024  # one form field of an upload (a glossary as JSON text is the big one)
GONE = "the client closed the connection before the whole body arrived"
KEY_BEFORE_UPLOAD = (
    "an API key is required before a document of this size is read: send it in an Authorization: "
    "Bearer header, as ?api_key= in the URL, or as the api_key form field before the file field"
)


# --- JSON ------------------------------------------------------------------------------------------
class BadJson(ValueError):
    """JSON that cannot be read within the bounds; the message says why, for a 400."""


def decode_json(raw: bytes | str, max_depth: int = JSON_DEPTH_DEFAULT, what: str = "the body") -> Any:
    """Parse JSON text within bounds, or raise BadJson naming the bound that was crossed.

    pydantic-core (jiter) parses in Rust with its own depth cap of 200, refuses integers past
    Python's 4,300-digit conversion limit, and refuses NaN/Infinity, invalid UTF-8 and lone
    surrogates, all as a ValueError. The depth bound is then checked on the result; only a text
    with more opening brackets than the bound can cross it, so most bodies skip that walk.
    """
    try:
        value = pydantic_core.from_json(raw, allow_inf_nan=False)
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("recursion limit exceeded"):
            raise BadJson(_too_deep(what, max_depth)) from None
        if reason.startswith("number out of range"):
            raise BadJson(f"{what} holds a number too long to read ({reason})") from None
        raise BadJson(f"{what} is not valid JSON (UTF-8): {reason}") from None
    opening = raw.count(b"[") + raw.count(b"{") if isinstance(raw, bytes) else raw.count("[") + raw.count("{")
    if opening > max_depth and _nested_deeper_than(value, max_depth):
        raise BadJson(_too_deep(what, max_depth))
    return value


def _too_deep(what: str, max_depth: int) -> str:
    return (f"{what} is JSON nested too deeply: more than {max_depth} levels of arrays and objects "
            "(MTSERVE_JSON_MAX_DEPTH)")


def _nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than ``limit`` levels (the outermost is level 1); no recursion."""
    if not isinstance(value, (dict, list)):
        return False
    stack: list[tuple[dict | list, int]] = [(value, 1)]
    while stack:
        container, depth = stack.pop()
        for child in container.values() if isinstance(container, dict) else container:
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    return True
                stack.append((child, depth + 1))
    return False


def json_max_depth(request: Request) -> int:
    settings: Settings = request.app.state.settings
    return settings.json_max_depth


async def read_json(request: Request) -> Any:
    """The body as JSON, within the depth bound; a 400 that says what is wrong otherwise."""
    try:
        return decode_json(await request.body(), json_max_depth(request))
    except BadJson as exc:
        raise ApiError(400, str(exc)) from None
    except ClientDisconnect:  # logged and counted as what it is, not as a server fault
        raise ApiError(CLIENT_CLOSED, GONE) from None


# --- form data and query strings -------------------------------------------------------------------
FORM_TYPES = (b"application/x-www-form-urlencoded", b"multipart/form-data")


def content_type_of(request: Request) -> tuple[bytes, dict[bytes, bytes]]:
    """The request's media type, lowercased, and its parameters (charset, boundary)."""
    media_type, params = parse_options_header(request.headers.get("content-type"))
    return media_type.lower(), params


def form_charset(params: dict[bytes, bytes]) -> str:
    """The text encoding a form names in its Content-Type (UTF-8 if none), or a 400 for one unknown."""
    named = params.get(b"charset", b"utf-8").decode("latin-1").strip().strip('"')
    try:
        info = codecs.lookup(named)
    except LookupError:
        info = None
    if info is None or not getattr(info, "_is_text_encoding", True):  # base64, zlib: codecs, not charsets
        raise ApiError(400, f"the Content-Type names charset {shown(named)}, which is not a known text "
                            "encoding; send the form as UTF-8 (charset=utf-8, or no charset at all)")
    return info.name


def parse_urlencoded(raw: bytes, charset: str, max_fields: int, what: str) -> list[tuple[str, str]]:
    """``a=1&b=2`` as (name, value) pairs: raw bytes and %-escapes both read as ``charset``, so a
    client that sends UTF-8 unescaped (``curl -d 'q=你好'``) is read as it meant; bytes that are not
    ``charset`` text are a 400, not mojibake."""
    try:
        return parse_qsl(raw.decode(charset), keep_blank_values=True, encoding=charset, errors="strict",
                         max_num_fields=max_fields)
    except UnicodeDecodeError as exc:
        raise ApiError(400, f"{what} is not valid {charset} text ({exc.reason} at byte {exc.start}); "
                            "send UTF-8, or name the charset in the Content-Type") from None
    except ValueError:  # parse_qsl's "Max number of fields exceeded"
        raise ApiError(400, f"{what} has more than {max_fields} fields") from None


def as_fields(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """(name, value) pairs as a dict; a repeated name (``text=a&text=b``) becomes a list, in order."""
    fields: dict[str, Any] = {}
    for key, value in pairs:
        if key in fields:
            previous = fields[key]
            fields[key] = (previous if isinstance(previous, list) else [previous]) + [value]
        else:
            fields[key] = value
    return fields


def max_form_fields(request: Request) -> int:
    settings: Settings = request.app.state.settings
    return settings.batch_limit + FORM_EXTRA_FIELDS


async def read_form(request: Request) -> dict[str, Any]:
    """URL-encoded or multipart form fields, read as UTF-8 or the charset the Content-Type names; a
    repeated field (``text=a&text=b``) becomes a list.

    At most batch_limit texts and ``FORM_EXTRA_FIELDS`` other fields (a multipart field
    ``FORM_FIELD_MAX_BYTES`` at most), read in one pass; a file part here is refused, since
    documents have their own routes.
    """
    media_type, params = content_type_of(request)
    charset = form_charset(params)
    try:
        if media_type == b"application/x-www-form-urlencoded":
            return as_fields(parse_urlencoded(await request.body(), charset, max_form_fields(request),
                                              "the form"))
        return as_fields(await read_multipart_fields(request, charset, params.get(b"boundary"),
                                                     max_form_fields(request)))
    except ClientDisconnect:
        raise ApiError(CLIENT_CLOSED, GONE) from None


def part_callbacks(part: dict[str, Any], on_headers: Callable[[dict[bytes, bytes]], None],
                   on_data: Callable[[bytes], None], on_end: Callable[[], None]) -> dict[str, Callable]:
    """python-multipart's callbacks for a parser that reads one part at a time: each part's headers
    are collected into ``part["headers"]`` (lowercased names) and handed over whole."""
    name, value = bytearray(), bytearray()

    def on_header_end() -> None:
        part["headers"][bytes(name).lower()] = bytes(value)
        name.clear()
        value.clear()

    def on_part_begin() -> None:
        part.clear()
        part["headers"] = {}

    return {"on_part_begin": on_part_begin,
            "on_header_field": lambda data, start, end: name.extend(data[start:end]),
            "on_header_value": lambda data, start, end: value.extend(data[start:end]),
            "on_header_end": on_header_end,
            "on_headers_finished": lambda: on_headers(part["headers"]),
            "on_part_data": lambda data, start, end: on_data(data[start:end]),
            "on_part_end": on_end}


async def read_multipart_fields(request: Request, charset: str, boundary: bytes | None,
                                max_fields: int) -> list[tuple[str, str]]:
    """A multipart form's text fields, in order, each read strictly as ``charset``.

    starlette's parser reads a field that is not valid in its charset as Latin-1, so bytes that
    are not UTF-8 became mojibake to translate; here they are a 400 that names the field, as in
    an URL-encoded form. A file part is refused (documents have their own routes), and so are
    more than ``max_fields`` fields or one over ``FORM_FIELD_MAX_BYTES``.
    """
    if not boundary:
        raise ApiError(400, "could not read the form: its Content-Type has no multipart boundary")
    fields: list[tuple[str, str]] = []
    part: dict[str, Any] = {}

    def bad(message: str) -> ApiError:
        return ApiError(400, f"could not read the form: {message}")

    def text(raw: bytes, what: str) -> str:
        try:
            return raw.decode(charset)
        except UnicodeDecodeError as exc:
            raise bad(f"{what} is not valid {charset} text ({exc.reason} at byte {exc.start}); send "
                      "UTF-8, or name the charset in the Content-Type") from None

    def on_headers(headers: dict[bytes, bytes]) -> None:
        _, options = parse_options_header(headers.get(b"content-disposition"))
        if b"name" not in options:
            raise bad("a part has no Content-Disposition name")
        if b"filename" in options:
            raise bad("it carries a file; documents go to /translate_file")
        if len(fields) >= max_fields:
            raise bad(f"more than {max_fields} fields")
        part.update(name=text(options[b"name"], "a field name"), data=bytearray())

    def on_data(data: bytes) -> None:
        part["data"].extend(data)
        if len(part["data"]) > FORM_FIELD_MAX_BYTES:
            raise bad(f"field {shown(part['name'])} is over {FORM_FIELD_MAX_BYTES:,} bytes")

    def on_end() -> None:
        fields.append((part["name"], text(bytes(part["data"]), f"field {shown(part['name'])}")))

    callbacks = part_callbacks(part, on_headers, on_data, on_end)
    try:
        parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except FormParserError as exc:
        raise bad(str(exc) or type(exc).__name__) from None
    return fields


def query_fields(request: Request) -> dict[str, Any]:
    """The query string's fields, UTF-8 (raw bytes and %-escapes alike, a 400 otherwise); a
    repeated name becomes a list."""
    raw = request.scope.get("query_string", b"")
    if not raw:
        return {}
    return as_fields(parse_urlencoded(raw, "utf-8", max_form_fields(request), "the query string"))


def is_json(request: Request) -> bool:
    """JSON as Flask's ``request.is_json`` sees it: application/json or application/*+json."""
    media_type, _ = content_type_of(request)
    return media_type == b"application/json" or (media_type.startswith(b"application/")
                                                   and media_type.endswith(b"+json"))


def is_form(request: Request) -> bool:
    return content_type_of(request)[0] in FORM_TYPES


async def read_fields(request: Request, *, query_first: bool = False) -> dict[str, Any]:
    """A request's fields as a dict: a JSON object alone, or form fields with the query string's.

    A JSON body is read alone (as LibreTranslate reads ``request.get_json()``). Otherwise the
    form's fields (if the body is a form; any other body is not read) and the query string's
    are merged: DeepL's routes let the form's win, LibreTranslate's (``query_first``) the query's,
    as werkzeug's ``request.values`` (``CombinedMultiDict([args, form])``) answers ``get``.
    """
    if is_json(request):
        data = await read_json(request)
        if not isinstance(data, dict):
            raise ApiError(400, f"the JSON body must be an object, not {json_type(data)}, "
                                'e.g. {"q": "...", "target": "en"}')
        return data
    query = query_fields(request)
    form = await read_form(request) if is_form(request) else {}
    return {**form, **query} if query_first else {**query, **form}


def validation_context(request: Request) -> dict[str, Any]:
    """What request models' validators need to know of the settings (the JSON depth of a glossary field)."""
    return {"json_max_depth": json_max_depth(request)}


# --- typed access to loosely typed fields ----------------------------------------------------------
def json_type(value: Any) -> str:
    """How a value reads in JSON terms, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a non-integer number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def shown(value: Any, limit: int = 40) -> str:
    """A value quoted for an error message, cut short: hostile input is not echoed back whole."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _wrong_type(name: str, wanted: str, value: Any) -> ApiError:
    return ApiError(400, f"'{name}' must be {wanted}, not {json_type(value)}")


def text_field(fields: dict[str, Any], name: str, default: str | None = None, *,
               label: str = "") -> str | None:
    """A string field; absent or null gives ``default``, any other type is a 400 naming ``label`` or it."""
    value = fields.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _wrong_type(label or name, "a string", value)
    return value


def int_field(fields: dict[str, Any], name: str, default: int) -> int:
    """An integer: a JSON integer, or its decimal text in form data; absent or null gives ``default``."""
    value = fields.get(name)
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and len(value) <= 18 and value.strip().lstrip("+-").isdecimal():
        return int(value)
    raise _wrong_type(name, "an integer", value)


def flag_field(fields: dict[str, Any], name: str, default: bool = False) -> bool:
    """A JSON boolean field; absent or null gives ``default``."""
    value = fields.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _wrong_type(name, "true or false", value)
    return value


def object_field(fields: dict[str, Any], name: str) -> dict[str, Any] | None:
    """A JSON object field; absent or null gives None."""
    value = fields.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _wrong_type(name, "an object", value)
    return value


# --- context, instructions, formality --------------------------------------------------------------
INSTRUCTIONS_MAX = 10  # DeepL's bounds on custom_instructions (its API reference and official clients)
INSTRUCTION_MAX_CHARS = 300


def context_of(value: Any, settings: Settings, name: str = "context") -> str:
    """A request's ``context``: text that informs the translation and is neither translated nor
    billed. A 400 if it is not a string, a 413 past ``context_max_chars``."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _wrong_type(name, "a string", value)
    limit = settings.context_max_chars
    if limit and len(value) > limit:
        raise ApiError(413, f"'{name}' has {len(value)} characters; the limit is {limit} "
                            "(MTSERVE_CONTEXT_MAX_CHARS): send the sentences nearest the text")
    return value.strip()


def instructions_of(value: Any, name: str = "custom_instructions") -> tuple[str, ...]:
    """DeepL's ``custom_instructions``: a list of up to 10 short instructions (a form may repeat the
    field, or send one); each at most 300 characters."""
    if value is None or value == "":
        return ()
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ApiError(400, f"'{name}' must be a list of strings, not {json_type(value)}")
    values = [v.strip() for v in values if v.strip()]
    if len(values) > INSTRUCTIONS_MAX:
        raise ApiError(400, f"'{name}' has {len(values)} instructions; the most allowed is {INSTRUCTIONS_MAX}")
    for i, instruction in enumerate(values):
        if len(instruction) > INSTRUCTION_MAX_CHARS:
            raise ApiError(400, f"'{name}'[{i}] has {len(instruction)} characters; an instruction may have "
                                f"at most {INSTRUCTION_MAX_CHARS}")
    return tuple(values)


def guidance_of(settings: Settings, context: Any = None, instructions: Any = None,
                formality: str = "default") -> Guidance:
    """The guidance a request's fields ask for, checked in size and type; the service settles the
    ``formality`` (default, more, less, prefer_more or prefer_less) against the target."""
    return Guidance(context_of(context, settings), instructions_of(instructions), formality)


# --- keys ------------------------------------------------------------------------------------------
def runtime_of(request: Request) -> Runtime:
    return request.app.state.runtime


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() not in ("bearer", "deepl-auth-key"):
        return None
    return token.strip() or None


def request_key(request: Request) -> str | None:
    """A key sent outside the body: an Authorization header, or ``?api_key=`` in the URL."""
    return bearer_token(request) or request.query_params.get("api_key") or None


def _ip(request: Request) -> str:
    return request.client.host if request.client else "-"


def admit(request: Request, body_key: str | None = None) -> None:
    """Check the API key and count the request against its rate limit (a no-op unless api_keys is on).

    The key comes from the body's ``api_key`` (LibreTranslate clients), an ``Authorization:
    Bearer`` (or DeepL's ``DeepL-Auth-Key``) header, or ``?api_key=``. Only the key's public id
    reaches the log.
    """
    caller = runtime_of(request).access.admit(body_key or request_key(request), _ip(request))
    request.state.caller = caller.label
    request.state.key_id = caller.key_id  # whose stored glossaries, memory and quota the request uses


def key_id_of(request: Request) -> str | None:
    """The id of the API key that admit() or authorize() accepted for this request; None without one."""
    return getattr(request.state, "key_id", None)


def job_owner(request: Request) -> str | None:
    """Whose document jobs this caller reaches (after admit() or authorize()): its key's, or those of
    callers without a key; every job while API keys are off."""
    return key_id_of(request) if runtime_of(request).access.enabled else ALL_OWNERS


def authorize(request: Request, *, required: bool = False) -> None:
    """Check the key of a route that reads back work (a job, a download, the model list, metrics).

    Unlike ``admit``, it does not count against a rate limit: polling a job must not use up the
    requests its caller paid for. ``required`` asks for a key even where anonymous use is allowed.
    """
    access = runtime_of(request).access
    secret = request_key(request)
    if required and not access.enabled:
        raise AccessDenied("this route needs an API key, and API keys are off on this server "
                           "(MTSERVE_API_KEYS)")
    if required and not secret:
        raise AccessDenied("an API key is required: send it in an Authorization: Bearer header")
    caller = access.check(secret, _ip(request))
    request.state.caller = caller.label
    request.state.key_id = caller.key_id


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


# --- running a call --------------------------------------------------------------------------------
def service_of(request: Request) -> TranslationService:
    """The running translation service, or a 503 that says why there is none yet."""
    runtime = runtime_of(request)
    if runtime.service is None:
        if runtime.restarting:
            raise NotReady("the engine is restarting after a fault; retry shortly")
        if runtime.load_error:
            raise ApiError(503, f"the model failed to load: {runtime.load_error}")
        raise NotReady()
    return runtime.service


def charge(request: Request, chars: int) -> None:
    """Count ``chars`` against the caller's character quota (QuotaExceeded when it is spent)."""
    runtime_of(request).access.charge(key_id_of(request), chars)


def refund(request: Request, chars: int) -> None:
    runtime_of(request).access.refund(key_id_of(request), chars)


async def listen_for_disconnect(request: Request) -> None:
    """Return when the client closes the connection. Call it only once the body has been read:
    after that, the next ASGI message is the disconnect (as vLLM's ``with_cancellation`` waits)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def until_disconnect(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result; if the client goes away first, ``work`` is cancelled (its engine work
    stops) and ClientGone is raised, which the API answers with a bare 499."""
    task = asyncio.ensure_future(work)
    listener = asyncio.ensure_future(listen_for_disconnect(request))
    try:
        await asyncio.wait({task, listener}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        listener.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if task.cancelled():
        raise ClientGone()
    return task.result()


async def run_call(request: Request, translation: TranslationRequest) -> tuple[list[Translation], Usage]:
    """One translation call of any API family: the caller's key put on the request (whose glossaries
    and translation-memory entries it may use), the usage and the characters in and out recorded
    for the request's log line and metrics, the caller's quota charged (and given back if the call
    fails), and the work cancelled if the client goes away (ClientGone); the deadline is the
    service's, or the request's own."""
    service = service_of(request)
    translation = replace(translation, key_id=key_id_of(request))
    usage = Usage()
    request.state.usage = usage
    request.state.chars_in = translation.chars  # billed: the texts; a context is not
    charge(request, translation.chars)
    try:
        results = await until_disconnect(request, service.translate(translation, usage))
    except BaseException:
        refund(request, translation.chars)
        raise
    request.state.chars_out = sum(len(result.text) for result in results)
    return results, usage


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


# --- streaming -------------------------------------------------------------------------------------
STREAM_CUT = ("the server is shutting down and this stream ended before its translation was done; send the "
              "request again (to another instance, or once the server is back)")
SSE_PING_S = 15  # a comment line this often keeps proxies from closing a quiet stream


class ShuttingDown(Exception):
    """The server began to shut down before the stream's next event."""


def closing_of(request: Request) -> ServerClosing:
    return request.app.state.closing


def event_stream(request: Request, content: AsyncIterator[Any]) -> EventSourceResponse:
    """An SSE response that ends as mtserve decides when the server shuts down.

    sse-starlette ends its streams the moment it sees the exit signal, with a clean end and no
    event, so a client cannot tell a cut stream from a finished one. Here its own cut waits the
    whole grace period, after the stream has ended itself with an event that says why.
    """
    settings: Settings = request.app.state.settings
    return EventSourceResponse(content, ping=SSE_PING_S, shutdown_grace_period=settings.shutdown_grace_s)


_END = object()


async def next_before(items: AsyncIterator[T], moment: asyncio.Future[None]) -> T | None:
    """The next of ``items`` (None at their end), or ShuttingDown if ``moment`` comes first; then the
    step under way is cancelled (a translation stream's engine work with it) and waited for."""
    if moment.done():
        raise ShuttingDown()
    step: asyncio.Future[Any] = asyncio.ensure_future(anext(items, _END))
    try:
        await asyncio.wait({step, moment}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not step.done():
            step.cancel()
            await asyncio.wait({step})
    if step.cancelled():
        raise ShuttingDown()
    item = step.result()
    return None if item is _END else item


@dataclass
class OpenStream:
    """A service stream whose first event is in: what a family's stream body relays."""

    events: AsyncIterator[StreamEvent]
    first: StreamEvent | None
    usage: Usage


async def open_stream(request: Request, translation: TranslationRequest) -> OpenStream:
    """Start a service stream for the request: the caller's key put on it, usage recorded, quota
    charged, and its first event pulled now, so an unsupported language, a glossary that does not
    fit or a full queue is a status before the 200 goes out (``first`` None: the stream is empty).
    A client that hangs up while the first event waits (behind other work) cancels the stream then,
    as it would later."""
    service = service_of(request)
    translation = replace(translation, key_id=key_id_of(request))
    usage = Usage()
    request.state.usage = usage
    request.state.chars_in = translation.chars
    charge(request, translation.chars)
    events = service.stream(translation, usage)
    try:
        return OpenStream(events, await until_disconnect(request, anext(events, None)), usage)
    except BaseException:
        refund(request, translation.chars)
        await events.aclose()
        raise


async def relay(request: Request, stream: OpenStream, render: Callable[[StreamEvent], Iterable[T]],
                failed: Callable[[str], T]) -> AsyncIterator[T]:
    """A family's stream body: each service event rendered in the family's shape, the final text's
    length recorded, and a mid-stream failure reported in-band (the status has been sent). A stream
    the shutdown grace period is about to cut ends with ``failed(STREAM_CUT)``."""
    events = stream.events
    try:
        event = stream.first
        while event is not None:
            if isinstance(event, Done):
                request.state.chars_out = len(event.translation.text)
            for item in render(event):
                yield item
            event = await next_before(events, closing_of(request).cut())
    except ShuttingDown:
        log.info("stream ended by the shutdown", extra={"event": "stream_cut"})
        yield failed(STREAM_CUT)
    except Exception as exc:
        message = str(exc) or type(exc).__name__
        log.warning("stream failed", extra={"event": "stream_error", "error": message})
        yield failed(message)
    finally:
        await events.aclose()
