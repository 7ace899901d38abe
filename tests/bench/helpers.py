"""A fake target and a fake clock, so the bench logic is tested without a model or real waiting; and the
loader of a script in benchmarks/, which is no package."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from types import ModuleType

from mtserve.bench.targets import Reply
from mtserve.bench.workloads import WorkItem, Workload

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def benchmark_script(name: str) -> ModuleType:
    """benchmarks/NAME.py, imported as a module."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeClock:
    """Time moves only when a call "takes" time or the code sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds

    def sleep(self, seconds: float) -> None:
        self.advance(max(0.0, seconds))


class FakeTarget:
    """Answers at once with fixed figures; counts calls and the most calls in flight."""

    def __init__(self, name: str = "fake", tokens: int = 5, clock: FakeClock | None = None,
                 cost_s: float = 0.0, fail_every: int = 0, log: list | None = None):
        self.name = name
        self.tokens = tokens
        self.clock = clock
        self.cost_s = cost_s
        self.fail_every = fail_every
        self.log = log if log is not None else []
        self.calls: list[WorkItem] = []
        self.started = False
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.started = False

    def pid(self):
        return None

    def describe(self) -> dict:
        return {"kind": "fake"}

    def call(self, item: WorkItem, stream: bool = False) -> Reply:
        with self._lock:
            self.calls.append(item)
            self.log.append(self.name)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            n = len(self.calls)
        if self.clock is not None and self.cost_s:
            self.clock.advance(self.cost_s)
        with self._lock:
            self.in_flight -= 1
        if self.fail_every and n % self.fail_every == 0:
            return Reply(ok=False, error="fake failure")
        return Reply(text=f"<en>{item.text}", generated_tokens=self.tokens, queue_ms=1.0, engine_ms=2.0,
                     ttft_s=0.01 if stream else None)


def make_workload(n: int = 50, kind: str = "short") -> Workload:
    return Workload(kind, [WorkItem(f"句子{i}。", "zh", "en", kind) for i in range(n)])
