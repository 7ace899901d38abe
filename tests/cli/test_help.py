"""Each command's --help: its own options, each with one line of help and its default; the engine and
server tuning under `mtserve serve --help` and every command's --help-all."""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest

from mtserve.cli import build_parser, main
from mtserve.cli.common import DefaultsHelp, parsers_of


def help_of(*command: str) -> str:
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), pytest.raises(SystemExit) as exit:
        main([*command])
    assert exit.value.code == 0
    return shown.getvalue()


def options(parser: argparse.ArgumentParser | None = None) -> list[tuple[str, argparse.ArgumentParser,
                                                                        argparse.Action]]:
    """Every option and argument of every command and subcommand, less -h itself."""
    return [(name, each, action) for name, each in parsers_of(parser or build_parser())
            for action in each._actions if not isinstance(action, argparse._HelpAction)]


def test_every_option_of_every_command_has_one_line_of_help():
    found = options()
    assert len(found) > 300  # serve alone has over a hundred
    for name, _, action in found:
        if isinstance(action, argparse._SubParsersAction):  # the commands: each says what it does
            for choice in action._choices_actions:
                assert choice.help and choice.help.strip(), f"{name} {choice.dest}"
            continue
        text = getattr(action, "full_help", action.help)  # a tuning flag's help, which --help leaves out
        assert text and text != argparse.SUPPRESS and text.strip(), f"{name} {action.option_strings or action.dest}"
        assert "\n" not in text, f"{name} {action.option_strings}"


def test_every_option_with_a_default_says_it():
    root = build_parser()
    settings = {id(action) for _, parser in parsers_of(root) for group in parser._action_groups
                if "MTSERVE_<NAME>" in (group.title or "") for action in group._group_actions}
    assert len(settings) > 200
    for name, parser, action in options(root):
        setting = id(action) in settings
        formatter = DefaultsHelp(parser.prog)
        hidden = getattr(action, "full_help", None)
        if hidden is not None:
            action = argparse.Action(action.option_strings, action.dest, default=action.default, help=hidden)
        text = formatter._get_help_string(action) or ""
        worth_saying = action.default not in (None, False, "", [], argparse.SUPPRESS)
        if setting or (worth_saying and action.option_strings):
            assert "default" in text, f"{name} {action.option_strings}: {text}"


def test_translate_shows_its_own_options_and_the_tuning_under_help_all():
    short = help_of("translate", "--help")
    assert len(short.splitlines()) < 70, short
    for flag in ("--source", "--target", "--format", "--context", "--no-tm", "--url", "--api-key", "--model"):
        assert flag in short
    assert "--threads" not in short and "--n-parallel" not in short and "--max-batch-size" not in short
    assert "(default: auto)" in short and "(default: en)" in short and "(default: text)" in short
    assert "mtserve translate --help-all" in short
    every = help_of("translate", "--help-all")
    assert "--threads" in every and "--n-parallel" in every and "engine tuning, in process" in every


@pytest.mark.parametrize("command", ["translate-file", "eval"])
def test_other_in_process_commands_keep_their_tuning_for_help_all(command):
    short = help_of(command, "--help")
    assert "--model" in short and "--threads" not in short
    assert "--threads" in help_of(command, "--help-all")


def test_serve_shows_the_tuning_itself():
    text = help_of("serve", "--help")
    for flag in ("--host", "--port", "--threads", "--n-parallel", "--max-queue", "--files-jobs", "--ray"):
        assert flag in text
    assert text.startswith("usage: mtserve serve [--host HOST] [--port PORT] [--model MODEL] [option ...]")


def test_bench_describes_its_workloads_and_file_modes():
    text = " ".join(help_of("bench", "--help").split())
    assert "--workload {short,paragraph,long,file} what each request sends: short (one HSK sentence)" in text
    assert "how --file is cut into requests: one per non-empty line" in text
    assert "(default: short)" in text and "(default: lines)" in text
