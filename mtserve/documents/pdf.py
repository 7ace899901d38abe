"""PDF: text-based PDFs in, a translated PDF out (or DOCX when no font fits).

Reading: pdfminer.six's layout analysis groups characters into lines and
text blocks and orders the blocks for reading (columns included). Each block
is one segment, its lines joined (words hyphenated across a line end are
rejoined). A PDF with no text layer (a scan) is refused: OCR is not supported.

Writing: the original pages are kept with their text removed (pypdf), so
images, drawings, backgrounds and page sizes stay; each translated block is
set back in its original box (fpdf2), in the block's size, weight and colour,
shrunk until it fits. What is lost: the original fonts (the translation is set
in DejaVu Sans or Noto Sans CJK), exact line breaks, alignment and
letter-spacing, links and form fields' text, and text drawn as images. When
no installed font covers the translation, the result is a DOCX with one
paragraph per block and a page break per page instead.
"""

from __future__ import annotations

import functools
import io
import logging
import re
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mtserve.documents.base import Document, DocumentError, Output
from mtserve.text.segment import is_cjk

log = logging.getLogger(__name__)

DEJAVU = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/TTF/DejaVuSans.ttf",
          "/usr/share/fonts/dejavu/DejaVuSans.ttf")
NOTO_CJK = ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
            "/usr/share/fonts/noto-cjk/NotoSansCJK-Regular.ttc",
            "/usr/share/fonts/google-noto-cjk/NotoSansCJK-Regular.ttc",
            "/usr/share/fonts/opentype/noto-cjk/NotoSansCJK-Regular.ttc")
CJK_FACE = {"ja": "JP", "ko": "KR", "zt": "TC"}  # other targets: SC
MIN_FONT_PT = 4.0
LINE_HEIGHT = 1.18
PDF_MEDIA = "application/pdf"
DOCX_MEDIA = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


@dataclass
class Block:
    page: int
    x0: float
    y0: float
    x1: float
    y1: float
    size: float
    bold: bool
    color: tuple[int, int, int]
    text: str


@dataclass
class Page:
    width: float
    height: float


