"""The scheduler with a test double engine: ordering, fairness, deadlines, backpressure, cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import time

import pytest

from mtserve.engines.base import EngineError, EngineRequest
from mtserve.service.scheduler import CallerBusy, DeadlineExceeded, QueueFull, Scheduler
from tests.fakes import FakeEngine


def req(text: str) -> EngineRequest:
    return EngineRequest(text=text, source="zh", target="en")


def run(coro):
    return asyncio.run(coro)


async def until(condition, timeout_s: float = 10.0, what: str = "the condition") -> None:
    """Wait, on the event loop, until ``condition()`` holds: an event to order a test by, where a
    fixed sleep would race a loaded machine."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        await asyncio.sleep(0.002)


async def started(engine: FakeEngine, **kwargs) -> Scheduler:
    scheduler = Scheduler(engine.translate, concurrency=engine.max_concurrency,
                          max_queue=kwargs.pop("max_queue", 8), **kwargs)
    await scheduler.start()
    return scheduler


@pytest.mark.parametrize("slots", [1, 2, 4])
def test_results_come_back_in_submission_order(slots):
    async def main():
        engine = FakeEngine(delay_s=0.01, slots=slots)
        scheduler = await started(engine)
        texts = [f"s{i}" for i in range(12)]
        async with scheduler.ticket(10) as ticket:
            outcomes = await ticket.wait([ticket.submit(req(t)) for t in texts])
        await scheduler.stop()
        return engine, [o.result.text for o in outcomes]

    engine, outputs = run(main())
    assert outputs == [f"<en>s{i}" for i in range(12)]
    assert engine.peak_in_flight <= slots


def test_concurrency_uses_every_slot():
    async def main():
        engine = FakeEngine(delay_s=0.5, slots=3)  # long enough that all three overlap on a busy machine
        scheduler = await started(engine)
        async with scheduler.ticket(10) as ticket:
            await ticket.wait([ticket.submit(req(f"x{i}")) for i in range(6)])
        await scheduler.stop()
        return engine

    assert run(main()).peak_in_flight == 3


def test_a_short_request_is_not_stuck_behind_a_long_document():
    """Round-robin across tickets: the one-line request runs after at most one document segment."""

    async def main():
        engine = FakeEngine(delay_s=0.02, slots=1)
        scheduler = await started(engine)

        async def document():
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req(f"doc{i}")) for i in range(20)])

        async def short():
            await until(lambda: len(engine.calls) >= 1, what="the document's first segment")
            started = len(engine.calls)  # arrives while the document is being decoded
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req("short"))])
            return started

        _, arrived_after = await asyncio.gather(document(), short())
        await scheduler.stop()
        return [c.text for c in engine.calls], arrived_after

    order, arrived_after = run(main())
    # one slot: at most the document segment after the one running when it arrived goes first
    assert order.index("short") <= arrived_after + 1, order
    assert [t for t in order if t.startswith("doc")] == [f"doc{i}" for i in range(20)]


def test_a_segment_of_several_sentences_costs_its_ticket_as_many_turns():
    """A document sent as paragraphs (3 sentences a segment) lets the others take two more rounds
    after each paragraph: the short requests get the share they would get beside it sentence by
    sentence."""

    async def main():
        engine = FakeEngine(delay_s=0.005, slots=1)
        scheduler = await started(engine)

        async def submitted(texts, turns):
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req(t), turns=turns) for t in texts])

        await asyncio.gather(submitted(["p0", "p1", "p2"], 3), submitted([f"a{i}" for i in range(6)], 1),
                             submitted([f"b{i}" for i in range(6)], 1))
        await scheduler.stop()
        return [c.text for c in engine.calls]

    assert run(main()) == ["p0", "a0", "b0", "a1", "b1", "a2", "b2", "p1", "a3", "b3", "a4", "b4", "a5", "b5", "p2"]


