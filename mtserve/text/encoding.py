"""Mojibake: UTF-8 text that a client decoded as Latin-1 or cp1252 before sending it.

A common client bug turns 你好世界 into "ä½\xa0å¥½ä¸\x96ç\x95\x8c". Sent to the model
as it is, that is "translated" into chatter about a German text. ftfy recognises
the pattern (and leaves real accented text such as "Crème brûlée" alone), so
the service repairs it before detecting the language or translating.
"""

from __future__ import annotations

import ftfy

# Characters that UTF-8 read as Latin-1/cp1252 produces: a lead byte's letter (Ã, Â, ä, å, æ, ç,
# è, é...) followed by a continuation byte's (\x80-\xbf as Latin-1 or their cp1252 forms).
_LEADS = frozenset("ÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖ×ØÙÚÛÜÝÞßàáâãäåæçèéêëìíîïðñòóôõö")
_CONTINUATIONS = frozenset([chr(code) for code in range(0x80, 0xC0)] + list("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ"))


def looks_mojibaked(text: str) -> bool:
    """A cheap first look (two set scans in C), so ftfy runs only on text that may need it."""
    return not _LEADS.isdisjoint(text) and not _CONTINUATIONS.isdisjoint(text)


def repair_mojibake(text: str) -> str:
    """``text`` with its mojibake undone, or ``text`` itself when there is none."""
    if not looks_mojibaked(text):
        return text
    return ftfy.fix_encoding(text)
