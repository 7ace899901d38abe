import pytest

from mtserve.bench.workloads import (
    HSK_ATTRIBUTION,
    WorkItem,
    Workload,
    build_workload,
    file_texts,
    long_document,
    paragraphs,
)


def test_builtin_workloads_are_disjoint_so_no_cache_answers():
    short = {i.text for i in build_workload("short").items}
    para = build_workload("paragraph").items
    long = build_workload("long", long_sentences=10).items
    assert len(short) > 100
    assert not any(s in p.text for p in para[:20] for s in list(short)[:200])
    assert long and all(item.kind == "long" and item.text.count("\n\n") >= 1 for item in long)


def test_hsk_sentences_are_attributed():
    pytest.importorskip("hsk_sentences_audio")
    workload = build_workload("short")
    assert workload.origin == HSK_ATTRIBUTION and "CC-BY-SA-4.0" in workload.origin


def test_paragraphs_and_documents():
    sentences = [f"第{i}句。" for i in range(10)]
    assert paragraphs(sentences, 4) == ["第0句。第1句。第2句。第3句。", "第4句。第5句。第6句。第7句。"]
    assert long_document(sentences, 6, per_paragraph=3) == "第0句。第1句。第2句。\n\n第3句。第4句。第5句。"


def test_file_modes(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("one.\ntwo.\n\nthree.\n", encoding="utf-8")
    assert file_texts(path, "lines") == ["one.", "two.", "three."]
    assert file_texts(path, "paragraphs") == ["one.\ntwo.", "three."]
    assert file_texts(path, "whole") == ["one.\ntwo.\n\nthree."]
    workload = build_workload("file", "en", "zh", file=path)
    assert [i.kind for i in workload.items] == ["file"] * 3 and workload.items[0].source == "en"
    with pytest.raises(ValueError):
        build_workload("file")


def test_workload_hands_out_in_order_and_counts_wraps():
    w = Workload("w", [WorkItem(str(i), "zh", "en", "short") for i in range(3)])
    assert [w.next().text for _ in range(7)] == ["0", "1", "2", "0", "1", "2", "0"]
    assert w.wrapped == 2 and w.used == 7
