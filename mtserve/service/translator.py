"""The translation service: the one place that turns a request into engine work.

Request in: texts, languages, format. It detects the source if asked, splits
each text into segments (sentences, or HTML text nodes), serves what it can
from the cache, schedules the rest on the shared engine, cleans what the model
adds, and reassembles everything in order with the original whitespace and
markup. The API layer only validates and maps errors; it never sees an engine.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable

from mtserve.engines.base import Engine, TranslationRequest
from mtserve.service.cache import CacheKey, TranslationCache
from mtserve.service.metrics import Metrics
from mtserve.service.scheduler import Priority, Scheduler, Ticket
from mtserve.settings import Settings
from mtserve.text.cleanup import clean_translation, strip_special_tokens
from mtserve.text.detect import Detection, LanguageDetector
from mtserve.text.html import parse_html
from mtserve.text.languages import language_name
from mtserve.text.punctuation import has_words, passthrough
from mtserve.text.segment import Piece, join_pieces, split_text

log = logging.getLogger(__name__)

FORMATS = ("text", "html")
ALTERNATIVE_TEMPERATURE = 0.7


class UnsupportedLanguage(ValueError):
    pass


@dataclass
class Usage:
    """What one request cost; logged and returned to benchmarks."""

    segments: int = 0
    cached_segments: int = 0
    generated_tokens: int = 0
    queue_ms: float = 0.0
    engine_ms: float = 0.0

    def add(self, other: "Usage") -> None:
        self.segments += other.segments
        self.cached_segments += other.cached_segments
        self.generated_tokens += other.generated_tokens
        self.queue_ms = max(self.queue_ms, other.queue_ms)
        self.engine_ms += other.engine_ms


@dataclass
class Translation:
    text: str
    source: str
    detected: Detection | None = None
    alternatives: list[str] = field(default_factory=list)


@dataclass
class StreamEvent:
    kind: str  # "detected" | "delta" | "done"
    data: dict


@dataclass
class _Plan:
    """A text cut into the pieces that go to the engine, and how to put it back."""

    segments: list[str]
    assemble: Callable[[list[str]], str]
    gaps: list[str]  # what a streaming preview shows before each segment


class TranslationService:
    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        scheduler: Scheduler,
        cache: TranslationCache,
        detector: LanguageDetector,
        metrics: Metrics,
    ):
        self.settings = settings
        self.engine = engine
        self.scheduler = scheduler
        self.cache = cache
        self.detector = detector
        self.metrics = metrics

    # --- languages -------------------------------------------------------------
    @property
    def languages(self) -> tuple[str, ...]:
        return self.engine.languages

    def check_pair(self, source: str, target: str) -> None:
        supported = self.languages
        for role, code in (("source", source), ("target", target)):
            if code not in supported:
                raise UnsupportedLanguage(
                    f"{role} language {code!r} is not supported by model {self.engine.model_name!r}; "
                    f"use one of: {', '.join(supported)} (see GET /languages)"
                )

    def detect(self, text: str, limit: int = 3) -> list[Detection]:
        return self.detector.detect(text, limit=limit)

    def resolve_source(self, text: str, source: str, target: str) -> tuple[str, Detection | None]:
        if source != "auto":
            return source, None
        fallback = "zh" if target != "zh" else "en"
        found = self.detector.best(text, fallback=fallback)
        return found.language, found

    # --- planning ---------------------------------------------------------------
    def _plan(self, text: str, source: str, target: str, fmt: str) -> _Plan:
        if fmt == "html":
            doc = parse_html(text)
            node_plans = [self._plan(node, source, target, "text") for node in doc.segments]
            segments = [seg for plan in node_plans for seg in plan.segments]

            def assemble(outputs: list[str]) -> str:
                rendered, at = [], 0
                for plan in node_plans:
                    n = len(plan.segments)
                    rendered.append(plan.assemble(outputs[at : at + n]))
                    at += n
                return doc.render(rendered)

            return _Plan(segments, assemble, [""] + [" "] * (len(segments) - 1))
        pieces = respace_for_target(split_text(text, source, self.settings.segment_max_chars), target)
        segments, gaps, gap = [], [], ""
        for piece in pieces:
            if piece.translate:
                segments.append(piece.text)
                gaps.append(gap)
                gap = ""
            else:
                gap += piece.text
        return _Plan(segments, lambda outputs: join_pieces(pieces, outputs), gaps)

    def _key(self, source: str, target: str, segment: str) -> CacheKey:
        return CacheKey(self.engine.model_name, source, target, "text", segment)

    # --- translation ------------------------------------------------------------
    async def translate(
        self,
        texts: list[str],
        source: str,
        target: str,
        fmt: str = "text",
        alternatives: int = 0,
        timeout_s: float | None = None,
        usage: Usage | None = None,
        priority: Priority = Priority.INTERACTIVE,
    ) -> list[Translation]:
        """Translate texts as one request: one ticket, one deadline, all segments fair-queued."""
        usage = usage if usage is not None else Usage()
        timeout_s = timeout_s or self.settings.request_timeout_s
        resolved = [self.resolve_source(t, source, target) for t in texts]
        for src, _ in resolved:
            self.check_pair(src, target)
        async with self.scheduler.ticket(timeout_s, priority) as ticket:
            jobs = [
                self._translate_one(ticket, text, src, target, fmt, usage)
                for text, (src, _) in zip(texts, resolved)
            ]
            outputs = await asyncio.gather(*jobs)
            alt_lists: list[list[str]] = [[] for _ in texts]
            if alternatives > 0 and fmt == "text":
                alt_lists = list(
                    await asyncio.gather(
                        *[
                            self._alternatives(ticket, text, src, target, alternatives, out, usage)
                            for text, (src, _), out in zip(texts, resolved, outputs)
                        ]
                    )
                )
        return [
            Translation(text=out, source=src, detected=det, alternatives=alts)
            for out, (src, det), alts in zip(outputs, resolved, alt_lists)
        ]

    async def _translate_one(
        self, ticket: Ticket, text: str, source: str, target: str, fmt: str, usage: Usage,
        temperature: float = 0.0, seed: int | None = None,
    ) -> str:
        if source == target or not text.strip():
            return text
        plan = self._plan(text, source, target, fmt)
        outputs: list[str | None] = [None] * len(plan.segments)
        futures, where = [], []
        for i, segment in enumerate(plan.segments):
            if not has_words(segment):
                outputs[i] = passthrough(segment, target)
                continue
            cached = self.cache.get(self._key(source, target, segment)) if temperature == 0 else None
            if cached is not None:
                outputs[i] = cached
                usage.cached_segments += 1
                self.metrics.cache_hits.inc()
                continue
            self.metrics.cache_misses.inc()
            request = TranslationRequest(text=segment, source=source, target=target,
                                         temperature=temperature, seed=seed)
            futures.append(ticket.submit(request))
            where.append(i)
        usage.segments += len(plan.segments)
        for i, outcome in zip(where, await ticket.wait(futures)):
            cleaned = clean_translation(outcome.result.text, plan.segments[i])
            outputs[i] = cleaned
            usage.generated_tokens += outcome.result.generated_tokens
            usage.queue_ms = max(usage.queue_ms, outcome.queue_ms)
            usage.engine_ms += outcome.engine_ms
            if temperature == 0:
                self.cache.put(self._key(source, target, plan.segments[i]), cleaned)
        return plan.assemble([o or "" for o in outputs])

    async def _alternatives(
        self, ticket: Ticket, text: str, source: str, target: str, count: int, best: str, usage: Usage
    ) -> list[str]:
        """Sampled translations (temperature > 0, fixed seeds), distinct from the best one."""
        if source == target or not text.strip():
            return []
        candidates = await asyncio.gather(
            *[
                self._translate_one(ticket, text, source, target, "text", usage,
                                    temperature=ALTERNATIVE_TEMPERATURE, seed=seed)
                for seed in range(1, count + 1)
            ]
        )
        distinct: list[str] = []
        for candidate in candidates:
            if candidate.strip() != best.strip() and candidate not in distinct:
                distinct.append(candidate)
        return distinct

    # --- streaming --------------------------------------------------------------
    async def stream(
        self, text: str, source: str, target: str, fmt: str = "text",
        timeout_s: float | None = None, usage: Usage | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Yield the translation as it is generated, segment by segment, in order.

        Every segment is scheduled at once; the first streams live while later
        ones buffer their deltas. ``delta`` events carry raw text to append;
        the final ``done`` event carries the cleaned, reassembled translation,
        which replaces what the deltas built.
        """
        usage = usage if usage is not None else Usage()
        timeout_s = timeout_s or self.settings.request_timeout_s
        src, detected = self.resolve_source(text, source, target)
        self.check_pair(src, target)
        if detected is not None:
            yield StreamEvent("detected", {"language": detected.language, "confidence": detected.confidence})
        if src == target or not text.strip():
            yield StreamEvent("done", {"translatedText": text})
            return
        plan = self._plan(text, src, target, fmt)
        async with self.scheduler.ticket(timeout_s) as ticket:
            queues: list[asyncio.Queue[str]] = []
            futures: list[asyncio.Future | None] = []
            cached: list[str | None] = []
            for segment in plan.segments:
                queue: asyncio.Queue[str] = asyncio.Queue()
                queues.append(queue)
                hit = (self.cache.get(self._key(src, target, segment)) if has_words(segment)
                       else passthrough(segment, target))
                cached.append(hit)
                if hit is not None:
                    usage.cached_segments += 1
                    self.metrics.cache_hits.inc()
                    futures.append(None)
                else:
                    self.metrics.cache_misses.inc()
                    request = TranslationRequest(text=segment, source=src, target=target)
                    futures.append(ticket.submit(request, on_delta=queue.put_nowait))
            usage.segments += len(plan.segments)
            outputs: list[str] = []
            for i, segment in enumerate(plan.segments):
                if plan.gaps[i]:
                    yield StreamEvent("delta", {"text": plan.gaps[i]})
                if futures[i] is None:
                    outputs.append(cached[i] or "")
                    yield StreamEvent("delta", {"text": cached[i] or ""})
                    continue
                future = futures[i]
                assert future is not None
                while not future.done():
                    getter = asyncio.ensure_future(queues[i].get())
                    done, _ = await asyncio.wait(
                        {getter, future}, timeout=max(0.0, ticket.remaining_s),
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    if getter in done:
                        piece = strip_special_tokens(getter.result())
                        if piece:
                            yield StreamEvent("delta", {"text": piece})
                    else:
                        getter.cancel()
                    if not done:
                        break
                outcome = await ticket.wait_one(future)
                while not queues[i].empty():  # deltas that raced the result
                    piece = strip_special_tokens(queues[i].get_nowait())
                    if piece:
                        yield StreamEvent("delta", {"text": piece})
                cleaned = clean_translation(outcome.result.text, segment)
                self.cache.put(self._key(src, target, segment), cleaned)
                usage.generated_tokens += outcome.result.generated_tokens
                usage.engine_ms += outcome.engine_ms
                usage.queue_ms = max(usage.queue_ms, outcome.queue_ms)
                outputs.append(cleaned)
        final: dict = {"translatedText": plan.assemble(outputs)}
        if detected is not None:
            final["detectedLanguage"] = {"language": detected.language, "confidence": detected.confidence}
        yield StreamEvent("done", final)

    def describe(self) -> dict:
        return {
            "model": self.engine.model_name,
            "engine": self.engine.name,
            "languages": [{"code": c, "name": language_name(c)} for c in self.languages],
        }


UNSPACED_SCRIPTS = ("zh", "zt", "ja")


def respace_for_target(pieces: list[Piece], target: str) -> list[Piece]:
    """Adjust the gaps between sentences to the target script.

    Chinese and Japanese sentences follow each other with no space; English
    ones need one. Newlines and other whitespace runs are kept exactly; only
    an empty gap or a single space between two sentences is changed.
    """
    unspaced = target in UNSPACED_SCRIPTS
    out: list[Piece] = []
    for i, piece in enumerate(pieces):
        prev = out[-1] if out else None
        if piece.translate and prev is not None and prev.translate and not unspaced:
            out.append(Piece(" ", False))
        elif (
            unspaced and not piece.translate and piece.text == " " and prev is not None
            and prev.translate and i + 1 < len(pieces) and pieces[i + 1].translate
        ):
            continue
        out.append(piece)
    return out
