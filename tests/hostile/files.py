"""Hostile documents: bombs, deep nesting, damaged archives and every format's edge cases, as data.

``hostile_files()`` returns every case as a ``HostileFile``: a short name, the upload's file name
(its extension picks the reader), its bytes, and what the server must do with it:

- ``"limit"``: refuse it with LimitExceeded (HTTP 413) naming a setting;
- ``"error"``: refuse it with a DocumentError (HTTP 400 or 413) that says what is wrong;
- ``"ok"``: read it (the edge case is legal), and render it back;
- ``"any"``: either, as long as it ends quickly, within the memory bounds, and never as a 500.

``forbidden`` is text that must never appear in the segments (a file the upload tries to pull in).
Every file is built here, in memory, from a few kilobytes of code: a bomb is small on the wire and
only large once inflated, which is the point. The whole set builds in a few seconds and is cached.

Used by tests/documents/test_hostile_files.py (every case through every reader, in process and
over HTTP) and by the live hostile-input test, which sends each one to a running server.
"""

from __future__ import annotations

import functools
import io
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass

MB = 1_000_000
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
PASSWD = "root:x:0:0"  # what /etc/passwd starts with: must never reach a segment


@dataclass(frozen=True)
class HostileFile:
    name: str
    filename: str
    data: bytes
    expect: str  # "limit", "error", "ok" or "any"
    forbidden: str | None = None

    def __repr__(self) -> str:  # the bytes can be megabytes: keep test ids and failures readable
        return f"HostileFile({self.name!r}, {self.filename!r}, {len(self.data):,} bytes, {self.expect!r})"


