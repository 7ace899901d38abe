"""A test double of the Engine interface, for unit tests of the scheduler and API.

It "translates" by tagging the text with the target language, so tests can
check routing, ordering and reassembly without a model. Delays, failures and
cancellation behave like a real engine's: it blocks its worker thread, checks
its CancelToken between "tokens", and streams deltas.
"""

from __future__ import annotations

import threading
import time

from mtserve.engines.base import (
    CancelToken,
    DeltaCallback,
    EngineCancelled,
    EngineDead,
    EngineError,
    EngineRequest,
    TranslationResult,
    every_pair,
)


class FakeEngine:
    name = "fake"
    prompted = False  # no prompt: the guardrails' strict retry does not apply

    def __init__(self, *, delay_s: float = 0.0, slots: int = 2, on_gpu: bool = False, fail_on: str | None = None,
                 delays: dict[str, float] | None = None,
                 hang_on: str | None = None, die_on: str | None = None,
                 languages: tuple[str, ...] = ("en", "zh", "ja", "de", "fr")):
        self.model_name = "fake-model"
        self.languages = languages
        self.max_concurrency = slots
        self.slots = slots
        self.on_gpu = on_gpu
        self.delay_s = delay_s
        self.delays = delays or {}  # per-text delay, overriding delay_s
        self.hang_on = hang_on  # text that blocks its thread, deaf to cancellation, until release()
        self.die_on = die_on  # text that makes the engine report itself dead
        self.loads = 0
        self.load_delay_s = 0.0
        self._release = threading.Event()
        self.fail_on = fail_on
        self.calls: list[EngineRequest] = []
        self.cancelled: list[str] = []
        self.loaded = False
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak_in_flight = 0

    def supports(self, source: str, target: str) -> bool:
        return every_pair(self.languages, source, target)

    def load(self) -> None:
        time.sleep(self.load_delay_s)
        self.loaded = True
        self.loads += 1

    def release(self) -> None:
        """Let hung calls return (test teardown)."""
        self._release.set()

    def close(self) -> None:
        self.loaded = False

    @staticmethod
    def render(request: EngineRequest) -> str:
        return f"<{request.target}>{request.text}"

    def translate(self, request: EngineRequest, cancel: CancelToken | None = None,
                  on_delta: DeltaCallback | None = None) -> TranslationResult:
        with self._lock:
            self.calls.append(request)
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if self.fail_on is not None and self.fail_on in request.text:
                raise EngineError(f"fake failure on {request.text!r}")
            if self.die_on is not None and self.die_on in request.text:
                raise EngineDead(f"fake death on {request.text!r}")
            if self.hang_on is not None and self.hang_on in request.text:
                self._release.wait(timeout=30)
                raise EngineError("released from a hang")
            output = self.render(request)
            steps = 10
            delay_s = self.delays.get(request.text, self.delay_s)
            for i in range(steps):
                if cancel is not None and cancel.cancelled:
                    self.cancelled.append(request.text)
                    raise EngineCancelled("cancelled")
                time.sleep(delay_s / steps)
                if on_delta is not None:
                    on_delta(output[i * len(output) // steps:(i + 1) * len(output) // steps])
            return TranslationResult(text=output, prompt_tokens=len(request.text),
                                     generated_tokens=len(output), engine_ms=self.delay_s * 1000)
        finally:
            with self._lock:
                self.in_flight -= 1
