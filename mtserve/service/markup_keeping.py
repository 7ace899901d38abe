"""Markup inside a sentence kept through its translation.

A segment carries numbered tags and placeholders (``mtserve.text.markup``), and the engine
translates the sentence whole. The output must hold the same tags, properly nested, and every
placeholder byte-identical; one that does not is retried once (strictly, and on llama.cpp under a
grammar that requires the tags). If that fails too, or the engine does not translate by prompting
(seq2seq), the fallback translates the tag-free sentence and each tag's content on its own, and puts
every tag on the words its content became; it never loses markup. In markup_mode "transfer" the
sentence is translated without its tags, and a second request puts them in. Spacing and case at tag
edges are then set for the target language. ``mtserve_markup_fallbacks`` counts the fallbacks.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from mtserve.engines.base import NO_GUIDANCE, Guidance, ModelInfo
from mtserve.service.cache import TranslationCache
from mtserve.service.finishing import Finisher, account, retry
from mtserve.service.glossary import matching_entries
from mtserve.service.metrics import Metrics
from mtserve.service.planning import Planner, Segment, engine_request, to_target_script
from mtserve.service.request import Usage
from mtserve.service.scheduler import Ticket
from mtserve.text import markup
from mtserve.text.cleanup import clean_translation, strip_special_tokens
from mtserve.text.punctuation import has_words

log = logging.getLogger(__name__)


def padded(first: str, retry: str) -> str | None:
    """Why a retry that passes the tag check is still not taken: a grammar that requires the tags
    can make a small model invent words to hang them on ("... This is a <i1>past</i1> event.")."""
    before, after = len(markup.strip_tags(first).strip()), len(markup.strip_tags(retry).strip())
    if after > 1.4 * before + 8:
        return f"the retry is much longer than the first answer ({after} against {before} characters)"
    return None


class MarkupKeeper:
    def __init__(self, model: ModelInfo, planner: Planner, finisher: Finisher, cache: TranslationCache,
                 metrics: Metrics):
        self.model = model
        self.planner = planner
        self.finisher = finisher
        self.cache = cache
        self.metrics = metrics

    async def keep(self, ticket: Ticket, item: Segment, output: str, usage: Usage, target: str) -> str:
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
            again = await retry(ticket, replace(item.request, strict=True, markup=True))
            if again is not None:
                account(usage, again)
                second = to_target_script(clean_translation(again.result.text, item.request.text),
                                          target, item.terms)
                problem = markup.check(source, second) or padded(output, second)
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

    async def _transfer_tags(self, ticket: Ticket, item: Segment, plain_output: str, usage: Usage,
                             target: str) -> str:
        """markup_mode "transfer": the tag-free translation is done; a second request puts the tags
        into it (llama.cpp: under a grammar that allows nothing else), and if that fails the check
        the fallback places them."""
        source = item.marked
        assert source is not None and item.request is not None
        plain_key = self.planner.key(item.source, target, markup.strip_tags(source), item.terms,
                                     guidance=item.guidance)
        self.cache.put(plain_key, plain_output)  # the same sentence sent without tags is now a hit
        anchors = await self._anchors(ticket, item, plain_output, usage, target)
        request = replace(item.request, text=source, transfer=plain_output, markup=True, anchors=anchors)
        [outcome] = await ticket.wait([ticket.submit(request)])
        account(usage, outcome)
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

    @staticmethod
    def _tag_contents(source: str) -> tuple[str, dict, dict[int, str]]:
        """(the tag-free view, its elements, the words each non-void tag encloses)."""
        plain, elements = markup.structure(source)
        contents = {id_: markup.strip_tags(plain[e.start:e.end]).strip() for id_, e in elements.items()
                    if not e.void and has_words(plain[e.start:e.end])}
        return plain, elements, contents

    async def _anchors(self, ticket: Ticket, item: Segment, plain_output: str, usage: Usage,
                       target: str) -> tuple[tuple[int, int, int], ...]:
        """Where each tag's content, translated on its own, occurs once in the translation: the
        transfer grammar pins those tags there, and leaves the model the rest."""
        assert item.marked is not None
        _, elements, contents = self._tag_contents(item.marked)
        translated = await asyncio.gather(*[
            self.translate_plain(ticket, text, item.source, target, usage, item.entries, item.guidance)
            for text in contents.values()])
        found = markup.anchors(plain_output, dict(zip(contents, translated)), elements)
        return tuple((id_, start, end) for id_, (start, end) in sorted(found.items()))

    async def _place_tags(self, ticket: Ticket, item: Segment, plain_output: str | None, usage: Usage,
                          target: str) -> str:
        """The fallback: the tag-free sentence translated (unless given), each tag's content
        translated on its own to find its words, and the tags put on them."""
        source = item.marked
        assert source is not None
        _, _, contents = self._tag_contents(source)
        texts = ([] if plain_output is not None else [markup.strip_tags(source)]) + list(contents.values())
        translated = await asyncio.gather(*[
            self.translate_plain(ticket, text, item.source, target, usage, item.entries, item.guidance)
            for text in texts])
        if plain_output is None:
            plain_output, translated = translated[0], translated[1:]
        return markup.project(source, plain_output, dict(zip(contents, translated)), target)

    async def translate_plain(self, ticket: Ticket, text: str, source: str, target: str, usage: Usage,
                              entries: dict[str, str], guidance: Guidance = NO_GUIDANCE) -> str:
        """One sentence translated as plain text (cached, cleaned, guarded), for the fallback."""
        terms = matching_entries(entries, text)
        key = self.planner.key(source, target, text, terms, guidance=guidance)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        request = engine_request(text, source, target, terms, guidance=guidance)
        [outcome] = await ticket.wait([ticket.submit(request)])
        account(usage, outcome)
        output = await self.finisher.finish(ticket, request, outcome, usage, target, terms)
        self.cache.put(key, output)
        return output
