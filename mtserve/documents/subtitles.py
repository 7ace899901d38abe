"""Subtitles: SubRip (.srt) and WebVTT (.vtt).

Numbering, cue identifiers, timings, cue settings, NOTE/STYLE/REGION blocks and
blank lines are copied exactly. A cue's text lines are translated together (a
sentence often runs over two lines) and wrapped back into two lines when the
source had two and the translation is long; dialogue cues ("- Hi.\\n- Hello.")
keep one line per speaker. Tags (<i>, <v Name>, {\\an8}) are kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtserve.documents.base import (
    Decoded,
    Document,
    DocumentError,
    Output,
    PieceText,
    decode_text,
    protected_split,
)
from mtserve.text.segment import is_cjk

_SRT_TIMING = re.compile(r"^\s*\d{1,3}:\d{2}:\d{2}[,.]\d{1,3}\s*-->\s*\d{1,3}:\d{2}:\d{2}[,.]\d{1,3}")
_VTT_TIMING = re.compile(r"^\s*(?:\d{1,3}:)?\d{2}:\d{2}\.\d{3}\s+-->\s+(?:\d{1,3}:)?\d{2}:\d{2}\.\d{3}")
_KEPT = re.compile(r"<[^<>\n]*>|\{\\[^{}\n]*\}|^\s*-\s*")  # tags, and a speaker dash
_WRAP_AT = 42  # characters per subtitle line, the usual broadcast limit


@dataclass
class _Cue:
    start: int  # first text line
    end: int  # past the last text line
    texts: list[PieceText]  # one per output line group: the whole cue, or one per speaker
    wrap: bool  # re-wrap into two lines


class SubtitleDocument(Document):
    def __init__(self, kind: str, decoded: Decoded, lines: list[str], cues: list[_Cue]):
        self.decoded = decoded
        self.lines = lines
        self.cues = cues
        segments = [s for cue in cues for text in cue.texts for s in text.segments]
        super().__init__(kind, segments, notes=[
            "Numbering, timings and cue settings are kept exactly.",
            "Each cue's lines are translated together and wrapped into at most two lines.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        out: list[str] = []
        position, at = 0, 0
        for cue in self.cues:
            out.extend(self.lines[position:cue.start])
            for text in cue.texts:
                n = len(text.segments)
                rendered = text.render([" ".join(t.split()) for t in translations[at:at + n]])
                at += n
                out.extend(_wrap(rendered) if cue.wrap else [rendered])
            position = cue.end
        out.extend(self.lines[position:])
        extension = "vtt" if self.format == "vtt" else "srt"
        media = "text/vtt" if extension == "vtt" else "application/x-subrip"
        return Output(self.decoded.encode("\n".join(out)), extension, f"{media}; charset=utf-8")


def read_srt(data: bytes) -> SubtitleDocument:
    return _read(data, "srt", _SRT_TIMING)


def read_vtt(data: bytes) -> SubtitleDocument:
    decoded = decode_text(data, ".vtt")
    if not decoded.text.lstrip("\ufeff").startswith("WEBVTT"):
        raise DocumentError("could not read the .vtt file: a WebVTT file starts with the line WEBVTT")
    return _read(data, "vtt", _VTT_TIMING, decoded)


def _read(data: bytes, kind: str, timing: re.Pattern[str],
          decoded: Decoded | None = None) -> SubtitleDocument:
    decoded = decoded or decode_text(data, f".{kind}")
    lines = decoded.text.split("\n")
    cues: list[_Cue] = []
    i = 0
    while i < len(lines):
        if not timing.match(lines[i]):
            i += 1
            continue
        start = end = i + 1
        while end < len(lines) and lines[end].strip():
            end += 1
        if end > start:
            cues.append(_cue(lines, start, end))
        i = end
    if not cues:
        raise DocumentError(f"could not read the .{kind} file: it has no cues (lines like "
                            f"'00:00:01{',' if kind == 'srt' else '.'}000 --> 00:00:02"
                            f"{',' if kind == 'srt' else '.'}000' followed by text)")
    return SubtitleDocument(kind, decoded, lines, cues)


def _cue(lines: list[str], start: int, end: int) -> _Cue:
    text_lines = lines[start:end]
    if len(text_lines) > 1 and all(line.lstrip().startswith("-") for line in text_lines):
        return _Cue(start, end, [PieceText(protected_split(line, _KEPT)) for line in text_lines], wrap=False)
    joined = text_lines[0].strip()
    for line in text_lines[1:]:
        line = line.strip()
        glue = "" if joined and line and is_cjk(joined[-1]) and is_cjk(line[0]) else " "
        joined += glue + line
    return _Cue(start, end, [PieceText(protected_split(joined, _KEPT))], wrap=len(text_lines) > 1)


def _wrap(text: str) -> list[str]:
    """Two lines broken at the space nearest the middle (outside tags), if the text is long."""
    if len(text) <= _WRAP_AT:
        return [text]
    spaces, depth = [], 0
    for i, char in enumerate(text):
        if char in "<{":
            depth += 1
        elif char in ">}":
            depth = max(0, depth - 1)
        elif char == " " and depth == 0:
            spaces.append(i)
    if not spaces:
        return [text]
    middle = len(text) / 2
    cut = min(spaces, key=lambda i: abs(i - middle))
    return [text[:cut], text[cut + 1:]]
