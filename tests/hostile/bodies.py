"""Hostile HTTP requests, as data: bodies, fields and paths that once made the API fail, and their kin.

``hostile_requests()`` returns every case as a ``HostileRequest``: a short name, the method, the
path (with its query string), the headers and body bytes, and the range the answer's status must
be in (``status``, inclusive). Each case is for a server with the default settings, except those
whose ``needs`` is ``"keys"``: they go to a server started with ``api_keys`` and
``require_api_key`` on, and carry no valid key, so each must be refused (in its family's status: 400,
401 or 403) without doing, or revealing, any work. Every answer outside 2xx must be a JSON error in its API's shape
(``error_message`` reads it).

A few cases are legal and do engine work (``engine_work``): a huge word must be cut into segments
that fit the engine, and translated (200); a test that bounds each request's time may leave them
out, or give them a model-sized deadline.

Used by tests/api/test_hostile_bodies.py (every case against a real uvicorn with a test-double
engine) and by the live hostile-input test, which sends each one to a running server while a
probe polls /health/live. The whole set builds in well under a second; no body is over 1 MB (the
default MTSERVE_MAX_BODY_BYTES), except where a case is about a size limit.
"""

from __future__ import annotations

import functools
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

DEEP = 100_000  # the nesting of the original reports: far past Python's recursion limit
DEEP_QUERY = 2_000  # past the recursion limit, and still a URL the HTTP parser takes
LONG_DIGITS = 5_000  # past Python's 4,300-digit int conversion limit
CSV_FIELD = 140_000  # past csv's field_size_limit of 131,072
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
BOUNDARY = "hostile-boundary-7f3a"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"


