"""Reading a request's fields within bounds, the same way for the three API families.

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
  (starlette's parsers read bytes that are not UTF-8 as Latin-1, mojibake to translate).
- Loosely typed fields (``text_field``, ``int_field``...): DeepL and OpenAI bodies are read as
  plain dicts, and a field of the wrong JSON type is refused by name.
- A request's context, instructions and formality (``guidance_of``), checked in size and type.
"""

from __future__ import annotations

import codecs
import logging
from typing import Any, Callable, Iterable, TypeVar
from urllib.parse import parse_qsl

import pydantic_core
from fastapi import Request
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect

from mtserve.api.errors import CLIENT_CLOSED, ApiError
from mtserve.service.request import Guidance
from mtserve.settings import Settings

T = TypeVar("T")
log = logging.getLogger(__name__)

JSON_DEPTH_DEFAULT: int = Settings.model_fields["json_max_depth"].default  # where no settings are at hand
FORM_EXTRA_FIELDS = 32  # a form's fields besides its texts (q or text, repeated up to batch_limit)
FORM_FIELD_MAX_BYTES = 1024 * 1024  # one field of a plain form: starlette's own bound, kept
GONE = "the client closed the connection before the whole body arrived"



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


