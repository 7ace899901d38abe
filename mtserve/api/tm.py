"""The translation memory over HTTP (``/tm/...``) and LibreTranslate's ``/suggest``.

These routes parse fields and shape answers; what a caller may see, change and store, and the
caps, are ``mtserve.service.tm_access``'s. Keys as everywhere (``Authorization: Bearer``,
``?api_key=``, or the body's ``api_key``); with API keys off every caller is the operator.

- ``POST /tm/import``: a multipart upload (``file``: .tmx, .po, .xliff/.xlf or .tsv; ``source``
  and ``target`` where the file does not say them; ``origin``, ``format``), read as it streams
  in under ``MTSERVE_FILES_MAX_MB`` and parsed in a worker thread.
- ``GET /tm``: entries, suggestions and origins per language pair; ``GET /tm/entries``: a page.
- ``GET /tm/search?q=&source=&target=``: the most similar entries with their scores (0-100).
- ``DELETE /tm/entries/{id}``, ``DELETE /tm/entries?origin=``.
- ``GET /tm/suggestions``, ``POST /tm/suggestions/accept``: the operator's.
- ``POST /suggest``: LibreTranslate's; stores a suggestion when ``MTSERVE_SUGGESTIONS`` is on.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any, Callable, TypeVar

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse

from mtserve.api.errors import ERRORS, ApiError, BodyTooLarge, ErrorBody
from mtserve.api.fields import read_fields, text_field
from mtserve.api.keys import admit, key_id_of, request_key, runtime_of
from mtserve.api.uploads import KeyGate, read_upload
from mtserve.documents.jobs.sandbox import read_tm_file
from mtserve.service.background import in_background
from mtserve.service.tm import TMEntry, TMMatch
from mtserve.service.tm_access import (
    MAX_PAGE,
    MAX_SEARCH,
    MemoryAccess,
    TMScope,
    scope_for,
)
from mtserve.settings import Settings

router = APIRouter(tags=["Translation memory"])
T = TypeVar("T")

IMPORT_PATHS = ("/tm/import",)  # where the body limit is files_max_mb, as for document uploads
MAX_ID = 2**63 - 1  # SQLite's largest integer
TM_ERRORS = {
    400: ERRORS[400],
    403: {"model": ErrorBody, "description": "No API key, not the operator, or over a per-key cap."},
    404: {"model": ErrorBody, "description": "No entry of the caller's matched."},
}
_IMPORT_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary",
                                 "description": "A .tmx, .po, .xliff/.xlf or .tsv file; its extension says "
                                                "its format."},
                        "source": {"type": "string", "description": "Source language, where the file does "
                                                                    "not say it (a .tsv)."},
                        "target": {"type": "string", "description": "Target language (as source)."},
                        "origin": {"type": "string", "description": "A label for the entries (default: "
                                                                    "the file's name), to delete them by."},
                        "format": {"type": "string", "enum": ["tmx", "po", "xliff", "tsv"],
                                   "description": "The file's format, if its name does not say it."},
                        "api_key": {"type": "string", "description": "The API key (or send it in a "
                                                                     "header, before the file)."},
                    },
                }
            }
        },
    }
}


# --- helpers ------------------------------------------------------------------------------------
def _settings(request: Request) -> Settings:
    return request.app.state.settings


def _access(request: Request) -> MemoryAccess:
    return runtime_of(request).memory_access


def _scope(request: Request) -> TMScope:
    return scope_for(key_id_of(request), keys_on=_settings(request).api_keys)


async def _call(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A blocking TM call in a worker thread; its errors (TMError) are statuses by the one table."""
    return await asyncio.to_thread(work, *args, **kwargs)


def entry_json(entry: TMEntry) -> dict[str, Any]:
    return {"id": entry.id, "source": entry.source_lang, "target": entry.target_lang,
            "sourceText": entry.source, "targetText": entry.target, "origin": entry.origin,
            "owner": entry.owner, "createdAt": entry.created, "suggestion": entry.suggestion}


