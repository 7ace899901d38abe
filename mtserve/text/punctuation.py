"""Segments with nothing to translate: punctuation, numbers, symbols.

Sending "！" or "2024" to an LLM invites it to say something ("Oh!"). Such a
segment is kept as it is, with full-width punctuation mapped to its ASCII form
when the target language writes with spaces.
"""

from __future__ import annotations

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
