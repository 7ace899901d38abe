import threading
import time

import pytest

from mtserve.bench.load import Bounds, arrival_times, closed_loop, fairness, open_loop
from mtserve.bench.workloads import WorkItem, Workload
from tests.bench.helpers import FakeTarget, make_workload


@pytest.mark.parametrize("clients", [1, 3, 8])
def test_closed_loop_stops_at_the_request_count(clients):
    target = FakeTarget()
    result = closed_loop(target, make_workload(), clients, Bounds(max_requests=20, max_seconds=60))
    assert len(result.outcomes) == 20 == len(target.calls)
    assert target.peak <= clients
    assert all(o.ok and o.generated_tokens == 5 for o in result.outcomes)


def test_closed_loop_stops_at_the_time_bound(clock):
    target = FakeTarget(clock=clock, cost_s=1.0)  # every call takes one fake second
    result = closed_loop(target, make_workload(), 1, Bounds(max_requests=1000, max_seconds=5), clock=clock)
    assert len(result.outcomes) == 5
    assert result.wall_s == pytest.approx(5.0)
    assert [o.latency_s for o in result.outcomes] == [pytest.approx(1.0)] * 5


def test_closed_loop_sends_distinct_items_in_order():
    target = FakeTarget()
    closed_loop(target, make_workload(10), 1, Bounds(max_requests=10, max_seconds=60))
    assert [c.text for c in target.calls] == [f"句子{i}。" for i in range(10)]


def test_closed_loop_records_failures():
    target = FakeTarget(fail_every=2)
    result = closed_loop(target, make_workload(), 1, Bounds(max_requests=6, max_seconds=60))
    assert sum(not o.ok for o in result.outcomes) == 3


def test_arrival_times_respect_both_bounds():
    by_count = arrival_times(100, Bounds(max_requests=10, max_seconds=60))
    assert len(by_count) == 10 and by_count[0] == 0.0
    by_time = arrival_times(2, Bounds(max_requests=1000, max_seconds=5), poisson=False)
    assert by_time == pytest.approx([0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5])
    assert arrival_times(3, Bounds(50, 60), seed=7) == arrival_times(3, Bounds(50, 60), seed=7)
    assert arrival_times(3, Bounds(50, 60), seed=7) != arrival_times(3, Bounds(50, 60), seed=8)
    with pytest.raises(ValueError):
        arrival_times(0, Bounds(1, 1))


def test_poisson_arrivals_average_the_rate():
    times = arrival_times(4.0, Bounds(max_requests=4000, max_seconds=1e9), seed=1)
    mean_gap = times[-1] / (len(times) - 1)
    assert mean_gap == pytest.approx(0.25, rel=0.1)


def test_open_loop_issues_the_schedule_and_measures_from_arrival(clock):
    target = FakeTarget(clock=clock)
    result = open_loop(target, make_workload(), 2.0, Bounds(max_requests=1000, max_seconds=3), poisson=False,
                       clock=clock, sleep=clock.sleep, max_in_flight=1)
    assert len(result.outcomes) == 6
    assert sorted(o.started for o in result.outcomes) == pytest.approx([0, 0.5, 1.0, 1.5, 2.0, 2.5])
    assert result.dropped == 0


def test_fairness_sends_short_requests_only_while_the_document_runs():
    release = threading.Event()
    ended: list[float] = []

    class SlowDocument(FakeTarget):
        def call(self, item, stream=False):
            if item.kind == "long":
                release.wait(10)
                reply = super().call(item, stream)
                ended.append(time.perf_counter())
                return reply
            reply = super().call(item, stream)
            if len(self.calls) >= 5:  # the document finishes after five short requests
                release.set()
            return reply

    target = SlowDocument()
    long = Workload("long", [WorkItem("长文。" * 20, "zh", "en", "long")])
    result = fairness(target, make_workload(), long, 2, Bounds(max_requests=100000, max_seconds=30),
                      head_start_s=0.0)
    assert len(result.background) == 1 and result.background[0].kind == "long"
    assert len(result.outcomes) >= 5
    assert all(o.kind == "short" and o.started <= ended[0] + 0.05 for o in result.outcomes)


def test_bounds_refuse_nonsense():
    with pytest.raises(ValueError):
        Bounds(max_requests=0)
    with pytest.raises(ValueError):
        closed_loop(FakeTarget(), make_workload(), 0, Bounds())
