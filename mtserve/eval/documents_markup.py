"""``mtserve eval --markup --as-document FORMAT``: the placement measure on documents.

A user's tags mostly arrive inside files: bold and italic runs of a Word or PowerPoint paragraph,
spans of an OpenDocument one, Markdown emphasis, links and inline code. Each item's HTML source is
built into a file of FORMAT, sent through the file path a user's file takes (in process: the
registry's reader, the documents runner and the format's writer, as ``mtserve translate-file`` does;
with ``--url``: ``POST /translate_file``), and the translated file is read back as HTML-like markup
with the item's own tags, so ``mtserve.eval.placement`` scores it unchanged.

What each format makes of a tag:

======================  =====================  ==================  ===================  ============  =======
tag                     docx                   pptx                odt                  md            html
======================  =====================  ==================  ===================  ============  =======
b, strong               bold run               bold run            span, bold style     ``**x**``     as is
i, em                   italic run             italic run          span, italic style   ``*x*``       as is
a href                  ``w:hyperlink``        run hyperlink       ``text:a``           ``[x](url)``  as is
code, tt, kbd, samp     run in a ``Code``      run in Courier New  span, Courier New    ```x```       as is
                        style (Courier New)                        style
======================  =====================  ==================  ===================  ============  =======

Word, PowerPoint and OpenDocument have no notion of code: a run in a monospace font is one more
format, and the office reader sends its words to the model like any others; Markdown keeps a code
span verbatim and HTML keeps ``<code>``, as their readers do. A document has one bold and one italic,
so an item that uses ``<b>`` and ``<strong>`` both (or ``<i>`` and ``<em>``) cannot be built, nor one
with any other tag (``<span>``, ``<abbr>``, ``<br>``...), two tags of one format side by side (they
read back as one), or a file whose markup does not read back as written (``**注意：**您``: CommonMark
does not take ``**`` after a punctuation mark before a letter as emphasis). Those items are skipped
and counted by reason. A link's other attributes (``target``, ``rel``) are not kept by a document;
it reads back with the source's opening tag for its address.
"""

from __future__ import annotations

import html as html_lib
import io
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, replace

from mtserve.eval.datasets import DatasetError
from mtserve.eval.markup import MarkupItem, MarkupSet, strip_html
from mtserve.eval.placement import _TAG, VOID_TAGS, elements, tag_key
from mtserve.eval.targets import MemoryUse, TargetError

FORMATS = ("docx", "pptx", "odt", "md", "html")
# The source's tag names by what a document makes of them.
KINDS = {"b": "b", "strong": "b", "i": "i", "em": "i", "code": "code", "tt": "code", "kbd": "code",
         "samp": "code", "a": "a"}
MONOSPACE = "Courier New"
MONOSPACE_FONTS = {"courier new", "courier", "consolas", "menlo", "monaco", "liberation mono",
                   "dejavu sans mono", "monospace"}
CODE_STYLE = "Code"  # the .docx character style of inline code
_SAID = {"b": "bold", "i": "italic", "code": "code", "a": "link"}
_LIBRARIES = {"pptx": ("pptx", "python-pptx"), "odt": ("odf", "odfpy")}
_NOT_AS_WRITTEN = {
    "md": "its .md does not read back as written (** or * beside punctuation is no emphasis in CommonMark)",
}


class Unsupported(ValueError):
    """The item's tags cannot be written in the format; the message says why."""


@dataclass(frozen=True, order=True)
class Mark:
    """One format a stretch of text has: bold, italic, code, or a link to ``href``."""

    kind: str  # "b", "i", "code" or "a"
    href: str = ""


Piece = tuple[str, frozenset[Mark]]  # a stretch of text and the formats it has


@dataclass
class Inline:
    """An item's HTML as stretches of formatted text, and the source's opening tag of each format."""

    pieces: list[Piece]
    openings: dict[Mark, str]
    rank: dict[Mark, int]  # the order each format first opens: the outer one of two opening together
    inside_code: bool = False  # a tag opens inside a code element


