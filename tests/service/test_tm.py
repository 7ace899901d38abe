"""The translation memory: its store, lookups, ownership, and the files it reads and writes."""

from __future__ import annotations

import contextlib
import sqlite3
import threading

import pytest

from mtserve.service.tm import ALL_OWNERS, TMCancelled, TMError, TranslationMemory, language_code
from mtserve.service.tm_files import PastCap, ReadCaps, format_of, read_tm, write_tmx
from mtserve.text.punctuation import match_key

UI = [("打开文件", "Open file"), ("保存文件", "Save file"), ("打开文件夹", "Open folder"),
      ("是否显示隐藏文件", "Whether to show hidden files"),
      ("请在搜索框中输入关键字。", "Enter a keyword in the search box."),
      ("今天天气很好", "The weather is nice today")]


@pytest.fixture
def tm(tmp_path):
    store = TranslationMemory(tmp_path / "tm.sqlite3")
    yield store
    store.close()


# --- the store ---------------------------------------------------------------------------
def test_pairs_round_trip_with_their_pair_origin_and_time(tm):
    report = tm.add(UI, "zh", "en", origin="ui.po")
    assert (report.added, report.duplicates, report.skipped) == (len(UI), 0, {})
    entries = list(tm.entries())
    assert [(e.source, e.target) for e in entries] == UI
    assert {(e.source_lang, e.target_lang, e.origin, e.owner, e.suggestion) for e in entries} == \
        {("zh", "en", "ui.po", None, False)}
    assert entries[0].created.endswith("+00:00")
    assert tm.get(entries[0].id) == entries[0]


def test_duplicates_empty_and_over_long_pairs_are_counted_not_stored(tm):
    tm.add(UI[:2], "zh", "en")
    report = tm.add([UI[0], ("  ", "x"), ("长" * 6000, "long")], "zh", "en")
    assert (report.added, report.duplicates) == (0, 1)
    assert report.skipped == {"empty source or target": 1, "longer than 5000 characters": 1}
    assert len(tm) == 2


def test_a_large_import_is_stored_in_chunks_and_counts_duplicates_across_them(tm, monkeypatch):
    monkeypatch.setattr("mtserve.service.tm.ADD_CHUNK", 3)
    pairs = [(f"第{i}句", f"sentence {i}") for i in range(10)]
    report = tm.add(pairs + pairs[:4], "zh", "en")
    assert (report.added, report.duplicates) == (10, 4) and len(tm) == 10


def test_the_store_is_kept_on_disk(tmp_path):
    first = TranslationMemory(tmp_path / "tm.sqlite3")
    first.add(UI, "zh", "en")
    first.close()
    again = TranslationMemory(tmp_path / "tm.sqlite3")
    assert again.exact("打开文件", "zh", "en").target == "Open file"
    assert again.similar("打开这个文件", "zh", "en", k=1)[0].entry.source == "打开文件"
    again.close()


def test_a_second_store_on_the_same_file_sees_writes_at_once(tmp_path):
    """What `mtserve tm import` writes, a running server's store finds without a restart."""
    server, cli = TranslationMemory(tmp_path / "tm.sqlite3"), TranslationMemory(tmp_path / "tm.sqlite3")
    assert server.exact("打开文件", "zh", "en") is None
    cli.add(UI, "zh", "en", origin="cli")
    assert server.exact("打开文件", "zh", "en").target == "Open file"
    assert server.similar("打开这个文件", "zh", "en", k=1)[0].entry.source == "打开文件"
    assert cli.remove(origin="cli") == len(UI) and server.similar("打开这个文件", "zh", "en") == []
    server.close()
    cli.close()


def test_an_old_sqlite_is_refused_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setattr("sqlite3.sqlite_version_info", (3, 22, 0))
    monkeypatch.setattr("sqlite3.sqlite_version", "3.22.0")
    with pytest.raises(TMError, match=r"needs SQLite 3\.24\.0 or later.*has 3\.22\.0"):
        TranslationMemory(tmp_path / "tm.sqlite3").stats()
    assert not (tmp_path / "tm.sqlite3").exists()


def test_language_tags_become_mtserve_codes():
    assert [language_code(t) for t in ("zh-CN", "zh_Hans", "ZH", "zh-TW", "zh_Hant", "en-US", "pt_BR")] == \
        ["zh", "zh", "zh", "zt", "zt", "en", "pt"]
    with pytest.raises(TMError, match="not a language code"):
        language_code("chinese!")


