"""The runtime's cap on one request's paragraphs in flight (``paragraph_slots``)."""

from __future__ import annotations

import asyncio

import pytest

from mtserve.service.runtime import Runtime
from mtserve.settings import Settings
from tests.fakes import FakeEngine


class LlamaLikeEngine(FakeEngine):
    """Its max_concurrency counts queue_ahead segments that wait in llama.cpp's queue."""

    name = "llamacpp"

    def __init__(self, slots: int, queue_ahead: int, on_gpu: bool = False):
        super().__init__(slots=slots + queue_ahead, on_gpu=on_gpu)
        self.slots = slots


class BatchLikeEngine(FakeEngine):
    """Declares batching (``BatchingEngine``): the scheduler then hands it batches, never one segment."""

    max_batch_size = 8
    batch_type = "examples"

    def batch_cost(self, request):
        return 1

    def translate_batch(self, requests, cancels=None):
        return [self.translate(request) for request in requests]


def _cap(tmp_path, engine, **settings) -> int | None:
    async def main():
        runtime = Runtime(Settings(home=tmp_path, **settings), engine)
        await runtime.start()
        await runtime.wait_ready()
        cap = runtime.service.scheduler.long_jobs_per_ticket
        await runtime.stop()
        return cap

    return asyncio.run(main())


@pytest.mark.parametrize(("engine", "settings", "cap"), [
    (LlamaLikeEngine(slots=4, queue_ahead=2), {"queue_ahead": 2}, 1),  # a CPU: one at a time
    (LlamaLikeEngine(slots=4, queue_ahead=2, on_gpu=True), {"queue_ahead": 2}, 2),  # half the slots, not of the workers
    (LlamaLikeEngine(slots=1, queue_ahead=2, on_gpu=True), {"queue_ahead": 2}, 1),  # never 0
    (LlamaLikeEngine(slots=4, queue_ahead=2), {"queue_ahead": 2, "paragraph_slots": 4}, 4),
    (FakeEngine(slots=8, on_gpu=True), {}, 4),
    (FakeEngine(slots=8), {"paragraph_slots": 3}, 3),
    (BatchLikeEngine(slots=1), {}, None),  # a batch of a document's paragraphs stays whole
])
def test_one_request_runs_one_paragraph_on_a_cpu_and_half_the_slots_on_a_gpu_unless_set(tmp_path, engine,
                                                                                        settings, cap):
    assert _cap(tmp_path, engine, **settings) == cap
