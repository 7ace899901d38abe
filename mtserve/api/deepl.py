"""DeepL API v2 compatibility (``/v2/...``), so DeepL clients work by changing one URL.

Same service layer as the LibreTranslate routes: scheduler, cache, limits,
keys (``Authorization: DeepL-Auth-Key <key>``), metrics. What differs is the
shape: DeepL language codes (``EN-US``, ``ZH-HANS``...), ``{"translations": [...]}``
responses, ``{"message": ...}`` errors, and the glossaries API backed by
mtserve's glossary store.

``context`` (text that informs the translation; neither translated nor billed),
``custom_instructions`` (up to 10 of up to 300 characters, DeepL's bounds) and
``formality`` reach an LLM engine's prompt (``mtserve.engines.prompts``), and
key the cache; ``style_id`` names a stored style rule (``/v3/style_rules``) whose custom
instructions go before the request's own; ``translation_memory_id`` (one of the caller's views
of the TM, ``/v3/translation_memories``) and ``translation_memory_threshold`` (the least similarity
of the TM entries the engine is shown as examples) choose how the TM, which serves every request,
serves this one. ``supports_formality`` in ``/v2/languages`` is true where the
engine is prompted and the target is one DeepL offers formality for (German
Sie/du, French vous/tu...; ``FORMALITY_TARGETS``); elsewhere, and always on a
seq2seq engine, which has no prompt, ``formality=more|less`` is a 400 and
``prefer_more|prefer_less`` fall back to the default, as DeepL answers. A seq2seq engine ignores
``context`` and ``custom_instructions``.
``split_sentences`` (``0``, ``1`` or ``nonewlines``, as DeepL checks it) and
``preserve_formatting`` are accepted: mtserve always splits at sentences and
always keeps whitespace. ``model_type`` is checked against DeepL's values, and
each translation then says in ``model_type_used`` which of DeepL's two kinds of
model served it: mtserve has one model, an LLM engine's reported as
quality_optimized and a seq2seq engine's as latency_optimized, whatever was asked. ``tag_handling=xml|html``
translates each sentence whole with its inline tags; ``ignore_tags``,
``non_splitting_tags``, ``splitting_tags`` and ``outline_detection`` follow
DeepL's meaning (``mtserve.text.html.TagHandling``).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response

from mtserve.api.calls import run_call, service_of
from mtserve.api.errors import ApiError
from mtserve.api.fields import guidance_of, json_type, read_fields, shown, text_field
from mtserve.api.keys import admit, key_id_of, runtime_of
from mtserve.service.glossary import (
    GlossaryScope,
    UnknownGlossary,
    format_entries,
    parse_entries,
    scope_for,
)
from mtserve.service.glossary_store import GlossaryInfo, GlossaryStore
from mtserve.service.request import TranslationRequest
from mtserve.service.translator import follows_formality
from mtserve.settings import Settings
from mtserve.text.html import TagHandling
from mtserve.text.languages import language_name

router = APIRouter(prefix="/v2", tags=["DeepL API v2"])

# DeepL code -> mtserve code. Regional variants map onto the one model language.
DEEPL_TO_MTSERVE = {"EN-US": "en", "EN-GB": "en", "ZH-HANS": "zh", "ZH-HANT": "zt",
                    "PT-PT": "pt", "PT-BR": "pt"}
TARGET_VARIANTS = {"en": ["EN-US", "EN-GB"], "zh": ["ZH", "ZH-HANS"], "zt": ["ZH-HANT"],
                   "pt": ["PT-PT", "PT-BR"]}
FORMALITY_KNOWN = {"default", "more", "less", "prefer_more", "prefer_less"}
SPLIT_SENTENCES = ("0", "1", "nonewlines")
MODEL_TYPES = ("quality_optimized", "prefer_quality_optimized", "latency_optimized")


def formality_of(value: Any) -> str:
    """DeepL's ``formality``, checked as a value; the service settles it against the target
    (``more``/``less`` into a target without formality is refused, ``prefer_*`` falls back)."""
    if value is not None and not isinstance(value, str):
        raise ApiError(400, f"'formality' must be a string, not {json_type(value)}, e.g. prefer_more")
    formality = (value or "default").strip().lower() or "default"
    if formality not in FORMALITY_KNOWN:
        raise ApiError(400, f"Value for 'formality' not supported: {shown(formality)}")
    return formality


def check_split_sentences(value: Any) -> None:
    """DeepL's ``split_sentences``, checked as DeepL checks it; mtserve splits at sentences whatever it is."""
    if value is None:
        return
    spelled = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else None
    if spelled is None or spelled.strip().lower() not in SPLIT_SENTENCES:
        raise ApiError(400, f"Value for 'split_sentences' not supported: {shown(value)}; use 0, 1 or nonewlines")


