"""Figures from outcomes: percentiles, rates, and ratios between targets.

Everything here is pure arithmetic on recorded numbers, so it is tested on
made-up outcomes without a model or a clock.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence


@dataclass
class Outcome:
    """One request as the client saw it."""

    kind: str  # the workload item's kind: "short", "paragraph", "long", "file"
    ok: bool
    started: float  # seconds on the load generator's clock (time.perf_counter())
    latency_s: float  # from the intended start (open loop: the arrival time) to the last byte
    ttft_s: float | None = None  # time to the first non-empty text delta (streaming only)
    generated_tokens: int | None = None
    queue_ms: float | None = None  # the server's own accounting (Server-Timing), when it reports it
    engine_ms: float | None = None
    prompt_ms: float | None = None  # llama.cpp's prefill time, in-process targets only
    decode_ms: float | None = None  # llama.cpp's decode time, in-process targets only
    chars_in: int = 0
    error: str | None = None


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear between closest ranks (numpy's default)."""
    if not values:
        return math.nan
    if not 0 <= q <= 100:
        raise ValueError(f"percentile must be within 0..100, got {q}")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


@dataclass
class ProcessFigures:
    """The server process over one point: average CPU (100 = one core) and peak resident memory."""

    cpu_percent: float = math.nan
    peak_rss_mb: float = math.nan


@dataclass
class PointStats:
    target: str
    scenario: str  # "closed", "open", "fairness", "ttft"
    load: float  # clients (closed loop) or arrivals per second (open loop)
    requests: int
    errors: int
    wall_s: float
    rps: float
    tokens_per_s: float | None
    p50_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    ttft_p50_ms: float | None = None
    ttft_p95_ms: float | None = None
    queue_ms_mean: float | None = None
    engine_ms_mean: float | None = None
    prompt_ms_mean: float | None = None
    decode_ms_mean: float | None = None
    tokens_per_request: float | None = None
    cpu_percent: float = math.nan
    peak_rss_mb: float = math.nan
    kind: str | None = None  # the kind the latency figures are for, when filtered
    background: dict | None = None  # fairness: what happened to the long document
    rounds: int = 1
    error_sample: str | None = None
    loadavg_1m: float | None = None  # the machine's 1-minute load average after the point: other jobs show here

    def to_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(self).items()}


def summarize(
    target: str,
    scenario: str,
    load: float,
    outcomes: Iterable[Outcome],
    wall_s: float,
    process: ProcessFigures | None = None,
    kind: str | None = None,
    rounds: int = 1,
) -> PointStats:
    """Figures for one point. ``wall_s`` is the time the point ran (summed over rounds when pooled)."""
    outcomes = list(outcomes)
    chosen = [o for o in outcomes if kind is None or o.kind == kind]
    ok = [o for o in chosen if o.ok]
    failed = [o for o in chosen if not o.ok]
    lat = [o.latency_s * 1000 for o in ok]
    ttft = [o.ttft_s * 1000 for o in ok if o.ttft_s is not None]
    tokens = [o.generated_tokens for o in ok if o.generated_tokens is not None]

    def mean_of(attr: str) -> float | None:
        values = [getattr(o, attr) for o in ok if getattr(o, attr) is not None]
        return round(_mean(values), 2) if values else None

    wall = max(wall_s, 1e-9)
    tokens_known = ok and len(tokens) == len(ok)
    process = process or ProcessFigures()
    return PointStats(
        target=target,
        scenario=scenario,
        load=load,
        requests=len(ok),
        errors=len(failed),
        wall_s=round(wall_s, 3),
        rps=round(len(ok) / wall, 4),
        tokens_per_s=round(sum(tokens) / wall, 2) if tokens_known else None,
        p50_ms=round(percentile(lat, 50), 1),
        p95_ms=round(percentile(lat, 95), 1),
        p99_ms=round(percentile(lat, 99), 1),
        mean_ms=round(_mean(lat), 1),
        ttft_p50_ms=round(percentile(ttft, 50), 1) if ttft else None,
        ttft_p95_ms=round(percentile(ttft, 95), 1) if ttft else None,
        queue_ms_mean=mean_of("queue_ms"),
        engine_ms_mean=mean_of("engine_ms"),
        prompt_ms_mean=mean_of("prompt_ms"),
        decode_ms_mean=mean_of("decode_ms"),
        tokens_per_request=round(sum(tokens) / len(tokens), 2) if tokens_known else None,
        cpu_percent=round(process.cpu_percent, 1),
        peak_rss_mb=round(process.peak_rss_mb, 1),
        kind=kind,
        rounds=rounds,
        error_sample=failed[0].error if failed else None,
    )


RATIO_FIELDS = ("rps", "tokens_per_s", "p50_ms", "p95_ms", "p99_ms", "ttft_p50_ms", "peak_rss_mb")


@dataclass
class Ratio:
    """B over A for one point; above 1 means B is higher (faster for rates, slower for latencies)."""

    scenario: str
    load: float
    a: str
    b: str
    ratios: dict[str, float | None] = field(default_factory=dict)
    per_round: list[dict[str, float | None]] = field(default_factory=list)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (
        isinstance(b, float) and math.isnan(b)
    ) or a == 0:
        return None
    return round(b / a, 3)


def compare_points(a: PointStats, b: PointStats, fields: Sequence[str] = RATIO_FIELDS) -> dict[str, float | None]:
    return {name: ratio(getattr(a, name), getattr(b, name)) for name in fields}
