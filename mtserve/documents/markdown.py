"""Markdown: the prose is translated, the syntax is kept.

markdown-it-py (CommonMark, plus GFM tables and strikethrough) finds the
blocks and the source lines each one covers. Code blocks, fences, front
matter, link reference definitions and blank lines are copied as they are.
A paragraph, heading, list item or quote is one marked segment
(``mtserve.text.markup``): its inline syntax travels as tags, so the sentence
is translated whole and the formatting stays on its words. ``**strong**``,
``*em*``, ``~~strike~~``, a link's text (``[text](url)``: the text is
translated, the target kept) and paired inline HTML become tags; a code span,
an autolink, a bare URL, an escape, a hard break and other inline HTML are kept
verbatim as void tags. Table cells keep the older treatment: the text between
the syntax is translated in pieces. HTML blocks are translated as HTML.

A paragraph wrapped over several lines comes back on one line (it renders
the same); hard line breaks are kept.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Callable

from markdown_it import MarkdownIt

from mtserve.documents.base import Decoded, Document, Output, Piece, PieceText, decode_text
from mtserve.text import markup
from mtserve.text.html import parse_html
from mtserve.text.segment import is_cjk

_PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])

_HARD_BREAK = "\ue000"  # stands for a hard line break while a paragraph is scanned as one string
_ASCII_PUNCTUATION = set(string.punctuation)
_AUTOLINK = re.compile(
    r"<(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^<>\s]*"
    r"|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)>"
)
_INLINE_HTML = re.compile(
    r"<!--.*?-->|<\?.*?\?>|<![A-Za-z][^>]*>|<!\[CDATA\[.*?\]\]>"
    r"|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>",
    re.DOTALL,
)
_BARE_URL = re.compile(r"(?:https?://|www\.)[^\s<>]*[^\s<>.,;:!?'\")\]]")
_FRONT_MATTER = re.compile(r"\A(?:---|\+\+\+)\n.*?\n(?:---|\+\+\+|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_ATX_OPEN = re.compile(r"[ \t]{0,3}#{1,6}(?:[ \t]+|$)")
_LIST_MARKER = re.compile(r"[-+*]|\d{1,9}[.)]")
_BLOCK_START = re.compile(r"[#>+\-=]|\d{1,9}[.)]")
_ESCAPE_IF_NEW = "`*_[]<|"


@dataclass
class _Edit:
    """Source lines [start, end) that come back rebuilt from translated inline text."""

    start: int
    end: int
    text: PieceText
    build: Callable[[str], list[str]]
    in_table: bool = False


class MarkdownDocument(Document):
    def __init__(self, decoded: Decoded, lines: list[str], edits: list[_Edit]):
        self.decoded = decoded
        self.lines = lines
        self.edits = edits
        segments = [s for edit in edits for s in edit.text.segments]
        super().__init__("markdown", segments, markup=True, notes=[
            "Markdown syntax is kept: code blocks and inline code, link and image targets, "
            "HTML, emphasis markers and tables; the text is translated.",
            "A paragraph wrapped over several lines comes back on one line; it renders the same.",
            "Each paragraph is translated whole: **strong**, *em*, links and inline HTML stay on the "
            "words they belong to, and `code` is kept verbatim. Table cells are translated between "
            "their syntax, in pieces.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        out: list[str] = []
        position, at = 0, 0
        for edit in self.edits:
            n = len(edit.text.segments)
            out.extend(self.lines[position:edit.start])
            escape = _table_escaper if edit.in_table else _escaper
            pairs = list(zip(edit.text.segments, translations[at:at + n]))
            rendered = edit.text.render([escape(src, tr) for src, tr in pairs])
            out.extend(edit.build(rendered))
            position, at = edit.end, at + n
        out.extend(self.lines[position:])
        return Output(self.decoded.encode("\n".join(out)), "md", "text/markdown; charset=utf-8")


def read_markdown(data: bytes) -> MarkdownDocument:
    decoded = decode_text(data, ".md")
    text = decoded.text
    lines = text.split("\n")
    parse_text = text
    front = _FRONT_MATTER.match(text)
    if front:  # blank it out for the parser, keeping line numbers; its lines are never edited
        parse_text = "\n" * front.group().count("\n") + text[front.end():]
    env: dict = {}
    tokens = _PARSER.parse(parse_text, env)
    references = set(env.get("references", {}))
    edits: list[_Edit] = []
    in_table = False
    heading: str | None = None
    for token in tokens:
        if token.type == "table_open":
            in_table = True
        elif token.type == "table_close":
            in_table = False
        elif token.type == "tr_open" and token.map:
            edits += _table_row(lines, token.map[0], references)
        elif token.type == "heading_open":
            heading = token.markup  # "#"... for ATX, "=" or "-" for setext
        elif token.type == "heading_close":
            heading = None
        elif token.type == "inline" and token.map and not in_table:
            edit = _inline_block(lines, token.map[0], token.map[1], token.content, references,
                                 atx=bool(heading and heading.startswith("#")))
            if edit is not None:
                edits.append(edit)
        elif token.type == "html_block" and token.map:
            edits.append(_html_block(lines, token.map[0], token.map[1]))
    edits.sort(key=lambda e: e.start)
    return MarkdownDocument(decoded, lines, edits)


# --- blocks --------------------------------------------------------------------------
def _inline_block(lines: list[str], start: int, end: int, content: str, references: set[str],
                  atx: bool) -> _Edit | None:
    """A paragraph's or heading's lines, rebuilt around the translated inline text."""
    content_lines = content.split("\n")
    if len(content_lines) != end - start or not content.strip():
        return None  # not the shape we expect: leave the block as it is
    prefixes, bodies = [], []
    suffix = ""
    for k, piece in enumerate(content_lines):
        line = lines[start + k]
        if atx:
            opener = _ATX_OPEN.match(line)
            index = line.find(piece, opener.end() if opener else 0)
            if index < 0:
                return None
            suffix = line[index + len(piece):]
            body = piece
        else:
            stripped, core = line.rstrip(), piece.rstrip()
            if not stripped.endswith(core):
                return None
            index = len(stripped) - len(core)
            body = line[index:]
        prefixes.append(line[:index])
        bodies.append(body)
    last = bodies[-1]
    trailing = last[len(last.rstrip()):]
    bodies[-1] = last.rstrip()
    continuation = prefixes[1] if len(prefixes) > 1 else _LIST_MARKER.sub(
        lambda m: " " * len(m.group()), prefixes[0])
    joined, hard_breaks = [], []
    for k, body in enumerate(bodies):
        if k == len(bodies) - 1:
            joined.append(body)
            break
        if body.endswith("\\") and not body.endswith("\\\\"):
            hard_breaks.append("\\")
            joined += [body[:-1], _HARD_BREAK]
        elif re.search(r" {2,}$", body):
            core = body.rstrip(" ")
            hard_breaks.append(body[len(core):])
            joined += [core, _HARD_BREAK]
        else:
            core, following = body.rstrip(), bodies[k + 1].lstrip()
            glue = "" if core and following and is_cjk(core[-1]) and is_cjk(following[0]) else " "
            joined += [core, glue]
    pieces = _scan("".join(joined), references)
    breaks = iter(hard_breaks)
    for piece in pieces:
        if piece.text == _HARD_BREAK:
            piece.text = next(breaks) + "\n" + continuation
    text = _MarkedText(pieces)
    first_body = bodies[0]

    def build(rendered: str) -> list[str]:
        if not atx and _BLOCK_START.match(rendered) and not _BLOCK_START.match(first_body):
            rendered = "\\" + rendered  # the translation must not start a new kind of block
        return (prefixes[0] + rendered + suffix + trailing).split("\n")

    return _Edit(start, end, text, build)


def _table_row(lines: list[str], row: int, references: set[str]) -> list[_Edit]:
    line = lines[row]
    cells = _cell_spans(line)
    pieces: list[Piece] = []
    position = 0
    for begin, finish in cells:
        pieces.append(Piece(line[position:begin], False))
        pieces += _scan(line[begin:finish], references)
        position = finish
    pieces.append(Piece(line[position:], False))
    return [_Edit(row, row + 1, PieceText(_merge(pieces)), lambda rendered: [rendered], in_table=True)]


def _cell_spans(line: str) -> list[tuple[int, int]]:
    """Where each cell's stripped content sits in a table row."""
    pipes, i = [], 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] == "|":
            pipes.append(i)
        i += 1
    bounds = [-1] + pipes + [len(line)]
    spans = []
    for left, right in zip(bounds, bounds[1:]):
        cell = line[left + 1:right]
        if cell.strip():
            lead = len(cell) - len(cell.lstrip())
            spans.append((left + 1 + lead, left + 1 + len(cell.rstrip())))
    return spans


