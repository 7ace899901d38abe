"""The scheduler: admission, fair queuing, deadlines and cancellation.

One shared engine serves every request. Each API request opens a *ticket*
(admission is bounded: a full service refuses at once with ``QueueFull``,
which the API turns into 503 + Retry-After) and submits its segments to it.
Workers, as many as the engine has slots, take segments round-robin across
tickets, so a 200-sentence document gets one slot turn per round like a
one-line request does, and never blocks it.

A ticket has a deadline. Past it, or when its owner goes away (client
disconnect, task cancelled), the ticket closes: its queued segments are
dropped and its running ones are told to stop through their ``CancelToken``,
so the engine frees the slot instead of decoding for nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import logging
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable

from mtserve.engines.base import (
    CancelToken,
    DeltaCallback,
    EngineCancelled,
    TranslationRequest,
    TranslationResult,
)
from mtserve.service.metrics import Metrics

log = logging.getLogger(__name__)

EngineCall = Callable[[TranslationRequest, CancelToken, DeltaCallback | None], TranslationResult]


class QueueFull(RuntimeError):
    def __init__(self, retry_after_s: int):
        super().__init__(f"the service is at capacity; retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class DeadlineExceeded(TimeoutError):
    pass


class SchedulerStopped(RuntimeError):
    pass


@dataclass
class SegmentOutcome:
    result: TranslationResult
    queue_ms: float
    engine_ms: float


@dataclass(eq=False)
class Job:
    request: TranslationRequest
    ticket: "Ticket"
    future: asyncio.Future
    on_delta: DeltaCallback | None
    cancel: CancelToken = field(default_factory=CancelToken)
    enqueued_at: float = field(default_factory=time.monotonic)


class Priority(enum.IntEnum):
    INTERACTIVE = 0  # API and WebUI requests
    BACKGROUND = 1  # document jobs: they run only when no interactive work waits


@dataclass(eq=False)
class Ticket:
    """One request's share of the scheduler."""

    id: int
    deadline: float  # time.monotonic() seconds
    scheduler: "Scheduler"
    priority: Priority = Priority.INTERACTIVE
    pending: deque[Job] = field(default_factory=deque)
    running: set[Job] = field(default_factory=set)
    closed: bool = False

    def submit(self, request: TranslationRequest, on_delta: DeltaCallback | None = None) -> asyncio.Future:
        return self.scheduler._enqueue(self, request, on_delta)

    @property
    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    async def wait(self, futures: list[asyncio.Future]) -> list[SegmentOutcome]:
        """All outcomes, in order. The first failure is raised at once; the deadline as DeadlineExceeded."""
        if not futures:
            return []
        _, pending = await asyncio.wait(
            futures, timeout=max(0.0, self.remaining_s), return_when=asyncio.FIRST_EXCEPTION
        )
        for future in futures:
            if future.done() and future.exception() is not None:
                raise future.exception()
        if pending:
            raise DeadlineExceeded("the request's deadline passed")
        return [future.result() for future in futures]

    async def wait_one(self, future: asyncio.Future) -> SegmentOutcome:
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout=max(0.0, self.remaining_s))
        except TimeoutError:
            raise DeadlineExceeded("the request's deadline passed") from None