# --- exact lookup --------------------------------------------------------------------------
def test_match_key_joins_widths_and_spacings_of_the_same_text():
    assert match_key("你好，世界！") == match_key("你好, 世界!") == match_key(" 你好 ,世界! ")
    assert match_key("Ｗｉ－Ｆｉ\u3000设置") == match_key("Wi-Fi 设置") == "Wi-Fi设置"
    assert match_key("log in") != match_key("login")
    assert match_key("Open") != match_key("open")


def test_exact_match_after_normalising_whitespace_and_punctuation_width(tm):
    tm.add(UI, "zh", "en")
    assert tm.exact("请在搜索框中输入关键字.", "zh", "en").target == "Enter a keyword in the search box."
    assert tm.exact(" 请在搜索框中 输入关键字。\n", "zh", "en").target == "Enter a keyword in the search box."
    assert tm.exact("打开文件！", "zh", "en") is None
    assert tm.exact("打开文件", "zh", "de") is None  # another pair
    assert tm.exact("", "zh", "en") is None


def test_the_newest_translation_and_the_callers_own_win_an_exact_match(tm):
    tm.add([("打开", "Open")], "zh", "en")
    tm.add([("打开", "Open it")], "zh", "en")
    assert tm.exact("打开", "zh", "en").target == "Open it"
    tm.add([("打开", "Opening")], "zh", "en", owner="k1")
    tm.add([("打开", "Launch")], "zh", "en")
    assert tm.exact("打开", "zh", "en", owner="k1").target == "Opening"
    assert tm.exact("打开", "zh", "en").target == "Launch"


# --- fuzzy lookup -------------------------------------------------------------------------
def test_a_near_match_outranks_a_far_one(tm):
    tm.add(UI, "zh", "en")
    matches = tm.similar("打开这个文件", "zh", "en", k=4)
    sources = [m.entry.source for m in matches]
    print([(m.entry.source, m.score) for m in matches])
    assert sources[0] == "打开文件"
    assert sources.index("打开文件") < sources.index("保存文件")
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    assert all(0 < m.score < 100 for m in matches)


def test_an_exact_match_scores_100_and_k_bounds_the_answer(tm):
    tm.add(UI, "zh", "en")
    matches = tm.similar("打开文件", "zh", "en", k=2)
    assert len(matches) == 2 and matches[0].entry.source == "打开文件" and matches[0].score == 100
    assert tm.similar("打开文件", "zh", "en", k=0) == []


def test_unrelated_strings_are_not_returned_above_the_threshold(tm):
    tm.add(UI, "zh", "en")
    assert tm.similar("我们明天去北京看长城", "zh", "en", k=4, min_similarity=60) == []
    assert tm.similar("今天天气很好吗", "zh", "en", k=4, min_similarity=60)[0].entry.source == "今天天气很好"
    assert all(m.score >= 60 for m in tm.similar("打开文件夹吧", "zh", "en", k=4, min_similarity=60))


def test_fuzzy_lookup_keeps_to_the_language_pair(tm):
    tm.add(UI, "zh", "en")
    tm.add([("打开这个文件", "Diese Datei öffnen")], "zh", "de")
    assert [m.entry.target_lang for m in tm.similar("打开这个文件", "zh", "en", k=4)] == ["en"] * 4
    assert tm.similar("打开这个文件", "zh", "de", k=4)[0].score == 100


def test_the_fuzzy_index_forgets_removed_entries(tm):
    tm.add(UI, "zh", "en", origin="a")
    tm.add([("打开这个文件", "Open this file")], "zh", "en", origin="b")
    assert tm.similar("打开这个文件", "zh", "en", k=1)[0].score == 100
    assert tm.remove(origin="b") == 1
    assert tm.similar("打开这个文件", "zh", "en", k=1)[0].entry.source == "打开文件"
    assert tm.remove(everything=True) == len(UI)
    with tm._reading() as db:
        assert db.execute("SELECT count(*) FROM tm_grams").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM tm_gram_df WHERE df != 0").fetchone() == (0,)


def test_lookups_read_indexes_never_a_whole_table(tm):
    """Every statement of exact() and similar() searches an index; none scans tm or the postings."""
    tm.add(UI, "zh", "en")
    with tm._reading() as db:  # one thread: the lookups below take this connection from the pool again
        pass
    statements: list[str] = []
    db.set_trace_callback(statements.append)
    tm.exact("打开文件", "zh", "en", owner="k1")
    tm.similar("打开这个文件", "zh", "en", k=4, owner="k1")
    db.set_trace_callback(None)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 4, statements
    for statement in selects:
        plan = " | ".join(row[3] for row in db.execute("EXPLAIN QUERY PLAN " + statement))
        print(plan)
        assert "SEARCH" in plan and not any(part.strip().startswith("SCAN") and "tm" in part
                                            for part in plan.split("|")), (statement, plan)


