"""What the wrapper's one-line prompt and mtserve's request write for the same sentences.

    python benchmarks/prompt_outputs.py [--model qwen2.5-coder-0.5b-instruct-q4_k_m] [--sentences 128]
        [--json OUT.json]

Part of the wrapper's lead in requests/s (``prompt_cost.py``) is that it writes fewer tokens a
request; this shows which: one xllamacpp server (the wrapper's) answers both bodies for the same
short HSK sentences, and the script counts tokens, outputs that leave Chinese in the English, and
outputs that talk about translating instead of translating. These are first attempts, with no
guardrails: what the engine alone writes.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from prompt_cost import bodies  # noqa: E402

from mtserve.bench.targets import WrapperTarget  # noqa: E402
from mtserve.bench.workloads import short_sentences  # noqa: E402
from mtserve.engines.factory import create_engine  # noqa: E402
from mtserve.settings import Settings  # noqa: E402

HAN = re.compile(r"[\u4e00-\u9fff]")
CHATTER = re.compile(r"(?i)translat|here is")


def answer(server, body: dict) -> dict:
    state = {"tokens": 0, "text": ""}

    def on_chunk(chunk: dict) -> bool:
        if chunk.get("usage"):
            state["tokens"] = chunk["usage"].get("completion_tokens", 0)
        for choice in chunk.get("choices") or []:
            state["text"] += (choice.get("delta") or {}).get("content") or ""
        return False

    server.handle_chat_completions(body, on_chunk)
    return state


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    parser.add_argument("--sentences", type=int, default=128)
    parser.add_argument("--json", type=Path, help="write every sentence and both outputs here")
    args = parser.parse_args()
    settings = Settings(model=args.model)
    texts, origin = short_sentences(limit=args.sentences)
    engine = create_engine(settings)  # builds mtserve's requests; never loaded
    server = WrapperTarget.llama_server(str(engine.model_path), settings.threads, settings.n_parallel,
                                        settings.ctx_per_slot, {})
    outputs = {}
    for variant in ("wrapper", "mtserve"):
        with ThreadPoolExecutor(settings.n_parallel) as pool:
            outputs[variant] = list(pool.map(lambda body: answer(server, body),
                                             bodies(variant, texts, engine, settings.max_output_tokens)))
    print(f"{args.model}, {len(texts)} sentences ({origin})\n")
    print("| prompt | tokens/request | outputs with Chinese left | outputs about translating |")
    print("|---|---|---|---|")
    for variant, answers in outputs.items():
        print(f"| {variant} | {statistics.mean(a['tokens'] for a in answers):.2f} "
              f"| {sum(bool(HAN.search(a['text'])) for a in answers)} "
              f"| {sum(bool(CHATTER.search(a['text'])) for a in answers)} |")
    clean = [(w, m) for w, m in zip(outputs["wrapper"], outputs["mtserve"])
             if not HAN.search(w["text"]) and not HAN.search(m["text"])]
    print(f"\nwhere neither left Chinese ({len(clean)}): wrapper {statistics.mean(w['tokens'] for w, _ in clean):.2f}, "
          f"mtserve {statistics.mean(m['tokens'] for _, m in clean):.2f} tokens/request")
    if args.json:
        rows = [{"text": t, "wrapper": w["text"].strip(), "mtserve": m["text"].strip()}
                for t, w, m in zip(texts, outputs["wrapper"], outputs["mtserve"])]
        args.json.write_text(json.dumps(rows, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
