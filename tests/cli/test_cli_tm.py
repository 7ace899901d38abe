"""`mtserve tm import|export|stats|remove|accept|search` as a user runs it, with a temporary MTSERVE_HOME."""

from __future__ import annotations

import os
import subprocess
import sys

from mtserve.service.tm import TranslationMemory
from mtserve.service.tm_files import read_tm

PO = """msgid ""
msgstr ""
"Language: zh_CN\\n"
"Content-Type: text/plain; charset=UTF-8\\n"

msgid "Open file"
msgstr "打开文件"

#, fuzzy
msgid "Close"
msgstr "关闭"

msgid "Whether to show hidden files"
msgstr "是否显示隐藏文件"
"""


def tm(home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MTSERVE_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "mtserve.cli", "tm", *args], check=False, text=True,
                          capture_output=True, timeout=60, env=env)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def refused(result: subprocess.CompletedProcess, message: str) -> None:
    """Exit 2 with one line that says what to fix, and no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and message in result.stderr, result.stderr


def test_import_search_export_remove_end_to_end(tmp_path):
    home = tmp_path / "home"
    catalog, table = tmp_path / "app.po", tmp_path / "extra.tsv"
    catalog.write_text(PO, encoding="utf-8")
    table.write_text("保存文件\tSave file\n打开文件夹\tOpen folder\n", encoding="utf-8")

    assert ok(tm(home, "import", str(catalog), "--source", "zh", "--target", "en")) == \
        "zh->en from app.po: 2 added, 0 already there, 1 skipped: fuzzy\n"
    assert "2 added" in ok(tm(home, "import", str(table), "-s", "zh", "-t", "en", "--origin", "mine"))
    assert "0 added, 2 already there" in ok(tm(home, "import", str(table), "-s", "zh", "-t", "en"))
    assert ok(tm(home, "stats")).split() == ["zh->en", "4", "entries", "0", "suggestions", "2", "origins"]

    found = ok(tm(home, "search", "打开这个文件", "--source", "zh", "--target", "en", "-k", "2",
                  "--min-similarity", "0")).splitlines()
    print(found)
    assert len(found) == 2 and found[0].split("\t")[1:] == ["打开文件", "Open file"]
    assert float(found[0].split()[0]) > float(found[1].split()[0])

    exported = tmp_path / "out.tmx"
    assert ok(tm(home, "export", str(exported), "--source", "zh", "--target", "en")) == \
        f"4 entries written to {exported}\n"
    pairs = read_tm(exported.read_bytes(), "tmx").pairs
    assert sorted(pairs) == sorted([("打开文件", "Open file"), ("是否显示隐藏文件", "Whether to show hidden files"),
                                    ("保存文件", "Save file"), ("打开文件夹", "Open folder")])

    assert ok(tm(home, "remove", "--origin", "mine")) == "removed 2 entries\n"
    assert ok(tm(home, "stats")).split()[1] == "2"
    assert ok(tm(home, "remove", "--all")) == "removed 2 entries\n"
    assert "empty" in tm(home, "stats").stderr
    assert ok(tm(home, "import", str(exported))).startswith("zh->en from out.tmx: 4 added")


def test_accept_lists_and_accepts_suggestions(tmp_path):
    home = tmp_path / "home"
    store = TranslationMemory(home / "tm.sqlite3")
    store.add([("关闭", "Close"), ("退出", "Quit")], "zh", "en", origin="k1", owner="k1", suggestion=True)
    store.close()
    listing = ok(tm(home, "accept")).splitlines()
    assert [line.split("\t")[1:4] for line in listing] == [["zh->en", "关闭", "Close"], ["zh->en", "退出", "Quit"]]
    first = listing[0].split("\t")[0]
    assert ok(tm(home, "accept", first)) == "accepted 1 suggestions\n"
    assert ok(tm(home, "stats")).split()[1:4] == ["1", "entries", "1"]
    assert ok(tm(home, "accept", "--all")) == "accepted 1 suggestions\n"
    assert "no suggestions waiting" in tm(home, "accept").stderr


def test_bad_input_is_one_line_that_says_what_to_fix(tmp_path):
    home = tmp_path / "home"
    table = tmp_path / "t.tsv"
    table.write_text("a\tb\n", encoding="utf-8")
    refused(tm(home, "import", str(table)), "--source zh --target en")
    refused(tm(home, "import", str(tmp_path / "missing.tmx")), "no file")
    refused(tm(home, "import", str(tmp_path / "notes.docx")), "cannot tell the format")
    xliff = tmp_path / "a.xliff"
    xliff.write_text("<xliff/>", encoding="utf-8")
    refused(tm(home, "import", str(xliff)), "export XLIFF 1.2 or 2.x")
    broken = tmp_path / "b.tmx"
    broken.write_text("<tmx><body>", encoding="utf-8")
    refused(tm(home, "import", str(broken)), "not well-formed XML")
    refused(tm(home, "remove", "--origin", "nothing"), "no entry matched")
    refused(tm(home, "search", "打开", "-s", "chinese!", "-t", "en"), "not a language code")
    assert tm(home, "remove").returncode == 2  # argparse: one of --origin, --id, --all