def test_a_query_of_quotes_and_fts_words_is_data_not_syntax(tm):
    tm.add([('"OR" 与 NOT', "OR and NOT"), ("a*b", "a times b")], "zh", "en")
    assert tm.similar('"OR" 与 NOT', "zh", "en", k=1)[0].score == 100
    assert tm.similar("a*b", "zh", "en", k=1)[0].entry.target == "a times b"
    assert tm.similar("x", "zh", "en", k=1) == []  # no gram of it in the TM


# --- ownership and suggestions --------------------------------------------------------------
def test_a_key_sees_its_own_entries_and_the_operators_and_deletes_only_its_own(tm):
    tm.add([("打开", "Open")], "zh", "en")  # the operator's
    tm.add([("关闭", "Close")], "zh", "en", owner="k1")
    tm.add([("保存", "Save")], "zh", "en", owner="k2")
    assert {e.source for e in tm.entries(owner="k1")} == {"打开", "关闭"}
    assert {e.source for e in tm.entries(owner=None)} == {"打开"}  # no key: the operator's only
    assert {e.source for e in tm.entries(owner=ALL_OWNERS)} == {"打开", "关闭", "保存"}
    assert tm.exact("保存", "zh", "en", owner="k1") is None
    assert [m.entry.source for m in tm.similar("保存一下", "zh", "en", owner="k1")] == []
    assert tm.similar("保存一下", "zh", "en", owner="k2")[0].entry.source == "保存"
    ids = {e.source: e.id for e in tm.entries(owner=ALL_OWNERS)}
    assert tm.remove(ids=[ids["打开"], ids["保存"]], owner="k1") == 0  # neither is k1's
    assert tm.remove(everything=True, owner="k1") == 1
    assert {e.source for e in tm.entries(owner=ALL_OWNERS)} == {"打开", "保存"}
    assert tm.remove(everything=True) == 1  # the operator's own (None), not k2's
    assert [e.owner for e in tm.entries(owner=ALL_OWNERS)] == ["k2"]
    with pytest.raises(TMError, match="not an owner"):
        tm.add([("a", "b")], "zh", "en", owner=ALL_OWNERS)


def test_a_keys_own_view_leaves_the_operators_entries_out(tm):
    tm.add([("打开", "Open")], "zh", "en")
    tm.add([("打开", "Open it"), ("关闭", "Close")], "zh", "en", owner="k1", origin="mine")
    assert [e.target for e in tm.entries(owner="k1", shared=False)] == ["Open it", "Close"]
    assert tm.exact("打开", "zh", "en", owner="k1", shared=False).target == "Open it"
    assert tm.exact("打开", "zh", "en", owner="k2", shared=False) is None
    assert tm.exact("打开", "zh", "en", owner="k2").target == "Open"  # translate time: the operator's serve
    assert tm.similar("打开吧", "zh", "en", owner="k2", shared=False) == []
    assert [(p.entries, p.origins) for p in tm.stats(owner="k1", shared=False)] == [(2, 1)]
    assert (tm.count(None), tm.count("k1"), tm.count("k2"), tm.count(ALL_OWNERS)) == (1, 2, 0, 3)
    assert tm.count("k1", origin="mine") == 2 and tm.count("k1", suggestions=True) == 0


def test_entries_come_in_pages_and_by_origin(tm):
    tm.add([(f"第{i}句", f"Sentence {i}") for i in range(5)], "zh", "en", origin="a")
    tm.add([("别的", "Other")], "zh", "en", origin="b")
    first = list(tm.entries(limit=2))
    second = list(tm.entries(after=first[-1].id, limit=2))
    assert [e.source for e in first + second] == ["第0句", "第1句", "第2句", "第3句"]
    assert [e.source for e in tm.entries(origin="b")] == ["别的"]


def test_the_generation_counts_writes_that_changed_rows(tm):
    start = tm.generation
    tm.add([("打开", "Open")], "zh", "en")
    after_add = tm.generation
    tm.add([("打开", "Open")], "zh", "en")  # a duplicate changes nothing
    tm.remove(origin="nothing")
    assert after_add > start and tm.generation == after_add
    tm.add([("关闭", "Close")], "zh", "en", suggestion=True)
    tm.accept()
    assert tm.generation > after_add


