"""DeepL's v3 API (``/v3/...``): multilingual glossaries, style rules and translation memories, in the
shapes deepl-python's ``DeepLClient`` reads.

A glossary holds dictionaries, one per language pair (``POST /v3/glossaries`` with
``dictionaries: [{source_lang, target_lang, entries, entries_format}]``). It can be renamed and a
dictionary merged into it (``PATCH``: its entries added, those of a term it has replaced), one
replaced or added (``PUT .../dictionaries``) or removed (``DELETE .../dictionaries?source_lang=&target_lang=``).
The store is the one v2's ``/v2/glossaries`` and ``mtserve glossary`` use: a v2 glossary is a v3
glossary of one dictionary, and ``glossary_id`` on ``/v2/translate`` and ``/v2/document`` uses the
dictionary of the request's pair. Ownership is v2's: with keys on, a key changes and deletes its own
glossaries, uses the operator's, and another key's are not there for it (404).

Style rules (``/v3/style_rules``: create, list, get, rename, configured rules, custom instructions,
delete) are lists of custom instructions for one target language, owned as glossaries are; a
``style_id`` on ``/v2/translate`` puts its instructions before the request's ``custom_instructions``
(``mtserve.service.style_rules``).

Translation memories (``GET /v3/translation_memories``) list mtserve's own TM (``/tm``) as DeepL lists
its memories, one per source language (``mtserve.service.tm_access.MemoryView``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from mtserve.api.deepl import (
    check_key,
    creation_time,
    fields_of,
    glossary_scope,
    glossary_store,
    to_deepl,
    to_mtserve,
)
from mtserve.api.errors import ApiError
from mtserve.api.fields import int_field, text_field
from mtserve.api.keys import key_id_of, runtime_of
from mtserve.service.glossary import format_entries, parse_entries
from mtserve.service.glossary_store import Caps, Dictionary, DictionaryInfo, GlossaryInfo
from mtserve.service.style_rules import CustomInstruction, NewInstruction, StyleRule, StyleRuleStore
from mtserve.service.tm_access import MemoryView
from mtserve.settings import Settings

router = APIRouter(prefix="/v3", tags=["DeepL API v3"])


# --- shapes ---------------------------------------------------------------------------------------
def describe_dictionary(dictionary: DictionaryInfo) -> dict:
    return {"source_lang": to_deepl(dictionary.source_lang).lower(),
            "target_lang": to_deepl(dictionary.target_lang).lower(), "entry_count": dictionary.entry_count}


def describe_glossary(glossary: GlossaryInfo) -> dict:
    return {"glossary_id": glossary.id, "name": glossary.name,
            "dictionaries": [describe_dictionary(d) for d in glossary.dictionaries],
            "creation_time": creation_time(glossary.created)}


def caps_of(settings: Settings) -> Caps:
    return Caps(owned=settings.glossaries_per_key, entries=settings.glossary_max_entries,
                bytes=settings.glossary_bytes_per_key)


def pair_of(request: Request, fields: dict[str, Any]) -> tuple[str, str]:
    """The ``source_lang`` and ``target_lang`` a route names, as mtserve's codes."""
    supported = runtime_of(request).model.languages
    codes = []
    for name in ("source_lang", "target_lang"):
        value = text_field(fields, name)
        if not value:
            raise ApiError(400, f"Missing parameter '{name}'")
        codes.append(to_mtserve(value, name, supported))
    return codes[0], codes[1]


@dataclass(frozen=True)
class SentDictionary:
    """One dictionary as a request sends it: its pair, and its entries as text until parsed."""

    source_lang: str
    target_lang: str
    entries: str
    entries_format: str

    def parsed(self, max_entries: int) -> Dictionary:
        """Its entries read (blocking: a 10,000-line TSV takes time, so routes call it in a worker thread)."""
        return Dictionary(self.source_lang, self.target_lang,
                          parse_entries(self.entries, self.entries_format, max_entries=max_entries))


def dictionary_of(request: Request, raw: Any, where: str) -> SentDictionary:
    """One dictionary of a request, checked: its languages, and entries in some format."""
    if not isinstance(raw, dict):
        raise ApiError(400, f"{where} must be an object with source_lang, target_lang, entries and entries_format")
    source, target = pair_of(request, raw)
    entries = raw.get("entries")
    if not isinstance(entries, str) or not entries:
        raise ApiError(400, f"Missing parameter 'entries' in {where}: the entries as TSV or CSV text")
    return SentDictionary(source, target, entries, (text_field(raw, "entries_format") or "tsv").lower())


