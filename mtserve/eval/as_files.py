"""``mtserve eval --as-subtitles``: each pair's source sent as the cues of a subtitle file.

A subtitler cuts speech where the speaker pauses: after a sentence and, inside a long one,
after a comma. So a pair's source becomes an .srt with one cue per such piece, goes through
the file path a user's .srt takes (``mtserve.documents``: the reader, the runner, the format's
context), and the translated cues, joined, are scored against the pair's reference. It
measures what the file path does to sentences that subtitles break up.
"""

from __future__ import annotations

import re

from mtserve.eval.targets import EvalTarget, MemoryUse, TargetError
from mtserve.text.segment import is_cjk, split_text

# Where a subtitler cuts inside a sentence: after a comma, a semicolon or a colon.
_PAUSE = re.compile(r"(?<=[，；：,;:])\s*")
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


def join_cues(texts: list[str], lang: str) -> str:
    """The cues as one text, as a reader of the subtitles takes them in."""
    out = ""
    for text in texts:
        if not text:
            continue
        glue = "" if not out or (lang in ("zh", "zt", "ja") and is_cjk(out[-1]) and is_cjk(text[0])) else " "
        out += glue + text
    return out


class SubtitleTarget:
    """A target whose every pair is translated as the cues of an .srt (in process only)."""

    def __init__(self, inner: EvalTarget):
        if not hasattr(inner, "translate_document"):
            raise TargetError("--as-subtitles works in process only: it sends each pair through the "
                              "file path of this process's service")
        self.inner = inner
        self.concurrency = inner.concurrency
        self.cues = 0
        self.pairs = 0

    async def start(self) -> None:
        await self.inner.start()

    async def warm(self, source: str, target: str, context: str = "") -> None:
        await self.inner.warm(source, target, context)

    async def translate(self, text: str, source: str, target: str, context: str = "") -> str:
        cues = cues_of(text, source)
        self.cues += len(cues)
        self.pairs += 1
        translated = await self.inner.translate_document(as_srt(cues), "pair.srt", source, target, context)
        return join_cues(cue_texts(translated), target)

    def describe(self) -> dict:
        return {**self.inner.describe(), "as": f"subtitles ({self.cues} cues for {self.pairs} pairs)"}

    def counters(self) -> dict[str, float]:
        return self.inner.counters()

    def variants(self, text: str, source: str, target: str, context: str = "") -> dict[str, str]:
        return {}

    def memory_use(self, text: str) -> MemoryUse | None:
        return None

    async def stop(self) -> None:
        await self.inner.stop()
