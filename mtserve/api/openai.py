"""OpenAI chat-completions compatibility (``/v1/...``) for LLM-era translation tools.

This is a translation endpoint, not a chatbot: the last user message is the
text to translate, and everything else only says into which language. The
target comes from, in order:

1. an explicit ``target_lang`` field (an extension; a code like ``en`` or a name like ``English``);
2. the model alias ``mtserve-<source>-<target>``, e.g. ``mtserve-zh-en`` or ``mtserve-auto-en``;
3. the system prompt: "Translate into English", "translate ... to German", "翻译成英文"
   (looked for in its first 20,000 characters).

The source is ``source_lang``, the alias's first part, or detected. A request
that names no target is refused with a 400 that says how to name one. It goes
through the same service as the other APIs (scheduler, cache, limits, keys).
Streaming sends one chunk per translated sentence, already cleaned, so the
streamed text equals the final text.

A ``context`` field (an extension, DeepL's field) informs the translation and is
neither translated nor billed. A message that holds several strings between
separator lines (``==PART==``, ``---``, ``### 3 ###``: a translation tool's
batch, ``mtserve.text.batch``) is translated block by block, one text each, and
its separator lines come back unchanged, in number and order; streamed, it
comes as one chunk per block once all are done.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from mtserve.api.calls import open_stream, relay, run_call, service_of
from mtserve.api.errors import ApiError
from mtserve.api.fields import flag_field, guidance_of, int_field, json_type, object_field, read_json, shown, text_field
from mtserve.api.keys import admit, authorize, runtime_of
from mtserve.service.request import Done, Guidance, SegmentDone, StreamEvent, TranslationRequest, Usage
from mtserve.settings import Settings
from mtserve.text.batch import Batch, split_batch
from mtserve.text.languages import CHINESE_NAMES, LANGUAGES

router = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])

ALIAS = re.compile(r"^mtserve-(?P<source>[a-z]{2,4}|auto)-(?P<target>[a-z]{2,4})$")
EXTRA_CHINESE_NAMES = {"英文": "en", "中文": "zh", "汉语": "zh", "日文": "ja", "韩文": "ko", "德文": "de",
                       "法文": "fr", "西班牙文": "es", "俄文": "ru", "简体中文": "zh"}
NAME_TO_CODE = {name.lower(): code for code, name in LANGUAGES.items()}
NAME_TO_CODE.update({name: code for code, name in CHINESE_NAMES.items()})
NAME_TO_CODE.update(EXTRA_CHINESE_NAMES)
_names = "|".join(sorted((re.escape(n) for n in NAME_TO_CODE), key=len, reverse=True))
# "Translate into English", "translate ... to German": the first language named after in/into/to,
# anywhere after the first word that starts with "translat". "翻译成英文", "译为德文": right after.
# Three linear scans rather than one pattern with ``translat\w*.*?\b(in|into|to)``: that lazy gap
# rescans the rest of the prompt from every "translat", which is quadratic ("translate " * 8000
# took seconds on the event loop). They read the prompt's first PROMPT_SCAN_CHARS characters only,
# so even a 1 MB prompt costs milliseconds: an instruction naming the target comes early.
PROMPT_SCAN_CHARS = 20_000
TRANSLATE_WORD = re.compile(r"translat\w*\b", re.IGNORECASE)
TARGET_AFTER_PREPOSITION = re.compile(rf"\b(?:in|into|to)\s++(?P<name>{_names})\b", re.IGNORECASE)
TARGET_AFTER_CHINESE_VERB = re.compile(rf"(?:翻译|译)成?为?(?P<name>{_names})", re.IGNORECASE)
HOW_TO_NAME_A_TARGET = (
    "this endpoint translates the last user message; name the target language with the model "
    "'mtserve-<source>-<target>' (e.g. mtserve-zh-en), a 'target_lang' field, or a system prompt such "
    "as 'Translate into English'"
)


def language_code(value: str, role: str) -> str:
    code = value.strip()
    if code.lower() in LANGUAGES:
        return code.lower()
    if code.lower() in NAME_TO_CODE:
        return NAME_TO_CODE[code.lower()]
    if code in NAME_TO_CODE:
        return NAME_TO_CODE[code]
    raise ApiError(400, f"{role} {shown(value)} is not a language code or name mtserve knows")


def message_text(message: dict, where: str) -> str:
    """The text of a message: its content string, or its text parts joined; anything else is a 400."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise ApiError(400, f"{where}.content must be a string or a list of content parts, "
                            f"not {json_type(content)}")
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, dict):
            raise ApiError(400, f"{where}.content[{i}] must be an object such as "
                                f'{{"type": "text", "text": "..."}}, not {json_type(part)}')
        if part.get("type") == "text":  # other parts (images, audio) carry nothing to translate
            text = part.get("text")
            if not isinstance(text, str):
                raise ApiError(400, f"{where}.content[{i}].text must be a string, not {json_type(text)}")
            texts.append(text)
    return "".join(texts)


