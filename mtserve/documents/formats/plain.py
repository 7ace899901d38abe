"""Plain text and HTML files.

Text: every non-blank line is a segment, except the lines of a wrapped
paragraph; blank lines, indentation and line endings come back exactly. A
paragraph hard-wrapped over several lines (a line that ends mid-sentence and
fills most of its paragraph's width, followed by one that is not a list item
or a heading) is translated as one text, and its translation is shared out
among the same lines (``mtserve.documents.formats.share``): line by line, a sentence
cut at the margin came back as two fragments. HTML: text nodes only, as
``format=html`` does for the API.
"""

from __future__ import annotations

import codecs
import re

from mtserve.documents.formats.base import Decoded, Document, Output, decode_text, keep_edges
from mtserve.documents.formats.limits import check_markup
from mtserve.documents.formats.share import columns, join_lines, runs_on, share_out
from mtserve.text.html import HtmlDocument, parse_html

# A line is wrapped when it fills this share of its paragraph's widest line, and that line is this wide
# (display columns, a CJK character two): a heading, a list item or a line of verse is shorter.
_WRAPPED_SHARE = 0.6
_WRAPPED_MIN_COLUMNS = 30
_PARAGRAPH_CHARS = 2000  # a longer wrapped paragraph goes in pieces of this size
# What opens a list item, a heading or a quote: such a line starts something new.
_STARTS_ITEM = re.compile(r"\s*(?:[-*+•·>#|]|\d{1,3}(?:[.)]\s|、)|[(（][0-9一二三四五六七八九十]{1,3}[)）]|"
                          r"[一二三四五六七八九十]{1,3}、)")


class TextDocument(Document):
    def __init__(self, decoded: Decoded):
        self.decoded = decoded
        self.lines = decoded.text.split("\n")
        self.where = [i for i, line in enumerate(self.lines) if line.strip()]
        self.passages = _paragraphs(self.lines, self.where)  # each a run of line numbers translated as one
        super().__init__("text", [join_lines([self.lines[i].strip() for i in run]) for run in self.passages],
                         notes=["Every line is kept; each non-blank line is translated on its own, and a "
                                "paragraph wrapped over several lines as one, shared out among its lines."])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        lines = list(self.lines)
        for run, translation in zip(self.passages, translations):
            flat = " ".join(translation.splitlines())
            shares = share_out(flat, [lines[i] for i in run]) if len(run) > 1 else [flat]
            for i, share in zip(run, shares):
                lines[i] = keep_edges(lines[i], share)
        return Output(self.decoded.encode("\n".join(lines)), "txt", "text/plain; charset=utf-8")


def _paragraphs(lines: list[str], where: list[int]) -> list[list[int]]:
    """The non-blank lines in runs: a wrapped paragraph's lines together, every other line alone."""
    width = {i: columns(lines[i].rstrip()) for i in where}
    widest = _block_widths(where, width)
    runs: list[list[int]] = []
    size = 0
    for i in where:
        last = runs[-1] if runs else None
        if last is not None and last[-1] == i - 1 and size + len(lines[i]) <= _PARAGRAPH_CHARS \
                and _wraps_into(lines[i - 1], lines[i], width[i - 1], widest[i]):
            last.append(i)
            size += len(lines[i])
        else:
            runs.append([i])
            size = len(lines[i])
    return runs


def _wraps_into(line: str, following: str, width: int, widest: int) -> bool:
    """Whether ``line`` (``width`` columns) is a paragraph's line wrapped at the margin and ``following``
    goes on with it."""
    if widest < _WRAPPED_MIN_COLUMNS or width < _WRAPPED_SHARE * widest:
        return False
    if not runs_on(line.strip()) or _STARTS_ITEM.match(following):
        return False
    return _indent(following) <= _indent(line)  # a first-line indent, or none; deeper is a quote or code


def _block_widths(where: list[int], width: dict[int, int]) -> dict[int, int]:
    """For each non-blank line, the width of the widest line of its block (consecutive non-blank lines)."""
    widest: dict[int, int] = {}
    block: list[int] = []
    for i in [*where, None]:
        if block and (i is None or i != block[-1] + 1):
            widest.update(dict.fromkeys(block, max(width[j] for j in block)))
            block = []
        if i is not None:
            block.append(i)
    return widest


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def read_text(data: bytes) -> TextDocument:
    return TextDocument(decode_text(data, ".txt"))


# --- HTML ------------------------------------------------------------------------------
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_HTML_TAG = re.compile(r"<html\b[^>]*>", re.IGNORECASE)
_LANG_ATTRIBUTE = re.compile(r"""(\s(?:xml:)?lang\s*=\s*)(["'])[^"']*\2""", re.IGNORECASE)


# Python codecs that decode bytes to str but are no charset a page could be written in.
_NOT_CHARSETS = {"idna", "punycode", "undefined", "unicode-escape", "raw-unicode-escape"}


def declared_charset(data: bytes) -> str | None:
    """The text encoding a page's <meta charset> names, if Python has it as a text codec.

    codecs.lookup() also knows codecs that are not text encodings (base64, rot13, zlib: decoding
    with them raises LookupError) and some that are no page's charset (idna, unicode_escape).
    """
    found = _CHARSET.search(data[:4096])
    if not found:
        return None
    name = found.group(1).decode("ascii", "replace")
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    # CodecInfo marks the bytes-to-bytes and str-to-str codecs (str.encode refuses them the same way).
    if not getattr(info, "_is_text_encoding", True) or info.name.replace("_", "-") in _NOT_CHARSETS:
        return None
    return info.name


def set_html_lang(html: str, target: str) -> str:
    """Point the root element's lang and xml:lang attributes, where present, at the target."""
    tag = _HTML_TAG.search(html)
    if tag is None:
        return html
    new_tag = _LANG_ATTRIBUTE.sub(lambda m: f"{m.group(1)}{m.group(2)}{target}{m.group(2)}", tag.group())
    return html[:tag.start()] + new_tag + html[tag.end():]


class HtmlFileDocument(Document):
    def __init__(self, decoded: Decoded, parsed: HtmlDocument, kind: str = "html"):
        self.decoded = decoded
        self.parsed = parsed
        super().__init__(kind, list(parsed.segments), markup=True, notes=[
            "Markup, attributes, scripts, styles and code are kept byte for byte; "
            "text and alt/title/placeholder attributes are translated.",
            "Each paragraph is translated whole with its inline tags (<b>, <a>, <span>...), "
            "which stay on the words they belong to; <code> and translate=\"no\" pass through.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        html = set_html_lang(self.parsed.render(translations), target)
        encoding = self.decoded.encoding
        if self.decoded.newline != "\n":
            html = html.replace("\n", self.decoded.newline)
        data = html.encode(encoding, errors="xmlcharrefreplace")
        return Output(data, "html", f"text/html; charset={encoding.removesuffix('-sig')}")


def read_html(data: bytes) -> HtmlFileDocument:
    declared = declared_charset(data)
    fallbacks = tuple(c for c in (declared, "cp1252") if c and c not in ("utf-8", "utf_8"))
    decoded = decode_text(data, ".html", fallbacks=fallbacks)
    check_markup(decoded.text, "the .html file")
    return HtmlFileDocument(decoded, parse_html(decoded.text))