def test_suggestions_enter_lookups_only_once_accepted(tm):
    tm.add([("打开", "Open")], "zh", "en")
    tm.add([("关闭", "Close"), ("打开", "Open")], "zh", "en", origin="k1", owner="k1", suggestion=True)
    assert tm.exact("关闭", "zh", "en", owner="k1") is None
    assert tm.similar("关闭", "zh", "en", owner=ALL_OWNERS) == []
    assert list(tm.entries(suggestions=True)) == []  # the operator's view without keys' entries
    assert [e.source for e in tm.entries(owner=ALL_OWNERS, suggestions=True)] == ["关闭", "打开"]
    assert tm.stats(owner=ALL_OWNERS)[0].suggestions == 2 and tm.stats()[0].suggestions == 0
    close_id = next(e.id for e in tm.entries(owner="k1", suggestions=True) if e.source == "关闭")
    assert tm.accept([close_id]) == 1
    assert tm.exact("关闭", "zh", "en", owner="k1").target == "Close"
    assert tm.accept() == 1
    assert list(tm.entries(owner=ALL_OWNERS, suggestions=True)) == []


def index_rows(tm: TranslationMemory) -> int:
    with tm._reading() as db:
        return db.execute("SELECT count(*) FROM tm_grams").fetchone()[0]


def test_suggestions_are_indexed_only_once_accepted(tm):
    """Indexed on arrival, 100 suggestions of 5,000 characters grew the file by 46 MB, most of it index rows
    that no lookup reads."""
    long = [("".join(chr(0x4E00 + (i * 997 + j * 7) % 20000) for j in range(4000)), f"suggestion {i}")
            for i in range(20)]  # 4,000 different CJK characters each: about as many bigrams
    tm.add(long, "zh", "en", origin="suggest:anonymous", suggestion=True)
    assert index_rows(tm) == 0 and tm.similar(long[0][0], "zh", "en", owner=ALL_OWNERS) == []
    first = next(tm.entries(owner=ALL_OWNERS, suggestions=True))
    assert tm.remove(ids=[first.id], owner=ALL_OWNERS) == 1  # a rejected suggestion had no index rows to drop
    assert tm.accept() == 19
    assert index_rows(tm) >= 19 * 3999
    assert tm.similar(long[5][0][:-3], "zh", "en", k=1)[0].entry.target == "suggestion 5"
    assert tm.remove(origin="suggest:anonymous") == 19 and index_rows(tm) == 0
    with tm._reading() as db:
        assert db.execute("SELECT count(*) FROM tm_gram_df WHERE df != 0").fetchone() == (0,)


OLD_INDEX_TRIGGER = """
DROP TRIGGER tm_index_insert;
CREATE TRIGGER tm_index_insert AFTER INSERT ON tm BEGIN
    INSERT OR IGNORE INTO tm_grams (gram, id)
        SELECT new.source_lang || '>' || new.target_lang || ' ' || substr(new.key, n, 2), new.id
        FROM tm_positions WHERE n <= max(1, length(new.key) - 1);
END;
PRAGMA user_version = 0;
"""


def test_a_file_whose_suggestions_were_indexed_loses_their_index_rows_when_opened(tmp_path):
    before = TranslationMemory(tmp_path / "tm.sqlite3")
    before.add(UI[:1], "zh", "en")
    with contextlib.closing(sqlite3.connect(tmp_path / "tm.sqlite3")) as db:
        db.executescript(OLD_INDEX_TRIGGER)  # as the file was before
    before.add([("关闭文件", "Close file")], "zh", "en", suggestion=True)
    indexed = index_rows(before)
    before.close()
    after = TranslationMemory(tmp_path / "tm.sqlite3")
    assert index_rows(after) == indexed - 3  # the suggestion's three bigrams are gone, the entry's kept
    assert after.similar("打开文件", "zh", "en", k=1)[0].score == 100
    assert after.accept() == 1 and after.similar("关闭文件", "zh", "en", k=1)[0].score == 100
    after.close()


def test_remove_needs_exactly_one_criterion(tm):
    with pytest.raises(TMError, match="exactly one"):
        tm.remove()
    with pytest.raises(TMError, match="exactly one"):
        tm.remove(origin="a", everything=True)


def test_threads_share_one_store(tm):
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(30):
                tm.add([(f"第{n}组第{i}句话", f"group {n} sentence {i}")], "zh", "en", origin=f"t{n}")
                tm.similar(f"第{n}组第{i}句", "zh", "en", k=2)
                tm.exact(f"第{n}组第{i}句话", "zh", "en")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == [] and len(tm) == 120


class PausedImport:
    """An import held inside its first write transaction until released: what a large import is
    doing most of the time (writing the n-gram index of a batch)."""

    def __init__(self, tm: TranslationMemory, monkeypatch, pairs: list[tuple[str, str]]):
        self.inside, self.released = threading.Event(), threading.Event()

        def pause() -> None:
            self.inside.set()
            self.released.wait(timeout=120)

        monkeypatch.setattr(tm, "_in_write_batch", pause)
        self.thread = threading.Thread(target=tm.add, args=(pairs, "zh", "en"), kwargs={"origin": "big"})

    def __enter__(self) -> PausedImport:
        self.thread.start()
        assert self.inside.wait(timeout=30), "the import never reached its write transaction"
        return self

    def __exit__(self, *exc) -> None:
        self.released.set()
        self.thread.join(timeout=60)


