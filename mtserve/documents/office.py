"""Office documents: Word (.docx), PowerPoint (.pptx) and OpenDocument text (.odt).

All three are zip archives of XML. The text lives in paragraphs, and a
paragraph's text is cut into runs that carry the character formatting. The
file is edited in place, at the XML level (lxml): every part that is not
translated is copied byte for byte, and in the translated parts only text
changes, so styles, numbering, tables, images, headers and footers, section
and slide layouts are all kept.

Each paragraph is translated as a whole (a sentence split over three runs is
still one sentence), between its tabs and line breaks, which are kept. The
translation goes into the run that held most of the paragraph's text, and the
other runs are emptied, so a paragraph written in one style keeps it exactly,
and a paragraph that mixes styles (one **bold** word) takes its main style.
A hyperlink is translated on its own so that it stays a link.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from typing import Callable

from lxml import etree

from mtserve.documents.base import Document, DocumentError, Output

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
MAX_EXPANDED_BYTES = 512 * 2**20  # a zip bomb guard: what an archive may unpack to
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True, remove_blank_text=False)


def q(ns: str, *names: str) -> frozenset[str]:
    return frozenset(f"{{{ns}}}{name}" for name in names)


@dataclass(frozen=True)
class Dialect:
    """How one XML vocabulary spells paragraphs, runs of text and breaks."""

    paragraphs: frozenset[str]
    text: frozenset[str]  # elements whose .text is document text
    mixed: bool  # text also sits in .text/.tail of inline elements (ODF), not only in ``text``
    descend: frozenset[str]  # inline containers whose content belongs to the paragraph
    breaks: frozenset[str]  # tabs, line breaks: kept, and they cut the paragraph into segments
    isolate: frozenset[str] = frozenset()  # hyperlinks: their text is a segment of its own
    preserve_space: bool = False  # set xml:space="preserve" on text elements we write


WORD = Dialect(
    paragraphs=q(W, "p"),
    text=q(W, "t"),
    mixed=False,
    descend=q(W, "r", "hyperlink", "smartTag", "ins", "sdt", "sdtContent", "customXml", "bdo", "dir",
              "moveTo"),
    breaks=q(W, "tab", "br", "cr", "ptab"),
    isolate=q(W, "hyperlink"),
    preserve_space=True,
)
DRAWING = Dialect(  # PowerPoint slides and notes
    paragraphs=q(A, "p"),
    text=q(A, "t"),
    mixed=False,
    descend=q(A, "r"),
    breaks=q(A, "br"),
)
ODF = Dialect(
    paragraphs=q(TEXT, "p", "h"),
    text=frozenset(),
    mixed=True,
    descend=q(TEXT, "span", "a", "ruby", "ruby-base", "meta", "bookmark", "bookmark-start", "bookmark-end",
              "reference-mark", "reference-mark-start", "reference-mark-end", "soft-page-break",
              "change-start", "change-end", "change", "hidden-text", "alphabetical-index-mark",
              "toc-mark", "user-index-mark"),
    breaks=q(TEXT, "tab", "line-break", "s"),
    isolate=q(TEXT, "a"),
)


@dataclass
class _Slot:
    element: etree._Element
    attribute: str  # "text" or "tail"

    @property
    def value(self) -> str:
        return getattr(self.element, self.attribute) or ""


@dataclass
class _Unit:
    """A stretch of a paragraph between breaks: one segment, written back into one slot."""

    slots: list[_Slot] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(slot.value for slot in self.slots)


def paragraph_units(paragraph: etree._Element, dialect: Dialect) -> list[_Unit]:
    units: list[_Unit] = [_Unit()]

    def cut() -> None:
        if units[-1].slots:
            units.append(_Unit())

    def walk(element: etree._Element) -> None:
        if element.text and (dialect.mixed or element.tag in dialect.text):
            units[-1].slots.append(_Slot(element, "text"))
        for child in element:
            tag = child.tag
            if not isinstance(tag, str):  # comments, processing instructions
                pass
            elif tag in dialect.breaks:
                cut()
            elif tag in dialect.isolate:
                cut()
                walk(child)
                cut()
            elif tag in dialect.text:
                if child.text:
                    units[-1].slots.append(_Slot(child, "text"))
            elif tag in dialect.descend and tag not in dialect.paragraphs:
                walk(child)
            # anything else (properties, drawings, fields, notes, nested paragraphs) is opaque
            if dialect.mixed and child.tail:
                units[-1].slots.append(_Slot(child, "tail"))

    walk(paragraph)
    return [unit for unit in units if unit.text.strip()]


def write_unit(unit: _Unit, translation: str, dialect: Dialect) -> None:
    """The translation into the slot that held most text; the other slots emptied."""
    main = max(unit.slots, key=lambda slot: len(slot.value.strip()))
    source = unit.text
    lead = source[: len(source) - len(source.lstrip())]
    trail = source[len(source.rstrip()):]
    for slot in unit.slots:
        if slot.attribute == "text" and not dialect.mixed:
            slot.element.text = ""
        else:
            setattr(slot.element, slot.attribute, None)
    setattr(main.element, main.attribute, lead + translation.strip() + trail)
    if dialect.preserve_space and main.attribute == "text":
        main.element.set(XML_SPACE, "preserve")


@dataclass
class _Part:
    name: str
    tree: etree._ElementTree
    units: list[_Unit]


class ZipXmlDocument(Document):
    def __init__(self, kind: str, data: bytes, parts: list[_Part], dialect: Dialect, extension: str,
                 media_type: str, notes: list[str], sections: list[tuple[str, int]]):
        self.data = data
        self.parts = parts
        self.dialect = dialect
        self.extension = extension
        self.media_type = media_type
        segments = [unit.text for part in parts for unit in part.units]
        super().__init__(kind, segments, notes=notes, sections=sections)

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        remaining = iter(translations)
        replaced: dict[str, bytes] = {}
        for part in self.parts:
            for unit in part.units:
                write_unit(unit, next(remaining), self.dialect)
            replaced[part.name] = serialize(part.tree)
        return Output(rewrite_zip(self.data, replaced), self.extension, self.media_type)


def serialize(tree: etree._ElementTree) -> bytes:
    info = tree.docinfo
    return etree.tostring(tree, xml_declaration=True, encoding=info.encoding or "UTF-8",
                          standalone=info.standalone)


def rewrite_zip(data: bytes, replaced: dict[str, bytes]) -> bytes:
    """The same archive, entries in the same order and compression, some contents replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            content = replaced.get(info.filename)
            target.writestr(info, source.read(info) if content is None else content)
    return out.getvalue()


