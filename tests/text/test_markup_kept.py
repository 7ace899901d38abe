"""What a translation keeps as written, letter for letter (the guardrails' and the strict retry's view)."""

from __future__ import annotations

from collections import Counter

from mtserve.text.markup import kept_as_written, placeholders


def test_placeholders_links_code_paths_quoted_words_and_names_are_kept():
    text = ('Open https://example.com/page. and www.x.org/a, run `make test` in src/main.py, see config.yaml, '
            'enter %(name)s or {count} or ${user}, mail bob@example.com: a valid "slug" for the iPhone.')
    assert kept_as_written(text) == [
        "https://example.com/page", "www.x.org/a", "`make test`", "src/main.py", "config.yaml", "%(name)s", "{count}",
        "${user}", "bob@example.com", "slug", "Open", "iPhone"]


def test_a_path_stops_at_chinese_around_it_and_only_pieces_with_lower_case_letters_are_listed():
    assert kept_as_written("运行src/main.py文件，打开“config.yaml”。") == ["src/main.py", "config.yaml"]
    assert kept_as_written("The API and NASA, %d and {0}") == ["%d", "The"]  # %d's letter is lower case
    assert kept_as_written("rock'n'roll") == []  # one letter between quotes is no word


def test_a_long_run_without_spaces_is_read_in_one_pass():
    """Names and paths are looked for from the start of a word or run only: a 100,000-letter run
    (hostile input, or a model's runaway output) is read once, not once from every letter."""
    assert kept_as_written("a" * 100_000) == []
    assert kept_as_written("aB" * 50_000) == ["aB" * 50_000]  # one word with a capital: a name
    assert kept_as_written("x" * 100_000 + "/y") == ["x" * 100_000 + "/y"]


def test_an_email_address_after_a_long_dotted_run_is_found_in_one_pass():
    """An e-mail's local part is at most 64 characters (RFC 5321): 100,000 characters of "a.a.a."
    are scanned once, not once from every letter (that took 4.5 s for 50,000)."""
    assert placeholders("a." * 50_000 + " bob@example.com") == Counter({"bob@example.com": 1})
    assert placeholders("www." * 25_000) == Counter()
    local = "x" * 64
    assert placeholders(f"write to {local}@example.com") == Counter({f"{local}@example.com": 1})
