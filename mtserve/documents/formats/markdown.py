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

import bisect
import re
import string
from dataclasses import dataclass
from typing import Callable

from markdown_it import MarkdownIt

from mtserve.documents.formats.base import Decoded, Document, LimitExceeded, Output, Piece, PieceText, decode_text
from mtserve.documents.formats.limits import budget, check_markup
from mtserve.text import markup
from mtserve.text.html import parse_html
from mtserve.text.segment import is_cjk


def _block_budget(state, start_line: int, end_line: int, silent: bool) -> bool:
    """A block rule that matches nothing and stops the parse once it has made too many tokens.

    markdown-it builds every token before returning, ~1 KB each: a few MB of "a\n\n" would be
    gigabytes. This rule runs at every block it tries, so the parse stops early instead.
    """
    cap = _token_cap()
    if len(state.tokens) > cap:
        raise LimitExceeded(f"the .md file has more than {cap:,} blocks; the limit is "
                            f"{_TOKENS_PER_SEGMENT} a segment (MTSERVE_FILES_MAX_SEGMENTS), or "
                            f"{_TOKENS_WITHOUT_CAP:,} with no segment limit")
    return False


_TOKENS_PER_SEGMENT = 20  # a paragraph is 3 tokens; lists, quotes and tables add a few more
_TOKENS_WITHOUT_CAP = 2_000_000


def _token_cap() -> int:
    segments = budget().limits.max_segments
    return _TOKENS_WITHOUT_CAP if segments is None else max(1000, segments * _TOKENS_PER_SEGMENT)


# Only the block level: the readers cut inline text themselves (token.content), so markdown-it's
# inline tokens, dozens per paragraph, are never built.
_PARSER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).disable("inline")
_PARSER.block.ruler.before("table", "mtserve_budget", _block_budget)

_HARD_BREAK = "\ue000"  # stands for a hard line break while a paragraph is scanned as one string
_ASCII_PUNCTUATION = set(string.punctuation)
_AUTOLINK = re.compile(
    r"<(?:[A-Za-z][A-Za-z0-9+.\-]{1,31}:[^<>\s]*"
    r"|[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*)>"
)
# A bare URL ends where emphasis or CJK punctuation begins: **http://host:8000**。 is bold, then 。
_BARE_URL = re.compile(r"(?:https?://|www\.)[^\s<>*~\u3000-\u303f\uff00-\uffef]*"
                       r"[^\s<>.,;:!?'\")\]*_~\u3000-\u303f\uff00-\uffef]")
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
    # markdown-it walks every character and keeps five numbers a line before it makes a token.
    lines_cap = _token_cap()
    if text.count("\n") > lines_cap:
        raise LimitExceeded(f"the .md file has more than {lines_cap:,} lines; the limit is "
                            f"{_TOKENS_PER_SEGMENT} a segment (MTSERVE_FILES_MAX_SEGMENTS), or "
                            f"{_TOKENS_WITHOUT_CAP:,} with no segment limit")
    check_markup(text, "the .md file", equals=False)  # its HTML blocks and inline tags
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
        elif body.endswith("  "):  # not re.search(" {2,}$"): quadratic on a long run of spaces
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
_CLOSERS = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"))  # inline HTML that runs to a closer
_DECLARATION = re.compile(r"<![A-Za-z]")
_HTML_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_PLAIN = re.compile(r"[^\\`<\[!*~_hw\ue000]+")  # characters that start no inline syntax
_BACKTICKS = re.compile(r"`+")
_MAX_LABEL = 999  # a link label's length, at most (CommonMark 0.31, 4.7)
_MAX_PARENS = 32  # nested parentheses in a link target, as markdown-it allows


def _scan(s: str, references: set[str]) -> list[Piece]:
    """Cut inline Markdown into text to translate and syntax to keep."""
    return _Scanner(s, references).scan(0, len(s), 0)


