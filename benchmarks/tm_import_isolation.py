"""One key's translation latency while another key imports a large translation memory.

Starts a real `mtserve serve` (the small model unless --model names another) with API keys on
and two keys. Key A sends a short /translate (ja->de, a pair with no TM entries) one at a time:
first --samples times alone, then again and again while key B's POST /tm/import of a TSV runs
(--lines lines of --chars characters of CJK text each; the defaults, 200 of 5,000, make a 3 MB
file, which froze every translation for 44 s while an import could block them). The figures are
A's latencies in both phases and the import's own time; the criterion (BENCHMARKS.md) is that A's
slowest answer during the import stays within its slowest alone plus 1 s.

By default A repeats one text, so after the first answer the translation cache serves it: what
is measured is the service path a translation shares with the import (the TM's pair check, the
cache) (0.01 s normally). --fresh sends a new sentence each time, so every
answer is decoded by the model too.

    python benchmarks/tm_import_isolation.py [--model NAME] [--lines 200] [--chars 5000] [--json OUT]
    python benchmarks/tm_import_isolation.py --lines 5 --chars 500    # a quick check that it runs

Speed depends on the machine: report the command and whether the machine was quiet.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.models.store import ModelStore  # noqa: E402
from mtserve.service.access import KeyStore  # noqa: E402
from mtserve.settings import Settings  # noqa: E402
from tests.servers import TEST_MODEL, real_server  # noqa: E402

TEXT = "今日は晴れです。"
PAUSE_S = 0.2  # between A's requests, so that A samples the import's whole run rather than hammering it
MAX_DURING = 2000  # A's requests during the import, at most


def long_lines_tsv(lines: int, chars: int) -> bytes:
    """``lines`` TSV lines of ``chars`` characters: a source of random CJK characters (as many index rows
    as characters) and a short target."""
    pick = random.Random(45)
    rows = []
    for i in range(lines):
        target = f"line {i}"
        source = "".join(chr(0x4E00 + pick.randrange(3000)) for _ in range(max(1, chars - len(target) - 1)))
        rows.append(f"{source}\t{target}\n")
    return "".join(rows).encode()


def summary(latencies: list[float]) -> dict:
    ordered = sorted(latencies)
    return {"n": len(ordered), "p50_s": round(statistics.median(ordered), 4),
            "p95_s": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))], 4),
            "max_s": round(ordered[-1], 4)} if ordered else {"n": 0}


def translate(client: httpx.Client, url: str, key: str, text: str) -> float:
    started = time.perf_counter()
    r = client.post(f"{url}/translate", json={"q": text, "source": "ja", "target": "de"},
                    headers={"Authorization": f"Bearer {key}"})
    took = time.perf_counter() - started
    if r.status_code != 200:
        raise SystemExit(f"/translate answered {r.status_code}: {r.text}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=TEST_MODEL, help="a model name from the store, or a .gguf path")
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--chars", type=int, default=5000, help="characters per line (at most 5,000 a source)")
    parser.add_argument("--samples", type=int, default=20, help="A's requests alone, after one to warm up")
    parser.add_argument("--fresh", action="store_true", help="a new sentence per request: the model decodes each")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    model = Path(args.model) if args.model.endswith(".gguf") else ModelStore(Settings().models_dir).resolve(
        args.model).path
    data = long_lines_tsv(args.lines, args.chars)
    counter = iter(range(1_000_000))

    def text() -> str:
        return f"{TEXT}{next(counter)}番。" if args.fresh else TEXT

    with tempfile.TemporaryDirectory(prefix="mtserve-bench-home-") as home:
        keys = KeyStore(Path(home) / "keys.sqlite3")
        key_a, _ = keys.add(name="a")
        key_b, _ = keys.add(name="b")
        env = {"MTSERVE_HOME": home, "MTSERVE_API_KEYS": "true", "MTSERVE_ANONYMOUS_RPM": "0",
               "MTSERVE_CACHE_SIZE": str(Settings().cache_size)}
        with real_server(model, env) as (url, _), httpx.Client(timeout=600) as client:
            translate(client, url, key_a, text())  # warm: the model's first request, the cache's first entry
            alone = [translate(client, url, key_a, text()) for _ in range(args.samples)]
            outcome: dict = {}

            def import_file() -> None:
                started = time.perf_counter()
                r = httpx.post(f"{url}/tm/import", files={"file": ("long.tsv", data)}, timeout=3600,
                               data={"source": "zh", "target": "en"}, headers={"Authorization": f"Bearer {key_b}"})
                outcome.update(status=r.status_code, seconds=round(time.perf_counter() - started, 2),
                               answer=r.json())

            importer = threading.Thread(target=import_file)
            importer.start()
            during = []
            while importer.is_alive() and len(during) < MAX_DURING:
                during.append(translate(client, url, key_a, text()))
                time.sleep(PAUSE_S)
            importer.join()

    result = {
        "model": str(model.name), "fresh": args.fresh, "text_example": text(),
        "import": {"lines": args.lines, "chars_per_line": args.chars, "bytes": len(data), **outcome},
        "alone": summary(alone), "during_import": summary(during),
    }
    if during:
        result["slowest_during_minus_slowest_alone_s"] = round(max(during) - max(alone), 4)
        result["within_normal_plus_1s"] = max(during) <= max(alone) + 1.0
    print(json.dumps(result, indent=2, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0 if outcome.get("status") == 201 else 1


if __name__ == "__main__":
    raise SystemExit(main())
