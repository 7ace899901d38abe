"""The scheduler: admission, fair queuing, deadlines and cancellation.

One shared engine serves every request. Each API request opens a *ticket*
(admission is bounded: a full service refuses at once with ``QueueFull``,
which the API turns into 503 + Retry-After) and submits its segments to it.
Workers, as many as the engine takes at once (``max_concurrency``: its slots,
and for llama.cpp ``queue_ahead`` more that wait in its own queue), take
segments round-robin across tickets, so a 200-sentence document gets one slot
turn per round like a one-line request does, and never blocks it. A segment of
several sentences (``segment_budget_chars``) costs its ticket as many turns as
it has sentences: the ticket lets the others go first that many times, so a
document sent as whole paragraphs takes no larger share of the engine than one
sent sentence by sentence, while no turn goes unused. Such segments hold a slot
for as long as they have sentences, so a ticket that already runs one starts
another only while no other ticket has a segment that could go, and never
more than ``long_jobs_per_ticket`` at once (the runtime gives half the
engine's slots): a document takes the slots nobody else wants, and one that
arrives first cannot fill every slot with paragraphs and make the one-line
requests after it wait for a whole paragraph.

A ticket has a deadline. Past it, or when its owner goes away (client
disconnect, task cancelled), the ticket closes: its queued segments are
dropped and its running ones are told to stop through their ``CancelToken``,
so the engine frees the slot instead of decoding for nobody.

There is one worker loop for every engine. Each worker asks the batcher for
its next batch, runs it, and settles each member's future. An engine that
batches (``translate_batch``) gets a ``DynamicBatcher`` whose batches follow
Triton's rules (see ``mtserve.service.batcher``); one that takes a segment at
a time gets batches of exactly one job that stream their deltas. Either way
the jobs come round-robin across tickets and in priority order, and
admission, deadlines, cancellation, metrics and the engine-dead path are the
same code.
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
    DeltaCallback,
    EngineCancelled,
    EngineDead,
    EngineRequest,
    TranslationResult,
)
from mtserve.service.batcher import DynamicBatcher, Outcome, SegmentCall, wait_any
from mtserve.service.job import Job, SegmentOutcome
from mtserve.service.metrics import Metrics

log = logging.getLogger(__name__)

EngineCall = SegmentCall


class QueueFull(RuntimeError):
    def __init__(self, retry_after_s: int):
        super().__init__(f"the service is at capacity; retry in {retry_after_s} s")
        self.retry_after_s = retry_after_s


class CallerBusy(RuntimeError):
    """One caller already holds as many admitted requests as one caller may."""

    def __init__(self, held: int, retry_after_s: int):
        super().__init__(f"this caller already has {held} requests in progress, the most one caller may have "
                         f"at once (MTSERVE_MAX_QUEUE_PER_CALLER); send more as they finish (retry in "
                         f"{retry_after_s} s)")
        self.retry_after_s = retry_after_s


class DeadlineExceeded(TimeoutError):
    pass


class SchedulerStopped(RuntimeError):
    pass


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
    caller: str | None = None  # whom it counts against for max_per_caller; None: not counted
    owed_turns: int = 0  # turns to let others take first: its last segment held several sentences

    def submit(self, request: EngineRequest, on_delta: DeltaCallback | None = None,
               turns: int = 1) -> asyncio.Future:
        """Queue one segment; ``turns``: what it costs in the round robin (its sentences)."""
        return self.scheduler._enqueue(self, request, on_delta, turns)

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
        on_engine_dead: Callable[[Exception], None] | None = None,
        batcher: DynamicBatcher | None = None,
        long_jobs_per_ticket: int | None = None,
        max_per_caller: int = 0,
    ):
        # One worker loop for every engine: a segment-at-a-time engine is a batch policy of size 1.
        self._batcher = batcher if batcher is not None else DynamicBatcher.one_at_a_time(engine_call)
        self._on_engine_dead = on_engine_dead
        self._running: set[Job] = set()  # across all tickets, closed ones included
        self.concurrency = max(1, concurrency)
        # segments of several sentences one ticket may run at once; None: no cap
        self.long_jobs_per_ticket = None if long_jobs_per_ticket is None else max(1, long_jobs_per_ticket)
        self.max_queue = max(1, max_queue)
        self.max_per_caller = max(0, max_per_caller)  # 0: no cap
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

    def longest_running_s(self) -> float:
        """How long the oldest segment still in the engine has been there (the hang watchdog reads it)."""
        now = time.monotonic()
        return max((now - job.started_at for job in self._running if job.started_at), default=0.0)

    async def stop(self, abandon: bool = False) -> None:
        """Stop the workers; ``abandon`` leaves stuck engine threads behind instead of waiting for them."""
        self._stopping = True
        reason = "the engine is restarting after a fault" if abandon else "the service is shutting down"
        for ticket in list(self._tickets):
            self._close(ticket, SchedulerStopped(reason))
        for task in self._workers:
            task.cancel()
        for task in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._executor is not None:
            self._executor.shutdown(wait=not abandon, cancel_futures=True)

    # --- admission -------------------------------------------------------------
    @property
    def admitted(self) -> int:
        return len(self._tickets)

    @property
    def segments_waiting(self) -> int:
        return sum(len(t.pending) for t in self._tickets)

    def estimated_wait_s(self) -> float:
        """Time until a new segment would start: the work ahead of it over the slots.

        Uses the recent engine time per segment; 0 before anything has been measured.
        """
        if not self._recent_engine_s:
            return 0.0
        per_segment = sum(self._recent_engine_s) / len(self._recent_engine_s)
        ahead = self.segments_waiting + len(self._running)
        return per_segment * ahead / self.concurrency

    def first_turn_wait_s(self, priority: Priority = Priority.INTERACTIVE) -> float:
        """Time until a new request's first segment would start. Round robin serves one segment of each
        request with work waiting (at its priority or above) before a newcomer's first, after what runs
        now: the work behind those first segments does not delay it. 0 before anything was measured."""
        if not self._recent_engine_s:
            return 0.0
        per_segment = sum(self._recent_engine_s) / len(self._recent_engine_s)
        ahead = sum(1 for t in self._tickets if t.pending and t.priority <= priority) + len(self._running)
        return per_segment * ahead / self.concurrency

    def retry_after_s(self) -> int:
        """When to come back: about when the work queued now will have drained."""
        return max(1, round(self.estimated_wait_s()))

    @contextlib.asynccontextmanager
    async def ticket(self, timeout_s: float, priority: Priority = Priority.INTERACTIVE,
                     caller: str | None = None) -> AsyncIterator[Ticket]:
        """Admission: a ticket, unless the queue is full (QueueFull), ``caller`` holds its share already
        (CallerBusy), or the work ahead would outlast ``timeout_s``."""
        if self._stopping:
            raise SchedulerStopped("the service is shutting down")
        if caller is not None and self.max_per_caller:
            held = sum(1 for t in self._tickets if t.caller == caller)
            if held >= self.max_per_caller:
                raise CallerBusy(held, self.retry_after_s())
        if len(self._tickets) >= self.max_queue:
            raise QueueFull(self.retry_after_s())
        if self.first_turn_wait_s(priority) > timeout_s:  # it would only wait to time out: refuse now
            raise QueueFull(self.retry_after_s())
        ticket = Ticket(id=next(self._ids), deadline=time.monotonic() + timeout_s, scheduler=self,
                        priority=priority, caller=caller)
        self._tickets.add(ticket)
        self._gauge()
        try:
            yield ticket
        finally:
            self._close(ticket, DeadlineExceeded("the request ended before this segment ran"))

    # --- internals -------------------------------------------------------------
    def _enqueue(self, ticket: Ticket, request: EngineRequest, on_delta: DeltaCallback | None,
                 turns: int = 1) -> asyncio.Future:
        if ticket.closed:
            raise RuntimeError("ticket is closed")
        future = asyncio.get_running_loop().create_future()
        job = Job(request=request, ticket=ticket, future=future, on_delta=on_delta, turns=max(1, turns))
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
            job.fail(reason)
        ticket.pending.clear()
        for job in ticket.running:
            job.cancel.cancel()
        with contextlib.suppress(ValueError):
            self._ready[ticket.priority].remove(ticket)
        self._tickets.discard(ticket)
        self._gauge()

    def _next_job(self) -> Job | None:
        ticket = self._head()
        if ticket is None:
            return None
        ready = self._ready[ticket.priority]
        ready.popleft()
        job = ticket.pending.popleft()
        ticket.owed_turns = job.turns - 1
        if ticket.pending:
            ready.append(ticket)
        return job

    def _long_running(self, ticket: Ticket) -> int:
        """How many segments of several sentences it runs, when its next one is such a segment too
        (0 otherwise, or with no cap: its next segment is not held back by the ones running)."""
        if self.long_jobs_per_ticket is None or ticket.pending[0].turns <= 1:
            return 0
        return sum(1 for job in ticket.running if job.turns > 1)

    def _at_long_cap(self, ticket: Ticket) -> bool:
        """Its next segment holds several sentences, and it already runs as many such as it may."""
        return self.long_jobs_per_ticket is not None and self._long_running(ticket) >= self.long_jobs_per_ticket

    def _head(self) -> Ticket | None:
        """The ticket whose turn it is, left at the front of its queue, in priority order (interactive
        first): closed and empty tickets are dropped; one that owes turns, or that would start a
        second long segment beside one it runs, goes to the back while another ticket could go (the
        first paying a turn); one at its cap of long segments goes to the back, and waits while no
        other could go. The order of the jobs handed out is the same whether the queue was settled
        by a look (peek_job) or by a take."""
        for ready in self._ready.values():
            while ready:
                ticket = ready[0]
                if ticket.closed or not ticket.pending:
                    ready.popleft()
                    continue
                capped = self._at_long_cap(ticket)
                if not capped and ticket.owed_turns <= 0 and not self._long_running(ticket):
                    return ticket  # the usual case: no look at the others
                if not any(t is not ticket and self._could_go(t) for t in ready):
                    if capped:
                        break  # nothing of this priority may go now; a lower one may
                    return ticket
                if not capped:
                    ticket.owed_turns -= 1
                ready.rotate(-1)
        return None

    def _could_go(self, ticket: Ticket) -> bool:
        """It has a segment that may start now without holding a second slot for long."""
        return not ticket.closed and bool(ticket.pending) and not self._long_running(ticket)

    # --- the batcher's view of the queue (batcher.JobSource) ---------------------
    def peek_job(self) -> Job | None:
        ticket = self._head()  # the job _next_job hands out next
        return ticket.pending[0] if ticket is not None else None

    def take_job(self) -> Job:
        """The peeked job, claimed: a ticket that closes now cancels it as if it were running."""
        job = self._next_job()
        assert job is not None, "take_job without a job to take"
        job.ticket.running.add(job)
        return job

    async def wait_for_jobs(self, timeout_s: float | None = None, also: asyncio.Event | None = None) -> None:
        self._wakeup.clear()
        await wait_any([self._wakeup] + ([also] if also is not None else []), timeout_s)

    async def _worker(self, index: int) -> None:
        loop = asyncio.get_running_loop()
        while True:
            jobs = await self._batcher.collect(self)
            live = [job for job in jobs if self._still_wanted(job)]
            if live:
                await self._run(loop, live)

    def _still_wanted(self, job: Job) -> bool:
        """False, with the job's future failed, when its ticket closed or its deadline passed."""
        if job.cancel.cancelled or job.ticket.closed:
            reason = "the request ended before this segment ran"
        elif job.ticket.remaining_s <= 0:
            reason = "the request's deadline passed while queued"
        else:
            return True
        job.ticket.running.discard(job)
        job.fail(DeadlineExceeded(reason))
        return False

    async def _run(self, loop: asyncio.AbstractEventLoop, jobs: list[Job]) -> None:
        started = time.monotonic()
        for job in jobs:
            job.started_at = started
            self._running.add(job)
        self._gauge(running_delta=len(jobs))
        try:
            outcomes = await self._batcher.run(loop, self._executor, jobs)
            engine_s = time.monotonic() - started
            if len(jobs) > 1:
                log.debug("batch done", extra={"event": "batch", "size": len(jobs),
                                               "engine_ms": round(engine_s * 1000, 1)})
            for job, outcome in zip(jobs, outcomes):
                self._settle(job, outcome, started, engine_s, len(jobs))
        finally:
            for job in jobs:
                job.ticket.running.discard(job)
                self._running.discard(job)
            self._gauge(running_delta=-len(jobs))
            if self.long_jobs_per_ticket is not None:
                self._wakeup.set()  # a ticket at its cap of long segments may go again

    def _settle(self, job: Job, outcome: Outcome, started: float, engine_s: float, batch_size: int) -> None:
        """Hand one batch member its own result or failure."""
        if isinstance(outcome, EngineDead):
            log.error("engine died", extra={"event": "engine_dead", "error": repr(outcome)})
            if self._on_engine_dead is not None:
                self._on_engine_dead(outcome)
        if job.future.done():
            return
        cancelled = job.cancel.cancelled or isinstance(outcome, EngineCancelled) or (
            isinstance(outcome, TranslationResult) and outcome.finish_reason == "cancelled")
        if cancelled:
            job.fail(DeadlineExceeded("cancelled while decoding"))
        elif isinstance(outcome, BaseException):
            if not isinstance(outcome, EngineDead):
                log.warning("engine failed on a segment",
                            extra={"event": "engine_error", "error": repr(outcome)})
            job.fail(outcome)
        else:
            queue_s = started - job.enqueued_at
            self._recent_engine_s.append(engine_s / batch_size)
            if self.metrics is not None:
                self.metrics.queue_time.observe(queue_s)
                self.metrics.engine_time.observe(engine_s)
                self.metrics.generated_tokens.inc(outcome.generated_tokens)
                self.metrics.prompt_tokens.inc(outcome.prompt_tokens)
            if job.on_delta is not None and outcome.text and not self._batcher.streams:
                job.on_delta(outcome.text)  # a batch does not stream: the whole text, once
            job.future.set_result(SegmentOutcome(outcome, queue_s * 1000, engine_s * 1000))

    def _gauge(self, running_delta: int = 0) -> None:
        if self.metrics is None:
            return
        self.metrics.requests_waiting.set(len(self._tickets))
        self.metrics.segments_waiting.set(self.segments_waiting)
        if running_delta:
            self.metrics.segments_running.inc(running_delta)
