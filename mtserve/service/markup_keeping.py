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
import re
from dataclasses import replace

from mtserve.engines.base import NO_GUIDANCE, Guidance, ModelInfo, PromptTooLong
from mtserve.engines.prompts import NO_COUNTERPART
from mtserve.service.cache import TranslationCache
from mtserve.service.finishing import Finisher, account, retry
from mtserve.service.glossary import matching_entries
from mtserve.service.metrics import Metrics
from mtserve.service.planning import Planner, Segment, engine_request, to_target_script
from mtserve.service.request import Usage
from mtserve.service.scheduler import Ticket
from mtserve.text import dictionary, markup
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
        """markup_mode "transfer": the tag-free translation is done; the words each tag belongs on are
        found in it, a second request puts the tags in (llama.cpp: under a grammar that allows nothing
        else, with the found tags pinned), and if that fails the check the fallback places them. A tag
        whose words the translation lacks means the sentence lost content: it is translated again,
        strictly, once."""
        source = item.marked
        assert source is not None and item.request is not None
        anchors, lost = await self._anchors(ticket, item, plain_output, usage, target)
        if lost and self.model.prompted:
            log.info("content retry", extra={"event": "content_retry", "detail": ", ".join(lost)})
            must = "Leave nothing out: the translation must also render " + "、".join(dict.fromkeys(lost)) + "."
            guidance = replace(item.request.guidance, instructions=item.request.guidance.instructions + (must,))
            again = await retry(ticket, replace(item.request, strict=True, guidance=guidance))
            if again is not None:
                account(usage, again)
                second = await self.finisher.finish(ticket, item.request, again, usage, target, item.terms,
                                                    guard=False)
                second_anchors, second_lost = await self._anchors(ticket, item, second, usage, target)
                if len(second_lost) < len(lost):
                    plain_output, anchors, lost = second, second_anchors, second_lost
        if lost:
            usage.content_dropped += 1
        plain_key = self.planner.key(item.source, target, markup.strip_tags(source), item.terms,
                                     guidance=item.guidance)
        self.cache.put(plain_key, plain_output)  # the same sentence sent without tags is now a hit
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
        elif self._checkable(item):
            output = self._unplaced_to_end(item, output, {id_ for id_, _, _ in anchors}, usage)
        return markup.fix_edges(source, output, target)

    def _checkable(self, item: Segment) -> bool:
        """Whether the dictionary can say if a tag's words in the output translate its source words."""
        return item.source in CHINESE and item.options.target == "en"

    def _unplaced_to_end(self, item: Segment, output: str, pinned: set[int], usage: Usage) -> str:
        """The output with each tag that was not pinned, and whose words there no gloss of its source
        words supports, moved to the sentence's end as an empty pair: a tag on words it does not
        belong to changes what the author stressed; one at the edge only loses the stress."""
        assert item.marked is not None
        _, _, contents = self._tag_contents(item.marked)
        output_view, placed = markup.structure(output)
        moved = []
        for id_, words in contents.items():
            if id_ in pinned or id_ not in placed or not dictionary.known(words):
                continue
            inside = markup.strip_tags(output_view[placed[id_].start:placed[id_].end])
            if dictionary.senses(words) & dictionary.english_stems(inside) or _kept_as_written(words):
                continue
            moved.append(id_)
        for id_ in moved:
            output = markup.move_to_end(output, id_)
        usage.markup_unplaced += len(moved)
        return output

    @staticmethod
    def _tag_contents(source: str) -> tuple[str, dict, dict[int, str]]:
        """(the tag-free view, its elements, the words each non-void tag encloses)."""
        plain, elements = markup.structure(source)
        contents = {id_: markup.strip_tags(plain[e.start:e.end]).strip() for id_, e in elements.items()
                    if not e.void and has_words(plain[e.start:e.end])}
        return plain, elements, contents

    async def _anchors(self, ticket: Ticket, item: Segment, plain_output: str, usage: Usage,
                       target: str) -> tuple[tuple[tuple[int, int, int], ...], list[str]]:
        """(where each tag goes in the translation, as far as it can be established; the tags' words
        that have no counterpart in it). A tag goes on the words the engine says translate its words,
        asked with those words marked in their sentence, so a negation or a number is found as this
        sentence renders it; for a tag it could not say, its content translated on its own and found
        once. The transfer grammar pins those tags there, and leaves the model the rest."""
        assert item.marked is not None
        plain, elements, contents = self._tag_contents(item.marked)
        asked = await asyncio.gather(*[self._aligned(ticket, item, plain, elements[id_], plain_output, usage)
                                       for id_ in contents])
        found = {id_: span for id_, (span, _) in zip(contents, asked) if span is not None}
        lost = [word for _, missing in asked for word in missing]
        unanswered = {id_: text for id_, text in contents.items() if id_ not in found}
        if unanswered:
            translated = await asyncio.gather(*[
                self.translate_plain(ticket, text, item.source, target, usage, item.entries, item.guidance)
                for text in unanswered.values()])
            by_content = markup.anchors(plain_output, dict(zip(unanswered, translated)), elements)
            found.update({id_: span for id_, span in by_content.items() if id_ not in found})
        found = markup.consistent(found, elements)
        return tuple((id_, start, end) for id_, (start, end) in sorted(found.items())), lost

    async def _aligned(self, ticket: Ticket, item: Segment, plain: str, element, plain_output: str,
                       usage: Usage) -> tuple[tuple[int, int] | None, list[str]]:
        """(the span of ``plain_output`` that translates ``element``'s words, or None where that
        cannot be established; those of its words that have no counterpart in it). Words
        kept as written (a command, a URL, a number in digits) are found as they are. Else the engine
        is asked, with the words marked [[ ]] in their sentence, and its answer is taken where the
        dictionary (Chinese into English) can tell it apart from a guess: an answer no gloss of the
        words supports is replaced by the run of translation words the glosses do support. A span
        grows over the neighbouring words the glosses support ("within" -> "within 24 hours")."""
        assert item.request is not None
        words = plain[element.start:element.end]
        at = (element.start + element.end) / 2 / max(1, len(plain))
        literal = _kept_as_written(words)
        if literal:
            span = markup.locate(plain_output, literal, at)
            return _with_quotes(plain_output, span), [literal] if span is None else []
        marked = f"{plain[:element.start]}[[{words}]]{plain[element.end:]}"
        request = replace(item.request, text=marked, transfer=plain_output, align=True, markup=False,
                          examples=(), glossary=(), strict=False)
        try:
            [outcome] = await ticket.wait([ticket.submit(request)])
        except PromptTooLong:
            return None, []
        account(usage, outcome)
        answer = strip_special_tokens(outcome.result.text).strip()
        glossed = self._checkable(item) and dictionary.known(words)
        if not glossed:
            return (markup.locate(plain_output, answer, at) if answer and answer != NO_COUNTERPART else None), []
        senses = dictionary.senses(words) | dictionary.numbers_in(words)
        lost = dictionary.without_counterpart(words, plain_output)
        if answer and answer != NO_COUNTERPART and senses & dictionary.english_stems(answer):
            span = markup.locate(plain_output, answer, at)
            return (_grown(plain_output, span, senses) if span is not None else None), lost
        return _glossed_run(plain_output, senses, at), lost

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