def target_in_prompt(system: str) -> str | None:
    r"""The target language a system prompt names, as its name there, or None.

    Like one regex search for ``translat\w*\b.*?\b(in|into|to)\s+NAME\b`` or
    ``(翻译|译)成?为?NAME``, whichever starts first, but linear, and in the first
    ``PROMPT_SCAN_CHARS`` characters.
    """
    end = min(len(system), PROMPT_SCAN_CHARS)
    verb = TRANSLATE_WORD.search(system, 0, end)
    english = TARGET_AFTER_PREPOSITION.search(system, verb.end(), end) if verb else None
    chinese = TARGET_AFTER_CHINESE_VERB.search(system, 0, end)
    if english and verb and (chinese is None or verb.start() < chinese.start()):
        return english["name"]
    return chinese["name"] if chinese else None


def resolve_languages(body: dict, system: str) -> tuple[str, str]:
    source_lang = text_field(body, "source_lang")
    source = language_code(source_lang, "source_lang") if source_lang else None
    if target_lang := text_field(body, "target_lang"):
        return source or "auto", language_code(target_lang, "target_lang")
    alias = ALIAS.match(text_field(body, "model") or "")
    if alias:
        return source or alias["source"], alias["target"]
    name = target_in_prompt(system)
    if name:
        return source or "auto", NAME_TO_CODE.get(name.lower(), NAME_TO_CODE.get(name))
    raise ApiError(400, HOW_TO_NAME_A_TARGET)


def parse_chat(body: Any, settings: Settings) -> tuple[str, str, str]:
    """(text, source, target) from a chat request, or a 400 saying what is wrong."""
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object with 'model' and 'messages'")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise ApiError(400, "'messages' must be a non-empty list of {role, content} objects")
    if body.get("tools") or body.get("functions"):
        raise ApiError(400, "tools and functions are not supported: " + HOW_TO_NAME_A_TARGET)
    if int_field(body, "n", 1) != 1:
        raise ApiError(400, "'n' must be 1")
    roles = [text_field(m, "role", label=f"messages[{i}].role") for i, m in enumerate(messages)]
    users = [i for i, role in enumerate(roles) if role == "user"]
    if not users:
        raise ApiError(400, "no user message: the last user message is the text to translate")
    text = message_text(messages[users[-1]], f"messages[{users[-1]}]")
    if not text.strip():
        raise ApiError(400, "the last user message is empty; send the text to translate")
    if len(text) > settings.char_limit:
        raise ApiError(413, f"the text has {len(text)} characters; the limit is {settings.char_limit}")
    system = "\n".join(message_text(m, f"messages[{i}]") for i, (m, role) in enumerate(zip(messages, roles))
                       if role in ("system", "developer"))
    source, target = resolve_languages(body, system)
    return text, source, target


@router.get("/models")
async def list_models(request: Request):
    """The model and its translation aliases (mtserve-<source>-<target>)."""
    authorize(request)
    runtime = runtime_of(request)
    created = int(runtime.started_at)
    codes = runtime.model.languages
    ids = [runtime.model.model, "mtserve"] + [
        f"mtserve-{s}-{t}" for s in ("auto", *codes) for t in codes
        if s != t and ("en" in (s, t) or "zh" in (s, t) or s == "auto")
    ]
    return {"object": "list",
            "data": [{"id": i, "object": "model", "created": created, "owned_by": "mtserve"} for i in ids]}