def model_type_used(fields: dict[str, Any], prompted: bool) -> str | None:
    """What ``model_type_used`` says, None where the request named no ``model_type``.

    DeepL serves any model_type on any pair and says which kind of model served it. mtserve has
    one model: an LLM is what DeepL calls quality_optimized, a seq2seq model latency_optimized.
    """
    requested = text_field(fields, "model_type")
    if requested is None:
        return None
    if requested.strip().lower() not in MODEL_TYPES:
        raise ApiError(400, f"Value for 'model_type' not supported: {shown(requested)}; "
                            f"use one of {', '.join(MODEL_TYPES)}")
    return "quality_optimized" if prompted else "latency_optimized"


def to_mtserve(code: str, role: str, supported: tuple[str, ...]) -> str:
    upper = code.strip().upper()
    mapped = DEEPL_TO_MTSERVE.get(upper, upper.lower())
    if mapped not in supported:
        raise ApiError(400, f"Value for '{role}' not supported: {shown(code)}. See GET /v2/languages.")
    return mapped


def to_deepl(code: str) -> str:
    return "ZH" if code == "zt" else code.upper()


def creation_time(created: str) -> str:
    """A stored ISO time as DeepL writes it; its clients parse it with fractional seconds."""
    return datetime.fromisoformat(created).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def describe(glossary: GlossaryInfo) -> dict:
    """DeepL's v2 glossary shape: one language pair, a glossary's first dictionary (v2 knows no others)."""
    first = glossary.dictionaries[0] if glossary.dictionaries else None
    return {"glossary_id": glossary.id, "name": glossary.name,
            "source_lang": to_deepl(glossary.source_lang).lower(),
            "target_lang": to_deepl(glossary.target_lang).lower(),
            "creation_time": creation_time(glossary.created),
            "entry_count": first.entry_count if first else 0, "ready": True}


def glossary_store(request: Request) -> GlossaryStore:
    """The runtime's store: the same one `mtserve glossary` and /translate's glossary_id use."""
    return runtime_of(request).glossaries


def glossary_scope(request: Request) -> GlossaryScope:
    """What this caller may do with stored glossaries: by its API key, once admit() has run."""
    return scope_for(key_id_of(request), keys_on=request.app.state.settings.api_keys)


async def fields_of(request: Request) -> dict[str, Any]:
    """JSON or form data, with query parameters under form fields; repeated fields become lists."""
    return await read_fields(request)


def tag_list(fields: dict[str, Any], name: str) -> frozenset[str]:
    """A DeepL tag list: comma-separated names, or the field repeated."""
    value = fields.get(name) or []
    values = value if isinstance(value, list) else [value]
    if not all(isinstance(v, str) for v in values):
        raise ApiError(400, f"Value for '{name}' not supported: send comma-separated tag names")
    names = {part.strip().lower() for v in values for part in v.split(",") if part.strip()}
    bad = sorted(n for n in names if not all(c.isalnum() or c in "-_.:" for c in n))
    if bad:
        raise ApiError(400, f"Value for '{name}' not supported: {bad[0]!r} is not a tag name")
    return frozenset(names)


def tag_handling_of(fields: dict[str, Any], kind: str) -> TagHandling:
    """DeepL's tag parameters as the service takes them."""
    outline = fields.get("outline_detection", True)
    spelled = str(outline).strip().lower() if isinstance(outline, (str, bool, int)) else None
    if spelled not in ("1", "0", "true", "false"):
        raise ApiError(400, "Value for 'outline_detection' not supported: use 0 or 1")
    return TagHandling(kind, ignore_tags=tag_list(fields, "ignore_tags"),
                       non_splitting_tags=tag_list(fields, "non_splitting_tags"),
                       splitting_tags=tag_list(fields, "splitting_tags"),
                       outline_detection=spelled in ("1", "true"))


