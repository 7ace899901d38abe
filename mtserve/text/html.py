"""Translate the text of an HTML document without touching its markup.

A paragraph is translated whole, with its inline markup in context: the text
of each block (a ``<p>``, an ``<li>``, a cell, a heading) with its inline
elements (``b i em strong a span sub sup u s small mark abbr`` and the like)
becomes one marked segment, ``点击<a1>这里</a1>保存``, in which each inline
element is a numbered tag (``mtserve.text.markup``) and its real start and end
tags are kept aside. Block elements end a segment. Elements whose content is
not prose (``<code>``, ``<kbd>``, ``<script>``, ``<style>``, ``<pre>``...) and
elements marked ``translate="no"`` or ``class="notranslate"`` pass through
untouched: inside a sentence they are one void tag (``<x2/>``) that the
translation places. The ``alt``, ``title`` and ``placeholder`` attributes are
segments of their own; ``href``, ``src`` and every other attribute are kept.

Every tag, attribute, comment and byte of whitespace is carried over from the
input. A segment whose translation comes back unchanged keeps its original
bytes (entities included), which makes
``parse_html(h).render(parse_html(h).segments) == h`` for any input. Markup that
does not nest (an unclosed ``<b>``, a stray ``</i>``) becomes a void tag at its
place, so it is kept too.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from mtserve.text import markup

# Elements whose text is code or user input, not prose.
_RAW_TEXT_TAGS = {"script", "style", "code", "pre", "kbd", "samp", "var", "textarea"}
_VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
              "param", "source", "track", "wbr"}
_TRANSLATED_ATTRIBUTES = {"alt", "title", "placeholder"}
# Phrasing elements: they sit inside a sentence and are translated in context.
INLINE_TAGS = {"a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "data", "del", "dfn", "em",
               "font", "i", "ins", "label", "mark", "nobr", "q", "s", "small", "span", "strike",
               "strong", "sub", "sup", "time", "tt", "u"}
# Phrasing elements with no prose inside: kept whole, as one void tag in the sentence.
_INLINE_VERBATIM = {"code", "kbd", "samp", "var", "math", "svg", "ruby"}
# Of those, the ones whose plain-text content is words of the sentence ("run `make run` to start"):
# the engine sees their words inside a pair of tags, so the sentence is translated with them and
# they land where they belong, and the output keeps the element byte-identical.
_KEPT_WORDS = {"code", "kbd", "samp", "var"}
_INLINE_VOID = {"br", "img", "wbr", "input"}
# The names the engine sees: short, and the same for elements that look the same.
_VIEW_NAMES = {"strong": "b", "em": "i", "strike": "s", "del": "s", "ins": "u"}
_READ_ATTRIBUTES = _TRANSLATED_ATTRIBUTES | {"translate", "class"}

# The tag grammar of html.parser, used to find where each attribute value sits.
_TAG_NAME = re.compile(r"<[a-zA-Z][^\t\n\r\f />\x00]*(?:\s|/(?!>))*")
_ATTRIBUTE = re.compile(
    r"""([^\s/>][^\s/=>]*)(\s*=+\s*('[^']*'|"[^"]*"|(?!['"])[^>\s]*))?(?:\s|/(?!>))*"""
)
_ENDS_UNQUOTED = re.compile(r"[\s=`/]")  # what an unquoted attribute value cannot contain
_LEADING_TOKEN = re.compile(r"\s|&#?\w+;?")
_TRAILING_ENTITY = re.compile(r"&#?\w+;\Z")

Parts = list  # of str | _Slot: markup with the attribute values that are segments