class PdfDocument(Document):
    def __init__(self, data: bytes, pages: list[Page], blocks: list[Block]):
        self.data = data
        self.pages = pages
        self.blocks = blocks
        sections, count = [], 0
        for number in range(len(pages)):
            count += sum(1 for b in blocks if b.page == number)
            sections.append((f"page {number + 1}", count))
        super().__init__("pdf", [b.text for b in blocks], sections=sections, notes=[
            "Text is read in layout order (columns included) and set back in each block's place, "
            "in its size, weight and colour, shrunk to fit; images, drawings and page sizes are kept.",
            "Lost: the original fonts (the translation is set in DejaVu Sans or Noto Sans CJK), "
            "exact line breaks, alignment, links, and any text that is part of an image.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        with tempfile.TemporaryDirectory(prefix="mtserve-fonts-") as workdir:
            bold = any(block.bold for block in self.blocks)
            fonts = pick_fonts("".join(translations), target, Path(workdir), bold=bold)
            if fonts is not None:
                return Output(self._pdf(translations, fonts, target), "pdf", PDF_MEDIA)
        self.notes.append("No installed font covers the translation, so the result is a DOCX "
                          "(one paragraph per text block, a page break per page), not a PDF.")
        return Output(self._docx(translations), "docx", DOCX_MEDIA)

    # --- PDF out ---------------------------------------------------------------------
    def _pdf(self, translations: list[str], fonts: "Fonts", target: str) -> bytes:
        import pypdf
        from fpdf import FPDF
        from fpdf.enums import MethodReturnValue, WrapMode

        overlay = FPDF(unit="pt")
        overlay.set_auto_page_break(False)
        overlay.set_margins(0, 0, 0)
        overlay.c_margin = 0
        overlay.add_font("body", "", fonts.regular)
        overlay.add_font("body", "B", fonts.bold)
        wrap = WrapMode.CHAR if target in CJK_FACE or target == "zh" else WrapMode.WORD
        by_page: dict[int, list[tuple[Block, str]]] = {}
        for block, translation in zip(self.blocks, translations):
            by_page.setdefault(block.page, []).append((block, " ".join(translation.split())))
        for number, page in enumerate(self.pages):
            overlay.add_page(format=(page.width, page.height))
            for block, text in by_page.get(number, []):
                if not text:
                    continue
                style = "B" if block.bold else ""
                width, room = _room(block, [b for b, _ in by_page[number]], page)
                size = block.size
                while True:
                    overlay.set_font("body", style, size)
                    lines = overlay.multi_cell(width, size * LINE_HEIGHT, text, dry_run=True,
                                               output=MethodReturnValue.LINES, wrapmode=wrap)
                    if len(lines) * size * LINE_HEIGHT <= room or size <= MIN_FONT_PT:
                        break
                    size = max(MIN_FONT_PT, size * 0.9)
                overlay.set_text_color(*block.color)
                overlay.set_xy(block.x0, page.height - block.y1)
                overlay.multi_cell(width, size * LINE_HEIGHT, text, align="L", wrapmode=wrap)
        layer = pypdf.PdfReader(io.BytesIO(bytes(overlay.output())))
        writer = pypdf.PdfWriter(clone_from=_reader(self.data))
        writer.remove_text()
        for page, overlay_page in zip(writer.pages, layer.pages):
            page.merge_page(overlay_page)
        out = io.BytesIO()
        writer.write(out)
        return out.getvalue()

    # --- DOCX out --------------------------------------------------------------------
    def _docx(self, translations: list[str]) -> bytes:
        import docx
        from docx.enum.text import WD_BREAK

        document = docx.Document()
        body = statistics.median([b.size for b in self.blocks]) if self.blocks else 10.0
        previous_page = 0
        for block, translation in zip(self.blocks, translations):
            if block.page != previous_page and document.paragraphs:
                document.paragraphs[-1].add_run().add_break(WD_BREAK.PAGE)
            previous_page = block.page
            text = " ".join(translation.split())
            if block.size >= body * 1.5:
                document.add_heading(text, level=1 if block.size >= body * 2 else 2)
            else:
                paragraph = document.add_paragraph()
                run = paragraph.add_run(text)
                run.bold = block.bold
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()


def _room(block: Block, neighbours: list[Block], page: Page) -> tuple[float, float]:
    """Width and height a translation may take: its box, grown towards the next block or the margin."""
    margin = min(36.0, block.x0, max(0.0, page.width - block.x1))
    right = page.width - margin
    bottom = min(block.y0, 36.0)
    for other in neighbours:
        if other is block:
            continue
        beside = other.y0 < block.y1 and other.y1 > block.y0
        if beside and other.x0 >= block.x1 - 1:
            right = min(right, other.x0 - 4)
        below = other.y1 <= block.y0 + 1 and other.x0 < block.x1 and other.x1 > block.x0
        if below:
            bottom = max(bottom, other.y1 + 2)
    width = max(block.x1 - block.x0, right - block.x0, 12.0) + 1.0
    height = max(block.y1 - bottom, block.y1 - block.y0, block.size * LINE_HEIGHT) + 1.0
    return width, height


# --- reading ------------------------------------------------------------------------------
def _reader(data: bytes):
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError("could not read the .pdf file: it is password-protected; "
                                "remove the password and upload it again")
        len(reader.pages)
    except DocumentError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise DocumentError(f"could not read the .pdf file: {exc}") from None
    return reader


def read_pdf(data: bytes) -> PdfDocument:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTChar, LTFigure, LTImage, LTTextBox, LTTextLine

    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise DocumentError("could not read the .pdf file: it does not start with %PDF; is it really a PDF?")
    _reader(data)  # refuses damaged and password-protected files with a clear message
    pages: list[Page] = []
    blocks: list[Block] = []
    images = 0
    try:
        # line_margin 1.0: lines up to a line-height apart are one block (1.5-spaced text is common)
        layouts = extract_pages(io.BytesIO(data), laparams=LAParams(line_margin=1.0, all_texts=True))
        for number, layout in enumerate(layouts):
            pages.append(Page(layout.x1, layout.y1))
            stack = list(layout)
            boxes = []
            while stack:
                item = stack.pop(0)
                if isinstance(item, LTTextBox):
                    boxes.append(item)
                elif isinstance(item, LTImage):
                    images += 1
                elif isinstance(item, LTFigure):
                    stack[:0] = list(item)
            for box in boxes:
                lines = [line for line in box if isinstance(line, LTTextLine)]
                chars = [c for line in lines for c in line if isinstance(c, LTChar)]
                text = join_lines([line.get_text() for line in lines])
                if not chars or not text.strip():
                    continue
                blocks.append(Block(
                    page=number, x0=box.x0, y0=box.y0, x1=box.x1, y1=box.y1,
                    size=round(statistics.median(c.size for c in chars), 1),
                    bold=sum(_is_bold(c.fontname) for c in chars) * 2 > len(chars),
                    color=_rgb(chars[len(chars) // 2]),
                    text=text,
                ))
    except DocumentError:
        raise
    except Exception as exc:  # pdfminer raises many kinds on damaged files
        raise DocumentError(f"could not read the .pdf file: {type(exc).__name__}: {exc}") from None
    if not pages:
        raise DocumentError("could not read the .pdf file: it has no pages")
    if not blocks and images:
        raise DocumentError("the .pdf file has no text layer (it looks scanned: its pages are images); "
                            "OCR is not supported, so there is no text to translate")
    if not blocks:
        raise DocumentError("the .pdf file has no text to translate: its pages hold no text layer "
                            "(text drawn as shapes needs OCR, which is not supported)")
    return PdfDocument(data, pages, blocks)


def join_lines(lines: list[str]) -> str:
    """A block's lines as one text: hyphenated words rejoined, CJK lines joined without a space."""
    text = ""
    for line in (line.rstrip("\n").strip() for line in lines):
        if not line:
            continue
        if not text:
            text = line
        elif re.search(r"[A-Za-z]-$", text) and line[:1].islower():
            text = text[:-1] + line
        elif is_cjk(text[-1]) and is_cjk(line[0]):
            text += line
        else:
            text += " " + line
    return text


def _is_bold(fontname: str) -> bool:
    return bool(re.search(r"bold|black|heavy|semibold|demi", fontname, re.IGNORECASE))


def _rgb(char) -> tuple[int, int, int]:
    color = getattr(getattr(char, "graphicstate", None), "ncolor", None)
    try:
        if color is None:
            return (0, 0, 0)
        if isinstance(color, (int, float)):
            g = int(round(float(color) * 255))
            return (g, g, g)
        values = [float(v) for v in color]
        if len(values) == 1:
            g = int(round(values[0] * 255))
            return (g, g, g)
        if len(values) == 3:
            return tuple(int(round(v * 255)) for v in values)  # type: ignore[return-value]
        if len(values) == 4:
            c, m, y, k = values
            return tuple(int(round(255 * (1 - v) * (1 - k))) for v in (c, m, y))  # type: ignore[return-value]
    except (TypeError, ValueError):
        pass
    return (0, 0, 0)


# --- fonts -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fonts:
    regular: str  # font files fpdf2 can embed
    bold: str


def _first(paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if Path(p).is_file()), None)


@functools.lru_cache(maxsize=4)
def _cmap(path: str) -> frozenset[int]:
    from fontTools.ttLib import TTFont

    with TTFont(path, lazy=True) as font:
        return frozenset(font.getBestCmap() or {})


def pick_fonts(text: str, target: str, workdir: Path, bold: bool = True) -> Fonts | None:
    """DejaVu Sans when it covers the text, else Noto Sans CJK (subset, as TrueType); None if neither.

    Preparing a CJK subset takes about a second per weight, so the bold one is made only when needed.
    """
    needed = {ord(c) for c in text if not c.isspace()}
    dejavu = _first(DEJAVU)
    if dejavu and needed <= _cmap(dejavu):
        bold = dejavu.replace("DejaVuSans.ttf", "DejaVuSans-Bold.ttf")
        return Fonts(dejavu, bold if Path(bold).is_file() else dejavu)
    noto = _first(NOTO_CJK)
    if noto is None:
        return None
    face = CJK_FACE.get(target, "SC")
    try:
        regular = cjk_truetype(noto, face, text, workdir / "regular.ttf")
        bold_path = noto.replace("-Regular.ttc", "-Bold.ttc")
        if bold and Path(bold_path).is_file():
            return Fonts(regular, cjk_truetype(bold_path, face, text, workdir / "bold.ttf"))
    except Exception as exc:  # a font we cannot convert: fall back to DOCX rather than fail
        log.warning("could not prepare the CJK font", extra={"event": "pdf_font_error", "error": repr(exc)})
        return None
    return Fonts(regular, regular)


def cjk_truetype(path: str, face: str, text: str, out: Path) -> str:
    """The glyphs ``text`` needs from a Noto Sans CJK collection, as a small TrueType font.

    Noto CJK has CFF (PostScript) outlines; fpdf2 embeds those with an encoding
    that text extractors misread, so the subset is converted to TrueType
    outlines, which every reader handles (copy, search, extraction).
    """
    from fontTools import subset
    from fontTools.pens.cu2quPen import Cu2QuPen
    from fontTools.pens.ttGlyphPen import TTGlyphPen
    from fontTools.ttLib import TTCollection, TTFont, newTable

    collection = TTCollection(path, lazy=True)
    names = [f["name"].getDebugName(1) or "" for f in collection.fonts]
    index = next((i for i, n in enumerate(names) if n.endswith(f"CJK {face}")), 0)
    font = TTFont(path, fontNumber=index)
    for table in ("GSUB", "GPOS", "GDEF", "BASE", "VORG", "vhea", "vmtx"):  # unused; slow to parse
        if table in font:
            del font[table]
    options = subset.Options()
    options.notdef_outline = True
    options.desubroutinize = True
    options.layout_features = []
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text + " 0123456789")
    subsetter.subset(font)
    if "CFF " in font:
        order = font.getGlyphOrder()
        glyphs = font.getGlyphSet()
        glyf = newTable("glyf")
        glyf.glyphOrder = order
        glyf.glyphs = {}
        for name in order:
            pen = TTGlyphPen(glyphs)
            glyphs[name].draw(Cu2QuPen(pen, 1.0, reverse_direction=True))
            glyf.glyphs[name] = pen.glyph()
        font["loca"] = newTable("loca")
        font["glyf"] = glyf
        del font["CFF "]
        glyf.compile(font)
        maxp = newTable("maxp")
        maxp.tableVersion = 0x00010000
        for field_name in ("maxZones", "maxTwilightPoints", "maxStorage", "maxFunctionDefs",
                           "maxInstructionDefs", "maxStackElements", "maxSizeOfInstructions",
                           "maxComponentElements"):
            setattr(maxp, field_name, 0)
        maxp.maxZones = 1
        maxp.numGlyphs = len(order)
        font["maxp"] = maxp
        font["head"].glyphDataFormat = 0
        post = font["post"]
        post.formatType = 2.0
        post.extraNames = []
        post.mapping = {}
        post.glyphOrder = order
        font.sfntVersion = "\x00\x01\x00\x00"
    font.save(str(out))
    return str(out)
