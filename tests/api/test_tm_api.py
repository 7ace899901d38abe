"""The /tm API and /suggest on a real uvicorn around the test-double engine: ownership between keys,
caps, the operator's powers, the key before an upload's body, and limits.

The same flows against the real model are in tests/integration/test_tm_live.py.
"""

from __future__ import annotations

import threading

import httpx
import pytest

from mtserve.service.access import KeyStore
from mtserve.service.tm import ALL_OWNERS, TranslationMemory
from tests.fakes import FakeEngine
from tests.hostile.bodies import MULTIPART, multipart
from tests.servers import metric_value, serve

TSV = "打开\tOpen\n保存\tSave\n关闭\tClose\n".encode()


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def import_tsv(url: str, data: bytes = TSV, name: str = "ui.tsv", headers: dict | None = None,
               **fields: str) -> httpx.Response:
    return httpx.post(f"{url}/tm/import", files={"file": (name, data)},
                      data={"source": "zh", "target": "en", **fields}, headers=headers or {}, timeout=30)


def translate(url: str, q: str, headers: dict | None = None, **extra) -> dict:
    r = httpx.post(f"{url}/translate", json={"q": q, "source": "zh", "target": "en", **extra},
                   headers=headers or {}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def error(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, (r.status_code, r.text)
    return r.json()["error"]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    """Keys on (not required), suggestions on, a cap of 4 entries a key; two keys."""
    home = tmp_path_factory.mktemp("home")
    store = KeyStore(home / "keys.sqlite3")
    one, first = store.add(name="one")
    two, second = store.add(name="two")
    with serve(FakeEngine(), home=home, api_keys=True, suggestions=True, tm_entries_per_key=4,
               tm_bytes_per_key=10_000, tm_suggestions_per_key=2, max_body_bytes=10_000) as url:
        yield url, home, (one, first.id), (two, second.id)


def test_the_operator_imports_searches_lists_and_deletes_and_translate_serves_at_once(tmp_path):
    with serve(FakeEngine(), home=tmp_path) as url:
        assert translate(url, "保存")["translatedText"] == "<en>保存"  # the service now knows the TM has no zh->en
        done = import_tsv(url)
        assert done.status_code == 201, done.text
        assert done.json() == {"source": "zh", "target": "en", "origin": "ui.tsv", "added": 3, "duplicates": 0,
                               "skipped": {}, "entries": 3}
        assert import_tsv(url).json()["duplicates"] == 3
        body = translate(url, "保存")  # no wait: the service's pair cache follows the store's writes
        assert body["translatedText"] == "Save" and body["translationMemory"] == {"segments": 1}
        assert metric_value(url, "mtserve_tm_exact_matches_total") == 1
        assert translate(url, "保存", tm=False)["translatedText"] == "<en>保存"
        stats = httpx.get(f"{url}/tm").json()
        assert stats["entries"] == 3 and stats["pairs"] == [
            {"source": "zh", "target": "en", "entries": 3, "suggestions": 0, "origins": 1}]
        found = httpx.get(f"{url}/tm/search", params={"q": " 保存 ", "source": "zh", "target": "en"}).json()
        assert found["matches"][0]["targetText"] == "Save" and found["matches"][0]["exact"] is True
        page = httpx.get(f"{url}/tm/entries", params={"limit": 2}).json()
        assert [e["sourceText"] for e in page["entries"]] == ["打开", "保存"] and page["next"] is not None
        rest = httpx.get(f"{url}/tm/entries", params={"limit": 2, "after": page["next"]}).json()
        assert [e["sourceText"] for e in rest["entries"]] == ["关闭"] and rest["next"] is None
        first = page["entries"][0]["id"]
        assert httpx.delete(f"{url}/tm/entries/{first}").json() == {"deleted": 1}
        assert error(httpx.delete(f"{url}/tm/entries/{first}"), 404).startswith("no entry has that id")
        assert httpx.delete(f"{url}/tm/entries", params={"origin": "ui.tsv"}).json() == {"deleted": 2}
        assert "translationMemory" not in translate(url, "保存")


def test_translations_answer_while_another_keys_import_holds_its_write_transaction(tmp_path, monkeypatch):
    """One key's TM import does not freeze the other translations on the server. Here the import is held
    inside its write transaction until the translations have answered."""
    store = KeyStore(tmp_path / "keys.sqlite3")
    a, _ = store.add(name="a")
    b, _ = store.add(name="b")
    TranslationMemory(tmp_path / "tm.sqlite3").add([("退出", "Quit")], "zh", "en", origin="cli")
    inside, released = threading.Event(), threading.Event()

    def pause(memory: TranslationMemory) -> None:
        inside.set()
        released.wait(timeout=120)

    monkeypatch.setattr(TranslationMemory, "_in_write_batch", pause)
    long_lines = "".join(f"第{i}行" + "长句" * 2000 + f"\tline {i}\n" for i in range(20)).encode()
    imported: dict[str, httpx.Response] = {}
    with serve(FakeEngine(), home=tmp_path, api_keys=True) as url:
        importer = threading.Thread(target=lambda: imported.setdefault(
            "r", import_tsv(url, long_lines, name="long.tsv", headers=bearer(b))))
        importer.start()
        try:
            assert inside.wait(timeout=30), "the import never reached its write transaction"
            other_pair = httpx.post(f"{url}/translate", json={"q": "こんにちは", "source": "ja", "target": "de"},
                                    headers=bearer(a), timeout=30)
            served = translate(url, "退出", bearer(a))
            assert not released.is_set()  # both answered while the import held its transaction
        finally:
            released.set()
            importer.join(timeout=60)
    assert other_pair.status_code == 200 and other_pair.json()["translatedText"] == "<de>こんにちは"
    assert served["translatedText"] == "Quit" and served["translationMemory"] == {"segments": 1}
    assert imported["r"].status_code == 201 and imported["r"].json()["added"] == 20


def test_an_upload_over_the_file_limit_is_413_naming_the_setting(tmp_path):
    big = "打开\tOpen\n".encode() * 20_000  # 260 kB
    with serve(FakeEngine(), home=tmp_path, files_max_mb=0.1) as url:
        declared = import_tsv(url, big)
        streamed = httpx.post(f"{url}/tm/import", content=iter([multipart([("file", "a.tsv", big)])]),
                              headers={"Content-Type": MULTIPART}, timeout=30)  # chunked: no Content-Length
        small = import_tsv(url)
    assert "MTSERVE_FILES_MAX_MB" in error(declared, 413)
    assert "MTSERVE_FILES_MAX_MB" in error(streamed, 413)
    assert small.status_code == 201


def test_a_tm_file_is_parsed_in_the_sandbox_under_its_memory_limit_and_the_server_goes_on(tmp_path):
    """TM files are parsed in the document sandbox, not in the server process: parsed there, six imports
    of an 18.8 MB TMX at once took it from 346 MiB to 2.26 GiB."""
    catalog = 'msgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n\n' + "".join(
        f'msgid "Open file number {i}"\nmsgstr "打开第{i}个文件"\n\n' for i in range(60_000))  # polib: ~1 kB each
    with serve(FakeEngine(), home=tmp_path, files_parse_memory_mb=30) as url:
        heavy = httpx.post(f"{url}/tm/import", files={"file": ("big.po", catalog.encode())}, timeout=120)
        light = import_tsv(url)
        broken = httpx.post(f"{url}/tm/import", files={"file": ("bad.po", b'msgid "a"\nmsgstr')}, timeout=60,
                            data={"source": "en", "target": "zh"})
    message = error(heavy, 413)
    assert "reading the .po file" in message and "MTSERVE_FILES_PARSE_MEMORY_MB" in message
    assert light.status_code == 201, light.text
    message = error(broken, 400)  # a parse error from the worker: its line, and no server path
    assert message == "the .po file cannot be parsed: Syntax error in po file (line 2)", message


def test_a_key_sees_and_deletes_only_its_own_and_uses_the_operators_at_translate_time(keyed, tmp_path):
    url, home, (one, one_id), (two, two_id) = keyed
    mine = import_tsv(url, "提交\tSubmit\n".encode(), name="one.tsv", headers=bearer(one))
    assert mine.status_code == 201 and mine.json()["entries"] == 1
    entry = httpx.get(f"{url}/tm/entries", headers=bearer(one)).json()["entries"][0]
    assert entry["owner"] == one_id and entry["origin"] == "one.tsv"
    # the other key: sees nothing, finds nothing, deletes nothing, and is not served the entry
    assert httpx.get(f"{url}/tm/entries", headers=bearer(two)).json()["entries"] == []
    assert httpx.get(f"{url}/tm", headers=bearer(two)).json()["entries"] == 0
    search = {"q": "提交", "source": "zh", "target": "en"}
    assert httpx.get(f"{url}/tm/search", params=search, headers=bearer(two)).json()["matches"] == []
    assert httpx.get(f"{url}/tm/search", params=search, headers=bearer(one)).json()["matches"][0]["score"] == 100
    assert error(httpx.delete(f"{url}/tm/entries/{entry['id']}", headers=bearer(two)), 404).startswith(
        f"no entry of API key {two_id}")
    assert error(httpx.delete(f"{url}/tm/entries", params={"origin": "one.tsv"}, headers=bearer(two)), 404)
    assert translate(url, "提交", bearer(two))["translatedText"] == "<en>提交"
    assert translate(url, "提交", bearer(one))["translatedText"] == "Submit"
    # the operator's entries (the CLI's) serve every key, but no key lists them
    TranslationMemory(home / "tm.sqlite3").add([("退出", "Quit")], "zh", "en", origin="cli")
    assert translate(url, "退出", bearer(two))["translatedText"] == "Quit"
    assert [e["sourceText"] for e in httpx.get(f"{url}/tm/entries", headers=bearer(two)).json()["entries"]] == []
    assert httpx.delete(f"{url}/tm/entries/{entry['id']}", headers=bearer(one)).json() == {"deleted": 1}


def test_a_caller_without_a_key_may_not_use_the_tm_api_when_keys_are_on(keyed):
    url = keyed[0]
    assert "needs an API key" in error(import_tsv(url), 403)
    assert "needs an API key" in error(httpx.get(f"{url}/tm"), 403)
    assert "invalid api key" in error(import_tsv(url, headers=bearer("mts_wrong")), 403).lower()


def test_a_large_upload_without_a_key_first_is_refused_before_its_body_is_read(keyed):
    url, _, (one, _), _ = keyed
    big = "打开\tOpen\n".encode() * 2000  # 26 kB: over this server's max_body_bytes of 10 kB
    late = httpx.post(f"{url}/tm/import", content=multipart(
        [("file", "a.tsv", big), ("source", None, b"zh"), ("target", None, b"en"), ("api_key", None, one.encode())]),
        headers={"Content-Type": MULTIPART}, timeout=30)
    assert late.status_code == 400 and "API key is required before" in late.json()["hint"], late.text
    first = httpx.post(f"{url}/tm/import", content=multipart(
        [("api_key", None, one.encode()), ("source", None, b"zh"), ("target", None, b"en"),
         ("file", "a.tsv", "打开\tOpen\n".encode())]), headers={"Content-Type": MULTIPART}, timeout=30)
    assert first.status_code == 201, first.text
    assert httpx.delete(f"{url}/tm/entries", params={"origin": "a.tsv"}, headers=bearer(one)).status_code == 200


def test_the_entries_cap_refuses_a_whole_import_and_names_its_setting(keyed):
    url, _, _, (two, two_id) = keyed
    assert import_tsv(url, name="three.tsv", headers=bearer(two)).status_code == 201  # 3 of 4
    over = import_tsv(url, "一\tOne\n二\tTwo\n".encode(), name="two.tsv", headers=bearer(two))
    message = error(over, 403)
    assert "MTSERVE_TM_ENTRIES_PER_KEY" in message and f"API key {two_id} holds 3" in message
    assert httpx.get(f"{url}/tm", headers=bearer(two)).json() == {
        "entries": 3, "entriesLimit": 4, "bytes": 31, "bytesLimit": 10_000,
        "pairs": [{"source": "zh", "target": "en", "entries": 3, "suggestions": 0, "origins": 1}]}
    assert httpx.delete(f"{url}/tm/entries", params={"origin": "three.tsv"}, headers=bearer(two)).json() == {
        "deleted": 3}


def test_suggestions_wait_for_the_operator_and_are_capped_per_key(keyed):
    url, home, (one, one_id), _ = keyed
    fields = {"q": "你好", "s": "Hello there", "source": "zh", "target": "en"}
    assert httpx.post(f"{url}/suggest", json=fields, headers=bearer(one)).json() == {"success": True}
    assert httpx.post(f"{url}/suggest", data={**fields, "q": "再见", "s": "Bye", "api_key": one}).json() == {
        "success": True}  # form data with the key in it, as LibreTranslate's page sends it
    assert "MTSERVE_TM_SUGGESTIONS_PER_KEY" in error(
        httpx.post(f"{url}/suggest", json={**fields, "q": "谢谢"}, headers=bearer(one)), 403)
    assert translate(url, "你好", bearer(one))["translatedText"] == "<en>你好"  # not used until accepted
    assert "is for the operator" in error(
        httpx.post(f"{url}/tm/suggestions/accept", json={"all": True}, headers=bearer(one)), 403)
    assert "is for the operator" in error(httpx.get(f"{url}/tm/suggestions", headers=bearer(one)), 403)
    assert httpx.get(f"{url}/frontend/settings").json()["suggestions"] is True
    waiting = list(TranslationMemory(home / "tm.sqlite3").entries(owner=ALL_OWNERS, suggestions=True))
    assert {(e.source, e.origin, e.owner) for e in waiting} == {("你好", f"suggest:{one_id}", None),
                                                                ("再见", f"suggest:{one_id}", None)}


def test_the_bytes_cap_refuses_an_import_whose_text_would_pass_it_and_names_its_setting(tmp_path):
    """The caps count bytes too: counting entries alone, a key could store entries of 5,000 characters each."""
    store = KeyStore(tmp_path / "keys.sqlite3")
    one, first = store.add(name="one")
    two, _ = store.add(name="two")
    with serve(FakeEngine(), home=tmp_path, api_keys=True, tm_bytes_per_key=50) as url:
        assert import_tsv(url, headers=bearer(one)).status_code == 201  # 31 bytes of UTF-8
        over = import_tsv(url, "删除\tDelete\n重命名\tRename\n".encode(), name="more.tsv", headers=bearer(one))
        held = httpx.get(f"{url}/tm", headers=bearer(one)).json()
        other_key = import_tsv(url, "删除\tDelete\n重命名\tRename\n".encode(), name="more.tsv", headers=bearer(two))
    message = error(over, 403)
    assert "MTSERVE_TM_BYTES_PER_KEY" in message and f"API key {first.id} holds 31 bytes" in message
    assert "more than the 19 left under the limit of 50 bytes" in message  # 删除Delete 12 + 重命名Rename 15
    assert (held["entries"], held["bytes"], held["bytesLimit"]) == (3, 31, 50)
    assert other_key.status_code == 201  # the cap is per key


def test_suggestions_are_capped_in_bytes_per_key_and_callers_without_one_share_theirs(tmp_path):
    """Suggestions are capped in bytes: without a cap, 100 anonymous /suggest calls of 5,000 characters grew
    the store by 46 MB."""
    store = KeyStore(tmp_path / "keys.sqlite3")
    one, first = store.add(name="one")
    long = {"q": "长" * 30, "s": "long " * 4, "source": "zh", "target": "en"}  # 90 + 20 bytes
    with serve(FakeEngine(), home=tmp_path, api_keys=True, suggestions=True, tm_suggestion_bytes_per_key=250) as url:
        anonymous = [httpx.post(f"{url}/suggest", json={**long, "s": f"{long['s']}{i}"}) for i in range(3)]
        keyed = httpx.post(f"{url}/suggest", json=long, headers=bearer(one))
    assert [r.status_code for r in anonymous[:2]] == [200, 200]
    message = error(anonymous[2], 403)
    assert "MTSERVE_TM_SUGGESTION_BYTES_PER_KEY" in message and "callers without an API key" in message
    assert "hold 222 bytes and this one has 111 more" in message
    assert keyed.status_code == 200  # a key has an allowance of its own


@pytest.mark.parametrize("fields, missing", [
    ({"s": "Hi", "source": "zh", "target": "en"}, "q"), ({"q": "你好", "source": "zh", "target": "en"}, "s"),
    ({"q": "你好", "s": "Hi", "target": "en"}, "source"), ({"q": "你好", "s": "Hi", "source": "zh"}, "target"),
])
def test_suggest_names_a_missing_field_as_libretranslate_does(keyed, fields, missing):
    r = httpx.post(f"{keyed[0]}/suggest", json=fields)
    assert error(r, 400) == f"Invalid request: missing {missing} parameter"


def test_suggest_refuses_fields_it_cannot_store(keyed):
    url = keyed[0]
    base = {"q": "你好", "s": "Hi", "source": "zh", "target": "en"}
    assert "not a language this server translates" in error(
        httpx.post(f"{url}/suggest", json={**base, "source": "xx"}), 400)
    assert "5,000" in error(httpx.post(f"{url}/suggest", json={**base, "s": "x" * 5001}), 400)
    assert "must be a string" in error(httpx.post(f"{url}/suggest", json={**base, "target": ["en"]}), 400)
    assert "two different languages" in error(httpx.post(f"{url}/suggest", json={**base, "target": "zh"}), 400)


def test_the_operator_accepts_suggestions_over_http_and_they_serve_every_caller(tmp_path):
    with serve(FakeEngine(), home=tmp_path, suggestions=True) as url:
        for q, s in (("你好", "Hi there"), ("再见", "See you")):
            assert httpx.post(f"{url}/suggest", json={"q": q, "s": s, "source": "zh", "target": "en"}).json() == {
                "success": True}
        waiting = httpx.get(f"{url}/tm/suggestions").json()["entries"]
        assert [(e["sourceText"], e["origin"], e["suggestion"]) for e in waiting] == [
            ("你好", "suggest:anonymous", True), ("再见", "suggest:anonymous", True)]
        assert translate(url, "你好")["translatedText"] == "<en>你好"
        accepted = httpx.post(f"{url}/tm/suggestions/accept", json={"ids": [waiting[0]["id"]]})
        assert accepted.json() == {"accepted": 1}
        assert translate(url, "你好")["translatedText"] == "Hi there"
        assert httpx.delete(f"{url}/tm/entries/{waiting[1]['id']}").json() == {"deleted": 1}  # rejected
        assert httpx.get(f"{url}/tm/suggestions").json()["entries"] == []


def test_suggest_is_refused_in_libretranslates_words_while_off(tmp_path):
    with serve(FakeEngine(), home=tmp_path) as url:
        r = httpx.post(f"{url}/suggest", json={"q": "你好", "s": "Hi", "source": "zh", "target": "en"})
        assert httpx.get(f"{url}/frontend/settings").json()["suggestions"] is False
    assert error(r, 403) == "Suggestions are disabled on this server."
