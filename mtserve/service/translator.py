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

Markup inside a sentence (HTML's inline elements, DeepL XML tags, the runs of
an Office paragraph) travels with it: a segment carries numbered tags and
placeholders (``mtserve.text.markup``), and the engine translates the sentence
whole. The output must hold the same tags, properly nested, and every
placeholder byte-identical; one that does not is retried once (strictly, and on
llama.cpp under a grammar that requires the tags). If that fails too, or the
engine does not translate by prompting (seq2seq), the fallback translates the
tag-free sentence and each tag's content on its own, and puts every tag on the
words its content became; it never loses markup. Spacing and case at tag edges
are then set for the target language. ``mtserve_markup_fallbacks`` counts the
fallbacks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field, replace
from typing import AsyncIterator, Callable

from mtserve.engines.base import (  # PromptTooLong: also for the layers above, which see no engine
    NO_GUIDANCE,
    Engine,
    Guidance,
    ModelInfo,
    PromptTooLong,
    TranslationRequest,
)
from mtserve.service import guardrails
from mtserve.service.cache import CacheKey, TranslationCache
from mtserve.service.glossary import (
    GlossaryFile,
    GlossaryScope,
    GlossaryStore,
    UnknownGlossary,
    canonical,
    matching_entries,
    merge,
    scope_for,
)
from mtserve.service.job import SegmentOutcome
from mtserve.service.metrics import Metrics
from mtserve.service.scheduler import Priority, Scheduler, Ticket
from mtserve.service.tm import ALL_OWNERS, TranslationMemory
from mtserve.settings import Settings
from mtserve.text import abandon, chinese, markup
from mtserve.text.cleanup import clean_translation, strip_special_tokens
from mtserve.text.detect import Detection, LanguageDetector
from mtserve.text.encoding import repair_mojibake
from mtserve.text.html import HTML, TagHandling, parse_html
from mtserve.text.languages import FORMAL_REGISTERS, language_name
from mtserve.text.punctuation import has_words, passthrough
from mtserve.text.segment import count_sentences, join_pieces, split_text
from mtserve.text.spacing import respace_for_target

log = logging.getLogger(__name__)

# Text longer than this is read, cut and planned in a worker thread: CPU-bound Python there still
# shares the GIL, but the event loop gets it back every few milliseconds, so a document of
# megabytes cannot stall /health or the other requests. Shorter text stays on the loop, where the
# thread hop (~0.1 ms) would cost more than the work.
OFF_LOOP_CHARS = 4_000

# text: plain (placeholders kept); html; xml (DeepL tag_handling=xml); markup: the view of
# ``mtserve.text.markup`` (``<b1>..</b1>``, ``<x2/>``), which document formats send.
FORMATS = ("text", "html", "xml", "markup")
ALTERNATIVE_TEMPERATURE = 0.7
ALTERNATIVE_ROUNDS = 2  # sampling rounds to find N distinct alternatives; the second samples hotter
CHINESE = ("zh", "zt")
TM_PAIRS_TTL_S = 5.0  # how long the TM's list of pairs with entries is trusted before it is read again


class UnsupportedLanguage(ValueError):
    """A language, or a pair, the model does not translate.

    The message is the service's own words; the fields let an API family word it its own way:
    ``code`` (the ``role``'s language, "source" or "target") with the ``supported`` codes, or the
    ``pair`` (source, target) the model has no direction for.
    """

    def __init__(self, message: str, *, code: str | None = None, role: str | None = None,
                 supported: tuple[str, ...] = (), pair: tuple[str, str] | None = None):
        super().__init__(message)
        self.code = code
        self.role = role
        self.supported = supported
        self.pair = pair


def follows_formality(model: ModelInfo, target: str) -> bool:
    """Whether ``model`` is told a formality into ``target``: a prompted engine, into a language
    whose grammar marks it (``FORMAL_REGISTERS``); a seq2seq model has no prompt to tell."""
    return model.prompted and target in FORMAL_REGISTERS


@dataclass
class Usage:
    """What one request cost; logged and returned to benchmarks."""

    segments: int = 0
    cached_segments: int = 0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    queue_ms: float = 0.0
    engine_ms: float = 0.0
    markup_retries: int = 0  # segments whose tags or placeholders came back wrong and were retried
    markup_fallbacks: int = 0  # segments whose tags were placed by the fallback
    tm_segments: int = 0  # segments served from the translation memory (exact matches)
    sentence_fallbacks: int = 0  # segments of several sentences redone one sentence at a time
    tm_examples: int = 0  # segments sent to the engine with similar translation-memory entries as examples

    def add(self, other: "Usage") -> None:
        self.segments += other.segments
        self.cached_segments += other.cached_segments
        self.markup_retries += other.markup_retries
        self.markup_fallbacks += other.markup_fallbacks
        self.tm_segments += other.tm_segments
        self.sentence_fallbacks += other.sentence_fallbacks
        self.tm_examples += other.tm_examples
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
    # Every part of it with words is a translation stored in the TM, served as stored (no engine, no
    # cache): a CAT-tool file marks such a target as an exact match, not as machine translation.
    from_memory: bool = False


@dataclass
class _Translated:
    text: str
    from_memory: bool = False


@dataclass
class StreamEvent:
    kind: str  # "detected" | "delta" (raw text) | "segment" (one cleaned segment) | "done"
    data: dict