def test_owed_turns_leave_no_turn_unused_and_peek_shows_what_take_gives():
    async def main():
        scheduler = Scheduler(FakeEngine().translate, concurrency=1, max_queue=8)  # no workers: taken by hand
        taken = []
        async with scheduler.ticket(30) as document, scheduler.ticket(30) as short:
            document.submit(req("p0"), turns=4)
            document.submit(req("p1"), turns=4)
            short.submit(req("s0"))
            for _ in range(3):  # after s0 nobody else waits: the document's owed turns do not hold it back
                shown = scheduler.peek_job()
                job = scheduler.take_job()
                assert job is shown
                taken.append(job.request.text)
            assert scheduler.peek_job() is None
        return taken

    assert run(main()) == ["p0", "s0", "p1"]


def test_a_ticket_runs_at_most_its_cap_of_long_segments_and_peek_agrees():
    async def main():
        scheduler = Scheduler(FakeEngine().translate, concurrency=4, max_queue=8, long_jobs_per_ticket=2)
        taken = []

        def take() -> None:
            shown = scheduler.peek_job()
            job = scheduler.take_job()
            assert job is shown
            taken.append(job)

        async with scheduler.ticket(30) as document, scheduler.ticket(30) as lines:
            for i in range(4):
                document.submit(req(f"p{i}"), turns=5)
            take(), take()
            assert scheduler.peek_job() is None  # two paragraphs run: the others wait, though workers are free
            for i in range(3):
                lines.submit(req(f"s{i}"))
            take(), take()  # one-sentence segments have no cap
            document.running.discard(taken[0])  # p0 is done: the document may run another paragraph
            take()  # but it still owes p1's turns while others wait
            lines.submit(req("s3"))
            take(), take()
            assert scheduler.peek_job() is None  # p2 and p1 run: p3 waits again
        return [job.request.text for job in taken]

    assert run(main()) == ["p0", "p1", "s0", "s1", "s2", "s3", "p2"]


def test_a_second_long_segment_waits_until_no_other_ticket_has_work():
    """Beside requests that keep coming a document runs one paragraph at a time, whatever it has
    paid in turns; its cap of two is for the slots nobody else wants."""

    async def main():
        scheduler = Scheduler(FakeEngine().translate, concurrency=8, max_queue=8, long_jobs_per_ticket=2)
        taken = []

        def take() -> None:
            shown = scheduler.peek_job()
            job = scheduler.take_job()
            assert job is shown
            taken.append(job.request.text)

        async with scheduler.ticket(30) as document, scheduler.ticket(30) as lines:
            for i in range(3):
                document.submit(req(f"p{i}"), turns=2)
            take()
            for i in range(6):
                lines.submit(req(f"s{i}"))
            for _ in range(6):
                take()
            take()  # the lines are all running: the document takes a second slot
            assert scheduler.peek_job() is None  # and no third
        return taken

    assert run(main()) == ["p0", "s0", "s1", "s2", "s3", "s4", "s5", "p1"]


def test_a_document_of_paragraphs_that_came_first_leaves_slots_to_a_later_request():
    """Without the cap its four paragraphs would fill the four slots, and the one-line request
    would wait for a whole paragraph; with it the request runs next, beside the document."""

    async def main():
        engine = FakeEngine(delay_s=0.5, slots=4)
        scheduler = await started(engine, long_jobs_per_ticket=2)

        async def document():
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req(f"p{i}"), turns=5) for i in range(4)])

        async def short():
            await until(lambda: len(engine.calls) >= 2, what="the document's first paragraphs")
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req("short"))])

        await asyncio.gather(document(), short())
        await scheduler.stop()
        return [c.text for c in engine.calls]

    assert run(main()) == ["p0", "p1", "short", "p2", "p3"]


def test_a_lone_document_of_sentences_still_fills_every_slot():
    async def main():
        engine = FakeEngine(delay_s=0.3, slots=4)
        scheduler = await started(engine, long_jobs_per_ticket=2)
        async with scheduler.ticket(30) as ticket:
            await ticket.wait([ticket.submit(req(f"s{i}")) for i in range(8)])
        async with scheduler.ticket(30) as ticket:
            await ticket.wait([ticket.submit(req(f"p{i}"), turns=3) for i in range(4)])
        await scheduler.stop()
        return engine

    engine = run(main())
    assert engine.peak_in_flight == 4  # the sentences; the paragraphs ran two at a time
    assert [c.text for c in engine.calls][8:] == ["p0", "p1", "p2", "p3"]


