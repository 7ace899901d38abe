"""The hsk-paragraphs set: consecutive HSK sentences of one level and one split, joined."""

from __future__ import annotations

from mtserve.eval.datasets import PARAGRAPH_SIZES, load_builtin, load_hsk, parse_levels, split_of
from mtserve.text.segment import count_sentences


def test_hsk_paragraphs_join_consecutive_sentences_of_one_level_and_keep_their_split():
    dev = load_builtin("hsk-paragraphs", "zh", "en", "dev", parse_levels("4-6"))
    test = load_builtin("hsk-paragraphs", "zh", "en", "test", parse_levels("4-6"))
    assert dev.name == "hsk-paragraphs" and dev.split == "dev" and len(dev) > 100
    assert dev.pairs == load_builtin("hsk-paragraphs", "zh", "en", "dev", parse_levels("4-6")).pairs  # fixed
    sentences = {p.id: p for p in load_hsk("zh", "en", "all", {4, 5, 6}).pairs}
    for evalset, split in ((dev, "dev"), (test, "test")):
        for pair in evalset.pairs:
            ids = pair.id.split("+")
            assert len(ids) in PARAGRAPH_SIZES and pair.group == f"{sentences[ids[0]].group}x{len(ids)}"
            assert {split_of(i) for i in ids} == {split}  # a paragraph is in the split of its sentences
            assert {sentences[i].group for i in ids} == {sentences[ids[0]].group}
            assert pair.source == "".join(sentences[i].source for i in ids)
            assert pair.reference == " ".join(sentences[i].reference for i in ids)
            assert count_sentences(pair.source, "zh") == len(ids)
    assert {p.id for p in dev.pairs}.isdisjoint(p.id for p in test.pairs)
    english = load_builtin("hsk-paragraphs", "en", "zh", "dev", {5})
    assert english.pairs and " " in english.pairs[0].source and " " not in english.pairs[0].reference
