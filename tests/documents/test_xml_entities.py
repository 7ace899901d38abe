"""A zip-of-XML document (.docx, .pptx, .odt, .xlsx, .epub) whose XML declares or uses an entity is
refused with a 400 that says so, as an XLIFF file is: the parser expands no entity, so such a part
could only come back with ``&name;`` unresolved."""

from __future__ import annotations

import io
import re
import zipfile

import httpx
import pytest

from mtserve.documents import DocumentError, read_document
from tests.documents import samples
from tests.documents.helpers import SwapEngine
from tests.servers import serve

DECLARED = b'<!DOCTYPE x [<!ENTITY xxe "injected">]>'
EXTERNAL = b'<!DOCTYPE x SYSTEM "http://127.0.0.1:9/x.dtd">'  # &xxe; would be declared there
# (sample, the XML part that gets the entity)
PARTS = [("report.docx", "word/document.xml"), ("slides.pptx", "ppt/slides/slide1.xml"),
         ("letter.odt", "content.xml"), ("budget.xlsx", "xl/sharedStrings.xml"),
         ("book.epub", "EPUB/content.opf"), ("book.epub", "EPUB/chapter1.xhtml")]
FIRST_HAN_IN_TEXT = re.compile(rb">[^<]*?[\xe4-\xe9]")  # a text node, up to the lead byte of a Han character


def with_entity(data: bytes, part: str, doctype: bytes) -> bytes:
    """The archive with ``part`` given ``doctype`` and ``&xxe;`` in its first text with Han characters."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info)
            if info.filename == part:
                head, declaration, rest = content.partition(b"?>")
                if not declaration:
                    head, rest = b"", content
                found = FIRST_HAN_IN_TEXT.search(rest)
                assert found, part
                at = found.end() - 1
                rest = rest[:at] + b"&xxe;" + rest[at:]
                content = head + declaration + doctype + re.sub(rb"^\s*<!DOCTYPE[^>]*>", b"", rest)
            target.writestr(info, content)
    return out.getvalue()


@pytest.fixture(scope="module")
def documents() -> dict[str, bytes]:
    return samples.all_samples()


@pytest.mark.parametrize("name, part", PARTS, ids=[part for _, part in PARTS])
def test_a_declared_entity_is_refused_with_what_to_do(documents, name, part):
    with pytest.raises(DocumentError) as refused:
        read_document(name, with_entity(documents[name], part, DECLARED))
    message = str(refused.value)
    assert "XML entities" in message and part in message and "save it again" in message


@pytest.mark.parametrize("name, part", PARTS[:4], ids=[part for _, part in PARTS[:4]])
def test_an_entity_an_external_dtd_would_declare_is_refused(documents, name, part):
    # a part that says standalone="yes" is not well-formed with it; the others are refused by name
    with pytest.raises(DocumentError, match="XML entities|Entity 'xxe' not defined"):
        read_document(name, with_entity(documents[name], part, EXTERNAL))


def test_the_api_answers_400_for_each_format(documents, tmp_path):
    with serve(SwapEngine(slots=1), home=tmp_path) as url:
        answers = {}
        for name, part in PARTS:
            r = httpx.post(f"{url}/translate_file", data={"source": "zh", "target": "en"}, timeout=30,
                           files={"file": (name, with_entity(documents[name], part, DECLARED))})
            answers[part] = (r.status_code, r.json().get("error", ""))
    assert all(status == 400 and "XML entities" in error for status, error in answers.values()), answers
