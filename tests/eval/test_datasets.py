"""Eval data: the fixed dev/test split, the HSK and everyday sets, TSV and JSONL files."""

from __future__ import annotations

import json

import pytest

from mtserve.eval.datasets import (
    DatasetError,
    EvalPair,
    load_builtin,
    load_everyday,
    load_file,
    load_hsk,
    parse_levels,
    read_pairs,
    sample,
    select,
    split_of,
)

# Golden values: changing the salt or the rule would silently move sentences across splits,
# and a score "on test" would no longer mean the same sentences.
GOLDEN = {"hsk3-0005": "dev", "hsk4-0551": "test", "hsk6-0566": "test"}


def test_the_split_is_fixed_by_id_forever():
    assert {i: split_of(i) for i in GOLDEN} == GOLDEN
    assert {split_of(f"hsk5-{i:04d}") for i in range(1, 50)} == {"dev", "test"}


def test_hsk_dev_and_test_are_disjoint_halves_without_placeholders():
    dev, test = load_hsk(split="dev"), load_hsk(split="test")
    ids_dev, ids_test = {p.id for p in dev.pairs}, {p.id for p in test.pairs}
    assert not ids_dev & ids_test
    assert len(ids_dev | ids_test) == len(load_hsk(split="all")) == 4354 - 82
    assert 0.45 < len(dev) / (len(dev) + len(test)) < 0.55
    assert not any(p.reference.lower().startswith("placeholder") for p in dev.pairs + test.pairs)
    assert "CC-BY-SA-4.0" in dev.attribution


def test_hsk_levels_directions_and_traditional():
    levels = parse_levels("4-6")
    assert levels == {4, 5, 6} and parse_levels("1,3") == {1, 3} and parse_levels(None) is None
    zh_en = load_hsk("zh", "en", "dev", levels)
    assert {p.group for p in zh_en.pairs} == {"hsk4", "hsk5", "hsk6"}
    en_zh = load_hsk("en", "zh", "dev", levels)
    swapped = [(p.reference, p.source) for p in zh_en.pairs[:3]]
    assert [(p.source, p.reference) for p in en_zh.pairs[:3]] == swapped
    zt_en = load_hsk("zt", "en", "dev", levels)
    assert zt_en.pairs[0].id == zh_en.pairs[0].id and zt_en.pairs[0].source != zh_en.pairs[0].source
    with pytest.raises(DatasetError, match="no ja->en direction"):
        load_hsk("ja", "en")
    with pytest.raises(DatasetError, match="levels must look like"):
        parse_levels("four")


def test_sampling_is_deterministic_and_keeps_order():
    pairs = load_hsk(split="dev", levels={4, 5, 6}).pairs
    a, b = sample(pairs, 20, seed=0), sample(pairs, 20, seed=0)
    assert a == b and len(a) == 20 and sample(pairs, 20, seed=1) != a
    order = {p.id: i for i, p in enumerate(pairs)}
    assert [order[p.id] for p in a] == sorted(order[p.id] for p in a)
    assert sample(pairs, None) == pairs


def test_everyday_set_pairs_english_with_japanese_and_german():
    ja = load_everyday("ja", "en")
    de = load_builtin("everyday", "en", "de")
    assert len(ja) == len(de) == 60
    assert ja.pairs[0].reference == de.pairs[0].source == "I get up at seven every morning."
    assert {p.group for p in ja.pairs} == {"daily", "travel", "work", "people"}
    with pytest.raises(DatasetError, match="pairs English with ja or de"):
        load_everyday("zh", "en")


