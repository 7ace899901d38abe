from mtserve.bench.load import Bounds
from mtserve.bench.runner import Plan, Point, Workloads, execute
from tests.bench.helpers import FakeTarget, make_workload


def _workloads():
    return Workloads(main=make_workload(500), short=make_workload(500), long=make_workload(5, kind="long"))


def test_compare_alternates_targets_every_point_and_reverses_them_every_other_round():
    log: list[str] = []
    a, b = FakeTarget("A", log=log), FakeTarget("B", log=log, tokens=10)
    plan = Plan(points=[Point("closed", 1), Point("closed", 2)], bounds=Bounds(3, 60), rounds=3, warmup=0)
    result = execute([a, b], plan, _workloads())
    expected = ["A", "B"] * 2 + ["B", "A"] * 2 + ["A", "B"] * 2
    assert [entry.split()[1] for entry in result.order] == expected
    assert [entry.split()[0] for entry in result.order] == ["r1"] * 4 + ["r2"] * 4 + ["r3"] * 4
    runs = [log[i:i + 3] for i in range(0, len(log), 3)]
    assert [r[0] for r in runs] == expected and all(len(set(r)) == 1 for r in runs)
    [_, second] = [row for row in result.ratios]  # B over A, whichever ran first
    assert second.a == "A" and second.b == "B" and len(second.per_round) == 3


def test_pooled_points_and_ratios():
    a, b = FakeTarget("A"), FakeTarget("B", tokens=10)
    plan = Plan(points=[Point("closed", 1)], bounds=Bounds(4, 60), rounds=3, warmup=0)
    result = execute([a, b], plan, _workloads())
    pooled = {p.target: p for p in result.points}
    assert pooled["A"].requests == 12 and pooled["A"].rounds == 3
    assert len(result.per_round) == 6
    [row] = result.ratios
    assert row.a == "A" and row.b == "B" and len(row.per_round) == 3
    assert all(r["rps"] is not None for r in row.per_round)


def test_warm_up_calls_are_not_counted():
    a = FakeTarget("A")
    plan = Plan(points=[Point("closed", 1)], bounds=Bounds(2, 60), warmup=4)
    result = execute([a], plan, _workloads())
    assert len(a.calls) == 6 and result.points[0].requests == 2


def test_scenarios_ttft_open_and_fairness_run_on_a_fake():
    a = FakeTarget("A")
    plan = Plan(points=[Point("ttft", 1), Point("open", 200), Point("fairness", 2)], bounds=Bounds(4, 5),
                warmup=0)
    progressed = []
    result = execute([a], plan, _workloads(), progress=lambda d, n: progressed.append(n))
    by = {p.scenario: p for p in result.points}
    assert by["ttft"].ttft_p50_ms == 10.0
    assert by["open"].requests == 4
    assert by["fairness"].kind == "short" and by["fairness"].background["documents"] == 1
    assert sum(progressed) == 3 * 4  # the bar always reaches its total


def test_every_target_gets_the_same_texts_at_a_point_and_fresh_ones_at_the_next():
    a, b = FakeTarget("A"), FakeTarget("B")
    plan = Plan(points=[Point("closed", 1), Point("closed", 1.0001)], bounds=Bounds(3, 60), rounds=2,
                warmup=2)
    execute([a, b], plan, _workloads())
    texts_a, texts_b = [c.text for c in a.calls], [c.text for c in b.calls]
    assert texts_a[2:] == texts_b[2:]  # after the two warm-up calls
    measured = texts_a[2:]
    assert len(set(measured)) == len(measured) == 12  # no text twice across points and rounds
    assert not set(texts_a[:2]) & set(measured)  # warm-ups come from elsewhere