# --- the source's markup as formatted stretches --------------------------------------------------
def parse_inline(source: str) -> Inline:
    """``source`` (inline HTML) as formatted stretches; Unsupported names what a document cannot hold."""
    pieces: list[Piece] = []
    openings: dict[Mark, str] = {}
    rank: dict[Mark, int] = {}
    stack: list[tuple[str, Mark, int]] = []  # (name, mark, where its content starts in pieces)
    inside_code = False
    position = 0

    def text(chunk: str) -> None:
        if chunk:
            pieces.append((html_lib.unescape(chunk), frozenset(mark for _, mark, _ in stack)))

    for match in _TAG.finditer(source):
        text(source[position:match.start()])
        position = match.end()
        closing, name, self_closing = match.group(1), match.group(2).lower(), match.group(4)
        if self_closing or name in VOID_TAGS:
            raise Unsupported(f"<{name}>: a void tag")
        if closing:
            if not stack or stack[-1][0] != name:
                raise Unsupported("tags not closed in order")
            _, mark, start = stack.pop()
            if not "".join(t for t, _ in pieces[start:]).strip():
                raise Unsupported(f"an empty <{name}>")
            continue
        kind = KINDS.get(name)
        if kind is None:
            raise Unsupported(f"<{name}>: no such format in a document")
        key = tag_key(match.group())
        href = dict(key[1]).get("href", "") if len(key) == 2 else ""
        if kind == "a" and not href:
            raise Unsupported("<a> without an href")
        mark = Mark(kind, href if kind == "a" else "")
        outer = [n for n, m, _ in stack if m.kind == kind]
        if outer:
            raise Unsupported(f"<{name}> inside <{outer[0]}>: a {_SAID[kind]} inside a {_SAID[kind]} is one")
        if mark in openings and tag_key(openings[mark]) != key:
            if kind == "a":
                raise Unsupported("two links to one address with other attributes: a document keeps the address")
            raise Unsupported(f"<{tag_key(openings[mark])[0]}> and <{name}> both: a document has one {_SAID[kind]}")
        inside_code = inside_code or any(m.kind == "code" for _, m, _ in stack)
        openings.setdefault(mark, match.group())
        rank.setdefault(mark, len(rank))
        stack.append((name, mark, len(pieces)))
    text(source[position:])
    if stack:
        raise Unsupported("tags not closed in order")
    inline = Inline(merge(pieces), openings, rank, inside_code)
    if not same_markup(to_markup(inline.pieces, openings, rank), source):
        raise Unsupported("two tags of one format side by side: a document reads them as one")
    return inline


def merge(pieces: list[Piece]) -> list[Piece]:
    """Adjacent stretches of the same formats as one; empty ones left out."""
    merged: list[Piece] = []
    for text, marks in pieces:
        if not text:
            continue
        if merged and merged[-1][1] == marks:
            merged[-1] = (merged[-1][0] + text, marks)
        else:
            merged.append((text, marks))
    return merged


def settle_spaces(pieces: list[Piece]) -> list[Piece]:
    """A stretch of spaces between two bold (or italic) stretches is bold (italic) too: a reader cannot
    see a space's weight or slant, and an office file's runs often leave it out ("<b>new</b> <b>product</b>"
    where the source had "<b>new product</b>"). A link's or code's space is left as it is: its underline
    or its width shows."""
    settled = list(pieces)
    for k in range(1, len(settled) - 1):
        text, marks = settled[k]
        if not text.strip():
            shared = settled[k - 1][1] & settled[k + 1][1]
            settled[k] = (text, marks | {m for m in shared if m.kind in ("b", "i")})
    return merge(settled)


def events(pieces: list[Piece], rank: dict[Mark, int]) -> list[tuple[str, object]]:
    """The stretches as nested ("open", mark), ("text", str), ("close", mark) events. Of the formats that
    open together, the one that lasts longest opens first (it is the outer one), then the source's order."""
    pieces = merge(pieces)
    found: list[tuple[str, object]] = []
    stack: list[Mark] = []
    for index, (text, marks) in enumerate(pieces):
        keep = 0
        while keep < len(stack) and stack[keep] in marks:
            keep += 1
        for mark in reversed(stack[keep:]):
            found.append(("close", mark))
        del stack[keep:]
        lasts = {mark: _stretches_with(mark, pieces[index:]) for mark in marks - set(stack)}
        for mark in sorted(lasts, key=lambda m: (-lasts[m], rank.get(m, len(rank)), m)):
            found.append(("open", mark))
            stack.append(mark)
        found.append(("text", text))
    found += [("close", mark) for mark in reversed(stack)]
    return found


