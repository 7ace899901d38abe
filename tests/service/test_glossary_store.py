"""The glossary store's dictionaries: one glossary, several language pairs; edits; files from before them."""

from __future__ import annotations

import sqlite3

import pytest

from mtserve.service.glossary import GlossaryError, GlossaryForbidden, GlossaryMismatch, GlossaryQuota, GlossaryScope
from mtserve.service.glossary_store import Caps, Dictionary, GlossaryStore, UnknownDictionary

BOTH_WAYS = [Dictionary("en", "de", {"Apple": "Apfel", "Banana": "Banane"}),
             Dictionary("de", "en", {"Apfel": "Apple"})]


def test_a_glossary_holds_a_dictionary_per_pair_and_a_request_gets_its_own_pairs(tmp_path):
    store = GlossaryStore(tmp_path / "g.sqlite3")
    made = store.create_multilingual("fruit", BOTH_WAYS)
    assert [(d.pair, d.entry_count) for d in made.dictionaries] == [("en->de", 2), ("de->en", 1)]
    assert store.for_pair(made.id, "en", "de") == {"Apple": "Apfel", "Banana": "Banane"}
    assert store.for_pair(made.id, "de", "en") == {"Apfel": "Apple"}
    with pytest.raises(GlossaryMismatch, match=r"is for en->de, de->en, but the request is en->fr"):
        store.for_pair(made.id, "en", "fr")
    with pytest.raises(GlossaryMismatch, match=r"send source 'en' instead of 'auto'"):
        store.for_pair(made.id, "auto", "de")
    assert [g.pairs for g in store.list()] == ["en->de, de->en"]
    with pytest.raises(GlossaryError, match="two dictionaries for en->de"):
        store.create_multilingual("twice", [BOTH_WAYS[0], BOTH_WAYS[0]])


def test_merge_replace_and_delete_dictionaries_and_the_cache_sees_each_change(tmp_path):
    store = GlossaryStore(tmp_path / "g.sqlite3")
    made = store.create_multilingual("fruit", BOTH_WAYS)
    assert store.for_pair(made.id, "en", "de")["Apple"] == "Apfel"  # read once: now in memory
    merged = store.edit(made.id, name="Obst", merge=Dictionary("en", "de", {"Apple": "Apfel!", "Cherry": "Kirsche"}))
    assert merged.name == "Obst" and merged.dictionary("en", "de").entry_count == 3
    assert store.for_pair(made.id, "en", "de") == {"Apple": "Apfel!", "Banana": "Banane", "Cherry": "Kirsche"}
    other = GlossaryStore(tmp_path / "g.sqlite3")  # another process's store: its change is seen too
    other.edit(made.id, replace=Dictionary("en", "de", {"Plum": "Pflaume"}))
    assert store.for_pair(made.id, "en", "de") == {"Plum": "Pflaume"}
    added = store.edit(made.id, replace=Dictionary("en", "fr", {"Plum": "Prune"}))
    assert [d.pair for d in added.dictionaries] == ["en->de", "de->en", "en->fr"]
    store.delete_dictionary(made.id, "de", "en")
    with pytest.raises(UnknownDictionary, match="no de->en dictionary"):
        store.dictionary_entries(made.id, "de", "en")
    store.delete_dictionary(made.id, "en", "fr")
    with pytest.raises(GlossaryError, match="last; delete the glossary instead"):
        store.delete_dictionary(made.id, "en", "de")
    assert store.get(made.id).entries == {"Plum": "Pflaume"}


def test_a_key_changes_only_its_own_glossaries_within_its_caps(tmp_path):
    store = GlossaryStore(tmp_path / "g.sqlite3")
    alice, bob = GlossaryScope("alice"), GlossaryScope("bob")
    mine = store.create_multilingual("mine", BOTH_WAYS, scope=alice)
    house = store.create("house", "en", "de", {"Bird": "Vogel"})
    with pytest.raises(GlossaryError, match="no glossary with id"):
        store.edit(mine.id, name="theirs", scope=bob)
    with pytest.raises(GlossaryForbidden, match="operator"):
        store.edit(house.id, name="mine now", scope=alice)
    with pytest.raises(GlossaryForbidden, match="operator"):
        store.delete_dictionary(house.id, "en", "de", scope=alice)
    with pytest.raises(GlossaryError, match="MTSERVE_GLOSSARY_MAX_ENTRIES"):
        store.edit(mine.id, merge=Dictionary("en", "de", {"Cherry": "Kirsche"}), scope=alice, caps=Caps(entries=3))
    with pytest.raises(GlossaryQuota, match="MTSERVE_GLOSSARY_BYTES_PER_KEY"):
        store.edit(mine.id, merge=Dictionary("en", "de", {"Cherry": "Kirsche"}), scope=alice, caps=Caps(bytes=40))
    assert store.info(mine.id).dictionary("en", "de").entry_count == 2  # neither refused edit stored anything
    # a change that shrinks what a key holds is taken even while it holds more than its cap
    smaller = store.edit(mine.id, replace=Dictionary("en", "de", {"A": "B"}), scope=alice, caps=Caps(bytes=10))
    assert smaller.dictionary("en", "de").entry_count == 1


def test_a_file_from_before_dictionaries_keeps_its_glossaries_and_entries(tmp_path):
    path = tmp_path / "glossaries.sqlite3"
    with sqlite3.connect(path) as db:  # the schema as it was: one pair per glossary, entries by glossary
        db.executescript("""
            CREATE TABLE glossaries (id TEXT PRIMARY KEY, name TEXT NOT NULL, source_lang TEXT NOT NULL,
                target_lang TEXT NOT NULL, created TEXT NOT NULL, owner TEXT);
            CREATE TABLE entries (glossary_id TEXT NOT NULL REFERENCES glossaries(id) ON DELETE CASCADE,
                position INTEGER NOT NULL, term TEXT NOT NULL, translation TEXT NOT NULL,
                PRIMARY KEY (glossary_id, term));
            INSERT INTO glossaries VALUES ('old', 'pets', 'zh', 'en', '2024-01-02T03:04:05+00:00', 'k1');
            INSERT INTO entries VALUES ('old', 0, '猫', 'kitty'), ('old', 1, '狗', 'doggy');
        """)
    store = GlossaryStore(path)
    [old] = store.list(GlossaryScope("k1"))
    assert (old.name, old.pairs, old.entry_count, old.owner) == ("pets", "zh->en", 2, "k1")
    assert store.for_pair("old", "zh", "en", GlossaryScope("k1")) == {"猫": "kitty", "狗": "doggy"}
    with sqlite3.connect(path) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "entries" not in tables
    assert GlossaryStore(path).get("old").entries == {"猫": "kitty", "狗": "doggy"}  # a second opening changes nothing
