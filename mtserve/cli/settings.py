"""``mtserve settings``: every setting with its value; ``--markdown``, the table of them;
``--page``, the whole settings reference, docs/settings.md."""

from __future__ import annotations

import argparse
import functools
from typing import Mapping

from mtserve.settings import Settings, settings_table

# Top-level commands in the order the table names them.
COMMAND_ORDER = ("serve", "translate", "translate-file", "eval", "bench", "models", "keys", "glossary", "tm",
                 "convert", "settings")

PAGE_HEADER = """\
# Settings

Every setting has one default, in the `Settings` object (`mtserve/settings.py`). An environment
variable `MTSERVE_<NAME>` overrides the default, and a command-line flag overrides the
environment. The flag is taken by the commands listed beside it (a setting without a flag is set
through its environment variable only); a setting that is on or off also has a `--no-` flag.
`mtserve settings` prints every setting with the value it has now.

This page is generated: `mtserve settings --page > docs/settings.md` writes it again, and
`tests/test_docs.py` fails when it differs from what the code says.

"""


def add_parser(commands) -> None:
    settings = commands.add_parser("settings", help="print every setting with its value")
    output = settings.add_mutually_exclusive_group()
    output.add_argument("--markdown", action="store_true", help="the table of settings, as Markdown")
    output.add_argument("--page", action="store_true", help="the settings reference page, docs/settings.md")
    # Every command's parser, to read their flags from: the groups after this one fill it in too.
    settings.set_defaults(func=functools.partial(cmd_settings, commands=commands.choices))


def cmd_settings(args: argparse.Namespace, commands: Mapping[str, argparse.ArgumentParser]) -> int:
    if args.page:
        print(settings_page(commands), end="")
    elif args.markdown:
        print(settings_markdown(commands), end="")
    else:
        current = Settings()
        for env, _default, description in settings_table():
            name = env.removeprefix("MTSERVE_").lower()
            print(f"{env}={getattr(current, name)}    # {description}")
    return 0


def command_parsers(parser: argparse.ArgumentParser) -> Mapping[str, argparse.ArgumentParser]:
    """The top-level commands of ``mtserve``'s parser (``mtserve.cli.build_parser()``), by name."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def setting_flags(commands: Mapping[str, argparse.ArgumentParser]) -> dict[str, tuple[list[str], list[str]]]:
    """For each setting that has a flag: (its flags, the top-level commands that take them)."""
    found: dict[str, tuple[list[str], list[str]]] = {}

    def walk(parser: argparse.ArgumentParser, command: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, command or name)
            elif action.dest in Settings.model_fields and action.option_strings:
                flags, takers = found.setdefault(action.dest, ([], []))
                for flag in action.option_strings:
                    if not flag.startswith("--no-") and flag not in flags:
                        flags.append(flag)
                if command not in takers:
                    takers.append(command)

    for name, parser in commands.items():
        walk(parser, name)
    for _flags, takers in found.values():
        takers.sort(key=lambda name: COMMAND_ORDER.index(name) if name in COMMAND_ORDER else len(COMMAND_ORDER))
    return found


def settings_markdown(commands: Mapping[str, argparse.ArgumentParser]) -> str:
    """The table of every setting: variable, flag, the commands that take it, default, meaning."""
    flags = setting_flags(commands)
    lines = ["| environment variable | flag | commands | default | meaning |", "|---|---|---|---|---|"]
    for env, default, description in settings_table():
        name = env.removeprefix("MTSERVE_").lower()
        names, takers = flags.get(name, ([], []))
        flag = ", ".join(f"`{f}`" for f in names) or "–"
        shown = f"`{default}`" if default else "(empty)"
        lines.append(f"| `{env}` | {flag} | {', '.join(takers) or '–'} | {shown} | {description} |")
    return "\n".join(lines) + "\n"


def settings_page(commands: Mapping[str, argparse.ArgumentParser]) -> str:
    """docs/settings.md: a short header, then the table."""
    return PAGE_HEADER + settings_markdown(commands)