def match_json(match: TMMatch) -> dict[str, Any]:
    return {**entry_json(match.entry), "score": match.score, "exact": match.score >= 100}


def _page(entries: list[TMEntry], limit: int) -> dict[str, Any]:
    return {"entries": [entry_json(e) for e in entries],
            "next": entries[-1].id if len(entries) == limit else None}


# --- import ---------------------------------------------------------------------------------------
@router.post("/tm/import", status_code=201, responses={**TM_ERRORS, 413: ERRORS[413]},
             openapi_extra=_IMPORT_FORM)
async def import_file(request: Request):
    """Add the pairs of an uploaded translation-memory file, as the caller's entries."""
    settings = _settings(request)
    limit = int(settings.files_max_mb * 1_000_000)
    too_big = f"the upload is over {settings.files_max_mb:g} MB, the limit (MTSERVE_FILES_MAX_MB)"
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit + 64 * 1024:
        raise ApiError(413, too_big)
    if "multipart/form-data" not in request.headers.get("content-type", ""):
        raise ApiError(400, "send the file as multipart/form-data: a field 'file', and 'source' and 'target' "
                            "where the file does not say its languages")
    gate = None
    if key := request_key(request):  # checked before the body is read
        admit(request, key)
    elif runtime_of(request).access.enabled:  # entries need an owner: the key before the bulk of the file
        gate = KeyGate(request, settings.max_body_bytes)
    try:
        upload = await read_upload(request, max_file_bytes=limit, limit_message=too_big, gate=gate)
    except BodyTooLarge:
        raise ApiError(413, too_big) from None
    fields = upload.fields
    if key is None and not (gate and gate.admitted):
        admit(request, fields.get("api_key") or None)
    if upload.content is None:
        raise ApiError(400, "the form has no file; send the translation memory (.tmx, .po, .xliff or .tsv) "
                            "in a field named 'file'")
    languages = runtime_of(request).model.languages
    # Set when this request ends, also early (uvicorn cancels what is still running once the shutdown grace
    # is over): the parse stops, or the write at its next batch, instead of holding the process up.
    cancel = threading.Event()
    try:
        # on a low-priority thread: the import's CPU goes to whatever the engine leaves
        result = await in_background(_access(request).import_file, _scope(request), upload.content,
                                     upload.filename or "", fields.get("format"), fields.get("source"),
                                     fields.get("target"), fields.get("origin"), languages,
                                     read=functools.partial(read_tm_file, settings), cancel=cancel)
    finally:
        cancel.set()
    report = result.report
    return JSONResponse({
        "source": result.source_lang, "target": result.target_lang, "origin": result.origin,
        "added": report.added, "duplicates": report.duplicates, "skipped": report.skipped,
        "entries": result.held,
    }, status_code=201)


# --- reading --------------------------------------------------------------------------------------
@router.get("/tm", responses=TM_ERRORS)
async def tm_stats(request: Request):
    """The caller's entries per language pair (the operator: everyone's), what it holds and its caps."""
    admit(request)
    pairs, held = await _call(_access(request).stats, _scope(request))
    settings = _settings(request)
    return {"entries": held.entries, "entriesLimit": settings.tm_entries_per_key or None,
            "bytes": held.bytes, "bytesLimit": settings.tm_bytes_per_key or None,
            "pairs": [{"source": p.source_lang, "target": p.target_lang, "entries": p.entries,
                       "suggestions": p.suggestions, "origins": p.origins} for p in pairs]}


@router.get("/tm/entries", responses=TM_ERRORS)
async def tm_entries(request: Request, source: str | None = None, target: str | None = None,
                     origin: str | None = None, after: int = Query(0, ge=0, le=MAX_ID),
                     limit: int = Query(100, ge=1, le=MAX_PAGE)):
    """A page of the caller's entries, oldest first; ``next`` is the ``after`` of the next page."""
    admit(request)
    found = await _call(_access(request).entries, _scope(request), source, target, origin, after, limit)
    return _page(found, limit)


