"""DeepL's v3 multilingual glossaries through the official client's ``DeepLClient``, on a server around a
prompted test double: create, read, edit, delete, use in /v2/translate and /v2/document; v2 on the same data;
per-key ownership."""

from __future__ import annotations

import deepl
import httpx
import pytest
from deepl import util
from deepl.api_data import MultilingualGlossaryDictionaryEntries as Entries

from mtserve.service.access import KeyStore
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve

FRUIT = [Entries("EN", "DE", {"Apple": "Apfel", "Banana": "Banane"}), Entries("DE", "EN", {"Apfel": "Apple"})]


@pytest.fixture(scope="module")
def engine():
    return ScriptedEngine(languages=("en", "de", "fr", "zh"))


@pytest.fixture(scope="module")
def server(engine, tmp_path_factory):
    with serve(engine, home=tmp_path_factory.mktemp("home")) as url:
        yield url


@pytest.fixture(scope="module")
def client(server):
    return deepl.DeepLClient("any-key", server_url=server)


def test_create_get_list_and_entries_in_deepl_s_shapes(client, server):
    made = client.create_multilingual_glossary("fruit", FRUIT)
    assert made.name == "fruit"
    assert [(d.source_lang, d.target_lang, d.entry_count) for d in made.dictionaries] == [("EN", "DE", 2),
                                                                                          ("DE", "EN", 1)]
    got = client.get_multilingual_glossary(made.glossary_id)
    assert (got.name, got.creation_time) == (made.name, made.creation_time)
    assert made.glossary_id in {g.glossary_id for g in client.list_multilingual_glossaries()}
    [entries] = client.get_multilingual_glossary_entries(made, "EN", "DE").dictionaries
    assert entries.entries == util.convert_dict_to_tsv({"Apple": "Apfel", "Banana": "Banane"})
    raw = httpx.get(f"{server}/v3/glossaries/{made.glossary_id}").json()
    assert raw["dictionaries"][0] == {"source_lang": "en", "target_lang": "de", "entry_count": 2}
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_multilingual_glossary("96ab91fd-e715-41a1-adeb-5d701f84a483")
    with pytest.raises(deepl.GlossaryNotFoundException):  # the glossary is there; the pair is not
        client.get_multilingual_glossary_entries(made, "EN", "FR")
    with pytest.raises(deepl.DeepLException, match="target_lang"):
        client.create_multilingual_glossary("bad", [Entries("EN", "XX", {"a": "b"})])


def test_edit_merge_replace_and_delete_dictionaries(client):
    made = client.create_multilingual_glossary("edit me", FRUIT)
    renamed = client.update_multilingual_glossary_name(made, "edited")
    assert renamed.name == "edited" and client.get_multilingual_glossary(made.glossary_id).name == "edited"
    merged = client.update_multilingual_glossary_dictionary(made, Entries("EN", "DE", {"Apple": "Apfel!",
                                                                                     "Cherry": "Kirsche"}))
    assert {d.source_lang + d.target_lang: d.entry_count for d in merged.dictionaries} == {"ENDE": 3, "DEEN": 1}
    replaced = client.replace_multilingual_glossary_dictionary(made, Entries("EN", "DE", {"Plum": "Pflaume"}))
    assert (replaced.source_lang, replaced.target_lang, replaced.entry_count) == ("EN", "DE", 1)
    added = client.update_multilingual_glossary_dictionary(made, Entries("EN", "FR", {"Plum": "Prune"}))
    assert len(added.dictionaries) == 3
    client.delete_multilingual_glossary_dictionary(made, source_lang="EN", target_lang="FR")
    client.delete_multilingual_glossary_dictionary(made, source_lang="DE", target_lang="EN")
    [left] = client.get_multilingual_glossary(made.glossary_id).dictionaries
    assert (left.source_lang, left.target_lang, left.entry_count) == ("EN", "DE", 1)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.delete_multilingual_glossary_dictionary(made, source_lang="DE", target_lang="EN")
    client.delete_multilingual_glossary(made)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_multilingual_glossary(made.glossary_id)


def test_translation_uses_the_dictionary_of_the_request_s_pair(client, engine, tmp_path):
    made = client.create_multilingual_glossary("both ways", FRUIT)
    client.translate_text(["Apple and Banana."], source_lang="EN", target_lang="DE", glossary=made)
    assert dict(engine.calls[-1].glossary) == {"Apple": "Apfel", "Banana": "Banane"}
    client.translate_text("Apfel.", source_lang="DE", target_lang="EN-US", glossary=made.glossary_id)
    assert dict(engine.calls[-1].glossary) == {"Apfel": "Apple"}
    with pytest.raises(deepl.DeepLException, match="en->de, de->en"):  # no en->fr dictionary: a 400
        client.translate_text("Apple.", source_lang="EN", target_lang="FR", glossary=made.glossary_id)
    document, out = tmp_path / "fruit.txt", tmp_path / "out.txt"
    document.write_text("Banana\n")
    client.translate_document_from_filepath(document, out, source_lang="EN", target_lang="DE", glossary=made)
    assert dict(engine.calls[-1].glossary) == {"Banana": "Banane"}


def test_v2_reads_a_v3_glossary_by_its_first_dictionary_and_v3_reads_a_v2_glossary(client, server):
    made = client.create_multilingual_glossary("v3", FRUIT)
    v2 = client.get_glossary(made.glossary_id)
    assert (v2.source_lang, v2.target_lang, v2.entry_count) == ("EN", "DE", 2)
    assert client.get_glossary_entries(made.glossary_id) == {"Apple": "Apfel", "Banana": "Banane"}
    old = client.create_glossary("v2", "EN", "DE", {"Hello": "Hallo"})
    [dictionary] = client.get_multilingual_glossary(old.glossary_id).dictionaries
    assert (dictionary.source_lang, dictionary.target_lang, dictionary.entry_count) == ("EN", "DE", 1)
    client.update_multilingual_glossary_dictionary(old.glossary_id, Entries("EN", "DE", {"Bye": "Tschüss"}))
    assert client.get_glossary_entries(old) == {"Hello": "Hallo", "Bye": "Tschüss"}


def test_another_key_s_glossary_is_not_there_and_the_operator_s_is_not_changed(tmp_path):
    keys = KeyStore(tmp_path / "keys.sqlite3")
    alice, _ = keys.add(name="alice")
    bob, _ = keys.add(name="bob")
    with serve(ScriptedEngine(languages=("en", "de")), home=tmp_path, api_keys=True, anonymous_rpm=0) as url:
        mine = deepl.DeepLClient(alice, server_url=url).create_multilingual_glossary("mine", FRUIT)
        theirs = deepl.DeepLClient(bob, server_url=url)
        assert mine.glossary_id not in {g.glossary_id for g in theirs.list_multilingual_glossaries()}
        for call in (lambda: theirs.get_multilingual_glossary(mine.glossary_id),
                     lambda: theirs.update_multilingual_glossary_name(mine.glossary_id, "stolen"),
                     lambda: theirs.replace_multilingual_glossary_dictionary(mine.glossary_id, FRUIT[0]),
                     lambda: theirs.delete_multilingual_glossary_dictionary(mine.glossary_id, source_lang="DE",
                                                                            target_lang="EN"),
                     lambda: theirs.delete_multilingual_glossary(mine.glossary_id)):
            with pytest.raises(deepl.GlossaryNotFoundException):
                call()
        anonymous = httpx.patch(f"{url}/v3/glossaries/{mine.glossary_id}", json={"name": "x"})
        assert anonymous.status_code == 404 and set(anonymous.json()) == {"message"}
