"""Single-request latency: one client, one request at a time, against a running server.

Each sentence is sent once (the cache would otherwise answer), so every figure
is a real decode. The raw engine, in process with the same prompt, is timed in
the same run for comparison when --model is given.

    python benchmarks/single_request.py --url http://127.0.0.1:8000 [--model NAME]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import httpx

from mtserve.bench.workloads import BUILTIN_SENTENCES

SENTENCES = list(BUILTIN_SENTENCES)  # the same sentences `mtserve bench` falls back to


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summarize(latencies: list[float]) -> dict:
    return {
        "n": len(latencies),
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "p95_ms": round(1000 * percentile(latencies, 0.95), 1),
        "mean_ms": round(1000 * statistics.fmean(latencies), 1),
    }


def over_http(url: str, sentences: list[str]) -> list[float]:
    latencies = []
    with httpx.Client(timeout=120) as client:
        client.post(f"{url}/translate", json={"q": "预热。", "source": "zh", "target": "en"})
        for text in sentences:
            t0 = time.perf_counter()
            r = client.post(f"{url}/translate", json={"q": text, "source": "zh", "target": "en"})
            latencies.append(time.perf_counter() - t0)
            r.raise_for_status()
    return latencies


def raw_engine(model: str, sentences: list[str]) -> list[float]:
    from mtserve.engines.base import EngineRequest
    from mtserve.engines.factory import create_engine
    from mtserve.settings import Settings

    engine = create_engine(Settings(model=model))
    engine.load()
    engine.translate(EngineRequest("预热。", "zh", "en"))
    latencies = []
    for text in sentences:
        t0 = time.perf_counter()
        engine.translate(EngineRequest(text, "zh", "en"))
        latencies.append(time.perf_counter() - t0)
    engine.close()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--model", help="also time the raw engine in process with this model")
    args = parser.parse_args()
    result = {"server": summarize(over_http(args.url, SENTENCES))}
    if args.model:
        result["raw_engine"] = summarize(raw_engine(args.model, SENTENCES))
        result["server_over_raw_p50"] = round(result["server"]["p50_ms"] / result["raw_engine"]["p50_ms"], 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
