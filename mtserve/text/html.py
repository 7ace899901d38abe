"""Translate the text of an HTML document without touching its markup.

The engine only ever sees plain text; every tag, attribute, comment and byte
of whitespace is carried over from the input, so a page that goes through the
service renders exactly as before, only in another language. Segments whose
translation comes back unchanged keep their original bytes (entities included),
which makes ``parse_html(h).render(parse_html(h).segments) == h`` for any input.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

# Elements whose text is code or user input, not prose.
_RAW_TEXT_TAGS = {"script", "style", "code", "pre", "kbd", "samp", "var", "textarea"}
_VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
              "param", "source", "track", "wbr"}
_TRANSLATED_ATTRIBUTES = {"alt", "title", "placeholder"}
_READ_ATTRIBUTES = _TRANSLATED_ATTRIBUTES | {"translate", "class"}

# The tag grammar of html.parser, used to find where each attribute value sits.
_TAG_NAME = re.compile(r"<[a-zA-Z][^\t\n\r\f />\x00]*(?:\s|/(?!>))*")
_ATTRIBUTE = re.compile(
    r"""([^\s/>][^\s/=>]*)(\s*=+\s*('[^']*'|"[^"]*"|(?!['"])[^>\s]*))?(?:\s|/(?!>))*"""
)
_ENDS_UNQUOTED = re.compile(r"[\s=`/]")  # what an unquoted attribute value cannot contain
_LEADING_TOKEN = re.compile(r"\s|&#?\w+;?")
_TRAILING_ENTITY = re.compile(r"&#?\w+;\Z")


@dataclass
class _Slot:
    """Where one segment goes back: its original bytes and how to encode a new text."""

    raw: str
    in_attribute: bool
    unquoted: bool = False  # an unquoted attribute value: quote it if the new text needs it


@dataclass
class HtmlDocument:
    segments: list[str]  # text to translate, in document order
    parts: list[str | _Slot] = field(default_factory=list, repr=False)

    def render(self, translations: list[str]) -> str:
        """Same markup, each segment replaced by its translation (HTML-escaped)."""
        if len(translations) != len(self.segments):
            raise ValueError(f"expected {len(self.segments)} translations, got {len(translations)}")
        pairs = iter(zip(self.segments, translations))
        output: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                output.append(part)
                continue
            segment, translation = next(pairs)
            if translation == segment:
                output.append(part.raw)
            else:
                encoded = html_lib.escape(translation, quote=part.in_attribute)
                needs_quotes = part.unquoted and (not encoded or _ENDS_UNQUOTED.search(encoded))
                output.append(f'"{encoded}"' if needs_quotes else encoded)
        return "".join(output)


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


def parse_html(html: str) -> HtmlDocument:
    """Split ``html`` into verbatim markup and translatable segments."""
    document = HtmlDocument(segments=[])
    events = _merge_text_runs(_tokenize(html))
    open_elements: list[tuple[str, bool]] = []  # (tag, its content is not translated)
    cursor = 0
    for index, event in enumerate(events):
        next_start = events[index + 1].start if index + 1 < len(events) else len(html)
        start = max(event.start, cursor)  # defensive: tokens never overlap in practice
        end = max(start, next_start if event.end is None else event.end)
        document.parts.append(html[cursor:start])
        skip = open_elements[-1][1] if open_elements else False
        if event.kind == "text" and not skip:
            _add_text(document, html[start:end], in_attribute=False)
        elif event.kind in ("start", "void"):
            skip_attributes = _not_translated(event.attrs, skip)
            _add_tag(document, html[start:end], event.attrs, skip_attributes)
            if event.kind == "start" and event.tag not in _VOID_TAGS:
                open_elements.append((event.tag, skip_attributes or event.tag in _RAW_TEXT_TAGS))
        else:
            document.parts.append(html[start:end])
            if event.kind == "end":
                _close(open_elements, event.tag)
        cursor = end
    document.parts.append(html[cursor:])
    document.parts = [part for part in document.parts if part != ""]
    return document


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


def _add_text(document: HtmlDocument, raw: str, in_attribute: bool, unquoted: bool = False) -> None:
    """Add the stripped core of ``raw`` as a segment, keeping its edges verbatim."""
    start, end = _core_bounds(raw)
    lead, core, trail = raw[:start], raw[start:end], raw[end:]
    text = html_lib.unescape(core)
    if not text.strip():
        document.parts.append(raw)
        return
    document.parts += [lead, _Slot(core, in_attribute, unquoted), trail]
    document.segments.append(text)


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


def _add_tag(document: HtmlDocument, tag_text: str, attrs: list[tuple[str, str | None]],
             skip_attributes: bool) -> None:
    """Copy a start tag, turning alt/title/placeholder values into segments."""
    name = _TAG_NAME.match(tag_text)
    if skip_attributes or not name:
        document.parts.append(tag_text)
        return
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
        document.parts.append(tag_text[copied:value_start])
        _add_text(document, inner, in_attribute=True, unquoted=not quoted)
        copied = value_start + len(inner)
    document.parts.append(tag_text[copied:])
