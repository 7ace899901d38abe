"""Where /v1/chat/completions finds the target language in a system prompt: the same answers as the
one regex it used to be, in linear time, and never stalling the event loop."""

from __future__ import annotations

import asyncio
import random
import re
import time

import httpx
import pytest

from mtserve.api.errors import ApiError
from mtserve.api.openai import NAME_TO_CODE, resolve_languages
from tests.fakes import FakeEngine
from tests.servers import serve

# The pattern the target search used to be: the reference for what it finds (quadratic on long prompts).
_NAMES = "|".join(sorted((re.escape(n) for n in NAME_TO_CODE), key=len, reverse=True))
REFERENCE = re.compile(
    rf"(?:translat\w*\b.*?\b(?:in|into|to)\s+(?P<en>{_NAMES})\b)|(?:(?:翻译|译)成?为?(?P<zh>{_NAMES}))",
    re.IGNORECASE | re.DOTALL,
)


def reference_target(system: str) -> str | None:
    found = REFERENCE.search(system)
    if not found:
        return None
    name = found["en"] or found["zh"]
    return NAME_TO_CODE.get(name.lower(), NAME_TO_CODE.get(name))


def target_of(system: str) -> str | None:
    try:
        return resolve_languages({"model": "mtserve"}, system)[1]
    except ApiError:
        return None


@pytest.mark.parametrize("system, target", [
    ("Translate the user's text into English.", "en"),
    ("translate to German", "de"),
    ("TRANSLATE INTO ENGLISH", "en"),
    ("Translate from Chinese into English.", "en"),
    ("You are a translator. Reply in French.", "fr"),
    ("Please answer in English. Then translate the text to German.", "de"),
    ("Retranslate it into Spanish", "es"),
    ("translate to Traditional Chinese", "zt"),
    ("Translate the following\ninto\tJapanese", "ja"),
    ("translate into Englishman", None),
    ("Answer in English.", None),
    ("把下面的文字翻译成英文。", "en"),
    ("请译为德文", "de"),
    ("翻译为日语", "ja"),
    ("翻译成English", "en"),
    ("把文本翻译成英文。Translate into German.", "en"),
    ("Translate into German. 翻译成英文", "de"),
    ("You are a helpful assistant.", None),
    ("", None),
])
def test_the_target_named_in_a_system_prompt(system: str, target: str | None) -> None:
    assert target_of(system) == target
    assert reference_target(system) == target


def test_the_same_target_as_the_reference_pattern_on_random_prompts() -> None:
    vocabulary = ["translate", "Translation", "translator", "into", "in", "to", "INTO", "English",
                  "german", "Traditional Chinese", "Chinese", "Englishman", "翻译", "译", "成", "为", "英文",
                  "德语", "中文", "please", "text", "the", ".", ",", "\n", "  ", "into\t", "to:", "x"]
    rng = random.Random(14)
    for _ in range(3000):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(0, 24))]
        system = "".join(word + rng.choice(["", " ", " ", "\n"]) for word in words)
        assert target_of(system) == reference_target(system), system


def test_a_long_prompt_naming_no_target_is_refused_in_linear_time() -> None:
    for size in (8_000, 100_000):  # 80,000 characters took the old pattern 5 s; a million, hours
        system = "translate " * size
        started = time.perf_counter()
        with pytest.raises(ApiError) as refused:
            resolve_languages({"model": "mtserve"}, system)
        elapsed = time.perf_counter() - started
        print(f"{len(system):,} characters: {elapsed * 1000:.1f} ms")
        assert refused.value.status == 400 and "target" in refused.value.message
        assert elapsed < 1.0  # before the million: the old pattern stops here, at 80,000


def test_the_target_is_looked_for_in_the_first_20000_characters() -> None:
    assert target_of("Translate into German. " + "x" * 30_000) == "de"
    assert target_of("x" * 30_000 + " Translate into German.") is None  # a documented bound


def test_health_live_answers_while_a_hostile_prompt_is_read() -> None:
    """The server runs in this process, so a stalled event loop (the regex holds the GIL) stalls the
    probing loop too: the gaps between probe answers show the stall either way."""
    body = {"model": "mtserve", "messages": [{"role": "system", "content": "translate " * 8000},
                                             {"role": "user", "content": "hello"}]}
    with serve(FakeEngine()) as url:
        async def probe_while_posting():
            async with httpx.AsyncClient(timeout=60) as client:
                chat = asyncio.create_task(client.post(f"{url}/v1/chat/completions", json=body))
                answered = [time.monotonic()]
                while not chat.done() or len(answered) < 6:  # bounded: the chat ends within its timeout
                    assert (await client.get(f"{url}/health/live")).status_code == 200
                    answered.append(time.monotonic())
                    await asyncio.sleep(0.05)
                return await chat, [later - earlier for earlier, later in zip(answered, answered[1:])]

        chat, gaps = asyncio.run(probe_while_posting())
    print(f"{len(gaps)} probes of /health/live, the longest gap {max(gaps) * 1000:.0f} ms")
    assert chat.status_code == 400 and "target" in chat.json()["error"]["message"]
    assert max(gaps) < 1.0
