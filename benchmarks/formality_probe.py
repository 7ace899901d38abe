"""Does the model follow DeepL's ``formality``? A probe of the pronouns and verb forms of address.

Eight English sentences that address the reader ("Can you help me?") are translated into each
target with formality default, more and less, in process, through the service (the same prompt
the API builds). Each output is classified by the target's markers of address: formal (German
Sie/Ihnen, French vous, Chinese 您, Japanese です/ます...), informal (du, tu, 你, plain forms), or
neither (no pronoun of address, as Spanish often drops it). The table says, per target, how
often "more" came out formal and "less" informal, against the default's own lean.

    python benchmarks/formality_probe.py --threads 1                       # the default model
    python benchmarks/formality_probe.py --model qwen2.5-coder-0.5b-instruct-q4_k_m --targets de,fr

This is quality, not speed: greedy decoding, so the figures are the same on any machine.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path

SENTENCES = (
    "Can you help me?", "How are you today?", "Did you read my message?", "Please send me your address.",
    "You are very kind.", "Where do you live?", "Thank you for your patience.", "Would you like some tea?",
)
# target -> (formal marker, informal marker), searched in the output
MARKERS: dict[str, tuple[str, str]] = {
    "de": (r"\b(Sie|Ihnen|Ihr\w*)\b", r"\b([Dd]u|[Dd]ich|[Dd]ir|[Dd]ein\w*)\b"),
    "fr": (r"(?i)\bvous\b", r"(?i)\b(tu|te|toi|ton|ta|tes)\b|\bt'"),
    "es": (r"(?i)\busted(es)?\b", r"(?i)\b(tú|te|ti|contigo|tu|tus)\b"),
    "ru": (r"\b[Вв](ы|ас|ам|аш\w*)\b", r"\b[Тт](ы|ебя|ебе|во\w*)\b"),
    "zh": (r"您", r"你"),
    "ja": (r"(です|ます|ません|でした|ください)", r"^(?!.*(です|ます|ません|でした|ください)).+$"),
}


def classify(target: str, output: str) -> str:
    formal, informal = MARKERS[target]
    is_formal, is_informal = bool(re.search(formal, output)), bool(re.search(informal, output))
    if is_formal and not is_informal:
        return "formal"
    if is_informal and not is_formal:
        return "informal"
    return "neither"


async def probe(model: str, threads: int, targets: list[str]) -> None:
    from mtserve.models.store import ModelStore
    from mtserve.service.request import Guidance, TranslationRequest
    from mtserve.service.runtime import Runtime
    from mtserve.settings import Settings

    path = ModelStore(Settings().models_dir).resolve(model).path  # the user's store, not the temporary home's
    with tempfile.TemporaryDirectory() as home:
        runtime = Runtime(Settings(home=Path(home), model=str(path), threads=threads, n_parallel=1, cache_size=0))
        await runtime.start()
        await runtime.wait_ready()
        service = runtime.service
        assert service is not None, runtime.load_error
        print(f"model {model}\n")
        print("| target | told | default: formal / informal | more: formal | less: informal |")
        print("|---|---|---:|---:|---:|")
        for target in targets:
            counts: dict[str, dict[str, int]] = {}
            for formality in ("default", "more", "less"):
                wanted = formality if formality == "default" else f"prefer_{formality}"  # told where it can be
                results = await service.translate(TranslationRequest(list(SENTENCES), target, source="en",
                                                                      guidance=Guidance(formality=wanted)))
                counts[formality] = {kind: 0 for kind in ("formal", "informal", "neither")}
                for result in results:
                    counts[formality][classify(target, result.text)] += 1
            n = len(SENTENCES)
            told = "yes" if service.supports_formality(target) else "no"
            print(f"| {target} | {told} | {counts['default']['formal']} / {counts['default']['informal']} of {n} | "
                  f"{counts['more']['formal']} of {n} | {counts['less']['informal']} of {n} |", flush=True)
        await runtime.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--targets", default=",".join(MARKERS))
    args = parser.parse_args()
    asyncio.run(probe(args.model, args.threads, [t.strip() for t in args.targets.split(",") if t.strip()]))


if __name__ == "__main__":
    main()