def open_zip(data: bytes, kind: str, required: str) -> zipfile.ZipFile:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        broken = archive.testzip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise DocumentError(
            f"could not read the .{kind} file: it is not a valid {kind} (zip) archive ({exc})") from None
    if broken is not None:
        raise DocumentError(f"could not read the .{kind} file: the entry {broken!r} is damaged")
    expanded = sum(info.file_size for info in archive.infolist())
    if expanded > MAX_EXPANDED_BYTES:
        raise DocumentError(f"could not read the .{kind} file: it expands to {expanded / 2**20:,.0f} MiB; "
                            f"the most accepted is {MAX_EXPANDED_BYTES / 2**20:,.0f} MiB")
    if required not in archive.namelist():
        raise DocumentError(f"could not read the .{kind} file: {required} is missing; "
                            f"is it really a .{kind} file?")
    return archive


def parse_part(archive: zipfile.ZipFile, name: str, kind: str) -> etree._ElementTree:
    try:
        return etree.ElementTree(etree.fromstring(archive.read(name), _PARSER))
    except etree.XMLSyntaxError as exc:
        raise DocumentError(
            f"could not read the .{kind} file: {name} is not well-formed XML ({exc})") from None


def _read_parts(archive: zipfile.ZipFile, names: list[str], kind: str, dialect: Dialect,
                label: Callable[[str], str] | None = None) -> tuple[list[_Part], list[tuple[str, int]]]:
    parts, sections, count = [], [], 0
    for name in names:
        tree = parse_part(archive, name, kind)
        units = [unit for paragraph in tree.iter(*dialect.paragraphs)
                 for unit in paragraph_units(paragraph, dialect)]
        parts.append(_Part(name, tree, units))
        count += len(units)
        if label is not None:
            sections.append((label(name), count))
    return parts, sections


def _number(name: str) -> int:
    found = re.search(r"(\d+)\.xml$", name)
    return int(found.group(1)) if found else 0


# --- the three formats -----------------------------------------------------------------
_WORD_PARTS = re.compile(r"word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml")
_OFFICE_NOTES = [
    "Styles, numbering, tables, images, headers, footers and page layout are kept.",
    "Each paragraph is translated as a whole; inside a paragraph that mixes character styles, "
    "the translation takes the style of the run that held most of the text.",
]


def read_docx(data: bytes) -> ZipXmlDocument:
    archive = open_zip(data, "docx", "word/document.xml")
    order = {"document": 0, "header": 1, "footer": 2, "footnotes": 3, "endnotes": 4, "comments": 5}
    names = sorted((n for n in archive.namelist() if _WORD_PARTS.fullmatch(n)),
                   key=lambda n: (order[_WORD_PARTS.fullmatch(n).group(1).rstrip("0123456789")], _number(n)))
    parts, _ = _read_parts(archive, names, "docx", WORD)
    notes = _OFFICE_NOTES + ["Text in charts, SmartArt and embedded objects is not translated."]
    return ZipXmlDocument("docx", data, parts, WORD, "docx",
                          "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                          notes, [])


_SLIDE = re.compile(r"ppt/slides/slide\d+\.xml")
_NOTES = re.compile(r"ppt/notesSlides/notesSlide\d+\.xml")


def read_pptx(data: bytes) -> ZipXmlDocument:
    archive = open_zip(data, "pptx", "ppt/presentation.xml")
    slides = sorted((n for n in archive.namelist() if _SLIDE.fullmatch(n)), key=_number)
    notes = sorted((n for n in archive.namelist() if _NOTES.fullmatch(n)), key=_number)
    parts, sections = _read_parts(
        archive, slides + notes, "pptx", DRAWING,
        label=lambda n: f"slide {_number(n)}" if _SLIDE.fullmatch(n) else f"notes {_number(n)}")
    return ZipXmlDocument(
        "pptx", data, parts, DRAWING, "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ["Slide layouts, shapes, positions, tables, images and speaker notes are kept.",
         "Each paragraph is translated as a whole and takes the style of its main run; text that "
         "no longer fits its box is not shrunk.",
         "Text in charts, SmartArt and slide masters is not translated."],
        sections)


def read_odt(data: bytes) -> ZipXmlDocument:
    archive = open_zip(data, "odt", "content.xml")
    names = archive.namelist()
    mimetype = archive.read("mimetype").decode("ascii", "replace").strip() if "mimetype" in names else ""
    if mimetype and mimetype != "application/vnd.oasis.opendocument.text":
        raise DocumentError(f"could not read the .odt file: it is a {mimetype} document, not a text document")
    names = ["content.xml"] + (["styles.xml"] if "styles.xml" in archive.namelist() else [])
    parts, _ = _read_parts(archive, names, "odt", ODF)
    return ZipXmlDocument("odt", data, parts, ODF, "odt", "application/vnd.oasis.opendocument.text",
                          _OFFICE_NOTES, [])
