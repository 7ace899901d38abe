"""Office documents: Word (.docx), PowerPoint (.pptx) and OpenDocument text (.odt).

All three are zip archives of XML. The text lives in paragraphs, and a
paragraph's text is cut into runs that carry the character formatting. The
file is edited in place, at the XML level (lxml): every part that is not
translated is copied byte for byte, and in the translated parts only text
changes, so styles, numbering, tables, images, headers and footers, section
and slide layouts are all kept.
The archive and its XML parts are read within the limits, and written back,
by ``safe_zip_xml`` (which ``xlsx`` and ``epub`` share).

Each paragraph is translated as a whole (a sentence split over three runs is
still one sentence), between its tabs and line breaks, which are kept. A
paragraph written in one style keeps it exactly: the translation goes into the
run that held most of its text, and the other runs are emptied. In a paragraph
that mixes formats, each stretch of runs whose formatting differs from the
paragraph's main one (bold, italic, underline, colour, font, a hyperlink)
becomes an inline tag of a marked segment (``mtserve.text.markup``), and a
footnote, endnote or comment reference, a picture or a field in the sentence a
void tag; the translation then keeps each format on the words it belongs to,
and the runs are rebuilt from copies of the originals. Where the runs are
shared with a tab or a break, or hold a complex field, the paragraph keeps the
main-run treatment, and a hyperlink is then translated on its own so that it
stays a link.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

from mtserve.documents.formats.base import Document, DocumentError, Output
from mtserve.documents.formats.limits import budget
from mtserve.documents.formats.paragraphs import TEXT, Dialect, W, _Unit, paragraph_units, q, write_unit
from mtserve.documents.formats.safe_zip_xml import Archive, open_zip, parse_part, rewrite_zip, serialize

A = "http://schemas.openxmlformats.org/drawingml/2006/main"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"


WORD = Dialect(
    paragraphs=q(W, "p"),
    text=q(W, "t"),
    mixed=False,
    descend=q(W, "r", "hyperlink", "smartTag", "ins", "sdt", "sdtContent", "customXml", "bdo", "dir",
              "moveTo"),
    breaks=q(W, "tab", "br", "cr", "ptab"),
    isolate=q(W, "hyperlink"),
    preserve_space=True,
    run=f"{{{W}}}r",
    run_properties=f"{{{W}}}rPr",
    run_extras=q(W, "lastRenderedPageBreak"),
    inline_objects=q(W, "footnoteReference", "endnoteReference", "commentReference", "drawing", "object",
                     "sym"),
    markers=q(W, "bookmarkStart", "bookmarkEnd", "proofErr", "permStart", "permEnd", "commentRangeStart",
              "commentRangeEnd"),
)
DRAWING = Dialect(  # PowerPoint slides and notes
    paragraphs=q(A, "p"),
    text=q(A, "t"),
    mixed=False,
    descend=q(A, "r"),
    breaks=q(A, "br"),
    run=f"{{{A}}}r",
    run_properties=f"{{{A}}}rPr",
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
class _Part:
    name: str
    tree: etree._ElementTree
    units: list[_Unit]


class ZipXmlDocument(Document):
    def __init__(self, kind: str, archive: Archive, parts: list[_Part], dialect: Dialect, extension: str,
                 media_type: str, notes: list[str], sections: list[tuple[str, int]]):
        self.archive = archive
        self.parts = parts
        self.dialect = dialect
        self.extension = extension
        self.media_type = media_type
        segments = [unit.segment.strip() if unit.runs is not None else unit.text
                    for part in parts for unit in part.units]
        super().__init__(kind, segments, notes=notes, sections=sections, markup=True)

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        remaining = iter(translations)
        replaced: dict[str, bytes] = {}
        for part in self.parts:
            for unit in part.units:
                write_unit(unit, next(remaining), self.dialect)
            replaced[part.name] = serialize(part.tree)
        return Output(rewrite_zip(self.archive, replaced), self.extension, self.media_type)


def _read_parts(archive: Archive, names: list[str], kind: str, dialect: Dialect,
                label: Callable[[str], str] | None = None) -> tuple[list[_Part], list[tuple[str, int]]]:
    parts, sections, count = [], [], 0
    for name in names:
        tree = parse_part(archive, name, kind)
        units = []
        for paragraph in tree.iter(*dialect.paragraphs):
            units += paragraph_units(paragraph, dialect)
            budget().check_segments(count + len(units))
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
    "Each paragraph is translated as a whole; where it mixes character formats (bold, italic, "
    "colour, font, a hyperlink), each format stays on the words it belongs to.",
]


def read_docx(data: bytes) -> ZipXmlDocument:
    archive = open_zip(data, "docx", "word/document.xml")
    order = {"document": 0, "header": 1, "footer": 2, "footnotes": 3, "endnotes": 4, "comments": 5}
    names = sorted((n for n in archive.names() if _WORD_PARTS.fullmatch(n)),
                   key=lambda n: (order[_WORD_PARTS.fullmatch(n).group(1).rstrip("0123456789")], _number(n)))
    parts, _ = _read_parts(archive, names, "docx", WORD)
    notes = _OFFICE_NOTES + ["Text in charts, SmartArt and embedded objects is not translated."]
    return ZipXmlDocument("docx", archive, parts, WORD, "docx",
                          "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                          notes, [])


_SLIDE = re.compile(r"ppt/slides/slide\d+\.xml")
_NOTES = re.compile(r"ppt/notesSlides/notesSlide\d+\.xml")


def read_pptx(data: bytes) -> ZipXmlDocument:
    archive = open_zip(data, "pptx", "ppt/presentation.xml")
    slides = sorted((n for n in archive.names() if _SLIDE.fullmatch(n)), key=_number)
    notes = sorted((n for n in archive.names() if _NOTES.fullmatch(n)), key=_number)
    parts, sections = _read_parts(
        archive, slides + notes, "pptx", DRAWING,
        label=lambda n: f"slide {_number(n)}" if _SLIDE.fullmatch(n) else f"notes {_number(n)}")
    return ZipXmlDocument(
        "pptx", archive, parts, DRAWING, "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        ["Slide layouts, shapes, positions, tables, images and speaker notes are kept.",
         "Each paragraph is translated as a whole, each character format on the words it belongs "
         "to; text that no longer fits its box is not shrunk.",
         "Text in charts, SmartArt and slide masters is not translated."],
        sections)


def read_odt(data: bytes) -> ZipXmlDocument:
    archive = open_zip(data, "odt", "content.xml")
    mimetype = ""
    if "mimetype" in archive:
        if archive.by_name["mimetype"].file_size > 200:
            raise DocumentError("could not read the .odt file: its mimetype entry is not a media type")
        mimetype = archive.read("mimetype").decode("ascii", "replace").strip()
    if mimetype and mimetype != "application/vnd.oasis.opendocument.text":
        raise DocumentError(f"could not read the .odt file: it is a {mimetype} document, not a text document")
    names = ["content.xml"] + (["styles.xml"] if "styles.xml" in archive else [])
    parts, _ = _read_parts(archive, names, "odt", ODF)
    return ZipXmlDocument("odt", archive, parts, ODF, "odt", "application/vnd.oasis.opendocument.text",
                          _OFFICE_NOTES, [])