# --- glossaries -----------------------------------------------------------------------------------
@router.post("/glossaries", status_code=201)
async def create_glossary(request: Request):
    """A glossary of one or more dictionaries, owned by the caller's key (the operator's while keys are off)."""
    settings: Settings = request.app.state.settings
    check_key(request)  # the key is in a header: checked before the body is read
    fields = await fields_of(request)
    name = fields.get("name")
    if not name or not isinstance(name, str):
        raise ApiError(400, "Missing parameter 'name'" if not name else "Parameter 'name' must be a string")
    raw = fields.get("dictionaries")
    if not isinstance(raw, list) or not raw:
        raise ApiError(400, "Missing parameter 'dictionaries': a list of {source_lang, target_lang, entries, "
                            "entries_format}")
    scope = glossary_scope(request)
    scope.owner_of_new()  # a caller without a key is refused before its entries are parsed
    dictionaries = [dictionary_of(request, d, f"dictionaries[{i}]") for i, d in enumerate(raw)]
    store = glossary_store(request)

    def create() -> GlossaryInfo:
        parsed = [d.parsed(settings.glossary_max_entries) for d in dictionaries]
        return store.create_multilingual(name, parsed, scope=scope, caps=caps_of(settings))

    return JSONResponse(describe_glossary(await asyncio.to_thread(create)), status_code=201)


@router.get("/glossaries")
async def list_glossaries(request: Request):
    """The caller's glossaries and the operator's: each dictionary's pair and entry count, no entries."""
    check_key(request)
    found = await asyncio.to_thread(glossary_store(request).list, glossary_scope(request))
    return {"glossaries": [describe_glossary(g) for g in found]}


@router.get("/glossaries/{glossary_id}")
async def get_glossary(request: Request, glossary_id: str):
    check_key(request)
    return describe_glossary(await asyncio.to_thread(glossary_store(request).info, glossary_id,
                                                     glossary_scope(request)))


@router.get("/glossaries/{glossary_id}/entries")
async def glossary_entries(request: Request, glossary_id: str):
    """The entries of one dictionary, as TSV inside JSON (one ``term<TAB>translation`` line each)."""
    check_key(request)
    source, target = pair_of(request, await fields_of(request))
    entries = await asyncio.to_thread(glossary_store(request).dictionary_entries, glossary_id, source, target,
                                      glossary_scope(request))
    text = format_entries(entries, "tsv").removesuffix("\n")  # DeepL's TSV has no newline after the last
    return {"dictionaries": [{"source_lang": to_deepl(source).lower(), "target_lang": to_deepl(target).lower(),
                              "entries": text, "entries_format": "tsv"}]}


@router.patch("/glossaries/{glossary_id}")
async def edit_glossary(request: Request, glossary_id: str):
    """Rename a glossary (``name``) and/or merge one dictionary into it (``dictionaries``: 0 or 1, as DeepL)."""
    settings: Settings = request.app.state.settings
    check_key(request)
    fields = await fields_of(request)
    name = fields.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ApiError(400, "Parameter 'name' must be a non-empty string")
    raw = fields.get("dictionaries") or []
    if not isinstance(raw, list) or len(raw) > 1:
        raise ApiError(400, "Parameter 'dictionaries' takes at most one dictionary per request")
    if name is None and not raw:
        raise ApiError(400, "Send a new 'name', a dictionary in 'dictionaries' to merge, or both")
    merging = [dictionary_of(request, d, "dictionaries[0]") for d in raw]
    store, scope = glossary_store(request), glossary_scope(request)

    def edit() -> GlossaryInfo:
        merge = merging[0].parsed(settings.glossary_max_entries) if merging else None
        return store.edit(glossary_id, name=name, merge=merge, scope=scope, caps=caps_of(settings))

    return describe_glossary(await asyncio.to_thread(edit))