def answered_meanwhile(work) -> dict:
    """What ``work()`` returned on another thread, failing if it did not finish while the caller waits
    (the bound only stops a test that would otherwise hang)."""
    result: dict = {}
    done = threading.Event()

    def run() -> None:
        result["value"] = work()
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(timeout=30), "the lookup waited for the import's write transaction"
    return result["value"]


def test_lookups_answer_while_an_import_holds_its_write_transaction(tm, monkeypatch):
    tm.add(UI, "zh", "en")
    with PausedImport(tm, monkeypatch, [("关闭文件", "Close file"), ("删除文件", "Delete file")]) as paused:
        exact, similar, pairs, held = answered_meanwhile(lambda: (
            tm.exact("打开文件", "zh", "en"), tm.similar("打开这个文件", "zh", "en", k=1), tm.pairs(0),
            tm.count(None)))
        assert not paused.released.is_set()  # answered before the import was let go
        assert exact.target == "Open file" and similar[0].entry.source == "打开文件"
        assert pairs == {("zh", "en")} and held == len(UI)  # the import's batch is not committed yet
        assert answered_meanwhile(lambda: tm.exact("关闭文件", "zh", "en")) is None
    assert tm.exact("关闭文件", "zh", "en").target == "Close file" and len(tm) == len(UI) + 2


def test_long_entries_are_written_in_batches_bounded_by_their_index_rows(tm, monkeypatch):
    monkeypatch.setattr("mtserve.service.tm.WRITE_BATCH_GRAMS", 12_000)
    transactions: list[None] = []
    monkeypatch.setattr(tm, "_in_write_batch", lambda: transactions.append(None))
    pairs = [(f"{i}" + "长句子" * 1600, f"long {i}") for i in range(5)]  # about 4,800 grams each
    assert tm.add(pairs, "zh", "en").added == 5
    assert len(transactions) == 3  # 2 + 2 + 1 entries: at most 12,000 grams a transaction


def test_a_cancelled_import_stops_at_a_batch_boundary_keeping_what_it_stored(tm, monkeypatch):
    monkeypatch.setattr("mtserve.service.tm.ADD_CHUNK", 2)
    cancel = threading.Event()
    monkeypatch.setattr(tm, "_in_write_batch", cancel.set)  # asked to stop during its first batch
    pairs = [(f"第{i}句", f"sentence {i}") for i in range(6)]
    with pytest.raises(TMCancelled, match="with 2 entries stored"):
        tm.add(pairs, "zh", "en", cancel=cancel)
    assert [e.source for e in tm.entries()] == ["第0句", "第1句"]


def test_the_pairs_with_entries_follow_this_stores_writes_and_read_the_file_again_after_their_age(tmp_path):
    server, cli = TranslationMemory(tmp_path / "tm.sqlite3"), TranslationMemory(tmp_path / "tm.sqlite3")
    assert server.pairs(3600) == frozenset()
    server.add(UI[:1], "zh", "en", origin="ui")
    server.add([("你好", "Hi")], "zh", "de", suggestion=True)  # a suggestion is no entry
    assert server.pairs(3600) == {("zh", "en")}
    cli.add([("你好", "Hallo")], "zh", "de")  # another process's write: seen once the answer is old
    assert server.pairs(3600) == {("zh", "en")} and server.pairs(0) == {("zh", "en"), ("zh", "de")}
    server.remove(origin="ui")
    assert server.pairs(3600) == {("zh", "de")}
    server.close()
    cli.close()


# --- files -------------------------------------------------------------------------------
PO = """msgid ""
msgstr ""
"Language: zh_CN\\n"
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Open"
msgstr "打开"

#, fuzzy
msgid "Close"
msgstr "关闭"

msgid "Untranslated"
msgstr ""

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d 个文件"

#~ msgid "Old"
#~ msgstr "旧的"
"""


def test_po_import_skips_fuzzy_obsolete_and_untranslated_entries():
    found = read_tm(PO.encode(), "po")
    assert (found.source_lang, found.target_lang) == ("en", "zh")
    assert found.pairs == [("Open", "打开"), ("%d files", "%d 个文件")]
    assert found.skipped == {"fuzzy": 1, "untranslated": 1, "obsolete": 1}


