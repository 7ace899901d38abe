"""The service's boundary: one request type for a translation, and what comes back, in its own words.

Every caller (the three API families, document jobs, the CLI, ``mtserve eval``) builds a
``TranslationRequest`` and reads ``Translation`` results or stream events; each API family maps
its own field names to these and back. Nothing here knows any family's names: a family that calls
the source ``source_lang`` or the answer ``translatedText`` says so in its own module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Union

from mtserve.engines.base import NO_GUIDANCE as NO_GUIDANCE  # the request's vocabulary, for its callers
from mtserve.engines.base import Guidance as Guidance
from mtserve.service.scheduler import Priority
from mtserve.text.detect import Detection
from mtserve.text.html import TagHandling

# text: plain (placeholders kept); html; xml (DeepL tag_handling=xml); markup: the view of
# ``mtserve.text.markup`` (``<b1>..</b1>``, ``<x2/>``), which document formats send.
FORMATS = ("text", "html", "xml", "markup")


@dataclass(frozen=True)
class TranslationRequest:
    """One call: its texts share a ticket, a deadline and fair queueing.

    ``glossary`` ({term: translation}) adds to the server-wide glossary; ``glossary_id`` names a
    stored glossary, which the service resolves for the caller ``key_id`` (None: no key) and puts
    between the two. ``style_id`` names a stored style rule for the target, whose custom
    instructions the service puts before the request's own. ``guidance`` holds the context,
    instructions and formality: ``more``/``less``
    must be followed (a target that marks no formality is refused), ``prefer_more``/``prefer_less``
    are followed where the target marks it. ``tags`` says how "html" and "xml" markup splits text.
    ``memory=False`` leaves the translation memory out; ``memory_threshold`` (0-100) is the least
    similarity of the entries shown to the engine as examples (None: the server's). ``one_source``
    detects an "auto" source once over all the texts together (short blocks of one document say
    little alone).
    ``deadline_s`` None is the server's deadline. ``caller`` is whom the request counts against for
    a fair share of admission (max_queue_per_caller): an API key, or a client's network; None: none.
    """

    texts: tuple[str, ...]
    target: str
    source: str = "auto"
    format: str = "text"
    tags: TagHandling | None = None
    glossary: Mapping[str, str] | None = None
    glossary_id: str | None = None
    style_id: str | None = None
    guidance: Guidance = NO_GUIDANCE
    memory: bool = True
    memory_threshold: float | None = None
    alternatives: int = 0
    deadline_s: float | None = None
    priority: Priority = Priority.INTERACTIVE
    key_id: str | None = None
    caller: str | None = None
    one_source: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.texts, str):
            raise TypeError("texts is a sequence of texts; wrap a single text in a list")
        object.__setattr__(self, "texts", tuple(self.texts))
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {self.format!r}")

    @classmethod
    def of(cls, text: str, target: str, **options) -> "TranslationRequest":
        """A request for one text, as a stream takes it."""
        return cls((text,), target, **options)

    @property
    def text(self) -> str:
        """The one text of a request for one (a stream's)."""
        if len(self.texts) != 1:
            raise ValueError(f"this request holds {len(self.texts)} texts, not one")
        return self.texts[0]

    @property
    def chars(self) -> int:
        return sum(map(len, self.texts))


@dataclass
class Usage:
    """What one request cost; logged and returned to benchmarks. The caller may hand one in and
    read it while the call runs, or after it failed."""

    segments: int = 0
    cached_segments: int = 0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    queue_ms: float = 0.0
    engine_ms: float = 0.0
    markup_retries: int = 0  # segments whose tags or placeholders came back wrong and were retried
    markup_fallbacks: int = 0  # segments whose tags were placed by the fallback
    tm_segments: int = 0  # segments served from the translation memory (exact matches)
    sentence_fallbacks: int = 0  # segments of several sentences redone one sentence at a time
    tm_examples: int = 0  # segments sent to the engine with similar translation-memory entries as examples
    markup_unplaced: int = 0  # tags whose words could not be found in the translation: kept at the sentence's end
    content_dropped: int = 0  # segments whose translation still lacks part of the source after a strict retry

    def add(self, other: "Usage") -> None:
        self.segments += other.segments
        self.cached_segments += other.cached_segments
        self.markup_retries += other.markup_retries
        self.markup_fallbacks += other.markup_fallbacks
        self.tm_segments += other.tm_segments
        self.sentence_fallbacks += other.sentence_fallbacks
        self.tm_examples += other.tm_examples
        self.markup_unplaced += other.markup_unplaced
        self.content_dropped += other.content_dropped
        self.generated_tokens += other.generated_tokens
        self.prompt_tokens += other.prompt_tokens
        self.queue_ms = max(self.queue_ms, other.queue_ms)
        self.engine_ms += other.engine_ms


@dataclass
class Translation:
    """One text's translation. ``source`` is the language translated from (detected, if asked)."""

    text: str
    source: str
    detected: Detection | None = None
    alternatives: list[str] = field(default_factory=list)
    # Every part of it with words is a translation stored in the TM, served as stored (no engine, no
    # cache): a CAT-tool file marks such a target as an exact match, not as machine translation.
    from_memory: bool = False


# --- stream events, in the order a stream yields them ----------------------------------------------
@dataclass(frozen=True)
class Detected:
    """The source language found for an "auto" request, before any text."""

    detection: Detection


@dataclass(frozen=True)
class Delta:
    """Text to append to what the stream has shown: raw engine output, or a segment's gap."""

    text: str


@dataclass(frozen=True)
class SegmentDone:
    """One segment made final (cleaned, checked), with the gap that goes before it."""

    index: int
    gap: str
    text: str


@dataclass(frozen=True)
class Done:
    """The whole translation, which replaces what the deltas built."""

    translation: Translation


StreamEvent = Union[Detected, Delta, SegmentDone, Done]


# --- what the service refuses ----------------------------------------------------------------------
class UnsupportedLanguage(ValueError):
    """A language, or a pair, the model does not translate.

    The message is the service's own words; the fields let an API family word it its own way:
    ``code`` (the ``role``'s language, "source" or "target") with the ``supported`` codes, or the
    ``pair`` (source, target) the model has no direction for.
    """

    def __init__(self, message: str, *, code: str | None = None, role: str | None = None,
                 supported: tuple[str, ...] = (), pair: tuple[str, str] | None = None):
        super().__init__(message)
        self.code = code
        self.role = role
        self.supported = supported
        self.pair = pair


class FormalityUnsupported(ValueError):
    """A formality that must be followed (``more``, ``less``) into a target that marks none, or on an
    engine that takes no prompt; ``prefer_more``/``prefer_less`` would fall back to the default."""
