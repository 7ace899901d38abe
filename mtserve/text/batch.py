"""Translation-tool batches: several strings in one text, one block each, between separator lines.

Tools that put an LLM behind a translation feature often send many strings in one chat message,
each on its own block of lines, with a line such as ``==PART==``, ``---``, ``### 3 ###`` or
``<<<SEP>>>`` between them, and split the answer at the same lines. So those lines must come
back unchanged, as many as were sent and in the same order, and each block is translated as a
text of its own (a model that sees two strings at once may merge, reorder or drop them).

A separator line is made only of ASCII symbols (three or more: ``---``, ``***``, ``|---|---|``),
or of an identifier or number between runs of two or more symbols (``==PART==``, ``[[1]]``,
``--- PART 2 ---``). Ordinary text must not be taken for a batch, so:

- every separator line of a text has one shape (the same line, its numbers aside), so a
  Markdown page with a ``---`` rule and a ``**Note**`` line is no batch;
- a shape whose identifier holds lowercase letters (``**Note**``, ``==part==``), or whose
  symbols are Markdown emphasis (``**WARNING**``, ``__init__``), counts only when it occurs at
  least twice: once, it is more likely a line of the text than a separator;
- a text with a fenced code block (a line starting with three backticks or tildes) is no batch.

Separator lines hold no words a reader should see translated; a text that is no batch is
translated as it always was (a symbols-only line has no words and passes through anyway).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SYMBOL = r"[!-/:-@\[-`{-~]"  # ASCII punctuation and symbols (underscore included)
_SEPARATOR = re.compile(
    rf"(?P<only>{_SYMBOL}(?:{_SYMBOL}| )*{_SYMBOL}(?:{_SYMBOL}| )*{_SYMBOL})"
    rf"|(?P<open>{_SYMBOL}{{2,}}) ?(?P<name>[A-Za-z0-9_]+(?:[ _-][A-Za-z0-9]+)*) ?(?P<close>{_SYMBOL}{{2,}})"
)
_EMPHASIS = set("*_~")
_FENCE = re.compile(r"^[ \t]*(```|~~~)", re.MULTILINE)
_NUMBER = re.compile(r"\d+")
MAX_SEPARATOR_CHARS = 80


@dataclass(frozen=True)
class Batch:
    """A text cut at its separator lines: ``parts`` alternate blocks and separators, starting and
    ending with a block (maybe empty); ``"".join(parts)`` is the text."""

    parts: list[str]

    @property
    def blocks(self) -> list[str]:
        return self.parts[0::2]

    @property
    def separators(self) -> list[str]:
        return self.parts[1::2]

    def join(self, blocks: list[str]) -> str:
        """The text with each block replaced by its translation, separators as they were."""
        if len(blocks) != len(self.blocks):
            raise ValueError(f"expected {len(self.blocks)} blocks, got {len(blocks)}")
        out = list(self.parts)
        out[0::2] = blocks
        return "".join(out)


def _shape(line: str) -> tuple[str, bool] | None:
    """(the separator's shape, whether one occurrence is enough), or None for a line of text."""
    stripped = line.strip()
    if not stripped or len(stripped) > MAX_SEPARATOR_CHARS:
        return None
    match = _SEPARATOR.fullmatch(stripped)
    if match is None:
        return None
    shape = _NUMBER.sub("0", stripped)
    if match["only"]:
        return shape, True
    name = match["name"]
    emphasis = set(match["open"]) <= _EMPHASIS or set(match["close"]) <= _EMPHASIS
    strong = not any(c.islower() for c in name) and not emphasis
    return shape, strong


def split_batch(text: str) -> Batch | None:
    """The text as a batch, or None when it is ordinary text (see the module notes)."""
    if "\n" not in text or _FENCE.search(text):
        return None
    lines = text.splitlines(keepends=True)
    shapes = [_shape(line) for line in lines]
    found = {shape for shape in shapes if shape is not None}
    if len(found) != 1:
        return None
    [(_, strong)] = found
    if not strong and sum(s is not None for s in shapes) < 2:
        return None
    blocks_with_text = 0
    parts: list[str] = []
    block: list[str] = []
    for i, line in enumerate(lines):
        if shapes[i] is None:
            block.append(line)
            continue
        parts.append("".join(block))
        blocks_with_text += bool(parts[-1].strip())
        parts.append(line)  # the separator with its line ending, verbatim
        block = []
    parts.append("".join(block))
    blocks_with_text += bool(parts[-1].strip())
    if blocks_with_text < 1:
        return None
    return Batch(parts)