@dataclass(frozen=True)
class HostileRequest:
    name: str
    method: str
    path: str  # with its query string, already encoded
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    status: tuple[int, int] = (400, 499)  # the answer's status must be in this inclusive range
    needs: str = ""  # "": the default settings; "keys": api_keys and require_api_key on
    engine_work: bool = False  # legal, and translated by the engine

    def __repr__(self) -> str:  # bodies can be a megabyte: keep test ids and failures readable
        return f"HostileRequest({self.name!r}, {self.method} {self.path[:60]}, {len(self.body):,} bytes)"

    def httpx_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``httpx.request(method, base_url + path, ...)``."""
        return {"content": self.body, "headers": dict(self.headers)}


def error_message(path: str, body: Any) -> str | None:
    """The message of an API error body in its family's shape, or None if it is not one.

    LibreTranslate: {"error": "..."}; DeepL (/v2): {"message": "..."}; OpenAI (/v1):
    {"error": {"message": ...}}.
    """
    if not isinstance(body, dict):
        return None
    if path.startswith("/v2/"):
        message = body.get("message")
    elif path.startswith("/v1/"):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else None
    else:
        message = body.get("error")
    return message if isinstance(message, str) and message else None


# --- building blocks ----------------------------------------------------------------------------------
def nested(depth: int, inner: str = "") -> str:
    return "[" * depth + inner + "]" * depth


def json_request(name: str, path: str, body: bytes | str | Any, **kw: Any) -> HostileRequest:
    """A POST with a JSON body: bytes and str are sent as they are, anything else is serialised."""
    if isinstance(body, str):
        raw = body.encode("utf-8", "surrogatepass")
    elif isinstance(body, bytes):
        raw = body
    else:
        raw = json.dumps(body, ensure_ascii=False).encode()
    return HostileRequest(name, "POST", path, raw, (("content-type", JSON),), **kw)


def form_request(name: str, path: str, fields: list[tuple[str, str]], **kw: Any) -> HostileRequest:
    return HostileRequest(name, "POST", path, urllib.parse.urlencode(fields).encode(),
                          (("content-type", FORM),), **kw)


def multipart(parts: list[tuple[str, str | None, bytes]]) -> bytes:
    """A multipart/form-data body of (field name, file name or None, content) parts, in order."""
    out = bytearray()
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n".encode()
        if filename:
            out += b"Content-Type: application/octet-stream\r\n"
        out += b"\r\n" + content + b"\r\n"
    out += f"--{BOUNDARY}--\r\n".encode()
    return bytes(out)


def upload_request(name: str, path: str, parts: list[tuple[str, str | None, bytes]],
                   **kw: Any) -> HostileRequest:
    headers = (("content-type", MULTIPART),) + kw.pop("headers", ())
    return HostileRequest(name, "POST", path, multipart(parts), headers, **kw)


# --- the cases ------------------------------------------------------------------------------------------
JSON_ROUTES = ("/translate", "/detect", "/translate/stream", "/v2/translate", "/v2/languages",
               "/v2/glossaries", "/v1/chat/completions")
LT_FIELDS = '"q": "hello", "source": "en", "target": "de"'
CHAT = {"model": "mtserve-en-de", "messages": [{"role": "user", "content": "hello"}]}


def _json_bodies() -> list[HostileRequest]:
    """Every JSON route: bodies a JSON parser must refuse within bounds (each once a 500 or a crash)."""
    cases = []
    for path in JSON_ROUTES:
        short = path.strip("/").replace("/", "-")
        cases += [
            json_request(f"{short}: arrays nested {DEEP:,} deep", path, nested(DEEP)),
            json_request(f"{short}: a field nested {DEEP:,} deep", path,
                         '{"q": ' + nested(DEEP, "1") + ', "text": 1}'),
            json_request(f"{short}: objects nested 150 deep", path, '{"a": ' * 150 + "1" + "}" * 150),
            json_request(f"{short}: an integer of {LONG_DIGITS:,} digits", path,
                         '{"q": "hi", "target": "de", "n": ' + "7" * LONG_DIGITS + "}"),
            json_request(f"{short}: invalid UTF-8", path, b'{"q": "\xff\xfe", "target": "de"}'),
            json_request(f"{short}: a lone surrogate", path,
                         '{"q": "\\ud800", "text": "\\udfff", "target": "de"}'),
            json_request(f"{short}: NaN", path, '{"q": "hi", "target": "de", "timeout": NaN, "n": NaN}'),
            json_request(f"{short}: trailing garbage", path, '{"q": "hi", "target": "de"} {"q": 1}'),
            json_request(f"{short}: not an object", path, '["hi", "de"]'),
            json_request(f"{short}: an empty body", path, b""),
        ]
    return cases


def _form_fields() -> list[HostileRequest]:
    deep_glossary = nested(DEEP)
    return [
        form_request("translate: form glossary nested 100,000 deep", "/translate",
                     [("q", "hi"), ("source", "en"), ("target", "de"), ("glossary", deep_glossary)]),
        form_request("translate: form glossary with a 5,000-digit number", "/translate",
                     [("q", "hi"), ("target", "de"), ("glossary", '{"a": ' + "9" * LONG_DIGITS + "}")]),
        json_request("translate: JSON glossary string nested 100,000 deep", "/translate",
                     {"q": "hi", "target": "de", "glossary": deep_glossary}),
        HostileRequest("translate/stream GET: glossary nested 2,000 deep", "GET",
                       "/translate/stream?" + urllib.parse.urlencode(
                           {"q": "hi", "source": "en", "target": "de", "glossary": nested(DEEP_QUERY)})),
        HostileRequest("translate/stream GET: glossary that is not JSON", "GET",
                       "/translate/stream?q=hi&target=de&glossary=%7Bnope"),
        form_request("translate: 200 form fields", "/translate", [("q", "hi")] * 200 + [("target", "de")]),
        form_request("translate: 5,000 distinct form fields", "/translate",
                     [(f"f{i}", "x") for i in range(5000)] + [("q", "hi"), ("target", "de")]),
        upload_request("translate: a file part in a plain form", "/translate",
                       [("q", None, b"hi"), ("target", None, b"de"), ("file", "a.txt", b"hello")]),
        HostileRequest("translate: multipart with no boundary", "POST", "/translate", b"--x\r\n\r\n",
                       (("content-type", "multipart/form-data"),)),
        upload_request("translate: a multipart field that is not UTF-8", "/translate",
                       [("q", None, b"\xff\xfe hi \xc3"), ("target", None, b"de")]),
        upload_request("v2 translate: a multipart text that is not UTF-8", "/v2/translate",
                       [("text", None, b"ok"), ("text", None, b"\x80\x81"), ("target_lang", None, b"DE")]),
        json_request("translate: a language code of 100,000 characters", "/translate",
                     {"q": "hi", "source": "x" * 100_000, "target": "de"}),
    ]


def _deepl() -> list[HostileRequest]:
    glossary = [("name", "hostile"), ("source_lang", "EN"), ("target_lang", "DE")]
    return [
        form_request(f"v2 glossary: a TSV field of {CSV_FIELD:,} characters", "/v2/glossaries",
                     glossary + [("entries_format", "tsv"), ("entries", "term\t" + "x" * CSV_FIELD)]),
        form_request(f"v2 glossary: a CSV field of {CSV_FIELD:,} characters", "/v2/glossaries",
                     glossary + [("entries_format", "csv"), ("entries", "term," + "x" * CSV_FIELD)]),
        form_request("v2 glossary: a CSV quote never closed", "/v2/glossaries",
                     glossary + [("entries_format", "csv"), ("entries", 'term,"' + "x" * CSV_FIELD)]),
        form_request("v2 glossary: JSON entries nested 100,000 deep", "/v2/glossaries",
                     glossary + [("entries_format", "json"), ("entries", nested(DEEP))]),
        form_request("v2 glossary: JSON entries with a 5,000-digit number", "/v2/glossaries",
                     glossary + [("entries_format", "json"),
                                 ("entries", '{"a": ' + "1" * LONG_DIGITS + "}")]),
        json_request("v2 glossary: entries as an array", "/v2/glossaries",
                     {"name": "x", "source_lang": "EN", "target_lang": "DE", "entries": ["a", "b"]}),
        json_request("v2 glossary: name as an array", "/v2/glossaries",
                     {"name": ["x"], "source_lang": "EN", "target_lang": "DE", "entries": "a\tb"}),
        json_request("v2 glossary: source_lang as a number", "/v2/glossaries",
                     {"name": "x", "source_lang": 5, "target_lang": "DE", "entries": "a\tb"}),
        json_request("v2 translate: source_lang as a number", "/v2/translate",
                     {"text": ["hi"], "target_lang": "DE", "source_lang": 5}),
        json_request("v2 translate: target_lang as a number", "/v2/translate",
                     {"text": ["hi"], "target_lang": 5}),
        json_request("v2 translate: text holding a number", "/v2/translate",
                     {"text": ["hi", 3], "target_lang": "DE"}),
        json_request("v2 translate: text as an object", "/v2/translate",
                     {"text": {"a": "b"}, "target_lang": "DE"}),
        json_request("v2 translate: formality as an array", "/v2/translate",
                     {"text": ["hi"], "target_lang": "DE", "formality": ["more"]}),
        json_request("v2 translate: tag_handling as an object", "/v2/translate",
                     {"text": ["hi"], "target_lang": "DE", "tag_handling": {"html": True}}),
        json_request("v2 translate: glossary_id as an array", "/v2/translate",
                     {"text": ["hi"], "target_lang": "DE", "source_lang": "EN", "glossary_id": ["x"]}),
        json_request("v2 languages: type as an object", "/v2/languages", {"type": {"a": 1}}),
        form_request("v2 translate: a target_lang of 100,000 characters", "/v2/translate",
                     [("text", "hi"), ("target_lang", "X" * 100_000)]),
    ]


def _openai() -> list[HostileRequest]:
    path = "/v1/chat/completions"
    user = [{"role": "user", "content": "hello"}]

    def system(content: str) -> dict[str, str]:
        return {"role": "system", "content": content}

    def chat(name: str, **changes: Any) -> HostileRequest:
        return json_request(f"v1 chat: {name}", path, {**CHAT, **changes})

    return [
        chat('n is "abc"', n="abc"),
        chat("n is an array", n=[1]),
        chat("n is 1.5", n=1.5),
        chat("n is 2", n=2),
        json_request("v1 chat: n is 1e999", path, b'{"model": "mtserve-en-de", "messages": '
                     b'[{"role": "user", "content": "hello"}], "n": 1e999}'),
        chat("a content part whose text is a number",
             messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}]),
        chat("a content part whose text is an array",
             messages=[{"role": "user", "content": [{"type": "text", "text": ["a"]}]}]),
        chat("a content part that is a string", messages=[{"role": "user", "content": ["hello"]}]),
        chat("content is a number", messages=[{"role": "user", "content": 5}]),
        chat("a system part whose text is an object",
             messages=[{"role": "system", "content": [{"type": "text", "text": {"a": 1}}]}] + user),
        chat("role is an array", messages=[{"role": ["user"], "content": "hello"}]),
        chat("messages is an object", messages={"role": "user", "content": "hello"}),
        chat("a message that is a string", messages=["hello"]),
        chat("source_lang is 5", source_lang=5),
        chat("target_lang is an array", model="mtserve", target_lang=["de"]),
        chat("model is an array", model=["mtserve-en-de"]),
        chat('stream is "yes"', stream="yes"),
        chat("stream_options is a string", stream=True, stream_options="include_usage"),
        chat("stream_options is an array", stream=True, stream_options=[True]),
        chat("include_usage is a string", stream=True, stream_options={"include_usage": "maybe"}),
        chat("tools", tools=[{"type": "function", "function": {"name": "f"}}]),
        # The quadratic target search: 80,000 characters of "translate " and no target named.
        json_request("v1 chat: 80,000-character system prompt naming no target", path,
                     {"model": "mtserve", "messages": [system("translate " * 8000)] + user}),
        json_request("v1 chat: 900 kB system prompt of 译 naming no target", path,
                     {"model": "mtserve", "messages": [system("译" * 300_000)] + user}),
        json_request("v1 chat: system prompt of 'to' and spaces", path,
                     {"model": "mtserve", "messages": [system("translate to" + " " * 900_000)] + user}),
    ]


def _uploads() -> list[HostileRequest]:
    ok = [("source", None, b"en"), ("target", None, b"de")]
    return [
        upload_request("translate_file: glossary nested 20,000 deep", "/translate_file",
                       [("file", "a.txt", b"hello"), *ok, ("glossary", None, nested(20_000).encode())]),
        upload_request("translate_file: two files", "/translate_file",
                       [("file", "a.txt", b"hello"), ("file", "b.txt", b"hello"), *ok]),
        upload_request("translate_file: the file in another field", "/translate_file",
                       [("document", "a.txt", b"hello"), *ok]),
        upload_request("translate_file: a field that is not UTF-8", "/translate_file",
                       [("file", "a.txt", b"hello"), ("source", None, b"\xff\xfe"), ("target", None, b"de")]),
        upload_request("translate_file: 40 fields", "/translate_file",
                       [("file", "a.txt", b"hello"), *ok] + [(f"f{i}", None, b"x") for i in range(40)]),
        HostileRequest("translate_file: a truncated multipart body", "POST", "/translate_file",
                       multipart([("file", "a.txt", b"hello"), *ok])[:-30], (("content-type", MULTIPART),)),
    ]


LAUGHS = ('<?xml version="1.0"?><!DOCTYPE tmx [<!ENTITY a "ha"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
          '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;">]>'
          '<tmx version="1.4"><header srclang="en"/><body><tu><tuv xml:lang="en"><seg>&d;</seg></tuv></tu>'
          '</body></tmx>').encode()


def _translation_memory() -> list[HostileRequest]:
    """The /tm API and /suggest (off by default): wrong formats, bad fields, ids past SQLite's integers."""
    pair = [("source", None, b"zh"), ("target", None, b"en")]
    tsv = "打开\tOpen\n".encode()
    imp = "/tm/import"
    return [
        upload_request("tm import: a .docx", imp, [("file", "a.docx", b"PK\x03\x04"), *pair]),
        upload_request("tm import: format docx", imp, [("file", "a.tsv", tsv), ("format", None, b"docx"), *pair]),
        upload_request("tm import: a .tsv without languages", imp, [("file", "a.tsv", tsv)]),
        upload_request("tm import: a .po that is not UTF-8", imp, [("file", "a.po", b"\xff\xfe\x00m"), *pair]),
        upload_request("tm import: a .tmx that is not XML", imp, [("file", "a.tmx", b"<tmx><body>"), *pair]),
        upload_request("tm import: an .xliff that is TMX", imp, [("file", "a.xliff", b"<tmx/>"), *pair]),
        upload_request("tm import: entities nested to laugh", imp, [("file", "a.tmx", LAUGHS)]),
        upload_request("tm import: two files", imp, [("file", "a.tsv", tsv), ("file", "b.tsv", tsv), *pair]),
        upload_request("tm import: no file", imp, pair),
        upload_request("tm import: the source is the target", imp,
                       [("file", "a.tsv", tsv), ("source", None, b"en"), ("target", None, b"en")]),
        upload_request("tm import: a language not served", imp,
                       [("file", "a.tsv", tsv), ("source", None, b"xx"), ("target", None, b"en")]),
        upload_request("tm import: a source that is no code", imp,
                       [("file", "a.tsv", tsv), ("source", None, "中文!".encode()), ("target", None, b"en")]),
        upload_request("tm import: an origin of 300 characters", imp,
                       [("file", "a.tsv", tsv), *pair, ("origin", None, b"o" * 300)]),
        upload_request("tm import: an origin with a newline", imp,
                       [("file", "a.tsv", tsv), *pair, ("origin", None, b"a\nb")]),
        json_request("tm import: JSON, not multipart", imp, {"file": "打开\tOpen", "source": "zh"}),
        HostileRequest("tm search: no q", "GET", "/tm/search?source=zh&target=en"),
        HostileRequest("tm search: limit 0", "GET", "/tm/search?q=a&source=zh&target=en&limit=0"),
        HostileRequest("tm search: min_similarity 101", "GET",
                       "/tm/search?q=a&source=zh&target=en&min_similarity=101"),
        HostileRequest("tm search: q of 6,000 characters", "GET",
                       f"/tm/search?q={'a' * 6000}&source=zh&target=en"),
        HostileRequest("tm search: a source that is no code", "GET", "/tm/search?q=a&source=%21%21&target=en"),
        HostileRequest("tm entries: after -1", "GET", "/tm/entries?after=-1"),
        HostileRequest("tm entries: limit 100,000", "GET", "/tm/entries?limit=100000"),
        HostileRequest("tm entries: a source that is no code", "GET", "/tm/entries?source=%21%21"),
        HostileRequest("tm delete: an id past SQLite's integers", "DELETE", "/tm/entries/" + "9" * 30),
        HostileRequest("tm delete: an id that is no number", "DELETE", "/tm/entries/abc"),
        HostileRequest("tm delete: an id no entry has", "DELETE", "/tm/entries/123456789"),
        HostileRequest("tm delete: no origin", "DELETE", "/tm/entries"),
        json_request("tm accept: ids is a string", "/tm/suggestions/accept", {"ids": "1,2"}),
        json_request("tm accept: ids past SQLite's integers", "/tm/suggestions/accept", {"ids": [10**30]}),
        json_request("tm accept: ids of booleans", "/tm/suggestions/accept", {"ids": [True]}),
        json_request("tm accept: neither ids nor all", "/tm/suggestions/accept", {}),
        json_request("tm accept: all is a string", "/tm/suggestions/accept", {"all": "yes"}),
        json_request("suggest: while suggestions are off", "/suggest",
                     {"q": "你好", "s": "Hello", "source": "zh", "target": "en"}, status=(403, 403)),
    ]