# --- building blocks ------------------------------------------------------------------------------
def deflate_repeated(block: bytes, times: int) -> bytes:
    """Raw deflate of ``block`` repeated ``times`` times, without holding the whole in memory."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    out = [packer.compress(block) for _ in range(times)]
    out.append(packer.flush())
    return b"".join(out)


def zlib_repeated(block: bytes, times: int, head: bytes = b"", tail: bytes = b"") -> bytes:
    """A zlib stream (FlateDecode's format) of head + block * times + tail."""
    packer = zlib.compressobj(9)
    out = [packer.compress(head)] + [packer.compress(block) for _ in range(times)]
    out += [packer.compress(tail), packer.flush()]
    return b"".join(out)


@dataclass
class Entry:
    """One zip entry written by hand, so that its header can lie."""

    name: str
    compressed: bytes
    size: int  # the uncompressed size it declares
    crc: int
    method: int = zipfile.ZIP_DEFLATED
    flags: int = 0


def entry(name: str, content: bytes, method: int = zipfile.ZIP_DEFLATED) -> Entry:
    if method == zipfile.ZIP_STORED:
        compressed = content
    else:
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        compressed = packer.compress(content) + packer.flush()
    return Entry(name, compressed, len(content), zlib.crc32(content), method)


def bomb_entry(name: str, head: bytes, block: bytes, times: int, tail: bytes) -> Entry:
    """An entry that inflates to head + block * times + tail, declared honestly."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    crc = zlib.crc32(head)
    parts = [packer.compress(head)]
    for _ in range(times):
        parts.append(packer.compress(block))
        crc = zlib.crc32(block, crc)
    parts += [packer.compress(tail), packer.flush()]
    crc = zlib.crc32(tail, crc)
    return Entry(name, b"".join(parts), len(head) + len(block) * times + len(tail), crc)


def build_zip(entries: list[Entry], central: list[tuple[int, str]] | None = None) -> bytes:
    """A zip archive of ``entries``; ``central`` lists (entry index, name) for a central directory
    that differs from the local headers (repeated or renamed entries)."""
    out = io.BytesIO()
    offsets = []
    for item in entries:
        offsets.append(out.tell())
        name = item.name.encode()
        out.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, item.flags, item.method, 0, 0x21,
                              item.crc, len(item.compressed), item.size, len(name), 0))
        out.write(name + item.compressed)
    start = out.tell()
    rows = central if central is not None else [(i, e.name) for i, e in enumerate(entries)]
    for index, shown in rows:
        item = entries[index]
        name = shown.encode()
        out.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, item.flags, item.method, 0, 0x21,
                              item.crc, len(item.compressed), item.size, len(name), 0, 0, 0, 0, 0,
                              offsets[index]))
        out.write(name)
    size = out.tell() - start
    count = min(len(rows), 0xFFFF)
    out.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, size, start, 0))
    return out.getvalue()


def word_xml(body: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f'<w:document xmlns:w="{W_NS}"><w:body>{body}</w:body></w:document>').encode()


def paragraph(text: str) -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"


def docx(document: bytes, extra: list[Entry] | None = None) -> bytes:
    return build_zip([entry("word/document.xml", document)] + (extra or []))


def pptx(slide: bytes) -> bytes:
    return build_zip([entry("ppt/presentation.xml", b"<p:presentation xmlns:p='p'/>"),
                      entry("ppt/slides/slide1.xml", slide)])


def odt(content: bytes) -> bytes:
    return build_zip([entry("mimetype", b"application/vnd.oasis.opendocument.text", zipfile.ZIP_STORED),
                      entry("content.xml", content)])


ODT_NS = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" ' \
         'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"'


def odt_content(body: str) -> bytes:
    return f'<office:document-content {ODT_NS}><office:body><office:text>{body}' \
           f'</office:text></office:body></office:document-content>'.encode()


CONTAINER = (b'<?xml version="1.0"?><container version="1.0" '
             b'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
             b'<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             b'</rootfiles></container>')
CHAPTER = (b'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml" lang="zh">'
           b'<head><title>c</title></head><body><p>\xe4\xbd\xa0\xe5\xa5\xbd</p></body></html>')


def opf(manifest: str, spine: str, metadata: str = "<dc:title>书</dc:title><dc:language>zh</dc:language>") \
        -> bytes:
    return (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
            f'xmlns:dc="http://purl.org/dc/elements/1.1/"><metadata>{metadata}</metadata>'
            f'<manifest>{manifest}</manifest><spine>{spine}</spine></package>').encode()


def epub(package: bytes, files: dict[str, bytes] | None = None) -> bytes:
    entries = [entry("mimetype", b"application/epub+zip", zipfile.ZIP_STORED),
               entry("META-INF/container.xml", CONTAINER), entry("OEBPS/content.opf", package)]
    entries += [entry(name, data) for name, data in (files or {}).items()]
    return build_zip(entries)


def pdf(objects: list[bytes], *, root: int = 1, header: bytes = b"%PDF-1.4\n") -> bytes:
    """A PDF of the given objects (numbered from 1), with a correct cross-reference table."""
    out = io.BytesIO()
    out.write(header)
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, root, xref))
    return out.getvalue()


def stream(data: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
TEXT_OPS = b"BT /F1 12 Tf 72 720 Td (Hello world) Tj ET\n"


def pdf_pages(contents: list[bytes], filters: bytes = b"") -> bytes:
    """Pages, one per content stream (already encoded for ``filters``), with one Helvetica font."""
    count = len(contents)
    # 1 catalog, 2 pages, 3 font, then (page, content) pairs
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(count))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, count), FONT]
    for i, content in enumerate(contents):
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i))
        objects.append(stream(content, b"/Filter %s" % filters if filters else b""))
    return pdf(objects)


def lzw_run_bomb(cycles: int, byte: int = 0x20) -> bytes:
    """LZWDecode codes for a run of one byte: each code names a string one byte longer than the last,
    so one table's worth (3,838 codes, ~5 KB) decodes to ~7.4 MB; ``cycles`` tables, then EOD."""
    bits, count, out = 0, 0, bytearray()

    def emit(code: int, width: int) -> None:
        nonlocal bits, count
        bits = (bits << width) | code
        count += width
        while count >= 8:
            count -= 8
            out.append((bits >> count) & 0xFF)
        bits &= (1 << count) - 1

    width = 9
    for _ in range(cycles):
        emit(256, width)  # clear the table
        width, size = 9, 258
        emit(byte, width)
        for code in range(258, 4096):
            emit(code, width)  # the string one longer than the last: the decoder builds it from its own
            size += 1
            width = {511: 10, 1023: 11, 2047: 12}.get(size, width)
    emit(257, width)
    if count:
        out.append((bits << (8 - count)) & 0xFF)
    return bytes(out)


# --- the cases -------------------------------------------------------------------------------------
def _zip_cases() -> list[HostileFile]:
    cases = []
    body = word_xml(paragraph("你好"))
    fifty = bomb_entry("word/document.xml", body[:-len("</w:body></w:document>")], b" " * 65536, 763,
                       b"</w:body></w:document>")  # ~50 MB of whitespace in a ~50 KB entry
    # The case: a central directory that repeats one 50 MB entry 40 times.
    cases.append(HostileFile("zip-repeated-central-entries", "repeat.docx",
                             build_zip([fifty], [(0, "word/document.xml")] * 40), "error"))
    cases.append(HostileFile("zip-renamed-central-entries", "renamed.docx",
                             build_zip([fifty], [(0, "word/document.xml")] + [(0, f"word/x{i:02}.xml")
                                                                              for i in range(39)]), "limit"))
    big = bomb_entry("word/document.xml", body[:-len("</w:body></w:document>")], b" " * 65536, 4000,
                     b"</w:body></w:document>")  # 262 MB
    cases.append(HostileFile("zip-deflate-bomb", "bomb.docx", build_zip([big]), "limit"))
    cases.append(HostileFile("zip-entry-over-xml-part-size", "part.docx", build_zip([fifty]), "limit"))
    liar = Entry(fifty.name, fifty.compressed, 1000, zlib.crc32(b"x"))  # declares 1 KB, holds 50 MB
    cases.append(HostileFile("zip-size-that-lies", "liar.docx", build_zip([liar]), "error"))
    nodes = word_xml("<w:p/>" * 1_200_000)
    cases.append(HostileFile("xml-node-bomb", "nodes.docx", docx(nodes), "limit"))
    attributes = word_xml("<w:p " + " ".join(f'a{i}="1"' for i in range(300)) + "/>" * 1)
    cases.append(HostileFile("xml-many-attributes", "attrs.docx", docx(attributes), "any"))
    laughs = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
              + b"".join(b'<!ENTITY lol%d "%s">' % (i, b"&lol%d;" % (i - 1) * 10 if i > 1 else b"&lol;" * 10)
                         for i in range(1, 10))
              + f'<!ENTITY x "y">]><w:document xmlns:w="{W_NS}"><w:body>'.encode()
              + b"<w:p><w:r><w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>")
    cases.append(HostileFile("xml-billion-laughs", "laughs.docx", docx(laughs), "error"))
    xxe = (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
           + f'<w:document xmlns:w="{W_NS}"><w:body><w:p><w:r><w:t>a &xxe; b</w:t></w:r></w:p>'.encode()
           + b"</w:body></w:document>")
    cases.append(HostileFile("xml-external-entity", "xxe.docx", docx(xxe), "error", forbidden=PASSWD))
    param = (b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]>'
             + word_xml(paragraph("你好")).split(b"?>", 1)[1])
    cases.append(HostileFile("xml-parameter-entity", "param.docx", docx(param), "error", forbidden=PASSWD))
    network = (b'<?xml version="1.0"?><!DOCTYPE d SYSTEM "http://127.0.0.1:9/evil.dtd">'
               + word_xml(paragraph("你好")).split(b"?>", 1)[1])
    cases.append(HostileFile("xml-external-dtd", "dtd.docx", docx(network), "any"))
    xinclude = word_xml('<w:p xmlns:xi="http://www.w3.org/2001/XInclude"><w:r><w:t>a</w:t>'
                        '<xi:include href="file:///etc/passwd" parse="text"/></w:r></w:p>')
    cases.append(HostileFile("xml-xinclude", "xinclude.docx", docx(xinclude), "any", forbidden=PASSWD))
    runs = word_xml("<w:p>" + "<w:r>" * 1500 + "<w:t>深</w:t>" + "</w:r>" * 1500 + "</w:p>")
    cases.append(HostileFile("xml-1500-nested-runs", "deep.docx", docx(runs), "limit"))
    mid = word_xml("<w:p>" + "<w:r>" * 200 + "<w:t>深</w:t>" + "</w:r>" * 200 + "</w:p>")
    cases.append(HostileFile("xml-200-nested-runs", "deep200.docx", docx(mid), "limit"))
    ok_deep = word_xml("<w:p>" + "<w:r>" * 40 + "<w:t>深</w:t>" + "</w:r>" * 40 + "</w:p>")
    cases.append(HostileFile("xml-40-nested-runs", "deep40.docx", docx(ok_deep), "ok"))
    cases.append(HostileFile("xml-huge-text-node", "text.docx",
                             docx(word_xml(paragraph("长" * 4_000_000))), "any"))
    cases.append(HostileFile("xml-not-xml", "notxml.docx", docx(b"\x00\x01binary"), "error"))
    cases.append(HostileFile("xml-utf16", "utf16.docx",
                             docx(word_xml(paragraph("你好")).decode().replace("UTF-8", "UTF-16")
                                  .encode("utf-16")), "ok"))
    cases.append(HostileFile("xml-bom", "bom.docx", docx(b"\xef\xbb\xbf" + word_xml(paragraph("你好"))),
                             "ok"))
    cases.append(HostileFile("xml-bad-encoding", "enc.docx",
                             docx(word_xml(paragraph("你好")).replace(b"UTF-8", b"base64")), "error"))

    good = entry("word/document.xml", word_xml(paragraph("你好" * 2000)))
    corrupt = bytearray(good.compressed)
    for i in range(len(corrupt) // 3, len(corrupt) // 3 + 16):
        corrupt[i] ^= 0x5A
    cases.append(HostileFile("zip-corrupt-deflate", "corrupt.docx",
                             build_zip([Entry(good.name, bytes(corrupt), good.size, good.crc)]), "error"))
    invalid = b"\x07" + bytes(range(256)) * 4  # a deflate block of the reserved type 3: zlib.error
    cases.append(HostileFile("zip-invalid-deflate", "invalid.docx",
                             build_zip([Entry(good.name, invalid, good.size, good.crc)]), "error"))
    cases.append(HostileFile("zip-bad-crc", "crc.docx",
                             build_zip([Entry(good.name, good.compressed, good.size, good.crc ^ 1)]),
                             "error"))
    cases.append(HostileFile("zip-truncated", "truncated.docx", docx(word_xml(paragraph("你好")))[:60],
                             "error"))
    whole = docx(word_xml(paragraph("你好" * 500)),
                 [entry("word/media/image1.png", b"\x89PNG" + b"x" * 5000)])
    cases.append(HostileFile("zip-cut-in-half", "half.docx", whole[: len(whole) // 2], "error"))
    cases.append(HostileFile("zip-encrypted-entry", "encrypted.docx",
                             build_zip([Entry(good.name, good.compressed, good.size, good.crc, flags=1)]),
                             "error"))
    for method in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, 99):
        cases.append(HostileFile(f"zip-compression-method-{method}", f"method{method}.docx",
                                 build_zip([Entry(good.name, good.compressed, good.size, good.crc, method)]),
                                 "error"))
    many = [entry("word/document.xml", word_xml(paragraph("你好")))]
    many += [entry(f"customXml/item{i}.xml", b"") for i in range(12_000)]
    cases.append(HostileFile("zip-too-many-entries", "entries.docx", build_zip(many), "limit"))
    cases.append(HostileFile("zip-duplicate-names", "dupes.docx",
                             build_zip([good, entry("word/document.xml", word_xml(paragraph("再见")))]),
                             "error"))
    cases.append(HostileFile("zip-slip-names", "slip.docx",
                             docx(word_xml(paragraph("你好")), [entry("../../../../tmp/evil", b"x"),
                                                              entry("/etc/cron.d/evil", b"x")]), "ok"))
    cases.append(HostileFile("zip-empty-archive", "empty.docx", build_zip([]), "error"))
    cases.append(HostileFile("zip-wrong-magic-pdf", "pdf.docx", b"%PDF-1.4\n%%EOF\n", "error"))
    cases.append(HostileFile("zip-wrong-magic-text", "text.pptx", "你好".encode(), "error"))
    cases.append(HostileFile("zip-only-signature", "sig.odt", b"PK\x05\x06" + b"\x00" * 18, "error"))
    cases.append(HostileFile("pptx-deep-shapes", "deep.pptx",
                             pptx(b"<p:sld xmlns:p='p' xmlns:a='http://schemas.openxmlformats.org/"
                                  b"drawingml/2006/main'>" + b"<p:grpSp>" * 300 + b"<a:p><a:r><a:t>x</a:t>"
                                  b"</a:r></a:p>" + b"</p:grpSp>" * 300 + b"</p:sld>"), "limit"))
    cases.append(HostileFile("odt-nested-spans", "spans.odt",
                             odt(odt_content("<text:p>" + "<text:span>" * 2000 + "深" + "</text:span>" * 2000
                                             + "</text:p>")), "limit"))
    cases.append(HostileFile("odt-not-text", "sheet.odt",
                             build_zip([entry("mimetype", b"application/vnd.oasis.opendocument.spreadsheet",
                                              zipfile.ZIP_STORED), entry("content.xml", odt_content(""))]),
                             "error"))
    cases.append(HostileFile("odt-huge-mimetype", "mime.odt",
                             build_zip([bomb_entry("mimetype", b"application/", b"x" * 65536, 100, b""),
                                        entry("content.xml", odt_content("<text:p>你好</text:p>"))]),
                             "error"))
    return cases


def _epub_cases() -> list[HostileFile]:
    cases = []
    item = '<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>'
    cases.append(HostileFile("epub-ok", "book.epub", epub(opf(item, '<itemref idref="c1"/>'),
                                                          {"OEBPS/c1.xhtml": CHAPTER}), "ok"))
    # Spine and manifest lookups were linear in lists: 20,000 of each was quadratic.
    manifest = item + "".join(f'<item id="i{i}" href="c1.xhtml" media-type="application/xhtml+xml"/>'
                              for i in range(20_000))
    spine = "".join(f'<itemref idref="i{i}"/>' for i in range(20_000))
    cases.append(HostileFile("epub-long-spine", "spine.epub",
                             epub(opf(manifest, spine), {"OEBPS/c1.xhtml": CHAPTER}), "ok"))
    ncx = "".join(f'<item id="n{i}" href="toc.ncx" media-type="application/x-dtbncx+xml"/>'
                  for i in range(5000))
    cases.append(HostileFile("epub-ncx-listed-5000-times", "ncx.epub",
                             epub(opf(item + ncx, '<itemref idref="c1"/>'),
                                  {"OEBPS/c1.xhtml": CHAPTER,
                                   "OEBPS/toc.ncx": b'<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/">'
                                                    b'<navMap><navPoint><navLabel><text>\xe7\xab\xa0</text>'
                                                    b'</navLabel></navPoint></navMap></ncx>'}), "ok"))
    selfref = '<item id="c1" href="content.opf" media-type="application/xhtml+xml"/>'
    cases.append(HostileFile("epub-chapter-is-the-package", "self.epub",
                             epub(opf(selfref, '<itemref idref="c1"/>')), "error"))
    cases.append(HostileFile("epub-no-container", "nocontainer.epub",
                             build_zip([entry("mimetype", b"application/epub+zip", zipfile.ZIP_STORED)]),
                             "error"))
    cases.append(HostileFile("epub-container-points-nowhere", "nowhere.epub",
                             build_zip([entry("META-INF/container.xml", CONTAINER)]), "error"))
    escape = '<item id="c1" href="../../../../etc/passwd" media-type="application/xhtml+xml"/>'
    cases.append(HostileFile("epub-href-escapes", "escape.epub", epub(opf(escape, '<itemref idref="c1"/>')),
                             "error", forbidden=PASSWD))
    comments = b"<html><body>" + b"<!--" * 50_000 + b"</body></html>"
    cases.append(HostileFile("epub-chapter-unclosed-comments", "comments.epub",
                             epub(opf(item, '<itemref idref="c1"/>'), {"OEBPS/c1.xhtml": comments}), "any"))
    tags = b"<html><body>" + b"<b>" * 1_200_000 + b"</body></html>"
    cases.append(HostileFile("epub-chapter-tag-bomb", "tags.epub",
                             epub(opf(item, '<itemref idref="c1"/>'), {"OEBPS/c1.xhtml": tags}), "limit"))
    return cases


def _pdf_cases() -> list[HostileFile]:
    cases = []
    cases.append(HostileFile("pdf-ok", "ok.pdf", pdf_pages([TEXT_OPS]), "ok"))
    # The case: a FlateDecode content stream that inflates to hundreds of MB.
    bomb = zlib_repeated(b" " * 65536, 3000, head=TEXT_OPS)  # ~200 MB from ~200 KB
    cases.append(HostileFile("pdf-flate-bomb", "bomb.pdf", pdf_pages([bomb], b"/FlateDecode"), "limit"))
    thirty = zlib_repeated(b" " * 65536, 450, head=TEXT_OPS)  # ~30 MB each, under the stream cap
    cases.append(HostileFile("pdf-many-streams-over-expanded", "streams.pdf",
                             pdf_pages([thirty] * 8, b"/FlateDecode"), "limit"))
    cases.append(HostileFile("pdf-flate-bomb-truncated", "truncated-bomb.pdf",
                             pdf_pages([bomb[: len(bomb) // 2]], b"/FlateDecode"), "limit"))
    corrupt = bytearray(zlib.compress(TEXT_OPS * 20000))
    for i in range(len(corrupt) // 2, len(corrupt) // 2 + 8):
        corrupt[i] ^= 0xFF
    cases.append(HostileFile("pdf-corrupt-flate", "corrupt.pdf", pdf_pages([bytes(corrupt)], b"/FlateDecode"),
                             "any"))
    cases.append(HostileFile("pdf-flate-then-ascii85", "chain.pdf",
                             pdf_pages([_ascii85(bomb)], b"[/ASCII85Decode /FlateDecode]"), "limit"))
    runlength = (b"\x81 " * 400_000) + b"\x80"  # each 2 bytes: 128 spaces
    cases.append(HostileFile("pdf-runlength-bomb", "rl.pdf",
                             pdf_pages([runlength], b"/RunLengthDecode"), "limit"))
    cases.append(HostileFile("pdf-lzw-bomb", "lzw.pdf",
                             pdf_pages([lzw_run_bomb(9)], b"/LZWDecode"), "limit"))
    cases.append(HostileFile("pdf-ccitt-content", "ccitt.pdf",
                             pdf_pages([b"\x00" * 20_000], b"/CCITTFaxDecode /DecodeParms << /K -1 "
                                                           b"/Columns 1000000 >>"), "any"))
    cases.append(HostileFile("pdf-too-many-pages", "pages.pdf", pdf_pages([TEXT_OPS] * 1200), "limit"))
    # A page tree nested 5,000 deep (recursive readers overflow their stack).
    depth = 5000
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    for level in range(depth):
        objects.append(b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % (level + 3))
    objects.append(b"<< /Type /Page /MediaBox [0 0 612 792] /Contents %d 0 R "
                   b"/Resources << /Font << /F1 %d 0 R >> >> >>" % (depth + 3, depth + 4))
    objects += [stream(TEXT_OPS), FONT]
    cases.append(HostileFile("pdf-deep-page-tree", "tree.pdf", pdf(objects), "any"))
    nested = b"[" * 100_000 + b"]" * 100_000
    cases.append(HostileFile("pdf-deep-array", "array.pdf",
                             pdf([b"<< /Type /Catalog /Pages 2 0 R /X " + nested + b" >>",
                                  b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                                  b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
                                  b"/Resources << /Font << /F1 5 0 R >> >> >>", stream(TEXT_OPS), FONT]),
                             "any"))
    cases.append(HostileFile("pdf-deep-content-array", "ops.pdf",
                             pdf_pages([b"BT /F1 12 Tf 72 720 Td " + b"[" * 50_000 + b"(a)" + b"]" * 50_000
                                        + b" TJ ET"]), "any"))
    scattered = b"".join(b"BT /F1 6 Tf %d %d Td (w%d) Tj ET\n" % ((i * 37) % 560 + 20, (i * 53) % 740 + 20, i)
                         for i in range(3000))
    cases.append(HostileFile("pdf-scattered-words", "scatter.pdf", pdf_pages([scattered]), "any"))
    inline = b"BI /W 1000 /H 1000 /BPC 8 /CS /G ID " + b"\x00" * 3_000_000 + b" EI " + TEXT_OPS
    cases.append(HostileFile("pdf-huge-inline-image", "inline.pdf", pdf_pages([inline]), "any"))
    cases.append(HostileFile("pdf-truncated", "cut.pdf", pdf_pages([TEXT_OPS])[:200], "error"))
    cases.append(HostileFile("pdf-header-only", "header.pdf", b"%PDF-1.7\n", "error"))
    cases.append(HostileFile("pdf-wrong-magic", "zip.pdf", docx(word_xml(paragraph("你好"))), "error"))
    cases.append(HostileFile("pdf-no-xref", "noxref.pdf",
                             b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF", "error"))
    cases.append(HostileFile("pdf-xref-loop", "loop.pdf",
                             b"%PDF-1.4\nxref\n0 1\n0000000000 65535 f \ntrailer << /Size 1 /Prev 9 >>\n"
                             b"startxref\n9\n%%EOF\n", "error"))
    return cases


def _ascii85(data: bytes) -> bytes:
    import base64

    return base64.a85encode(data) + b"~>"


def _text_cases() -> list[HostileFile]:
    cases = []

    def add(name: str, filename: str, data: bytes, expect: str, forbidden: str | None = None) -> None:
        cases.append(HostileFile(name, filename, data, expect, forbidden))

    # --- Markdown: quadratic scans, line endings
    add("md-unclosed-comments", "comments.md", b"a " + b"<!--" * 50_000, "ok")  # 200 KB: took 11 s
    add("md-unclosed-processing", "pi.md", b"a " + b"<?" * 100_000, "ok")
    add("md-unclosed-cdata", "cdata.md", b"a " + b"<![CDATA[" * 20_000, "ok")
    add("md-unclosed-declarations", "decl.md", b"a " + b"<!A" * 60_000, "ok")
    add("md-unclosed-brackets", "brackets.md", b"a " + b"[" * 100_000, "ok")
    add("md-unclosed-link-targets", "targets.md", b"a " + b"[a](" * 50_000, "ok")
    # "[" re-read its label; brackets alone are no text to translate (a 400), read in linear time
    add("md-nested-brackets", "nested.md", b"[" * 100_000 + b"]" * 100_000, "any")
    add("md-nested-links", "links.md", b"[" * 5000 + b"a" + b"](x)" * 5000, "limit")  # a label in a label...
    add("md-unclosed-backtick-runs", "ticks.md",
        b"a " + b" ".join(b"`" * width for width in range(1, 600)), "ok")
    add("md-many-escapes", "escapes.md", b"a " + b"\\*" * 100_000, "ok")
    # once 60,000 segments; a paragraph is now one marked segment, read in linear time
    add("md-many-emphasis", "stars.md", b"a " + b"*a " * 60_000, "any")
    add("md-nested-quotes", "quotes.md", b">" * 100_000 + b" a", "any")
    add("md-nested-lists", "lists.md", b"".join(b"  " * i + b"- a\n" for i in range(1000)), "any")
    add("md-many-paragraphs", "paragraphs.md", b"a\n\n" * 1_000_000, "limit")
    add("md-many-rules", "rules.md", b"---\n\n" * 400_000, "any")
    add("md-cr-only", "cr.md", "# 标题\r\r第一段。\r\r- 项目\r".encode(), "ok")  # was an IndexError
    add("md-mixed-newlines", "mixed.md", "# 标题\r\n\r第一段。\n\r\n第二段。\r".encode(), "ok")
    add("md-nul", "nul.md", b"a\x00b", "error")
    add("md-huge-line", "line.md", "长".encode() * 2_000_000, "any")
    add("md-front-matter-unclosed", "front.md", b"---\n" + b"a: b\n" * 100_000, "any")
    add("md-table-pipes", "table.md", b"| a |\n|---|\n" + b"|" * 300_000 + b"\n", "any")
    # --- HTML: codecs that are not text, markup bombs
    add("html-base64-charset", "b64.html", b'<meta charset="base64"><p>hi</p>', "ok")  # was a 500
    add("html-rot13-charset", "rot.html", b'<meta charset="rot13"><p>hi \xff</p>', "ok")
    add("html-undefined-charset", "undef.html", b'<meta charset="undefined"><p>\xff</p>', "ok")
    add("html-idna-charset", "idna.html", b'<meta charset="idna"><p>\xff' + b"a" * 100 + b"</p>", "ok")
    add("html-utf16-charset", "u16.html", b'<meta charset="utf-16"><p>\xff</p>', "ok")
    add("html-deep-nesting", "deep.html", b"<div>" * 100_000 + b"a", "any")
    add("html-unclosed-comments", "comments.html", b"<p>a</p>" + b"<!--" * 50_000, "any")
    add("html-unclosed-declarations", "decl.html", b"<p>a</p>" + b"<!" * 100_000, "any")
    add("html-bad-declarations", "bad.html", b"<p>a</p>" + b"<![a" * 50_000, "any")
    add("html-tag-bomb", "tags.html", b"<b>" * 1_200_000 + b"a", "limit")
    add("html-many-attributes", "attrs.html", b"<p " + b"a " * 1_000_000 + b">x</p>", "any")
    add("html-huge-text", "text.html", b"<p>" + "长".encode() * 3_000_000 + b"</p>", "any")
    add("html-nul", "nul.html", b"<p>a\x00</p>", "error")
    # --- plain text and subtitles
    add("txt-cr-only", "cr.txt", "第一行\r第二行\r".encode(), "ok")
    add("txt-mixed-newlines", "mixed.txt", "一\r\n二\r三\n".encode(), "ok")
    add("txt-nul", "nul.txt", b"abc\x00def", "error")
    add("txt-utf16-odd-length", "odd.txt", b"\xff\xfea\x00b", "error")
    add("txt-bom-only", "bom.txt", b"\xef\xbb\xbf", "error")
    add("txt-huge-word", "word.txt", b"a" * 8_000_000, "ok")
    add("txt-too-many-lines", "lines.txt", b"a\n" * 6000, "limit")
    # one wall of wrapped lines that never ends a sentence: paragraphs of at most 2,000 characters, each
    # translation shared out among its ~50 lines
    add("txt-wrapped-wall", "wall.txt", b"ab cd ef gh ij kl mn op qr st uv wx yz 01\n" * 20_000, "ok")
    add("txt-lone-surrogates", "sur.txt", b"\xed\xa0\x80", "error")
    add("srt-cr-only", "cr.srt", "1\r00:00:01,000 --> 00:00:02,000\r你好\r".encode(), "ok")
    # cues run on in passages of three (mtserve.documents.formats.subtitles): 16,000 of them are 5,334 segments
    add("srt-too-many-cues", "cues.srt",
        b"".join(b"%d\n00:00:01,000 --> 00:00:02,000\nx\n\n" % i for i in range(16_000)), "limit")
    add("srt-run-on-cues", "runon.srt",
        b"".join(b"%d\n00:00:01,000 --> 00:00:02,000\n\xe6\x88\x91\xe4\xbb\xac\xef\xbc\x8c\n\n" % i
                 for i in range(4000)), "ok")
    add("srt-only-timings", "timings.srt", b"00:00:01,000 --> 00:00:02,000\n" * 100_000, "any")
    add("vtt-huge-cue", "cue.vtt", b"WEBVTT\n\n00:01.000 --> 00:02.000\n" + b"a b\n" * 500_000, "ok")
    add("vtt-bom-cr", "bom.vtt", "\ufeffWEBVTT\r\r00:01.000 --> 00:02.000\r你好\r".encode(), "ok")
    # --- JSON and gettext
    add("json-nested-100k", "deep.json", b"[" * 100_000 + b"]" * 100_000, "limit")
    add("json-nested-objects", "objects.json", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "limit")
    add("json-nested-200", "deep200.json", b"[" * 200 + b'"a"' + b"]" * 200, "limit")
    add("json-nested-50", "deep50.json", b"[" * 50 + b'"a"' + b"]" * 50, "ok")
    add("json-huge-integer", "int.json", b'{"a": "b", "n": ' + b"9" * 5000 + b"}", "error")
    add("json-huge-float", "float.json", b'{"a": "b", "n": 1e400}', "any")
    add("json-nan", "nan.json", b'{"a": "b", "n": NaN}', "any")
    add("json-lone-surrogate", "sur.json", b'{"a": "\\ud800"}', "any")
    add("json-utf16-bom", "u16.json", '{"a": "你好"}'.encode("utf-16"), "ok")
    add("json-placeholder-scan", "dollar.json", b'{"a": "' + b"$t(" * 60_000 + b'"}', "ok")
    add("json-many-strings", "strings.json",
        b"[" + b",".join(b'"s%d"' % i for i in range(6000)) + b"]", "limit")
    add("po-etc-passwd", "passwd.po", b"/etc/passwd", "error", forbidden=PASSWD)
    add("po-proc-self", "proc.po", b"/proc/self/environ", "error")
    add("po-cr-only", "cr.po", b'msgid "a"\rmsgstr ""\r', "any")
    add("po-bad-charset", "charset.po",
        b'msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=base64\\n"\n\nmsgid "a"\nmsgstr ""\n',
        "any")
    add("po-huge-msgid", "huge.po", b'msgid "' + b"a " * 2_000_000 + b'"\nmsgstr ""\n', "ok")
    add("po-too-many-entries", "entries.po",
        b"".join(b'msgid "m%d"\nmsgstr ""\n\n' % i for i in range(6000)), "limit")
    add("po-placeholder-scan", "dollar.po", b'msgid "' + b"$t(" * 60_000 + b'"\nmsgstr ""\n', "ok")
    # each was read in quadratic time: a catalog string's inline tags numbered by counting
    # the ones before (80,000 characters of "<p>" took 9 s), unclosed ICU branches each scanned to the
    # end, a run of colons tried as a clause end from each colon
    add("po-many-inline-tags", "tags.po", b'msgid "' + b"<p>" * 20_000 + b'"\nmsgstr ""\n', "ok")
    add("json-many-inline-tags", "tags.json", b'{"a": "' + b"<b1>" * 15_000 + b'"}', "ok")
    add("json-icu-unclosed", "icu.json", b'{"a": "' + b"{a,select,x{" * 8_000 + b'"}', "ok")
    add("txt-clause-mark-run", "colons.txt", b":" * 300_000, "ok")
    return cases


def _empty_cases() -> list[HostileFile]:
    extensions = ("txt", "md", "html", "srt", "vtt", "docx", "pptx", "odt", "epub", "pdf", "po", "json")
    return [HostileFile(f"empty-{ext}", f"empty.{ext}", b"", "error") for ext in extensions]


BUILDERS: tuple[Callable[[], list[HostileFile]], ...] = (_zip_cases, _epub_cases, _pdf_cases, _text_cases,
                                                          _empty_cases)


@functools.cache
def hostile_files() -> tuple[HostileFile, ...]:
    """Every hostile case, built once."""
    cases = tuple(case for build in BUILDERS for case in build())
    names = [case.name for case in cases]
    assert len(names) == len(set(names)), "case names are unique"
    return cases


def as_pairs() -> list[tuple[str, bytes]]:
    """(file name, bytes) for each case, for callers that only upload."""
    return [(case.filename, case.data) for case in hostile_files()]
