"""Load generators: a closed-loop sweep over clients, open-loop arrivals, and the fairness scenario.

Every loop is bounded twice, by a request count and by time, and stops by
itself. Requests in flight when a bound is hit are allowed to finish (their
latency is real); no new ones start. The clock is injectable so the bounds
are testable without waiting.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

from mtserve.bench.stats import Outcome
from mtserve.bench.targets import Reply, Target
from mtserve.bench.workloads import WorkItem, Workload

Clock = Callable[[], float]
OnOutcome = Callable[[Outcome], None]


@dataclass
class Bounds:
    max_requests: int = 100
    max_seconds: float = 60.0

    def __post_init__(self) -> None:
        if self.max_requests < 1 or self.max_seconds <= 0:
            raise ValueError("a load needs at least one request and a positive time bound")


@dataclass
class LoadResult:
    outcomes: list[Outcome]
    wall_s: float
    background: list[Outcome] = field(default_factory=list)
    dropped: int = 0  # open loop: arrivals that never started before the drain deadline


def _outcome(item: WorkItem, reply: Reply, started: float, latency_s: float) -> Outcome:
    return Outcome(
        kind=item.kind, ok=reply.ok, started=started, latency_s=latency_s, ttft_s=reply.ttft_s,
        generated_tokens=reply.generated_tokens, queue_ms=reply.queue_ms, engine_ms=reply.engine_ms,
        prompt_ms=reply.prompt_ms, decode_ms=reply.decode_ms, chars_in=len(item.text), error=reply.error,
    )


def run_one(target: Target, item: WorkItem, stream: bool, clock: Clock, intended: float | None = None) -> Outcome:
    """One call; latency counts from ``intended`` (an open-loop arrival) when given."""
    started = clock()
    reply = target.call(item, stream=stream)
    ended = clock()
    begin = intended if intended is not None else started
    if reply.ttft_s is not None and intended is not None:
        reply.ttft_s += started - intended
    return _outcome(item, reply, begin, ended - begin)


def closed_loop(
    target: Target,
    workload: Workload,
    clients: int,
    bounds: Bounds,
    *,
    stream: bool = False,
    clock: Clock = time.perf_counter,
    on_outcome: OnOutcome | None = None,
    stop: threading.Event | None = None,
) -> LoadResult:
    """``clients`` threads, each sending its next request as soon as the last one answers."""
    if clients < 1:
        raise ValueError("a closed loop needs at least one client")
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    issued = 0
    t0 = clock()

    def may_start() -> bool:
        nonlocal issued
        with lock:
            if issued >= bounds.max_requests or clock() - t0 >= bounds.max_seconds:
                return False
            if stop is not None and stop.is_set():
                return False
            issued += 1
            return True

    def client() -> None:
        while may_start():
            outcome = run_one(target, workload.next(), stream, clock)
            with lock:
                outcomes.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)

    threads = [threading.Thread(target=client, name=f"bench-client-{i}", daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return LoadResult(outcomes=sorted(outcomes, key=lambda o: o.started), wall_s=clock() - t0)


def arrival_times(rate: float, bounds: Bounds, poisson: bool = True, seed: int = 0) -> list[float]:
    """Offsets (s) of open-loop arrivals: exponential gaps (Poisson) or fixed 1/rate gaps, within the bounds."""
    if rate <= 0:
        raise ValueError("an arrival rate must be positive")
    rng = random.Random(seed)
    times: list[float] = []
    at = 0.0
    while len(times) < bounds.max_requests:
        if at >= bounds.max_seconds:
            break
        times.append(at)
        at += rng.expovariate(rate) if poisson else 1.0 / rate
    return times


def open_loop(
    target: Target,
    workload: Workload,
    rate: float,
    bounds: Bounds,
    *,
    poisson: bool = True,
    seed: int = 0,
    max_in_flight: int = 64,
    drain_s: float = 60.0,
    stream: bool = False,
    clock: Clock = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
    on_outcome: OnOutcome | None = None,
) -> LoadResult:
    """Requests arrive on a schedule whatever the answers do; latency counts from each arrival.

    Arrivals that find ``max_in_flight`` calls running wait in the client and
    that wait is part of their latency (no coordinated omission). After the
    last arrival, calls not started within ``drain_s`` are dropped and counted.
    """
    schedule = arrival_times(rate, bounds, poisson=poisson, seed=seed)
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    t0 = clock()
    drain_deadline = [float("inf")]
    dropped = 0

    def job(item: WorkItem, intended: float) -> None:
        nonlocal dropped
        if clock() > drain_deadline[0]:
            with lock:
                dropped += 1
            return
        outcome = run_one(target, item, stream, clock, intended=intended)
        with lock:
            outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)

    with ThreadPoolExecutor(max_workers=max(1, max_in_flight), thread_name_prefix="bench-open") as pool:
        for offset in schedule:
            wait = t0 + offset - clock()
            if wait > 0:
                sleep(wait)
            pool.submit(job, workload.next(), t0 + offset)
        drain_deadline[0] = clock() + drain_s
    return LoadResult(outcomes=sorted(outcomes, key=lambda o: o.started), wall_s=clock() - t0, dropped=dropped)


def fairness(
    target: Target,
    short: Workload,
    long: Workload,
    clients: int,
    bounds: Bounds,
    *,
    head_start_s: float = 0.3,
    clock: Clock = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
    on_outcome: OnOutcome | None = None,
) -> LoadResult:
    """One long document goes in first; then ``clients`` clients send short sentences while it is in the queue.

    Short requests start only while the document is unfinished (and within
    the bounds), so every short latency measured is one that had the document
    ahead of or beside it.
    """
    document_done = threading.Event()
    background: list[Outcome] = []

    def send_document() -> None:
        try:
            background.append(run_one(target, long.next(), False, clock))
        finally:
            document_done.set()

    sender = threading.Thread(target=send_document, name="bench-long-document", daemon=True)
    t0 = clock()
    sender.start()
    sleep(head_start_s)
    result = closed_loop(target, short, clients, bounds, clock=clock, on_outcome=on_outcome, stop=document_done)
    sender.join(timeout=max(0.0, bounds.max_seconds * 4))
    result.background = background
    result.wall_s = clock() - t0
    return result