def _paths() -> list[HostileRequest]:
    """Path parameters: long, or not UTF-8 once decoded; refused without echoing them back whole."""
    long_id = "x" * 20_000
    return [
        HostileRequest("jobs: an id of 20,000 characters", "GET", f"/jobs/{long_id}"),
        HostileRequest("jobs: an id that is not UTF-8", "GET", "/jobs/%ED%A0%80%FF"),
        HostileRequest("download_file: a name of 20,000 characters", "GET", f"/download_file/{long_id}"),
        HostileRequest("download_file: a path that climbs out", "GET",
                       "/download_file/..%2F..%2Fetc%2Fpasswd"),
        HostileRequest("v2 glossary: an id that is not UTF-8", "GET", "/v2/glossaries/%ED%A0%80"),
        HostileRequest("translate/stream GET: format pdf", "GET",
                       "/translate/stream?q=hi&target=de&format=pdf"),
        HostileRequest("translate/stream GET: no q", "GET", "/translate/stream?target=de"),
    ]


def _huge_words() -> list[HostileRequest]:
    """Legal: one "word" longer than a segment, cut to fit the engine instead of failing in it."""
    return [
        json_request("translate: 400 characters beyond U+FFFF", "/translate",
                     {"q": "\U00020000" * 400, "source": "zh", "target": "en"},
                     status=(200, 200), engine_work=True),
        json_request("translate: one word of 1,200 letters", "/translate",
                     {"q": "a" * 1200, "source": "en", "target": "de"}, status=(200, 200), engine_work=True),
        json_request("translate: 1,200 Han characters, no punctuation", "/translate",
                     {"q": "字" * 1200, "source": "zh", "target": "en"},
                     status=(200, 200), engine_work=True),
    ]