def _html_block(lines: list[str], start: int, end: int) -> _Edit:
    parsed = parse_html("\n".join(lines[start:end]))
    return _Edit(start, end, _HtmlPieces(parsed), lambda rendered: rendered.split("\n"))


class _HtmlPieces(PieceText):
    """An HTML block's text nodes, behind the same face as inline pieces."""

    def __init__(self, parsed):
        super().__init__([])
        self.parsed = parsed

    @property
    def segments(self) -> list[str]:
        return list(self.parsed.segments)

    def render(self, translations: list[str], escape=None) -> str:
        return self.parsed.render(translations)


# --- inline text ----------------------------------------------------------------------
def _scan(s: str, references: set[str]) -> list[Piece]:
    """Cut inline Markdown into text to translate and syntax to keep."""
    out: list[Piece] = []
    buffer: list[str] = []

    def keep(text: str, role: str = "void") -> None:
        if buffer:
            out.append(Piece("".join(buffer), True))
            buffer.clear()
        out.append(_Kept(text, False, role))

    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == _HARD_BREAK:
            keep(c)
            i += 1
        elif c == "\\" and i + 1 < n and s[i + 1] in _ASCII_PUNCTUATION:
            keep(s[i:i + 2])
            i += 2
        elif c == "`":
            end = _code_span_end(s, i)
            keep(s[i:end])
            i = end
        elif c == "<" and (m := _AUTOLINK.match(s, i)):
            keep(m.group())
            i = m.end()
        elif c == "<" and (m := _INLINE_HTML.match(s, i)):
            keep(m.group(), "html")
            i = m.end()
        elif c == "[" or s.startswith("![", i):
            opener = 2 if c == "!" else 1
            link = _link(s, i, opener, references)
            if link is None:
                buffer.append(s[i:i + opener])
                i += opener
                continue
            head, label, tail, i = link
            keep(head, "link-open" if label is not None else "void")
            if label is not None:
                if buffer:
                    out.append(Piece("".join(buffer), True))
                    buffer.clear()
                out.extend(_scan(label, references))
            keep(tail, "link-close" if label is not None else "void")
        elif c in "*~" or (c == "_" and not _intraword(s, i)):
            run = i
            while run < n and s[run] == c:
                run += 1
            if c == "~" and run - i < 2:
                buffer.append(s[i:run])
            else:
                keep(s[i:run], "emphasis")
            i = run
        elif (c in "hw") and (i == 0 or not s[i - 1].isalnum()) and (m := _BARE_URL.match(s, i)):
            keep(m.group())
            i = m.end()
        else:
            buffer.append(c)
            i += 1
    if buffer:
        out.append(Piece("".join(buffer), True))
    return out


