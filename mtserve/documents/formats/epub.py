"""EPUB e-books, chapter by chapter.

The book is edited in place: the spine's XHTML chapters in reading order (then
any other XHTML page, such as the navigation document), the NCX table of
contents, and the title and description in the package metadata. Each chapter
goes through the same translation as HTML (each paragraph whole, its inline
tags in context), so markup, CSS, images
and fonts are kept byte for byte; ``dc:language`` and the pages' ``lang``
attributes are set to the target language.
"""

from __future__ import annotations

import posixpath
import urllib.parse
from dataclasses import dataclass

from lxml import etree

from mtserve.documents.formats.base import Decoded, Document, DocumentError, Output, decode_text
from mtserve.documents.formats.limits import budget, check_markup
from mtserve.documents.formats.plain import set_html_lang
from mtserve.documents.formats.safe_zip_xml import (
    Archive,
    open_zip,
    parse_part,
    refuse_markup_entities,
    rewrite_zip,
    serialize,
)
from mtserve.text.html import HtmlDocument, parse_html

CONTAINER = "META-INF/container.xml"
CONTAINER_NS = "urn:oasis:names:tc:opendocument:xmlns:container"
OPF = "http://www.idpf.org/2007/opf"
DC = "http://purl.org/dc/elements/1.1/"
NCX = "http://www.daisy.org/z3986/2005/ncx/"
XHTML_TYPES = {"application/xhtml+xml", "text/html"}


@dataclass
class _Chapter:
    path: str
    decoded: Decoded
    parsed: HtmlDocument


class EpubDocument(Document):
    def __init__(self, archive: Archive, chapters: list[_Chapter],
                 xml_parts: dict[str, tuple[etree._ElementTree, list]],
                 languages: list[etree._Element], sections: list[tuple[str, int]]):
        self.archive = archive
        self.chapters = chapters
        self.xml_parts = xml_parts  # path -> (tree, elements whose text is translated), package first
        self.languages = languages
        segments = [s for chapter in chapters for s in chapter.parsed.segments]
        segments += [(el.text or "").strip() for _, elements in xml_parts.values() for el in elements]
        super().__init__("epub", segments, sections=sections, markup=True, notes=[
            "Chapters, markup, styles, images, fonts and the table of contents are kept; "
            "text, the title and the description are translated.",
            "Each paragraph is translated whole with its inline tags, which stay on the words "
            "they belong to.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        replaced: dict[str, bytes] = {}
        at = 0
        for chapter in self.chapters:
            n = len(chapter.parsed.segments)
            html = set_html_lang(chapter.parsed.render(translations[at:at + n]), target)
            replaced[chapter.path] = chapter.decoded.encode(html)
            at += n
        for element in self.languages:
            element.text = target
        for path, (tree, elements) in self.xml_parts.items():
            for element in elements:
                source = element.text or ""
                element.text = source[: len(source) - len(source.lstrip())] + translations[at].strip() + \
                    source[len(source.rstrip()):]
                at += 1
            replaced[path] = serialize(tree)  # the package document is always here, for its language
        return Output(rewrite_zip(self.archive, replaced), "epub", "application/epub+zip")


def read_epub(data: bytes) -> EpubDocument:
    archive = open_zip(data, "epub", CONTAINER)
    container = parse_part(archive, CONTAINER, "epub")
    rootfile = container.find(f".//{{{CONTAINER_NS}}}rootfile")
    opf_path = rootfile.get("full-path") if rootfile is not None else None
    if not opf_path or opf_path not in archive:
        raise DocumentError("could not read the .epub file: META-INF/container.xml names no package document")
    opf = parse_part(archive, opf_path, "epub")
    base = posixpath.dirname(opf_path)
    manifest: dict[str, tuple[str, str]] = {}
    for item in opf.iter(f"{{{OPF}}}item"):
        href = item.get("href")
        if href:
            path = posixpath.normpath(posixpath.join(base, urllib.parse.unquote(href)))
            manifest[item.get("id", "")] = (path, item.get("media-type", ""))
    spine = [ref.get("idref", "") for ref in opf.iter(f"{{{OPF}}}itemref")]
    in_spine = set(spine)  # sets, not lists: a hostile package lists thousands of items
    ordered = [manifest[i] for i in spine if i in manifest]
    ordered += [entry for i, entry in manifest.items() if i not in in_spine]

    chapters: list[_Chapter] = []
    read: set[str] = set()
    sections: list[tuple[str, int]] = []
    count = 0
    limits = budget().limits
    for path, media_type in ordered:
        if media_type not in XHTML_TYPES or path not in archive or path in read or path == opf_path:
            continue
        read.add(path)
        decoded = decode_text(archive.read(path, limits.max_xml_bytes, "MTSERVE_FILES_MAX_XML_MB"), ".epub")
        check_markup(decoded.text, f"{path} in the .epub file")
        refuse_markup_entities(decoded.text, path, "epub")
        parsed = parse_html(decoded.text)
        chapters.append(_Chapter(path, decoded, parsed))
        count += len(parsed.segments)
        budget().check_segments(count)
        sections.append((f"chapter {len(chapters)} ({posixpath.basename(path)})", count))
    if not chapters:
        raise DocumentError("could not read the .epub file: its spine lists no XHTML chapters")

    xml_parts: dict[str, tuple[etree._ElementTree, list]] = {}
    metadata = [el for tag in ("title", "description") for el in opf.iter(f"{{{DC}}}{tag}")
                if (el.text or "").strip()]
    xml_parts[opf_path] = (opf, metadata)
    languages = list(opf.iter(f"{{{DC}}}language"))
    for path, media_type in manifest.values():
        if media_type == "application/x-dtbncx+xml" and path in archive and path not in xml_parts \
                and path not in read:
            ncx = parse_part(archive, path, "epub")
            labels = [el for el in ncx.iter(f"{{{NCX}}}text") if (el.text or "").strip()]
            xml_parts[path] = (ncx, labels)
    count += sum(len(elements) for _, elements in xml_parts.values())
    sections.append(("table of contents and metadata", count))
    return EpubDocument(archive, chapters, xml_parts, languages, sections)
