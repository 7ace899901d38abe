"""DeepL's translation memories over mtserve's own TM: GET /v3/translation_memories lists what a caller's
translations use, one memory per source language, and ``translation_memory_id`` with its threshold on
/v2/translate, through the official client's ``DeepLClient``."""

from __future__ import annotations

import deepl
import httpx
import pytest

from mtserve.service.access import KeyStore
from mtserve.service.tm import TranslationMemory
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve


def stored(home, owner: str | None = None) -> None:
    memory = TranslationMemory(home / "tm.sqlite3")
    memory.add([("打开设置", "Open the settings"), ("保存您的更改", "Save your changes")], "zh", "en",
               origin="ui.po", owner=owner)
    memory.add([("打开设置", "Einstellungen öffnen")], "zh", "de", origin="ui.po", owner=owner)
    memory.add([("Open the settings", "Einstellungen öffnen")], "en", "de", origin="ui.po", owner=owner)
    memory.close()


@pytest.fixture
def served(tmp_path):
    stored(tmp_path)
    engine = ScriptedEngine(lambda request: "Engine translation")
    with serve(engine, home=tmp_path) as url:
        yield url, engine


def test_the_tm_is_listed_as_one_memory_per_source_language(served):
    url, _ = served
    memories = deepl.DeepLClient("any-key", server_url=url).list_translation_memories()
    assert [(m.source_language, sorted(m.target_languages), m.segment_count) for m in memories] == [
        ("en", ["de"], 1), ("zh", ["de", "en"], 3)]
    assert all(m.translation_memory_id and m.name for m in memories)
    raw = httpx.get(f"{url}/v3/translation_memories", params={"page": 1, "page_size": 1}).json()
    assert [m["source_language"] for m in raw["translation_memories"]] == ["zh"] and raw["total_count"] == 2


def test_translation_memory_id_and_its_threshold_choose_how_the_tm_serves_a_translation(served):
    url, engine = served
    client = deepl.DeepLClient("any-key", server_url=url)
    [_, chinese] = client.list_translation_memories()
    exact = client.translate_text("保存您的更改", source_lang="ZH", target_lang="EN-US", translation_memory=chinese)
    assert exact.text == "Save your changes"  # served from the TM, as without the id
    client.translate_text("请打开设置页面", source_lang="ZH", target_lang="EN-US",
                          translation_memory=chinese.translation_memory_id)
    assert ("打开设置", "Open the settings") in engine.calls[-1].examples  # the server's floor: 60
    client.translate_text("请打开设置页面。", source_lang="ZH", target_lang="EN-US", translation_memory=chinese,
                          translation_memory_threshold=95)
    assert engine.calls[-1].examples == ()  # too unlike the entry for the request's floor
    client.translate_text("请打开设置页面!", target_lang="EN-US", translation_memory=chinese)  # auto: taken
    with pytest.raises(deepl.DeepLException, match="holds ZH sources"):
        client.translate_text("Hallo", source_lang="DE", target_lang="EN-US", translation_memory=chinese)
    unknown = httpx.post(f"{url}/v2/translate", json={"text": ["你好"], "target_lang": "EN-US",
                                                      "translation_memory_id": "a74d88fb-ed2a-4943-a664-a4512398b994"})
    assert unknown.status_code == 404 and "Translation memory not found" in unknown.json()["message"]
    for body, words in (({"translation_memory_threshold": 80}, "requires 'translation_memory_id'"),
                        ({"translation_memory_id": chinese.translation_memory_id,
                          "translation_memory_threshold": 101}, "translation_memory_threshold")):
        r = httpx.post(f"{url}/v2/translate", json={"text": ["你好"], "target_lang": "EN-US", **body})
        assert r.status_code == 400 and words in r.json()["message"], r.text


def test_a_key_sees_its_own_entries_and_the_operator_s_and_no_other_key_s_memory(tmp_path):
    keys = KeyStore(tmp_path / "keys.sqlite3")
    alice, alice_key = keys.add(name="alice")
    bob, _ = keys.add(name="bob")
    memory = TranslationMemory(tmp_path / "tm.sqlite3")
    memory.add([("猫", "cat")], "zh", "en", origin="house")  # the operator's: every key's translations use it
    memory.add([("狗", "dog")], "zh", "en", origin="mine", owner=alice_key.id)
    memory.close()
    with serve(ScriptedEngine(), home=tmp_path, api_keys=True, anonymous_rpm=0) as url:
        [mine] = deepl.DeepLClient(alice, server_url=url).list_translation_memories()
        [theirs] = deepl.DeepLClient(bob, server_url=url).list_translation_memories()
        assert (mine.segment_count, theirs.segment_count) == (2, 1)
        assert mine.translation_memory_id != theirs.translation_memory_id
        with pytest.raises(deepl.DeepLException, match="Translation memory not found"):
            deepl.DeepLClient(bob, server_url=url).translate_text("狗", source_lang="ZH", target_lang="EN-US",
                                                                  translation_memory=mine.translation_memory_id)
