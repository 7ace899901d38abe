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
import zlib
from dataclasses import dataclass, field
from collections.abc import Callable, Iterator

from lxml import etree

from mtserve.documents.base import Document, DocumentError, LimitExceeded, Output
from mtserve.documents.limits import budget, megabytes

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
# No huge_tree: libxml2 keeps its own limits (256 levels, 10 MB text nodes); no DTD, no entities
# expanded, no network, no XInclude (never processed unless asked for).
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False,
                          dtd_validation=False, remove_blank_text=False)


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
    """The paragraph's stretches between breaks, walked with a stack (no recursion, any depth)."""
    units: list[_Unit] = [_Unit()]

    def cut() -> None:
        if units[-1].slots:
            units.append(_Unit())

    def enter(element: etree._Element) -> None:
        if element.text and (dialect.mixed or element.tag in dialect.text):
            units[-1].slots.append(_Slot(element, "text"))

    def tail(element: etree._Element) -> None:
        if dialect.mixed and element.tail:
            units[-1].slots.append(_Slot(element, "tail"))

    enter(paragraph)
    # (children still to walk, the element they belong to, whether it is isolated); the paragraph's
    # own frame has no element: its tail is not part of it.
    stack: list[tuple[Iterator[etree._Element], etree._Element | None, bool]] = [
        (iter(paragraph), None, False)]
    while stack:
        children, owner, isolated = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if owner is not None:
                if isolated:
                    cut()
                tail(owner)
            continue
        tag = child.tag
        if not isinstance(tag, str):  # comments, processing instructions
            tail(child)
        elif tag in dialect.breaks:
            cut()
            tail(child)
        elif tag in dialect.isolate:
            cut()
            enter(child)
            stack.append((iter(child), child, True))
        elif tag in dialect.text:
            if child.text:
                units[-1].slots.append(_Slot(child, "text"))
            tail(child)
        elif tag in dialect.descend and tag not in dialect.paragraphs:
            enter(child)
            stack.append((iter(child), child, False))
        else:  # anything else (properties, drawings, fields, notes, nested paragraphs) is opaque
            tail(child)
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
    def __init__(self, kind: str, archive: Archive, parts: list[_Part], dialect: Dialect, extension: str,
                 media_type: str, notes: list[str], sections: list[tuple[str, int]]):
        self.archive = archive
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
        return Output(rewrite_zip(self.archive, replaced), self.extension, self.media_type)


def serialize(tree: etree._ElementTree) -> bytes:
    info = tree.docinfo
    return etree.tostring(tree, xml_declaration=True, encoding=info.encoding or "UTF-8",
                          standalone=info.standalone)