class Scheduler:
    def __init__(
        self,
        engine_call: EngineCall,
        *,
        concurrency: int,
        max_queue: int,
        metrics: Metrics | None = None,
    ):
        self._engine_call = engine_call
        self.concurrency = max(1, concurrency)
        self.max_queue = max(1, max_queue)
        self.metrics = metrics
        self._tickets: set[Ticket] = set()
        # Tickets with pending jobs, round-robin order, one queue per priority class:
        # interactive requests always go before background work such as document jobs.
        self._ready: dict[Priority, deque[Ticket]] = {p: deque() for p in Priority}
        self._wakeup = asyncio.Event()
        self._workers: list[asyncio.Task] = []
        self._executor: ThreadPoolExecutor | None = None
        self._ids = itertools.count(1)
        self._stopping = False
        self._recent_engine_s: deque[float] = deque(maxlen=32)

    # --- lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="engine")
        self._workers = [asyncio.create_task(self._worker(i)) for i in range(self.concurrency)]

    async def stop(self) -> None:
        self._stopping = True
        for ticket in list(self._tickets):
            self._close(ticket, SchedulerStopped("the service is shutting down"))
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)

    # --- admission -------------------------------------------------------------
    @property
    def admitted(self) -> int:
        return len(self._tickets)

    @property
    def segments_waiting(self) -> int:
        return sum(len(t.pending) for t in self._tickets)

    def retry_after_s(self) -> int:
        """A rough wait until a slot frees: queued work over slots, times recent engine time."""
        per_segment = (sum(self._recent_engine_s) / len(self._recent_engine_s)) if self._recent_engine_s else 1.0
        waiting = self.segments_waiting + self.concurrency
        return max(1, round(per_segment * waiting / self.concurrency))

    @contextlib.asynccontextmanager
    async def ticket(self, timeout_s: float, priority: Priority = Priority.INTERACTIVE) -> AsyncIterator[Ticket]:
        if self._stopping:
            raise SchedulerStopped("the service is shutting down")
        if len(self._tickets) >= self.max_queue:
            raise QueueFull(self.retry_after_s())
        ticket = Ticket(id=next(self._ids), deadline=time.monotonic() + timeout_s, scheduler=self,
                        priority=priority)
        self._tickets.add(ticket)
        self._gauge()
        try:
            yield ticket
        finally:
            self._close(ticket, DeadlineExceeded("the request ended before this segment ran"))

    # --- internals -------------------------------------------------------------
    def _enqueue(self, ticket: Ticket, request: TranslationRequest, on_delta: DeltaCallback | None) -> asyncio.Future:
        if ticket.closed:
            raise RuntimeError("ticket is closed")
        future = asyncio.get_running_loop().create_future()
        job = Job(request=request, ticket=ticket, future=future, on_delta=on_delta)
        if not ticket.pending:
            self._ready[ticket.priority].append(ticket)
        ticket.pending.append(job)
        self._wakeup.set()
        self._gauge()
        return future

    def _close(self, ticket: Ticket, reason: Exception) -> None:
        if ticket.closed:
            return
        ticket.closed = True
        for job in ticket.pending:
            if not job.future.done():
                job.future.set_exception(reason)
                job.future.exception()  # mark retrieved: nobody may be awaiting it
        ticket.pending.clear()
        for job in ticket.running:
            job.cancel.cancel()
        with contextlib.suppress(ValueError):
            self._ready[ticket.priority].remove(ticket)
        self._tickets.discard(ticket)
        self._gauge()

    def _next_job(self) -> Job | None:
        for ready in self._ready.values():  # Priority order: interactive first
            while ready:
                ticket = ready.popleft()
                if ticket.closed or not ticket.pending:
                    continue
                job = ticket.pending.popleft()
                if ticket.pending:
                    ready.append(ticket)
                return job
        return None

    async def _worker(self, index: int) -> None:
        loop = asyncio.get_running_loop()
        while True:
            job = self._next_job()
            if job is None:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            if job.ticket.remaining_s <= 0:
                job.future.set_exception(DeadlineExceeded("the request's deadline passed while queued"))
                job.future.exception()
                continue
            await self._run(loop, job)

    async def _run(self, loop: asyncio.AbstractEventLoop, job: Job) -> None:
        ticket = job.ticket
        ticket.running.add(job)
        started = time.monotonic()
        queue_s = started - job.enqueued_at
        on_delta = None
        if job.on_delta is not None:
            user_cb = job.on_delta

            def on_delta(text: str) -> None:  # engine thread -> event loop
                loop.call_soon_threadsafe(user_cb, text)

        self._gauge(running_delta=1)
        try:
            result = await loop.run_in_executor(self._executor, self._engine_call, job.request, job.cancel, on_delta)
        except asyncio.CancelledError:
            job.cancel.cancel()
            raise
        except EngineCancelled as exc:
            if not job.future.done():
                job.future.set_exception(DeadlineExceeded(str(exc)))
                job.future.exception()
        except Exception as exc:  # one request's engine failure fails only that request
            log.warning("engine failed on a segment", extra={"event": "engine_error", "error": repr(exc)})
            if not job.future.done():
                job.future.set_exception(exc)
                job.future.exception()
        else:
            engine_s = time.monotonic() - started
            self._recent_engine_s.append(engine_s)
            if self.metrics is not None:
                self.metrics.queue_time.observe(queue_s)
                self.metrics.engine_time.observe(engine_s)
                self.metrics.generated_tokens.inc(result.generated_tokens)
                self.metrics.prompt_tokens.inc(result.prompt_tokens)
            if not job.future.done():
                job.future.set_result(SegmentOutcome(result, queue_s * 1000, engine_s * 1000))
        finally:
            ticket.running.discard(job)
            self._gauge(running_delta=-1)

    def _gauge(self, running_delta: int = 0) -> None:
        if self.metrics is None:
            return
        self.metrics.requests_waiting.set(len(self._tickets))
        self.metrics.segments_waiting.set(self.segments_waiting)
        if running_delta:
            self.metrics.segments_running.inc(running_delta)