CHINESE = ("zh", "zt")
_AS_WRITTEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@%#&=?+~-]*(?:\s+[A-Za-z0-9][A-Za-z0-9_.:/@%#&=?+~-]*)*")


def _kept_as_written(words: str) -> str | None:
    """The part of a tag's words that a translation keeps as it is (a command, a URL, a name in Latin
    letters, a number in digits), when it is the whole of their content."""
    found = _AS_WRITTEN.findall(words)
    if len(found) != 1 or len(found[0]) < 2 * len(words.strip()) / 3:
        return None
    return found[0]


_TRANSLATION_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?(?:\.[A-Za-z]\.?)?")
def _supported(word: str, senses: frozenset[str]) -> bool:
    stems = dictionary.english_stems(word)
    return bool(stems) and (stems <= senses or bool(stems & senses) and len(stems) > 1)


def _grown(translation: str, span: tuple[int, int], senses: frozenset[str]) -> tuple[int, int]:
    """``span`` widened over the neighbouring words of ``translation`` that the glosses support."""
    words = [(m.start(), m.end(), _supported(m.group(), senses)) for m in _TRANSLATION_WORD.finditer(translation)]
    start, end = span
    inside = [k for k, (a, b, _) in enumerate(words) if a >= start and b <= end]
    if not inside:
        return span
    first, last = inside[0], inside[-1]
    while first > 0 and words[first - 1][2] and _within_phrase(translation, words[first - 1][1], words[first][0]):
        first -= 1
    while last + 1 < len(words) and words[last + 1][2] and _within_phrase(translation, words[last][1],
                                                                           words[last + 1][0]):
        last += 1
    return min(start, words[first][0]), max(end, words[last][1])


def _only_space(text: str, start: int, end: int) -> bool:
    return not text[start:end].strip()


def _within_phrase(text: str, start: int, end: int) -> bool:
    """Whether the gap between two words is a space or a comma inside a phrase ("December 31, 2024")."""
    return text[start:end].strip() in ("", ",")


def _with_quotes(translation: str, span: tuple[int, int] | None) -> tuple[int, int] | None:
    """``span`` with the backticks or quotes the model put around words kept as written ("run
    `make run`"): inside the tag they go with the words, and code keeps its own."""
    if span is None:
        return None
    start, end = span
    while start > 0 and end < len(translation) and translation[start - 1] == translation[end] and \
            translation[end] in "`'\"":
        start, end = start - 1, end + 1
    return start, end


def _glossed_run(translation: str, senses: frozenset[str], at: float) -> tuple[int, int] | None:
    """The run of consecutive translation words each of which a gloss supports (the longest, or of
    equals the nearest ``at``), at word edges; None if no word is supported."""
    words = [(m.start(), m.end(), _supported(m.group(), senses)) for m in _TRANSLATION_WORD.finditer(translation)]
    runs: list[tuple[int, int]] = []
    current: tuple[int, int] | None = None
    for start, end, supported in words:
        if supported and current is not None and _only_space(translation, current[1], start):
            current = (current[0], end)
            continue
        if current is not None:
            runs.append(current)
        current = (start, end) if supported else None
    if current is not None:
        runs.append(current)
    if not runs:
        return None
    return max(runs, key=lambda run: (run[1] - run[0], -abs(run[0] / max(1, len(translation)) - at)))

