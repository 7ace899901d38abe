"""One segment's trip through the scheduler: the request, who wants it, and how it ended.

It lives on its own so that the scheduler (which queues jobs) and the batcher
(which forms them into engine calls) both use it without importing each other.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Protocol

from mtserve.engines.base import CancelToken, DeltaCallback, EngineRequest, TranslationResult


class Owner(Protocol):
    """What a job needs of the request that owns it (the scheduler's ``Ticket``)."""

    closed: bool
    running: set["Job"]

    @property
    def remaining_s(self) -> float: ...


@dataclass
class SegmentOutcome:
    result: TranslationResult
    queue_ms: float
    engine_ms: float


@dataclass(eq=False)
class Job:
    request: EngineRequest
    ticket: Owner
    future: asyncio.Future
    on_delta: DeltaCallback | None
    cancel: CancelToken = field(default_factory=CancelToken)
    enqueued_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None
    tokens: int | None = None  # source tokens, counted once by a token-budget batcher
    turns: int = 1  # what it costs its ticket in the scheduler's round robin: the sentences it holds

    def fail(self, error: BaseException) -> None:
        """Fail the job's future, marked retrieved: its caller may already have gone."""
        if not self.future.done():
            self.future.set_exception(error)
            self.future.exception()