def _stretches_with(mark: Mark, pieces: list[Piece]) -> int:
    """How many of ``pieces``, from the first, have ``mark``."""
    count = 0
    for _, marks in pieces:
        if mark not in marks:
            break
        count += 1
    return count


_DEFAULT_NAMES = {"b": "b", "i": "i", "code": "code", "a": "a"}


def to_markup(pieces: list[Piece], openings: dict[Mark, str], rank: dict[Mark, int]) -> str:
    """The stretches as HTML with the source's own tags (a format the source lacks gets its plain tag)."""
    out = []
    for event, value in events(pieces, rank):
        if event == "text":
            out.append(html_lib.escape(str(value), quote=False))
            continue
        assert isinstance(value, Mark)
        opening = openings.get(value) or (f'<a href="{html_lib.escape(value.href)}">' if value.kind == "a"
                                          else f"<{_DEFAULT_NAMES[value.kind]}>")
        out.append(opening if event == "open" else f"</{tag_key(opening)[0]}>")
    return "".join(out)


def same_markup(got: str, source: str) -> bool:
    """The same text and the same elements around the same words (whitespace aside)."""
    def squeeze(text: str) -> str:
        return " ".join(text.split())

    def shape(text: str) -> tuple:
        return squeeze(strip_html(text)), sorted((e.key, squeeze(e.content)) for e in elements(text))

    return shape(got) == shape(source)


# --- building a file -------------------------------------------------------------------------------
def build_docx(inline: Inline) -> bytes:
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    code = document.styles.add_style(CODE_STYLE, WD_STYLE_TYPE.CHARACTER)
    code.font.name = MONOSPACE
    paragraph = document.add_paragraph()
    link: tuple[str, object] | None = None  # (href, its w:hyperlink)
    for text, marks in inline.pieces:
        run = paragraph.add_run(text)
        run.bold = True if Mark("b") in marks else None
        run.italic = True if Mark("i") in marks else None
        if Mark("code") in marks:
            run.style = code
        href = next((m.href for m in marks if m.kind == "a"), None)
        if href is None:
            link = None
            continue
        if link is None or link[0] != href:
            element = OxmlElement("w:hyperlink")
            element.set(qn("r:id"), document.part.relate_to(href, RELATIONSHIP_TYPE.HYPERLINK, is_external=True))
            run._r.addprevious(element)
            link = (href, element)
        link[1].append(run._r)  # type: ignore[attr-defined]
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def build_pptx(inline: Inline) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[6])  # blank
    paragraph = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(8), Inches(2)).text_frame.paragraphs[0]
    for text, marks in inline.pieces:
        run = paragraph.add_run()
        run.text = text
        if Mark("b") in marks:
            run.font.bold = True
        if Mark("i") in marks:
            run.font.italic = True
        if Mark("code") in marks:
            run.font.name = MONOSPACE
        href = next((m.href for m in marks if m.kind == "a"), None)
        if href is not None:
            run.hyperlink.address = href
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def build_odt(inline: Inline) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.style import Style, TextProperties
    from odf.text import A, P, Span

    document = OpenDocumentText()
    styles = {}
    for kind, name, properties in (("b", "Bold", {"fontweight": "bold"}), ("i", "Italic", {"fontstyle": "italic"}),
                                   ("code", "Code", {"fontfamily": MONOSPACE})):
        style = Style(name=name, family="text")
        style.addElement(TextProperties(**properties))
        document.automaticstyles.addElement(style)
        styles[kind] = style
    paragraph = P()
    stack = [paragraph]
    for event, value in events(inline.pieces, inline.rank):
        if event == "text":
            stack[-1].addText(str(value))
        elif event == "open":
            assert isinstance(value, Mark)
            element = A(href=value.href, type="simple") if value.kind == "a" else Span(stylename=styles[value.kind])
            stack[-1].addElement(element)
            stack.append(element)
        else:
            stack.pop()
    document.text.addElement(paragraph)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>&!])")