def test_one_caller_holds_at_most_its_share_of_the_queue_and_the_others_are_still_admitted():
    async def main():
        scheduler = await started(FakeEngine(slots=1), max_queue=8, max_per_caller=2)
        async with contextlib.AsyncExitStack() as held:
            for _ in range(2):
                await held.enter_async_context(scheduler.ticket(10, caller="key:a"))
            with pytest.raises(CallerBusy, match="2 requests in progress") as refused:
                async with scheduler.ticket(10, caller="key:a"):
                    pass
            async with scheduler.ticket(10, caller="key:b"), scheduler.ticket(10):  # others, and the uncounted
                admitted = scheduler.admitted
        async with scheduler.ticket(10, caller="key:a"):  # its share is back once its requests end
            pass
        await scheduler.stop()
        return refused.value, admitted

    refused, admitted = run(main())
    assert refused.retry_after_s >= 1 and admitted == 4


def test_full_queue_refuses_at_once_with_retry_after():
    async def main():
        engine = FakeEngine(delay_s=0.2, slots=1)
        scheduler = await started(engine, max_queue=2)
        holders = []
        gate = asyncio.Event()

        async def hold():
            async with scheduler.ticket(10) as ticket:
                holders.append(ticket)
                fut = ticket.submit(req("hold"))
                await gate.wait()
                await ticket.wait([fut])

        tasks = [asyncio.create_task(hold()) for _ in range(2)]
        while len(holders) < 2:
            await asyncio.sleep(0.01)
        t0 = time.monotonic()
        with pytest.raises(QueueFull) as info:
            async with scheduler.ticket(10):
                pass
        refused_in = time.monotonic() - t0
        gate.set()
        await asyncio.gather(*tasks)
        # capacity is back once the holders are done
        async with scheduler.ticket(10) as ticket:
            await ticket.wait([ticket.submit(req("after"))])
        await scheduler.stop()
        return info.value, refused_in

    error, refused_in = run(main())
    print(f"\nrefused in {refused_in * 1000:.1f} ms")
    assert error.retry_after_s >= 1
    assert refused_in < 1.0  # at once: the holders keep the slot until the gate opens; a wait would hang


def test_deadline_raises_and_cancels_the_running_work():
    async def main():
        engine = FakeEngine(delay_s=10.0, slots=1)
        scheduler = await started(engine)
        t0 = time.monotonic()
        with pytest.raises(DeadlineExceeded):
            async with scheduler.ticket(0.2) as ticket:
                await ticket.wait([ticket.submit(req("slow")), ticket.submit(req("queued"))])
        elapsed = time.monotonic() - t0
        await until(lambda: engine.cancelled, what="the engine hearing its cancel")
        await scheduler.stop()
        return engine, elapsed

    engine, elapsed = run(main())
    print(f"\ndeadline 0.2 s: raised after {elapsed:.2f} s (the segment would take 10 s)")
    assert elapsed < 5.0  # at the deadline, not at the end of the 10 s segment
    assert engine.cancelled == ["slow"]
    assert [c.text for c in engine.calls] == ["slow"]  # the queued one never ran


def test_cancelling_the_caller_stops_the_engine_and_frees_the_slot():
    async def main():
        engine = FakeEngine(delay_s=10.0, slots=1, delays={"next": 0.0})
        scheduler = await started(engine)

        async def caller():
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req("abandoned"))])

        task = asyncio.create_task(caller())
        await until(lambda: engine.calls, what="the abandoned segment reaching the engine")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        t0 = time.monotonic()
        async with scheduler.ticket(10) as ticket:
            [outcome] = await ticket.wait([ticket.submit(req("next"))])
        waited = time.monotonic() - t0
        await scheduler.stop()
        return engine, outcome, waited, scheduler.admitted

    engine, outcome, waited, admitted = run(main())
    print(f"\nthe next request waited {waited:.2f} s (the abandoned decode had 10 s to go)")
    assert engine.cancelled == ["abandoned"]
    assert outcome.result.text == "<en>next"
    assert waited < 5.0  # it did not wait for the abandoned decode to finish
    assert admitted == 0


