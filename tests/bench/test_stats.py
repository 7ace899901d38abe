import math

import pytest

from mtserve.bench.stats import Outcome, ProcessFigures, compare_points, percentile, ratio, summarize


@pytest.mark.parametrize("q, expected", [(0, 1.0), (50, 5.5), (100, 10.0), (95, 9.55), (99, 9.91)])
def test_percentile_interpolates_between_ranks_like_numpy(q, expected):
    assert percentile([float(x) for x in range(10, 0, -1)], q) == pytest.approx(expected)


def test_percentile_edge_cases():
    assert math.isnan(percentile([], 50))
    assert percentile([7.0], 99) == 7.0
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def _outcome(latency_s, ok=True, tokens=10, kind="short", ttft=None, queue=None):
    return Outcome(kind=kind, ok=ok, started=0.0, latency_s=latency_s, ttft_s=ttft,
                   generated_tokens=tokens, queue_ms=queue, engine_ms=100.0)


def test_summarize_rates_percentiles_and_errors():
    outcomes = [_outcome(i / 10, ttft=0.05) for i in range(1, 11)] + [_outcome(9.0, ok=False)]
    outcomes[-1].error = "HTTP 503"
    stats = summarize("t", "closed", 4, outcomes, wall_s=2.0, process=ProcessFigures(150.0, 512.0))
    assert stats.requests == 10 and stats.errors == 1
    assert stats.rps == 5.0
    assert stats.tokens_per_s == 50.0
    assert stats.tokens_per_request == 10.0
    assert stats.p50_ms == 550.0
    assert stats.p99_ms == pytest.approx(991.0)
    assert stats.ttft_p50_ms == 50.0
    assert stats.engine_ms_mean == 100.0
    assert stats.queue_ms_mean is None  # nobody reported it
    assert stats.cpu_percent == 150.0 and stats.peak_rss_mb == 512.0
    assert stats.error_sample == "HTTP 503"


def test_summarize_filters_by_kind_and_leaves_unknown_tokens_unknown():
    outcomes = [_outcome(1.0, kind="long", tokens=None), _outcome(0.2), _outcome(0.4)]
    stats = summarize("t", "fairness", 8, outcomes, wall_s=1.0, kind="short")
    assert stats.requests == 2 and stats.p50_ms == pytest.approx(300.0)
    mixed = summarize("t", "closed", 1, outcomes, wall_s=1.0)
    assert mixed.tokens_per_s is None  # one outcome did not say: no made-up figure


def test_to_dict_has_no_nan():
    d = summarize("t", "closed", 1, [], wall_s=1.0).to_dict()
    assert d["p50_ms"] is None and d["cpu_percent"] is None and d["requests"] == 0


def test_ratios_b_over_a():
    a = summarize("a", "closed", 8, [_outcome(1.0)] * 4, wall_s=2.0)
    b = summarize("b", "closed", 8, [_outcome(0.5)] * 8, wall_s=2.0)
    r = compare_points(a, b)
    assert r["rps"] == 2.0 and r["p50_ms"] == 0.5
    assert r["ttft_p50_ms"] is None
    assert ratio(0, 1.0) is None and ratio(1.0, None) is None
