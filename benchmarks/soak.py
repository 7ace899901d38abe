"""Soak: mixed load against a running mtserve for a fixed time; RSS after warm-up against RSS at the end.

Not part of CI (it runs for minutes). Traffic goes to loopback only, with a
bounded number of clients, and stops by itself.

    python benchmarks/soak.py --url http://127.0.0.1:8000 --minutes 10 [--out soak.json]

The mix: short sentences (LibreTranslate API), paragraphs, HTML, SSE streams
abandoned half-way (client disconnects), DeepL and OpenAI calls, bad requests.
Every text carries a counter, so the cache cannot answer instead of the engine.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import random
import time
from urllib.parse import urlsplit

import httpx
import psutil

SENTENCES = ["我喜欢猫。", "今天很冷。", "他在看书。", "我们去吃饭吧。", "明天见。", "天气很好。",
             "请在会议开始前把报告发给我。", "这本书非常有意思。"]
WARMUP_S = 60


def server_process(url: str) -> psutil.Process:
    port = urlsplit(url).port
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            return psutil.Process(conn.pid)
    raise SystemExit(f"no local process listens on port {port}")


async def one_request(client: httpx.AsyncClient, url: str, n: int, statuses: collections.Counter) -> None:
    s = SENTENCES[n % len(SENTENCES)] + f"第{n}号。"
    kind = n % 7
    try:
        if kind in (0, 1, 2):
            r = await client.post(f"{url}/translate", json={"q": s, "source": "zh", "target": "en"})
        elif kind == 3:
            r = await client.post(f"{url}/translate", json={"q": f"<p>{s}</p>\n\n{s}{s}", "source": "auto",
                                                            "target": "en", "format": "html"})
        elif kind == 4:  # a stream the client abandons after the first event
            async with client.stream("POST", f"{url}/translate/stream",
                                     json={"q": s * 3, "source": "zh", "target": "en"}) as r:
                async for _ in r.aiter_lines():
                    break
        elif kind == 5:
            r = await client.post(f"{url}/v2/translate", data={"text": s, "target_lang": "EN-US"})
        else:
            r = await client.post(f"{url}/v1/chat/completions", json={
                "model": "mtserve-zh-en", "messages": [{"role": "user", "content": s}]})
            if n % 21 == 6:
                r = await client.post(f"{url}/translate", content=b"{broken")
        statuses[r.status_code] += 1
        if r.status_code in (429, 503):  # a polite client backs off as told
            await asyncio.sleep(min(5.0, float(r.headers.get("retry-after", 1))))
    except httpx.HTTPError as exc:
        statuses[type(exc).__name__] += 1


async def soak(url: str, seconds: float, clients: int) -> dict:
    proc = server_process(url)
    statuses: collections.Counter = collections.Counter()
    samples: list[tuple[float, int]] = []
    start = time.monotonic()
    counter = iter(range(10**9))

    async def client_loop() -> None:
        async with httpx.AsyncClient(timeout=120) as client:
            while time.monotonic() - start < seconds:
                await one_request(client, url, next(counter), statuses)
                await asyncio.sleep(random.random() * 0.2)

    async def sampler() -> None:
        while time.monotonic() - start < seconds:
            samples.append((time.monotonic() - start, proc.memory_info().rss))
            await asyncio.sleep(5)

    await asyncio.gather(sampler(), *[client_loop() for _ in range(clients)])
    samples.append((time.monotonic() - start, proc.memory_info().rss))
    after_warmup = [rss for t, rss in samples if t >= min(WARMUP_S, seconds / 4)]
    rss_start, rss_end = after_warmup[0], after_warmup[-1]
    half = [rss for t, rss in samples if t >= seconds / 2]
    return {
        "seconds": round(time.monotonic() - start, 1),
        "clients": clients,
        "requests": sum(statuses.values()),
        "statuses": {str(k): v for k, v in sorted(statuses.items(), key=str)},
        "rss_after_warmup_mb": round(rss_start / 2**20, 1),
        "rss_end_mb": round(rss_end / 2**20, 1),
        "rss_peak_mb": round(max(r for _, r in samples) / 2**20, 1),
        "growth_pct": round(100 * (rss_end - rss_start) / rss_start, 2),
        # a leak keeps growing; a bounded cache filling up (llama.cpp's prompt cache) stops
        "growth_second_half_pct": round(100 * (rss_end - half[0]) / half[0], 2),
        "samples_mb": [(round(t), round(r / 2**20, 1)) for t, r in samples],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Soak a running mtserve; loopback only.")
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--out")
    args = parser.parse_args()
    host = urlsplit(args.url).hostname or ""
    if not (host == "localhost" or host.startswith("127.") or host == "::1"):
        raise SystemExit("soak sends traffic to loopback only (127.0.0.0/8, localhost, ::1)")
    result = asyncio.run(soak(args.url, args.minutes * 60, args.clients))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