def test_a_plural_entry_pairs_the_form_its_language_uses():
    """Chinese has one form for every count, the plural's ("%d 个文件" is "%d files", never "One file");
    a language of two forms pairs its first with the singular."""
    entry = 'msgid "One file"\nmsgid_plural "%d files"\n'
    chinese = read_tm(f'msgid ""\nmsgstr "Language: zh_CN\\n"\n\n{entry}msgstr[0] "%d 个文件"\n'.encode(), "po")
    assert chinese.pairs == [("%d files", "%d 个文件")]
    assert read_tm(f'msgid ""\nmsgstr "Language: zh_CN\\n"\n\n{entry}msgstr[0] "%d 个文件"\n'.encode(),
                   "po", "zh", "en").pairs == [("%d 个文件", "%d files")]
    german = read_tm(f'msgid ""\nmsgstr "Language: de\\n"\n\n{entry}msgstr[0] "Eine Datei"\n'
                     f'msgstr[1] "%d Dateien"\n'.encode(), "po")
    assert german.pairs == [("One file", "Eine Datei")]


def test_a_zh_catalog_read_as_zh_to_en_stores_msgstr_to_msgid():
    found = read_tm(PO.encode(), "po", "zh", "en")
    assert (found.source_lang, found.target_lang) == ("zh", "en")
    assert found.pairs[0] == ("打开", "Open")


def test_a_po_import_for_a_pair_the_catalog_is_not_in_is_refused():
    with pytest.raises(TMError, match="neither 'fr' nor 'en'"):
        read_tm(PO.encode(), "po", "fr", "en")
    with pytest.raises(TMError, match="two different languages"):
        read_tm(PO.encode(), "po", "zh", "zh-CN")


