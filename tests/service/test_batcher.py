"""The dynamic batcher, through the scheduler, with a test-double batching engine.

Triton's rules: the largest batch available now; a partial batch is held only
while the engine is busy, until its oldest request has waited
max_queue_delay_ms; a lone request on an idle engine goes at once. Failures
are isolated by retrying a failed batch's members one by one.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass

import pytest

from mtserve.engines.base import (
    BatchingEngine,
    CancelToken,
    EngineError,
    EngineRequest,
    TranslationResult,
)
from mtserve.service.batcher import BatchPolicy, DynamicBatcher, batcher_for
from mtserve.service.scheduler import DeadlineExceeded, Scheduler
from tests.fakes import FakeEngine


@dataclass
class BatchCall:
    texts: list[str]
    started: float  # time.monotonic()
    finished: float | None = None


class FakeBatchEngine:
    """Translates a whole batch per call, taking ``delay_s`` per batch whatever its size."""

    name = "fake-batch"
    prompted = False

    def __init__(
        self,
        *,
        delay_s: float = 0.05,
        max_batch_size: int = 8,
        slots: int = 1,
        batch_type: str = "examples",
        fail_on: str | None = None,
    ):
        self.model_name = "fake-seq2seq"
        self.languages = ("zh", "en")
        self.max_concurrency = slots
        self.slots = slots
        self.on_gpu = False
        self.max_batch_size = max_batch_size
        self.batch_type = batch_type
        self.delay_s = delay_s
        self.fail_on = fail_on
        self.calls: list[BatchCall] = []
        self._lock = threading.Lock()

    def supports(self, source: str, target: str) -> bool:
        return source != target and {source, target} <= set(self.languages)

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    def batch_cost(self, request: EngineRequest) -> int:
        return len(request.text)

    def translate_batch(self, requests, cancels=None) -> list[TranslationResult]:
        call = BatchCall([r.text for r in requests], time.monotonic())
        with self._lock:
            self.calls.append(call)
        if self.fail_on is not None and any(self.fail_on in r.text for r in requests):
            raise EngineError(f"fake failure in a batch of {len(requests)}")
        deadline = time.monotonic() + self.delay_s
        cancels = cancels or [None] * len(requests)
        while time.monotonic() < deadline and not all(c is not None and c.cancelled for c in cancels):
            time.sleep(0.002)
        call.finished = time.monotonic()
        return [
            TranslationResult(
                text=f"<{r.target}>{r.text}",
                generated_tokens=len(r.text),
                finish_reason="cancelled" if c is not None and c.cancelled else "stop",
            )
            for r, c in zip(requests, cancels)
        ]

    def translate(self, request, cancel=None, on_delta=None) -> TranslationResult:
        return self.translate_batch([request], [cancel])[0]

    @property
    def batch_sizes(self) -> list[int]:
        return [len(call.texts) for call in self.calls]


def req(text: str) -> EngineRequest:
    return EngineRequest(text=text, source="zh", target="en")


async def started(engine: FakeBatchEngine, max_queue_delay_ms: float = 0.0, max_queue: int = 64) -> Scheduler:
    scheduler = Scheduler(
        engine.translate,
        concurrency=engine.max_concurrency,
        max_queue=max_queue,
        batcher=batcher_for(engine, max_queue_delay_ms),
    )
    await scheduler.start()
    return scheduler


def run(coro):
    return asyncio.run(coro)


async def engine_busy(engine: FakeBatchEngine, timeout_s: float = 10.0) -> None:
    """Wait, on the event loop, until the engine has begun its first batch (bounded)."""
    deadline = time.monotonic() + timeout_s
    while not engine.calls:
        assert time.monotonic() < deadline, f"the engine began no batch within {timeout_s} s"
        await asyncio.sleep(0.002)


def test_a_batching_engine_gets_a_batcher_and_an_llm_engine_does_not():
    assert isinstance(FakeBatchEngine(), BatchingEngine)
    assert isinstance(batcher_for(FakeBatchEngine(max_batch_size=4), 5), DynamicBatcher)
    assert batcher_for(FakeEngine(), 5) is None


def test_a_lone_request_on_an_idle_engine_is_dispatched_at_once():
    async def main():
        engine = FakeBatchEngine(delay_s=0.01)
        scheduler = await started(engine, max_queue_delay_ms=2000)  # a long hold must not apply
        async with scheduler.ticket(10) as ticket:
            t0 = time.monotonic()
            [outcome] = await ticket.wait([ticket.submit(req("lone"))])
            elapsed = time.monotonic() - t0
        await scheduler.stop()
        return engine, outcome, elapsed

    engine, outcome, elapsed = run(main())
    assert engine.batch_sizes == [1]
    assert outcome.queue_ms < 50 and elapsed < 0.5
    assert outcome.result.text == "<en>lone"


@pytest.mark.parametrize("limit, burst", [(4, 10), (8, 20), (8, 8), (32, 5)])
def test_a_burst_forms_batches_no_larger_than_the_limit(limit, burst):
    async def main():
        engine = FakeBatchEngine(delay_s=0.02, max_batch_size=limit)
        scheduler = await started(engine)
        async with scheduler.ticket(10) as ticket:
            outcomes = await ticket.wait([ticket.submit(req(f"s{i}")) for i in range(burst)])
        await scheduler.stop()
        return engine, [o.result.text for o in outcomes]

    engine, texts = run(main())
    assert texts == [f"<en>s{i}" for i in range(burst)]  # each result back to its own request
    assert all(size <= limit for size in engine.batch_sizes)
    assert sum(engine.batch_sizes) == burst
    assert len(engine.batch_sizes) == -(-burst // limit)  # the largest batch available each time


def test_a_token_budget_counts_padded_tokens():
    async def main():
        engine = FakeBatchEngine(delay_s=0.01, max_batch_size=12, batch_type="tokens")
        scheduler = await started(engine)
        texts = ["aa", "bb", "cccc", "dddddd", "e", "ffffffffffffffffff"]
        async with scheduler.ticket(10) as ticket:
            await ticket.wait([ticket.submit(req(t)) for t in texts])
        await scheduler.stop()
        return engine

    engine = run(main())
    for call in engine.calls:
        cost = len(call.texts) * max(len(t) for t in call.texts)
        assert cost <= 12 or len(call.texts) == 1, call.texts


def test_one_bad_input_fails_only_its_own_request():
    async def main():
        engine = FakeBatchEngine(delay_s=0.01, max_batch_size=8, fail_on="bad")
        scheduler = await started(engine)
        async with scheduler.ticket(10) as ticket:
            futures = [ticket.submit(req(t)) for t in ("ok1", "bad", "ok2", "ok3")]
            await asyncio.wait(futures)
        await scheduler.stop()
        return engine, futures

    engine, futures = run(main())
    assert [f.result().result.text for f in (futures[0], futures[2], futures[3])] == [
        "<en>ok1",
        "<en>ok2",
        "<en>ok3",
    ]
    assert isinstance(futures[1].exception(), EngineError)
    # the failed batch, then each member alone
    assert engine.batch_sizes == [4, 1, 1, 1, 1]


def test_a_partial_batch_is_held_while_the_engine_is_busy_until_max_queue_delay():
    async def main():
        engine = FakeBatchEngine(delay_s=1.5, max_batch_size=8, slots=2)
        scheduler = await started(engine, max_queue_delay_ms=150)
        async with scheduler.ticket(10) as ticket:
            first = ticket.submit(req("first"))  # idle engine: goes at once, alone
            await engine_busy(engine)
            t_second = time.monotonic()
            second = ticket.submit(req("second"))  # engine busy: held for company
            await asyncio.sleep(0.05)
            third = ticket.submit(req("third"))  # arrives during the hold and joins
            await ticket.wait([first, second, third])
        await scheduler.stop()
        return engine, t_second

    engine, t_second = run(main())
    assert [call.texts for call in engine.calls] == [["first"], ["second", "third"]]
    held_s = engine.calls[1].started - t_second
    first_finished = engine.calls[0].finished
    print(f"held {held_s:.3f} s (max_queue_delay 0.15 s); the busy batch ran 1.5 s")
    assert held_s >= 0.14, held_s  # held for company, about max_queue_delay (a busy CPU only adds)
    # ... but not until the busy batch was done: the hold ends at max_queue_delay
    assert first_finished is not None and engine.calls[1].started < first_finished


def test_a_held_batch_goes_when_the_engine_goes_idle():
    async def main():
        engine = FakeBatchEngine(delay_s=0.15, max_batch_size=8, slots=2)
        scheduler = await started(engine, max_queue_delay_ms=5000)
        async with scheduler.ticket(10) as ticket:
            first = ticket.submit(req("first"))
            await engine_busy(engine)
            t_second = time.monotonic()
            second = ticket.submit(req("second"))
            await ticket.wait([first, second])
        await scheduler.stop()
        return engine, t_second

    engine, t_second = run(main())
    waited = engine.calls[1].started - t_second
    assert waited < 1.0, waited  # not the 5 s delay: nothing else was running to wait for


def test_batches_stay_fair_across_requests():
    """A one-line request arriving behind a long document rides in the very next batch."""

    async def main():
        engine = FakeBatchEngine(delay_s=0.05, max_batch_size=4)
        scheduler = await started(engine)

        async def document():
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req(f"doc{i}")) for i in range(24)])

        async def short():
            await engine_busy(engine)  # arrives while the first document batch runs
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req("short"))])

        await asyncio.gather(document(), short())
        await scheduler.stop()
        return engine

    engine = run(main())
    batch_with_short = next(i for i, call in enumerate(engine.calls) if "short" in call.texts)
    assert batch_with_short == 1, [c.texts for c in engine.calls]
    docs = [t for call in engine.calls for t in call.texts if t.startswith("doc")]
    assert docs == [f"doc{i}" for i in range(24)]


def test_a_deadline_cancels_the_batch_members_of_that_request():
    async def main():
        engine = FakeBatchEngine(delay_s=2.0, max_batch_size=8)
        scheduler = await started(engine)
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            async with scheduler.ticket(0.2) as ticket:
                await ticket.wait([ticket.submit(req("slow")), ticket.submit(req("slower"))])
        # the engine saw the cancel tokens and returned early, freeing the worker
        async with scheduler.ticket(10) as ticket:
            [outcome] = await ticket.wait([ticket.submit(req("next"))])
        elapsed = time.monotonic() - t0
        await scheduler.stop()
        return outcome, elapsed

    outcome, elapsed = run(main())
    assert outcome.result.text == "<en>next"
    assert elapsed < 3.5


def test_streaming_callers_get_the_whole_text_once():
    async def main():
        engine = FakeBatchEngine(delay_s=0.01)
        scheduler = await started(engine)
        deltas: list[str] = []
        async with scheduler.ticket(10) as ticket:
            await ticket.wait([ticket.submit(req("streamed"), on_delta=deltas.append)])
        await scheduler.stop()
        return deltas

    assert run(main()) == ["<en>streamed"]


def test_policy_cost_counts_examples_or_padded_tokens():
    assert BatchPolicy(8).cost([3, 9, 1]) == 3
    assert BatchPolicy(8, batch_type="tokens").cost([3, 9, 1]) == 27
    assert BatchPolicy(8, batch_type="tokens").fits([50])  # one row always fits


def test_a_job_cancelled_while_its_batch_is_held_never_reaches_the_engine():
    async def main():
        engine = FakeBatchEngine(delay_s=1.0, max_batch_size=8, slots=2)
        scheduler = await started(engine, max_queue_delay_ms=300)
        async with scheduler.ticket(10) as busy:
            first = busy.submit(req("first"))  # idle engine: dispatched at once, alone
            await engine_busy(engine)
            async with scheduler.ticket(10) as gone:
                held = gone.submit(req("held"))  # engine busy: taken into a batch that is held
                await asyncio.sleep(0.05)
            # its request ended during the hold: the batch must drop it, not send it
            await busy.wait([first])
        async with scheduler.ticket(10) as ticket:
            [outcome] = await ticket.wait([ticket.submit(req("after"))])
        await scheduler.stop()
        return engine, held, outcome

    engine, held, outcome = run(main())
    assert isinstance(held.exception(), DeadlineExceeded)
    assert [call.texts for call in engine.calls] == [["first"], ["after"]]
    assert outcome.result.text == "<en>after"


def test_a_job_whose_request_ended_while_a_segment_ran_is_cancelled_and_the_next_runs():
    async def main():
        engine = FakeBatchEngine(delay_s=0.2, max_batch_size=1)
        scheduler = await started(engine)
        async with scheduler.ticket(10) as ticket:
            first = ticket.submit(req("first"))
            await engine_busy(engine)
        # the ticket closed with "first" running; a new request still runs normally
        async with scheduler.ticket(10) as ticket:
            [outcome] = await ticket.wait([ticket.submit(req("second"))])
        await scheduler.stop()
        return engine, first, outcome

    engine, first, outcome = run(main())
    assert isinstance(first.exception(), DeadlineExceeded)
    assert outcome.result.text == "<en>second"
    assert [call.texts for call in engine.calls] == [["first"], ["second"]]


def test_cancel_token_type_is_shared_with_the_engine():
    token = CancelToken()
    token.cancel()
    assert FakeBatchEngine(delay_s=0.5).translate_batch([req("x")], [token])[0].finish_reason == "cancelled"