def rewrite_zip(archive: Archive, replaced: dict[str, bytes]) -> bytes:
    """The same archive, entries in the same order and compression, some contents replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in archive.infos:
            content = replaced.get(info.filename)
            target.writestr(info, archive.read(info.filename) if content is None else content)
    return out.getvalue()


_ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_CENTRAL_ENTRY = b"PK\x01\x02"  # the signature that starts every central-directory entry
_CHUNK = 1 << 20


class Archive:
    """A document's zip archive, measured before anything in it is inflated.

    The entry count, names, compression methods, encryption flags and declared sizes are checked
    first, from the central directory alone; then every entry is inflated once, a chunk at a time
    and never past its declared size, to check its CRC and count what the archive really expands
    to. Only then is an entry read for use, and never more than the cap the caller gives.
    """

    def __init__(self, data: bytes, kind: str):
        self.kind = kind
        limits = budget().limits
        # Each central-directory entry starts with this signature; zipfile builds an object for
        # every one, so count them before it does.
        if data.count(_CENTRAL_ENTRY) > limits.max_archive_entries:
            raise self._too_many(data.count(_CENTRAL_ENTRY), limits.max_archive_entries)
        try:
            self.zip = zipfile.ZipFile(io.BytesIO(data))
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
                NotImplementedError) as exc:
            raise DocumentError(
                f"could not read the .{kind} file: it is not a valid {kind} (zip) archive ({exc})") from None
        self.infos = self.zip.infolist()
        if len(self.infos) > limits.max_archive_entries:
            raise self._too_many(len(self.infos), limits.max_archive_entries)
        self.by_name: dict[str, zipfile.ZipInfo] = {}
        declared = 0
        for info in self.infos:
            name = info.filename
            if name in self.by_name:
                raise DocumentError(f"could not read the .{kind} file: the entry {name!r} appears twice "
                                    "in the archive; a valid file has each entry once")
            self.by_name[name] = info
            if info.flag_bits & 0x1:
                raise DocumentError(f"could not read the .{kind} file: the entry {name!r} is encrypted; "
                                    "save the file without a password and upload it again")
            if info.compress_type not in _ZIP_METHODS:
                raise DocumentError(f"could not read the .{kind} file: the entry {name!r} uses compression "
                                    f"method {info.compress_type}, which a .{kind} file never does "
                                    "(only stored and deflate are read)")
            declared += info.file_size
        cap = limits.max_expanded_bytes
        if declared > cap:
            raise LimitExceeded(f"the .{kind} file expands to {megabytes(declared)}; the limit is "
                                f"{megabytes(cap)} (MTSERVE_FILES_MAX_EXPANDED_MB)")
        for info in self.infos:  # inflate each entry once, in chunks, to check it and count it
            for chunk in self._chunks(info, info.file_size):
                budget().expand(len(chunk), f"the archive's entries, at {info.filename!r}")

    def _too_many(self, count: int, cap: int) -> LimitExceeded:
        return LimitExceeded(f"the .{self.kind} file holds {count:,} entries; the limit is {cap:,} "
                             "(MTSERVE_FILES_MAX_ARCHIVE_ENTRIES)")

    def _chunks(self, info: zipfile.ZipInfo, limit: int):
        """The entry inflated a chunk at a time, at most ``limit`` + 1 bytes; damage is a DocumentError."""
        left = limit + 1
        try:
            with self.zip.open(info) as entry:
                while left > 0 and (chunk := entry.read(min(_CHUNK, left))):
                    left -= len(chunk)
                    yield chunk
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError,
                NotImplementedError) as exc:
            if "insufficient memory" in str(exc):
                raise MemoryError(str(exc)) from None
            raise DocumentError(f"could not read the .{self.kind} file: the entry {info.filename!r} is "
                                f"damaged ({exc})") from None

    def names(self) -> list[str]:
        return [info.filename for info in self.infos]

    def __contains__(self, name: str) -> bool:
        return name in self.by_name

    def read(self, name: str, limit: int | None = None, setting: str = "") -> bytes:
        """An entry's bytes; over ``limit`` (named by ``setting``), LimitExceeded before it is all read."""
        info = self.by_name[name]
        cap = info.file_size if limit is None else limit
        data = b"".join(self._chunks(info, cap))
        if len(data) > cap:
            raise LimitExceeded(f"{name} in the .{self.kind} file is over {megabytes(cap)} once inflated; "
                                f"the limit is {megabytes(cap)} ({setting})")
        return data


def open_zip(data: bytes, kind: str, required: str) -> Archive:
    archive = Archive(data, kind)
    if required not in archive:
        raise DocumentError(f"could not read the .{kind} file: {required} is missing; "
                            f"is it really a .{kind} file?")
    return archive


def parse_part(archive: Archive, name: str, kind: str) -> etree._ElementTree:
    """One XML part, within the part size, node count and depth limits."""
    limits = budget().limits
    data = archive.read(name, limits.max_xml_bytes, "MTSERVE_FILES_MAX_XML_MB")
    return parse_xml(data, name, kind)


def parse_xml(data: bytes, name: str, kind: str) -> etree._ElementTree:
    """XML parsed within the node and depth limits: no DTD, no entities resolved, no network."""
    limits = budget().limits
    nodes = data.count(b"<") + data.count(b"=") + data.count(b"&")  # an upper bound, counted in C
    if nodes > limits.max_xml_nodes:
        raise LimitExceeded(f"{name} in the .{kind} file has about {nodes:,} XML nodes; the limit is "
                            f"{limits.max_xml_nodes:,} (MTSERVE_FILES_MAX_XML_NODES)")
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        if "memory allocation failed" in str(exc).lower() or str(exc).startswith("unknown error"):
            raise MemoryError(str(exc)) from None  # libxml2 out of memory (the worker's limit)
        if "excessive depth" in str(exc).lower():
            raise LimitExceeded(f"{name} in the .{kind} file is nested more than 256 levels deep, the most "
                                "the XML parser reads (MTSERVE_FILES_MAX_DEPTH is "
                                f"{limits.max_depth:,})") from None
        raise DocumentError(
            f"could not read the .{kind} file: {name} is not well-formed XML ({exc})") from None
    if _deeper_than(root, limits.max_depth):
        budget().check_depth(limits.max_depth + 1, f"{name} in the .{kind} file")
    return etree.ElementTree(root)


def _deeper_than(root: etree._Element, depth: int) -> bool:
    """Whether any element sits more than ``depth`` levels down (one XPath step a level, in C)."""
    return bool(etree.XPath("boolean(/*" + "/*" * depth + ")")(root))


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
    "Each paragraph is translated as a whole; inside a paragraph that mixes character styles, "
    "the translation takes the style of the run that held most of the text.",
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
         "Each paragraph is translated as a whole and takes the style of its main run; text that "
         "no longer fits its box is not shrunk.",
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