@router.get("/tm/search", responses=TM_ERRORS)
async def tm_search(request: Request, q: str, source: str, target: str,
                    limit: int = Query(10, ge=1, le=MAX_SEARCH),
                    min_similarity: float = Query(0.0, ge=0, le=100)):
    """The caller's entries most similar to ``q``, best first, with scores 0-100 (100: an exact match)."""
    admit(request)
    matches = await _call(_access(request).search, _scope(request), q, source, target, limit, min_similarity)
    return {"matches": [match_json(m) for m in matches]}


# --- deleting -------------------------------------------------------------------------------------
@router.delete("/tm/entries/{entry_id}", responses=TM_ERRORS)
async def delete_entry(request: Request, entry_id: int = Path(ge=1, le=MAX_ID)):
    """Delete one of the caller's entries (the operator: any entry or suggestion)."""
    admit(request)
    return {"deleted": await _call(_access(request).delete, _scope(request), ids=[entry_id])}


@router.delete("/tm/entries", responses=TM_ERRORS)
async def delete_entries(request: Request, origin: str | None = None):
    """Delete the caller's entries that came with ``origin`` (an import's file name, unless it named one)."""
    admit(request)
    if not origin:
        raise ApiError(400, "origin is missing: DELETE /tm/entries?origin=<the import's origin>, "
                            "or DELETE /tm/entries/{id} for one entry")
    return {"deleted": await _call(_access(request).delete, _scope(request), origin=origin)}


# --- suggestions ----------------------------------------------------------------------------------
@router.get("/tm/suggestions", responses=TM_ERRORS)
async def tm_suggestions(request: Request, after: int = Query(0, ge=0, le=MAX_ID),
                         limit: int = Query(100, ge=1, le=MAX_PAGE)):
    """Suggestions waiting to be accepted (the operator's view)."""
    admit(request)
    found = await _call(_access(request).entries, _scope(request), after=after, limit=limit, suggestions=True)
    return _page(found, limit)


@router.post("/tm/suggestions/accept", responses=TM_ERRORS)
async def accept_suggestions(request: Request):
    """Turn suggestions into entries that serve every caller: ``{"ids": [...]}`` or ``{"all": true}``."""
    body = await read_fields(request)
    admit(request, text_field(body, "api_key"))
    ids, everything = body.get("ids"), body.get("all")
    if everything is not None and not isinstance(everything, bool):
        raise ApiError(400, "'all' must be true or false")
    if (ids is None) == (everything is not True):
        raise ApiError(400, 'say which suggestions: {"ids": [1, 2]} or {"all": true}')
    if ids is not None and (not isinstance(ids, list) or len(ids) > MAX_PAGE or not all(
            isinstance(i, int) and not isinstance(i, bool) and 1 <= i <= MAX_ID for i in ids)):
        raise ApiError(400, f"'ids' must be a list of at most {MAX_PAGE} suggestion ids (see GET /tm/suggestions)")
    accepted = await _call(_access(request).accept, _scope(request), ids)
    return {"accepted": accepted}


@router.post("/suggest", responses={**TM_ERRORS, 429: {"model": ErrorBody, "description": "Rate limited."}})
async def suggest(request: Request):
    """Submit a suggestion to improve a translation (LibreTranslate's): ``q``, ``s``, ``source``, ``target``.

    Stored for the operator to accept when MTSERVE_SUGGESTIONS is on; answers ``{"success": true}``.
    """
    if not _settings(request).suggestions:
        raise ApiError(403, "Suggestions are disabled on this server.")
    fields = await read_fields(request, query_first=True)  # as Flask's request.values
    admit(request, text_field(fields, "api_key"))
    for name in ("q", "s", "source", "target"):
        if not fields.get(name):
            raise ApiError(400, f"Invalid request: missing {name} parameter")
    await _call(_access(request).suggest, key_id_of(request), fields["q"], fields["s"],
                fields["source"], fields["target"], runtime_of(request).model.languages)
    return {"success": True}