@dataclass(frozen=True)
class TagHandling:
    """How markup splits text into segments, after DeepL's ``tag_handling`` parameters.

    ``html``: HTML's own rules (inline elements in context, blocks split, code and
    ``translate="no"`` kept). ``xml``: any vocabulary; ``ignore_tags`` are kept with
    their content (a void tag in the sentence), ``splitting_tags`` always end a
    segment, ``non_splitting_tags`` never do, and the others split where
    ``outline_detection`` finds structure: an element that shares its parent with
    text is inline, one that does not is a block. With ``outline_detection`` off,
    only ``splitting_tags`` split.
    """

    kind: str = "html"  # "html" or "xml"
    ignore_tags: frozenset[str] = frozenset()
    non_splitting_tags: frozenset[str] = frozenset()
    splitting_tags: frozenset[str] = frozenset()
    outline_detection: bool = True


HTML = TagHandling()


@dataclass
class _Slot:
    """Where one plain segment goes back: its original bytes and how to encode a new text."""

    raw: str
    in_attribute: bool
    unquoted: bool = False  # an unquoted attribute value: quote it if the new text needs it
    index: int = -1  # its segment


@dataclass
class _Run:
    """A block's inline content: one marked segment, and the markup each of its tags stands for."""

    raw: str  # the original bytes
    index: int
    markup: dict[int, tuple[Parts, Parts]]  # tag id -> (its start markup, its end markup)
    kept: frozenset[int] = frozenset()  # tag ids whose start markup is the whole element, content included


@dataclass
class HtmlDocument:
    segments: list[str]  # text to translate, in document order; marked segments hold view tags
    parts: list[str | _Slot | _Run] = field(default_factory=list, repr=False)

    def render(self, translations: list[str]) -> str:
        """Same markup, each segment replaced by its translation (HTML-escaped)."""
        if len(translations) != len(self.segments):
            raise ValueError(f"expected {len(self.segments)} translations, got {len(translations)}")
        return "".join(self._render(part, translations) for part in self.parts)

    def _render(self, part: str | _Slot | _Run, translations: list[str]) -> str:
        if isinstance(part, str):
            return part
        if isinstance(part, _Slot):
            translation = translations[part.index]
            if translation == self.segments[part.index]:
                return part.raw
            encoded = html_lib.escape(translation, quote=part.in_attribute)
            needs_quotes = part.unquoted and (not encoded or _ENDS_UNQUOTED.search(encoded))
            return f'"{encoded}"' if needs_quotes else encoded
        translation = translations[part.index]
        slots = [p for pair in part.markup.values() for parts in pair for p in parts if isinstance(p, _Slot)]
        if translation == self.segments[part.index] and all(
                translations[s.index] == self.segments[s.index] for s in slots):
            return part.raw
        out: list[str] = []
        inside_kept: list[int] = []
        for token in markup.tokens(translation):
            if token.kind == "text":
                if not inside_kept:  # a kept element's content is its own, not the engine's
                    out.append(html_lib.escape(token.text, quote=False))
                continue
            if token.id in part.kept:
                if token.kind == "open":
                    inside_kept.append(token.id)
                elif token.kind == "close" and token.id in inside_kept:
                    inside_kept.remove(token.id)
            start, end = part.markup.get(token.id, ([], []))
            rendered = "".join(self._render(p, translations) for p in start)
            if token.kind in ("close", "void"):
                rendered = "".join(self._render(p, translations) for p in end) if token.kind == "close" \
                    else rendered + "".join(self._render(p, translations) for p in end)
            out.append(rendered)
        return "".join(out)


@dataclass
class _Event:
    kind: str  # "text", "start", "void", "end" or "markup"
    start: int
    end: int | None = None  # None: runs up to the next event
    tag: str = ""
    attrs: list[tuple[str, str | None]] = field(default_factory=list)