_MD_LINE_START = re.compile(r"^(\s*)([#>+\-=|]|\d+[.)])")


def build_md(inline: Inline) -> bytes:
    if inline.inside_code:
        raise Unsupported("a tag inside <code>: a Markdown code span holds only text")
    tokens: list[list[str]] = []  # [kind, text]: "text", or syntax that must touch its words
    code: list[str] | None = None
    for event, value in events(inline.pieces, inline.rank):
        if event == "text":
            if code is not None:
                code.append(str(value))
            else:
                tokens.append(["text", _MD_SPECIAL.sub(r"\\\1", str(value))])
            continue
        assert isinstance(value, Mark)
        if value.kind == "code":
            if event == "open":
                code = []
            else:
                tokens.append(["syntax", _code_span("".join(code or []))])
                code = None
        elif value.kind == "a":
            if re.search(r"[<>\s]", value.href):
                raise Unsupported("a link address with a space or an angle bracket")
            target = f"<{value.href}>" if re.search(r"[()]", value.href) else value.href
            tokens.append(["open" if event == "open" else "close", "[" if event == "open" else f"]({target})"])
        else:
            tokens.append(["open" if event == "open" else "close", "**" if value.kind == "b" else "*"])
    # emphasis touches its words: a space just inside the markers goes just outside them
    for i, token in enumerate(tokens):
        if token[0] != "text":
            continue
        first = i
        while first and tokens[first - 1][0] == "open":
            first -= 1
        if first < i:
            stripped = token[1].lstrip()
            tokens[first][1] = token[1][:len(token[1]) - len(stripped)] + tokens[first][1]
            token[1] = stripped
        last = i
        while last + 1 < len(tokens) and tokens[last + 1][0] == "close":
            last += 1
        if last > i:
            stripped = token[1].rstrip()
            tokens[last][1] += token[1][len(stripped):]
            token[1] = stripped
    line = "".join(text for _, text in tokens).strip()
    line = _MD_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), line, count=1)
    return (line + "\n").encode("utf-8")


def _code_span(text: str) -> str:
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


HTML_PAGE = ('<!DOCTYPE html>\n<html lang="zh">\n<head><meta charset="utf-8"></head>\n'
             "<body>\n<p>{}</p>\n</body>\n</html>\n")


def build_html(source: str) -> bytes:
    return HTML_PAGE.format(source).encode("utf-8")


# --- reading a file back ---------------------------------------------------------------------------
def _monospace(font: str | None) -> bool:
    return bool(font) and font.strip().lower() in MONOSPACE_FONTS  # type: ignore[union-attr]


def read_docx(data: bytes) -> list[Piece]:
    import docx
    from docx.text.hyperlink import Hyperlink

    pieces: list[Piece] = []
    for number, paragraph in enumerate(docx.Document(io.BytesIO(data)).paragraphs):
        if number:
            pieces.append(("\n", frozenset()))
        for content in paragraph.iter_inner_content():
            link = frozenset({Mark("a", content.address)}) if isinstance(content, Hyperlink) else frozenset()
            for run in (content.runs if isinstance(content, Hyperlink) else [content]):
                marks = set(link)
                if run.bold:
                    marks.add(Mark("b"))
                if run.italic:
                    marks.add(Mark("i"))
                style = run.style.name if run.style is not None else ""
                if style == CODE_STYLE or _monospace(run.font.name):
                    marks.add(Mark("code"))
                pieces.append((run.text, frozenset(marks)))
    return merge(pieces)


def read_pptx(data: bytes) -> list[Piece]:
    from pptx import Presentation

    pieces: list[Piece] = []
    for slide in Presentation(io.BytesIO(data)).slides:
        for shape in slide.shapes:
            if not shape.has_text_frame:
                continue
            for number, paragraph in enumerate(shape.text_frame.paragraphs):
                if number:
                    pieces.append(("\n", frozenset()))
                for run in paragraph.runs:
                    marks = set()
                    if run.font.bold:
                        marks.add(Mark("b"))
                    if run.font.italic:
                        marks.add(Mark("i"))
                    if _monospace(run.font.name):
                        marks.add(Mark("code"))
                    if run.hyperlink.address:
                        marks.add(Mark("a", run.hyperlink.address))
                    pieces.append((run.text, frozenset(marks)))
    return merge(pieces)