def test_tsv_with_header_and_groups(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("source\treference\tgroup\n你好。\tHello.\tgreet\n谢谢。\tThanks.\n", encoding="utf-8")
    assert read_pairs(path) == [EvalPair("1", "你好。", "Hello.", "greet"),
                                EvalPair("2", "谢谢。", "Thanks.", "")]
    evalset = load_file(path, "zh", "en")
    assert evalset.name == "pairs.tsv" and len(evalset) == 2 and evalset.split == "all"


def test_jsonl_with_ids_and_aliases(tmp_path):
    path = tmp_path / "pairs.jsonl"
    lines = [{"id": "a", "source": "你好。", "reference": "Hello.", "group": "g"},
             {"src": "谢谢。", "ref": "Thanks."}]
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n\n", encoding="utf-8")
    assert read_pairs(path) == [EvalPair("a", "你好。", "Hello.", "g"),
                                EvalPair("2", "谢谢。", "Thanks.", "")]


@pytest.mark.parametrize("name, content, message", [
    ("one.tsv", "only a source\n", "row 1 has 1 column"),
    ("bad.jsonl", '{"source": "x"}\n', "needs string fields"),
    ("broken.jsonl", "{nope\n", "not a JSON object"),
    ("empty.tsv", "\n\n", "holds no pairs"),
])
def test_bad_files_say_what_is_wrong(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError, match=message):
        read_pairs(path)


def test_a_missing_file_and_an_unknown_set():
    with pytest.raises(DatasetError, match="no such file"):
        read_pairs("/nonexistent/x.tsv")
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_builtin("flores", "zh", "en")
    with pytest.raises(DatasetError, match="unknown split"):
        select([], "train")


def test_the_software_set_is_split_by_project_and_grouped_by_it():
    dev, test, both = (load_builtin("software", "zh", "en", split) for split in ("dev", "test", "all"))
    assert len(both) == len(dev) + len(test) and dev.split == "dev" and test.split == "test"
    dev_projects, test_projects = {p.group for p in dev.pairs}, {p.group for p in test.pairs}
    assert len(dev_projects) >= 5 and len(test_projects) >= 5 and not dev_projects & test_projects
    pair = next(p for p in dev.pairs if p.group == "django-allauth")
    assert pair.id.startswith("django-allauth-") and any("\u4e00" <= ch <= "\u9fff" for ch in pair.source)
    assert pair.reference.isascii() and "SOFTWARE_SOURCES.md" in dev.attribution
    assert "split by project" in dev.notes[0]
    with pytest.raises(DatasetError, match="software set is zh->en"):
        load_builtin("software", "en", "zh")
    with pytest.raises(DatasetError, match="--levels applies to the hsk set only"):
        load_builtin("software", "zh", "en", "dev", {4})


def test_the_instructions_set_is_built_in_both_ways():
    zh_en, en_zh = load_builtin("instructions", "zh", "en", "all"), load_builtin("instructions", "en", "zh", "all")
    assert len(zh_en) == len(en_zh) == 40
    assert {p.group for p in zh_en.pairs} == {"question", "command", "request", "injection"}
    assert zh_en.pairs[0].source == en_zh.pairs[0].reference
    assert len(load_builtin("instructions", "zh", "en", "dev")) + len(load_builtin("instructions", "zh", "en",
                                                                                     "test")) == 40
    with pytest.raises(DatasetError, match="instructions set is zh<->en"):
        load_builtin("instructions", "ja", "en")


def test_the_prose_set_is_built_in_and_each_pattern_needs_the_dependent_sentence():
    import re

    evalset = load_builtin("prose", "zh", "en", "all")
    assert len(evalset) >= 40 and {p.group for p in evalset.pairs} == {"subject", "object", "tense", "number"}
    for pair in evalset.pairs:
        assert len(re.findall("[。！？]", pair.source)) >= 2, pair.id  # connected sentences, not one
        earlier = " ".join(re.split(r"(?<=[.!?])\s+", pair.reference)[:-1])
        assert re.search(pair.expect, pair.reference, re.IGNORECASE), pair.id
        assert not re.search(pair.expect, earlier, re.IGNORECASE), pair.id  # only the later sentence carries it
    dev, test = (load_builtin("prose", "zh", "en", split) for split in ("dev", "test"))
    assert len(dev) + len(test) == len(evalset) and len(dev) >= 15 and len(test) >= 15
    with pytest.raises(DatasetError, match="prose set is zh->en"):
        load_builtin("prose", "en", "zh")
