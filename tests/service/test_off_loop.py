"""Long text is read, cut and planned in a worker thread, so megabytes of it cannot stall the event
loop (on the loop, a single-line document of a million characters held /health for 35 s); short
text stays on the loop. The answer and the usage are the same either way."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import pytest

from mtserve.service import planning
from mtserve.service.metrics import Metrics, watch_event_loop
from mtserve.service.planning import OFF_LOOP_CHARS
from mtserve.service.request import TranslationRequest, Usage
from mtserve.text import abandon
from tests.fakes import FakeEngine
from tests.quality.helpers import service_for

SHORT = "今天天气很好。"
LONG = "我们明天去上海开会，然后回北京。" * (OFF_LOOP_CHARS // 10)


def _spy_on_planning(monkeypatch) -> list[int]:
    """The thread ids that cut text into segments, in order."""
    threads: list[int] = []
    split_text = planning.split_text

    def spy(*args, **kwargs):
        threads.append(threading.get_ident())
        return split_text(*args, **kwargs)

    monkeypatch.setattr(planning, "split_text", spy)
    return threads


def test_a_long_text_is_planned_off_the_loop_and_a_short_one_on_it(tmp_path, monkeypatch) -> None:
    threads = _spy_on_planning(monkeypatch)

    async def main() -> int:
        async with service_for(FakeEngine(), tmp_path) as service:
            await service.translate(TranslationRequest([SHORT], "en", source="zh"))
            await service.translate(TranslationRequest([LONG], "en", source="zh"))
            async for _ in service.stream(TranslationRequest.of(LONG, "en", source="zh")):
                pass
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(threads) == 3
    assert threads[0] == loop_thread
    assert threads[1] != loop_thread and threads[2] != loop_thread


def test_off_the_loop_the_answer_and_the_usage_are_the_same(tmp_path, monkeypatch) -> None:
    async def run() -> tuple[list[str], Usage]:
        usage = Usage()
        async with service_for(FakeEngine(), tmp_path, segment_budget_chars=0) as service:  # a segment a sentence
            results = await service.translate(TranslationRequest([LONG, LONG[:-1], SHORT], "en", source="zh"), usage)
        return [r.text for r in results], usage

    off_loop, off_usage = asyncio.run(run())
    monkeypatch.setattr(planning, "OFF_LOOP_CHARS", 10 ** 9)  # everything on the loop
    on_loop, on_usage = asyncio.run(run())
    assert off_loop == on_loop
    assert off_usage.segments == on_usage.segments == 2 * LONG.count("。") + 1
    assert off_usage.cached_segments == on_usage.cached_segments


def test_with_a_translation_memory_for_the_pair_even_a_short_text_is_planned_off_the_loop(tmp_path,
                                                                                           monkeypatch) -> None:
    threads = _spy_on_planning(monkeypatch)

    async def main() -> int:
        async with service_for(FakeEngine(), tmp_path) as service:
            service.memory.add([("打开设置", "Open the settings")], "zh", "en", origin="test")
            await service.translate(TranslationRequest([SHORT], "en",
                                                       source="zh"))  # the memory's lookups: off the loop
            await service.translate(TranslationRequest([SHORT], "en", source="zh", memory=False))  # no memory: on it
            await service.translate(TranslationRequest(["Hallo."], "en", source="de"))  # no entries for the pair: on it
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert len(threads) == 3
    assert threads[0] != loop_thread and threads[1] == loop_thread and threads[2] == loop_thread


def test_the_loop_lag_watcher_sees_work_that_holds_the_loop() -> None:
    """mtserve_event_loop_lag_seconds: a callback that holds the loop for 0.3 s shows as one late timer."""
    lag = Metrics().event_loop_lag

    async def main() -> None:
        watcher = asyncio.create_task(watch_event_loop(lag, every_s=0.01))
        await asyncio.sleep(0.05)  # a few timely checks first
        time.sleep(0.3)  # holds the loop, as planning megabytes on it would
        await asyncio.sleep(0.05)
        watcher.cancel()

    asyncio.run(main())
    samples = lag.collect()[0].samples
    bucket = {s.labels["le"]: s.value for s in samples if s.name.endswith("_bucket")}
    total = next(s.value for s in samples if s.name.endswith("_sum"))
    assert bucket["+Inf"] > 3  # the timely checks and the late one
    assert bucket["+Inf"] - bucket["0.1"] == 1  # exactly the held one was late by over 0.1 s
    assert total >= 0.25


def test_planning_stops_when_its_request_is_cancelled(tmp_path, monkeypatch) -> None:
    """A deleted job's or a gone client's text is not cut to the end in a thread nobody waits for."""
    started, ended = threading.Event(), threading.Event()
    outcome: list[str] = []
    split_text = planning.split_text

    def spy(*args, **kwargs):
        started.set()
        try:
            pieces = split_text(*args, **kwargs)
        except abandon.Abandoned:
            outcome.append("abandoned")
            raise
        else:
            outcome.append("finished")
            return pieces
        finally:
            ended.set()

    monkeypatch.setattr(planning, "split_text", spy)
    huge = "a b\n" * 500_000  # seconds of cutting: a subtitle cue as tests/hostile/files.py sends one

    async def main() -> None:
        async with service_for(FakeEngine(), tmp_path) as service:
            task = asyncio.create_task(service.translate(TranslationRequest([huge], "zh", source="en")))
            await asyncio.to_thread(started.wait, 30)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            assert await asyncio.to_thread(ended.wait, 30)

    asyncio.run(main())
    assert outcome == ["abandoned"]


@pytest.mark.parametrize("text", ["字" * 200_000, "ab " * 70_000])
def test_one_huge_sentence_stops_at_its_cuts_too(text) -> None:
    """Text with no sentence end is one sentence; cutting it to size checks the stop as it goes."""
    from mtserve.text.segment import _fit  # split_text checks per sentence, before this

    with abandon.stoppable() as stop:
        stop.set()
        with pytest.raises(abandon.Abandoned):
            _fit(text, 200, 0)
    assert "".join(_fit(text, 200, 0)) == text  # without a stop, it cuts as before
