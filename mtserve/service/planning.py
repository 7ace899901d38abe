"""Planning: a text cut into segments, and each segment's way decided once, before any engine work.

A segment is served passed through (no words), from the translation memory (an exact match), from
the cache (greedy decoding only), or by an engine request, with the memory's most similar entries
as examples. Long texts are planned in a worker thread (``off_loop``), so a document of megabytes
cannot stall the event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Callable

from mtserve.engines.base import NO_GUIDANCE, EngineRequest, Guidance, ModelInfo
from mtserve.service.cache import CacheKey, TranslationCache
from mtserve.service.glossary import GlossaryFile, canonical, matching_entries, merge
from mtserve.service.metrics import Metrics
from mtserve.service.request import Usage
from mtserve.service.tm import TranslationMemory
from mtserve.settings import Settings
from mtserve.text import abandon, chinese, markup
from mtserve.text.html import HTML, TagHandling, parse_html
from mtserve.text.punctuation import has_words, passthrough
from mtserve.text.segment import count_sentences, join_pieces, split_text
from mtserve.text.spacing import respace_for_target

# Text longer than this is read, cut and planned in a worker thread: CPU-bound Python there still
# shares the GIL, but the event loop gets it back every few milliseconds, so a document of
# megabytes cannot stall /health or the other requests. Shorter text stays on the loop, where the
# thread hop (~0.1 ms) would cost more than the work.
OFF_LOOP_CHARS = 4_000
CHINESE = ("zh", "zt")
TM_PAIRS_TTL_S = 5.0  # how long the TM's list of pairs with entries is trusted before it is read again


@dataclass(frozen=True)
class TextOptions:
    """How one text is translated: its request's choices, with the source settled for this text.

    ``glossary`` is the request's own layers (a named glossary under the request's entries); the
    server-wide file goes under them per pair, in ``Planner.prepare``. ``budget`` is
    segment_budget_chars unless given (the sentence-by-sentence fallback gives 0).
    """

    source: str
    target: str
    fmt: str = "text"
    glossary: dict[str, str] | None = None
    tags: TagHandling | None = None
    key_id: str | None = None
    memory: bool = True
    memory_threshold: float | None = None  # least similarity of a TM example; None: tm_min_similarity
    guidance: Guidance = NO_GUIDANCE
    temperature: float = 0.0
    seed: int | None = None
    budget: int | None = None


@dataclass
class Segment:
    """One segment of a text, prepared once: its output is known now (cached, passed through, from
    the memory), or it carries the engine request that will produce it."""

    gap: str  # what a streaming preview shows before it
    options: TextOptions
    entries: dict[str, str] = field(default_factory=dict)  # the glossary for its pair, all layers
    output: str | None = None
    request: EngineRequest | None = None
    terms: dict[str, str] = field(default_factory=dict)  # the entries whose terms occur in it
    key: CacheKey | None = None  # where the result is cached; None when it must not be
    # Its tags and placeholders must come back: the segment as the caller sent it, else None.
    marked: str | None = None
    # markup_mode "transfer": the request is the tag-free sentence; its tags go in afterwards
    transfer: bool = False
    # Several whole sentences (segment_budget_chars): how many, and the segment itself, which the
    # fallback that translates them one by one plans again.
    sentences: int = 1
    text: str = ""
    one_by_one: bool = False  # a sentence of it is in the translation memory: it goes sentence by sentence
    origin: str = "engine"  # where its output comes from: "engine", "cache", "memory", or "passthrough"

    @property
    def source(self) -> str:
        return self.options.source

    @property
    def guidance(self) -> Guidance:
        return self.options.guidance


@dataclass
class Plan:
    """A text cut into the pieces that go to the engine, and how to put it back."""

    segments: list[str]
    assemble: Callable[[list[str]], str]
    gaps: list[str]  # what a streaming preview shows before each segment


def to_target_script(text: str, target: str, terms: dict[str, str]) -> str:
    """The output in the script the caller asked for (the engine writes Simplified Chinese)."""
    if target == "zt":
        text = chinese.to_traditional(text)
        for translation in terms.values():  # keep the caller's own character forms
            text = text.replace(chinese.to_traditional(chinese.to_simplified(translation)), translation)
    elif target == "zh":
        text = chinese.to_simplified(text)
    return text


def engine_request(segment: str, source: str, target: str, terms: dict[str, str],
                   temperature: float = 0.0, seed: int | None = None,
                   marked: bool = False, examples: tuple[tuple[str, str], ...] = (),
                   guidance: Guidance = NO_GUIDANCE) -> EngineRequest:
    """What the engine sees: Chinese in Simplified script, whatever the caller sent or wants."""
    text = segment
    if source in CHINESE and (source == "zt" or chinese.is_traditional(segment)):
        text, source = chinese.to_simplified(segment), "zh"
        terms = {chinese.to_simplified(t): tr for t, tr in terms.items()}
    if target == "zt":
        target = "zh"
        terms = {t: chinese.to_simplified(tr) for t, tr in terms.items()}
    return EngineRequest(text=text, source=source, target=target, temperature=temperature,
                         seed=seed, glossary=tuple(terms.items()), markup=marked, examples=examples,
                         guidance=guidance)


def shortcut(text: str, source: str, target: str) -> tuple[str, bool] | None:
    """(the answer, whether it was converted) when no engine is needed: the same language,
    blank text, or a change of Chinese script (OpenCC)."""
    if source == target or not text.strip():
        return text, False
    if {source, target} == set(CHINESE):
        return (chinese.to_traditional(text) if target == "zt" else chinese.to_simplified(text)), True
    return None


def marked_view(segment: str, fmt: str) -> str | None:
    """The segment, if a translation of it must keep tags or placeholders: in plain text only
    placeholders count, and a view whose tags do not nest is translated as plain text."""
    if fmt == "text":
        return segment if markup.PLACEHOLDER.search(segment) and not markup.TAG.search(segment) else None
    if not markup.has_markup(segment) or not markup.balanced(segment):
        return None
    return segment


class Planner:
    """Cuts texts into segments and decides how each is served; shared by translate and stream."""

    def __init__(self, settings: Settings, model: ModelInfo, cache: TranslationCache, metrics: Metrics,
                 glossary_file: GlossaryFile, memory: TranslationMemory | None):
        self.settings = settings
        self.model = model
        self.cache = cache
        self.metrics = metrics
        self.glossary_file = glossary_file
        self.memory = memory

    # --- cutting ------------------------------------------------------------------------------
    def plan(self, text: str, source: str, target: str, fmt: str,
             tags: TagHandling | None = None, budget: int | None = None) -> Plan:
        """``budget``: segment_budget_chars unless given (the sentence-by-sentence fallback gives 0)."""
        budget = self.settings.segment_budget_chars if budget is None else budget
        if fmt in ("html", "xml"):
            doc = parse_html(text, tags or (HTML if fmt == "html" else TagHandling("xml")))
            node_plans = [self.plan(node, source, target, "markup", budget=budget) for node in doc.segments]
            segments = [seg for plan in node_plans for seg in plan.segments]

            def assemble(outputs: list[str]) -> str:
                rendered, at = [], 0
                for plan in node_plans:
                    n = len(plan.segments)
                    rendered.append(plan.assemble(outputs[at : at + n]))
                    at += n
                return doc.render(rendered)

            return Plan(segments, assemble, [""] + [" "] * (len(segments) - 1))
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
        return Plan(segments, lambda outputs: join_pieces(pieces, outputs), gaps)

    def _plan_icu(self, text: str, arguments: list[markup.IcuArgument], source: str, target: str,
                  fmt: str, budget: int) -> Plan:
        """An ICU message: the sentence with ``{count}`` for each plural/select argument, and each
        branch's text on its own (its ``#`` a placeholder); the skeleton is kept."""
        simple = markup.simple_form(text, arguments)
        plans = [self.plan(simple, source, target, fmt, budget=budget)]
        for argument in arguments:
            plans += [self.plan(markup.branch_text(branch), source, target, fmt, budget=budget)
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

        return Plan([seg for plan in plans for seg in plan.segments], assemble,
                    [gap for plan in plans for gap in plan.gaps])

    def key(self, source: str, target: str, segment: str, terms: dict[str, str] | None = None,
            fmt: str = "text", examples: tuple[tuple[str, str], ...] = (),
            guidance: Guidance = NO_GUIDANCE) -> CacheKey:
        """Where a translation is cached: one made with TM examples, or with a request's context,
        instructions or formality, is cached apart."""
        context = canonical(terms or {}) + (canonical(dict(examples)) if examples else "")
        return CacheKey(self.model.model, source, target, fmt, segment, context, guidance.key())

    def glossary_for(self, source: str, target: str, glossary: dict[str, str] | None) -> dict[str, str]:
        """The server-wide entries for the pair, overridden by the request's own."""
        return merge(self.glossary_file.entries_for(source, target), glossary)

    # --- the translation memory ---------------------------------------------------------------
    def memory_for(self, source: str, target: str, use: bool) -> TranslationMemory | None:
        """The TM, if this request uses it and it holds entries for the pair (checked cheaply)."""
        if not use or self.memory is None:
            return None
        # a write through this process's store (the /tm API) is seen at once, one by `mtserve tm` within the TTL
        return self.memory if (source, target) in self.memory.pairs(TM_PAIRS_TTL_S) else None

    @staticmethod
    def _stored_translation(memory: TranslationMemory, text: str, source: str, target: str,
                            key_id: str | None) -> str | None:
        """An exact match's translation, if it keeps the text's placeholders (an entry whose translation
        lost one is no answer for it)."""
        found = memory.exact(text, source, target, owner=key_id)
        if found is None or markup.placeholders(found.target) != markup.placeholders(text):
            return None
        return found.target

    def planning_cost(self, text: str, options: TextOptions) -> int:
        """What planning ``text`` costs, in characters read: a translation memory's lookups (an
        index query and a fuzzy ranking per segment, about a millisecond each) count as a long
        text, so they run off the event loop too."""
        if self.memory_for(options.source, options.target, options.memory) is not None:
            return OFF_LOOP_CHARS + 1
        return len(text)

    def _from_memory(self, memory: TranslationMemory, segment: str, source: str, target: str,
                     key_id: str | None, threshold: float | None = None
                     ) -> tuple[str | None, tuple[tuple[str, str], ...]]:
        """(an exact match's translation, or None; else the most similar entries as examples, at least
        ``threshold`` similar: the request's, else tm_min_similarity)."""
        stored = self._stored_translation(memory, segment, source, target, key_id)
        if stored is not None:
            return stored, ()
        if not self.model.prompted or self.settings.tm_k <= 0:
            return None, ()
        least = self.settings.tm_min_similarity if threshold is None else threshold
        similar = memory.similar(segment, source, target, k=self.settings.tm_k, min_similarity=least,
                                 owner=key_id, candidates=self.settings.tm_candidates)
        return None, tuple((m.entry.source, m.entry.target) for m in similar)

    def _whole_from_memory(self, memory: TranslationMemory, text: str, options: TextOptions,
                           entries: dict[str, str], usage: Usage) -> tuple[Plan, list[Segment]] | None:
        """The text as one exact match, when the memory holds it whole: an entry is whatever its
        translator translated at once (a paragraph, a UI string of two sentences), so it is looked
        up before the text is cut into sentences. Its outer whitespace is kept."""
        core = text.strip()
        stored = self._stored_translation(memory, core, options.source, options.target, options.key_id)
        if stored is None:
            return None
        lead, trail = text[:len(text) - len(text.lstrip())], text[len(text.rstrip()):]
        item = Segment(lead, options, entries)
        item.output = to_target_script(stored, options.target, {}) if options.target in CHINESE else stored
        item.origin = "memory"
        usage.segments += 1
        usage.tm_segments += 1
        self.metrics.tm_exact.inc()
        return Plan([core], lambda outputs: lead + outputs[0] + trail, [lead]), [item]

    def _memory_has_a_sentence(self, memory: TranslationMemory, segment: str, source: str, target: str,
                               key_id: str | None) -> bool:
        """Whether one sentence of a (plain) segment of several is an exact match in the TM."""
        pieces = split_text(segment, source, self.settings.segment_max_chars)
        return any(self._stored_translation(memory, p.text, source, target, key_id) is not None
                   for p in pieces if p.translate)

    # --- deciding --------------------------------------------------------------------------------
    def prepare(self, text: str, options: TextOptions, usage: Usage) -> tuple[Plan, list[Segment]]:
        """Cut a text into segments and decide, once, how each is served: passed through (no
        words), from the translation memory (an exact match), from the cache (greedy decoding
        only), or by an engine request (with the memory's most similar entries as examples)."""
        source, target, fmt = options.source, options.target, options.fmt
        plan = self.plan(text, source, target, fmt, options.tags, options.budget)
        grouped = (self.settings.segment_budget_chars if options.budget is None else options.budget) > 0
        entries = self.glossary_for(source, target, options.glossary)
        memory = self.memory_for(source, target, options.memory)
        if memory is not None and fmt == "text" and len(plan.segments) > 1:
            whole = self._whole_from_memory(memory, text, options, entries, usage)
            if whole is not None:
                return whole
        segments: list[Segment] = []
        for segment, gap in zip(plan.segments, plan.gaps):
            abandon.check()
            item = Segment(gap, options, entries)
            segments.append(item)
            if not has_words(markup.strip_tags(segment) if fmt != "text" else segment):
                item.output, item.origin = passthrough(segment, target), "passthrough"
                continue
            item.marked = marked_view(segment, fmt)
            item.terms = matching_entries(entries, markup.strip_tags(segment) if item.marked else segment)
            if grouped:
                item.sentences = count_sentences(markup.strip_tags(segment) if fmt != "text" else segment, source)
                item.text = segment
            examples: tuple[tuple[str, str], ...] = ()
            if memory is not None and (item.marked is None or markup.TAG.search(segment) is None):
                # plain text, or text whose only markup is placeholders (%s, {name}): a memory's entries
                # are plain text, and a software catalog's strings carry their placeholders on both sides
                exact, examples = self._from_memory(memory, segment, source, target, options.key_id,
                                                    options.memory_threshold)
                if exact is not None:  # served as stored: never cached, no engine call
                    item.output = to_target_script(exact, target, {}) if target in CHINESE else exact
                    item.origin = "memory"
                    usage.tm_segments += 1
                    self.metrics.tm_exact.inc()
                    continue
                if item.sentences > 1 and self._memory_has_a_sentence(memory, segment, source, target,
                                                                      options.key_id):
                    item.one_by_one = True  # its stored sentences are served as stored
                    continue
                if examples:
                    usage.tm_examples += 1
                    self.metrics.tm_examples.inc()
            greedy = options.temperature == 0
            key = self.key(source, target, segment, item.terms, "markup" if item.marked else "text", examples,
                           options.guidance)
            cached = self.cache.get(key) if greedy else None
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
            item.request = engine_request(engine_text, source, target, item.terms, options.temperature,
                                          options.seed, marked=marked, examples=examples,
                                          guidance=options.guidance)
            item.key = key if greedy else None  # a sampled alternative is not the translation
        usage.segments += len(plan.segments)
        return plan, segments


async def off_loop(chars: int, work: Callable, *args):
    """``work(*args)``, in a worker thread when it reads more than OFF_LOOP_CHARS of text."""
    if chars > OFF_LOOP_CHARS:
        with abandon.stoppable() as stop:
            try:
                return await asyncio.to_thread(work, *args)
            except asyncio.CancelledError:
                stop.set()  # the thread runs on to its next abandon.check(), then ends
                raise
    return work(*args)
