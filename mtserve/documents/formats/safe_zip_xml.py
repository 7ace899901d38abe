"""Zip archives of XML parts (.docx, .pptx, .odt, .xlsx, .epub), read within the limits and written back.

An upload is hostile until it is parsed within limits. ``Archive`` measures a zip from its central
directory before anything in it is inflated (entry count, names, methods, encryption, declared
sizes), then inflates every entry once, a chunk at a time, to check it and count what it really
expands to; an entry is read for use only within the cap the caller gives. ``parse_part`` and
``parse_xml`` parse XML within the node and depth limits with no DTD, no network and no entity
expanded, and refuse a part that declares or uses entities (``refuse_markup_entities`` does the
same for a part read as markup text). ``serialize`` and ``rewrite_zip`` write the edited parts
back into the same archive, every other entry byte for byte.

Shared by the Office formats (``office``, ``xlsx``) and ``epub``; the bounds are
``mtserve.documents.formats.limits``'.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib

from lxml import etree

from mtserve.documents.formats.base import DocumentError, LimitExceeded
from mtserve.documents.formats.limits import budget, megabytes

# No huge_tree: libxml2 keeps its own limits (256 levels, 10 MB text nodes); no DTD, no entities
# expanded, no network, no XInclude (never processed unless asked for).
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False,
                          dtd_validation=False, remove_blank_text=False)


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
    tree = etree.ElementTree(root)
    _refuse_entities(tree, name, kind)
    return tree


ENTITIES_REFUSED = ("could not read the .{kind} file: {where} declares or uses XML entities (a DOCTYPE with "
                    "<!ENTITY>), which mtserve does not expand; a .{kind} file needs none: save it again from "
                    "its application")


def _refuse_entities(tree: etree._ElementTree, name: str, kind: str) -> None:
    """A DocumentError for a part that declares entities, or refers to ones an external DTD would
    declare: the parser expands none, so the part could only come back with them unresolved (not
    well-formed once the DOCTYPE is gone). Office, OpenDocument and EPUB parts never have them."""
    dtd = tree.docinfo.internalDTD
    if dtd is None:
        return  # no DOCTYPE: an entity reference is already a parse error
    if any(True for _ in dtd.iterentities()) or any(True for _ in tree.getroot().iter(etree.Entity)):
        raise DocumentError(ENTITIES_REFUSED.format(where=name, kind=kind))


_INTERNAL_SUBSET = re.compile(r"<!DOCTYPE[^>\[]*\[")  # a DOCTYPE's own declarations, between [ and ]


def refuse_markup_entities(text: str, name: str, kind: str) -> None:
    """The same refusal for a part read as markup text (an EPUB chapter): a DOCTYPE whose internal
    subset declares entities."""
    subset = _INTERNAL_SUBSET.search(text)
    if subset is not None and "<!ENTITY" in text[subset.end():]:
        raise DocumentError(ENTITIES_REFUSED.format(where=name, kind=kind))


def _deeper_than(root: etree._Element, depth: int) -> bool:
    """Whether any element sits more than ``depth`` levels down (one XPath step a level, in C)."""
    return bool(etree.XPath("boolean(/*" + "/*" * depth + ")")(root))
