"""The plan of a benchmark run and its execution: targets alternated point by point, A B, then B A.

A run is a list of points (scenario, load) and a list of targets. Each round
visits every point and, at each point, every target in turn, so slow drift of
a noisy machine touches all targets alike and the ratios between them hold.
Every other round runs the targets in reverse order: whatever the machine does
to the one that runs first (or right after the other) falls on each in turn.
Outcomes of the same (target, point) are pooled over rounds; per-round
figures are kept too, to show the spread.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Callable

from mtserve.bench.load import Bounds, LoadResult, closed_loop, fairness, open_loop
from mtserve.bench.process import ProcessSampler
from mtserve.bench.stats import (
    Outcome,
    PointStats,
    ProcessFigures,
    Ratio,
    compare_points,
    summarize,
)
from mtserve.bench.targets import Target
from mtserve.bench.workloads import Workload

SCENARIOS = ("closed", "open", "fairness", "ttft")


@dataclass(frozen=True)
class Point:
    scenario: str  # one of SCENARIOS
    load: float  # clients, or arrivals per second for "open"

    @property
    def label(self) -> str:
        unit = "/s" if self.scenario == "open" else " clients"
        return f"{self.scenario} {self.load:g}{unit}"


@dataclass
class Plan:
    points: list[Point]
    bounds: Bounds
    rounds: int = 1
    poisson: bool = True
    seed: int = 0
    warmup: int = 4  # concurrent warm-up calls per target before its first point (0 = none)

    def runs(self, targets: list[Target]) -> list[tuple[int, Point, Target]]:
        """The order of execution: round by round, point by point, the targets alternating, first
        in the order given and reversed in every other round (A B, B A, A B...)."""
        return [(r, p, t) for r in range(self.rounds) for p in self.points
                for t in (targets if r % 2 == 0 else targets[::-1])]


@dataclass
class RunResult:
    points: list[PointStats] = field(default_factory=list)  # pooled over rounds
    per_round: list[PointStats] = field(default_factory=list)
    ratios: list[Ratio] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # what ran, in order, for the record


@dataclass
class Workloads:
    main: Workload  # what closed, open and ttft points send
    short: Workload  # fairness: the short sentences
    long: Workload  # fairness: the document in the queue


Progress = Callable[[str, int], None]  # (description, requests completed since last call)


def run_point(target: Target, point: Point, workloads: Workloads, plan: Plan,
              on_outcome: Callable[[Outcome], None] | None = None, round_index: int = 0) -> LoadResult:
    bounds = plan.bounds
    if point.scenario == "closed":
        return closed_loop(target, workloads.main, int(point.load), bounds, on_outcome=on_outcome)
    if point.scenario == "ttft":
        return closed_loop(target, workloads.main, int(point.load), bounds, stream=True, on_outcome=on_outcome)
    if point.scenario == "open":
        return open_loop(target, workloads.main, point.load, bounds, poisson=plan.poisson,
                         seed=plan.seed + round_index, on_outcome=on_outcome)
    if point.scenario == "fairness":
        return fairness(target, workloads.short, workloads.long, int(point.load), bounds, on_outcome=on_outcome)
    raise ValueError(f"unknown scenario {point.scenario!r}; use one of {', '.join(SCENARIOS)}")


def warm_up(target: Target, workload: Workload, calls: int) -> None:
    """Fill every slot's prompt cache with the shared prefix before anything is measured."""
    if calls <= 0:
        return
    threads = [threading.Thread(target=target.call, args=(workload.next(),), daemon=True) for _ in range(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _pool(stats_name: str, point: Point, results: list[tuple[LoadResult, ProcessFigures]], kind: str | None,
          rounds: int) -> PointStats:
    outcomes = [o for result, _ in results for o in result.outcomes]
    wall = sum(result.wall_s for result, _ in results)
    cpu_weighted = [(f.cpu_percent, r.wall_s) for r, f in results if f.cpu_percent == f.cpu_percent]
    cpu = (sum(c * w for c, w in cpu_weighted) / max(1e-9, sum(w for _, w in cpu_weighted))
           if cpu_weighted else float("nan"))
    rss_values = [f.peak_rss_mb for _, f in results if f.peak_rss_mb == f.peak_rss_mb]
    figures = ProcessFigures(cpu_percent=cpu, peak_rss_mb=max(rss_values) if rss_values else float("nan"))
    if point.scenario == "fairness":
        # Throughput over the window the document was in flight; only short requests count.
        stats = summarize(stats_name, point.scenario, point.load, outcomes, wall, figures, kind="short",
                          rounds=rounds)
        docs = [o for result, _ in results for o in result.background]
        stats.background = {
            "documents": len(docs),
            "ok": sum(o.ok for o in docs),
            "latency_s_mean": round(sum(o.latency_s for o in docs) / len(docs), 2) if docs else None,
            "chars": docs[0].chars_in if docs else None,
        }
        return stats
    return summarize(stats_name, point.scenario, point.load, outcomes, wall, figures, kind=kind, rounds=rounds)


def execute(targets: list[Target], plan: Plan, workloads: Workloads, progress: Progress | None = None,
            sample_interval_s: float = 0.25) -> RunResult:
    """Run the plan. Targets must be started; this never starts or stops them."""
    run = RunResult()
    collected: dict[tuple[str, Point], list[tuple[LoadResult, ProcessFigures]]] = {}
    warmed: set[str] = set()
    warmup_pool = workloads.main.tail(64)
    # Every target at a (round, point) gets the very same texts: the cursors are
    # rewound for each target and moved past the furthest any of them got.
    marks: dict[tuple[int, Point], tuple[int, int]] = {}
    furthest: dict[tuple[int, Point], tuple[int, int]] = {}
    pools = (workloads.main, workloads.short, workloads.long)
    for round_index, point, target in plan.runs(targets):
        if target.name not in warmed:
            warm_up(target, warmup_pool, plan.warmup)
            warmed.add(target.name)
        key = (round_index, point)
        if key not in marks:
            marks[key] = tuple(pool.tell() for pool in pools)  # type: ignore[assignment]
        for pool, mark in zip(pools, marks[key]):
            pool.seek(mark)
        description = f"r{round_index + 1} {target.name} {point.label}"
        run.order.append(description)

        def on_outcome(_: Outcome, description: str = description) -> None:
            if progress is not None:
                progress(description, 1)

        with ProcessSampler(target.pid(), interval_s=sample_interval_s) as sampler:
            result = run_point(target, point, workloads, plan, on_outcome=on_outcome, round_index=round_index)
        figures = sampler.figures()
        reached = tuple(pool.tell() for pool in pools)
        furthest[key] = tuple(max(a, b) for a, b in zip(furthest.get(key, reached), reached))  # type: ignore
        for pool, position in zip(pools, furthest[key]):
            pool.seek(position)
        if progress is not None:  # a point that stopped on time still moves the bar its full share
            progress(description, max(0, plan.bounds.max_requests - len(result.outcomes)))
        collected.setdefault((target.name, point), []).append((result, figures))
        row = _pool(target.name, point, [(result, figures)], None, 1)
        row.rounds = round_index + 1  # which round this row is
        row.loadavg_1m = _loadavg()
        run.per_round.append(row)
    for point in plan.points:
        for target in targets:
            results = collected.get((target.name, point), [])
            if results:
                pooled = _pool(target.name, point, results, None, len(results))
                loads = [r.loadavg_1m for r in run.per_round if r.target == target.name
                         and r.scenario == point.scenario and r.load == point.load and r.loadavg_1m is not None]
                pooled.loadavg_1m = round(sum(loads) / len(loads), 2) if loads else None
                run.points.append(pooled)
    if len(targets) >= 2:
        run.ratios = ratios(run, targets[0].name, targets[1].name, plan)
    return run


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def ratios(run: RunResult, a: str, b: str, plan: Plan) -> list[Ratio]:
    """B over A at every point, pooled and per round."""
    out = []
    for point in plan.points:
        pa = next((s for s in run.points if s.target == a and s.scenario == point.scenario and s.load == point.load),
                  None)
        pb = next((s for s in run.points if s.target == b and s.scenario == point.scenario and s.load == point.load),
                  None)
        if pa is None or pb is None:
            continue
        row = Ratio(point.scenario, point.load, a, b, compare_points(pa, pb))
        for r in range(1, plan.rounds + 1):
            ra = next((s for s in run.per_round if s.target == a and s.rounds == r
                       and s.scenario == point.scenario and s.load == point.load), None)
            rb = next((s for s in run.per_round if s.target == b and s.rounds == r
                       and s.scenario == point.scenario and s.load == point.load), None)
            if ra is not None and rb is not None:
                row.per_round.append(compare_points(ra, rb))
        out.append(row)
    return out