@router.put("/glossaries/{glossary_id}/dictionaries")
async def replace_dictionary(request: Request, glossary_id: str):
    """Replace the entries of one dictionary (or add it, if the glossary has none for the pair)."""
    settings: Settings = request.app.state.settings
    check_key(request)
    dictionary = dictionary_of(request, await fields_of(request), "the dictionary")
    store, scope = glossary_store(request), glossary_scope(request)

    def replace() -> GlossaryInfo:
        return store.edit(glossary_id, replace=dictionary.parsed(settings.glossary_max_entries), scope=scope,
                          caps=caps_of(settings))

    glossary = await asyncio.to_thread(replace)
    replaced = glossary.dictionary(dictionary.source_lang, dictionary.target_lang)
    assert replaced is not None  # the edit wrote it
    return describe_dictionary(replaced)


@router.delete("/glossaries/{glossary_id}/dictionaries", status_code=204)
async def delete_dictionary(request: Request, glossary_id: str):
    check_key(request)
    source, target = pair_of(request, await fields_of(request))
    await asyncio.to_thread(glossary_store(request).delete_dictionary, glossary_id, source, target,
                            glossary_scope(request))
    return Response(status_code=204)


@router.delete("/glossaries/{glossary_id}", status_code=204)
async def delete_glossary(request: Request, glossary_id: str):
    """Delete one of the caller's own glossaries; the operator's are 403, another key's 404."""
    check_key(request)
    deleted = await asyncio.to_thread(glossary_store(request).delete, glossary_id, glossary_scope(request))
    if not deleted:
        raise ApiError(404, f"Glossary not found: {glossary_id}")
    return Response(status_code=204)


# --- style rules ----------------------------------------------------------------------------------
def style_rules_of(request: Request) -> StyleRuleStore:
    return runtime_of(request).style_rules


def describe_instruction(instruction: CustomInstruction) -> dict:
    out = {"id": instruction.id, "label": instruction.label, "prompt": instruction.prompt}
    if instruction.source_language:
        out["source_language"] = to_deepl(instruction.source_language).lower()
    return out


def describe_style_rule(rule: StyleRule, detailed: bool = True) -> dict:
    """DeepL's style rule list: its rules and instructions only when ``detailed`` (a listing asks)."""
    out: dict[str, Any] = {"style_id": rule.id, "name": rule.name, "creation_time": creation_time(rule.created),
                           "updated_time": creation_time(rule.updated), "language": to_deepl(rule.language).lower(),
                           "version": rule.version}
    if detailed:
        out["configured_rules"] = rule.configured_rules
        out["custom_instructions"] = [describe_instruction(i) for i in rule.custom_instructions]
    return out


def instruction_of(request: Request, raw: Any, where: str = "the custom instruction") -> NewInstruction:
    if not isinstance(raw, dict):
        raise ApiError(400, f"{where} must be an object with label, prompt and optional source_language")
    source = text_field(raw, "source_language")
    code = to_mtserve(source, "source_language", runtime_of(request).model.languages) if source else None
    return NewInstruction(raw.get("label"), raw.get("prompt"), code)  # type: ignore[arg-type]  # the store checks them


def page_of(fields: dict[str, Any], items: list, most: int) -> list:
    """DeepL's ``page`` (from 0) and ``page_size`` (at most ``most``); without them, every item."""
    if fields.get("page") is None and fields.get("page_size") is None:
        return items
    page, size = int_field(fields, "page", 0), int_field(fields, "page_size", most)
    if page < 0 or not 1 <= size <= most:
        raise ApiError(400, f"'page' must be 0 or more and 'page_size' between 1 and {most}")
    return items[page * size:(page + 1) * size]


@router.get("/style_rules")
async def list_style_rules(request: Request):
    """The caller's style rules (``detailed=true``: with their rules and instructions)."""
    check_key(request)
    fields = await fields_of(request)
    detailed = str(fields.get("detailed", "false")).lower() in ("true", "1")
    found = await asyncio.to_thread(style_rules_of(request).list, glossary_scope(request))
    return {"style_rules": [describe_style_rule(r, detailed) for r in page_of(fields, found, 100)]}