def _intraword(s: str, i: int) -> bool:
    run = i
    while run < len(s) and s[run] == "_":
        run += 1
    return i > 0 and s[i - 1].isalnum() and run < len(s) and s[run].isalnum()


def _code_span_end(s: str, i: int) -> int:
    """End of the code span opening at ``i``, or of the lone backtick run if it never closes."""
    run = i
    while run < len(s) and s[run] == "`":
        run += 1
    width = run - i
    closing = re.compile(rf"(?<!`)`{{{width}}}(?!`)")
    found = closing.search(s, run)
    return found.end() if found else run


def _matching_bracket(s: str, i: int) -> int:
    depth = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "`":
            i = _code_span_end(s, i)
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _matching_paren(s: str, i: int) -> int:
    depth, quote = 0, None
    k = i
    while k < len(s):
        c = s[k]
        if c == "\\":
            k += 2
            continue
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'" and depth == 1 and s[k - 1].isspace():
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return k
        k += 1
    return -1


def _normalise_label(label: str) -> str:
    return " ".join(label.split()).upper()


def _link(s: str, i: int, opener: int, references: set[str]) -> tuple[str, str | None, str, int] | None:
    """(kept head, translatable label or None, kept tail, where scanning resumes) for a link or image."""
    close = _matching_bracket(s, i + opener - 1)
    if close < 0:
        return None
    label = s[i + opener:close]
    after = close + 1
    if after < len(s) and s[after] == "(":
        end = _matching_paren(s, after)
        if end >= 0:
            return s[i:i + opener], label, s[close:end + 1], end + 1
    if after < len(s) and s[after] == "[":
        end = s.find("]", after + 1)
        if end >= 0:
            if end == after + 1:  # [label][]: the label is the reference; keep it all
                return s[i:end + 1], None, "", end + 1
            return s[i:i + opener], label, s[close:end + 1], end + 1
    if _normalise_label(label) in references:  # [label]: a shortcut reference
        return s[i:close + 1], None, "", close + 1
    return None


@dataclass
class _Kept(Piece):
    """Syntax kept verbatim, and what it is: "emphasis", "link-open", "link-close", "html", "void"."""

    role: str = "void"


_HTML_OPEN = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)(?:\s[^<>]*)?>\Z")
_HTML_CLOSE = re.compile(r"</([A-Za-z][A-Za-z0-9-]*)\s*>\Z")
_EMPHASIS_NAMES = {"*": "i", "_": "i", "**": "b", "__": "b", "~~": "s"}


