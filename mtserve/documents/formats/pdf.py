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
import zlib
from dataclasses import dataclass
from pathlib import Path

from mtserve.documents.formats.base import Document, DocumentError, LimitExceeded, Output
from mtserve.documents.formats.limits import budget, megabytes
from mtserve.text.segment import is_cjk

log = logging.getLogger("mtserve.documents.pdf")  # the name its log lines have always carried

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
        from pypdf.errors import LimitReachedError

        try:
            with _pypdf_limits():
                writer = pypdf.PdfWriter(clone_from=_reader(self.data))
                writer.remove_text()
                for page, overlay_page in zip(writer.pages, layer.pages):
                    page.merge_page(overlay_page)
                out = io.BytesIO()
                writer.write(out)
        except LimitReachedError as exc:
            raise LimitExceeded(f"the .pdf file is over a limit of the PDF writer ({exc})") from None
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
class _Abort(BaseException):
    """A limit hit inside pdfminer, which catches ``Exception`` in places: let it through, then unwrap."""

    def __init__(self, error: DocumentError):
        super().__init__(str(error))
        self.error = error


def _decoded(size: int) -> None:
    """Count a decoded stream against the per-stream cap and the document's expanded total."""
    limits = budget().limits
    cap = limits.max_pdf_stream_bytes
    if size > cap:
        raise _Abort(LimitExceeded(f"a stream in the .pdf file decodes to more than {megabytes(cap)}; the "
                                   f"limit is {megabytes(cap)} (MTSERVE_FILES_MAX_PDF_STREAM_MB)"))
    try:
        budget().expand(size, "the PDF's decoded streams")
    except LimitExceeded as exc:
        raise _Abort(exc) from None


def _inflate(data: bytes) -> bytes:
    """FlateDecode that stops at the stream cap; a damaged stream gives what decodes (as pdfminer's)."""
    cap = budget().limits.max_pdf_stream_bytes
    try:
        inflater = zlib.decompressobj()
        out = inflater.decompress(data, cap + 1)
    except zlib.error:
        # pdfminer keeps a stream whose only damage is its checksum (the last 4 bytes); else none of it.
        try:
            inflater = zlib.decompressobj()
            out = inflater.decompress(data[:-4], cap + 1)
        except zlib.error:
            out = b""
    if inflater.unconsumed_tail:  # more output waiting: over the cap
        out += b"\0"
    _decoded(len(out))
    return out


def _lzw(data: bytes) -> bytes:
    from pdfminer.lzw import LZWDecoder

    cap = budget().limits.max_pdf_stream_bytes
    chunks, size = [], 0
    for chunk in LZWDecoder(io.BytesIO(data)).run():
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            break
    _decoded(size)
    return b"".join(chunks)


def _run_length(data: bytes) -> bytes:
    """RunLengthDecode (PDF 1.7, 7.4.5) that stops at the stream cap."""
    cap = budget().limits.max_pdf_stream_bytes
    out = bytearray()
    i, n = 0, len(data)
    while i < n and len(out) <= cap:
        length = data[i]
        if length == 128:
            break
        if length < 128:
            out += data[i + 1:i + 2 + length]
            i += length + 2
        else:
            out += data[i + 1:i + 2] * (257 - length)
            i += 2
    _decoded(len(out))
    return bytes(out)


def _ccitt(data: bytes, params: dict) -> bytes:
    from pdfminer.ccitt import CCITTFaxDecoder
    from pdfminer.pdfexceptions import PDFValueError

    cap = budget().limits.max_pdf_stream_bytes
    columns = params.get("Columns")
    if params.get("K") != -1 or not isinstance(columns, int) or not 0 < columns <= 100_000:
        raise PDFValueError(f"unsupported CCITTFax parameters: K={params.get('K')!r} Columns={columns!r}")

    class Capped(CCITTFaxDecoder):
        def __init__(self) -> None:
            super().__init__(columns, bytealign=bool(params.get("EncodedByteAlign")),
                             reversed=bool(params.get("BlackIs1")))
            self.lines: list[bytes] = []
            self.size = 0

        def output_line(self, y: int, bits) -> None:
            self._buf = b""
            super().output_line(y, bits)
            self.lines.append(self._buf)
            self.size += len(self._buf)
            _decoded(self.size if self.size > cap else 0)

        def close(self) -> bytes:
            return b"".join(self.lines)

    decoder = Capped()
    decoder.feedbytes(data)
    out = decoder.close()
    _decoded(len(out))
    return out


