"""Regression tests for hostile documents: each one failed before its fix.

The broad sweep (every hostile file through every reader) is in test_hostile_files.py; these pin
one defect each, with the message the user gets.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import time
import zipfile

import psutil
import pytest

from mtserve.documents import DocumentError, LimitExceeded, read_document
from tests.documents import samples
from tests.hostile import files
from tests.hostile.files import hostile_files


# --- .po uploads never name a file on the server ---------------------------------------------------
def test_a_po_upload_that_names_a_server_file_is_parsed_as_text(tmp_path):
    catalog = tmp_path / "secret.po"
    catalog.write_text(samples.PO, encoding="utf-8")
    assert read_document("real.po", samples.PO.encode()).segments  # the catalog itself is valid
    with pytest.raises(DocumentError) as existing:
        read_document("a.po", str(catalog).encode())  # before: the server's file was read and parsed
    with pytest.raises(DocumentError) as missing:
        read_document("a.po", str(tmp_path / "nothing-here.po").encode())
    # No existence oracle: a path that exists and one that does not get the same answer.
    assert str(existing.value) == str(missing.value) == \
        "could not read the .po file: Syntax error in po file (line 1)"
    assert str(tmp_path) not in str(existing.value)


def test_etc_passwd_as_a_po_upload_is_a_syntax_error_without_the_path():
    with pytest.raises(DocumentError) as caught:
        read_document("a.po", b"/etc/passwd")
    assert "/etc/passwd" not in str(caught.value)


# --- zip archives are measured before anything in them is inflated -----------------------------------
def _case(name: str):
    return next(case for case in hostile_files() if case.name == name)


@pytest.fixture
def no_inflating(monkeypatch):
    """Fail the test if any zip entry is opened (inflated) while the archive is read."""
    def refuse(self, *args, **kwargs):
        raise AssertionError("a zip entry was inflated before the archive was measured")

    monkeypatch.setattr(zipfile.ZipFile, "open", refuse)


@pytest.mark.parametrize("name, message", [
    ("zip-repeated-central-entries", "appears twice"),  # the 53 KB docx: one 50 MB entry, 40 times
    ("zip-renamed-central-entries", "MTSERVE_FILES_MAX_EXPANDED_MB"),
    ("zip-deflate-bomb", "MTSERVE_FILES_MAX_EXPANDED_MB"),
    ("zip-too-many-entries", "MTSERVE_FILES_MAX_ARCHIVE_ENTRIES"),
    ("zip-encrypted-entry", "is encrypted"),
    ("zip-compression-method-12", "compression method 12"),
    ("zip-compression-method-99", "compression method 99"),
])
def test_a_zip_is_refused_from_its_directory_before_anything_is_inflated(no_inflating, name, message):
    case = _case(name)
    with pytest.raises(DocumentError, match=message):
        read_document(case.filename, case.data)


@pytest.mark.parametrize("name", ["zip-invalid-deflate", "zip-corrupt-deflate", "zip-bad-crc",
                                  "zip-size-that-lies", "zip-compression-method-14", "zip-cut-in-half"])
def test_damaged_zip_entries_are_a_document_error_not_a_crash(name):
    case = _case(name)
    with pytest.raises(DocumentError, match="could not read the .docx file"):
        read_document(case.filename, case.data)


def test_an_inflated_entry_stops_at_the_xml_part_cap():
    case = _case("zip-entry-over-xml-part-size")  # 50 MB of XML in a 50 KB entry
    with pytest.raises(LimitExceeded, match="MTSERVE_FILES_MAX_XML_MB"):
        read_document(case.filename, case.data)


# --- memory bombs within the limits ----------------------------------------------------------------
def _rss() -> int:
    return psutil.Process().memory_info().rss


@pytest.mark.parametrize("name, setting", [
    ("xml-node-bomb", "MTSERVE_FILES_MAX_XML_NODES"),  # 1.2 M elements from a 30 KB entry
    ("pdf-flate-bomb", "MTSERVE_FILES_MAX_PDF_STREAM_MB"),  # 200 MB content stream in 200 KB
    ("pdf-many-streams-over-expanded", "MTSERVE_FILES_MAX_EXPANDED_MB"),
    ("pdf-lzw-bomb", "MTSERVE_FILES_MAX_PDF_STREAM_MB"),
    ("pdf-runlength-bomb", "MTSERVE_FILES_MAX_PDF_STREAM_MB"),
    ("pdf-flate-bomb-truncated", "MTSERVE_FILES_MAX_PDF_STREAM_MB"),
    ("pdf-too-many-pages", "MTSERVE_FILES_MAX_PDF_PAGES"),
    ("html-tag-bomb", "MTSERVE_FILES_MAX_XML_NODES"),
    ("epub-chapter-tag-bomb", "MTSERVE_FILES_MAX_XML_NODES"),
])
def test_a_bomb_is_refused_naming_its_limit_with_bounded_memory(name, setting):
    case = _case(name)
    gc.collect()
    before = _rss()
    with pytest.raises(LimitExceeded, match=setting):
        read_document(case.filename, case.data)
    grown = (_rss() - before) / 2**20
    print(f"{name}: RSS grew {grown:.0f} MiB")
    # Before: the XML bomb took 270 MiB, the PDF one 430 MiB. The streams case decodes up to its
    # 200 MB expanded cap by design.
    assert grown < (420 if name == "pdf-many-streams-over-expanded" else 150), grown


def test_the_segment_cap_stops_a_parse_early(monkeypatch):
    from mtserve.documents.formats import office
    from mtserve.documents.formats.limits import Limits

    calls = []
    walk = office.paragraph_units
    monkeypatch.setattr(office, "paragraph_units", lambda *a: calls.append(1) or walk(*a))
    body = "".join(f"<w:p><w:r><w:t>段落{i}</w:t></w:r></w:p>" for i in range(20_000))
    limits = dataclasses.replace(Limits.defaults(), max_segments=100)
    with pytest.raises(LimitExceeded, match="the limit is 100 .MTSERVE_FILES_MAX_SEGMENTS"):
        read_document("long.docx", files.docx(files.word_xml(body)), limits=limits)
    assert len(calls) <= 101  # it stopped at the 101st paragraph, not after all 20,000


# --- quadratic parsing of small uploads ---------------------------------------------------------------
@pytest.mark.parametrize("name, source", [
    ("comments.md", b"a " + b"<!--" * 50_000),  # 200 KB: took 11 s (over a minute on a 2-core CI box)
    ("brackets.md", b"a " + b"[" * 100_000),
    ("nested.md", b"[" * 100_000 + b"]" * 100_000),
    ("ticks.md", b"a " + b" ".join(b"`" * width for width in range(1, 2000))),
    ("targets.md", b"a " + b"[a](" * 50_000),
    ("escapes.md", b"a " + b"\\*" * 1_200_000),
    ("snake.md", b"a" + b"_" * 600_000 + b"a"),
    ("spaces.md", b"a" + b" " * 200_000 + b"b\nc"),
    ("tags.html", b"<a " * 20_000),  # html.parser rescans to the end from each unclosed tag
    ("quotes.html", b'<a b="' * 20_000),
])
def test_small_hostile_text_parses_in_linear_time(name, source):
    started = time.monotonic()
    document = read_document(name, source)
    document.render(list(document.segments), "en")
    elapsed = time.monotonic() - started
    print(f"{name}: {len(source):,} bytes in {elapsed:.2f} s")
    assert elapsed < 10, elapsed  # generous: linear is well under a second


def test_an_epub_with_a_long_spine_reads_in_linear_time():
    case = _case("epub-long-spine")  # 20,000 spine and manifest items: lookups were linear in lists
    started = time.monotonic()
    document = read_document(case.filename, case.data)
    elapsed = time.monotonic() - started
    print(f"20,000-item spine in {elapsed:.2f} s")
    assert document.segments and elapsed < 10, elapsed


@pytest.mark.parametrize("name", ["pdf-scattered-words", "pdf-corrupt-flate"])
def test_pdf_layout_of_crowded_pages_is_bounded(name):
    case = _case(name)  # 3,000 words scattered on a page: 15 s; 20,000 lines in one spot: minutes
    started = time.monotonic()
    try:
        read_document(case.filename, case.data)
    except DocumentError:
        pass
    elapsed = time.monotonic() - started
    print(f"{name}: {elapsed:.2f} s")
    assert elapsed < 10, elapsed


# --- input that once raised a 500: a limit or a document error ----------------------------------------
def test_1500_nested_runs_are_a_limit_not_a_recursion_error():
    case = _case("xml-1500-nested-runs")
    with pytest.raises(LimitExceeded, match="nested more than"):
        read_document(case.filename, case.data)


def test_nesting_under_libxml2s_limit_is_held_to_the_depth_setting():
    case = _case("xml-200-nested-runs")
    with pytest.raises(LimitExceeded, match="MTSERVE_FILES_MAX_DEPTH"):
        read_document(case.filename, case.data)
    assert read_document("ok.docx", _case("xml-40-nested-runs").data).segments == ["深"]


@pytest.mark.parametrize("data", [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
                                  b"[" * 200 + b'"a"' + b"]" * 200])
def test_deep_json_is_a_limit_naming_the_depth_setting(data):
    with pytest.raises(LimitExceeded, match="MTSERVE_FILES_MAX_DEPTH"):
        read_document("deep.json", data)


def test_a_json_integer_over_4300_digits_is_a_document_error():
    with pytest.raises(DocumentError, match="4300 digits"):
        read_document("int.json", b'{"a": "b", "n": ' + b"9" * 5000 + b"}")


def test_markdown_with_cr_only_line_endings_reads_and_keeps_them():
    source = "# 标题\r\r第一段。\r\r- 项目\r"
    document = read_document("cr.md", source.encode())
    assert document.segments == ["标题", "第一段。", "项目"]
    out = document.render(["Title", "First.", "Item"], "en").data.decode()
    assert out == "# Title\r\rFirst.\r\r- Item\r"


def test_html_declaring_a_codec_that_is_not_text_falls_back():
    for charset in ("base64", "rot13", "zlib", "hex", "idna", "undefined"):
        # Not UTF-8, so the declared charset is tried: base64 decoding raised LookupError (a 500).
        document = read_document("a.html", f'<meta charset="{charset}"><p>café</p>'.encode("cp1252"))
        assert document.segments == ["café"], charset
        assert document.render(["coffee"], "en").data.endswith(b"<p>coffee</p>")


def test_the_placeholder_check_is_linear_on_a_hostile_string():
    from mtserve.documents.formats.base import Document
    from mtserve.documents.formats.i18n import PLACEHOLDER

    document = Document("json", [], placeholders=PLACEHOLDER)
    started = time.monotonic()
    document.placeholders_kept("$t(" * 60_000, "")  # ran on the event loop, rescanning to the end each time
    elapsed = time.monotonic() - started
    print(f"180 KB of '$t(' in {elapsed:.2f} s")
    assert elapsed < 2, elapsed


def test_json_with_a_lone_surrogate_keeps_it_escaped():
    document = read_document("a.json", b'{"a": "\\ud800", "b": "\xe4\xbd\xa0\xe5\xa5\xbd"}')
    assert document.segments == ["你好"]
    out = document.render(["hello"], "en").data
    assert json.loads(out) == {"a": "\ud800", "b": "hello"}
