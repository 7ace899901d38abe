"""ICU MessageFormat: a message's complex arguments (plural, select) taken apart and put back.

The skeleton of ``{count, plural, one {# file} other {# files}}`` is kept; the text of each branch
is translated on its own, and the sentence around it sees the simple argument ``{count}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ICU_START = re.compile(r"\{\s*([\w.]+)\s*,\s*(plural|select|selectordinal)\s*,")
_ICU_SELECTOR = re.compile(r"\s*(offset:\s*\d+\s+)?(=\d+|[\w-]+)\s*\{")
_BRACE = re.compile(r"[{}]")
_CLOSING = re.compile(r"\s*\}")  # what ends an argument after its last branch
ICU_COUNT = "{#}"  # how a branch's "#" travels: as a placeholder, so it must come back


@dataclass
class IcuArgument:
    """``{count, plural, one {# file} other {# files}}``: the skeleton is kept, each branch's text
    is translated, and the sentence around it sees the simple argument ``{count}``."""

    start: int
    end: int
    name: str
    kind: str
    branches: list[tuple[str, str]]  # (what comes before the branch's text, the text)
    closing: str  # what follows the last branch, up to and including the final "}"

    def render(self, texts: list[str]) -> str:
        return "".join(head + text for (head, _), text in zip(self.branches, texts)) + self.closing


def icu_arguments(text: str) -> list[IcuArgument]:
    """The complex arguments of an ICU message, outermost only; a malformed one is not one."""
    found: list[IcuArgument] = []
    position = 0
    closing_brace: dict[int, int] | None = None  # paired once, when the text has an argument's start
    while (start := _ICU_START.search(text, position)) is not None:
        if closing_brace is None:
            closing_brace = _brace_pairs(text)
        argument = _parse_icu(text, start, closing_brace)
        if argument is None:
            position = start.end()
            continue
        found.append(argument)
        position = argument.end
    return found


def _brace_pairs(text: str) -> dict[int, int]:
    """Where each ``{`` of ``text`` that is closed is closed: found in one pass, so that a message of
    thousands of unclosed branches is not scanned to its end once for each."""
    pairs: dict[int, int] = {}
    opened: list[int] = []
    for match in _BRACE.finditer(text):
        if match.group() == "{":
            opened.append(match.start())
        elif opened:
            pairs[opened.pop()] = match.start()
    return pairs


def _parse_icu(text: str, start: re.Match[str], closing_brace: dict[int, int]) -> IcuArgument | None:
    branches: list[tuple[str, str]] = []
    position = start.end()
    head_start = start.start()
    while True:
        selector = _ICU_SELECTOR.match(text, position)
        if selector is None:
            break
        body_start = selector.end()
        body_end = closing_brace.get(body_start - 1)  # the selector ends with the branch's "{"
        if body_end is None:
            return None
        branches.append((text[head_start:body_start], text[body_start:body_end]))
        head_start, position = body_end, body_end + 1
    closing = _CLOSING.match(text, position)
    if not branches or closing is None:
        return None
    end = closing.end()
    return IcuArgument(start.start(), end, start.group(1), start.group(2), branches, text[head_start:end])


def simple_form(text: str, arguments: list[IcuArgument]) -> str:
    """The message with each complex argument as its simple form ``{count}``."""
    out, position = [], 0
    for argument in arguments:
        out += [text[position:argument.start], "{" + argument.name + "}"]
        position = argument.end
    return "".join(out) + text[position:]


def branch_text(text: str) -> str:
    return text.replace("#", ICU_COUNT)


def branch_back(text: str) -> str:
    return text.replace(ICU_COUNT, "#")


def rebuild_icu(simple: str, arguments: list[IcuArgument], branches: list[list[str]]) -> str:
    """The translated message: each ``{name}`` of ``simple`` back as its translated complex argument;
    an argument whose ``{name}`` the translation lost goes at the end."""
    for argument, texts in zip(arguments, branches):
        rendered = argument.render(texts)
        marker = "{" + argument.name + "}"
        simple = simple.replace(marker, rendered, 1) if marker in simple else simple + rendered
    return simple