@router.post("/style_rules")
async def create_style_rule(request: Request):
    """A rule list for one target ``language``, with ``configured_rules`` and ``custom_instructions``."""
    settings: Settings = request.app.state.settings
    check_key(request)
    fields = await fields_of(request)
    language = text_field(fields, "language")
    if not language:
        raise ApiError(400, "Missing parameter 'language'")
    target = to_mtserve(language, "language", runtime_of(request).model.languages)
    raw = fields.get("custom_instructions") or []
    if not isinstance(raw, list):
        raise ApiError(400, "Parameter 'custom_instructions' must be a list of {label, prompt, source_language}")
    instructions = [instruction_of(request, r, f"custom_instructions[{i}]") for i, r in enumerate(raw)]
    rule = await asyncio.to_thread(style_rules_of(request).create, fields.get("name"), target,
                                   fields.get("configured_rules"), instructions, scope=glossary_scope(request),
                                   max_owned=settings.style_rules_per_key)
    return describe_style_rule(rule)


@router.get("/style_rules/{style_id}")
async def get_style_rule(request: Request, style_id: str):
    check_key(request)
    return describe_style_rule(await asyncio.to_thread(style_rules_of(request).get, style_id,
                                                       glossary_scope(request)))


@router.patch("/style_rules/{style_id}")
async def rename_style_rule(request: Request, style_id: str):
    check_key(request)
    fields = await fields_of(request)
    rule = await asyncio.to_thread(style_rules_of(request).rename, style_id, fields.get("name"),
                                   glossary_scope(request))
    return describe_style_rule(rule)


@router.put("/style_rules/{style_id}/configured_rules")
async def set_configured_rules(request: Request, style_id: str):
    """Replace the configured rules (the body is the rules object); kept and given back, applied to nothing."""
    check_key(request)
    rules = await fields_of(request)
    rule = await asyncio.to_thread(style_rules_of(request).set_configured_rules, style_id, rules,
                                   glossary_scope(request))
    return describe_style_rule(rule)


@router.delete("/style_rules/{style_id}", status_code=204)
async def delete_style_rule(request: Request, style_id: str):
    check_key(request)
    await asyncio.to_thread(style_rules_of(request).delete, style_id, glossary_scope(request))
    return Response(status_code=204)


@router.post("/style_rules/{style_id}/custom_instructions")
async def add_custom_instruction(request: Request, style_id: str):
    check_key(request)
    instruction = instruction_of(request, await fields_of(request))
    added = await asyncio.to_thread(style_rules_of(request).add_instruction, style_id, instruction,
                                    glossary_scope(request))
    return describe_instruction(added)


@router.get("/style_rules/{style_id}/custom_instructions/{instruction_id}")
async def get_custom_instruction(request: Request, style_id: str, instruction_id: str):
    check_key(request)
    found = await asyncio.to_thread(style_rules_of(request).instruction, style_id, instruction_id,
                                    glossary_scope(request))
    return describe_instruction(found)


@router.put("/style_rules/{style_id}/custom_instructions/{instruction_id}")
async def update_custom_instruction(request: Request, style_id: str, instruction_id: str):
    check_key(request)
    instruction = instruction_of(request, await fields_of(request))
    updated = await asyncio.to_thread(style_rules_of(request).update_instruction, style_id, instruction_id,
                                      instruction, glossary_scope(request))
    return describe_instruction(updated)


@router.delete("/style_rules/{style_id}/custom_instructions/{instruction_id}", status_code=204)
async def delete_custom_instruction(request: Request, style_id: str, instruction_id: str):
    check_key(request)
    await asyncio.to_thread(style_rules_of(request).delete_instruction, style_id, instruction_id,
                            glossary_scope(request))
    return Response(status_code=204)


# --- translation memories -------------------------------------------------------------------------
def describe_memory(view: MemoryView) -> dict:
    source = to_deepl(view.source_lang).lower()
    return {"translation_memory_id": view.id, "name": f"mtserve translation memory ({source})",
            "source_language": source, "target_languages": [to_deepl(t).lower() for t in view.target_langs],
            "segment_count": view.entries}


@router.get("/translation_memories")
async def list_translation_memories(request: Request):
    """The caller's translation memory as DeepL lists its memories: one per source language, each the
    entries the caller's translations from it use (its own and the operator's). A view of mtserve's
    TM (``/tm``), not a second store; its id goes in /v2/translate's ``translation_memory_id``."""
    check_key(request)
    fields = await fields_of(request)
    views = await asyncio.to_thread(runtime_of(request).memory_access.views, key_id_of(request))
    return {"translation_memories": [describe_memory(v) for v in page_of(fields, views, 25)],
            "total_count": len(views)}
