"""Remove what chat models wrap around a translation.

Small instruction-tuned models often answer "Sure, here's the translation:",
quote the result, repeat the source, or append a "Note:". The service must
return only the translation, but must never delete text the source really had
(a source that starts with "注：" legitimately translates to "Note: ...").
"""

from __future__ import annotations

import re

from mtserve.text.segment import ends_with_abbreviation

_SPECIAL_TOKEN = re.compile(
    r"<\|im_start\|>(?:assistant|system|user)?\n?"  # a new turn header, with its role
    r"|<\|[^|<>\s]{1,40}\|>|</?s>|\[/?INST\]|<</?SYS>>"
)
_END_OF_TURN = re.compile(r"<\|im_end\|>|<\|endoftext\|>|<\|eot_id\|>|</s>|<\|end\|>")
_KNOWN_TOKENS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|eot_id|>",
                 "</s>", "<s>", "[/INST]", "[INST]")

_BOLD = r"(?:\*\*|__)?"
_LABEL = re.compile(
    rf"""^\s*{_BOLD}\s*(?:
        (?:(?:sure|okay|ok|certainly|of\s+course)\s*[,.!]?\s*)?
        (?:here(?:\s+is|'s|’s)\s+[^:：\n]{{0,40}}?translat\w*[^:：\n]{{0,40}}
          |the\s+translation\s+is
          |(?:the\s+)?(?:english\s+)?translation
          |translated\s+text
          |english
          |output)
      |译文|翻译|英文翻译|英文
    )\s*{_BOLD}\s*[:：]\s*{_BOLD}[ \t]*\n?""",
    re.IGNORECASE | re.VERBOSE,
)
# A short "label:" opening the source, such as "输出：" or "Output:".
_SOURCE_LABEL = re.compile(r"^\s*[^\s:：][^\n:：。.!?！？]{0,15}[:：]")

_CHATTER = re.compile(
    r"""^[\s*_>(\[]*(?:
        note\s*[:：]|\(\s*note\b|translator'?s\s+note|explanation\s*[:：]
        |this\s+translation\b|i\s+translated\b|i've\s+translated\b|please\s+note\b
        |alternatively\b|注\s*[:：]|注意\s*[:：]|说明\s*[:：]
    )""",
    re.IGNORECASE | re.VERBOSE,
)

_QUOTE_PAIRS = [('"', '"'), ("“", "”"), ("'", "'"), ("‘", "’"), ("「", "」"), ("『", "』"), ("`", "`")]
_QUOTE_CHARS = set("\"'“”‘’「」『』`«»")
_APOSTROPHE = re.compile(r"(?<=\w)['’](?=\w)")
_CODE_FENCE = re.compile(r"^```(?:[\w+-]*[ \t]*\n)?(.*?)\n?```$", re.DOTALL)


def strip_special_tokens(text: str) -> str:
    """Delete complete chat-template tokens and nothing else.

    Safe on streamed chunks: whitespace and text around the tokens are kept,
    so chunks can be cleaned one at a time and concatenated.
    """
    return _SPECIAL_TOKEN.sub("", text)


def hold_back_partial_token(text: str) -> tuple[str, str]:
    """Split a streamed chunk into (safe to emit now, possible start of a token).

    A token can be cut across chunks ("<|im_" + "end|>"): the caller prepends
    the held-back tail to the next chunk, and emits it as-is when the stream ends.
    """
    cut = max(text.rfind("<"), text.rfind("["))
    if cut < 0:
        return text, ""
    tail = text[cut:]
    generic_in_progress = tail.startswith("<|") and "|>" not in tail and len(tail) <= 42
    if generic_in_progress or any(token.startswith(tail) and token != tail for token in _KNOWN_TOKENS):
        return text[:cut], tail
    return text, ""