class _Scanner:
    """One paragraph's inline text, scanned in time linear in its length.

    Every search that can fail (a closing backtick run, ``-->``, a matching bracket) is
    remembered, so that a thousand unclosed openers cost one scan each, not one scan of the rest
    of the text each: a small upload full of ``<!--`` or ``[`` took minutes before.
    """

    def __init__(self, s: str, references: set[str]):
        self.s = s
        self.references = references
        self.found: dict[str, tuple[int, int]] = {}  # needle -> (searched from, found at or -1)
        self.brackets: dict[int, int] = {}  # "[" position -> its "]" (or -1)
        self.runs: dict[int, list[int]] | None = None  # backtick run length -> where such runs start

    def find(self, needle: str, start: int) -> int:
        """``s.find(needle, start)``, remembered: the first one at or after an earlier start still is."""
        cached = self.found.get(needle)
        if cached is not None and cached[0] <= start and (cached[1] < 0 or cached[1] >= start):
            return cached[1]
        at = self.s.find(needle, start)
        self.found[needle] = (start, at)
        return at

    def ticks(self, width: int, start: int) -> int:
        """Where the first run of exactly ``width`` backticks at or after ``start`` ends, or -1.

        Every run is found once, by length: a search per width was a scan of the rest of the text
        for each of a thousand distinct unclosed runs.
        """
        if self.runs is None:
            self.runs = {}
            for run in _BACKTICKS.finditer(self.s):
                self.runs.setdefault(len(run.group()), []).append(run.start())
        starts = self.runs.get(width, [])
        at = bisect.bisect_left(starts, start)
        return starts[at] + width if at < len(starts) else -1

    def scan(self, start: int, end: int, depth: int) -> list[Piece]:
        s = self.s
        out: list[Piece] = []
        buffer: list[str] = []

        def keep(text: str, role: str = "void") -> None:
            if buffer:
                out.append(Piece("".join(buffer), True))
                buffer.clear()
            out.append(_Kept(text, False, role))

        i = start
        while i < end:
            c = s[i]
            if c == _HARD_BREAK:
                keep(c)
                i += 1
            elif c == "\\" and i + 1 < end and s[i + 1] in _ASCII_PUNCTUATION:
                keep(s[i:i + 2])
                i += 2
            elif c == "`":
                stop = self.code_span_end(i, end)
                keep(s[i:stop], "code")
                i = stop
            elif c == "<" and (stop := self.autolink_or_html(i, end)) > i:
                keep(s[i:stop], "void" if _AUTOLINK.match(s, i, end) else "html")
                i = stop
            elif c == "[" or s.startswith("![", i):
                opener = 2 if c == "!" else 1
                link = self.link(i, opener, end)
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
                    budget().check_depth(depth + 1, "a Markdown link")
                    out.extend(self.scan(label[0], label[1], depth + 1))
                keep(tail, "link-close" if label is not None else "void")
            elif c in "*~_":
                run = i
                while run < end and s[run] == c:
                    run += 1
                if c == "~" and run - i < 2 or c == "_" and self.intraword(i, run, end):
                    buffer.append(s[i:run])
                else:
                    keep(s[i:run], "emphasis")
                i = run
            elif (c in "hw") and (i == 0 or not s[i - 1].isalnum()) and (m := _BARE_URL.match(s, i, end)):
                keep(m.group(), "code")  # a bare URL travels as words of the sentence, kept as written
                i = m.end()
            elif plain := _PLAIN.match(s, i, end):  # a run of text with no syntax in it, in one step
                buffer.append(plain.group())
                i = plain.end()
            else:
                buffer.append(c)
                i += 1
        if buffer:
            out.append(Piece("".join(buffer), True))
        return out

    def intraword(self, i: int, run: int, end: int) -> bool:
        return i > 0 and self.s[i - 1].isalnum() and run < end and self.s[run].isalnum()

    def code_span_end(self, i: int, end: int) -> int:
        """End of the code span opening at ``i``, or of the lone backtick run if it never closes."""
        run = i
        while run < end and self.s[run] == "`":
            run += 1
        closing = self.ticks(run - i, run)
        return closing if 0 <= closing <= end else run

    def autolink_or_html(self, i: int, end: int) -> int:
        """Where the autolink or inline HTML at ``i`` ends, or ``i`` if there is none."""
        s = self.s
        if m := _AUTOLINK.match(s, i, end):
            return m.end()
        for opener, closer in _CLOSERS:
            if s.startswith(opener, i):
                at = self.find(closer, i + len(opener))
                return at + len(closer) if 0 <= at and at + len(closer) <= end else i
        if _DECLARATION.match(s, i, end):
            at = self.find(">", i + 3)
            return at + 1 if 0 <= at < end else i
        if m := _HTML_TAG.match(s, i, end):
            return m.end()
        return i

    def matching_bracket(self, i: int, end: int) -> int:
        """The "]" that closes the "[" at ``i`` (before ``end``), or -1.

        One pass from ``i`` finds the match of every bracket it meets, and the pass from any of
        them would find the same (the scan has no state but its position and depth): all are kept.
        """
        if i not in self.brackets:
            s, n, k = self.s, len(self.s), i
            open_at: list[int] = []
            while k < n:
                c = s[k]
                if c == "\\":
                    k += 2
                    continue
                if c == "`":
                    k = self.code_span_end(k, n)
                    continue
                if c == "[":
                    if k in self.brackets:  # met before: jump over what it spans
                        close = self.brackets[k]
                        if close < 0:
                            break
                        if open_at:
                            k = close + 1
                            continue
                    open_at.append(k)
                elif c == "]" and open_at:
                    self.brackets[open_at.pop()] = k
                    if not open_at:
                        break
                k += 1
            for unmatched in open_at:
                self.brackets[unmatched] = -1
        close = self.brackets[i]
        return close if close < end else -1

    def matching_paren(self, i: int, end: int) -> int:
        """The ")" that closes a link target opening at ``i``, or -1 (past 32 nested parentheses too)."""
        s = self.s
        depth, quote = 0, None
        k = i
        while k < end:
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
                if depth > _MAX_PARENS:
                    return -1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return k
            k += 1
        return -1

    def link(self, i: int, opener: int, end: int) -> tuple[str, tuple[int, int] | None, str, int] | None:
        """(kept head, translatable label span or None, kept tail, where scanning resumes) for a link or
        image at ``i``."""
        s = self.s
        close = self.matching_bracket(i + opener - 1, end)
        if close < 0:
            return None
        label = (i + opener, close)
        after = close + 1
        if after < end and s[after] == "(":
            stop = self.matching_paren(after, end)
            if stop >= 0:
                return s[i:i + opener], label, s[close:stop + 1], stop + 1
        if after < end and s[after] == "[":
            stop = s.find("]", after + 1, end)
            if stop >= 0:
                if stop == after + 1:  # [label][]: the label is the reference; keep it all
                    return s[i:stop + 1], None, "", stop + 1
                return s[i:i + opener], label, s[close:stop + 1], stop + 1
        if label[1] - label[0] <= _MAX_LABEL and _normalise_label(s[label[0]:label[1]]) in self.references:
            # [label]: a shortcut reference (never longer than 999 characters, CommonMark says)
            return s[i:close + 1], None, "", close + 1
        return None


