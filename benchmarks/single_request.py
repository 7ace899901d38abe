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

SENTENCES = [
    "请在会议开始前把报告发给我。", "我每天早上喝一杯咖啡。", "这本书非常有意思。",
    "明天我们去北京。", "他昨天买了一辆新自行车。", "图书馆星期天不开门。",
    "你能帮我把窗户关上吗？", "这个问题比我想的复杂得多。", "我们公司明年打算扩大规模。",
    "天气预报说下午会下雨。", "她的中文说得越来越流利了。", "这家餐厅的菜又便宜又好吃。",
    "请把你的护照和机票给我看一下。", "孩子们在公园里放风筝。", "医生建议他多休息，少喝酒。",
    "我把钥匙忘在办公室了。", "这部电影让我想起了我的童年。", "火车晚点了半个小时。",
    "如果你有问题，随时给我打电话。", "他们正在讨论新的环保政策。",
]


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
    from mtserve.engines.base import TranslationRequest
    from mtserve.engines.factory import create_engine
    from mtserve.settings import Settings

    engine = create_engine(Settings(model=model))
    engine.load()
    engine.translate(TranslationRequest("预热。", "zh", "en"))
    latencies = []
    for text in sentences:
        t0 = time.perf_counter()
        engine.translate(TranslationRequest(text, "zh", "en"))
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
