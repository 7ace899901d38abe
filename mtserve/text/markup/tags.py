"""The tag model of a marked segment: its tags and placeholders, read, built and checked.

A marked segment is a sentence with each piece of inline markup replaced by a numbered tag
(``<b1>..</b1>``, ``<x2/>``); placeholders (``%s``, ``{name}``, URLs...) stay in its text and must
come back byte for byte. Here: the patterns (``TAG``, ``PLACEHOLDER``, ``AS_WRITTEN``), the view
cut into ``tokens`` and read as a ``structure`` of elements, tags built (``open_tag``...), and the
check of a translation (``check``: the same tags, each once, properly nested, every placeholder
byte-identical).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from mtserve.text.scripts import LOWER_LATIN, UPPER_LATIN
from mtserve.text.segment import Piece

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
