"""Named glossaries on /translate (``glossary_id``): lookup, precedence, pair rules, errors; and end to end.

The unit tests run a real uvicorn with the test double engine and read what
reached the engine; the last test uses the real small model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from mtserve.service.glossary import GlossaryMismatch, UnknownGlossary
from mtserve.service.glossary_store import GlossaryStore
from tests.fakes import FakeEngine
from tests.servers import serve

TIMEOUT = 30


def store_in(home) -> GlossaryStore:
    return GlossaryStore(home / "glossaries.sqlite3")


def terms_of(engine: FakeEngine, text: str) -> dict[str, str]:
    [call] = [c for c in engine.calls if c.text == text]
    return dict(call.glossary)


def sse_done(body: str) -> dict:
    events = body.replace("\r\n", "\n").split("\n\n")
    [done] = [e for e in events if e.startswith("event: done")]
    return json.loads(done.split("data: ", 1)[1])


# --- the store's pair rule ---------------------------------------------------------------------
def test_for_pair_serves_only_its_own_pair_and_needs_an_explicit_source(tmp_path):
    store = store_in(tmp_path)
    pets = store.create("pets", "zh", "en", {"猫": "kitty"})
    assert store.for_pair(pets.id, "zh", "en") == {"猫": "kitty"}
    with pytest.raises(GlossaryMismatch, match=r"is for zh->en, but the request is ja->en"):
        store.for_pair(pets.id, "ja", "en")
    with pytest.raises(GlossaryMismatch, match=r"is for zh->en, but the request is zh->de"):
        store.for_pair(pets.id, "zh", "de")
    with pytest.raises(GlossaryMismatch, match=r"explicit source.*send source 'zh' instead of 'auto'"):
        store.for_pair(pets.id, "auto", "en")
    with pytest.raises(UnknownGlossary, match="no glossary with id 'nope'"):
        store.for_pair("nope", "zh", "en")


# --- /translate with glossary_id ---------------------------------------------------------------
def test_glossary_id_terms_reach_the_engine_between_the_server_file_and_the_request(tmp_path):
    server_file = tmp_path / "server.tsv"
    server_file.write_text("猫\tfile-cat\n狗\tfile-dog\n鸟\tfile-bird\n", encoding="utf-8")
    pets = store_in(tmp_path).create("pets", "zh", "en",
                                     {"狗": "named-dog", "鸟": "named-bird", "鱼": "named-fish"})
    engine = FakeEngine()
    with serve(engine, home=tmp_path, glossary_file=server_file) as url:
        layered = httpx.post(f"{url}/translate", timeout=TIMEOUT, json={
            "q": "猫和狗和鸟。", "source": "zh", "target": "en", "glossary_id": pets.id,
            "glossary": {"鸟": "request-bird"}})
        form = httpx.post(f"{url}/translate", timeout=TIMEOUT, data={
            "q": "狗在这里。", "source": "zh", "target": "en", "glossary_id": pets.id})
        listed = httpx.post(f"{url}/translate", timeout=TIMEOUT, json={
            "q": ["鱼很好。", "没有术语。"], "source": "zh", "target": "en", "glossary_id": pets.id})
        stream = httpx.post(f"{url}/translate/stream", timeout=TIMEOUT, json={
            "q": "鸟飞了。", "source": "zh", "target": "en", "glossary_id": pets.id})
        stream_get = httpx.get(f"{url}/translate/stream", timeout=TIMEOUT, params={
            "q": "狗跑了。", "source": "zh", "target": "en", "glossary_id": pets.id})
        empty_form_id = httpx.post(f"{url}/translate", timeout=TIMEOUT, data={
            "q": "狗睡了。", "source": "zh", "target": "en", "glossary_id": ""})
    for r in (layered, form, listed, stream, stream_get, empty_form_id):
        assert r.status_code == 200, r.text
    # file < named < request: 猫 only in the file, 狗 named over the file, 鸟 the request's over both
    assert terms_of(engine, "猫和狗和鸟。") == {"猫": "file-cat", "狗": "named-dog", "鸟": "request-bird"}
    assert terms_of(engine, "狗在这里。") == {"狗": "named-dog"}
    assert terms_of(engine, "鱼很好。") == {"鱼": "named-fish"}
    assert terms_of(engine, "没有术语。") == {}  # only the terms a segment contains reach the engine
    assert terms_of(engine, "鸟飞了。") == {"鸟": "named-bird"}
    assert terms_of(engine, "狗跑了。") == {"狗": "named-dog"}
    assert terms_of(engine, "狗睡了。") == {"狗": "file-dog"}  # an empty form field names no glossary
    assert sse_done(stream.text)["translatedText"] == "<en>鸟飞了。"


def test_a_glossary_id_that_does_not_fit_is_a_400_and_an_unknown_one_a_404(tmp_path):
    pets = store_in(tmp_path).create("pets", "zh", "en", {"猫": "kitty"})
    engine = FakeEngine()
    with serve(engine, home=tmp_path) as url:
        def post(path="/translate", **fields):
            return httpx.post(f"{url}{path}", timeout=TIMEOUT,
                              json={"q": "猫。", "source": "zh", "target": "en", **fields})

        other_pair = post(source="ja", glossary_id=pets.id)
        other_target = post(target="de", glossary_id=pets.id)
        auto = post(source="auto", glossary_id=pets.id)
        unknown = post(glossary_id="no-such-glossary")
        unknown_stream = post("/translate/stream", glossary_id="no-such-glossary")
        auto_stream_get = httpx.get(f"{url}/translate/stream", timeout=TIMEOUT,
                                    params={"q": "猫。", "target": "en", "glossary_id": pets.id})
        not_a_string = post(glossary_id=["a", "b"])
        unknown_file = httpx.post(f"{url}/translate_file", timeout=TIMEOUT,
                                  data={"source": "zh", "target": "en", "glossary_id": "no-such-glossary"},
                                  files={"file": ("notes.txt", "猫。\n".encode())})
    assert other_pair.status_code == 400
    assert "is for zh->en, but the request is ja->en" in other_pair.json()["error"]
    assert other_target.status_code == 400 and "zh->de" in other_target.json()["error"]
    assert auto.status_code == 400 and "instead of 'auto'" in auto.json()["error"]
    assert auto_stream_get.status_code == 400 and "instead of 'auto'" in auto_stream_get.json()["error"]
    for r in (unknown, unknown_stream, unknown_file):
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/json"), r.text
        assert "no glossary with id 'no-such-glossary'" in r.json()["error"]
        assert "mtserve glossary list" in r.json()["error"]
    assert not_a_string.status_code == 400 and "glossary_id" in not_a_string.json()["error"]
    assert engine.calls == []  # nothing reached the engine


def test_translate_file_takes_a_glossary_id_for_every_segment(tmp_path):
    terms = store_in(tmp_path).create("companies", "zh", "en", {"国际商业机器公司": "IBM"})
    engine = FakeEngine()
    document = "国际商业机器公司发布了新产品。\n没有术语的一行。\n".encode()
    with serve(engine, home=tmp_path) as url:
        r = httpx.post(f"{url}/translate_file", timeout=TIMEOUT,
                       data={"source": "zh", "target": "en", "glossary_id": terms.id},
                       files={"file": ("terms.txt", document)})
    assert r.status_code == 200, r.text
    assert terms_of(engine, "国际商业机器公司发布了新产品。") == {"国际商业机器公司": "IBM"}
    assert terms_of(engine, "没有术语的一行。") == {}


def test_deepl_translate_uses_the_same_pair_rule_in_its_own_error_shape(tmp_path):
    pets = store_in(tmp_path).create("pets", "zh", "en", {"猫": "kitty"})
    engine = FakeEngine()
    with serve(engine, home=tmp_path) as url:
        def post(**fields):
            return httpx.post(f"{url}/v2/translate", timeout=TIMEOUT,
                              data={"text": "猫。", "target_lang": "EN-US", **fields})

        ok = post(source_lang="ZH", glossary_id=pets.id)
        mismatch = post(source_lang="JA", glossary_id=pets.id)
        no_source = post(glossary_id=pets.id)
        unknown = post(source_lang="ZH", glossary_id="no-such-glossary")
    assert ok.status_code == 200, ok.text
    assert terms_of(engine, "猫。") == {"猫": "kitty"}
    assert mismatch.status_code == 400 and "is for zh->en" in mismatch.json()["message"]
    assert no_source.status_code == 400 and "source_lang" in no_source.json()["message"]
    assert unknown.status_code == 400 and "no glossary" in unknown.json()["message"]


# --- end to end with the real small model -------------------------------------------------------
@pytest.mark.model
def test_a_glossary_made_with_the_cli_steers_a_made_up_name_on_the_real_model(live_server, live_home,
                                                                              tmp_path):
    """`mtserve glossary add` writes the store the running server reads; /translate glossary_id uses it."""
    entries = tmp_path / "names.tsv"
    entries.write_text("泽尔瓦克斯\tZelvaxor\n", encoding="utf-8")

    def cli(*args: str) -> subprocess.CompletedProcess:  # the server's own environment, so its home
        return subprocess.run([sys.executable, "-m", "mtserve.cli", "glossary", *args], text=True,
                              capture_output=True, timeout=60,
                              env={**os.environ, "MTSERVE_HOME": str(live_home)})

    added = cli("add", "e2e-made-up-names", "--source", "zh", "--target", "en", str(entries))
    assert added.returncode == 0, added.stderr
    glossary_id = added.stdout.split()[0]
    try:
        text = "泽尔瓦克斯公司在上海开了一家新店。"
        r = httpx.post(f"{live_server}/translate", timeout=180,
                       json={"q": text, "source": "zh", "target": "en", "glossary_id": glossary_id})
        assert r.status_code == 200, r.text
        out = r.json()["translatedText"]
        assert "zelvaxor" in out.lower(), out
        assert "泽尔瓦克斯" not in out, out
    finally:
        cli("remove", glossary_id)  # the server's home is shared with later tests; leave nothing behind