async def memory_threshold_of(request: Request, fields: dict[str, Any], source: str) -> float | None:
    """DeepL's ``translation_memory_id`` checked against the caller's views of the TM (GET
    /v3/translation_memories), and its ``translation_memory_threshold`` (0-100): the least similarity of
    the entries the engine is shown as examples, None for the server's own. mtserve's TM serves every
    request; the id says which part a client chose, and must be the caller's own and from its source."""
    memory_id = text_field(fields, "translation_memory_id")
    threshold = fields.get("translation_memory_threshold")
    if not memory_id:
        if threshold is not None:
            raise ApiError(400, "'translation_memory_threshold' requires 'translation_memory_id'")
        return None
    view = await asyncio.to_thread(runtime_of(request).memory_access.view, key_id_of(request), memory_id)
    if source not in ("auto", view.source_lang):
        raise ApiError(400, f"Translation memory {memory_id} holds {to_deepl(view.source_lang)} sources, "
                            f"but 'source_lang' is {to_deepl(source)}")
    if threshold is None:
        return None
    spelled = str(threshold) if isinstance(threshold, (int, str)) and not isinstance(threshold, bool) else ""
    if not spelled.strip().isdigit() or not 0 <= int(spelled) <= 100:
        raise ApiError(400, f"Value for 'translation_memory_threshold' not supported: {shown(threshold)}; "
                            "use a whole number from 0 to 100")
    return float(spelled)


def check_key(request: Request) -> None:
    admit(request, None)  # the key travels in Authorization: DeepL-Auth-Key


# --- translate ---------------------------------------------------------------------------
@router.post("/translate")
async def translate(request: Request):
    """DeepL's /v2/translate: ``text`` (one or many), ``target_lang``, optional ``source_lang``."""
    settings: Settings = request.app.state.settings
    check_key(request)  # the key is in a header: checked before the body is read
    fields = await fields_of(request)
    texts = fields.get("text")
    if isinstance(texts, str):
        texts = [texts]
    if not texts or not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "Parameter 'text' not specified: send one or more texts")
    target_lang = text_field(fields, "target_lang")
    if not target_lang:
        raise ApiError(400, "Value for 'target_lang' not supported: send a target language, e.g. EN-US")
    if len(texts) > settings.batch_limit:
        raise ApiError(413, f"Too many texts: {len(texts)}; the limit is {settings.batch_limit}")
    chars = sum(len(t) for t in texts)
    if chars > settings.char_limit:
        raise ApiError(413, f"Request too large: {chars} characters; the limit is {settings.char_limit}")
    service = service_of(request)
    supported = service.languages
    target = to_mtserve(target_lang, "target_lang", supported)
    source = "auto"
    if source_lang := text_field(fields, "source_lang"):
        source = to_mtserve(source_lang, "source_lang", supported)
    guidance = guidance_of(settings, fields.get("context"), fields.get("custom_instructions"),
                           formality_of(fields.get("formality")))
    tag_handling = text_field(fields, "tag_handling")
    if tag_handling not in (None, "", "html", "xml"):
        raise ApiError(400, "Value for 'tag_handling' not supported: use html or xml")
    fmt = tag_handling if tag_handling in ("html", "xml") else "text"
    tags = tag_handling_of(fields, fmt) if fmt != "text" else None
    glossary_id = text_field(fields, "glossary_id") or None
    style_id = text_field(fields, "style_id") or None
    if glossary_id and source == "auto":
        raise ApiError(400, "Use of a glossary requires the 'source_lang' parameter to be specified")
    check_split_sentences(fields.get("split_sentences"))
    served_by = model_type_used(fields, runtime_of(request).model.prompted)
    threshold = await memory_threshold_of(request, fields, source)
    results, _ = await run_call(request, TranslationRequest(
        texts, target, source=source, format=fmt, tags=tags, glossary_id=glossary_id, style_id=style_id,
        guidance=guidance, memory_threshold=threshold))
    runtime_of(request).usage_chars += chars
    translations = [{"detected_source_language": to_deepl(r.source), "text": r.text, "billed_characters": len(t)}
                    for r, t in zip(results, texts)]
    if served_by is not None:
        for translation in translations:
            translation["model_type_used"] = served_by
    return {"translations": translations}


# --- languages and usage -----------------------------------------------------------------
@router.get("/languages", operation_id="deepl_languages_get")
@router.post("/languages", operation_id="deepl_languages_post")
async def languages(request: Request):
    """Source or target languages in DeepL's shape."""
    check_key(request)  # the key is in a header: checked before the body is read
    fields = await fields_of(request)
    kind = (text_field(fields, "type") or "source").lower()
    if kind not in ("source", "target"):
        raise ApiError(400, "Value for 'type' not supported: use source or target")
    model = runtime_of(request).model
    codes = model.languages
    if kind == "source":
        return [{"language": to_deepl(c), "name": language_name(c)} for c in codes if c != "zt"]
    out = []
    for code in codes:
        formality = follows_formality(model, code)  # told in the prompt; a seq2seq model has none
        for variant in TARGET_VARIANTS.get(code, [code.upper()]):
            out.append({"language": variant, "name": language_name(code), "supports_formality": formality})
    return out


