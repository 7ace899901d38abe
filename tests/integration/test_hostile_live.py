"""Every hostile request and document, sent to a live server with the real small model, while a probe
polls /health/live.

The bodies come from tests/hostile/bodies.py and the documents from tests/hostile/files.py. Each
must end within HOSTILE_S with a 4xx JSON error in its API's shape (or, for a legal edge case, its
ordinary answer), the server's event loop must never be held for PROBE_S (its own
mtserve_event_loop_lag_seconds), /health/live must answer every probe meanwhile, and the server
must be alive after them all. A probe's round trip also counts the test's own process and whatever
else the 2-core machine runs, so it is bounded at PROBE_ROUND_TRIP_S; the loop's lag is the
server's part of it. Bounds are one-sided and generous for a loaded machine; the figures print.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from tests.hostile.bodies import error_message, hostile_requests
from tests.hostile.files import hostile_files
from tests.servers import real_server, samples_named

pytestmark = pytest.mark.model

HOSTILE_S = 5.0  # the bound on each hostile request body and document
PROBE_S = 1.0  # and on every /health/live answer meanwhile: the time the server's loop is held
PROBE_ROUND_TRIP_S = 2.5  # a probe's whole round trip, scheduling of both processes included
PROBE_EVERY_S = 0.1


class Probe(threading.Thread):
    """Polls /health/live and keeps the slowest answer; a failure counts as an infinite one."""

    def __init__(self, url: str):
        super().__init__(daemon=True)
        self.url = url
        self.stop = threading.Event()
        self.latencies: list[float] = []

    def run(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.stop.is_set():
                started = time.perf_counter()
                try:
                    ok = client.get(f"{self.url}/health/live").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.latencies.append(time.perf_counter() - started if ok else float("inf"))
                self.stop.wait(PROBE_EVERY_S)


@pytest.fixture(scope="module")
def hostile_server(model_path):
    with real_server(model_path, {"MTSERVE_N_PARALLEL": "2"}) as (url, proc):
        yield url, proc


def test_hostile_input_never_stalls_or_breaks_a_live_server(hostile_server):
    url, proc = hostile_server
    lag_before = _loop_lag(url)
    probe = Probe(url)
    probe.start()
    slowest: tuple[float, str] = (0.0, "")
    problems: list[str] = []
    slow_documents: list[str] = []
    sent = 0
    try:
        with httpx.Client(timeout=60) as client:
            for case in hostile_requests():
                if case.needs or case.engine_work:  # keys-on servers and engine work: tests/api covers them
                    continue
                started = time.perf_counter()
                answer = client.request(case.method, url + case.path, **case.httpx_kwargs())
                elapsed = time.perf_counter() - started
                sent += 1
                slowest = max(slowest, (elapsed, case.name))
                low, high = case.status
                if not low <= answer.status_code <= high:
                    problems.append(f"{case.name}: {answer.status_code} not in {case.status}")
                elif answer.status_code >= 400 and error_message(case.path, _json(answer)) is None:
                    problems.append(f"{case.name}: {answer.status_code} without a JSON error")
                if elapsed > HOSTILE_S:
                    problems.append(f"{case.name}: took {elapsed:.1f} s")
            for case in hostile_files():
                started = time.perf_counter()
                answer = client.post(f"{url}/jobs", data={"source": "zh", "target": "en"},
                                     files={"file": (case.filename, case.data)})
                elapsed = time.perf_counter() - started
                sent += 1
                slowest = max(slowest, (elapsed, case.filename))
                if answer.status_code == 202:  # a legal edge case: queued; not ours to translate here
                    if case.expect in ("limit", "error"):
                        problems.append(f"{case.name}: accepted, expected {case.expect}")
                    client.delete(f"{url}/jobs/{answer.json()['id']}")
                elif not 400 <= answer.status_code < 500 or "error" not in _json(answer):
                    problems.append(f"{case.name}: {answer.status_code} {answer.text[:200]}")
                elif case.expect == "ok":
                    problems.append(f"{case.name}: refused a legal file: {answer.text[:200]}")
                if case.forbidden and case.forbidden in answer.text:
                    problems.append(f"{case.name}: the answer shows {case.forbidden!r}")
                if elapsed > HOSTILE_S / 2:
                    slow_documents.append(f"{case.name} {elapsed:.1f} s")
                if elapsed > HOSTILE_S:
                    problems.append(f"{case.name}: took {elapsed:.1f} s")
    finally:
        probe.stop.set()
        probe.join(timeout=15)
    worst_probe = max((t for t in probe.latencies if t != float("inf")), default=float("inf"))
    failed_probes = sum(1 for t in probe.latencies if t == float("inf"))
    slow_probes = sum(1 for t in probe.latencies if t > PROBE_ROUND_TRIP_S)
    lag_after = _loop_lag(url)
    lags = {bound: lag_after[bound] - lag_before.get(bound, 0) for bound in lag_after}
    held = lags[float("inf")] - lags[PROBE_S]  # timer checks that found the loop late by over PROBE_S
    print(f"{sent} hostile requests; slowest {slowest[0]:.2f} s ({slowest[1]}); "
          f"/health/live: {len(probe.latencies)} probes, slowest answer {worst_probe:.3f} s, "
          f"{failed_probes} unanswered within 10 s; event loop: {lags[float('inf')]:.0f} timer checks, "
          f"{lags[float('inf')] - lags[0.1]:.0f} late by over 0.1 s, {held:.0f} by over {PROBE_S:g} s; "
          f"documents over {HOSTILE_S / 2:g} s: {', '.join(slow_documents) or 'none'}")
    assert sent > 100 and len(probe.latencies) >= 10
    assert not problems, "\n".join(problems)
    # Megabytes of text are planned off the event loop (translator.OFF_LOOP_CHARS), so every probe answers.
    assert held == 0, lags
    assert slow_probes == 0 and failed_probes == 0, (slow_probes, failed_probes, worst_probe)
    assert proc.poll() is None and httpx.get(f"{url}/health", timeout=10).status_code == 200


def _loop_lag(url: str) -> dict[float, float]:
    """mtserve_event_loop_lag_seconds's cumulative buckets: upper bound -> timer checks at most that late."""
    return {float(dict(labels)["le"]): value
            for labels, value in samples_named(url, "mtserve_event_loop_lag_seconds_bucket").items()}


def _json(answer: httpx.Response):
    try:
        return answer.json()
    except ValueError:
        return None
