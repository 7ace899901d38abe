"""`mtserve glossary add|list|show|remove` as a user runs it, and the store it shares with the API."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from mtserve.service.glossary import parse_entries
from tests.fakes import FakeEngine
from tests.servers import serve


def glossary(home, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MTSERVE_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "mtserve.cli", "glossary", *args], input=stdin, text=True,
                          capture_output=True, timeout=60, env=env)


def refused(result: subprocess.CompletedProcess, message: str) -> None:
    """Exit 2 with one line that says what to fix, and no traceback."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert message in result.stderr, result.stderr
    assert result.stdout == ""


def test_add_list_show_remove_from_tsv_csv_json_and_stdin(tmp_path):
    home = tmp_path / "home"
    tsv, csv, js = tmp_path / "tech.tsv", tmp_path / "fruit.csv", tmp_path / "names.json"
    tsv.write_text("# term\ttranslation\n国际商业机器公司\tIBM\n苹果\tApple\n", encoding="utf-8")
    csv.write_text('苹果,"apple, the fruit"\n', encoding="utf-8")
    js.write_text(json.dumps({"张伟": "Zhang Wei"}, ensure_ascii=False), encoding="utf-8")

    made = {}
    for name, path, stdin, pair in (("tech", str(tsv), None, ("zh", "en")),
                                    ("fruit", str(csv), None, ("zh", "en")),
                                    ("names", str(js), None, ("zh", "de")),
                                    ("piped", "-", "猫\tcat\n", ("ZH", "EN"))):
        r = glossary(home, "add", name, "--source", pair[0], "--target", pair[1], path, stdin=stdin)
        assert r.returncode == 0, r.stderr
        made[name] = r.stdout.split()[0]
        assert f"{pair[0].lower()}->{pair[1].lower()}" in r.stdout

    listing = glossary(home, "list")
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line.split() for line in listing.stdout.splitlines()}
    assert set(rows) == set(made.values())
    tech = rows[made["tech"]]
    assert tech[1:5] == ["tech", "zh->en", "2", "entries"] and tech[5].endswith("+00:00")  # the creation time
    assert rows[made["names"]][2] == "zh->de" and rows[made["piped"]][2] == "zh->en"

    shown = glossary(home, "show", made["tech"])
    assert shown.returncode == 0 and shown.stdout == "国际商业机器公司\tIBM\n苹果\tApple\n"
    assert parse_entries(glossary(home, "show", made["fruit"]).stdout) == {"苹果": "apple, the fruit"}

    removed = glossary(home, "remove", made["tech"])
    assert removed.returncode == 0 and made["tech"] in removed.stdout
    assert made["tech"] not in glossary(home, "list").stdout
    refused(glossary(home, "remove", made["tech"]), f"no glossary with id {made['tech']!r}")
    refused(glossary(home, "show", made["tech"]), "mtserve glossary list")


def test_an_empty_store_lists_nothing_and_says_how_to_add(tmp_path):
    r = glossary(tmp_path, "list")
    assert r.returncode == 0 and r.stdout == "" and "mtserve glossary add" in r.stderr


@pytest.mark.parametrize("args, stdin, message", [
    (["add", "x", "--source", "zh", "--target", "en", "missing.tsv"], None, "no entries file"),
    (["add", "x", "--source", "zh", "--target", "en", "-"], "only-one-column\n", "line 1"),
    (["add", "x", "--source", "zh", "--target", "en", "-"], "", "at least one entry"),
    (["add", "x", "-s", "zh", "-t", "en", "--format", "json", "-"], "{not json", "not valid JSON"),
    (["add", "x", "--source", "chinese", "--target", "en", "-"], "猫\tcat\n", "language code"),
    (["add", " ", "--source", "zh", "--target", "en", "-"], "猫\tcat\n", "non-empty name"),
])
def test_bad_input_is_exit_2_with_one_line_that_says_what_to_fix(tmp_path, args, stdin, message):
    result = glossary(tmp_path, *args, stdin=stdin)
    refused(result, message)
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_missing_argument_is_a_usage_error(tmp_path):
    r = glossary(tmp_path, "add", "x", "-")  # no --source / --target
    assert r.returncode == 2 and "--source" in r.stderr and "Traceback" not in r.stderr


def test_the_cli_and_the_apis_share_one_store(tmp_path):
    entries = tmp_path / "pets.tsv"
    entries.write_text("猫\tkitty\n", encoding="utf-8")
    from_cli = glossary(tmp_path, "add", "pets", "--source", "zh", "--target", "en", str(entries))
    assert from_cli.returncode == 0, from_cli.stderr
    cli_id = from_cli.stdout.split()[0]
    engine = FakeEngine()
    with serve(engine, home=tmp_path) as url:  # a running server sees the CLI's glossary, and vice versa
        listed = httpx.get(f"{url}/v2/glossaries", timeout=30).json()["glossaries"]
        translated = httpx.post(f"{url}/translate", timeout=30,
                                json={"q": "猫。", "source": "zh", "target": "en", "glossary_id": cli_id})
        made = httpx.post(f"{url}/v2/glossaries", timeout=30,
                          data={"name": "birds", "source_lang": "ZH", "target_lang": "EN",
                                "entries": "鸟\tbirdie", "entries_format": "tsv"})
        api_id = made.json()["glossary_id"]
        cli_list = glossary(tmp_path, "list")
        cli_show = glossary(tmp_path, "show", api_id)
        assert glossary(tmp_path, "remove", cli_id).returncode == 0
        gone = httpx.get(f"{url}/v2/glossaries/{cli_id}", timeout=30)
        gone_translate = httpx.post(f"{url}/translate", timeout=30,
                                    json={"q": "猫。", "source": "zh", "target": "en", "glossary_id": cli_id})
    described = [(g["glossary_id"], g["name"], g["source_lang"], g["target_lang"], g["entry_count"])
                 for g in listed]
    assert described == [(cli_id, "pets", "zh", "en", 1)]
    assert translated.status_code == 200 and dict(engine.calls[0].glossary) == {"猫": "kitty"}
    assert made.status_code == 201, made.text
    assert api_id in cli_list.stdout and "birds" in cli_list.stdout
    assert cli_show.stdout == "鸟\tbirdie\n"
    assert gone.status_code == 404
    assert gone_translate.status_code == 404
