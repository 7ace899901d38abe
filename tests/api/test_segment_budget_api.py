"""segment_budget_chars on a real server (loopback, fake engine): a three-sentence UI string is one
engine call on /translate, and each line still its own; budget 0 keeps a call per sentence."""

from __future__ import annotations

import httpx

from tests.fakes import FakeEngine
from tests.servers import serve

UI = "Your changes were saved. Reload the page? Click OK to continue!"


def test_a_ui_string_is_one_engine_call_and_lines_stay_apart() -> None:
    engine = FakeEngine()
    with serve(engine, segment_budget_chars=400) as url:
        one = httpx.post(f"{url}/translate", json={"q": UI, "source": "en", "target": "de"}, timeout=30)
        two = httpx.post(f"{url}/translate", json={"q": "One. Two.\nThree.", "source": "en", "target": "de"},
                         timeout=30)
    assert one.status_code == 200 and two.status_code == 200, (one.text, two.text)
    assert one.json()["translatedText"] == f"<de>{UI}"
    assert two.json()["translatedText"] == "<de>One. Two.\n<de>Three."
    assert [call.text for call in engine.calls] == [UI, "One. Two.", "Three."]


def test_budget_zero_sends_a_call_per_sentence() -> None:
    engine = FakeEngine()
    with serve(engine, segment_budget_chars=0) as url:
        r = httpx.post(f"{url}/translate", json={"q": UI, "source": "en", "target": "de"}, timeout=30)
    assert r.status_code == 200, r.text
    assert len(engine.calls) == 3