def _without_a_key() -> list[HostileRequest]:
    """For a server with require_api_key on: routes that do or reveal work, sent with no valid key."""
    job = "0" * 32
    big = b"x" * 2_000_000  # over MTSERVE_MAX_BODY_BYTES: may not be read before the key is known
    # Each family's own status: LibreTranslate answers a missing key 400 and a wrong one 403, OpenAI
    # both 401, DeepL both 403.
    missing = {"needs": "keys", "status": (400, 400)}
    keys = {"needs": "keys", "status": (403, 403)}
    openai = {"needs": "keys", "status": (401, 401)}
    return [
        HostileRequest("no key: GET /jobs/{id}", "GET", f"/jobs/{job}", **missing),
        HostileRequest("no key: GET /jobs/{id}/events", "GET", f"/jobs/{job}/events", **missing),
        HostileRequest("no key: DELETE /jobs/{id}", "DELETE", f"/jobs/{job}", **missing),
        HostileRequest("no key: GET /download_file/{name} no job has", "GET", f"/download_file/{job}.a.en.txt",
                       needs="keys", status=(404, 404)),  # the name is the permission, not a key
        HostileRequest("no key: GET /v1/models", "GET", "/v1/models", **openai),
        HostileRequest("wrong key: GET /v1/models", "GET", "/v1/models",
                       headers=(("authorization", "Bearer mts_wrong"),), **openai),
        HostileRequest("wrong key in the URL: GET /jobs/{id}", "GET", f"/jobs/{job}?api_key=mts_wrong",
                       **keys),
        json_request("no key: POST /translate", "/translate", {"q": "hi", "target": "de"}, **missing),
        json_request("no key: POST /detect", "/detect", {"q": "hi"}, **missing),
        json_request("no key: POST /v2/translate", "/v2/translate", {"text": ["hi"], "target_lang": "DE"},
                     **keys),
        json_request("no key: POST /v1/chat/completions", "/v1/chat/completions", CHAT, **openai),
        HostileRequest("no key: GET /translate/stream", "GET", "/translate/stream?q=hi&target=de", **missing),
        upload_request("no key: a 2 MB upload, the file before api_key", "/jobs",
                       [("file", "a.txt", big), ("target", None, b"de"), ("api_key", None, b"mts_wrong")],
                       **missing),
        upload_request("wrong key in the header: a 2 MB upload", "/translate_file",
                       [("file", "a.txt", big), ("target", None, b"de")],
                       headers=(("authorization", "Bearer mts_wrong"),), **keys),
        upload_request("wrong api_key field before the file", "/translate_file",
                       [("api_key", None, b"mts_wrong"), ("target", None, b"de"), ("file", "a.txt", big)],
                       **keys),
        HostileRequest("no key: GET /tm", "GET", "/tm", **missing),
        HostileRequest("no key: GET /tm/search", "GET", "/tm/search?q=a&source=zh&target=en", **missing),
        HostileRequest("no key: DELETE /tm/entries/1", "DELETE", "/tm/entries/1", **missing),
        upload_request("no key: a 2 MB translation memory", "/tm/import",
                       [("file", "a.tsv", big), ("source", None, b"zh"), ("target", None, b"en")], **missing),
    ]


@functools.cache
def hostile_requests() -> tuple[HostileRequest, ...]:
    """Every hostile request; ``needs`` says which server each one is for."""
    cases = (_json_bodies() + _form_fields() + _deepl() + _openai() + _uploads() + _translation_memory()
             + _paths() + _huge_words() + _without_a_key())
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), "case names are unique, they are the test ids"
    return tuple(cases)