def test_an_engine_error_fails_only_its_own_request():
    async def main():
        engine = FakeEngine(delay_s=0.01, slots=2, fail_on="bad")
        scheduler = await started(engine)

        async def one(text):
            async with scheduler.ticket(10) as ticket:
                [outcome] = await ticket.wait([ticket.submit(req(text))])
                return outcome.result.text

        results = await asyncio.gather(one("good1"), one("bad"), one("good2"), return_exceptions=True)
        await scheduler.stop()
        return results

    good1, bad, good2 = run(main())
    assert good1 == "<en>good1" and good2 == "<en>good2"
    assert isinstance(bad, EngineError)


def test_deltas_reach_the_event_loop_in_order():
    async def main():
        engine = FakeEngine(delay_s=0.05, slots=1)
        scheduler = await started(engine)
        seen: list[str] = []
        async with scheduler.ticket(10) as ticket:
            [outcome] = await ticket.wait([ticket.submit(req("streamed text"), on_delta=seen.append)])
        await asyncio.sleep(0)  # callbacks scheduled with call_soon_threadsafe
        await scheduler.stop()
        return "".join(seen), outcome.result.text

    streamed, final = run(main())
    assert streamed == final == "<en>streamed text"


def test_a_lone_request_on_an_idle_engine_does_not_wait():
    async def main():
        engine = FakeEngine(delay_s=0.0, slots=1)
        scheduler = await started(engine)
        async with scheduler.ticket(10) as ticket:
            [outcome] = await ticket.wait([ticket.submit(req("alone"))])
        await scheduler.stop()
        return outcome

    queue_ms = run(main()).queue_ms
    print(f"\nalone on an idle engine: queued {queue_ms:.1f} ms")
    assert queue_ms < 250  # no hold window for company; generous for a loaded machine


def test_interactive_requests_go_before_background_work():
    from mtserve.service.scheduler import Priority

    async def main():
        engine = FakeEngine(delay_s=0.02, slots=1)
        scheduler = await started(engine)

        async def document():
            async with scheduler.ticket(30, priority=Priority.BACKGROUND) as ticket:
                await ticket.wait([ticket.submit(req(f"doc{i}")) for i in range(10)])

        arrived: list[int] = []

        async def interactive(i):
            await until(lambda: len(engine.calls) >= 1, what="the document's first segment")
            arrived.append(len(engine.calls))  # while the document is being decoded
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req(f"chat{i}-{j}")) for j in range(3)])

        await asyncio.gather(document(), interactive(0), interactive(1))
        await scheduler.stop()
        return [c.text for c in engine.calls], max(arrived)

    order, arrived_after = run(main())
    chats = [i for i, t in enumerate(order) if t.startswith("chat")]
    assert chats == list(range(chats[0], chats[0] + 6)), order  # no document segment in between
    assert chats[0] <= arrived_after + 1, order  # at most the next document segment went first


def test_a_request_that_would_only_wait_to_time_out_is_refused_at_once():
    """Round robin serves one segment of each waiting request before a newcomer's first: ten requests
    ahead are ~3 s of turns, past a 1 s deadline; one request of ten segments ahead is one turn."""
    async def main():
        engine = FakeEngine(delay_s=0.3, slots=1)
        scheduler = await started(engine, max_queue=50)
        async with scheduler.ticket(10) as ticket:  # teach it how long a segment takes
            await ticket.wait([ticket.submit(req("warm"))])

        async def backlog(segments: int):
            async with scheduler.ticket(30) as ticket:
                await ticket.wait([ticket.submit(req(f"b{i}")) for i in range(segments)])

        long_one = asyncio.create_task(backlog(10))
        await until(lambda: scheduler.segments_waiting >= 9, what="the long request queueing")
        async with scheduler.ticket(1.0) as ticket:  # behind one long request: its turn comes next
            await ticket.wait([ticket.submit(req("short"))])
        many = [asyncio.create_task(backlog(1)) for _ in range(10)]
        await until(lambda: scheduler.admitted >= 11, what="ten short requests queueing")
        with pytest.raises(QueueFull) as info:  # ten turns ahead of it, ~3 s, 1 s deadline
            async with scheduler.ticket(1.0):
                pass
        async with scheduler.ticket(30) as ticket:  # a patient request is still admitted
            pass
        for task in [long_one, *many]:
            task.cancel()
        await scheduler.stop()
        return info.value

    assert run(main()).retry_after_s >= 2
