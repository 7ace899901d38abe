"""Segments with nothing to translate: punctuation, numbers, symbols.

Sending "！" or "2024" to an LLM invites it to say something ("Oh!"). Such a
segment is kept as it is, with full-width punctuation mapped to its ASCII form
when the target language writes with spaces.
"""

from __future__ import annotations

import re

FULLWIDTH_TO_ASCII = {
    "，": ", ", "、": ", ", "。": ". ", "！": "!", "？": "?", "：": ": ", "；": "; ",
    "（": " (", "）": ") ", "“": '"', "”": '"', "‘": "'", "’": "'", "「": '"', "」": '"',
    "『": '"', "』": '"', "【": "[", "】": "]", "《": '"', "》": '"', "…": "...", "～": "~",
    "—": "-", "·": " ",
}
UNSPACED_TARGETS = ("zh", "zt", "ja")


def has_words(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def passthrough(segment: str, target: str) -> str:
    """The output for a segment without words."""
    if target in UNSPACED_TARGETS:
        return segment
    mapped = "".join(FULLWIDTH_TO_ASCII.get(ch, ch) for ch in segment)
    return mapped.strip() if mapped.strip() else mapped


# --- a key for matching: one form for the widths and spacings of the same text -------------------
_MATCH_PUNCTUATION = {ch: ascii_form.strip() or " " for ch, ascii_form in FULLWIDTH_TO_ASCII.items()}
_SPACED_LETTER = "A-Za-z0-9\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF"
_LOOSE_SPACE = re.compile(f"(?<![{_SPACED_LETTER}]) | (?![{_SPACED_LETTER}])")


def _narrow(ch: str) -> str:
    code = ord(ch)
    if 0xFF01 <= code <= 0xFF5E:  # full-width ASCII forms: ＡＢＣ１２３！
        return chr(code - 0xFEE0)
    if code == 0x3000:  # the ideographic space
        return " "
    return _MATCH_PUNCTUATION.get(ch, ch)


def match_key(text: str) -> str:
    """``text`` with punctuation in one width and spaces only where they separate words.

    "你好，世界！" and "你好, 世界!" get the same key, as do "Ｗｉ－Ｆｉ  设置" and
    "Wi-Fi设置"; a space between two Latin, Greek or Cyrillic words stays, so
    "log in" and "login" do not. Letters keep their case. For translation
    memory lookups, never for output.
    """
    narrowed = "".join(_narrow(ch) for ch in text)
    return _LOOSE_SPACE.sub("", " ".join(narrowed.split()))
