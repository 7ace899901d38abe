"""The dynamic batcher: Triton's semantics on top of the scheduler's fair queue.

Every engine call goes through it. An engine that decodes many sequences in
one call (the seq2seq engines) gets batches; one that takes a segment at a
time (llama.cpp, vLLM) gets the size-1 policy (``DynamicBatcher.one_at_a_time``),
which is the same loop with batches that are always full and that stream. A
scheduler worker asks ``collect`` for its next batch:

1. It waits until there is work, then takes the largest batch available now:
   jobs round-robin across tickets (the scheduler's fairness), up to
   ``max_batch_size`` examples, or padded source tokens (rows x longest) when
   the engine prefers tokens.
2. If the batch is full, or the engine is idle, it goes at once: a lone
   request on an idle engine never waits, and an idle engine is never held
   back for company.
3. Otherwise (a partial batch while another batch is on the engine) it is
   held, gaining whatever arrives, until it fills, the engine goes idle, or
   its oldest request has waited ``max_queue_delay_ms``.

``run`` executes a batch in the engine's thread pool. If the batch call
fails, each member is retried alone, so one bad input fails only its own
request. Order within a batch and length sorting are the engine's business
(``translate_batch`` returns results in request order).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

from mtserve.engines.base import (
    BatchingEngine,
    CancelToken,
    DeltaCallback,
    Engine,
    EngineRequest,
    TranslationResult,
)
from mtserve.service.job import Job

log = logging.getLogger(__name__)

# requests, their cancel tokens, and (for an engine that streams) where each one's deltas go
BatchCall = Callable[[list[EngineRequest], list[CancelToken], list[DeltaCallback | None]],
                     list[TranslationResult]]
SegmentCall = Callable[[EngineRequest, CancelToken, DeltaCallback | None], TranslationResult]
Outcome = TranslationResult | BaseException


@dataclass(frozen=True)
class BatchPolicy:
    """When a batch is full, and how long a partial one may wait."""

    max_batch_size: int
    max_queue_delay_s: float = 0.0
    batch_type: str = "examples"  # "examples" | "tokens"

    def cost(self, token_counts: Sequence[int]) -> int:
        """Examples, or padded tokens: what the engine pays to run these rows together."""
        if self.batch_type == "examples":
            return len(token_counts)
        return len(token_counts) * max(token_counts, default=0)

    def fits(self, token_counts: Sequence[int]) -> bool:
        return len(token_counts) <= 1 or self.cost(token_counts) <= self.max_batch_size


class JobSource(Protocol):
    """What the batcher needs from the scheduler's queue."""

    def peek_job(self) -> Job | None:
        """The job round-robin order would hand out next, left in the queue."""

    def take_job(self) -> Job:
        """Remove and return the job ``peek_job`` just showed."""

    async def wait_for_jobs(self, timeout_s: float | None = None, also: asyncio.Event | None = None) -> None:
        """Return when a job may have arrived (or ``also`` is set, or the timeout passes)."""


