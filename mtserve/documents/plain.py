"""Plain text and HTML files.

Text: every non-blank line is a segment; blank lines, indentation and line
endings come back exactly. A paragraph wrapped over several lines is
translated line by line (a plain file has no way to say the lines belong
together). HTML: text nodes only, as ``format=html`` does for the API.
"""

from __future__ import annotations

import codecs
import re

from mtserve.documents.base import Decoded, Document, Output, decode_text, keep_edges
from mtserve.documents.limits import check_markup
from mtserve.text.html import HtmlDocument, parse_html


class TextDocument(Document):
    def __init__(self, decoded: Decoded):
        self.decoded = decoded
        self.lines = decoded.text.split("\n")
        self.where = [i for i, line in enumerate(self.lines) if line.strip()]
        super().__init__("text", [self.lines[i].strip() for i in self.where],
                         notes=["Every line is kept; each non-blank line is translated on its own."])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        lines = list(self.lines)
        for i, translation in zip(self.where, translations):
            lines[i] = keep_edges(lines[i], " ".join(translation.splitlines()))
        return Output(self.decoded.encode("\n".join(lines)), "txt", "text/plain; charset=utf-8")


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
