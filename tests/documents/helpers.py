"""Shared by the document API, CLI and WebUI tests: a swapping engine, and reading any output back."""

from __future__ import annotations

import io
import json
import zipfile

from lxml import etree

from tests.documents.samples import swap
from tests.fakes import FakeEngine


class SwapEngine(FakeEngine):
    """Translates by turning Han characters into Latin letters (see samples.swap)."""

    @staticmethod
    def render(request) -> str:
        return swap(request.text)


def visible_text(name: str, data: bytes) -> str:
    """The text a reader of the file would see, read with the format's own library."""
    extension = name.rsplit(".", 1)[-1]
    if extension == "docx":
        import docx

        document = docx.Document(io.BytesIO(data))
        parts = [p.text for p in document.paragraphs]
        parts += [c.text for t in document.tables for r in t.rows for c in r.cells]
        return "\n".join(parts)
    if extension == "pptx":
        from pptx import Presentation

        presentation = Presentation(io.BytesIO(data))
        return "\n".join(s.text_frame.text for slide in presentation.slides for s in slide.shapes
                         if s.has_text_frame)
    if extension == "odt":
        from odf import teletype, text
        from odf.opendocument import load

        document = load(io.BytesIO(data))
        return "\n".join(teletype.extractText(p) for p in document.getElementsByType(text.P))
    if extension == "epub":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            bodies = [etree.fromstring(archive.read(n)).find("{*}body")
                      for n in archive.namelist() if n.endswith(".xhtml")]
        return "\n".join(etree.tostring(b, method="text", encoding="unicode") for b in bodies)
    if extension == "pdf":
        from pdfminer.high_level import extract_text

        return extract_text(io.BytesIO(data))
    if extension == "html":
        tree = etree.HTML(data)
        for kept in tree.iter("script", "style", "code"):
            kept.text = ""
        return etree.tostring(tree.find(".//body"), method="text", encoding="unicode")
    if extension == "po":
        import polib

        return "\n".join(e.msgstr or "\n".join(e.msgstr_plural.values()) for e in polib.pofile(data.decode()))
    if extension == "json":
        values: list[str] = []

        def walk(node):
            for child in (node.values() if isinstance(node, dict) else node):
                if isinstance(child, str) and "plural," not in child:
                    values.append(child)
                elif isinstance(child, (dict, list)):
                    walk(child)

        walk(json.loads(data))
        return "\n".join(values)
    if extension in ("xlf", "xliff"):  # the targets, which is what a CAT tool imports
        root = etree.fromstring(data)
        for kept in root.xpath("//*[@translate='no']"):  # protected content stays as it was
            kept.getparent().remove(kept)
        units = root.iter("{*}trans-unit", "{*}segment")
        return "\n".join("".join(t.itertext()) for u in units for t in u.findall("{*}target"))
    if extension == "xlsx":
        import openpyxl

        book = openpyxl.load_workbook(io.BytesIO(data))
        return "\n".join(str(c.value) for sheet in book for row in sheet.iter_rows() for c in row
                         if isinstance(c.value, str) and not c.value.startswith("="))
    text = data.decode("utf-8-sig")
    if extension == "md":
        return "\n".join(line for line in text.split("\n")
                         if "不" not in line and "example.com" not in line and "图.png" not in line)
    if extension == "vtt":
        return text.replace("张三", "").replace("NOTE 这是注释，不翻译", "")
    return text