@dataclass
class _Segment:
    """One segment of a request, prepared once: its output is known now (cached, passed
    through), or it carries the engine request that will produce it."""

    gap: str  # what a streaming preview shows before it
    output: str | None = None
    request: TranslationRequest | None = None
    terms: dict[str, str] = field(default_factory=dict)
    key: CacheKey | None = None  # where the result is cached; None when it must not be
    # Its tags and placeholders must come back: the segment as the caller sent it, else None.
    marked: str | None = None
    # markup_mode "transfer": the request is the tag-free sentence; its tags go in afterwards
    transfer: bool = False
    source: str = ""  # the source language, for the fallback's own requests
    entries: dict[str, str] = field(default_factory=dict)  # the glossary, for the same
    # Several whole sentences (segment_budget_chars): how many, and what the fallback that
    # translates them one by one needs (the segment, its format, the caller's key, whether the TM is used).
    sentences: int = 1
    text: str = ""
    fmt: str = "text"
    key_id: str | None = None
    tm: bool = True
    one_by_one: bool = False  # a sentence of it is in the translation memory: it goes sentence by sentence
    guidance: Guidance = NO_GUIDANCE  # the request's context, instructions and formality, for the same
    origin: str = "engine"  # where its output comes from: "engine", "cache", "memory", or "passthrough"


@dataclass
class _Plan:
    """A text cut into the pieces that go to the engine, and how to put it back."""

    segments: list[str]
    assemble: Callable[[list[str]], str]
    gaps: list[str]  # what a streaming preview shows before each segment


