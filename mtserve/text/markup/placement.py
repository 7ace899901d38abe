"""The fallback that never loses markup: a source's tags placed on its tag-free translation."""

from __future__ import annotations

import re
from collections import Counter

from mtserve.text.markup.edges import UNSPACED, _word_char
from mtserve.text.markup.tags import (
    PLACEHOLDER,
    Element,
    _has_words,
    close_tag,
    open_tag,
    strip_tags,
    structure,
    tokens,
    void_tag,
)
from mtserve.text.segment import is_cjk


def project(source: str, translation: str, contents: dict[int, str], target: str) -> str:
    """Put the tags of ``source`` into ``translation``, the translation of its tag-free text.

    ``contents`` holds the translation of each paired tag's content on its own:
    the tag goes around the span of ``translation`` that matches it best, inside
    its parent's span. A tag whose content cannot be found, and every void tag,
    goes at the place that corresponds to its place in the source. Placeholders
    the translation lost are put back the same way, and ones it invented are
    removed. The result always passes ``check``.
    """
    plain, elements = structure(source)
    text = _repair_placeholders(source, plain, translation)
    spans: dict[int, tuple[int, int]] = {}
    children: dict[int | None, list[Element]] = {}
    for element in elements.values():
        children.setdefault(element.parent, []).append(element)

    def place(parent: int | None, lo: int, hi: int, src_lo: int, src_hi: int) -> None:
        taken: list[tuple[int, int]] = []
        for element in sorted(children.get(parent, []), key=lambda e: e.start):
            if element.void:
                at = _map_point(plain, text, element.start, lo, hi, src_lo, src_hi, target)
                spans[element.id] = (at, at)
                continue
            content = plain[element.start:element.end]
            found = _find(contents.get(element.id) or content, text, lo, hi, taken, target)
            start_edge = not _has_words(plain[src_lo:element.start])
            end_edge = not _has_words(plain[element.end:src_hi])
            if found is None:
                start = _map_point(plain, text, element.start, lo, hi, src_lo, src_hi, target)
                end = _map_point(plain, text, element.end, lo, hi, src_lo, src_hi, target)
                found = _clear_of(taken, start, max(start, end))
            elif start_edge or end_edge:  # a content at an edge of its parent reaches that edge,
                start, end = found  # when only a word or two lie between
                if start_edge:
                    edge = _map_point(plain, text, element.start, lo, hi, src_lo, src_hi, target)
                    if edge < start and _few_free_words(text, edge, start, taken, target):
                        start = edge
                if end_edge:
                    edge = _map_point(plain, text, element.end, lo, hi, src_lo, src_hi, target)
                    if edge > end and _few_free_words(text, end, edge, taken, target):
                        end = edge
                found = (start, end)
            found = _trim_space(text, found)
            if found[0] == found[1] and _has_words(content):
                found = _nearest_word(text, found[0], lo, hi, taken, target) or found
            spans[element.id] = found
            taken.append(found)
            place(element.id, found[0], found[1], element.start, element.end)

    place(None, 0, len(text), 0, len(plain))
    return _insert(text, elements, spans)


def anchors(translation: str, contents: dict[int, str], elements: dict[int, Element]) -> dict[int, tuple[int, int]]:
    """The tags whose content's own translation occurs exactly once in ``translation``, at word
    edges, and where: nested as the source nests them, never crossing one another."""
    found: dict[int, tuple[int, int]] = {}
    folded = translation.casefold()
    for id_, content in contents.items():
        needle = content.strip().rstrip(".!?。！？").strip()
        if not needle or not _has_words(needle):
            continue
        hits = [m.start() for m in re.finditer(re.escape(needle.casefold()), folded)]
        spans = [(start, start + len(needle)) for start in hits if _on_word_edges(translation, (start,
                                                                                        start + len(needle)))]
        if len(spans) == 1:
            found[id_] = spans[0]
    return consistent(found, elements)


def locate(translation: str, words: str, source_at: float) -> tuple[int, int] | None:
    """Where ``words`` (copied from ``translation``) stand in it, at word edges: the one occurrence,
    or of several the one whose place in the translation is nearest ``source_at``, the place (0-1)
    of the words they translate in the source."""
    if not words.strip():
        return None
    spans = [(m.start(), m.start() + len(words)) for m in re.finditer(re.escape(words), translation)]
    spans = [span for span in spans if _on_word_edges(translation, span)]
    if not spans:
        return None
    return min(spans, key=lambda span: abs(span[0] / max(1, len(translation)) - source_at))