_ODF = {"office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
        "style": "urn:oasis:names:tc:opendocument:xmlns:style:1.0",
        "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
        "fo": "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0",
        "xlink": "http://www.w3.org/1999/xlink"}


def _odf(prefix: str, name: str) -> str:
    return f"{{{_ODF[prefix]}}}{name}"


def read_odt(data: bytes) -> list[Piece]:
    from lxml import etree

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        root = etree.fromstring(archive.read("content.xml"), etree.XMLParser(resolve_entities=False))
    formats: dict[str, set[Mark]] = {}
    for style in root.iter(_odf("style", "style")):
        marks = set()
        for properties in style.iter(_odf("style", "text-properties")):
            if properties.get(_odf("fo", "font-weight")) == "bold":
                marks.add(Mark("b"))
            if properties.get(_odf("fo", "font-style")) == "italic":
                marks.add(Mark("i"))
            if _monospace(properties.get(_odf("fo", "font-family"))) or \
                    _monospace(properties.get(_odf("style", "font-name"))):
                marks.add(Mark("code"))
        formats[style.get(_odf("style", "name"), "")] = marks
    pieces: list[Piece] = []

    def walk(element, marks: frozenset[Mark]) -> None:
        if element.tag == _odf("text", "span"):
            marks = marks | formats.get(element.get(_odf("text", "style-name"), ""), set())
        elif element.tag == _odf("text", "a"):
            marks = marks | {Mark("a", element.get(_odf("xlink", "href"), ""))}
        elif element.tag == _odf("text", "s"):
            pieces.append((" " * int(element.get(_odf("text", "c"), "1")), marks))
        elif element.tag == _odf("text", "tab"):
            pieces.append(("\t", marks))
        elif element.tag == _odf("text", "line-break"):
            pieces.append(("\n", marks))
        if element.text:
            pieces.append((element.text, marks))
        for child in element:
            if isinstance(child.tag, str):
                walk(child, marks)
            if child.tail:
                pieces.append((child.tail, marks))

    for number, paragraph in enumerate(root.iter(_odf("text", "p"), _odf("text", "h"))):
        if number:
            pieces.append(("\n", frozenset()))
        walk(paragraph, frozenset())
    return merge(pieces)


def read_md(data: bytes, hrefs: tuple[str, ...] = ()) -> list[Piece]:
    """The Markdown's inline syntax as formatted stretches; a link's address as the source wrote it
    where it is one of ``hrefs`` (CommonMark percent-encodes some characters)."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    known = {parser.normalizeLink(href): href for href in hrefs}
    pieces: list[Piece] = []
    for block in parser.parse(data.decode("utf-8")):
        if block.type != "inline":
            continue
        if pieces:
            pieces.append(("\n", frozenset()))
        marks: list[Mark] = []
        for token in block.children or []:
            if token.type in ("strong_open", "em_open", "link_open"):
                href = str(token.attrGet("href") or "")
                marks.append(Mark("b") if token.type == "strong_open" else Mark("i") if token.type == "em_open"
                             else Mark("a", known.get(href, href)))
            elif token.type in ("strong_close", "em_close", "link_close"):
                if marks:
                    marks.pop()
            elif token.type == "code_inline":
                pieces.append((token.content, frozenset(marks) | {Mark("code")}))
            elif token.type in ("softbreak", "hardbreak"):
                pieces.append((" " if token.type == "softbreak" else "\n", frozenset(marks)))
            else:  # text, inline HTML, an image's alt text
                pieces.append((token.content, frozenset(marks)))
    return merge(pieces)


_PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.DOTALL)


def read_html(data: bytes) -> str:
    found = _PARAGRAPH.search(data.decode("utf-8", "replace"))
    return found.group(1).strip() if found else ""


# --- one item, there and back ----------------------------------------------------------------------
def require(kind: str) -> None:
    """DatasetError, saying what to install, where the format's library is missing."""
    if kind not in FORMATS:
        raise DatasetError(f"--as-document {kind!r}: use one of {', '.join(FORMATS)}")
    if kind in _LIBRARIES:
        module, package = _LIBRARIES[kind]
        try:
            __import__(module)
        except ImportError:
            raise DatasetError(f"--as-document {kind} builds its files with {package}: pip install {package} "
                               "(or mtserve[eval])") from None


