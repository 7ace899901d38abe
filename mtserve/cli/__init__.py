"""The ``mtserve`` command: one module per command group, and common flags in ``common``.

serve | translate | translate-file | models | keys | glossary | tm | settings | bench | eval | convert.
Each module has an ``add_parser(commands)``; importing one is light, since the
heavy libraries (engines, document formats, sacrebleu) load when a command runs.
"""

from __future__ import annotations

import argparse

from mtserve import __version__
from mtserve.cli import (
    bench,
    convert,
    evaluate,
    files,
    glossary,
    keys,
    models,
    serve,
    settings,
    tm,
    translate,
)
from mtserve.cli.common import fail, finish_help, settings_from
from mtserve.extras import extra_for

__all__ = ["build_parser", "main", "settings_from"]

COMMAND_GROUPS = (serve, translate, models, keys, settings, bench, evaluate, convert, files, glossary, tm)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mtserve", description="Self-hosted machine translation.")
    parser.add_argument("--version", action="version", version=f"mtserve {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for group in COMMAND_GROUPS:
        group.add_parser(commands)
    finish_help(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ModuleNotFoundError as exc:  # an optional extra that no option checked for beforehand
        if (line := extra_for(exc.name)) is None:
            raise
        return fail(line)