def test_a_po_upload_whose_text_names_a_file_is_parsed_not_opened(tmp_path, monkeypatch):
    secret = tmp_path / "secret.po"
    secret.write_text('msgid "Secret"\nmsgstr "机密"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for text in (str(secret), "secret.po"):
        with pytest.raises(TMError) as caught:
            read_tm(text.encode(), "po", "en", "zh")
        assert "机密" not in str(caught.value)
    assert read_tm(b"", "po", "en", "zh").pairs == []


@pytest.mark.parametrize("text", ['msgid "a"\nmsgstr', "not a catalog\n", 'msgid "a"\nmsgstr "b"\nmsgstr "c"\n'])
def test_a_po_parse_error_says_the_line_and_names_no_server_path(text):
    with pytest.raises(TMError) as refused:
        read_tm(text.encode(), "po", "en", "zh")
    message = str(refused.value)
    assert message.startswith("the .po file cannot be parsed: Syntax error in po file") and "(line " in message
    assert "/" not in message and "mtserve-tm-" not in message and "upload.po" not in message, message


def test_running_out_of_memory_inside_polib_is_out_of_memory_not_a_syntax_error(monkeypatch):
    """polib catches every exception inside a line and raises "Syntax error" from it: under the sandbox's
    memory limit that is a MemoryError, which the worker reports as a file over its limit (413)."""
    import polib

    def parse(path, **kwargs):
        try:
            raise MemoryError
        except MemoryError:
            raise OSError(f"Syntax error in po file {path} (line 9)") from None

    monkeypatch.setattr(polib, "pofile", parse)
    with pytest.raises(MemoryError):
        read_tm(b'msgid "a"\nmsgstr "b"\n', "po", "en", "zh")


def test_tsv_import_needs_the_pair_and_skips_malformed_lines():
    found = read_tm("# comment\n打开\tOpen\n\nno tab here\n保存\tSave\n".encode(), "tsv", "zh-CN", "en")
    assert found.pairs == [("打开", "Open"), ("保存", "Save")] and found.source_lang == "zh"
    assert found.skipped == {"not a source<TAB>target line": 1}
    with pytest.raises(TMError, match="--source zh --target en"):
        read_tm(b"a\tb\n", "tsv")


TMX = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE tmx SYSTEM "tmx14.dtd">
<tmx version="1.4">
  <header creationtool="t" creationtoolversion="1" segtype="sentence" o-tmf="t" adminlang="en-US"
          srclang="en-US" datatype="plaintext"/>
  <body>
    <tu><tuv xml:lang="en-US"><seg>Open</seg></tuv><tuv xml:lang="zh-CN"><seg>打开</seg></tuv></tu>
    <tu><tuv xml:lang="EN-US"><seg>Press <hi type="b">OK</hi></seg></tuv>
        <tuv xml:lang="zh-CN"><seg>按<hi>确定</hi></seg></tuv></tu>
    <tu><tuv xml:lang="en-US"><seg>Hello <ph x="1">%s</ph></seg></tuv>
        <tuv xml:lang="zh-CN"><seg>你好 <ph x="1">%s</ph></seg></tuv></tu>
    <tu><tuv lang="en"><seg>Save</seg></tuv><tuv lang="zh"><seg>保存</seg></tuv></tu>
    <tu><tuv xml:lang="en-US"><seg>Only English</seg></tuv></tu>
  </body>
</tmx>
"""


def test_tmx_import_reads_tu_tuv_seg_keeps_hi_and_skips_inline_codes():
    found = read_tm(TMX.encode(), "tmx")
    assert (found.source_lang, found.target_lang) == ("en", "zh")
    assert found.pairs == [("Open", "打开"), ("Press OK", "按确定"), ("Save", "保存")]
    assert found.skipped == {"inline codes (ph, bpt, ept, it, ut)": 1, "not in both en and zh": 1}
    reverse = read_tm(TMX.encode(), "tmx", "zh", "en")
    assert reverse.pairs[0] == ("打开", "Open")


def test_a_po_whose_language_is_its_msgids_own_is_refused_not_imported_as_a_pair_of_one_language():
    catalog = 'msgid ""\nmsgstr ""\n"Language: en\\n"\n\nmsgid "保存设置"\nmsgstr "Save settings"\n'
    with pytest.raises(TMError, match="pairs 'en' with itself"):
        read_tm(catalog.encode(), "po")
    assert read_tm(catalog.encode(), "po", "zh", "en").pairs == [("保存设置", "Save settings")]


def test_tmx_entities_are_not_resolved_and_bad_xml_is_refused(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET", encoding="utf-8")
    xxe = f"""<?xml version="1.0"?><!DOCTYPE tmx [<!ENTITY x SYSTEM "file://{secret}">]>
<tmx version="1.4"><header srclang="en"/><body>
<tu><tuv xml:lang="en"><seg>a &x;</seg></tuv><tuv xml:lang="zh"><seg>甲</seg></tuv></tu></body></tmx>"""
    found = read_tm(xxe.encode(), "tmx")
    assert all("SECRET" not in s + t for s, t in found.pairs)
    with pytest.raises(TMError, match="not well-formed"):
        read_tm(b"<tmx><body>", "tmx")
    with pytest.raises(TMError, match="not a TMX file"):
        read_tm(b"<html/>", "tmx")
    with pytest.raises(TMError, match="say which pair"):
        read_tm(b'<tmx><header srclang="*all*"/><body/></tmx>', "tmx")


TMX_UNIT = '<tu><tuv xml:lang="en"><seg>Line {i}</seg></tuv><tuv xml:lang="zh"><seg>第{i}行</seg></tuv></tu>'
XLIFF_UNIT = '<trans-unit id="{i}"><source>Line {i}</source><target>第{i}行</target></trans-unit>'
CUT_SHORT = "<broken"  # what follows the third unit: a reader that got this far fails on it instead


@pytest.mark.parametrize("fmt, data", [
    ("tsv", "".join(f"Line {i}\t第{i}行\n" for i in range(3)).encode() + b"\xff\xfe not UTF-8\n"),
    ("tmx", ('<tmx version="1.4"><header srclang="en"/><body>' + "".join(TMX_UNIT.format(i=i) for i in range(3))
             + CUT_SHORT).encode()),
    ("xliff", ('<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="en" '
               'target-language="zh"><body>' + "".join(XLIFF_UNIT.format(i=i) for i in range(3))
               + CUT_SHORT).encode()),
])
def test_a_reader_stops_at_the_first_pair_past_its_cap_without_reading_on(fmt, data):
    """The entry cap is checked pair by pair as a file is read, not once the whole file has been parsed."""
    with pytest.raises(PastCap, match="more than 2 pairs") as stopped:
        read_tm(data, fmt, "en", "zh", caps=ReadCaps(pairs=2))
    assert stopped.value.pairs and stopped.value.limit == 2
    with pytest.raises(PastCap, match="more than 20 bytes of text"):
        read_tm(data, fmt, "en", "zh", caps=ReadCaps(bytes=20))  # "Line 0第0行" is 13 bytes, two are 26
    with pytest.raises(TMError, match="not UTF-8|not well-formed"):  # read to the end, it is refused
        read_tm(data, fmt, "en", "zh")


def test_a_po_import_stops_at_the_first_pair_past_its_cap():
    with pytest.raises(PastCap, match="more than 1 pairs"):
        read_tm(PO.encode(), "po", caps=ReadCaps(pairs=1))
    assert len(read_tm(PO.encode(), "po", caps=ReadCaps(pairs=2)).pairs) == 2


def test_a_streamed_tmx_is_read_as_the_whole_tree_was():
    """The pair still comes from the header and the units' languages, read ahead in a first pass."""
    big = ('<tmx version="1.4"><header srclang="en"/><body>' + "".join(TMX_UNIT.format(i=i) for i in range(5000))
           + "</body></tmx>").encode()
    found = read_tm(big, "tmx")
    assert (found.source_lang, found.target_lang, len(found.pairs)) == ("en", "zh", 5000)
    assert found.pairs[4999] == ("Line 4999", "第4999行") and found.bytes == sum(
        len(s.encode()) + len(t.encode()) for s, t in found.pairs)


def test_tmx_export_reimports_to_the_same_pairs(tm):
    tm.add(UI + [("a\x01b & <c>", "x")], "zh", "en", origin="ui")
    tm.add([("打開檔案", "Open file")], "zt", "en")
    data, count = write_tmx(tm.entries("zh", "en"), "zh")
    assert count == len(UI) + 1
    again = read_tm(data, "tmx")
    assert (again.source_lang, again.target_lang) == ("zh", "en")
    assert again.pairs == UI + [("ab & <c>", "x")]  # a control character XML cannot hold is dropped
    traditional, _ = write_tmx(tm.entries("zt", "en"), "zt")
    assert b'xml:lang="zh-TW"' in traditional
    assert read_tm(traditional, "tmx").pairs == [("打開檔案", "Open file")]
    assert read_tm(traditional, "tmx").source_lang == "zt"
    # `mtserve tm export` without a pair writes srclang="*all*"; each unit's own srclang names the source
    every, _ = write_tmx(tm.entries("zh", "en"))
    assert b'srclang="*all*"' in every
    assert (read_tm(every, "tmx").source_lang, read_tm(every, "tmx").target_lang) == ("zh", "en")


def test_formats_by_name():
    assert [format_of(n) for n in ("a.TMX", "b.po", "c.tsv", "d.xlf", "e.xliff")] == \
        ["tmx", "po", "tsv", "xliff", "xliff"]
    with pytest.raises(TMError, match="cannot tell the format"):
        format_of("notes.docx")


XLIFF12 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en-US" target-language="zh-CN" datatype="plaintext" original="ui">
    <body>
      <trans-unit id="1"><source>Open file</source><target state="translated">打开文件</target></trans-unit>
      <trans-unit id="2"><source>Close</source><target state="new">Close</target></trans-unit>
      <trans-unit id="3"><source>Save <g id="1">all</g></source><target>保存<g id="1">全部</g></target></trans-unit>
      <trans-unit id="4"><source>Click <x id="1"/> here</source><target>点击<x id="1"/>这里</target></trans-unit>
      <trans-unit id="5"><source>Quit</source></trans-unit>
    </body>
  </file>
  <file source-language="en" target-language="fr" datatype="plaintext" original="fr">
    <body><trans-unit id="1"><source>Open</source><target>Ouvrir</target></trans-unit></body>
  </file>
</xliff>
"""
XLIFF2 = """<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="zh" trgLang="en">
  <file id="f"><unit id="u">
    <segment state="translated"><source>打开</source><target>Open</target></segment>
    <segment state="initial"><source>关闭</source><target>关闭</target></segment>
    <segment><source>你好<ph id="1"/></source><target>Hello<ph id="1"/></target></segment>
  </unit></file>
</xliff>
"""


def test_xliff_import_reads_translated_units_of_the_pair():
    found = read_tm(XLIFF12.encode(), "xliff")
    assert (found.source_lang, found.target_lang) == ("en", "zh")
    assert found.pairs == [("Open file", "打开文件"), ("Save all", "保存全部")]  # g wraps text: kept
    assert found.skipped == {"state new: not yet translated": 1, "inline codes": 1, "no target": 1,
                             "in en->fr, not en->zh": 1}
    reverse = read_tm(XLIFF12.encode(), "xliff", "zh", "en")
    assert reverse.pairs[0] == ("打开文件", "Open file") and reverse.source_lang == "zh"
    two = read_tm(XLIFF2.encode(), "xliff")
    assert (two.source_lang, two.target_lang, two.pairs) == ("zh", "en", [("打开", "Open")])
    assert two.skipped == {"state initial: not yet translated": 1, "inline codes": 1}


def test_bad_xliff_is_refused_with_what_to_do():
    for data, message in ((b"<xliff/>", "XLIFF version unknown"), (b"<tmx/>", "not an XLIFF file"),
                          (b"<xliff", "not well-formed XML"),
                          (XLIFF2.replace('srcLang="zh" trgLang="en"', "").encode(), "--source zh --target en")):
        with pytest.raises(TMError, match=message):
            read_tm(data, "xliff")
