"""``mtserve eval --as-subtitles`` and ``--as-wrapped-text WIDTH``: each pair sent as a file.

A subtitler cuts speech where the speaker pauses: after a sentence and, inside a long one,
after a comma. A plain-text writer wraps a paragraph at the margin, wherever it falls. So a
pair's source becomes an .srt with one cue per such piece, or a .txt wrapped at WIDTH columns,
goes through the file path a user's file takes (``mtserve.documents``: the reader, the runner,
the format's context), and the translated cues or lines, joined, are scored against the pair's
reference. It measures what the file path does to sentences that a file's layout breaks up.
"""

from __future__ import annotations

import re

from mtserve.documents.formats.share import columns, join_lines
from mtserve.eval.targets import EvalTarget, MemoryUse, TargetError
from mtserve.text.segment import is_cjk, split_text

CJK = ("zh", "zt", "ja")

# Where a subtitler cuts inside a sentence: after a comma, a semicolon or a colon (a Latin one before a
# space: not inside 10:30 or 1,000).
_PAUSE = re.compile(r"(?<=[，；：])\s*|(?<=[,;:])\s+")
_TIMING = re.compile(r"^\d{2}:\d{2}:\d{2},\d{3} --> \d{2}:\d{2}:\d{2},\d{3}$")


def cues_of(text: str, lang: str) -> list[str]:
    """The cues a subtitler would make of ``text``: its sentences, each cut after its pauses."""
    cues: list[str] = []
    for piece in split_text(text, lang, max_chars=max(1, len(text)), budget=0):
        if piece.translate:
            cues += [part.strip() for part in _PAUSE.split(piece.text) if part.strip()]
    return cues


def as_srt(cues: list[str]) -> bytes:
    """An .srt with ``cues`` two seconds each, one after another."""
    def at(seconds: int) -> str:
        return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d},000"

    blocks = [f"{n}\n{at(2 * n - 2)} --> {at(2 * n)}\n{cue}\n" for n, cue in enumerate(cues, 1)]
    return "\n".join(blocks).encode("utf-8")


def cue_texts(srt: bytes) -> list[str]:
    """The text of each cue of an .srt, its lines joined."""
    texts: list[str] = []
    lines = srt.decode("utf-8").split("\n")
    for i, line in enumerate(lines):
        if _TIMING.match(line.strip()):
            body = []
            for text in lines[i + 1:]:
                if not text.strip():
                    break
                body.append(text.strip())
            texts.append(" ".join(body))
    return texts


def wrap_lines(text: str, width: int) -> list[str]:
    """``text`` hard-wrapped at ``width`` display columns (a CJK character is two), as an editor wraps
    it: between words, and between CJK characters; a line does not start with a punctuation mark."""
    lines: list[str] = []
    line, used = "", 0
    for token in re.findall(r"\S+\s*", text):
        pieces = list(token) if any(is_cjk(char) for char in token) else [token]
        for piece in pieces:
            size = columns(piece.rstrip())
            if line.strip() and used + size > width and piece.strip() not in _NO_LINE_START:
                lines.append(line.rstrip())
                line, used = "", 0
            line += piece
            used += size + len(piece) - len(piece.rstrip())
    if line.strip():
        lines.append(line.rstrip())
    return lines


_NO_LINE_START = set("，。、；：！？）」』》”’…,.;:!?")


def join_cues(texts: list[str], lang: str) -> str:
    """The cues or lines as one text, as a reader takes them in: CJK runs on in a CJK language."""
    texts = [text for text in texts if text]
    if not texts:
        return ""
    return join_lines(texts) if lang in CJK else " ".join(texts)


class FileTarget:
    """A target whose every pair is translated as a file (in process only): the cues of an .srt, or
    the lines of a .txt wrapped at ``width`` columns."""

    def __init__(self, inner: EvalTarget, kind: str = "srt", width: int = 0):
        if not hasattr(inner, "translate_document"):
            raise TargetError("--as-subtitles and --as-wrapped-text work in process only: they send each pair "
                              "through the file path of this process's service")
        self.inner, self.kind, self.width = inner, kind, width
        self.concurrency = inner.concurrency
        self.pieces = 0
        self.pairs = 0

    async def start(self) -> None:
        await self.inner.start()

    async def warm(self, source: str, target: str, context: str = "") -> None:
        await self.inner.warm(source, target, context)

    async def translate(self, text: str, source: str, target: str, context: str = "") -> str:
        self.pairs += 1
        if self.kind == "srt":
            cues = cues_of(text, source)
            self.pieces += len(cues)
            translated = await self.inner.translate_document(as_srt(cues), "pair.srt", source, target, context)
            return join_cues(cue_texts(translated), target)
        lines = wrap_lines(text, self.width)
        self.pieces += len(lines)
        data = ("\n".join(lines) + "\n").encode("utf-8")
        translated = await self.inner.translate_document(data, "pair.txt", source, target, context)
        return join_cues([line.strip() for line in translated.decode("utf-8").split("\n")], target)

    def describe(self) -> dict:
        shape = (f"subtitles ({self.pieces} cues for {self.pairs} pairs)" if self.kind == "srt" else
                 f"text wrapped at {self.width} columns ({self.pieces} lines for {self.pairs} pairs)")
        return {**self.inner.describe(), "as": shape}

    def counters(self) -> dict[str, float]:
        return self.inner.counters()

    def variants(self, text: str, source: str, target: str, context: str = "") -> dict[str, str]:
        return {}

    def memory_use(self, text: str) -> MemoryUse | None:
        return None

    async def stop(self) -> None:
        await self.inner.stop()
