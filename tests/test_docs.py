"""The documents a newcomer reads: the settings page matches the code, every relative link leads
somewhere, and nothing refers to the team's own rounds of work or dates its headings."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", ROOT / "QUALITY.md", ROOT / "BENCHMARKS.md",
                *(ROOT / "docs").rglob("*.md"), *(ROOT / "benchmarks").rglob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)


def test_the_settings_page_is_what_the_code_generates():
    from mtserve.cli import build_parser
    from mtserve.cli.settings import command_parsers, settings_page

    page = ROOT / "docs" / "settings.md"
    assert page.read_text(encoding="utf-8") == settings_page(command_parsers(build_parser())), (
        "docs/settings.md is stale: a setting, its default, description or flag changed. "
        "Regenerate it with `mtserve settings --page > docs/settings.md`.")


def test_readme_is_a_front_door():
    size = len((ROOT / "README.md").read_bytes())
    assert size <= 20_000, f"README.md is {size} bytes; keep it under 20,000 and move detail to docs/"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|_(?=\w)|(?<=\w)_", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LNM")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6} (.+)", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [a or b for a, b in LINK.findall(text)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_a_heading(page: Path):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with that anchor in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_to_a_round_of_work_and_no_dated_heading(page: Path):
    text = page.read_text(encoding="utf-8")
    rounds = re.findall(r".{0,30}(?:sessions? ?[0-9]|round [0-9]).{0,30}", text, re.I)
    assert not rounds, f"{page.relative_to(ROOT)} refers to rounds of work a reader cannot follow: {rounds}"
    dated = re.findall(r"^#+ .*20[0-9]{2}-[0-9]{2}.*$", text, re.M)
    assert not dated, f"{page.relative_to(ROOT)} has dated headings: {dated}"