class DynamicBatcher:
    def __init__(
        self,
        call: BatchCall,
        policy: BatchPolicy,
        token_count: Callable[[EngineRequest], int] | None = None,
        streams: bool = False,
    ):
        if policy.batch_type == "tokens" and token_count is None:
            raise ValueError("a token budget needs token_count")
        self.call = call
        self.policy = policy
        self.token_count = token_count
        self.streams = streams  # the engine calls each job's on_delta itself, from its thread
        self.in_flight = 0  # batches on the engine now
        self._finished = asyncio.Event()  # set whenever a batch leaves the engine

    @classmethod
    def one_at_a_time(cls, call: SegmentCall) -> "DynamicBatcher":
        """The policy of an engine that takes one segment per call and streams it: batches of 1."""

        def single(requests: list[EngineRequest], cancels: list[CancelToken],
                   deltas: list[DeltaCallback | None]) -> list[TranslationResult]:
            return [call(requests[0], cancels[0], deltas[0])]

        return cls(single, BatchPolicy(max_batch_size=1), streams=True)

    # --- forming a batch ----------------------------------------------------------------
    def _fill(self, source: JobSource, batch: list[Job], tokens: list[int]) -> bool:
        """Add queued jobs while they fit; True when the batch can take no more."""
        while True:
            job = source.peek_job()
            if job is None:
                return self._is_full(tokens)
            count = self._tokens(job) if self.policy.batch_type == "tokens" else 1
            if not self.policy.fits(tokens + [count]):
                return True
            batch.append(source.take_job())
            tokens.append(count)

    def _tokens(self, job: Job) -> int:
        if job.tokens is None:
            assert self.token_count is not None
            job.tokens = self.token_count(job.request)
        return job.tokens

    def _is_full(self, tokens: list[int]) -> bool:
        return self.policy.cost(tokens) >= self.policy.max_batch_size

    async def collect(self, source: JobSource) -> list[Job]:
        """The next batch, by the rules in the module docstring. Never empty."""
        batch: list[Job] = []
        tokens: list[int] = []
        while not batch:
            full = self._fill(source, batch, tokens)
            if not batch:
                await source.wait_for_jobs()
        if full or self.in_flight == 0 or self.policy.max_queue_delay_s <= 0:
            return batch
        hold_until = min(job.enqueued_at for job in batch) + self.policy.max_queue_delay_s
        while self.in_flight > 0 and (remaining := hold_until - time.monotonic()) > 0:
            self._finished.clear()
            if self._fill(source, batch, tokens):
                break
            await source.wait_for_jobs(timeout_s=remaining, also=self._finished)
        else:
            self._fill(source, batch, tokens)  # what arrived during the last wait
        return batch

    # --- running it -------------------------------------------------------------------------
    async def run(
        self, loop: asyncio.AbstractEventLoop, executor: Executor | None, jobs: list[Job]
    ) -> list[Outcome]:
        """One outcome per job, in order: a result, or the exception that job alone failed with."""
        requests = [job.request for job in jobs]
        cancels = [job.cancel for job in jobs]
        deltas = [_from_thread(loop, job.on_delta) if self.streams else None for job in jobs]
        self.in_flight += 1
        try:
            try:
                results = await loop.run_in_executor(executor, self.call, requests, cancels, deltas)
                if len(results) != len(jobs):
                    raise RuntimeError(f"engine returned {len(results)} results for {len(jobs)} requests")
                return list(results)
            except asyncio.CancelledError:
                for cancel in cancels:
                    cancel.cancel()
                raise
            except Exception as exc:  # noqa: BLE001 - isolate the failure below
                if len(jobs) == 1:
                    return [exc]
                log.warning(
                    "batch failed; retrying its requests one by one",
                    extra={"event": "batch_retry", "size": len(jobs), "error": repr(exc)},
                )
            outcomes: list[Outcome] = []
            for request, cancel, delta in zip(requests, cancels, deltas):
                try:
                    [result] = await loop.run_in_executor(executor, self.call, [request], [cancel], [delta])
                    outcomes.append(result)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - this request's own failure
                    outcomes.append(exc)
            return outcomes
        finally:
            self.in_flight -= 1
            self._finished.set()


def _from_thread(loop: asyncio.AbstractEventLoop, callback: DeltaCallback | None) -> DeltaCallback | None:
    """A delta callback the engine's thread may call: it runs ``callback`` on the event loop."""
    if callback is None:
        return None
    return lambda text: loop.call_soon_threadsafe(callback, text)


def batcher_for(engine: Engine, max_queue_delay_ms: float) -> DynamicBatcher | None:
    """Dynamic batching for an engine that batches; None for one that takes segments one at a time
    (the scheduler then uses ``DynamicBatcher.one_at_a_time``)."""
    if not isinstance(engine, BatchingEngine):
        return None
    policy = BatchPolicy(
        max_batch_size=max(1, engine.max_batch_size),
        max_queue_delay_s=max(0.0, max_queue_delay_ms) / 1000,
        batch_type=engine.batch_type,
    )

    def call(requests: list[EngineRequest], cancels: list[CancelToken],
             deltas: list[DeltaCallback | None]) -> list[TranslationResult]:
        return engine.translate_batch(requests, cancels)  # a batch does not stream

    return DynamicBatcher(
        call,
        policy,
        token_count=engine.batch_cost if policy.batch_type == "tokens" else None,
    )


async def wait_any(events: Sequence[asyncio.Event], timeout_s: float | None) -> None:
    """Return when one of the events is set, or the timeout passes."""
    if any(event.is_set() for event in events):
        return
    waiters = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiters, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
        for waiter in waiters:
            with contextlib.suppress(asyncio.CancelledError):
                await waiter
