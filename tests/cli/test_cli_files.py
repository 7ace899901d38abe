"""`mtserve translate-file`: the same pipeline in process, with a progress bar."""

from __future__ import annotations

import asyncio
import contextlib
import io

import pytest

from mtserve.cli import main
from mtserve.cli.files import translate_file
from mtserve.settings import Settings
from tests.documents import samples
from tests.documents.helpers import SwapEngine, visible_text
from tests.documents.samples import has_han, swap


def test_translate_file_writes_next_to_the_input_with_progress(tmp_path):
    source = tmp_path / "film.srt"
    source.write_bytes(samples.SRT.encode())
    err = io.StringIO()
    written = asyncio.run(translate_file(Settings(home=tmp_path), source, "zh", "en", None,
                                         engine=SwapEngine(), progress=True, err=err))
    assert written == tmp_path / "film.en.srt"
    text = written.read_text()
    assert "00:00:06,500 --> 00:00:08,000" in text and swap("我是老师。") in text
    assert not has_han(text)
    log = err.getvalue()
    assert "film.srt" in log and "4/4" in log  # the tqdm bar, finished
    assert "note: Numbering, timings" in log


def test_translate_file_to_a_chosen_output(tmp_path):
    source = tmp_path / "report.docx"
    source.write_bytes(samples.docx_bytes())
    out = tmp_path / "out" / "translated.docx"
    out.parent.mkdir()
    written = asyncio.run(translate_file(Settings(home=tmp_path), source, "auto", "en", out,
                                         engine=SwapEngine(), progress=False))
    assert written == out
    assert not has_han(visible_text("x.docx", out.read_bytes()))


def test_refuses_to_overwrite_its_input(tmp_path):
    source = tmp_path / "notes.txt"
    source.write_bytes(samples.TXT.encode())
    with pytest.raises(ValueError, match="is the input file"):
        asyncio.run(translate_file(Settings(home=tmp_path), source, "zh", "en", source,
                                   engine=SwapEngine(), progress=False))
    assert source.read_bytes() == samples.TXT.encode()


@pytest.mark.parametrize("name, data, message", [
    ("virus.exe", b"MZ", "unsupported file format '.exe'; allowed formats: .txt"),
    ("broken.docx", b"not a zip", "could not read the .docx file"),
])
def test_cli_errors_say_what_is_wrong(tmp_path, capsys, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    assert main(["translate-file", str(path), "--target", "en", "--home", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def test_cli_missing_input(tmp_path, capsys):
    assert main(["translate-file", str(tmp_path / "nope.txt"), "-t", "en"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_translate_file_takes_xliff_and_xlsx_with_the_sheet_names_setting(tmp_path):
    import openpyxl
    from lxml import etree

    xliff = tmp_path / "strings.xliff"
    xliff.write_bytes(samples.XLIFF2.encode())
    written = asyncio.run(translate_file(Settings(home=tmp_path), xliff, "zh", "de", None,
                                         engine=SwapEngine(), progress=False))
    assert written == tmp_path / "strings.de.xlf"
    assert etree.fromstring(written.read_bytes()).get("trgLang") == "de"
    book = tmp_path / "budget.xlsx"
    book.write_bytes(samples.xlsx_bytes())
    settings = Settings(home=tmp_path, files_xlsx_sheet_names=True)
    written = asyncio.run(translate_file(settings, book, "zh", "en", None, engine=SwapEngine(),
                                         progress=False))
    assert openpyxl.load_workbook(written).sheetnames[0] == swap("销售 数据")
    assert "--files-xlsx-sheet-names" in translate_file_help()


def translate_file_help() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["translate-file", "--help"])
    return out.getvalue()


def test_a_context_of_the_users_own_replaces_the_formats_default(tmp_path):
    """`translate-file --context TEXT`: every segment's request carries it; without it, the format's own."""
    from mtserve.documents.formats.registry import SUBTITLES
    from mtserve.engines.base import Guidance

    source = tmp_path / "film.srt"
    source.write_bytes(samples.SRT.encode())
    contexts = []
    for guidance in (None, Guidance(context="A cooking show: the host talks to the audience.")):
        engine = SwapEngine()
        engine.prompted = True  # an engine that puts guidance in its prompt, as llama.cpp's does
        asyncio.run(translate_file(Settings(home=tmp_path), source, "zh", "en", tmp_path / "out.srt",
                                   engine=engine, progress=False, guidance=guidance))
        contexts.append({call.guidance.context for call in engine.calls})
    assert contexts[0] == {SUBTITLES}
    assert contexts[1] == {"A cooking show: the host talks to the audience."}