class _MarkedText(PieceText):
    """An inline block as one marked segment: paired syntax (emphasis, links, inline HTML) as
    tags around their words, the rest of the syntax as void tags, all kept verbatim."""

    def __init__(self, pieces: list[Piece]):
        super().__init__([])
        self.syntax: dict[int, tuple[str, str]] = {}  # tag id -> (its opening text, its closing text)
        partner = _pair_syntax(pieces)
        view: list[str] = []
        open_ids: dict[int, int] = {}  # piece index of an opening -> its tag id
        for k, piece in enumerate(pieces):
            if piece.translate:
                view.append(self._protect(piece.text))
                continue
            if k in partner and partner[k] > k:
                id_ = len(self.syntax) + 1
                self.syntax[id_] = (piece.text, pieces[partner[k]].text)
                open_ids[k] = id_
                view.append(markup.open_tag(_tag_name(piece), id_))
            elif k in partner:
                id_ = open_ids[partner[k]]
                view.append(markup.close_tag(_tag_name(pieces[partner[k]]), id_))
            else:
                view.append(self._void(piece.text))
        self.view = "".join(view)
        self.plain = markup.strip_tags(self.view)

    def _void(self, text: str) -> str:
        id_ = len(self.syntax) + 1
        self.syntax[id_] = (text, "")
        return markup.void_tag("x", id_)

    def _protect(self, text: str) -> str:
        """Text that reads as a tag of ours travels as a void tag."""
        out, position = [], 0
        for literal in markup.TAG.finditer(text):
            out += [text[position:literal.start()], self._void(literal.group())]
            position = literal.end()
        return "".join(out) + text[position:]

    @property
    def segments(self) -> list[str]:
        return [self.view.strip()] if any(c.isalpha() for c in self.plain) else []

    def render(self, translations: list[str], escape=None) -> str:
        if not translations:
            return self.view_as_source(self.view)
        core = translations[0]
        lead = self.view[: len(self.view) - len(self.view.lstrip())]
        trail = self.view[len(self.view.rstrip()):]
        return self.view_as_source(lead + core.strip() + trail, escape)

    def view_as_source(self, view: str, escape=None) -> str:
        out: list[str] = []
        for token in markup.tokens(view):
            if token.kind == "text":
                out.append(escape(self.plain, token.text) if escape else token.text)
            elif token.kind in ("open", "void"):
                out.append(self.syntax.get(token.id, ("", ""))[0])
            else:
                out.append(self.syntax.get(token.id, ("", ""))[1])
        return "".join(out)


def _tag_name(piece: Piece) -> str:
    role = getattr(piece, "role", "void")
    if role == "link-open":
        return "a"
    if role == "emphasis":
        return _EMPHASIS_NAMES.get(piece.text, "b")
    if role == "html":
        name = _HTML_OPEN.match(piece.text)
        tag = name.group(1).lower() if name else "g"
        return {"strong": "b", "em": "i"}.get(tag, tag if re.fullmatch(r"[a-z]{1,5}", tag) else "g")
    return "g"


def _pair_syntax(pieces: list[Piece]) -> dict[int, int]:
    """Which kept pieces open and close one span: emphasis runs of the same marker, a link's head
    and tail, an inline HTML start tag and its end tag. Unpaired ones stay void."""
    partner: dict[int, int] = {}
    stack: list[tuple[int, str]] = []  # (piece index, what closes it)
    for k, piece in enumerate(pieces):
        role = getattr(piece, "role", None)
        if piece.translate or role is None:
            continue
        if role == "emphasis":
            closes = piece.text
            if stack and stack[-1][1] == "emphasis:" + closes:
                opener, _ = stack.pop()
                partner[opener], partner[k] = k, opener
            else:
                stack.append((k, "emphasis:" + closes))
        elif role == "link-open":
            stack.append((k, "link"))
        elif role == "link-close":
            if stack and stack[-1][1] == "link":
                opener, _ = stack.pop()
                partner[opener], partner[k] = k, opener
        elif role == "html":
            opening, closing = _HTML_OPEN.match(piece.text), _HTML_CLOSE.match(piece.text)
            if opening and not piece.text.endswith("/>"):
                stack.append((k, "html:" + opening.group(1).lower()))
            elif closing and stack and stack[-1][1] == "html:" + closing.group(1).lower():
                opener, _ = stack.pop()
                partner[opener], partner[k] = k, opener
    return partner


def _merge(pieces: list[Piece]) -> list[Piece]:
    merged: list[Piece] = []
    for piece in pieces:
        if not piece.text:
            continue
        if merged and merged[-1].translate == piece.translate:
            merged[-1] = Piece(merged[-1].text + piece.text, piece.translate)
        else:
            merged.append(piece)
    return merged


def _escaper(source: str, translation: str) -> str:
    """Backslash-escape syntax characters the translation brought in, and keep it on one line."""
    translation = " ".join(translation.split("\n"))
    for char in _ESCAPE_IF_NEW:
        if char in translation and char not in source:
            translation = translation.replace(char, "\\" + char)
    return translation


def _table_escaper(source: str, translation: str) -> str:
    translation = _escaper(source, translation)
    return re.sub(r"(?<!\\)\|", r"\\|", translation)
