"""The translation service: the one place that turns a request into engine work.

Request in: texts, languages, format. It detects the source if asked, splits
each text into segments (sentences, or HTML text nodes), serves what it can
from the cache, schedules the rest on the shared engine, cleans what the model
adds, and reassembles everything in order with the original whitespace and
markup. The API layer only validates and maps errors; it never sees an engine.

Quality steps around the engine call, per segment: the glossary entries whose
terms occur in it go into the prompt (and the cache key); Traditional Chinese
goes to the model as Simplified and comes back converted with OpenCC; and the
guardrails check each output, retrying once with a stricter prompt when it is
not a translation (``mtserve.service.guardrails``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable

from mtserve.engines.base import Engine, TranslationRequest
from mtserve.service import guardrails
from mtserve.service.cache import CacheKey, TranslationCache
from mtserve.service.glossary import (
    GlossaryFile,
    GlossaryStore,
    UnknownGlossary,
    canonical,
    matching_entries,
    merge,
)
from mtserve.service.metrics import Metrics
from mtserve.service.scheduler import Priority, Scheduler, Ticket
from mtserve.settings import Settings
from mtserve.text import chinese
from mtserve.text.cleanup import clean_translation, strip_special_tokens
from mtserve.text.detect import Detection, LanguageDetector
from mtserve.text.html import parse_html
from mtserve.text.languages import language_name
from mtserve.text.punctuation import has_words, passthrough
from mtserve.text.segment import Piece, glued, join_pieces, split_text

log = logging.getLogger(__name__)

FORMATS = ("text", "html")
ALTERNATIVE_TEMPERATURE = 0.7
ALTERNATIVE_ROUNDS = 2  # sampling rounds to find N distinct alternatives; the second samples hotter
CHINESE = ("zh", "zt")


class UnsupportedLanguage(ValueError):
    pass


@dataclass
class Usage:
    """What one request cost; logged and returned to benchmarks."""

    segments: int = 0
    cached_segments: int = 0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    queue_ms: float = 0.0
    engine_ms: float = 0.0

    def add(self, other: "Usage") -> None:
        self.segments += other.segments
        self.cached_segments += other.cached_segments
        self.generated_tokens += other.generated_tokens
        self.prompt_tokens += other.prompt_tokens
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
    kind: str  # "detected" | "delta" (raw text) | "segment" (one cleaned segment) | "done"
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
        glossaries: GlossaryStore | None = None,
    ):
        self.settings = settings
        self.engine = engine
        self.scheduler = scheduler
        self.cache = cache
        self.detector = detector
        self.metrics = metrics
        glossary_file = getattr(settings, "glossary_file", None)
        self.glossary_file = GlossaryFile.load(glossary_file) if glossary_file else GlossaryFile()
        self.glossaries = glossaries  # named glossaries, for requests that send a glossary_id
        # The retry is a stricter *prompt*, so it is for engines that translate by prompting an LLM.
        self.guarded = bool(getattr(settings, "guardrails", True) and getattr(engine, "prompted", False))

    # --- languages -------------------------------------------------------------
    @property
    def languages(self) -> tuple[str, ...]:
        return self.engine.languages

    def check_pair(self, source: str, target: str) -> None:
        supported = self.languages
        for role, code in (("source", source), ("target", target)):
            if code not in supported and not (role == "source" and code == "auto"):
                shown = repr(code) if len(code) <= 40 else repr(code[:40]) + "..."  # not echoed back whole
                raise UnsupportedLanguage(
                    f"{role} language {shown} is not supported by model {self.engine.model_name!r}; "
                    f"use one of: {', '.join(supported)} (see GET /languages)"
                )
        # A Marian model knows two languages but translates one direction only.
        supports = getattr(self.engine, "supports", None)
        if source != "auto" and supports is not None and not supports(source, target):
            raise UnsupportedLanguage(
                f"model {self.engine.model_name!r} does not translate {source} -> {target}; "
                f"see GET /languages for the targets of each source"
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

    def _key(self, source: str, target: str, segment: str, terms: dict[str, str] | None = None) -> CacheKey:
        return CacheKey(self.engine.model_name, source, target, "text", segment, canonical(terms or {}))

    # --- glossary, scripts, guardrails -------------------------------------------
    def glossary_for(self, source: str, target: str, glossary: dict[str, str] | None) -> dict[str, str]:
        """The server-wide entries for the pair, overridden by the request's own."""
        return merge(self.glossary_file.entries_for(source, target), glossary)

    def named_glossary(self, glossary_id: str, source: str, target: str) -> dict[str, str]:
        """The entries of stored glossary ``glossary_id``, if its pair is source->target.

        Raises UnknownGlossary (no such id) or GlossaryMismatch (another pair,
        or source 'auto'); both say what to send instead.
        """
        if self.glossaries is None:
            raise UnknownGlossary(f"no glossary with id {glossary_id!r}: this service has no glossary store")
        return self.glossaries.for_pair(glossary_id, source, target)

    def request_glossary(self, source: str, target: str, glossary: dict[str, str] | None,
                         glossary_id: str | None) -> dict[str, str] | None:
        """A request's own layers: the named glossary, overridden by the request's ``glossary``.

        The server-wide file goes under both later, per detected pair (``glossary_for``).
        """
        if not glossary_id:
            return glossary
        return merge(self.named_glossary(glossary_id, source, target), glossary)

    def _engine_request(self, segment: str, source: str, target: str, terms: dict[str, str],
                        temperature: float = 0.0, seed: int | None = None) -> TranslationRequest:
        """What the engine sees: Chinese in Simplified script, whatever the caller sent or wants."""
        text = segment
        if source in CHINESE and (source == "zt" or chinese.is_traditional(segment)):
            text, source = chinese.to_simplified(segment), "zh"
            terms = {chinese.to_simplified(t): tr for t, tr in terms.items()}
        if target == "zt":
            target = "zh"
            terms = {t: chinese.to_simplified(tr) for t, tr in terms.items()}
        return TranslationRequest(text=text, source=source, target=target, temperature=temperature,
                                  seed=seed, glossary=tuple(terms.items()))

    @staticmethod
    def _to_target_script(text: str, target: str, terms: dict[str, str]) -> str:
        if target == "zt":
            text = chinese.to_traditional(text)
            for translation in terms.values():  # keep the caller's own character forms
                text = text.replace(chinese.to_traditional(chinese.to_simplified(translation)), translation)
        elif target == "zh":
            text = chinese.to_simplified(text)
        return text

    @staticmethod
    def _account(usage: Usage, outcome) -> None:
        usage.generated_tokens += outcome.result.generated_tokens
        usage.prompt_tokens += outcome.result.prompt_tokens
        usage.queue_ms = max(usage.queue_ms, outcome.queue_ms)
        usage.engine_ms += outcome.engine_ms

    async def _finish(self, ticket: Ticket, request: TranslationRequest, outcome, usage: Usage,
                      target: str, terms: dict[str, str], guard: bool = True) -> str:
        """Clean an engine result, retry once if the guardrails reject it, and convert the script."""
        cleaned = clean_translation(outcome.result.text, request.text)
        if guard and self.guarded:
            glossary = dict(request.glossary)
            problem = guardrails.check(request.text, cleaned, request.source, request.target,
                                       glossary=glossary, finish_reason=outcome.result.finish_reason)
            if problem is not None:
                self.metrics.guardrail_retries.labels(reason=problem.kind).inc()
                log.info("guardrail retry", extra={"event": "guardrail_retry", "reason": problem.kind,
                                                   "detail": problem.detail})
                retry = guardrails.retry_request(request, problem)
                [retried] = await ticket.wait([ticket.submit(retry)])
                self._account(usage, retried)
                second = clean_translation(retried.result.text, request.text)
                second_problem = guardrails.check(request.text, second, request.source, request.target,
                                                  glossary=glossary, finish_reason=retried.result.finish_reason)
                cleaned, unresolved = guardrails.choose(cleaned, problem, second, second_problem)
                if unresolved:
                    self.metrics.guardrail_unresolved.labels(reason=(second_problem or problem).kind).inc()
        return self._to_target_script(cleaned, target, terms)

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
        glossary: dict[str, str] | None = None,
        glossary_id: str | None = None,
    ) -> list[Translation]:
        """Translate texts as one request: one ticket, one deadline, all segments fair-queued.

        ``glossary`` ({term: translation}) adds to the server-wide glossary for this request;
        ``glossary_id`` names a stored glossary that sits between the two (``request_glossary``).
        """
        usage = usage if usage is not None else Usage()
        timeout_s = timeout_s or self.settings.request_timeout_s
        glossary = self.request_glossary(source, target, glossary, glossary_id)
        resolved = [self.resolve_source(t, source, target) for t in texts]
        for src, _ in resolved:
            self.check_pair(src, target)
        async with self.scheduler.ticket(timeout_s, priority) as ticket:
            jobs = [
                self._translate_one(ticket, text, src, target, fmt, usage, glossary=glossary)
                for text, (src, _) in zip(texts, resolved)
            ]
            outputs = await asyncio.gather(*jobs)
            alt_lists: list[list[str]] = [[] for _ in texts]
            if alternatives > 0 and fmt == "text":
                alt_lists = list(
                    await asyncio.gather(
                        *[
                            self._alternatives(ticket, text, src, target, alternatives, out, usage, glossary)
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
        temperature: float = 0.0, seed: int | None = None, glossary: dict[str, str] | None = None,
    ) -> str:
        if source == target or not text.strip():
            return text
        if {source, target} == set(CHINESE):  # a script conversion: OpenCC, not the model
            return chinese.to_traditional(text) if target == "zt" else chinese.to_simplified(text)
        plan = self._plan(text, source, target, fmt)
        entries = self.glossary_for(source, target, glossary)
        outputs: list[str | None] = [None] * len(plan.segments)
        futures, where = [], []
        for i, segment in enumerate(plan.segments):
            if not has_words(segment):
                outputs[i] = passthrough(segment, target)
                continue
            terms = matching_entries(entries, segment)
            key = self._key(source, target, segment, terms)
            cached = self.cache.get(key) if temperature == 0 else None
            if cached is not None:
                outputs[i] = cached
                usage.cached_segments += 1
                self.metrics.cache_hits.inc()
                continue
            self.metrics.cache_misses.inc()
            request = self._engine_request(segment, source, target, terms, temperature, seed)
            futures.append(ticket.submit(request))
            where.append((i, request, terms, key))
        usage.segments += len(plan.segments)
        outcomes = await ticket.wait(futures)
        for (i, _request, _terms, _key), outcome in zip(where, outcomes):
            self._account(usage, outcome)
        finished = await asyncio.gather(*[
            self._finish(ticket, request, outcome, usage, target, terms, guard=temperature == 0)
            for (_i, request, terms, _key), outcome in zip(where, outcomes)
        ])
        for (i, _request, _terms, key), final in zip(where, finished):
            outputs[i] = final
            if temperature == 0:
                self.cache.put(key, final)
        return plan.assemble([o or "" for o in outputs])

    async def _alternatives(
        self, ticket: Ticket, text: str, source: str, target: str, count: int, best: str, usage: Usage,
        glossary: dict[str, str] | None = None,
    ) -> list[str]:
        """Up to ``count`` sampled translations (fixed seeds), distinct from the best and each other.

        Candidates that differ only in case, spacing or punctuation count as one,
        and candidates the guardrails reject (left untranslated, looping) are
        dropped. If a round yields too few, a second, hotter one fills the gap.
        """
        if source == target or not text.strip() or {source, target} == set(CHINESE):
            return []
        seen = {guardrails._normal(best)}
        distinct: list[str] = []
        next_seed = 1
        terms = matching_entries(self.glossary_for(source, target, glossary), text)
        for round_ in range(ALTERNATIVE_ROUNDS):
            wanted = count - len(distinct)
            if wanted <= 0:
                break
            seeds = range(next_seed, next_seed + wanted + round_)
            next_seed += len(seeds)
            candidates = await asyncio.gather(*[
                self._translate_one(ticket, text, source, target, "text", usage,
                                    temperature=ALTERNATIVE_TEMPERATURE + 0.3 * round_, seed=seed,
                                    glossary=glossary)
                for seed in seeds
            ])
            for candidate in candidates:
                key = guardrails._normal(candidate)
                if not key or key in seen or len(distinct) >= count:
                    continue
                if self.guarded and guardrails.check(text, candidate, source, target, glossary=terms) is not None:
                    continue
                seen.add(key)
                distinct.append(candidate)
        return distinct

    # --- streaming --------------------------------------------------------------
    async def stream(
        self, text: str, source: str, target: str, fmt: str = "text",
        timeout_s: float | None = None, usage: Usage | None = None,
        glossary: dict[str, str] | None = None, glossary_id: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Yield the translation as it is generated, segment by segment, in order.

        Every segment is scheduled at once; the first streams live while later
        ones buffer their deltas. ``delta`` events carry raw text to append;
        the final ``done`` event carries the cleaned, reassembled translation,
        which replaces what the deltas built.

        The request is admitted (its ticket opened) before the first event, as
        ``translate`` does: a full queue raises QueueFull from the first
        ``__anext__``, before the API has sent a 200.
        """
        usage = usage if usage is not None else Usage()
        timeout_s = timeout_s or self.settings.request_timeout_s
        glossary = self.request_glossary(source, target, glossary, glossary_id)
        src, detected = self.resolve_source(text, source, target)
        self.check_pair(src, target)
        async with self.scheduler.ticket(timeout_s) as ticket, contextlib.aclosing(
            self._stream_admitted(ticket, text, src, detected, target, fmt, usage, glossary)
        ) as events:
            async for event in events:
                yield event

    async def _stream_admitted(
        self, ticket: Ticket, text: str, src: str, detected: Detection | None, target: str, fmt: str,
        usage: Usage, glossary: dict[str, str] | None,
    ) -> AsyncIterator[StreamEvent]:
        if detected is not None:
            yield StreamEvent("detected", {"language": detected.language, "confidence": detected.confidence})
        if src == target or not text.strip():
            yield StreamEvent("done", {"translatedText": text})
            return
        if {src, target} == set(CHINESE):
            converted = chinese.to_traditional(text) if target == "zt" else chinese.to_simplified(text)
            yield StreamEvent("delta", {"text": converted})
            yield StreamEvent("done", {"translatedText": converted})
            return
        plan = self._plan(text, src, target, fmt)
        entries = self.glossary_for(src, target, glossary)

        def live(piece: str) -> str:  # a raw delta, in the script the caller asked for
            piece = strip_special_tokens(piece)
            return chinese.to_traditional(piece) if target == "zt" and piece else piece

        queues: list[asyncio.Queue[str]] = []
        futures: list[asyncio.Future | None] = []
        cached: list[str | None] = []
        jobs: list[tuple[TranslationRequest, dict[str, str], CacheKey] | None] = []
        for segment in plan.segments:
            queue: asyncio.Queue[str] = asyncio.Queue()
            queues.append(queue)
            terms = matching_entries(entries, segment)
            key = self._key(src, target, segment, terms)
            hit = self.cache.get(key) if has_words(segment) else passthrough(segment, target)
            cached.append(hit)
            if hit is not None:
                usage.cached_segments += 1
                self.metrics.cache_hits.inc()
                futures.append(None)
                jobs.append(None)
            else:
                self.metrics.cache_misses.inc()
                request = self._engine_request(segment, src, target, terms)
                futures.append(ticket.submit(request, on_delta=queue.put_nowait))
                jobs.append((request, terms, key))
        usage.segments += len(plan.segments)
        outputs: list[str] = []
        for i, segment in enumerate(plan.segments):
            if plan.gaps[i]:
                yield StreamEvent("delta", {"text": plan.gaps[i]})
            if futures[i] is None:
                outputs.append(cached[i] or "")
                yield StreamEvent("delta", {"text": cached[i] or ""})
                yield StreamEvent("segment", {"index": i, "gap": plan.gaps[i], "text": cached[i] or ""})
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
                    piece = live(getter.result())
                    if piece:
                        yield StreamEvent("delta", {"text": piece})
                else:
                    getter.cancel()
                if not done:
                    break
            outcome = await ticket.wait_one(future)
            while not queues[i].empty():  # deltas that raced the result
                piece = live(queues[i].get_nowait())
                if piece:
                    yield StreamEvent("delta", {"text": piece})
            job = jobs[i]
            assert job is not None
            request, terms, key = job
            self._account(usage, outcome)
            cleaned = await self._finish(ticket, request, outcome, usage, target, terms)
            self.cache.put(key, cleaned)
            outputs.append(cleaned)
            yield StreamEvent("segment", {"index": i, "gap": plan.gaps[i], "text": cleaned})
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
    an empty gap or a single space between two sentences is changed. Pieces
    of one overlong word, cut mid-word, stay glued together.
    """
    unspaced = target in UNSPACED_SCRIPTS
    out: list[Piece] = []
    for i, piece in enumerate(pieces):
        prev = out[-1] if out else None
        between_sentences = piece.translate and prev is not None and prev.translate
        if between_sentences and not unspaced and not glued(prev.text, piece.text):
            out.append(Piece(" ", False))
        elif (
            unspaced and not piece.translate and piece.text == " " and prev is not None
            and prev.translate and i + 1 < len(pieces) and pieces[i + 1].translate
        ):
            continue
        out.append(piece)
    return out
