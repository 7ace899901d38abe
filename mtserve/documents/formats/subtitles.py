"""Subtitles: SubRip (.srt) and WebVTT (.vtt).

Numbering, cue identifiers, timings, cue settings, NOTE/STYLE/REGION blocks and
blank lines are copied exactly. A cue's text lines are translated together (a
sentence often runs over two lines) and wrapped back into two lines when the
source had two and the translation is long; dialogue cues ("- Hi.\\n- Hello.")
keep one line per speaker. Tags (<i>, <v Name>, {\\an8}) are kept.

Consecutive cues are translated together, as a passage of up to three cues
(``_passages``): a sentence that runs on into the next cue (the cue ends without a
full stop, question or exclamation mark) is translated whole, and so are the
sentences around it, unless a pause of two seconds comes between. Halves
translated apart lose their order and grammar ("When he got to the airport," +
"the plane had taken off."), and a cue alone loses the subject or tense that the
one before gave it. The passage's translation is shared out among its cues in
the proportion of their source text, cut where the translation pauses
(``share_out``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mtserve.documents.formats.base import (
    Decoded,
    Document,
    DocumentError,
    Output,
    PieceText,
    decode_text,
    protected_split,
)
from mtserve.documents.formats.share import join_lines, runs_on, share_out

_SRT_TIMING = re.compile(r"^\s*\d{1,3}:\d{2}:\d{2}[,.]\d{1,3}\s*-->\s*\d{1,3}:\d{2}:\d{2}[,.]\d{1,3}")
_VTT_TIMING = re.compile(r"^\s*(?:\d{1,3}:)?\d{2}:\d{2}\.\d{3}\s+-->\s+(?:\d{1,3}:)?\d{2}:\d{2}\.\d{3}")
_KEPT = re.compile(r"<[^<>\n]*>|\{\\[^{}\n]*\}|^\s*-\s*")  # tags, and a speaker dash
_WRAP_AT = 42  # characters per subtitle line, the usual broadcast limit
# Consecutive cues go to the service as one text (a passage) of at most this many cues and characters,
# the service's default segment budget: speech that runs on is longer than a sentence of it, and a
# pronoun or a tense it leaves out is in the cue before (QUALITY.md, "Subtitles").
_PASSAGE_CUES = 3
_PASSAGE_CHARS = 200
# A cue that ends its sentence starts a new passage after a pause of this long: a new scene, or a new
# exchange. A judgement, not a measurement: the eval's cues have no pauses.
_PASSAGE_PAUSE_S = 2.0


@dataclass
class _Cue:
    start: int  # first text line
    end: int  # past the last text line
    texts: list[PieceText]  # one per output line group: the whole cue, or one per speaker
    wrap: bool  # re-wrap into two lines
    start_s: float | None = None  # its timing, where it reads
    end_s: float | None = None


class SubtitleDocument(Document):
    def __init__(self, kind: str, decoded: Decoded, lines: list[str], cues: list[_Cue]):
        self.decoded = decoded
        self.lines = lines
        self.cues = cues
        self.passages = _passages(cues)  # each a run of cues translated as one text
        segments: list[str] = []
        for run in self.passages:
            if len(run) > 1:
                segments.append(join_lines([cues[i].texts[0].segments[0] for i in run]))
            else:
                segments += [s for text in cues[run[0]].texts for s in text.segments]
        super().__init__(kind, segments, notes=[
            "Numbering, timings and cue settings are kept exactly.",
            "Each cue's lines are translated together and wrapped into at most two lines.",
            "Consecutive cues are translated together (a sentence over several cues whole) and the "
            "translation is shared out among them.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        out: list[str] = []
        position = 0
        for cue, texts in zip(self.cues, self._per_cue(translations)):
            out.extend(self.lines[position:cue.start])
            for text, translated in zip(cue.texts, texts):
                rendered = text.render([" ".join(t.split()) for t in translated])
                out.extend(_wrap(rendered) if cue.wrap else [rendered])
            position = cue.end
        out.extend(self.lines[position:])
        extension = "vtt" if self.format == "vtt" else "srt"
        media = "text/vtt" if extension == "vtt" else "application/x-subrip"
        return Output(self.decoded.encode("\n".join(out)), extension, f"{media}; charset=utf-8")

    def _per_cue(self, translations: list[str]) -> list[list[list[str]]]:
        """For each cue, the translations of each of its texts: a passage's translation shared out."""
        per_cue: list[list[list[str]]] = []
        at = 0
        for run in self.passages:
            if len(run) > 1:
                shares = share_out(translations[at], [self.cues[i].texts[0].segments[0] for i in run])
                per_cue += [[[share]] for share in shares]
                at += 1
                continue
            texts = []
            for text in self.cues[run[0]].texts:
                texts.append(translations[at:at + len(text.segments)])
                at += len(text.segments)
            per_cue.append(texts)
        return per_cue


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
            cues.append(_cue(lines, start, end, _seconds(lines[i])))
        i = end
    if not cues:
        raise DocumentError(f"could not read the .{kind} file: it has no cues (lines like "
                            f"'00:00:01{',' if kind == 'srt' else '.'}000 --> 00:00:02"
                            f"{',' if kind == 'srt' else '.'}000' followed by text)")
    return SubtitleDocument(kind, decoded, lines, cues)


