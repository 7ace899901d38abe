"""Inline markup inside a sentence: numbered tags and placeholders, translated in context.

Every format that has markup inside its sentences (HTML, DeepL XML, Office runs,
Markdown emphasis, i18n strings) hands the service the same thing: a *marked*
segment, the sentence with each piece of inline markup replaced by a numbered
tag, and the real markup kept aside by the format to be put back afterwards::

    我喜欢<b1>猫</b1>。          a bold word
    点击<a2>这里</a2>保存<x3/>   a link, and a void element (an image, an ignored tag)

Placeholders (``%s``, ``{name}``, ``{{ var }}``, URLs...) stay in the text as they
are: models know them, and they must come back byte for byte.

This module knows only that view. It checks a translation (``check``: the same
tags, each once, properly nested, every placeholder byte-identical), puts the
spacing and case right at tag edges for the target language (``fix_edges``), and
is the fallback that never loses markup (``project``): given the tag-free
translation of the sentence and the translation of each tag's content on its
own, it puts every tag back on the translated words that match its content.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from mtserve.text.lexicon import WORDS
from mtserve.text.scripts import LOWER_LATIN, UPPER_LATIN
from mtserve.text.segment import Piece, is_cjk

# A tag of the view: <b1>, </b1>, <x2/>. Names are short letters, ids are numbers.
TAG = re.compile(r"<(/?)([a-z]{1,5})(\d{1,3})(/?)>")

# Spans that must come back unchanged, in any format.
PLACEHOLDER = re.compile(
    r"%(?:\(\w+\)|\d+\$)?[-+0#]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGcrsaAp@]"
    r"|%%"
    r"|\{\{[^{}]*\}\}"  # {{ jinja }}, {{count}} (i18next, Handlebars, Angular)
    r"|\{%[^{}]*%\}"  # {% jinja statement %}
    r"|\$\{[^{}]*\}"  # ${name}: template literals
    r"|\{\s*[\w.:\-\[\]!#]*\s*(?:,\s*(?:number|date|time|spellout|ordinal|duration)[^{}]*)?\}"  # {0}, {name}
    r"|\$[A-Za-z_][A-Za-z0-9_]*"  # $VAR
    r"|&(?:[A-Za-z][A-Za-z0-9]{1,31}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});"  # HTML entities
    r"|(?:https?|ftp)://[^\s<>\"'{}]*[^\s<>\"'{}.,;:!?)\]。，！？）]"  # URLs
    # e-mail addresses; a local part has at most 64 characters (RFC 5321), and the bound keeps a
    # long run of "a.a.a." linear: each start scans at most 64 characters for an @
    r"|\b[\w.+-]{1,64}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\b"
)


# What a translation keeps as written beyond the placeholders: code, tags, a quoted word, paths and
# file names.
# A path's characters: no space, bracket, quote, CJK character or punctuation (Chinese runs on
# into a path with no space between).
_NOT_IN_PATH = "\\s()\\[\\]{}<>\"'`\u2000-\u206f\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef"
_IN_PATH = f"[^{_NOT_IN_PATH}]"
_PATH_START = f"(?<![^{_NOT_IN_PATH}])"  # a path is tried from the start of a run only: linear in the text
AS_WRITTEN = re.compile(
    PLACEHOLDER.pattern + r"|`[^`]*`|<[^<>]*>|\bwww\.\S*[^\s.,;:!?'\")\]]"
    r"|(?<=[\"“])[^\s\"“”]+(?=[\"”])|(?<=[‘'])[^\s‘’']+(?=[’'])"  # a quoted word: a literal ("slug")
    rf"|{_PATH_START}{_IN_PATH}*[/\\]{_IN_PATH}*(?<![.,;:!?])|{_PATH_START}{_IN_PATH}*\.[a-z]{{2,4}}\b")


_CAPITAL = re.compile(f"[{UPPER_LATIN}]")
_LOWER = re.compile(f"[{LOWER_LATIN}]")


def kept_as_written(text: str) -> list[str]:
    """The pieces of ``text`` with lower-case Latin letters that a translation into any language
    may hold letter for letter: placeholders, links, code, tags and paths, and names (words with a
    capital letter: iPhone, Python, GitHub)."""
    pieces = [match.group() for match in AS_WRITTEN.finditer(text)]
    names = [word for word in re.findall(r"[^\W\d_]+", AS_WRITTEN.sub(" ", text)) if _CAPITAL.search(word)]
    return [piece for piece in dict.fromkeys(pieces + names)
            if len(piece) > 1 and _LOWER.search(piece)]


UNSPACED = ("zh", "zt", "ja")
_SENTENCE_END = set(".!?。！？…:;")
_OPENERS = set("\"'“‘([{«¿¡「『（【")


class MarkupError(ValueError):
    """A view that is not one: the message says which tag is wrong."""


@dataclass(frozen=True)
class Token:
    kind: str  # "text", "open", "close" or "void"
    text: str  # the text, or the view tag as written
    id: int = 0
    name: str = ""


def tokens(view: str) -> list[Token]:
    """The view cut into text and tags, in order."""
    out: list[Token] = []
    position = 0
    for match in TAG.finditer(view):
        if match.group(1) and match.group(4):
            continue  # "</b1/>" is no tag of ours; it stays text and fails the check
        if match.start() > position:
            out.append(Token("text", view[position:match.start()]))
        kind = "close" if match.group(1) else "void" if match.group(4) else "open"
        out.append(Token(kind, match.group(), int(match.group(3)), match.group(2)))
        position = match.end()
    if position < len(view):
        out.append(Token("text", view[position:]))
    return out


def has_markup(view: str) -> bool:
    """Whether a segment carries tags or placeholders that a translation must keep."""
    return bool(TAG.search(view) or PLACEHOLDER.search(view))


def strip_tags(view: str) -> str:
    """The sentence without its tags (placeholders stay)."""
    return TAG.sub("", view)


def placeholders(text: str) -> Counter[str]:
    return Counter(match.group() for match in PLACEHOLDER.finditer(strip_tags(text)))


def open_tag(name: str, id_: int) -> str:
    return f"<{name}{id_}>"


def close_tag(name: str, id_: int) -> str:
    return f"</{name}{id_}>"


def void_tag(name: str, id_: int) -> str:
    return f"<{name}{id_}/>"


@dataclass
class Element:
    """A tag of a view with where it sits: its content spans [start, end) of the plain text."""

    id: int
    name: str
    void: bool
    start: int
    end: int
    parent: int | None  # the id of the element it sits in


def structure(view: str) -> tuple[str, dict[int, Element]]:
    """(the plain text, its elements by id); raises MarkupError unless properly nested, once each."""
    plain: list[str] = []
    length = 0
    elements: dict[int, Element] = {}
    stack: list[Element] = []
    for token in tokens(view):
        if token.kind == "text":
            plain.append(token.text)
            length += len(token.text)
            continue
        if token.id in elements:
            existing = elements[token.id]
            if token.kind != "close" or existing.void or existing not in stack:
                raise MarkupError(f"tag {token.text} appears twice")
        if token.kind == "close":
            if not stack or stack[-1].id != token.id:
                raise MarkupError(f"{token.text} closes a tag that is not the innermost open one")
            if stack[-1].name != token.name:
                raise MarkupError(f"{token.text} closes <{stack[-1].name}{stack[-1].id}>")
            stack.pop().end = length
            continue
        element = Element(token.id, token.name, token.kind == "void", length, length,
                          stack[-1].id if stack else None)
        elements[token.id] = element
        if token.kind == "open":
            stack.append(element)
    if stack:
        raise MarkupError(f"<{stack[-1].name}{stack[-1].id}> is never closed")
    return "".join(plain), elements


def keep_tags_whole(pieces: list[Piece]) -> list[Piece]:
    """Sentences joined where a tag crosses the end of one: no segment ever holds half a tag."""
    out: list[Piece] = []
    pending: list[Piece] = []  # an open sentence, and the separators after it
    for piece in pieces:
        if not pending:
            if piece.translate and not balanced(piece.text):
                pending = [piece]
            else:
                out.append(piece)
            continue
        pending.append(piece)
        if piece.translate:
            joined = "".join(p.text for p in pending)
            if balanced(joined):
                out.append(Piece(joined, True))
                pending = []
    if pending:  # never balanced: what is left goes as one segment, and the check will say why
        last = max(i for i, p in enumerate(pending) if p.translate)
        out.append(Piece("".join(p.text for p in pending[:last + 1]), True))
        out += pending[last + 1:]
    return out


def balanced(view: str) -> bool:
    try:
        structure(view)
    except MarkupError:
        return False
    return True


def check(source: str, output: str) -> str | None:
    """What is wrong with ``output`` as a translation of the marked ``source``, or None.

    The same tags (each once, properly nested, the same kind), a tag whose source
    content has words still holding some, and every placeholder byte-identical.
    """
    source_plain, source_elements = structure(source)
    try:
        plain, elements = structure(output)
    except MarkupError as exc:
        return str(exc)
    missing = sorted(source_elements.keys() - elements.keys())
    if missing:
        return "missing " + ", ".join(_spell(source_elements[i]) for i in missing)
    extra = sorted(elements.keys() - source_elements.keys())
    if extra:
        return "unknown " + ", ".join(_spell(elements[i]) for i in extra)
    for id_, element in elements.items():
        wanted = source_elements[id_]
        if (element.name, element.void) != (wanted.name, wanted.void):
            return f"{_spell(element)} should be {_spell(wanted)}"
        if not wanted.void and _has_words(source_plain[wanted.start:wanted.end]) \
                and not plain[element.start:element.end].strip():
            return f"{_spell(wanted)} lost its content"
    lost = placeholders(source) - placeholders(output)
    added = placeholders(output) - placeholders(source)
    if lost or added:
        return "placeholders changed: " + ", ".join(
            [f"lost {p!r}" for p in sorted(lost)] + [f"added {p!r}" for p in sorted(added)])
    return None


def _spell(element: Element) -> str:
    return void_tag(element.name, element.id) if element.void else open_tag(element.name, element.id)


def _has_words(text: str) -> bool:
    return any(char.isalpha() for char in PLACEHOLDER.sub("", text))


# --- spacing and case at tag edges -----------------------------------------------------------
def _word_char(char: str) -> bool:
    return char.isalnum() and not is_cjk(char)


def _cjk_side(char: str) -> bool:
    return is_cjk(char)


def _edges(view: str) -> dict[frozenset[int], tuple[str, str, str, str]]:
    """For each run of adjacent tags (by their ids): (text before, the run, text after, the run's
    kinds), where "before"/"after" are the neighbouring text tokens ('' at the ends)."""
    items = tokens(view)
    runs: dict[frozenset[int], tuple[str, str, str, str]] = {}
    i = 0
    while i < len(items):
        if items[i].kind == "text":
            i += 1
            continue
        j = i
        while j < len(items) and items[j].kind != "text":
            j += 1
        before = items[i - 1].text if i > 0 else ""
        after = items[j].text if j < len(items) else ""
        run = items[i:j]
        runs[frozenset(t.id for t in run)] = (before, "".join(t.text for t in run), after,
                                              "".join(t.kind[0] for t in run))
        i = j
    return runs


def _glued_in(source: str, ids: set[int]) -> bool:
    """Whether the source had these tags inside a word (``un<b1>believ</b1>able``)."""
    for run_ids, (before, _, after, _) in _edges(source).items():
        if run_ids & ids and before[-1:] and after[:1] and _word_char(before[-1]) and _word_char(after[0]):
            return True
    return False


def fix_edges(source: str, output: str, target: str) -> str:
    """Spacing and case at the tags of a checked translation, as ``target`` writes them.

    Between words of a spaced language a tag never glues two words together; in
    Chinese and Japanese no space sits at a tag between two characters; and a
    tag's content keeps the edge whitespace the source gave it (a space the model
    put inside a tag goes outside). A common word capitalised right after an
    opening tag in mid-sentence is put in lower case.
    """
    source_tokens = tokens(source)
    source_open: dict[int, str] = {}  # id -> the source content's first text
    source_close: dict[int, str] = {}
    for k, token in enumerate(source_tokens):
        if token.kind == "open":
            source_open[token.id] = source_tokens[k + 1].text if k + 1 < len(source_tokens) else ""
        elif token.kind == "close":
            source_close[token.id] = source_tokens[k - 1].text if k > 0 else ""
    items = [[t.kind, t.text, t.id] for t in tokens(output)]
    # 1. whitespace just inside a tag that the source did not have there goes outside it
    for k, (kind, text, id_) in enumerate(items):
        if kind == "open" and k + 1 < len(items) and items[k + 1][0] == "text":
            inner = items[k + 1][1]
            lead = inner[:len(inner) - len(inner.lstrip())]
            if lead and not source_open.get(id_, "")[:1].isspace():
                items[k + 1][1] = inner[len(lead):]
                _append_before(items, k, lead)
        elif kind == "close" and k > 0 and items[k - 1][0] == "text":
            inner = items[k - 1][1]
            trail = inner[len(inner.rstrip()):]
            if trail and not source_close.get(id_, "")[-1:].isspace():
                items[k - 1][1] = inner[:len(inner) - len(trail)]
                _prepend_after(items, k, trail)
    view = "".join(text for _, text, _ in items)
    unspaced = target in UNSPACED
    # 2. the space at each run of tags
    out: list[str] = []
    parts = tokens(view)
    k = 0
    while k < len(parts):
        if parts[k].kind == "text":
            out.append(parts[k].text)
            k += 1
            continue
        j = k
        while j < len(parts) and parts[j].kind != "text":
            j += 1
        run = parts[k:j]
        before = "".join(out)
        after = parts[j].text if j < len(parts) else ""
        if unspaced:
            left, right = before.rstrip(), after.lstrip()
            if left and right and _cjk_side(left[-1]) and _cjk_side(right[0]):
                out = [left]
                if j < len(parts):
                    parts[j] = Token("text", right)
            out.append("".join(t.text for t in run))
        else:
            ids = {t.id for t in run}
            left, right = before[-1:], after[:1]
            glued = bool(left) and bool(right) and _word_char(left) and _word_char(right)
            if all(t.kind == "void" for t in run) and left and right and not glued \
                    and ((left.isspace() and _word_char(right)) or (_word_char(left) and right.isspace())):
                # a void tag (an image, a placeholder) touching a word on one side only: a space there
                spaced = "".join(t.text for t in run)
                out.append(spaced + " " if left.isspace() else " " + spaced)
            elif glued and not _glued_in(source, ids):
                out.append(_spaced_run(run))
            else:
                out.append("".join(t.text for t in run))
        k = j
    view = "".join(out)
    return view if unspaced else _fix_case(source, view, target)


def _append_before(items: list[list], k: int, text: str) -> None:
    if k > 0 and items[k - 1][0] == "text":
        previous = items[k - 1][1]
        if previous and not previous[-1].isspace() and previous[-1] not in _OPENERS:
            items[k - 1][1] += text
    elif k > 0:
        items.insert(k, ["text", text, 0])
    # at the very start, leading whitespace is dropped: the segment's own edges are kept elsewhere


def _prepend_after(items: list[list], k: int, text: str) -> None:
    if k + 1 < len(items) and items[k + 1][0] == "text":
        following = items[k + 1][1]
        if following and (following[0].isalnum() or following[0] in _OPENERS):
            items[k + 1][1] = text + items[k + 1][1]
    elif k + 1 < len(items):
        items.insert(k + 1, ["text", text, 0])


def _spaced_run(run: list[Token]) -> str:
    """A run of tags between two words, with the space where it belongs: before opening tags,
    after closing ones, and on both sides of a void one."""
    kinds = [t.kind for t in run]
    text = [t.text for t in run]
    if all(kind == "open" for kind in kinds):
        return " " + "".join(text)
    if all(kind == "close" for kind in kinds):
        return "".join(text) + " "
    if "void" in kinds and "open" not in kinds and "close" not in kinds:
        return " " + "".join(text) + " "
    # closing tags, then opening ones: the space goes between them
    split = next((i for i, kind in enumerate(kinds) if kind == "open"), len(kinds))
    return "".join(text[:split]) + " " + "".join(text[split:])


_FIRST_WORD = re.compile(r"[^\W\d_]+")


def _fix_case(source: str, view: str, target: str) -> str:
    common = WORDS.get(target, frozenset())
    source_cased = any(char.isalpha() and char.lower() != char.upper() for char in strip_tags(source))
    source_first: dict[int, str] = {}
    if source_cased:
        parts = tokens(source)
        for k, token in enumerate(parts):
            if token.kind == "open":
                following = "".join(t.text for t in parts[k + 1:] if t.kind == "text")
                source_first[token.id] = following.lstrip()[:1]
    parts = tokens(view)
    out: list[str] = []
    for k, token in enumerate(parts):
        text = token.text
        if token.kind == "text" and k > 0 and parts[k - 1].kind == "open":
            before = strip_tags("".join(out)).rstrip()
            mid_sentence = bool(before) and before[-1] not in _SENTENCE_END and before[-1] not in _OPENERS
            word = _FIRST_WORD.match(text)
            if mid_sentence and word and len(word.group()) > 1 and word.group()[0].isupper() \
                    and word.group()[1:].islower():
                opener = parts[k - 1].id
                if source_cased:
                    lower = source_first.get(opener, "").islower()
                else:
                    lower = word.group().lower() in common
                if lower:
                    text = text[0].lower() + text[1:]
        out.append(text)
    return "".join(out)


# --- the fallback: tags placed on the tag-free translation -------------------------------------
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


# --- ICU MessageFormat ---------------------------------------------------------------------------
_ICU_START = re.compile(r"\{\s*([\w.]+)\s*,\s*(plural|select|selectordinal)\s*,")
_ICU_SELECTOR = re.compile(r"\s*(offset:\s*\d+\s+)?(=\d+|[\w-]+)\s*\{")
_BRACE = re.compile(r"[{}]")
_CLOSING = re.compile(r"\s*\}")  # what ends an argument after its last branch
ICU_COUNT = "{#}"  # how a branch's "#" travels: as a placeholder, so it must come back


@dataclass
class IcuArgument:
    """``{count, plural, one {# file} other {# files}}``: the skeleton is kept, each branch's text
    is translated, and the sentence around it sees the simple argument ``{count}``."""

    start: int
    end: int
    name: str
    kind: str
    branches: list[tuple[str, str]]  # (what comes before the branch's text, the text)
    closing: str  # what follows the last branch, up to and including the final "}"

    def render(self, texts: list[str]) -> str:
        return "".join(head + text for (head, _), text in zip(self.branches, texts)) + self.closing


def icu_arguments(text: str) -> list[IcuArgument]:
    """The complex arguments of an ICU message, outermost only; a malformed one is not one."""
    found: list[IcuArgument] = []
    position = 0
    closing_brace: dict[int, int] | None = None  # paired once, when the text has an argument's start
    while (start := _ICU_START.search(text, position)) is not None:
        if closing_brace is None:
            closing_brace = _brace_pairs(text)
        argument = _parse_icu(text, start, closing_brace)
        if argument is None:
            position = start.end()
            continue
        found.append(argument)
        position = argument.end
    return found


def _brace_pairs(text: str) -> dict[int, int]:
    """Where each ``{`` of ``text`` that is closed is closed: found in one pass, so that a message of
    thousands of unclosed branches is not scanned to its end once for each."""
    pairs: dict[int, int] = {}
    opened: list[int] = []
    for match in _BRACE.finditer(text):
        if match.group() == "{":
            opened.append(match.start())
        elif opened:
            pairs[opened.pop()] = match.start()
    return pairs


def _parse_icu(text: str, start: re.Match[str], closing_brace: dict[int, int]) -> IcuArgument | None:
    branches: list[tuple[str, str]] = []
    position = start.end()
    head_start = start.start()
    while True:
        selector = _ICU_SELECTOR.match(text, position)
        if selector is None:
            break
        body_start = selector.end()
        body_end = closing_brace.get(body_start - 1)  # the selector ends with the branch's "{"
        if body_end is None:
            return None
        branches.append((text[head_start:body_start], text[body_start:body_end]))
        head_start, position = body_end, body_end + 1
    closing = _CLOSING.match(text, position)
    if not branches or closing is None:
        return None
    end = closing.end()
    return IcuArgument(start.start(), end, start.group(1), start.group(2), branches, text[head_start:end])


def simple_form(text: str, arguments: list[IcuArgument]) -> str:
    """The message with each complex argument as its simple form ``{count}``."""
    out, position = [], 0
    for argument in arguments:
        out += [text[position:argument.start], "{" + argument.name + "}"]
        position = argument.end
    return "".join(out) + text[position:]


def branch_text(text: str) -> str:
    return text.replace("#", ICU_COUNT)


def branch_back(text: str) -> str:
    return text.replace(ICU_COUNT, "#")


def rebuild_icu(simple: str, arguments: list[IcuArgument], branches: list[list[str]]) -> str:
    """The translated message: each ``{name}`` of ``simple`` back as its translated complex argument;
    an argument whose ``{name}`` the translation lost goes at the end."""
    for argument, texts in zip(arguments, branches):
        rendered = argument.render(texts)
        marker = "{" + argument.name + "}"
        simple = simple.replace(marker, rendered, 1) if marker in simple else simple + rendered
    return simple