def _padded(first: str, retry: str) -> str | None:
    """Why a retry that passes the tag check is still not taken: a grammar that requires the tags
    can make a small model invent words to hang them on ("... This is a <i1>past</i1> event.")."""
    before, after = len(markup.strip_tags(first).strip()), len(markup.strip_tags(retry).strip())
    if after > 1.4 * before + 8:
        return f"the retry is much longer than the first answer ({after} against {before} characters)"
    return None


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
        memory: TranslationMemory | None = None,
    ):
        self.settings = settings
        self.engine = engine
        self.scheduler = scheduler
        self.cache = cache
        self.detector = detector
        self.metrics = metrics
        self.model = ModelInfo.of(engine)
        glossary_file = settings.glossary_file
        self.glossary_file = GlossaryFile.load(glossary_file) if glossary_file else GlossaryFile()
        self.glossaries = glossaries  # named glossaries, for requests that send a glossary_id
        self.memory = memory  # the translation memory: exact matches served, similar ones as examples
        self._tm_pairs: tuple[float, int, set[tuple[str, str]]] | None = None  # (when, generation, pairs)
        # The retry is a stricter *prompt*, so it is for engines that translate by prompting an LLM.
        self.guarded = settings.guardrails and self.model.prompted

    # --- languages -------------------------------------------------------------
    @property
    def languages(self) -> tuple[str, ...]:
        return self.model.languages

    def check_pair(self, source: str, target: str) -> None:
        supported = self.languages
        for role, code in (("source", source), ("target", target)):
            if code not in supported and not (role == "source" and code == "auto"):
                shown = repr(code) if len(code) <= 40 else repr(code[:40]) + "..."  # not echoed back whole
                raise UnsupportedLanguage(
                    f"{role} language {shown} is not supported by model {self.model.model!r}; "
                    f"use one of: {', '.join(supported)}", code=code, role=role, supported=tuple(supported)
                )
        # A Marian model knows two languages but translates one direction only.
        if source != "auto" and source != target and not self.model.supports(source, target):
            raise UnsupportedLanguage(
                f"model {self.model.model!r} does not translate {source} -> {target}; "
                f"each source has its own targets", pair=(source, target)
            )

    def repair(self, text: str) -> str:
        """The text with mojibake (UTF-8 a client read as Latin-1) undone, before anything reads it."""
        repaired = repair_mojibake(text)
        if repaired != text:
            self.metrics.inputs_repaired.inc()
            log.info("mojibake repaired", extra={"event": "input_repaired", "chars": len(text)})
        return repaired

    def _read_all(self, texts: list[str], source: str,
                  target: str) -> tuple[list[str], list[tuple[str, Detection | None]]]:
        """The texts repaired, and the source of each (detected when ``source`` is auto)."""
        texts = [self.repair(text) for text in texts]
        return texts, [self.resolve_source(text, source, target) for text in texts]

    def detect(self, text: str, limit: int = 3) -> list[Detection]:
        return self.detector.detect(self.repair(text), limit=limit)

    def resolve_source(self, text: str, source: str, target: str) -> tuple[str, Detection | None]:
        if source != "auto":
            return source, None
        fallback = "zh" if target != "zh" else "en"
        found = self.detector.best(text, fallback=fallback)
        return found.language, found

    # --- planning ---------------------------------------------------------------
    def _plan(self, text: str, source: str, target: str, fmt: str,
              tags: TagHandling | None = None, budget: int | None = None) -> _Plan:
        """``budget``: segment_budget_chars unless given (the sentence-by-sentence fallback gives 0)."""
        budget = self.settings.segment_budget_chars if budget is None else budget
        if fmt in ("html", "xml"):
            doc = parse_html(text, tags or (HTML if fmt == "html" else TagHandling("xml")))
            node_plans = [self._plan(node, source, target, "markup", budget=budget) for node in doc.segments]
            segments = [seg for plan in node_plans for seg in plan.segments]

            def assemble(outputs: list[str]) -> str:
                rendered, at = [], 0
                for plan in node_plans:
                    n = len(plan.segments)
                    rendered.append(plan.assemble(outputs[at : at + n]))
                    at += n
                return doc.render(rendered)

            return _Plan(segments, assemble, [""] + [" "] * (len(segments) - 1))
        arguments = markup.icu_arguments(text)
        if arguments:
            return self._plan_icu(text, arguments, source, target, fmt, budget)
        whole = (lambda run: "<" not in run or markup.balanced(run)) if fmt == "markup" else None
        pieces = split_text(text, source, self.settings.segment_max_chars, budget, whole)
        if fmt == "markup":
            pieces = markup.keep_tags_whole(pieces)
        pieces = respace_for_target(pieces, target)
        segments, gaps, gap = [], [], ""
        for piece in pieces:
            if piece.translate:
                segments.append(piece.text)
                gaps.append(gap)
                gap = ""
            else:
                gap += piece.text
        return _Plan(segments, lambda outputs: join_pieces(pieces, outputs), gaps)

    def _plan_icu(self, text: str, arguments: list[markup.IcuArgument], source: str, target: str,
                  fmt: str, budget: int) -> _Plan:
        """An ICU message: the sentence with ``{count}`` for each plural/select argument, and each
        branch's text on its own (its ``#`` a placeholder); the skeleton is kept."""
        simple = markup.simple_form(text, arguments)
        plans = [self._plan(simple, source, target, fmt, budget=budget)]
        for argument in arguments:
            plans += [self._plan(markup.branch_text(branch), source, target, fmt, budget=budget)
                      for _, branch in argument.branches]

        def assemble(outputs: list[str]) -> str:
            rendered, at = [], 0
            for plan in plans:
                rendered.append(plan.assemble(outputs[at:at + len(plan.segments)]))
                at += len(plan.segments)
            branches, k = [], 1
            for argument in arguments:
                branches.append([markup.branch_back(r) for r in rendered[k:k + len(argument.branches)]])
                k += len(argument.branches)
            return markup.rebuild_icu(rendered[0], arguments, branches)

        return _Plan([seg for plan in plans for seg in plan.segments], assemble,
                     [gap for plan in plans for gap in plan.gaps])

    def _key(self, source: str, target: str, segment: str, terms: dict[str, str] | None = None,
             fmt: str = "text", examples: tuple[tuple[str, str], ...] = (),
             guidance: Guidance = NO_GUIDANCE) -> CacheKey:
        """Where a translation is cached: one made with TM examples, or with a request's context,
        instructions or formality, is cached apart."""
        context = canonical(terms or {}) + (canonical(dict(examples)) if examples else "")
        return CacheKey(self.model.model, source, target, fmt, segment, context, guidance.key())

    # --- the translation memory --------------------------------------------------------
    def _memory_for(self, source: str, target: str, use: bool) -> TranslationMemory | None:
        """The TM, if this request uses it and it holds entries for the pair (checked cheaply)."""
        if not use or self.memory is None:
            return None
        now = time.monotonic()
        known, generation = self._tm_pairs, self.memory.generation  # a write here (the /tm API) is seen at once
        if known is None or now - known[0] > TM_PAIRS_TTL_S or known[1] != generation:
            pairs = {(p.source_lang, p.target_lang) for p in self.memory.stats(owner=ALL_OWNERS) if p.entries}
            self._tm_pairs = known = (now, generation, pairs)
        return self.memory if (source, target) in known[2] else None

    @staticmethod
    def _stored_translation(memory: TranslationMemory, text: str, source: str, target: str,
                            key_id: str | None) -> str | None:
        """An exact match's translation, if it keeps the text's placeholders (an entry whose translation
        lost one is no answer for it)."""
        found = memory.exact(text, source, target, owner=key_id)
        if found is None or markup.placeholders(found.target) != markup.placeholders(text):
            return None
        return found.target

    def _planning_cost(self, text: str, source: str, target: str, tm: bool) -> int:
        """What planning ``text`` costs, in characters read: a translation memory's lookups (an
        index query and a fuzzy ranking per segment, about a millisecond each) count as a long
        text, so they run off the event loop too."""
        return OFF_LOOP_CHARS + 1 if self._memory_for(source, target, tm) is not None else len(text)

    def _from_memory(self, memory: TranslationMemory, segment: str, source: str, target: str,
                     key_id: str | None) -> tuple[str | None, tuple[tuple[str, str], ...]]:
        """(an exact match's translation, or None; else the most similar entries as examples)."""
        stored = self._stored_translation(memory, segment, source, target, key_id)
        if stored is not None:
            return stored, ()
        if not self.model.prompted or self.settings.tm_k <= 0:
            return None, ()
        similar = memory.similar(segment, source, target, k=self.settings.tm_k,
                                 min_similarity=self.settings.tm_min_similarity, owner=key_id,
                                 candidates=self.settings.tm_candidates)
        return None, tuple((m.entry.source, m.entry.target) for m in similar)

    # --- glossary, scripts, guardrails -------------------------------------------
    def glossary_for(self, source: str, target: str, glossary: dict[str, str] | None) -> dict[str, str]:
        """The server-wide entries for the pair, overridden by the request's own."""
        return merge(self.glossary_file.entries_for(source, target), glossary)

    def glossary_scope(self, key_id: str | None) -> GlossaryScope:
        """Which stored glossaries the caller with API key ``key_id`` (None: no key) may see and use."""
        return scope_for(key_id, keys_on=bool(getattr(self.settings, "api_keys", False)))

    def named_glossary(self, glossary_id: str, source: str, target: str,
                       key_id: str | None = None) -> dict[str, str]:
        """The entries of stored glossary ``glossary_id``, if its pair is source->target.

        ``key_id`` is the caller's API key id: with keys on, a caller uses its own glossaries
        and the operator's (another key's is unknown to it). Raises UnknownGlossary (no such
        id) or GlossaryMismatch (another pair, or source 'auto'); both say what to send instead.
        """
        if self.glossaries is None:
            raise UnknownGlossary(f"no glossary with id {glossary_id!r}: this service has no glossary store")
        return self.glossaries.for_pair(glossary_id, source, target, self.glossary_scope(key_id))

    def request_glossary(self, source: str, target: str, glossary: dict[str, str] | None,
                         glossary_id: str | None, key_id: str | None = None) -> dict[str, str] | None:
        """A request's own layers: the named glossary, overridden by the request's ``glossary``.

        The server-wide file goes under both later, per detected pair (``glossary_for``).
        """
        if not glossary_id:
            return glossary
        return merge(self.named_glossary(glossary_id, source, target, key_id), glossary)

    # --- context, instructions, formality ---------------------------------------------
    def supports_formality(self, target: str) -> bool:
        """Whether a formality request into ``target`` is followed (DeepL's ``supports_formality``)."""
        return follows_formality(self.model, target)

    def guidance_for(self, guidance: Guidance | None, target: str) -> Guidance:
        """What of a request's guidance the engine gets: all of it for a prompted engine (the
        formality only where the target marks it), none for a seq2seq model, which has no prompt;
        so a seq2seq translation is also cached as one made without it."""
        if guidance is None or not guidance or not self.model.prompted:
            return NO_GUIDANCE
        if guidance.formality != "default" and not self.supports_formality(target):
            guidance = replace(guidance, formality="default")
        return guidance if guidance else NO_GUIDANCE

    def _engine_request(self, segment: str, source: str, target: str, terms: dict[str, str],
                        temperature: float = 0.0, seed: int | None = None,
                        marked: bool = False, examples: tuple[tuple[str, str], ...] = (),
                        guidance: Guidance = NO_GUIDANCE) -> TranslationRequest:
        """What the engine sees: Chinese in Simplified script, whatever the caller sent or wants."""
        text = segment
        if source in CHINESE and (source == "zt" or chinese.is_traditional(segment)):
            text, source = chinese.to_simplified(segment), "zh"
            terms = {chinese.to_simplified(t): tr for t, tr in terms.items()}
        if target == "zt":
            target = "zh"
            terms = {t: chinese.to_simplified(tr) for t, tr in terms.items()}
        return TranslationRequest(text=text, source=source, target=target, temperature=temperature,
                                  seed=seed, glossary=tuple(terms.items()), markup=marked, examples=examples,
                                  guidance=guidance)

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
            context = request.guidance.context
            problem = guardrails.check(request.text, cleaned, request.source, request.target,
                                       glossary=glossary, finish_reason=outcome.result.finish_reason,
                                       context=context)
            if problem is not None:
                self.metrics.guardrail_retries.labels(reason=problem.kind).inc()
                log.info("guardrail retry", extra={"event": "guardrail_retry", "reason": problem.kind,
                                                   "detail": problem.detail})
                retried = await self._retry(ticket, guardrails.retry_request(request, problem))
                if retried is None:
                    self.metrics.guardrail_unresolved.labels(reason=problem.kind).inc()
                    return self._to_target_script(cleaned, target, terms)
                self._account(usage, retried)
                second = clean_translation(retried.result.text, request.text)
                second_problem = guardrails.check(request.text, second, request.source, request.target,
                                                  glossary=glossary, finish_reason=retried.result.finish_reason,
                                                  context=context)
                cleaned, unresolved = guardrails.choose(cleaned, problem, second, second_problem)
                if unresolved:
                    self.metrics.guardrail_unresolved.labels(reason=(second_problem or problem).kind).inc()
        return self._to_target_script(cleaned, target, terms)

    @staticmethod
    async def _retry(ticket: Ticket, request: TranslationRequest) -> SegmentOutcome | None:
        """The outcome of a retry, or None when its prompt does not fit a slot: the strict prompt's
        examples make it longer than the first attempt's (~630 tokens more), and a first answer that
        fitted is worth more than a failed segment."""
        try:
            [outcome] = await ticket.wait([ticket.submit(request)])
        except PromptTooLong as exc:
            log.info("retry over the context", extra={"event": "retry_too_long", "error": str(exc)})
            return None
        return outcome

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
        key_id: str | None = None,
        tags: TagHandling | None = None,
        tm: bool = True,
        guidance: Guidance | None = None,
    ) -> list[Translation]:
        """Translate texts as one request: one ticket, one deadline, all segments fair-queued.

        ``glossary`` ({term: translation}) adds to the server-wide glossary for this request;
        ``glossary_id`` names a stored glossary that sits between the two (``request_glossary``),
        one the caller with API key ``key_id`` may use.
        ``tags`` says how markup splits text for ``fmt`` "html" and "xml" (DeepL's parameters).
        ``tm=False`` leaves the translation memory out (no exact matches, no retrieved examples).
        ``guidance`` (context, instructions, formality) goes into every segment's prompt, on a
        prompted engine; it is not translated, and keys the cache.
        """
        usage = usage if usage is not None else Usage()
        timeout_s = timeout_s or self.settings.request_timeout_s
        glossary = self.request_glossary(source, target, glossary, glossary_id, key_id)
        guidance = self.guidance_for(guidance, target)
        texts, resolved = await _off_loop(sum(map(len, texts)), self._read_all, texts, source, target)
        for src, _ in resolved:
            self.check_pair(src, target)
        async with self.scheduler.ticket(timeout_s, priority) as ticket:
            jobs = [
                self._translate_one(ticket, text, src, target, fmt, usage, glossary=glossary, tags=tags,
                                    key_id=key_id, tm=tm, guidance=guidance)
                for text, (src, _) in zip(texts, resolved)
            ]
            translated = await asyncio.gather(*jobs)
            outputs = [t.text for t in translated]
            alt_lists: list[list[str]] = [[] for _ in texts]
            if alternatives > 0 and fmt == "text":
                alt_lists = list(
                    await asyncio.gather(
                        *[
                            self._alternatives(ticket, text, src, target, alternatives, out, usage, glossary,
                                               guidance)
                            for text, (src, _), out in zip(texts, resolved, outputs)
                        ]
                    )
                )
        return [
            Translation(text=t.text, source=src, detected=det, alternatives=alts, from_memory=t.from_memory)
            for t, (src, det), alts in zip(translated, resolved, alt_lists)
        ]

    @staticmethod
    def _shortcut(text: str, source: str, target: str) -> tuple[str, bool] | None:
        """(the answer, whether it was converted) when no engine is needed: the same language,
        blank text, or a change of Chinese script (OpenCC)."""
        if source == target or not text.strip():
            return text, False
        if {source, target} == set(CHINESE):
            return (chinese.to_traditional(text) if target == "zt" else chinese.to_simplified(text)), True
        return None

    def _prepare(self, text: str, source: str, target: str, fmt: str, usage: Usage,
                 glossary: dict[str, str] | None, temperature: float = 0.0,
                 seed: int | None = None, tags: TagHandling | None = None, key_id: str | None = None,
                 tm: bool = True, budget: int | None = None,
                 guidance: Guidance = NO_GUIDANCE) -> tuple[_Plan, list[_Segment]]:
        """Cut a text into segments and decide, once, how each is served: passed through (no
        words), from the translation memory (an exact match), from the cache (greedy decoding
        only), or by an engine request (with the memory's most similar entries as examples)."""
        plan = self._plan(text, source, target, fmt, tags, budget)
        grouped = (self.settings.segment_budget_chars if budget is None else budget) > 0
        entries = self.glossary_for(source, target, glossary)
        memory = self._memory_for(source, target, tm)
        if memory is not None and fmt == "text" and len(plan.segments) > 1:
            whole = self._whole_from_memory(memory, text, source, target, key_id, entries, usage)
            if whole is not None:
                return whole
        segments: list[_Segment] = []
        for segment, gap in zip(plan.segments, plan.gaps):
            abandon.check()
            item = _Segment(gap, source=source, entries=entries, guidance=guidance)
            segments.append(item)
            if not has_words(markup.strip_tags(segment) if fmt != "text" else segment):
                item.output, item.origin = passthrough(segment, target), "passthrough"
                continue
            item.marked = self._marked(segment, fmt)
            item.terms = matching_entries(entries, markup.strip_tags(segment) if item.marked else segment)
            if grouped:
                item.sentences = count_sentences(markup.strip_tags(segment) if fmt != "text" else segment, source)
                item.text, item.fmt, item.key_id, item.tm = segment, fmt, key_id, tm
            examples: tuple[tuple[str, str], ...] = ()
            if memory is not None and (item.marked is None or markup.TAG.search(segment) is None):
                # plain text, or text whose only markup is placeholders (%s, {name}): a memory's entries
                # are plain text, and a software catalog's strings carry their placeholders on both sides
                exact, examples = self._from_memory(memory, segment, source, target, key_id)
                if exact is not None:  # served as stored: never cached, no engine call
                    item.output = self._to_target_script(exact, target, {}) if target in CHINESE else exact
                    item.origin = "memory"
                    usage.tm_segments += 1
                    self.metrics.tm_exact.inc()
                    continue
                if item.sentences > 1 and self._memory_has_a_sentence(memory, segment, source, target, key_id):
                    item.one_by_one = True  # its stored sentences are served as stored
                    continue
                if examples:
                    usage.tm_examples += 1
                    self.metrics.tm_examples.inc()
            key = self._key(source, target, segment, item.terms, "markup" if item.marked else "text", examples,
                            guidance)
            cached = self.cache.get(key) if temperature == 0 else None
            if cached is not None:
                item.output, item.origin = cached, "cache"
                usage.cached_segments += 1
                self.metrics.cache_hits.inc()
                continue
            self.metrics.cache_misses.inc()
            engine_text, marked = segment, item.marked is not None and self.model.prompted
            has_tags = item.marked is not None and markup.TAG.search(segment) is not None
            if has_tags and (not self.model.prompted or self.settings.markup_mode == "transfer"):
                # a seq2seq model gets no tags (the fallback places them); in transfer mode the
                # sentence is translated as plain text, and its tags go in afterwards
                engine_text = markup.strip_tags(segment)
                marked = self.model.prompted and markup.PLACEHOLDER.search(engine_text) is not None
                item.transfer = self.model.prompted
            item.request = self._engine_request(engine_text, source, target, item.terms, temperature, seed,
                                                marked=marked, examples=examples, guidance=guidance)
            item.key = key if temperature == 0 else None  # a sampled alternative is not the translation
        usage.segments += len(plan.segments)
        return plan, segments

    def _whole_from_memory(self, memory: TranslationMemory, text: str, source: str, target: str,
                           key_id: str | None, entries: dict[str, str],
                           usage: Usage) -> tuple[_Plan, list[_Segment]] | None:
        """The text as one exact match, when the memory holds it whole: an entry is whatever its
        translator translated at once (a paragraph, a UI string of two sentences), so it is looked
        up before the text is cut into sentences. Its outer whitespace is kept."""
        core = text.strip()
        stored = self._stored_translation(memory, core, source, target, key_id)
        if stored is None:
            return None
        lead, trail = text[:len(text) - len(text.lstrip())], text[len(text.rstrip()):]
        item = _Segment(lead, source=source, entries=entries)
        item.output = self._to_target_script(stored, target, {}) if target in CHINESE else stored
        item.origin = "memory"
        usage.segments += 1
        usage.tm_segments += 1
        self.metrics.tm_exact.inc()
        return _Plan([core], lambda outputs: lead + outputs[0] + trail, [lead]), [item]

    def _memory_has_a_sentence(self, memory: TranslationMemory, segment: str, source: str, target: str,
                               key_id: str | None) -> bool:
        """Whether one sentence of a (plain) segment of several is an exact match in the TM."""
        pieces = split_text(segment, source, self.settings.segment_max_chars)
        return any(self._stored_translation(memory, p.text, source, target, key_id) is not None
                   for p in pieces if p.translate)

    @staticmethod
    def _marked(segment: str, fmt: str) -> str | None:
        """The segment, if a translation of it must keep tags or placeholders: in plain text only
        placeholders count, and a view whose tags do not nest is translated as plain text."""
        if fmt == "text":
            return segment if markup.PLACEHOLDER.search(segment) and not markup.TAG.search(segment) else None
        if not markup.has_markup(segment) or not markup.balanced(segment):
            return None
        return segment

    async def _complete(self, ticket: Ticket, item: _Segment, outcome, usage: Usage, target: str,
                        guard: bool = True) -> str:
        """An engine outcome made final: accounted, cleaned, checked by the guardrails, cached."""
        assert item.request is not None
        self._account(usage, outcome)
        if item.sentences > 1 and guard and self.settings.guardrails:
            output = clean_translation(outcome.result.text, item.request.text)
            problem = guardrails.dropped_sentence(item.sentences, markup.strip_tags(output), target)
            if problem is not None:
                item.output = (await self._one_by_one(ticket, item, problem, usage, target)).text
                if item.key is not None:
                    self.cache.put(item.key, item.output)
                return item.output
        item.output = await self._finish(ticket, item.request, outcome, usage, target, item.terms,
                                         guard=guard)
        if item.marked is not None:
            item.output = await self._keep_markup(ticket, item, item.output, usage, target)
        if item.key is not None:
            self.cache.put(item.key, item.output)
        return item.output

    async def _split(self, ticket: Ticket, item: _Segment, usage: Usage, target: str) -> str:
        translated = await self._one_by_one(ticket, item, None, usage, target)
        item.output, item.origin = translated.text, "memory" if translated.from_memory else "engine"
        return item.output

    async def _one_by_one(self, ticket: Ticket, item: _Segment, problem: guardrails.Problem | None,
                          usage: Usage, target: str) -> _Translated:
        """The fallback for a segment of several sentences whose translation dropped one (or one of
        whose sentences is in the TM: ``problem`` None): the segment planned again with no budget,
        so each sentence goes to the engine on its own (and through the cache, the TM, the markup
        checks and the guardrails), and joined as before."""
        if problem is not None:
            usage.sentence_fallbacks += 1
            self.metrics.sentence_fallbacks.inc()
            log.info("sentence fallback", extra={"event": "sentence_fallback", "detail": problem.detail})
        fmt = "text" if item.fmt == "text" else "markup"
        return await self._translate_one(ticket, item.text, item.source, target, fmt, usage,
                                         glossary=item.entries, key_id=item.key_id, tm=item.tm, budget=0,
                                         guidance=item.guidance)

    # --- markup --------------------------------------------------------------------
    async def _keep_markup(self, ticket: Ticket, item: _Segment, output: str, usage: Usage,
                           target: str) -> str:
        """A marked segment's output with its tags and placeholders: checked, retried once, and
        if still wrong (or never tried, on a seq2seq engine) placed by the fallback."""
        source = item.marked
        assert source is not None and item.request is not None
        if item.transfer:
            return await self._transfer_tags(ticket, item, output, usage, target)
        if not self.model.prompted:
            reason = "not_prompted"
            problem: str | None = reason
        else:
            reason = "invalid"
            problem = markup.check(source, output)
        if problem is not None and self.model.prompted:
            usage.markup_retries += 1
            self.metrics.markup_retries.inc()
            log.info("markup retry", extra={"event": "markup_retry", "detail": problem})
            again = await self._retry(ticket, replace(item.request, strict=True, markup=True))
            if again is not None:
                self._account(usage, again)
                second = self._to_target_script(clean_translation(again.result.text, item.request.text),
                                                target, item.terms)
                problem = markup.check(source, second) or _padded(output, second)
                if problem is None:
                    output = second
        if problem is not None:
            usage.markup_fallbacks += 1
            self.metrics.markup_fallbacks.labels(reason=reason).inc()
            log.info("markup fallback", extra={"event": "markup_fallback", "reason": reason,
                                               "detail": problem})
            output = await self._place_tags(ticket, item, output if reason == "not_prompted" else None,
                                            usage, target)
        return markup.fix_edges(source, output, target)

    async def _transfer_tags(self, ticket: Ticket, item: _Segment, plain_output: str, usage: Usage,
                             target: str) -> str:
        """markup_mode "transfer": the tag-free translation is done; a second request puts the tags
        into it (llama.cpp: under a grammar that allows nothing else), and if that fails the check
        the fallback places them."""
        source = item.marked
        assert source is not None and item.request is not None
        plain_key = self._key(item.source, target, markup.strip_tags(source), item.terms,
                              guidance=item.guidance)
        self.cache.put(plain_key, plain_output)  # the same sentence sent without tags is now a hit
        anchors = await self._anchors(ticket, item, plain_output, usage, target)
        request = replace(item.request, text=source, transfer=plain_output, markup=True, anchors=anchors)
        [outcome] = await ticket.wait([ticket.submit(request)])
        self._account(usage, outcome)
        output = strip_special_tokens(outcome.result.text).strip()
        problem = markup.check(source, output)
        if problem is None and markup.strip_tags(output).split() != plain_output.split():
            problem = "the translation changed while the tags went in"
        if problem is not None:
            usage.markup_fallbacks += 1
            self.metrics.markup_fallbacks.labels(reason="invalid").inc()
            log.info("markup fallback", extra={"event": "markup_fallback", "reason": "invalid",
                                               "detail": problem})
            output = await self._place_tags(ticket, item, plain_output, usage, target)
        return markup.fix_edges(source, output, target)

    async def _anchors(self, ticket: Ticket, item: _Segment, plain_output: str, usage: Usage,
                       target: str) -> tuple[tuple[int, int, int], ...]:
        """Where each tag's content, translated on its own, occurs once in the translation: the
        transfer grammar pins those tags there, and leaves the model the rest."""
        source = item.marked
        assert source is not None
        plain, elements = markup.structure(source)
        contents = {id_: markup.strip_tags(plain[e.start:e.end]).strip() for id_, e in elements.items()
                    if not e.void and has_words(plain[e.start:e.end])}
        translated = await asyncio.gather(*[
            self._translate_plain(ticket, text, item.source, target, usage, item.entries, item.guidance)
            for text in contents.values()])
        found = markup.anchors(plain_output, dict(zip(contents, translated)), elements)
        return tuple((id_, start, end) for id_, (start, end) in sorted(found.items()))

    async def _place_tags(self, ticket: Ticket, item: _Segment, plain_output: str | None, usage: Usage,
                          target: str) -> str:
        """The fallback: the tag-free sentence translated (unless given), each tag's content
        translated on its own to find its words, and the tags put on them."""
        source = item.marked
        assert source is not None
        plain, elements = markup.structure(source)
        contents = {id_: markup.strip_tags(plain[e.start:e.end]).strip() for id_, e in elements.items()
                    if not e.void and has_words(plain[e.start:e.end])}
        texts = ([] if plain_output is not None else [markup.strip_tags(source)]) + list(contents.values())
        translated = await asyncio.gather(*[
            self._translate_plain(ticket, text, item.source, target, usage, item.entries, item.guidance)
            for text in texts])
        if plain_output is None:
            plain_output, translated = translated[0], translated[1:]
        return markup.project(source, plain_output, dict(zip(contents, translated)), target)

    async def _translate_plain(self, ticket: Ticket, text: str, source: str, target: str, usage: Usage,
                               entries: dict[str, str], guidance: Guidance = NO_GUIDANCE) -> str:
        """One sentence translated as plain text (cached, cleaned, guarded), for the fallback."""
        terms = matching_entries(entries, text)
        key = self._key(source, target, text, terms, guidance=guidance)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        request = self._engine_request(text, source, target, terms, guidance=guidance)
        [outcome] = await ticket.wait([ticket.submit(request)])
        self._account(usage, outcome)
        output = await self._finish(ticket, request, outcome, usage, target, terms)
        self.cache.put(key, output)
        return output

    async def _translate_one(
        self, ticket: Ticket, text: str, source: str, target: str, fmt: str, usage: Usage,
        temperature: float = 0.0, seed: int | None = None, glossary: dict[str, str] | None = None,
        tags: TagHandling | None = None, key_id: str | None = None, tm: bool = True,
        budget: int | None = None,
        guidance: Guidance = NO_GUIDANCE,
    ) -> _Translated:
        shortcut = await _off_loop(len(text), self._shortcut, text, source, target)
        if shortcut is not None:
            return _Translated(shortcut[0])
        planned = Usage()  # counted apart: several texts of one request may be planned at once
        plan, segments = await _off_loop(self._planning_cost(text, source, target, tm), self._prepare, text,
                                         source, target, fmt, planned, glossary,
                                         temperature, seed, tags, key_id, tm, budget, guidance)
        usage.add(planned)
        pending = [item for item in segments if item.request is not None]
        outcomes = await ticket.wait([ticket.submit(item.request, turns=item.sentences) for item in pending])
        await asyncio.gather(*[
            self._complete(ticket, item, outcome, usage, target, guard=temperature == 0)
            for item, outcome in zip(pending, outcomes)
        ], *[self._split(ticket, item, usage, target) for item in segments if item.one_by_one])
        output = await _off_loop(len(text), plan.assemble, [item.output or "" for item in segments])
        origins = {item.origin for item in segments}
        return _Translated(output, from_memory="memory" in origins and origins <= {"memory", "passthrough"})

    async def _alternatives(
        self, ticket: Ticket, text: str, source: str, target: str, count: int, best: str, usage: Usage,
        glossary: dict[str, str] | None = None, guidance: Guidance = NO_GUIDANCE,
    ) -> list[str]:
        """Up to ``count`` sampled translations (fixed seeds), distinct from the best and each other.

        Candidates that differ only in case, spacing or punctuation count as one,
        and candidates the guardrails reject (left untranslated, looping) are
        dropped. If a round yields too few, a second, hotter one fills the gap.
        """
        if self._shortcut(text, source, target) is not None:
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
                                    glossary=glossary, guidance=guidance)
                for seed in seeds
            ])
            for candidate in (c.text for c in candidates):
                key = guardrails._normal(candidate)
                if not key or key in seen or len(distinct) >= count:
                    continue
                rejected = self.guarded and guardrails.check(text, candidate, source, target, glossary=terms,
                                                                  context=guidance.context)
                if rejected:
                    continue
                seen.add(key)
                distinct.append(candidate)
        return distinct

    # --- streaming --------------------------------------------------------------
    async def stream(
        self, text: str, source: str, target: str, fmt: str = "text",
        timeout_s: float | None = None, usage: Usage | None = None,
        glossary: dict[str, str] | None = None, glossary_id: str | None = None, key_id: str | None = None,
        tm: bool = True, guidance: Guidance | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Yield the translation as it is generated, segment by segment, in order.

        The request is admitted before the first event, so a full queue is an
        error the caller can still answer with a status. Every segment is
        scheduled at once; the first streams live while later ones buffer their
        deltas. ``delta`` events carry raw text to append; the final ``done``
        event carries the cleaned, reassembled translation, which replaces what
        the deltas built.
        """
        usage = usage if usage is not None else Usage()
        timeout_s = timeout_s or self.settings.request_timeout_s
        glossary = self.request_glossary(source, target, glossary, glossary_id, key_id)
        guidance = self.guidance_for(guidance, target)
        [text], [(src, detected)] = await _off_loop(len(text), self._read_all, [text], source, target)
        self.check_pair(src, target)
        final: dict = {}
        if detected is not None:
            final["detectedLanguage"] = {"language": detected.language, "confidence": detected.confidence}

        def live(piece: str) -> str:  # a raw delta, in the script the caller asked for
            piece = strip_special_tokens(piece)
            return chinese.to_traditional(piece) if target == "zt" and piece else piece

        async with self.scheduler.ticket(timeout_s) as ticket:
            if detected is not None:
                yield StreamEvent("detected", dict(final["detectedLanguage"]))
            shortcut = await _off_loop(len(text), self._shortcut, text, src, target)
            if shortcut is not None:
                answer, converted = shortcut
                if converted:
                    yield StreamEvent("delta", {"text": answer})
                yield StreamEvent("done", {"translatedText": answer})
                return
            planned = Usage()
            plan, segments = await _off_loop(self._planning_cost(text, src, target, tm), self._prepare, text,
                                             src, target, fmt, planned, glossary,
                                             0.0, None, None, key_id, tm, None, guidance)
            usage.add(planned)
            queues: list[asyncio.Queue[str]] = [asyncio.Queue() for _ in segments]
            # A marked segment streams no raw deltas: they would show the view's tags, and its
            # final text may still move them (the "segment" event carries it).
            futures = [ticket.submit(item.request, on_delta=None if item.marked else queue.put_nowait,
                                     turns=item.sentences)
                       if item.request else None for item, queue in zip(segments, queues)]
            for i, (item, future, queue) in enumerate(zip(segments, futures, queues)):
                if item.gap:
                    yield StreamEvent("delta", {"text": item.gap})
                if item.one_by_one:
                    await self._split(ticket, item, usage, target)
                if future is None:
                    yield StreamEvent("delta", {"text": item.output or ""})
                    yield StreamEvent("segment", {"index": i, "gap": item.gap, "text": item.output or ""})
                    continue
                while not future.done():
                    getter = asyncio.ensure_future(queue.get())
                    try:
                        done, _ = await asyncio.wait(
                            {getter, future}, timeout=max(0.0, ticket.remaining_s),
                            return_when=asyncio.FIRST_COMPLETED,
                        )
                    finally:  # also when the stream is cancelled here: a getter left waiting is a leaked task
                        if not getter.done():
                            getter.cancel()
                    if getter in done:
                        piece = live(getter.result())
                        if piece:
                            yield StreamEvent("delta", {"text": piece})
                    if not done:
                        break
                outcome = await ticket.wait_one(future)
                while not queue.empty():  # deltas that raced the result
                    piece = live(queue.get_nowait())
                    if piece:
                        yield StreamEvent("delta", {"text": piece})
                cleaned = await self._complete(ticket, item, outcome, usage, target)
                yield StreamEvent("segment", {"index": i, "gap": item.gap, "text": cleaned})
        answer = await _off_loop(len(text), plan.assemble, [item.output or "" for item in segments])
        yield StreamEvent("done", {"translatedText": answer, **final})

    def describe(self) -> dict:
        return {
            "model": self.model.model,
            "engine": self.model.engine,
            "languages": [{"code": c, "name": language_name(c)} for c in self.languages],
        }


async def _off_loop(chars: int, work: Callable, *args):
    """``work(*args)``, in a worker thread when it reads more than OFF_LOOP_CHARS of text."""
    if chars > OFF_LOOP_CHARS:
        with abandon.stoppable() as stop:
            try:
                return await asyncio.to_thread(work, *args)
            except asyncio.CancelledError:
                stop.set()  # the thread runs on to its next abandon.check(), then ends
                raise
    return work(*args)
