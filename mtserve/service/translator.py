"""The translation service: the one place that turns a request into engine work.

A ``TranslationRequest`` comes in (``mtserve.service.request``). The service settles what it
names (a stored glossary, the formality the target can take), detects the source if asked, and
runs each text down one per-segment path, which ``translate`` and ``stream`` share:

- planning (``planning``): the text cut into segments (sentences, or HTML text nodes), each served
  passed through, from the translation memory, from the cache, or by an engine request;
- the engine requests scheduled on the shared engine (``scheduler``), fair-queued with every other
  request's;
- finishing (``finishing``): what the model adds cleaned off, the guardrails' check and their one
  stricter retry; markup kept on its words (``markup_keeping``); a segment of several sentences
  that dropped one redone one sentence at a time;
- the outputs reassembled in order, with the original whitespace and markup.

The API layer only maps its fields to the request and the results back; it never sees an engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from mtserve.engines.base import NO_GUIDANCE, Engine, Guidance, ModelInfo
from mtserve.engines.base import PromptTooLong as PromptTooLong  # the layers above see no engine
from mtserve.service import guardrails
from mtserve.service.cache import TranslationCache
from mtserve.service.finishing import Finisher, account
from mtserve.service.glossary import (
    GlossaryFile,
    GlossaryScope,
    UnknownGlossary,
    UnusableGlossaryId,
    matching_entries,
    merge,
    scope_for,
)
from mtserve.service.glossary_store import GlossaryStore
from mtserve.service.job import SegmentOutcome
from mtserve.service.markup_keeping import MarkupKeeper
from mtserve.service.metrics import Metrics
from mtserve.service.planning import OFF_LOOP_CHARS as OFF_LOOP_CHARS
from mtserve.service.planning import Planner, Segment, TextOptions, off_loop, shortcut
from mtserve.service.request import (
    Delta,
    Detected,
    Done,
    FormalityUnsupported,
    SegmentDone,
    StreamEvent,
    Translation,
    TranslationRequest,
    UnsupportedLanguage,
    Usage,
)
from mtserve.service.scheduler import Scheduler, Ticket
from mtserve.service.style_rules import StyleRuleStore, UnknownStyleRule
from mtserve.service.tm import TranslationMemory
from mtserve.settings import Settings
from mtserve.text import chinese, markup
from mtserve.text.cleanup import clean_translation, strip_special_tokens
from mtserve.text.detect import Detection, LanguageDetector
from mtserve.text.encoding import repair_mojibake
from mtserve.text.languages import FORMAL_REGISTERS, language_name

log = logging.getLogger(__name__)
T = TypeVar("T")

ALTERNATIVE_TEMPERATURE = 0.7
ALTERNATIVE_ROUNDS = 2  # sampling rounds to find N distinct alternatives; the second samples hotter
FORMALITY_REQUIRED = ("more", "less")
FORMALITY_PREFERRED = ("prefer_more", "prefer_less")
# The targets a formality is followed into: those DeepL offers it for, whose clients expect it there
# and nowhere else. Chinese, Korean, Turkish, Ukrainian and Czech mark a register too
# (FORMAL_REGISTERS) but are not among them: asked for "more", the model used Chinese 您 in 2 of 8
# sentences (QUALITY.md, formality), and the others were never measured.
FORMALITY_TARGETS = frozenset({"de", "es", "fr", "it", "ja", "nl", "pl", "pt", "ru"})


def follows_formality(model: ModelInfo, target: str) -> bool:
    """Whether ``model`` is told a formality into ``target``: a prompted engine, into one of
    ``FORMALITY_TARGETS`` whose register mtserve knows; a seq2seq model has no prompt to tell."""
    return model.prompted and target in FORMALITY_TARGETS and target in FORMAL_REGISTERS


@dataclass
class _Translated:
    text: str
    from_memory: bool = False


async def _all(work: Iterable[Awaitable[T]]) -> list[T]:
    """Every result, in order; the first failure cancels the rest (none is left running), then is raised."""
    tasks = [asyncio.ensure_future(w) for w in work]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class _InOrder:
    """A stream's view of one text's segments: deltas and finished segments arrive as the engine
    makes them, in any order, and leave in the text's order. The first unfinished segment streams
    live; the later ones buffer their deltas until it is done."""

    _END = object()

    def __init__(self, target: str):
        self.target = target
        self.events: asyncio.Queue = asyncio.Queue()
        self.segments: list[Segment] = []
        self.buffered: list[list[str]] = []
        self.finished: list[bool] = []
        self.cursor = 0

    def planned(self, segments: list[Segment]) -> None:
        self.segments = segments
        self.buffered = [[] for _ in segments]
        self.finished = [False] * len(segments)
        if segments:
            self._open(0)

    def on_delta(self, index: int) -> Callable[[str], None]:
        def delta(piece: str) -> None:
            piece = strip_special_tokens(piece)  # raw text, in the script the caller asked for
            piece = chinese.to_traditional(piece) if self.target == "zt" and piece else piece
            if not piece or self.finished[index]:
                return
            if index == self.cursor:
                self.events.put_nowait(Delta(piece))
            else:
                self.buffered[index].append(piece)
        return delta

    def finish(self, index: int) -> None:
        self.finished[index] = True
        while self.cursor < len(self.segments) and self.finished[self.cursor]:
            item = self.segments[self.cursor]
            if item.request is None:  # known at once, or redone sentence by sentence: nothing streamed
                self.events.put_nowait(Delta(item.output or ""))
            self.events.put_nowait(SegmentDone(self.cursor, item.gap, item.output or ""))
            self.cursor += 1
            if self.cursor < len(self.segments):
                self._open(self.cursor)

    def _open(self, index: int) -> None:
        if self.segments[index].gap:
            self.events.put_nowait(Delta(self.segments[index].gap))
        for piece in self.buffered[index]:
            self.events.put_nowait(Delta(piece))
        self.buffered[index].clear()

    def close(self) -> None:
        self.events.put_nowait(self._END)

    async def next(self) -> StreamEvent | None:
        event = await self.events.get()
        return None if event is self._END else event


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
        style_rules: StyleRuleStore | None = None,
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
        self.style_rules = style_rules  # style rules, for requests that send a style_id
        # The retry is a stricter *prompt*, so it is for engines that translate by prompting an LLM.
        self.guarded = settings.guardrails and self.model.prompted
        self.planner = Planner(settings, self.model, cache, metrics, self.glossary_file, memory)
        self.finisher = Finisher(metrics, self.guarded)
        self.markup = MarkupKeeper(self.model, self.planner, self.finisher, cache, metrics)

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

    def _read_all(self, texts: list[str], source: str, target: str,
                  one_source: bool = False) -> tuple[list[str], list[tuple[str, Detection | None]]]:
        """The texts repaired, and the source of each (detected when ``source`` is auto: once over
        all of them together with ``one_source``)."""
        texts = [self.repair(text) for text in texts]
        if one_source and source == "auto" and texts:
            found = self.resolve_source("\n".join(texts), source, target)
            return texts, [found] * len(texts)
        return texts, [self.resolve_source(text, source, target) for text in texts]

    def detect(self, text: str, limit: int = 3) -> list[Detection]:
        return self.detector.detect(self.repair(text), limit=limit)

    def resolve_source(self, text: str, source: str, target: str) -> tuple[str, Detection | None]:
        if source != "auto":
            return source, None
        fallback = "zh" if target != "zh" else "en"
        found = self.detector.best(text, fallback=fallback)
        return found.language, found

    # --- what a request names, settled ------------------------------------------------
    def glossary_scope(self, key_id: str | None) -> GlossaryScope:
        """Which stored glossaries the caller with API key ``key_id`` (None: no key) may see and use."""
        return scope_for(key_id, keys_on=bool(getattr(self.settings, "api_keys", False)))

    def named_glossary(self, glossary_id: str, source: str, target: str,
                       key_id: str | None = None) -> dict[str, str]:
        """The entries of stored glossary ``glossary_id``, if its pair is source->target.

        ``key_id`` is the caller's API key id: with keys on, a caller uses its own glossaries
        and the operator's (another key's is unknown to it). Raises UnknownGlossary (no such
        id: UnusableGlossaryId) or GlossaryMismatch (another pair, or source 'auto'); both say what to
        send instead.
        """
        if self.glossaries is None:
            raise UnusableGlossaryId(f"no glossary with id {glossary_id!r}: this service has no glossary store",
                                     glossary_id)
        try:
            return self.glossaries.for_pair(glossary_id, source, target, self.glossary_scope(key_id))
        except UnknownGlossary as exc:
            raise UnusableGlossaryId(str(exc), glossary_id) from None

    def supports_formality(self, target: str) -> bool:
        """Whether a formality request into ``target`` is followed (DeepL's ``supports_formality``)."""
        return follows_formality(self.model, target)

    def guidance_for(self, guidance: Guidance, target: str) -> Guidance:
        """What of a request's guidance the engine gets: all of it for a prompted engine, none for a
        seq2seq model, which has no prompt (so its translation is cached as one made without it).
        A formality the request requires (more, less) into a target that marks none is refused; one
        it prefers is followed where the target marks it and is the default elsewhere."""
        formality = guidance.formality
        if formality in FORMALITY_REQUIRED + FORMALITY_PREFERRED:
            followed = self.supports_formality(target)
            if not followed and formality in FORMALITY_REQUIRED:
                why = ("the model takes no prompt to tell it" if not self.model.prompted
                       else "mtserve follows formality only into " + ", ".join(sorted(FORMALITY_TARGETS)))
                raise FormalityUnsupported(  # "Target language ... formality": what DeepL's clients match
                    f"Target language {target} ({language_name(target)}) does not support formality "
                    f"{formality}: {why}; use prefer_{formality}, which falls back to the default")
            guidance = replace(guidance, formality=formality.removeprefix("prefer_") if followed else "default")
        elif formality != "default":
            raise FormalityUnsupported(f"'formality' must be one of default, more, less, prefer_more or "
                                       f"prefer_less, not {formality!r}")
        if not guidance or not self.model.prompted:
            return NO_GUIDANCE
        return guidance

    def style_instructions(self, style_id: str, source: str, target: str, key_id: str | None = None) -> tuple[str, ...]:
        """The custom instructions of stored style rule ``style_id`` that apply from ``source`` into
        ``target``. Raises UnknownStyleRule (also another key's) or StyleRuleMismatch (another target)."""
        if self.style_rules is None:
            raise UnknownStyleRule(f"Style rule not found: {style_id}", style_id)
        rule = self.style_rules.for_translation(style_id, target, self.glossary_scope(key_id))
        return rule.instructions_for(source)

    def settle(self, request: TranslationRequest) -> TranslationRequest:
        """The request with what it names resolved: its stored glossary's entries under its own
        (``glossary_id`` then None), its style rule's instructions before its own (``style_id`` then
        None), and its guidance as the engine will follow it. Raises what the caller must be told:
        UnknownGlossary, GlossaryMismatch, UnknownStyleRule, StyleRuleMismatch, FormalityUnsupported.
        Settling a settled request changes nothing, so a document job settles at upload and again per chunk."""
        glossary = dict(request.glossary) if request.glossary else None
        if request.glossary_id:
            glossary = merge(self.named_glossary(request.glossary_id, request.source, request.target,
                                                 request.key_id), glossary)
        guidance = request.guidance
        if request.style_id:
            styled = self.style_instructions(request.style_id, request.source, request.target, request.key_id)
            guidance = replace(guidance, instructions=styled + guidance.instructions)
        return replace(request, glossary=glossary, glossary_id=None, style_id=None,
                       guidance=self.guidance_for(guidance, request.target))

    def _options(self, request: TranslationRequest, source: str) -> TextOptions:
        glossary = dict(request.glossary) if request.glossary else None
        return TextOptions(source=source, target=request.target, fmt=request.format, glossary=glossary,
                           tags=request.tags, key_id=request.key_id, memory=request.memory,
                           memory_threshold=request.memory_threshold,
                           guidance=request.guidance)

    async def _admitted(self, request: TranslationRequest) -> tuple[TranslationRequest, list[str],
                                                                      list[tuple[str, Detection | None]]]:
        """The request settled, its texts read and their sources found and checked."""
        request = self.settle(request)
        texts, resolved = await off_loop(request.chars, self._read_all, list(request.texts), request.source,
                                         request.target, request.one_source)
        for source, _ in resolved:
            self.check_pair(source, request.target)
        return request, texts, resolved

    def _deadline_s(self, request: TranslationRequest) -> float:
        return request.deadline_s or self.settings.request_timeout_s

    # --- translation ------------------------------------------------------------
    async def translate(self, request: TranslationRequest, usage: Usage | None = None) -> list[Translation]:
        """Translate the request's texts as one call: one ticket, one deadline, all segments
        fair-queued. ``usage``, if given, is filled as the call runs (also when it fails)."""
        usage = usage if usage is not None else Usage()
        request, texts, resolved = await self._admitted(request)
        async with self.scheduler.ticket(self._deadline_s(request), request.priority, request.caller) as ticket:
            translated = await _all(self._translate_one(ticket, text, self._options(request, source), usage)
                                    for text, (source, _) in zip(texts, resolved))
            alternatives: list[list[str]] = [[] for _ in texts]
            if request.alternatives > 0 and request.format == "text":
                alternatives = await _all(
                    self._alternatives(ticket, text, self._options(request, source), request.alternatives,
                                       done.text, usage)
                    for text, (source, _), done in zip(texts, resolved, translated))
        return [
            Translation(text=t.text, source=source, detected=detected, alternatives=alts,
                        from_memory=t.from_memory)
            for t, (source, detected), alts in zip(translated, resolved, alternatives)
        ]

    async def stream(self, request: TranslationRequest, usage: Usage | None = None) -> AsyncIterator[StreamEvent]:
        """Yield one text's translation as it is generated, segment by segment, in order:
        ``Detected`` (for an "auto" source), ``Delta``s of raw text to append, a ``SegmentDone`` per
        segment made final, and ``Done`` with the whole translation, which replaces what the deltas
        built. The request is admitted before the first event, so a full queue is an error the
        caller can still answer with a status."""
        usage = usage if usage is not None else Usage()
        if len(request.texts) != 1:
            raise ValueError("a stream translates one text")
        request, [text], [(source, detected)] = await self._admitted(request)
        async with self.scheduler.ticket(self._deadline_s(request), request.priority, request.caller) as ticket:
            if detected is not None:
                yield Detected(detected)
            answer = await off_loop(len(text), shortcut, text, source, request.target)
            if answer is not None:
                if answer[1]:  # converted between Chinese scripts
                    yield Delta(answer[0])
                yield Done(Translation(answer[0], source, detected))
                return
            in_order = _InOrder(request.target)
            work = asyncio.ensure_future(
                self._translate_one(ticket, text, self._options(request, source), usage, in_order))
            work.add_done_callback(lambda _: in_order.close())
            try:
                while (event := await in_order.next()) is not None:
                    yield event
                translated = await work  # raises what stopped it
            finally:
                if not work.done():  # the caller stopped reading: its engine work ends with it
                    work.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await work
        yield Done(Translation(translated.text, source, detected, from_memory=translated.from_memory))

    async def _translate_one(self, ticket: Ticket, text: str, options: TextOptions, usage: Usage,
                             in_order: _InOrder | None = None) -> _Translated:
        """One text down the per-segment path: planned, its engine requests submitted at once, each
        segment finished as its result comes (``in_order`` hears of each, for a stream), the outputs
        assembled."""
        answer = await off_loop(len(text), shortcut, text, options.source, options.target)
        if answer is not None:
            return _Translated(answer[0])
        planned = Usage()  # counted apart: several texts of one request may be planned at once
        plan, segments = await off_loop(self.planner.planning_cost(text, options), self.planner.prepare,
                                        text, options, planned)
        usage.add(planned)
        if in_order is not None:
            in_order.planned(segments)
        streams = in_order is not None
        futures = {
            i: ticket.submit(item.request, turns=item.sentences,
                             # a marked segment streams no raw deltas: they would show the view's tags,
                             # and its final text may still move them
                             on_delta=in_order.on_delta(i) if streams and not item.marked else None)
            for i, item in enumerate(segments) if item.request is not None
        }

        async def finish(index: int, item: Segment) -> None:
            if item.one_by_one:
                await self._split(ticket, item, usage)
            elif index in futures:
                outcome = await ticket.wait_one(futures[index])
                await self._complete(ticket, item, outcome, usage, guard=options.temperature == 0)
            if in_order is not None:
                in_order.finish(index)

        await _all(finish(i, item) for i, item in enumerate(segments))
        output = await off_loop(len(text), plan.assemble, [item.output or "" for item in segments])
        origins = {item.origin for item in segments}
        return _Translated(output, from_memory="memory" in origins and origins <= {"memory", "passthrough"})

    async def _complete(self, ticket: Ticket, item: Segment, outcome: SegmentOutcome, usage: Usage,
                        guard: bool = True) -> str:
        """An engine outcome made final: accounted, cleaned, checked by the guardrails, cached."""
        assert item.request is not None
        target = item.options.target
        account(usage, outcome)
        if item.sentences > 1 and guard and self.settings.guardrails:
            output = clean_translation(outcome.result.text, item.request.text)
            problem = guardrails.dropped_sentence(item.sentences, markup.strip_tags(output), target)
            if problem is not None:
                item.output = (await self._one_by_one(ticket, item, problem, usage)).text
                if item.key is not None:
                    self.cache.put(item.key, item.output)
                return item.output
        item.output = await self.finisher.finish(ticket, item.request, outcome, usage, target, item.terms,
                                                 guard=guard)
        if item.marked is not None:
            item.output = await self.markup.keep(ticket, item, item.output, usage, target)
        if item.key is not None:
            self.cache.put(item.key, item.output)
        return item.output

    async def _split(self, ticket: Ticket, item: Segment, usage: Usage) -> str:
        translated = await self._one_by_one(ticket, item, None, usage)
        item.output, item.origin = translated.text, "memory" if translated.from_memory else "engine"
        return item.output

    async def _one_by_one(self, ticket: Ticket, item: Segment, problem: guardrails.Problem | None,
                          usage: Usage) -> _Translated:
        """The fallback for a segment of several sentences whose translation dropped one (or one of
        whose sentences is in the TM: ``problem`` None): the segment planned again with no budget,
        so each sentence goes to the engine on its own (and through the cache, the TM, the markup
        checks and the guardrails), and joined as before."""
        if problem is not None:
            usage.sentence_fallbacks += 1
            self.metrics.sentence_fallbacks.inc()
            log.info("sentence fallback", extra={"event": "sentence_fallback", "detail": problem.detail})
        options = replace(item.options, fmt="text" if item.options.fmt == "text" else "markup",
                          glossary=item.entries, tags=None, budget=0, temperature=0.0, seed=None)
        return await self._translate_one(ticket, item.text, options, usage)

    async def _alternatives(self, ticket: Ticket, text: str, options: TextOptions, count: int, best: str,
                            usage: Usage) -> list[str]:
        """Up to ``count`` sampled translations (fixed seeds), distinct from the best and each other.

        Candidates that differ only in case, spacing or punctuation count as one,
        and candidates the guardrails reject (left untranslated, looping) are
        dropped. If a round yields too few, a second, hotter one fills the gap.
        """
        if shortcut(text, options.source, options.target) is not None:
            return []
        seen = {guardrails._normal(best)}
        distinct: list[str] = []
        next_seed = 1
        terms = matching_entries(self.planner.glossary_for(options.source, options.target, options.glossary), text)
        for round_ in range(ALTERNATIVE_ROUNDS):
            wanted = count - len(distinct)
            if wanted <= 0:
                break
            seeds = range(next_seed, next_seed + wanted + round_)
            next_seed += len(seeds)
            candidates = await _all(
                self._translate_one(ticket, text, replace(options, fmt="text", seed=seed,
                                                          temperature=ALTERNATIVE_TEMPERATURE + 0.3 * round_),
                                    usage)
                for seed in seeds)
            for candidate in (c.text for c in candidates):
                key = guardrails._normal(candidate)
                if not key or key in seen or len(distinct) >= count:
                    continue
                rejected = self.guarded and guardrails.check(text, candidate, options.source, options.target,
                                                             glossary=terms, context=options.guidance.context)
                if rejected:
                    continue
                seen.add(key)
                distinct.append(candidate)
        return distinct

    def describe(self) -> dict:
        return {
            "model": self.model.model,
            "engine": self.model.engine,
            "languages": [{"code": c, "name": language_name(c)} for c in self.languages],
        }
