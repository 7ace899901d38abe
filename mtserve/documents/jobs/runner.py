"""Translate a parsed document through the shared translation service.

Segments go to ``TranslationService.translate`` in document order, one chunk
at a time, at BACKGROUND priority: the scheduler runs them only when no
interactive request waits, so a long document never holds up the API or the
WebUI. Every segment goes through the same cache as API requests (a segment
repeated inside a chunk is sent once; one repeated later is a cache hit) and
the same glossary (the server's, plus the document's own), and the same guidance: the
request's context, else the format's own (``registry.default_context``: a
catalog's strings are UI strings, subtitles are a video's), with its
instructions and formality. Chunks make
progress reportable and cancellation prompt: cancelling the task closes the
chunk's scheduler ticket, which stops its engine work. Within a chunk every
segment is submitted at once, so all engine slots stay busy.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from typing import Callable

from mtserve.documents.formats.base import Document, Output, keep_edges, protected_split
from mtserve.documents.formats.registry import default_context
from mtserve.service.request import NO_GUIDANCE, Guidance, Translation, TranslationRequest, Usage
from mtserve.service.scheduler import DeadlineExceeded, Priority, QueueFull
from mtserve.service.translator import TranslationService
from mtserve.text.detect import Detection
from mtserve.text.punctuation import has_words

log = logging.getLogger("mtserve.documents.runner")  # the name its log lines have always carried

DEADLINE_RETRIES = 3  # a background chunk may wait out busy spells; after this many misses the job fails
QUEUE_FULL_WAIT_MAX_S = 5.0
ProgressCallback = Callable[[int, int], None]

@dataclass
class DocumentResult:
    output: Output
    source: str
    detected: Detection | None
    notes: list[str] = field(default_factory=list)


async def translate_document(
    service: TranslationService,
    document: Document,
    source: str,
    target: str,
    *,
    chunk_size: int = 8,
    glossary: dict[str, str] | None = None,
    guidance: Guidance | None = None,
    key_id: str | None = None,
    on_progress: ProgressCallback | None = None,
) -> DocumentResult:
    """Translate every segment and render the file. Cancel the task to stop it.

    ``guidance`` is the request's; without a context of its own, the format's default context applies.
    ``key_id`` is the API key the document belongs to: its own translation-memory entries serve it.
    """
    guidance = guidance or Guidance()
    if not guidance.context.strip():
        guidance = replace(guidance, context=default_context(document.format))
    source, detected = service.resolve_source(document.sample(), source, target)
    service.check_pair(source, target)
    document.check_target(target)
    notes = list(document.notes)
    segments = document.segments
    total = len(segments)
    size = max(1, chunk_size)
    chunks = [segments[i:i + size] for i in range(0, total, size)]
    translations: list[str] = []
    stored: list[bool] = []
    usage = Usage()
    done = 0
    if on_progress is not None:
        on_progress(0, total)
    for chunk in chunks:
        outputs, from_memory = await _chunk(service, chunk, TranslationRequest(
            (), target, source=source, format="markup" if document.markup else "text", glossary=glossary,
            guidance=guidance or NO_GUIDANCE, key_id=key_id), document, usage)
        translations += outputs
        stored += from_memory
        done += len(chunk)
        if on_progress is not None:
            on_progress(done, total)
    document.from_memory = frozenset(i for i, s in enumerate(stored) if s)
    if document.from_memory:
        notes.append(f"{len(document.from_memory)} of {total} segments are translations stored in the "
                     "translation memory, used as stored.")
    notes += review_notes(usage)
    output = await document.render_async(translations, target)
    return DocumentResult(output, source, detected, notes + [n for n in document.notes if n not in notes])


def review_notes(usage: Usage) -> list[str]:
    """What a reader of the translated document should check, from what the service counted."""
    notes = []
    if usage.content_dropped:
        notes.append(f"{usage.content_dropped} segments may lack part of their source: no counterpart was "
                     "found for some of its words, even after a stricter retry. Check them.")
    if usage.markup_unplaced:
        notes.append(f"{usage.markup_unplaced} formatting tags could not be put on the words that translate "
                     "theirs; each is kept, empty, at its sentence's end.")
    return notes


async def _chunk(service: TranslationService, texts: list[str], request: TranslationRequest,
                 document: Document, usage: Usage) -> tuple[list[str], list[bool]]:
    """The chunk's translations (``request`` says how; its texts are these), and for each whether it
    is a TM entry served as stored."""
    unique = list(dict.fromkeys(texts))  # a repeated segment is translated once
    results = await _translate(service, replace(request, texts=tuple(unique)), usage)
    outputs = [r.text for r in results]
    if document.placeholders is not None:
        outputs = await _keep_placeholders(service, unique, outputs, request, document)
    # a stored translation the placeholder check had to redo is the engine's now
    translated = {text: (out, r.from_memory and out == r.text) for text, out, r in zip(unique, outputs, results)}
    return [translated[text][0] for text in texts], [translated[text][1] for text in texts]


async def _translate(service: TranslationService, request: TranslationRequest,
                     usage: Usage | None = None) -> list[Translation]:
    """The request's texts translated as background work, patient with a busy server: a full queue
    is waited out and a missed deadline retried, rather than the document failed."""
    if not request.texts:
        return []
    request = replace(request, deadline_s=service.settings.request_timeout_s * 4, priority=Priority.BACKGROUND)
    misses = 0
    while True:
        try:
            return await service.translate(request, usage)
        except QueueFull as exc:  # the API is busy: wait for room rather than fail the document
            await asyncio.sleep(min(float(exc.retry_after_s), QUEUE_FULL_WAIT_MAX_S))
        except DeadlineExceeded:
            misses += 1
            if misses >= DEADLINE_RETRIES:
                raise
            log.info("document chunk missed its deadline; retrying", extra={"event": "document_retry"})


async def _keep_placeholders(service: TranslationService, texts: list[str], outputs: list[str],
                             request: TranslationRequest, document: Document) -> list[str]:
    """Re-translate, between its placeholders, every string whose translation broke one."""
    pattern = document.placeholders
    assert pattern is not None
    broken = [i for i, (text, out) in enumerate(zip(texts, outputs))
              if not document.placeholders_kept(text, out)]
    if not broken:
        return outputs
    plans = []
    fragments: list[str] = []
    for i in broken:
        pieces = protected_split(texts[i], pattern)
        slots = [k for k, p in enumerate(pieces) if p.translate and has_words(p.text)]
        plans.append((i, pieces, slots))
        fragments += [pieces[k].text.strip() for k in slots]
    translated = iter([r.text for r in await _translate(service, replace(request, texts=tuple(fragments),
                                                                         format="text"))])
    fixed = list(outputs)
    for i, pieces, slots in plans:
        parts = [p.text for p in pieces]
        for k in slots:
            parts[k] = keep_edges(pieces[k].text, next(translated))
        candidate = "".join(parts)
        if document.placeholders_kept(texts[i], candidate):
            fixed[i] = candidate
        else:
            fixed[i] = texts[i]  # still broken: the source string is safer than a broken one
    return fixed