class _Tokenizer(HTMLParser):
    """Records where every token starts, so the input can be sliced losslessly."""

    def __init__(self, document: str, base: int) -> None:
        super().__init__(convert_charrefs=False)
        self.document = document
        self.line_starts = [base] + [base + line.end() for line in re.finditer("\n", document[base:])]
        self.events: list[_Event] = []

    def document_position(self) -> int:
        """Where, in the whole document, the token being handled starts."""
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def _tag(self, kind: str, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        start = self.document_position()
        # Only the attributes parse_html reads are kept: a tag may carry a million others.
        kept = [(name, value) for name, value in attrs if name in _READ_ATTRIBUTES]
        self.events.append(_Event(kind, start, start + len(self.get_starttag_text() or ""), tag, kept))

    def _reference(self, text: str) -> None:
        start = self.document_position()
        end = start + len(text)
        end += self.document.startswith(";", end)
        self.events.append(_Event("text", start, end))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag("start", tag, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._tag("void", tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self.events.append(_Event("end", self.document_position(), tag=tag))

    def handle_data(self, data: str) -> None:
        start = self.document_position()
        self.events.append(_Event("text", start, start + len(data)))

    def handle_entityref(self, name: str) -> None:
        self._reference("&" + name)

    def handle_charref(self, name: str) -> None:
        self._reference("&#" + name)

    def _markup(self, _: str) -> None:
        self.events.append(_Event("markup", self.document_position()))

    handle_comment = handle_decl = handle_pi = unknown_decl = _markup


def parse_html(html: str, rules: TagHandling = HTML) -> HtmlDocument:
    """Split ``html`` into verbatim markup and segments: one marked segment per block of text."""
    return _Parser(html, rules).parse()


@dataclass
class _Item:
    """One piece of a block's inline content, before it becomes a view."""

    kind: str  # "text", "open", "close" or "void"
    raw: str  # the original bytes
    parts: Parts = field(default_factory=list)  # start (or void) markup, attribute slots included
    tag: str = ""
    text: str = ""  # for text: the decoded text


class _Parser:
    def __init__(self, html: str, rules: TagHandling) -> None:
        self.html = html
        self.rules = rules
        self.document = HtmlDocument(segments=[])
        self.run: list[_Item] = []
        self.mixed: set[int] = set()  # xml: start tags whose parent also holds text

    def _role(self, index: int, event: _Event, untranslated: bool) -> str:
        """'inline', 'verbatim' (kept whole, a void tag in the sentence), 'void' or 'block'."""
        rules, tag = self.rules, event.tag
        if tag in rules.ignore_tags:
            return "verbatim" if event.kind == "start" else "void"
        if tag in rules.splitting_tags:
            return "block"
        if rules.kind == "xml":
            inline = tag in rules.non_splitting_tags or not rules.outline_detection or index in self.mixed
            if not inline:
                return "block"
            return "void" if event.kind == "void" else "inline"
        if event.kind == "start" and tag not in _VOID_TAGS and (
                tag in _INLINE_VERBATIM or (untranslated and tag in INLINE_TAGS)):
            return "verbatim"
        if tag in rules.non_splitting_tags:
            return "void" if event.kind == "void" or tag in _VOID_TAGS else "inline"
        if tag in INLINE_TAGS and event.kind == "start":
            return "inline"
        if tag in _INLINE_VOID or (tag in INLINE_TAGS and event.kind == "void"):
            return "void"
        return "block"

    def parse(self) -> HtmlDocument:
        html = self.html
        events = _merge_text_runs(_tokenize(html))
        spans = _spans(events, len(html))
        if self.rules.kind == "xml":
            self.mixed = _in_mixed_content(events, html, spans)
        open_elements: list[tuple[str, bool]] = []  # (tag, its content is not translated)
        cursor = 0
        index = 0
        while index < len(events):
            event = events[index]
            start, end = spans[index]
            start = max(start, cursor)
            end = max(start, end)
            gap = html[cursor:start]
            if gap:
                self._emit_text_or_markup(gap)
            skip = open_elements[-1][1] if open_elements else False
            raw = html[start:end]
            cursor = end
            index += 1
            if skip:
                self._flush()
                self.document.parts.append(raw)
                if event.kind == "start" and event.tag not in _VOID_TAGS:
                    untranslated = _not_translated(event.attrs, True)
                    open_elements.append((event.tag, untranslated or event.tag in _RAW_TEXT_TAGS))
                elif event.kind == "end":
                    _close(open_elements, event.tag)
                continue
            if event.kind == "text":
                self.run.append(_Item("text", raw, text=html_lib.unescape(raw)))
            elif event.kind in ("start", "void"):
                html_rules = self.rules.kind == "html"
                untranslated = html_rules and _not_translated(event.attrs, False)
                role = self._role(index - 1, event, untranslated)
                if role == "verbatim":
                    last = _matching_end(events, index - 1)
                    finish = spans[last][1] if last is not None else len(html)
                    words = _kept_words(event.tag, html[end:spans[last][0]] if last is not None else "")
                    self.run.append(_Item("kept" if words else "void", html[start:finish],
                                          [html[start:finish]], event.tag, words))
                    cursor = max(cursor, finish)
                    index = (last + 1) if last is not None else len(events)
                    continue
                parts = _tag_parts(self.document, raw, event.attrs, untranslated or not html_rules)
                if role == "inline":
                    self.run.append(_Item("open", raw, parts, event.tag))
                elif role == "void":
                    self.run.append(_Item("void", raw, parts, event.tag))
                else:
                    self._flush()
                    self.document.parts += parts
                    void = event.kind == "void" or (html_rules and event.tag in _VOID_TAGS)
                    if not void:
                        raw_text = html_rules and event.tag in _RAW_TEXT_TAGS
                        open_elements.append((event.tag, untranslated or raw_text))
            elif event.kind == "end":
                if self._ends_inline(event.tag):
                    self.run.append(_Item("close", raw, [raw], event.tag))
                else:
                    self._flush()
                    self.document.parts.append(raw)
                    _close(open_elements, event.tag)
            else:  # comments, declarations: kept, and inside a sentence a void tag
                self.run.append(_Item("void", raw, [raw]))
        if cursor < len(html):
            self._emit_text_or_markup(html[cursor:])
        self._flush()
        self.document.parts = [part for part in self.document.parts if part != ""]
        return self.document

    def _ends_inline(self, tag: str) -> bool:
        """Whether an end tag belongs to the sentence: an open inline element of the run has it."""
        if tag in self.rules.splitting_tags:
            return False
        if self.rules.kind == "html" and tag not in self.rules.non_splitting_tags:
            return tag in INLINE_TAGS or tag in _INLINE_VOID
        return any(item.kind == "open" and item.tag == tag for item in self.run)

    def _emit_text_or_markup(self, raw: str) -> None:
        self.run.append(_Item("void", raw, [raw]))  # bytes between tokens: never prose

    def _flush(self) -> None:
        items, self.run = self.run, []
        if not items:
            return
        _pair_up(items)
        # whitespace and wrapping tags at the edges stay outside the segment
        head: list[_Item] = []
        tail: list[_Item] = []
        while True:
            _trim_edges(items, head, tail)
            if len(items) >= 2 and items[0].kind == "open" and items[-1].kind == "close" \
                    and _partner(items, 0) == len(items) - 1:
                head.append(items.pop(0))
                tail.insert(0, items.pop())
                continue
            if items and items[0].kind == "void":
                head.append(items.pop(0))
                continue
            if items and items[-1].kind == "void":
                tail.insert(0, items.pop())
                continue
            break
        self.document.parts += [part for item in head for part in _item_parts(item)]
        if items:
            if not any(item.kind == "text" and item.text.strip() for item in items):
                self.document.parts += [part for item in items for part in _item_parts(item)]
            else:
                self._add_run(items)
        self.document.parts += [part for item in tail for part in _item_parts(item)]

    def _add_run(self, items: list[_Item]) -> None:
        view: list[str] = []
        tags: dict[int, tuple[Parts, Parts]] = {}
        kept: set[int] = set()
        open_ids: list[int] = []
        next_id = 1
        for item in items:
            if item.kind == "text":
                position = 0
                for literal in markup.TAG.finditer(item.text):  # text that reads as a tag of ours
                    view.append(item.text[position:literal.start()])
                    tags[next_id] = ([html_lib.escape(literal.group(), quote=False)], [])
                    view.append(markup.void_tag("x", next_id))
                    next_id += 1
                    position = literal.end()
                view.append(item.text[position:])
            elif item.kind == "open":
                name = _view_name(item.tag)
                tags[next_id] = (item.parts, [])
                open_ids.append(next_id)
                view.append(markup.open_tag(name, next_id))
                next_id += 1
            elif item.kind == "close":
                id_ = open_ids.pop()
                tags[id_] = (tags[id_][0], item.parts)
                view.append(markup.close_tag(_view_name(item.tag), id_))
            elif item.kind == "kept":
                tags[next_id] = (item.parts, [])
                kept.add(next_id)
                view.append(markup.open_tag(_view_name(item.tag), next_id) + item.text
                            + markup.close_tag(_view_name(item.tag), next_id))
                next_id += 1
            else:
                tags[next_id] = (item.parts, [])
                view.append(markup.void_tag("x", next_id))
                next_id += 1
        index = len(self.document.segments)
        self.document.segments.append("".join(view))
        self.document.parts.append(_Run("".join(item.raw for item in items), index, tags, frozenset(kept)))


def _in_mixed_content(events: list[_Event], html: str, spans: list[tuple[int, int]]) -> set[int]:
    """XML outline detection: the start tags whose parent (or the top level) also holds text."""
    mixed: set[int] = set()
    stack: list[tuple[str, list[int], list[bool]]] = [("", [], [False])]  # (tag, child starts, has text)
    for index, event in enumerate(events):
        if event.kind == "text":
            if html[spans[index][0]:spans[index][1]].strip():
                stack[-1][2][0] = True
        elif event.kind == "start":
            stack[-1][1].append(index)
            stack.append((event.tag, [], [False]))
        elif event.kind == "void":
            stack[-1][1].append(index)
        elif event.kind == "end" and any(tag == event.tag for tag, _, _ in stack[1:]):
            while True:
                tag, children, text = stack.pop()
                if text[0]:
                    mixed.update(children)
                if tag == event.tag:
                    break
    for _, children, text in stack:
        if text[0]:
            mixed.update(children)
    return mixed


def _kept_words(tag: str, inner: str) -> str:
    """The words of a code-like element the sentence can carry: its content, when that is ASCII text
    that escapes back to the same bytes (so the element is still kept byte-identical) and holds
    nothing that reads as a tag of ours; else "" (the element stays one void tag)."""
    if tag not in _KEPT_WORDS or not inner.strip() or not inner.isascii() or "<" in inner or len(inner) > 200:
        return ""
    words = html_lib.unescape(inner)
    if html_lib.escape(words, quote=False) != inner or markup.TAG.search(words) or "\n" in words:
        return ""
    return words


def _view_name(tag: str) -> str:
    name = _VIEW_NAMES.get(tag, tag)
    return name if re.fullmatch(r"[a-z]{1,5}", name) else "g"


def _spans(events: list[_Event], length: int) -> list[tuple[int, int]]:
    spans = []
    for index, event in enumerate(events):
        next_start = events[index + 1].start if index + 1 < len(events) else length
        spans.append((event.start, next_start if event.end is None else event.end))
    return spans


def _matching_end(events: list[_Event], index: int) -> int | None:
    """The index of the end tag that closes the element started at ``index``."""
    tag = events[index].tag
    depth = 0
    for k in range(index + 1, len(events)):
        event = events[k]
        if event.tag != tag:
            continue
        if event.kind == "start":
            depth += 1
        elif event.kind == "end":
            if depth == 0:
                return k
            depth -= 1
    return None


def _pair_up(items: list[_Item]) -> None:
    """Start and end tags that do not pair up within the block become void tags at their place."""
    stack: list[int] = []
    paired: set[int] = set()
    for k, item in enumerate(items):
        if item.kind == "open":
            stack.append(k)
        elif item.kind == "close":
            if stack and items[stack[-1]].tag == item.tag:
                paired |= {stack.pop(), k}
            elif any(items[s].tag == item.tag for s in stack):
                while items[stack[-1]].tag != item.tag:  # close what it skips over: crossing markup
                    stack.pop()
                paired |= {stack.pop(), k}
    for k, item in enumerate(items):
        if item.kind in ("open", "close") and k not in paired:
            item.kind = "void"
            if not item.parts:
                item.parts = [item.raw]
    # crossing markup that left an inner start tag paired with nothing: check the nesting again
    stack = []
    for k, item in enumerate(items):
        if item.kind == "open":
            stack.append(k)
        elif item.kind == "close":
            if not stack or items[stack[-1]].tag != item.tag:
                item.kind = "void"
                continue
            stack.pop()
    for k in stack:
        items[k].kind = "void"


def _partner(items: list[_Item], k: int) -> int | None:
    depth = 0
    for j in range(k, len(items)):
        if items[j].kind == "open":
            depth += 1
        elif items[j].kind == "close":
            depth -= 1
            if depth == 0:
                return j
    return None


def _trim_edges(items: list[_Item], head: list[_Item], tail: list[_Item]) -> None:
    """Move the run's edge whitespace (``&nbsp;`` included) out, into head and tail."""
    while items and items[0].kind == "text":
        start, end = _core_bounds(items[0].raw)
        if start == 0:
            break
        lead = items[0].raw[:start]
        head.append(_Item("void", lead, [lead]))
        rest = items[0].raw[start:]
        if rest:
            items[0] = _Item("text", rest, text=html_lib.unescape(rest))
        else:
            items.pop(0)
    while items and items[-1].kind == "text":
        raw = items[-1].raw
        start, end = _core_bounds(raw)
        if end == len(raw) and raw.strip():
            break
        trail = raw[end:] if raw.strip() else raw
        keep = raw[:end] if raw.strip() else ""
        tail.insert(0, _Item("void", trail, [trail]))
        if keep:
            items[-1] = _Item("text", keep, text=html_lib.unescape(keep))
        else:
            items.pop()


def _item_parts(item: _Item) -> Parts:
    return item.parts if item.kind != "text" else [item.raw]


def _tag_parts(document: HtmlDocument, tag_text: str, attrs: list[tuple[str, str | None]],
               skip_attributes: bool) -> Parts:
    """A start tag's markup, with its alt/title/placeholder values as plain segments."""
    parts: Parts = []
    name = _TAG_NAME.match(tag_text)
    if skip_attributes or not name:
        return [tag_text]
    expected = iter(attrs)
    copied, position = 0, name.end()
    while (attribute := _ATTRIBUTE.match(tag_text, position)) and attribute.end() > position:
        position = attribute.end()
        if attribute.group(1).lower() not in _READ_ATTRIBUTES:
            continue  # the tokenizer kept only the attributes read here, in order
        parsed = next(expected, None)
        value = attribute.group(3)
        if not value or attribute.group(1).lower() not in _TRANSLATED_ATTRIBUTES:
            continue
        quoted = value[0] in "'\"" and value[0] == value[-1] and len(value) > 1
        inner = value[1:-1] if quoted else value
        if parsed != (attribute.group(1).lower(), html_lib.unescape(inner)):
            continue  # our reading disagrees with the parser's: leave it alone
        value_start = attribute.start(3) + quoted
        parts.append(tag_text[copied:value_start])
        parts += _text_parts(document, inner, unquoted=not quoted)
        copied = value_start + len(inner)
    parts.append(tag_text[copied:])
    return [part for part in parts if part != ""]


def _text_parts(document: HtmlDocument, raw: str, unquoted: bool) -> Parts:
    """An attribute value: its stripped core a plain segment, its edges verbatim."""
    start, end = _core_bounds(raw)
    lead, core, trail = raw[:start], raw[start:end], raw[end:]
    text = html_lib.unescape(core)
    if not text.strip():
        return [raw]
    document.segments.append(text)
    return [lead, _Slot(core, True, unquoted, len(document.segments) - 1), trail]


_OPENS_A_TAG = re.compile(r"<[A-Za-z/!?]")
_COMMENT_CLOSE_REVERSED = re.compile(r">\s*--")  # html.parser ends a comment at "--", spaces, ">"


def _unclosed_tail(html: str) -> int:
    """Where the first construct starts that nothing after it closes (``len(html)`` if none).

    A tag with no ">" after it, or a comment with no "-->", runs to the end of the file (a browser
    drops the one and ends the other there). html.parser before Python 3.12.11 / 3.13.4 rescans to
    the end from every such opener, which is quadratic: 24 KB of "<a " took half a minute. The tail
    is kept verbatim, as one piece of markup, and never parsed.
    """
    stop = len(html)
    found = _OPENS_A_TAG.search(html, html.rfind(">") + 1)
    if found:
        stop = found.start()
    closer = _COMMENT_CLOSE_REVERSED.search(html[::-1])
    last_close = len(html) - closer.start() if closer else 0
    opened = html.find("<!--", last_close)
    if 0 <= opened < stop:
        stop = opened
    return stop


def _tokenize(html: str) -> list[_Event]:
    """Every token with its offset, restarting past what html.parser cannot parse."""
    events: list[_Event] = []
    position = 0
    stop = _unclosed_tail(html)
    tail = [_Event("markup", stop)] if stop < len(html) else []
    while True:
        tokenizer = _Tokenizer(html, position)
        try:
            tokenizer.feed(html[position:stop])
            tokenizer.close()
            return events + tokenizer.events + tail
        except AssertionError:  # html.parser gives up on some malformed "<!" declarations
            failed_at = tokenizer.document_position()
            closing = html.find(">", failed_at, stop)
            position = stop if closing < 0 else closing + 1
            events += tokenizer.events + [_Event("markup", failed_at)]  # a bogus comment


def _merge_text_runs(events: list[_Event]) -> list[_Event]:
    """Join adjacent data and entity tokens: "a &amp; b" is one piece of text."""
    merged: list[_Event] = []
    for event in events:
        previous = merged[-1] if merged else None
        if previous and event.kind == previous.kind == "text" and previous.end == event.start:
            previous.end = event.end
        else:
            merged.append(_Event(event.kind, event.start, event.end, event.tag, event.attrs))
    return merged


def _not_translated(attrs: list[tuple[str, str | None]], inside_untranslated: bool) -> bool:
    values = {name: (value or "") for name, value in attrs}
    translate = values.get("translate", "").strip().lower()
    if translate == "no" or "notranslate" in values.get("class", "").split():
        return True
    return inside_untranslated and translate != "yes"


def _close(open_elements: list[tuple[str, bool]], tag: str) -> None:
    """Pop to the matching open element; a stray end tag closes nothing."""
    for depth in range(len(open_elements) - 1, -1, -1):
        if open_elements[depth][0] == tag:
            del open_elements[depth:]
            return


def _core_bounds(raw: str) -> tuple[int, int]:
    """Bounds of ``raw`` without edge whitespace, ``&nbsp;``-style entities included."""
    start, end = 0, len(raw)
    while (token := _LEADING_TOKEN.match(raw, start)) and html_lib.unescape(token.group()).isspace():
        start = token.end()
    while end > start:
        entity = _TRAILING_ENTITY.search(raw, max(start, end - 40), end)
        width = len(entity.group()) if entity else 1
        if not html_lib.unescape(raw[end - width:end]).isspace():
            break
        end -= width
    return start, end