def _cue(lines: list[str], start: int, end: int, timing: tuple[float, float] | None) -> _Cue:
    text_lines = lines[start:end]
    start_s, end_s = timing or (None, None)
    if len(text_lines) > 1 and all(line.lstrip().startswith("-") for line in text_lines):
        return _Cue(start, end, [PieceText(protected_split(line, _KEPT)) for line in text_lines], False,
                    start_s, end_s)
    joined = join_lines([line.strip() for line in text_lines])
    return _Cue(start, end, [PieceText(protected_split(joined, _KEPT))], len(text_lines) > 1, start_s, end_s)


_TIME = re.compile(r"(?:(\d{1,3}):)?(\d{2}):(\d{2})[,.](\d{1,3})")


def _seconds(timing: str) -> tuple[float, float] | None:
    """(start, end) of a timing line in seconds."""
    found = _TIME.findall(timing)
    if len(found) < 2:
        return None
    return tuple(int(h or 0) * 3600 + int(m) * 60 + int(s) + int(ms.ljust(3, "0")) / 1000
                 for h, m, s, ms in found[:2])  # type: ignore[return-value]


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


def _passages(cues: list[_Cue]) -> list[list[int]]:
    """The cues in order, consecutive ones put together into passages: a cue whose sentence goes on
    always joins the next, a cue that ends its sentence joins it unless a pause comes between
    (``_PASSAGE_PAUSE_S``), within ``_PASSAGE_CUES`` and ``_PASSAGE_CHARS``. A cue with tags or
    speakers stays alone."""
    runs: list[list[int]] = []
    size = 0
    for i, cue in enumerate(cues):
        text = _plain_text(cue)
        last = runs[-1] if runs else None
        previous = cues[last[-1]] if last else None
        if (text is not None and last is not None and previous is not None and len(last) < _PASSAGE_CUES
                and size + len(text) <= _PASSAGE_CHARS and _goes_on(previous, cue)):
            last.append(i)
            size += len(text)
        else:
            runs.append([i])
            size = len(text) if text is not None else 0
    return runs


def _goes_on(previous: _Cue, cue: _Cue) -> bool:
    """Whether ``cue`` continues the passage that ``previous`` ends."""
    text = _plain_text(previous)
    if text is None:
        return False
    if runs_on(text):
        return True
    if previous.end_s is None or cue.start_s is None:
        return False
    return cue.start_s - previous.end_s < _PASSAGE_PAUSE_S


def _plain_text(cue: _Cue) -> str | None:
    """The cue's one segment, when the cue is nothing else (no tags, no speakers)."""
    if len(cue.texts) != 1 or len(cue.texts[0].pieces) != 1 or len(cue.texts[0].segments) != 1:
        return None
    return cue.texts[0].segments[0]