_SENTENCE_END = re.compile(r"(?:\s|</[a-z]+\d+>|[.。!?！？…:：;；\"'”’)\]）」』])*$")


def move_to_end(view: str, id_: int) -> str:
    """``view`` with the pair of tags ``id_`` taken off its words and put, empty, at the sentence's
    end (before its closing punctuation): where a tag's words cannot be found, it keeps the tag
    without pointing at words it does not belong to."""
    opening = next((t.text for t in tokens(view) if t.id == id_ and t.kind == "open"), None)
    closing = next((t.text for t in tokens(view) if t.id == id_ and t.kind == "close"), None)
    if opening is None or closing is None:
        return view
    bare = view.replace(opening, "", 1).replace(closing, "", 1)
    end = _SENTENCE_END.search(bare).start()
    return bare[:end] + opening + closing + bare[end:]


def consistent(found: dict[int, tuple[int, int]], elements: dict[int, Element]) -> dict[int, tuple[int, int]]:
    """The anchors of ``found`` that nest as the source nests them, and cross none of the others."""
    found = dict(found)
    for id_ in list(found):  # a pair must nest as in the source, or cross nothing
        for other in list(found):
            if other == id_ or id_ not in found or other not in found:
                continue
            a, b = found[id_], found[other]
            nested = (a[0] >= b[0] and a[1] <= b[1]) or (b[0] >= a[0] and b[1] <= a[1])
            if _overlaps(a, b) and not nested:
                del found[id_]
            elif nested and _overlaps(a, b) and elements[id_].parent != other and elements[other].parent != id_:
                del found[id_]
    return found


def _repair_placeholders(source: str, plain: str, translation: str) -> str:
    """The translation with the source's placeholders: one the model changed is changed back in
    place, one it invented is removed, one it lost goes where the source had it."""
    import difflib

    wanted = list(PLACEHOLDER.finditer(plain))
    found = list(PLACEHOLDER.finditer(translation))
    if Counter(m.group() for m in wanted) == Counter(m.group() for m in found):
        return translation
    matcher = difflib.SequenceMatcher(None, [m.group() for m in wanted], [m.group() for m in found],
                                      autojunk=False)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in the translation
    lost: list[re.Match[str]] = []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        pairs = min(a1 - a0, b1 - b0) if op == "replace" else 0
        for k in range(pairs):
            edits.append((found[b0 + k].start(), found[b0 + k].end(), wanted[a0 + k].group()))
        for k in range(b0 + pairs, b1):
            start, end = found[k].start(), found[k].end()
            if start > 0 and translation[start - 1] == " ":
                start -= 1
            edits.append((start, end, ""))
        lost += wanted[a0 + pairs:a1]
    text = translation
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    for match in lost:
        at = _map_point(plain, text, match.start(), 0, len(text), 0, len(plain), "")
        before, after = text[:at], text[at:]
        glue_left = " " if before and not before[-1].isspace() and not is_cjk(before[-1]) else ""
        glue_right = " " if after and not after[0].isspace() and after[0].isalnum() else ""
        text = before + glue_left + match.group() + glue_right + after
    return text


def _words(text: str, lo: int, hi: int, target: str) -> list[tuple[int, int]]:
    """Word spans of text[lo:hi]: runs of letters and digits, or single CJK characters."""
    pattern = r"[^\W_]+(?:['’][^\W_]+)*" if target not in UNSPACED else r"[^\W_]"
    spans = []
    for match in re.finditer(pattern, text[lo:hi]):
        if target not in UNSPACED and is_cjk(match.group()[0]):
            spans += [(lo + match.start() + i, lo + match.start() + i + 1) for i in range(len(match.group()))]
        else:
            spans.append((lo + match.start(), lo + match.end()))
    return spans


def _find(needle: str, text: str, lo: int, hi: int, taken: list[tuple[int, int]],
          target: str) -> tuple[int, int] | None:
    """The span of text[lo:hi], clear of ``taken``, made of whole words that best matches ``needle``."""
    needle = strip_tags(needle).strip()
    if not needle:
        return None
    exact = [m.start() + lo for m in re.finditer(re.escape(needle.casefold()), text[lo:hi].casefold())]
    for start in exact:
        span = (start, start + len(needle))
        if not any(_overlaps(span, other) for other in taken) and _on_word_edges(text, span):
            return span
    from rapidfuzz import fuzz

    words = [w for w in _words(text, lo, hi, target) if not any(_overlaps(w, o) for o in taken)]
    if not words:
        return None
    want = len(needle)
    best: tuple[float, int, int] | None = None
    for i in range(len(words)):
        for j in range(i, min(len(words), i + 12)):
            start, end = words[i][0], words[j][1]
            if any(_overlaps((start, end), other) for other in taken):
                break
            if end - start > 3 * want + 4:
                break
            score = fuzz.ratio(needle.casefold(), text[start:end].casefold())
            if best is None or score > best[0]:
                best = (score, start, end)
    if best is None or best[0] < 55:
        return None
    return best[1], best[2]