def _normalise_label(label: str) -> str:
    return " ".join(label.split()).upper()


@dataclass
class _Kept(Piece):
    """Syntax kept verbatim, and what it is: "emphasis", "link-open", "link-close", "html", "code", "void"."""

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
        self.kept: set[int] = set()  # code spans: the engine sees their words, the output keeps the span
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
            elif getattr(piece, "role", "") == "code" and (words := _code_words(piece.text)):
                id_ = len(self.syntax) + 1
                self.syntax[id_] = (piece.text, "")
                self.kept.add(id_)
                view.append(markup.open_tag("code", id_) + words + markup.close_tag("code", id_))
            else:
                view.append(self._void(piece.text))
        self.view = "".join(view)
        self.plain = markup.strip_tags(self.view)
        self.prose = "".join(piece.text for piece in pieces if piece.translate)

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
        return [self.view.strip()] if any(c.isalpha() for c in self.prose) else []

    def render(self, translations: list[str], escape=None) -> str:
        if not translations:
            return self.view_as_source(self.view)
        core = translations[0]
        lead = self.view[: len(self.view) - len(self.view.lstrip())]
        trail = self.view[len(self.view.rstrip()):]
        return self.view_as_source(lead + core.strip() + trail, escape)

    def view_as_source(self, view: str, escape=None) -> str:
        out: list[str] = []
        inside_kept: list[int] = []
        for token in markup.tokens(view):
            if token.kind == "text":
                if not inside_kept:  # a code span's words are its own, not the engine's
                    out.append(escape(self.plain, token.text) if escape else token.text)
            elif token.id in self.kept:
                if token.kind == "open":
                    inside_kept.append(token.id)
                    out.append(self.syntax[token.id][0])
                elif token.id in inside_kept:
                    inside_kept.remove(token.id)
            elif token.kind in ("open", "void"):
                out.append(self.syntax.get(token.id, ("", ""))[0])
            else:
                out.append(self.syntax.get(token.id, ("", ""))[1])
        return "".join(out)


def _code_words(span: str) -> str:
    """The words of a code span or bare URL that the sentence can carry ("run `make run` to start"): its content,
    one line of ASCII (a command, a name, a value); "" where it holds anything that reads as a tag of ours."""
    ticks = len(span) - len(span.lstrip("`"))
    inner = span[ticks:len(span) - ticks] if span.endswith("`" * ticks) and len(span) > 2 * ticks else ""
    if inner.startswith(" ") and inner.endswith(" ") and inner.strip():
        inner = inner[1:-1]
    if not inner.strip() or not inner.isascii() or "\n" in inner or len(inner) > 200 or "<" in inner \
            or markup.TAG.search(inner):
        return ""
    return inner


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
    """Neighbouring pieces of the same kind as one (joined once: there may be thousands in a row)."""
    runs: list[tuple[bool, list[str]]] = []
    for piece in pieces:
        if not piece.text:
            continue
        if runs and runs[-1][0] == piece.translate:
            runs[-1][1].append(piece.text)
        else:
            runs.append((piece.translate, [piece.text]))
    return [Piece("".join(texts), translate) for translate, texts in runs]


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