@router.get("/usage", operation_id="deepl_usage_get")
@router.post("/usage", operation_id="deepl_usage_post")
async def usage(request: Request):
    """The caller's key: characters used this period and its quota. Without a key, or with no
    quota on it: the characters translated through /v2 since start, and no real limit."""
    check_key(request)
    runtime = runtime_of(request)
    used = runtime.access.usage(key_id_of(request))
    if used is not None and used[1]:
        return {"character_count": used[0], "character_limit": used[1]}
    return {"character_count": runtime.usage_chars if used is None else used[0],
            "character_limit": 1_000_000_000_000}


# --- glossaries ---------------------------------------------------------------------------
@router.get("/glossary-language-pairs")
async def glossary_language_pairs(request: Request):
    check_key(request)
    codes = [c for c in runtime_of(request).model.languages if c != "zt"]
    return {"supported_languages": [{"source_lang": s, "target_lang": t}
                                    for s in codes for t in codes if s != t]}


@router.post("/glossaries", status_code=201)
async def create_glossary(request: Request):
    """A glossary owned by the caller's API key (the operator's while keys are off); capped in count and size."""
    settings: Settings = request.app.state.settings
    check_key(request)  # the key is in a header: checked before the body is read
    fields = await fields_of(request)
    supported = runtime_of(request).model.languages
    for name in ("name", "source_lang", "target_lang", "entries"):
        if not fields.get(name) or not isinstance(fields[name], str):
            raise ApiError(400, f"Missing parameter '{name}'" if not fields.get(name)
                           else f"Parameter '{name}' must be a string")
    source = to_mtserve(fields["source_lang"], "source_lang", supported)
    target = to_mtserve(fields["target_lang"], "target_lang", supported)
    fmt = (text_field(fields, "entries_format") or "tsv").lower()
    scope = glossary_scope(request)
    store = glossary_store(request)

    def create():
        entries = parse_entries(fields["entries"], fmt, max_entries=settings.glossary_max_entries)
        return store.create(fields["name"], source, target, entries, scope=scope,
                            max_entries=settings.glossary_max_entries, max_owned=settings.glossaries_per_key,
                            max_bytes=settings.glossary_bytes_per_key)

    scope.owner_of_new()  # a caller without a key is refused before its entries are parsed
    glossary = await asyncio.to_thread(create)
    return JSONResponse(describe(glossary), status_code=201)


@router.get("/glossaries")
async def list_glossaries(request: Request):
    """The caller's glossaries and the operator's: metadata and counts only, read in a thread."""
    check_key(request)
    found = await asyncio.to_thread(glossary_store(request).list, glossary_scope(request))
    return {"glossaries": [describe(g) for g in found]}


async def _info(request: Request, glossary_id: str) -> GlossaryInfo:
    """A glossary's metadata; another key's glossary is not found either (UnknownGlossary: 404)."""
    return await asyncio.to_thread(glossary_store(request).info, glossary_id, glossary_scope(request))


@router.get("/glossaries/{glossary_id}")
async def get_glossary(request: Request, glossary_id: str):
    check_key(request)
    return describe(await _info(request, glossary_id))


@router.get("/glossaries/{glossary_id}/entries")
async def glossary_entries(request: Request, glossary_id: str):
    check_key(request)
    glossary = await asyncio.to_thread(glossary_store(request).get, glossary_id, glossary_scope(request))
    text = await asyncio.to_thread(format_entries, glossary.entries, "tsv")
    return PlainTextResponse(text, media_type="text/tab-separated-values")


@router.delete("/glossaries/{glossary_id}", status_code=204)
async def delete_glossary(request: Request, glossary_id: str):
    """Delete one of the caller's own glossaries; the operator's are 403, another key's 404."""
    check_key(request)
    deleted = await asyncio.to_thread(glossary_store(request).delete, glossary_id, glossary_scope(request))
    if not deleted:
        raise UnknownGlossary(f"no glossary with id {glossary_id!r}", glossary_id)
    return Response(status_code=204)
