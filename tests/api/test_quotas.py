"""Per-key character quotas on every API family: DeepL's 456 (its client's QuotaExceededException),
a 429 with a clear message elsewhere, /v2/usage reporting them, and the count kept across restarts."""

from __future__ import annotations

import deepl
import httpx
import pytest

from mtserve.service.access import KeyStore
from tests.fakes import FakeEngine
from tests.servers import serve


@pytest.fixture
def keyed(tmp_path):
    store = KeyStore(tmp_path / "keys.sqlite3")
    secret, key = store.add(name="q", char_quota=10, period="month")
    return tmp_path, secret, key


def test_the_deepl_client_sees_its_quota_and_then_quota_exceeded(keyed):
    home, secret, _ = keyed
    with serve(FakeEngine(), home=home, api_keys=True) as url:
        translator = deepl.Translator(secret, server_url=url)
        assert translator.translate_text("你好世界", source_lang="ZH", target_lang="EN-US").text
        usage = translator.get_usage()
        assert usage.character.count == 4 and usage.character.limit == 10
        with pytest.raises(deepl.QuotaExceededException):
            translator.translate_text("这句话有七个字", source_lang="ZH", target_lang="EN-US")
        assert translator.get_usage().character.count == 4  # a refused request is not counted


def test_libretranslate_and_openai_get_a_429_that_says_why(keyed):
    home, secret, _ = keyed
    with serve(FakeEngine(), home=home, api_keys=True) as url:
        ok = httpx.post(f"{url}/translate", json={"q": "一二三四五六", "source": "zh", "target": "en",
                                                  "api_key": secret})
        assert ok.status_code == 200
        over = httpx.post(f"{url}/translate", json={"q": "一二三四五", "source": "zh", "target": "en",
                                                    "api_key": secret})
        assert over.status_code == 429 and "quota" in over.json()["error"]
        chat = httpx.post(f"{url}/v1/chat/completions", headers={"Authorization": f"Bearer {secret}"},
                          json={"model": "mtserve-zh-en", "messages": [{"role": "user", "content": "一二三四五"}]})
        assert chat.status_code == 429 and "quota" in chat.json()["error"]["message"]
        stream = httpx.post(f"{url}/translate/stream", json={"q": "一二三四五", "source": "zh", "target": "en",
                                                             "api_key": secret})
        assert stream.status_code == 429  # before the stream's 200
        upload = httpx.post(f"{url}/translate_file", data={"source": "zh", "target": "en", "api_key": secret},
                            files={"file": ("a.txt", "一二三四五六七八九十。".encode())})
        assert upload.status_code == 429 and "quota" in upload.json()["error"]


def test_the_count_survives_a_restart(keyed):
    home, secret, key = keyed
    with serve(FakeEngine(), home=home, api_keys=True) as url:
        httpx.post(f"{url}/translate", json={"q": "一二三", "source": "zh", "target": "en", "api_key": secret})
    with serve(FakeEngine(), home=home, api_keys=True) as url:
        usage = httpx.get(f"{url}/v2/usage", headers={"Authorization": f"DeepL-Auth-Key {secret}"}).json()
    assert usage == {"character_count": 3, "character_limit": 10}
    assert KeyStore(home / "keys.sqlite3").used(key) == 3