def clean_translation(output: str, source: str) -> str:
    """Return just the translation from a model's raw ``output`` for ``source``."""
    end = _END_OF_TURN.search(output)
    if end and output[:end.start()].strip():
        output = output[:end.start()]  # whatever follows the end of the turn is not the answer
    text = strip_special_tokens(output).strip()
    source = source.strip()
    steps = (_drop_fence, _drop_leading_echo_and_labels, _drop_trailing_chatter, _unwrap_quotes,
             _mirror_final_stop)
    for step in steps:
        cleaned = step(text, source).strip()
        if cleaned:  # never let cleaning eat the whole answer
            text = cleaned
    return text


# What ends a sentence, in the scripts we translate from and into; a source ending in one of these
# (or in a closing quote or bracket after one) keeps whatever its translation ends with.
_SENTENCE_END = set(".。．!！?？…;；:：")
_CLOSERS = set("\"'”’」』)）]】>》")
_INNER_STOP = re.compile(r"[.!?](?=\s)|[。！？]")


def _mirror_final_stop(text: str, source: str) -> str:
    """A source without a full stop at its end (a button label, a menu item, a heading, a table
    cell) gets a translation without one: small models add "." to everything, and a UI string
    "Save." is wrong. A CAT tool's QA flags it as an end-punctuation mismatch. Only one sentence
    is touched, and never an abbreviation ("etc.")."""
    tail = source.rstrip()
    while tail and tail[-1] in _CLOSERS:
        tail = tail[:-1].rstrip()
    if not tail or tail[-1] in _SENTENCE_END:
        return text
    if not (text.endswith(".") or text.endswith("。")) or text.endswith("..") or text.endswith("。。"):
        return text
    body = text[:-1]
    if not body or _INNER_STOP.search(body) or ends_with_abbreviation(text):
        return text
    return body


def _drop_fence(text: str, source: str) -> str:
    """The strict retry fences its text in ``<text>...</text>`` (engines.prompts.STRICT_FENCE); a
    model that copies the markers around its answer gets them taken off, unless the source had them."""
    if "<text>" in source or "</text>" in source:
        return text
    if text.startswith("<text>"):
        text = text[len("<text>"):]
    if text.endswith("</text>"):
        text = text[:-len("</text>")]
    return text


def _drop_leading_echo_and_labels(text: str, source: str) -> str:
    while True:
        before = text
        if source and text.startswith(source + "\n") and text[len(source):].strip():
            text = text[len(source):].strip()
        text = _drop_label(text, source)
        if text == before:
            return text


def _drop_label(text: str, source: str) -> str:
    label = _LABEL.match(text)
    if not label or not text[label.end():].strip():
        return text
    rest = text[label.end():].strip()
    if _LABEL.match(source) or _SOURCE_LABEL.match(source):
        # The source opens with a label of its own, so the output's label is
        # probably its translation, unless the output has a second one after it.
        return rest if _SOURCE_LABEL.match(rest) else text
    return rest


def _drop_trailing_chatter(text: str, source: str) -> str:
    """Cut from the first note/explanation line found beyond the source's line count."""
    source_lines = max(1, sum(bool(line.strip()) for line in source.splitlines()))
    lines = text.split("\n")
    content_lines_seen = 0
    for index, line in enumerate(lines):
        if content_lines_seen >= source_lines and _CHATTER.match(line):
            return "\n".join(lines[:index])
        content_lines_seen += bool(line.strip())
    return text


def _unwrap_quotes(text: str, source: str) -> str:
    if source[:1] in _QUOTE_CHARS or source[-1:] in _QUOTE_CHARS:
        return text  # the quotes may be a translation of the source's own
    while True:
        inner = _unwrapped(text)
        if inner is None or not inner.strip():
            return text
        text = inner.strip()


def _unwrapped(text: str) -> str | None:
    fence = _CODE_FENCE.match(text)
    if fence and "```" not in fence.group(1):
        return fence.group(1)
    for opening, closing in _QUOTE_PAIRS:
        if len(text) >= 2 and text.startswith(opening) and text.endswith(closing):
            inner = text[1:-1]
            if opening not in _APOSTROPHE.sub("", inner) and closing not in _APOSTROPHE.sub("", inner):
                return inner
    return None