def _few_free_words(text: str, lo: int, hi: int, taken: list[tuple[int, int]], target: str) -> bool:
    words = _words(text, lo, hi, target)
    return len(words) <= 2 and not any(_overlaps((lo, hi), other) for other in taken)


def _trim_space(text: str, span: tuple[int, int]) -> tuple[int, int]:
    start, end = span
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _nearest_word(text: str, at: int, lo: int, hi: int, taken: list[tuple[int, int]],
                  target: str) -> tuple[int, int] | None:
    """The free word nearest to ``at``: a tag never ends up around nothing when words are left."""
    free = [w for w in _words(text, lo, hi, target) if not any(_overlaps(w, o) for o in taken)]
    if not free:
        return None
    return min(free, key=lambda w: (min(abs(w[0] - at), abs(w[1] - at)), w[0] < at))


def _on_word_edges(text: str, span: tuple[int, int]) -> bool:
    start, end = span
    left_ok = start == 0 or not (_word_char(text[start - 1]) and _word_char(text[start]))
    right_ok = end >= len(text) or not (_word_char(text[end - 1]) and _word_char(text[end]))
    return left_ok and right_ok


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _clear_of(taken: list[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """[start, end) trimmed so it neither overlaps nor crosses a span already taken."""
    for other in taken:
        if _overlaps((start, end), other):
            if other[0] <= start:
                start = max(start, other[1])
            else:
                end = min(end, other[0])
    return start, max(start, end)


def _map_point(plain: str, text: str, at: int, lo: int, hi: int, src_lo: int, src_hi: int,
               target: str) -> int:
    """Where position ``at`` of the source's plain text falls in text[lo:hi], at a word boundary.

    The edges map to the edges (before the closing punctuation at the end); anything
    in between goes to the same fraction of the way, moved to the nearest gap between words.
    """
    if not _has_words(plain[src_lo:at]):
        return _skip_leading(text, lo, hi)
    if at >= src_hi:
        return hi
    if not _has_words(plain[at:src_hi]):
        end = hi
        while end > lo and not text[end - 1].isalnum() and not text[end - 1].isspace() \
                and text[end - 1] not in "%}>$":
            end -= 1
        return end
    fraction = (at - src_lo) / max(1, src_hi - src_lo)
    guess = lo + round(fraction * (hi - lo))
    gaps = [lo] + [end for _, end in _words(text, lo, hi, target)]
    return min(gaps, key=lambda gap: abs(gap - guess))


def _skip_leading(text: str, lo: int, hi: int) -> int:
    while lo < hi and text[lo].isspace():
        lo += 1
    return lo


def _insert(text: str, elements: dict[int, Element], spans: dict[int, tuple[int, int]]) -> str:
    """The text with each element's tags at its span, nested as the spans say."""

    def depth(id_: int) -> int:
        level, parent = 0, elements[id_].parent
        while parent is not None:
            level, parent = level + 1, elements[parent].parent
        return level

    inserts: list[tuple[int, int, tuple[int, int], str]] = []  # (position, order, tie-break, tags)
    for id_, (start, end) in spans.items():
        element = elements[id_]
        if element.void or start == end:
            tags = void_tag(element.name, id_) if element.void else \
                open_tag(element.name, id_) + close_tag(element.name, id_)
            inserts.append((start, 1, (depth(id_), 0), tags))
            continue
        # at one position: closings first (innermost first), then voids, then openings
        # (outermost first), so that nested spans nest
        inserts.append((end, 0, (end - start, -depth(id_)), close_tag(element.name, id_)))
        inserts.append((start, 2, (start - end, depth(id_)), open_tag(element.name, id_)))
    inserts.sort(key=lambda item: item[:3])
    out, position = [], 0
    for at, _, _, tag in inserts:
        out.append(text[position:at])
        out.append(tag)
        position = at
    out.append(text[position:])
    return "".join(out)
