"""Who may see, use and delete stored glossaries when API keys are on; their caps.

A key lists, reads, uses and deletes its own glossaries; the operator's (made with the CLI, no
owner) are readable and usable by every caller and deletable by none through the API; a caller
without a key (keys on, not required) reads and uses the operator's only and creates nothing.
The API tests run a real uvicorn with the test double engine and read what reached the engine.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3

import httpx
import pytest

from mtserve.service.access import KeyStore
from mtserve.service.glossary_store import GlossaryStore
from tests.fakes import FakeEngine
from tests.servers import serve

TIMEOUT = 30
TSV = "猫\tkitty\n狗\tdoggy\n"


def deepl(key: str | None) -> dict[str, str]:
    return {"Authorization": f"DeepL-Auth-Key {key}"} if key else {}


def create(url: str, key: str | None, name: str = "pets", entries: str = TSV, fmt: str = "tsv") -> httpx.Response:
    return httpx.post(f"{url}/v2/glossaries", headers=deepl(key), timeout=TIMEOUT, data={
        "name": name, "source_lang": "ZH", "target_lang": "EN", "entries": entries, "entries_format": fmt})


def translate(url: str, key: str | None, glossary_id: str, q: str = "猫。", **fields) -> httpx.Response:
    body = {"q": q, "source": "zh", "target": "en", "glossary_id": glossary_id, **fields}
    if key:
        body["api_key"] = key
    return httpx.post(f"{url}/translate", json=body, timeout=TIMEOUT)


@pytest.fixture
def keyed(tmp_path):
    """A server with API keys on (not required), two keys, and one operator glossary made with the store."""
    keys = KeyStore(tmp_path / "keys.sqlite3")
    alice, _ = keys.add(name="alice")
    bob, _ = keys.add(name="bob")
    operator = GlossaryStore(tmp_path / "glossaries.sqlite3").create("house", "zh", "en", {"鸟": "birdie"})
    engine = FakeEngine()
    with serve(engine, home=tmp_path, api_keys=True, anonymous_rpm=0) as url:
        yield url, engine, alice, bob, operator.id


def test_a_key_sees_uses_and_deletes_only_its_own_glossaries_and_the_operators(keyed):
    url, engine, alice, bob, house = keyed
    made = create(url, alice)
    assert made.status_code == 201, made.text
    mine = made.json()["glossary_id"]

    def listed(key):
        r = httpx.get(f"{url}/v2/glossaries", headers=deepl(key), timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        return {g["glossary_id"] for g in r.json()["glossaries"]}

    assert listed(alice) == {mine, house}
    assert listed(bob) == {house}  # another key's glossary is not listed
    assert listed(None) == {house}  # nor to a caller without a key
    for path in (f"/v2/glossaries/{mine}", f"/v2/glossaries/{mine}/entries"):
        assert httpx.get(f"{url}{path}", headers=deepl(alice), timeout=TIMEOUT).status_code == 200
        for stranger in (bob, None):
            r = httpx.get(f"{url}{path}", headers=deepl(stranger), timeout=TIMEOUT)
            assert r.status_code == 404 and r.json() == {"message": f"Glossary not found: {mine}"}
    # using it: its owner may, nobody else, on every route that takes a glossary_id
    assert translate(url, alice, mine).status_code == 200
    assert ("猫", "kitty") in engine.calls[-1].glossary
    for stranger in (bob, None):
        r = translate(url, stranger, mine)
        assert r.status_code == 404 and f"no glossary with id {mine!r}" in r.json()["error"]
        stream = httpx.post(f"{url}/translate/stream", timeout=TIMEOUT, json={
            "q": "猫。", "source": "zh", "target": "en", "glossary_id": mine, "api_key": stranger})
        assert stream.status_code == 404
        job = httpx.post(f"{url}/jobs", timeout=TIMEOUT, files={"file": ("a.txt", "猫。".encode())},
                         data={"source": "zh", "target": "en", "glossary_id": mine, "api_key": stranger or ""})
        assert job.status_code == 404, job.text
        v2 = httpx.post(f"{url}/v2/translate", headers=deepl(stranger), timeout=TIMEOUT,
                        data={"text": "猫。", "source_lang": "ZH", "target_lang": "EN-US", "glossary_id": mine})
        assert v2.status_code == 400 and "no glossary" in v2.json()["message"]
    # deleting it: a stranger gets the 404 of a glossary that does not exist; the owner deletes it
    for stranger in (bob, None):
        r = httpx.delete(f"{url}/v2/glossaries/{mine}", headers=deepl(stranger), timeout=TIMEOUT)
        assert r.status_code == 404
    assert httpx.delete(f"{url}/v2/glossaries/{mine}", headers=deepl(alice), timeout=TIMEOUT).status_code == 204
    assert listed(alice) == {house}


def test_the_operators_glossaries_are_usable_by_all_and_deletable_by_none_through_the_api(keyed):
    url, engine, alice, bob, house = keyed
    for key in (alice, bob, None):
        assert httpx.get(f"{url}/v2/glossaries/{house}/entries", headers=deepl(key),
                         timeout=TIMEOUT).text == "鸟\tbirdie\n"
        assert translate(url, key, house, q="鸟。").status_code == 200
        assert engine.calls[-1].glossary == (("鸟", "birdie"),)
        r = httpx.delete(f"{url}/v2/glossaries/{house}", headers=deepl(key), timeout=TIMEOUT)
        assert r.status_code == 403 and "mtserve glossary remove" in r.json()["message"], r.text
    assert httpx.get(f"{url}/v2/glossaries/{house}", timeout=TIMEOUT).status_code == 200  # still there


def test_a_caller_without_a_key_creates_no_glossary_when_keys_are_on(keyed):
    url, _, _, _, _ = keyed
    r = create(url, None)
    assert r.status_code == 403 and "needs an API key" in r.json()["message"]
    assert "DeepL-Auth-Key" in r.json()["message"]


def test_the_list_counts_entries_in_sql_in_a_worker_thread(keyed, monkeypatch):
    url, _, alice, _, _ = keyed
    assert create(url, alice, entries="".join(f"词{i}\tword{i}\n" for i in range(500))).status_code == 201
    seen = {}
    real_list = GlossaryStore.list

    def spy(self, *args, **kwargs):
        try:
            asyncio.get_running_loop()
            seen["on_loop"] = True
        except RuntimeError:
            seen["on_loop"] = False
        return real_list(self, *args, **kwargs)

    def no_entries(self, glossary_id):
        raise AssertionError("the listing read a glossary's entries")

    monkeypatch.setattr(GlossaryStore, "list", spy)
    monkeypatch.setattr(GlossaryStore, "_entries", no_entries)
    r = httpx.get(f"{url}/v2/glossaries", headers=deepl(alice), timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    assert sorted(g["entry_count"] for g in r.json()["glossaries"]) == [1, 500]
    assert seen == {"on_loop": False}


# --- caps ---------------------------------------------------------------------------------------
def test_caps_on_glossaries_per_key_entries_per_glossary_and_a_requests_own_glossary(tmp_path):
    keys = KeyStore(tmp_path / "keys.sqlite3")
    alice, _ = keys.add()
    bob, _ = keys.add()
    engine = FakeEngine()
    with serve(engine, home=tmp_path, api_keys=True, glossaries_per_key=2, glossary_max_entries=3,
               glossary_request_entries=2) as url:
        assert [create(url, alice, name=f"g{i}").status_code for i in range(2)] == [201, 201]
        third = create(url, alice, name="g2")
        assert create(url, bob).status_code == 201  # the cap is per key
        too_many = create(url, bob, entries="一\tone\n二\ttwo\n三\tthree\n四\tfour\n")
        too_many_json = create(url, bob, fmt="json",
                               entries=json.dumps({str(i): str(i) for i in range(4)}))
        three = create(url, bob, name="three", entries="一\tone\n二\ttwo\n三\tthree\n")
        own = {"一": "one", "二": "two", "三": "three"}
        request_glossary = httpx.post(f"{url}/translate", timeout=TIMEOUT, json={
            "q": "一。", "source": "zh", "target": "en", "glossary": own, "api_key": alice})
        stream_glossary = httpx.get(f"{url}/translate/stream", timeout=TIMEOUT, params={
            "q": "一。", "source": "zh", "target": "en", "glossary": json.dumps(own), "api_key": alice})
        job_glossary = httpx.post(f"{url}/jobs", timeout=TIMEOUT, files={"file": ("a.txt", "一。".encode())},
                                  data={"source": "zh", "target": "en", "glossary": json.dumps(own),
                                        "api_key": alice})
        two = httpx.post(f"{url}/translate", timeout=TIMEOUT, json={
            "q": "一。", "source": "zh", "target": "en", "glossary": {"一": "one", "二": "two"}, "api_key": alice})
    assert third.status_code == 403 and "MTSERVE_GLOSSARIES_PER_KEY" in third.json()["message"], third.text
    for r in (too_many, too_many_json):
        assert r.status_code == 413 and "MTSERVE_GLOSSARY_MAX_ENTRIES" in r.json()["message"], r.text
    assert three.status_code == 201
    for r in (request_glossary, stream_glossary, job_glossary):
        assert r.status_code == 413, r.text
        assert "3 entries" in r.json()["error"] and "MTSERVE_GLOSSARY_REQUEST_ENTRIES" in r.json()["error"]
    assert two.status_code == 200
    assert [c.text for c in engine.calls] == ["一。"]  # only the request within its cap was translated


def test_a_keys_glossaries_are_capped_in_bytes_together(tmp_path):
    """Counts alone let 100 glossaries of 10,000 long entries each through; their bytes are capped too."""
    keys = KeyStore(tmp_path / "keys.sqlite3")
    alice, alice_key = keys.add()
    bob, _ = keys.add()
    with serve(FakeEngine(), home=tmp_path, api_keys=True, glossary_bytes_per_key=40) as url:
        first = create(url, alice, name="first", entries="猫\tcat\n狗\tdog\n")  # 12 bytes of UTF-8
        second = create(url, alice, name="second", entries="鸟\tbird\n鱼\tfish\n")  # 14 more: 26
        third = create(url, alice, name="third", entries="老虎\ttiger\n")  # 11 more: 37
        past = create(url, alice, name="past", entries="马\thorse\n")  # 8 more: 45, past 40
        other_key = create(url, bob, name="bob's", entries="马\thorse\n")  # the cap is per key
        httpx.delete(f"{url}/v2/glossaries/{first.json()['glossary_id']}", headers=deepl(alice), timeout=TIMEOUT)
        after_delete = create(url, alice, name="past", entries="马\thorse\n")
    assert [r.status_code for r in (first, second, third)] == [201, 201, 201]
    assert past.status_code == 403, past.text
    message = past.json()["message"]
    assert "MTSERVE_GLOSSARY_BYTES_PER_KEY" in message and f"API key {alice_key.id} hold 37 bytes" in message
    assert other_key.status_code == 201 and after_delete.status_code == 201


@pytest.mark.parametrize("entries, fmt", [
    ("x" * 200_000 + "\tlong\n", "tsv"),  # over csv's 131,072-character field limit
    ('"' + "x" * 200_000 + '",long\n', "csv"),
    ("[" * 100_000 + "]" * 100_000, "json"),  # nested far past the recursion limit
    ('{"a": ' + "9" * 5000 + "}", "json"),  # an integer of more digits than Python converts
    ('{"a": {"b": {"c": "d"}}}', "json"),  # nested entries
])
def test_hostile_glossary_entries_are_a_400_not_a_500(tmp_path, entries, fmt):
    with serve(FakeEngine(), home=tmp_path, max_body_bytes=2_000_000) as url:
        r = create(url, None, entries=entries, fmt=fmt)
        alive = httpx.get(f"{url}/health/live", timeout=TIMEOUT)
    assert r.status_code == 400, r.text[:300]
    assert r.json()["message"] and len(r.json()["message"]) < 400
    assert alive.status_code == 200


# --- the store: scopes and the schema from before owners ------------------------------------------
OLD_SCHEMA = """
CREATE TABLE glossaries (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL, created TEXT NOT NULL
);
CREATE TABLE entries (
    glossary_id TEXT NOT NULL REFERENCES glossaries(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, term TEXT NOT NULL, translation TEXT NOT NULL,
    PRIMARY KEY (glossary_id, term)
);
INSERT INTO glossaries VALUES ('0123456789abcdef0123456789abcdef', 'legacy', 'zh', 'en', '2024-01-01T00:00:00+00:00');
INSERT INTO entries VALUES ('0123456789abcdef0123456789abcdef', 0, '猫', 'kitty');
"""


def test_a_store_from_before_owners_keeps_working_and_its_glossaries_become_the_operators(tmp_path):
    path = tmp_path / "glossaries.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    keys = KeyStore(tmp_path / "keys.sqlite3")
    alice, _ = keys.add()
    with serve(FakeEngine(), home=tmp_path, api_keys=True) as url:
        listed = httpx.get(f"{url}/v2/glossaries", headers=deepl(alice), timeout=TIMEOUT)
        used = translate(url, alice, "0123456789abcdef0123456789abcdef")
        anonymous = translate(url, None, "0123456789abcdef0123456789abcdef")
        refused = httpx.delete(f"{url}/v2/glossaries/0123456789abcdef0123456789abcdef", headers=deepl(alice),
                               timeout=TIMEOUT)
        made = create(url, alice)
    assert [g["name"] for g in listed.json()["glossaries"]] == ["legacy"]
    assert listed.json()["glossaries"][0]["entry_count"] == 1
    assert used.status_code == 200 and anonymous.status_code == 200
    assert refused.status_code == 403
    assert made.status_code == 201  # the migrated file takes new, owned glossaries
    with sqlite3.connect(path) as db:
        owners = dict(db.execute("SELECT name, owner FROM glossaries").fetchall())
    assert owners["legacy"] is None and owners["pets"]


def test_the_cli_lists_every_owner_and_removes_any_glossary(tmp_path):
    from mtserve.service.glossary import OPERATOR, GlossaryForbidden, GlossaryScope, UnknownGlossary

    store = GlossaryStore(tmp_path / "g.sqlite3")
    alice, bob, anonymous = GlossaryScope("alice"), GlossaryScope("bob"), GlossaryScope()
    owned = store.create("mine", "zh", "en", {"猫": "kitty"}, scope=alice)
    house = store.create("house", "zh", "en", {"鸟": "birdie"})
    assert owned.owner == "alice" and house.owner is None
    assert {g.id for g in store.list(OPERATOR)} == {owned.id, house.id}
    assert {g.id for g in store.list(bob)} == {g.id for g in store.list(anonymous)} == {house.id}
    with pytest.raises(UnknownGlossary):
        store.for_pair(owned.id, "zh", "en", bob)
    with pytest.raises(GlossaryForbidden, match="needs an API key"):
        store.create("x", "zh", "en", {"a": "b"}, scope=anonymous)
    with pytest.raises(GlossaryForbidden):
        store.delete(house.id, alice)
    assert store.delete(owned.id, bob) is False and store.delete(owned.id, OPERATOR) is True


def test_mtserve_glossary_list_names_owners_and_remove_takes_any(tmp_path):
    import os
    import subprocess
    import sys

    from mtserve.service.glossary import GlossaryScope

    store = GlossaryStore(tmp_path / "glossaries.sqlite3")
    owned = store.create("mine", "zh", "en", {"猫": "kitty"}, scope=GlossaryScope("k1"))
    store.create("house", "zh", "en", {"鸟": "birdie"})

    def cli(*args, stdin=None):
        return subprocess.run([sys.executable, "-m", "mtserve.cli", "glossary", *args], check=False, text=True,
                              input=stdin, capture_output=True, timeout=60,
                              env={**os.environ, "MTSERVE_HOME": str(tmp_path)})

    listing = cli("list")
    owners = {line.split()[1]: line.split()[-1] for line in listing.stdout.splitlines()}
    assert owners == {"mine": "key:k1", "house": "operator"}, listing
    assert cli("remove", owned.id).returncode == 0
    assert [g.name for g in store.list()] == ["house"]
    too_big = cli("add", "big", "-", "-s", "zh", "-t", "en", "--glossary-max-entries", "2",
                  stdin="一\tone\n二\ttwo\n三\tthree\n")
    assert too_big.returncode == 2 and "MTSERVE_GLOSSARY_MAX_ENTRIES" in too_big.stderr
    assert "Traceback" not in too_big.stderr
