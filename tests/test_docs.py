"""The documents a newcomer reads: the settings page matches the code."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_settings_page_is_what_the_code_generates():
    from mtserve.cli import build_parser
    from mtserve.cli.settings import command_parsers, settings_page

    page = ROOT / "docs" / "settings.md"
    assert page.read_text(encoding="utf-8") == settings_page(command_parsers(build_parser())), (
        "docs/settings.md is stale: a setting, its default, description or flag changed. "
        "Regenerate it with `mtserve settings --page > docs/settings.md`.")