@functools.cache
def _cap_pdfminer() -> None:
    """Route pdfminer's stream decoders through the capped ones above (it has no limits of its own).

    pdfminer.pdftypes calls these by module-level name; if a release renames them this fails loudly
    (the hostile-file tests build a bomb for each) rather than leaving a decoder uncapped.
    """
    from pdfminer import pdftypes

    for name in ("zlib", "lzwdecode", "rldecode", "ccittfaxdecode", "decompress_corrupted"):
        if not hasattr(pdftypes, name):
            raise RuntimeError(f"pdfminer.pdftypes.{name} is gone: the PDF stream caps need updating")
    pdftypes.zlib = _CappedZlib()
    pdftypes.lzwdecode = _lzw
    pdftypes.rldecode = _run_length
    pdftypes.ccittfaxdecode = _ccitt
    pdftypes.decompress_corrupted = _inflate


class _CappedZlib:
    """What pdfminer.pdftypes uses of ``zlib``, capped."""

    error = zlib.error

    @staticmethod
    def decompress(data: bytes, *args) -> bytes:
        return _inflate(data)

    @staticmethod
    def decompressobj(*args, **kwargs):
        return zlib.decompressobj(*args, **kwargs)


def _pypdf_limits():
    """pypdf's own decoders, held to the same per-stream cap."""
    import pypdf

    cap = budget().limits.max_pdf_stream_bytes
    return pypdf.apply_configuration(
        maximum_declared_stream_length=max(cap, 1), zlib_maximum_output_length=cap,
        lzw_maximum_output_length=cap, run_length_maximum_output_length=cap,
        array_based_stream_maximum_output_length=cap, jbig2_maximum_output_length=cap,
        brotli_maximum_output_length=cap)


def _reader(data: bytes):
    import pypdf
    from pypdf.errors import LimitReachedError, PyPdfError

    try:
        with _pypdf_limits():
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise DocumentError("could not read the .pdf file: it is password-protected; "
                                    "remove the password and upload it again")
            pages = len(reader.pages)
    except DocumentError:
        raise
    except LimitReachedError as exc:
        raise LimitExceeded(f"the .pdf file is over a structure limit of the PDF reader ({exc})") from None
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        raise DocumentError(f"could not read the .pdf file: {exc}") from None
    cap = budget().limits.max_pdf_pages
    if pages > cap:
        raise LimitExceeded(f"the .pdf file has {pages:,} pages; the limit is {cap:,} "
                            "(MTSERVE_FILES_MAX_PDF_PAGES)")
    return reader


_CELL_PT = 10.0  # the grid text density is measured on
_MOST_BOXES = 100  # text boxes on a page that get pdfminer's hierarchical (column-aware) reading order
_MOST_PER_CELL = 200  # characters in one 10 pt square: 2 pt type, or text drawn over itself many times


