"""One huge "word" is cut into segments that fit the engine, and the pieces join back with nothing
added between them."""

from __future__ import annotations

import json

import httpx

from tests.fakes import FakeEngine
from tests.servers import serve

MAX_CHARS = 400  # segment_max_chars, the default


def test_a_word_longer_than_a_segment_is_cut_to_fit_and_joined_without_spaces() -> None:
    word = "a" * 1000
    engine = FakeEngine()
    with serve(engine, segment_max_chars=MAX_CHARS) as url:
        r = httpx.post(f"{url}/translate", json={"q": word, "source": "en", "target": "de"}, timeout=30)
    assert r.status_code == 200, r.text
    assert [len(call.text) for call in engine.calls] == [400, 400, 200]
    assert r.json()["translatedText"] == "<de>" + "a" * 400 + "<de>" + "a" * 400 + "<de>" + "a" * 200


def test_cjk_without_punctuation_and_a_run_of_one_character_fit_the_engine() -> None:
    engine = FakeEngine()
    with serve(engine, segment_max_chars=MAX_CHARS, char_limit=20_000) as url:
        cjk = httpx.post(f"{url}/translate", json={"q": "字" * 1000, "source": "zh", "target": "en"})
        run = httpx.post(f"{url}/translate", json={"q": "x" * 9999, "source": "en", "target": "fr"})
    assert cjk.status_code == 200 and run.status_code == 200
    assert engine.calls and max(len(call.text) for call in engine.calls) <= MAX_CHARS
    assert run.json()["translatedText"].replace("<fr>", "") == "x" * 9999


def test_the_stream_cuts_a_huge_word_the_same_way() -> None:
    engine = FakeEngine()
    with serve(engine, segment_max_chars=MAX_CHARS) as url:
        with httpx.stream("POST", f"{url}/translate/stream", timeout=30,
                          json={"q": "b" * 900, "source": "en", "target": "de"}) as r:
            lines = [line for line in r.iter_lines() if line.startswith("data:")]
    final = json.loads(lines[-1][len("data:"):])
    assert final["translatedText"] == "<de>" + "b" * 400 + "<de>" + "b" * 400 + "<de>" + "b" * 100
    assert max(len(call.text) for call in engine.calls) <= MAX_CHARS


def test_characters_beyond_the_bmp_are_cut_to_fit_the_context() -> None:
    engine = FakeEngine()
    with serve(engine, segment_max_chars=MAX_CHARS) as url:
        r = httpx.post(f"{url}/translate", json={"q": "\U00020000" * 400, "source": "zh", "target": "en"})
    assert r.status_code == 200, r.text
    assert max(len(call.text) for call in engine.calls) <= MAX_CHARS // 3  # each takes about three tokens
