"""An in-memory LRU cache of segment translations.

Keys are (model, source, target, format, text, glossary, guidance) at the segment level, so a
document that repeats a sentence, or a user who edits one sentence of a
paragraph, only pays for what changed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple


class CacheKey(NamedTuple):
    model: str
    source: str
    target: str
    format: str
    text: str
    glossary: str = ""  # the glossary entries that applied to this segment, canonical JSON
    guidance: str = ""  # the request's context, instructions and formality (Guidance.key), if any


class TranslationCache:
    """Locked: long texts are planned in worker threads (translator.OFF_LOOP_CHARS) while the
    event loop reads and writes it too."""

    def __init__(self, capacity: int):
        self.capacity = max(0, capacity)
        self._items: OrderedDict[CacheKey, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> str | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: CacheKey, value: str) -> None:
        if self.capacity == 0:
            return
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)