@router.post("/chat/completions")
async def chat_completions(request: Request):
    """Translate the last user message; see the module notes for how the target is chosen."""
    settings: Settings = request.app.state.settings
    admit(request, None)  # the key is in a header: checked before the body is read
    body = await read_json(request)
    text, source, target = parse_chat(body, settings)
    guidance = guidance_of(settings, body.get("context"))
    stream = flag_field(body, "stream")
    stream_options = object_field(body, "stream_options") or {}
    service_of(request)  # a 503 while the model loads, before anything else
    model = text_field(body, "model") or runtime_of(request).model.model
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())
    include_usage = flag_field(stream_options, "include_usage")
    batch = split_batch(text)
    if batch is not None:
        parts, usage = await _translate_batch(request, batch, source, target, guidance)
        if stream:
            return _stream_pieces(parts, model, completion_id, created, usage, include_usage)
        translation = "".join(parts)
    elif stream:
        return await _stream(request, TranslationRequest.of(text, target, source=source, guidance=guidance),
                             model, completion_id, created, include_usage)
    else:
        results, usage = await run_call(request, TranslationRequest.of(text, target, source=source,
                                                                       guidance=guidance))
        translation = results[0].text
    request.state.chars_out = len(translation)
    return {
        "id": completion_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": translation},
                     "finish_reason": "stop"}],
        "usage": usage_json(usage),
    }


async def _translate_batch(request: Request, batch: Batch, source: str, target: str,
                           guidance: Guidance) -> tuple[list[str], Usage]:
    """Each block of a batch translated as a text of its own, in one request; blank blocks as they
    are. The parts of the answer, separators unchanged. The source, if auto, is detected once over
    all the blocks: a short block alone (a UI label) says little of its language."""
    blocks = batch.blocks
    wanted = [i for i, block in enumerate(blocks) if block.strip()]
    results, usage = await run_call(request, TranslationRequest(
        [blocks[i] for i in wanted], target, source=source, guidance=guidance, one_source=True))
    translated = list(blocks)
    for i, result in zip(wanted, results):
        translated[i] = result.text
    parts = list(batch.parts)
    parts[0::2] = translated
    return parts, usage


def _stream_pieces(parts: list[str], model: str, completion_id: str, created: int, usage: Usage,
                   include_usage: bool) -> StreamingResponse:
    """A translated batch as a stream: one chunk per block or separator, then the stop."""

    def chunk(delta: dict, finish: str | None = None) -> str:
        payload = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    def sse():
        yield chunk({"role": "assistant", "content": ""})
        for part in parts:
            if part:
                yield chunk({"content": part})
        yield chunk({}, "stop")
        if include_usage:
            payload = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                       "model": model, "choices": [], "usage": usage_json(usage)}
            yield f"data: {json.dumps(payload)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(sse(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def usage_json(usage: Usage) -> dict:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.generated_tokens,
            "total_tokens": usage.prompt_tokens + usage.generated_tokens}


async def _stream(request: Request, translation: TranslationRequest, model: str, completion_id: str,
                  created: int, include_usage: bool) -> StreamingResponse:
    stream = await open_stream(request, translation)  # errors surface before the 200
    usage = stream.usage

    def chunk(delta: dict, finish: str | None = None) -> str:
        payload = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"

    streamed = [""]  # what the chunks have said so far

    def render(event: StreamEvent) -> list[str]:
        if isinstance(event, SegmentDone):  # one chunk per translated, cleaned sentence
            piece = event.gap + event.text
            streamed[0] += piece
            return [chunk({"content": piece})]
        if not isinstance(event, Done):
            return []
        final, out = event.translation.text, []
        if final.startswith(streamed[0]) and len(final) > len(streamed[0]):
            out.append(chunk({"content": final[len(streamed[0]):]}))  # trailing whitespace
        out.append(chunk({}, "stop"))
        if include_usage:
            payload = {"id": completion_id, "object": "chat.completion.chunk", "created": created,
                       "model": model, "choices": [], "usage": usage_json(usage)}
            out.append(f"data: {json.dumps(payload)}\n\n")
        return out + ["data: [DONE]\n\n"]

    def failed(message: str) -> str:
        return f"data: {json.dumps({'error': {'message': message, 'type': 'server_error'}})}\n\n"

    async def sse():
        yield chunk({"role": "assistant", "content": ""})
        async for item in relay(request, stream, render, failed):
            yield item

    return StreamingResponse(sse(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