def _layouts(data: bytes, laparams, maxpages: int):
    """pdfminer's extract_pages, with a device that counts what each page draws before analysing it.

    Layout analysis groups text lines by their neighbours; lines drawn over each other are all
    neighbours, and 500 of them in one spot took 12 s (1,000: 100 s). Each character is about a
    kilobyte once drawn. So a page is refused while it is drawn, past the character cap, or before
    its analysis, when too much of its text lies in one spot.
    """
    from pdfminer.converter import PDFPageAggregator
    from pdfminer.layout import (
        LTChar,
        LTContainer,
        LTFigure,
        LTPage,
        LTTextBoxHorizontal,
        LTTextBoxVertical,
        LTTextGroupLRTB,
        LTTextLineHorizontal,
    )
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.utils import Plane, mult_matrix

    cap = budget().limits.max_pdf_page_chars

    class Grouping:
        """pdfminer's text grouping, without its quadratic steps.

        Lines into boxes: pdfminer rebuilds a box each time a line joins it, which is quadratic
        when a page's lines all touch (8,000 scattered words: 166 s); the boxes are the connected
        groups of neighbouring lines, found here with union-find. Boxes into a reading order:
        hierarchical grouping is quadratic in boxes (900 boxes: 90 s); past a hundred, the boxes
        are read top to bottom, left to right.
        """

        def group_textlines(self, laparams, lines):
            lines = list(lines)
            plane = Plane(self.bbox)
            plane.extend(lines)
            index = {id(line): i for i, line in enumerate(lines)}
            parent = list(range(len(lines)))

            def root(i: int) -> int:
                while parent[i] != i:
                    parent[i] = parent[parent[i]]
                    i = parent[i]
                return i

            for i, line in enumerate(lines):
                for other in line.find_neighbors(plane, laparams.line_margin):
                    j = index.get(id(other))
                    if j is not None and (a := root(i)) != (b := root(j)):
                        parent[max(a, b)] = min(a, b)
            groups: dict[int, list[int]] = {}
            for i in range(len(lines)):  # in the order of each group's first line, as pdfminer yields them
                groups.setdefault(root(i), []).append(i)
            for members in groups.values():
                last = lines[members[-1]]  # pdfminer's box is made for the group's last line
                box = LTTextBoxHorizontal() if isinstance(last, LTTextLineHorizontal) else LTTextBoxVertical()
                for i in members:
                    box.add(lines[i])
                if not box.is_empty():
                    yield box

        def group_textboxes(self, laparams, boxes):
            if len(boxes) > _MOST_BOXES:
                return [LTTextGroupLRTB(list(boxes))]
            return super().group_textboxes(laparams, boxes)

    class Page(Grouping, LTPage):
        pass

    class Figure(Grouping, LTFigure):
        pass

    class Counting(PDFPageAggregator):
        def begin_page(self, page, ctm) -> None:
            self.drawn = 0
            super().begin_page(page, ctm)
            self.cur_item = Page(self.cur_item.pageid, self.cur_item.bbox, self.cur_item.rotate)

        def begin_figure(self, name, bbox, matrix) -> None:
            super().begin_figure(name, bbox, matrix)
            self.cur_item = Figure(name, bbox, mult_matrix(matrix, self.ctm))

        def render_char(self, *args, **kwargs):
            self.drawn += 1
            if self.drawn > cap:
                raise _Abort(LimitExceeded(
                    f"page {self.pageno} of the .pdf file draws more than {cap:,} characters; the limit "
                    f"is {cap:,} (MTSERVE_FILES_MAX_PDF_PAGE_CHARS)"))
            return super().render_char(*args, **kwargs)

        def end_page(self, page) -> None:
            cells: dict[tuple[int, int], int] = {}
            stack = [self.cur_item]
            while stack:
                for item in stack.pop():
                    if isinstance(item, LTChar):
                        key = (int(item.x0 // _CELL_PT), int(item.y0 // _CELL_PT))
                        cells[key] = cells.get(key, 0) + 1
                    elif isinstance(item, LTContainer):
                        stack.append(item)
            if cells and max(cells.values()) > _MOST_PER_CELL:
                raise _Abort(DocumentError(
                    f"could not read the .pdf file: page {self.pageno} draws more than {_MOST_PER_CELL} "
                    f"characters over one {_CELL_PT:g} pt square (text drawn over itself), which its "
                    "layout cannot be read from; print it to a new PDF and upload that"))
            super().end_page(page)

    manager = PDFResourceManager(caching=True)
    device = Counting(manager, laparams=laparams)
    interpreter = PDFPageInterpreter(manager, device)
    for page in PDFPage.get_pages(io.BytesIO(data), maxpages=maxpages):
        interpreter.process_page(page)
        yield device.get_result()


def read_pdf(data: bytes) -> PdfDocument:
    from pdfminer.layout import LAParams, LTChar, LTFigure, LTImage, LTTextBox, LTTextLine

    if not data.lstrip()[:5].startswith(b"%PDF"):
        raise DocumentError("could not read the .pdf file: it does not start with %PDF; is it really a PDF?")
    _cap_pdfminer()
    _reader(data)  # refuses damaged, password-protected and too long files with a clear message
    pages: list[Page] = []
    blocks: list[Block] = []
    images = 0
    cap = budget().limits.max_pdf_pages
    try:
        # line_margin 1.0: lines up to a line-height apart are one block (1.5-spaced text is common)
        layouts = _layouts(data, LAParams(line_margin=1.0, all_texts=True), maxpages=cap + 1)
        for number, layout in enumerate(layouts):
            if number >= cap:  # pdfminer found more pages than pypdf did
                raise LimitExceeded(f"the .pdf file has more than {cap:,} pages; the limit is {cap:,} "
                                    "(MTSERVE_FILES_MAX_PDF_PAGES)")
            pages.append(Page(layout.x1, layout.y1))
            stack = list(layout)[::-1]  # depth first, in reading order; popped from the end
            boxes = []
            while stack:
                item = stack.pop()
                if isinstance(item, LTTextBox):
                    boxes.append(item)
                elif isinstance(item, LTImage):
                    images += 1
                elif isinstance(item, LTFigure):
                    stack.extend(list(item)[::-1])
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
                budget().check_segments(len(blocks))
    except _Abort as abort:
        raise abort.error from None
    except (DocumentError, MemoryError):
        raise
    except RecursionError:
        raise DocumentError("could not read the .pdf file: its objects are nested too deeply to "
                            "read") from None
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
    parts: list[str] = []  # joined once at the end: a block may have thousands of lines
    for line in (line.rstrip("\n").strip() for line in lines):
        if not line:
            continue
        if not parts:
            parts.append(line)
            continue
        last = parts[-1]
        if len(last) >= 2 and last[-1] == "-" and last[-2].isascii() and last[-2].isalpha() \
                and line[:1].islower():
            parts[-1] = last[:-1]
        elif not (is_cjk(last[-1]) and is_cjk(line[0])):
            parts.append(" ")
        parts.append(line)
    return "".join(parts)


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
    except MemoryError:
        raise
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