def build(kind: str, source: str) -> bytes:
    """The file of format ``kind`` that holds ``source`` (inline HTML) as one paragraph; Unsupported
    where its tags cannot be written there."""
    if kind == "html":
        return build_html(source)
    inline = parse_inline(source)
    return {"docx": build_docx, "pptx": build_pptx, "odt": build_odt, "md": build_md}[kind](inline)


def read_back(kind: str, data: bytes, source: str) -> str:
    """A (translated) file of format ``kind`` as HTML-like markup with ``source``'s tags: a bold run is
    the source's bold tag, a link the source's opening tag for its address."""
    if kind == "html":
        return read_html(data)
    inline = parse_inline(source)
    if kind == "md":
        pieces = read_md(data, tuple(m.href for m in inline.openings if m.kind == "a"))
    else:
        pieces = {"docx": read_docx, "pptx": read_pptx, "odt": read_odt}[kind](data)
    return to_markup(settle_spaces(pieces), inline.openings, inline.rank).strip()


def unsupported(kind: str, item: MarkupItem) -> str | None:
    """Why ``item`` cannot be measured as a file of format ``kind``, or None: it can."""
    if item.fmt != "html":
        return "placeholders, not tags"
    try:
        data = build(kind, item.source)
        back = read_back(kind, data, item.source)
    except Unsupported as exc:
        return str(exc)
    if not same_markup(back, item.source):
        return _NOT_AS_WRITTEN.get(kind, f"its .{kind} does not read back as written")
    return None


def as_documents(mset: MarkupSet, kind: str) -> MarkupSet:
    """The items of ``mset`` that a file of format ``kind`` can hold; the rest counted by reason."""
    require(kind)
    kept: list[MarkupItem] = []
    skipped: Counter[str] = Counter()
    for item in mset.items:
        reason = unsupported(kind, item)
        if reason is None:
            kept.append(item)
        else:
            skipped[reason] += 1
    notes = mset.notes + [f"each item sent as a .{kind} file through the file path and read back as markup"]
    return replace(mset, items=kept, notes=notes, as_document=kind, skipped=dict(skipped))


class DocumentTarget:
    """A target that sends each item as a file of format ``kind`` (in process: the documents runner; a
    server: ``POST /translate_file``) and reads the translated file back as markup."""

    def __init__(self, inner, kind: str):
        require(kind)
        send = getattr(inner, "translate_document", None) or getattr(inner, "translate_file", None)
        if send is None:
            raise TargetError("--as-document needs a target that translates files")
        self.inner, self.kind, self._send = inner, kind, send
        self.concurrency = inner.concurrency
        self.files = 0

    async def start(self) -> None:
        await self.inner.start()

    async def warm(self, source: str, target: str, context: str = "") -> None:
        await self.inner.warm(source, target, context)

    async def _through(self, source_markup: str, source: str, target: str) -> str:
        self.files += 1
        translated = await self._send(build(self.kind, source_markup), f"item.{self.kind}", source, target)
        return read_back(self.kind, translated, source_markup)

    async def translate_markup(self, text: str, source: str, target: str, fmt: str):
        """(the translated file read back as markup, None: a file's fallbacks are not counted)."""
        return await self._through(text, source, target), None

    async def translate(self, text: str, source: str, target: str, context: str = "") -> str:
        """The tag-free twin, as a file of the same format with no formatting."""
        return strip_html(await self._through(html_lib.escape(text, quote=False), source, target))

    def describe(self) -> dict:
        return {**self.inner.describe(), "as": f".{self.kind} files ({self.files} sent)"}

    def counters(self) -> dict[str, float]:
        return self.inner.counters()

    def variants(self, text: str, source: str, target: str, context: str = "") -> dict[str, str]:
        return {}

    def memory_use(self, text: str) -> MemoryUse | None:
        return None

    async def stop(self) -> None:
        await self.inner.stop()
