"""``mtserve settings [--markdown]``: every setting with its value, or README's table."""

from __future__ import annotations

import argparse

from mtserve.settings import Settings, settings_table


def add_parser(commands) -> None:
    settings = commands.add_parser("settings", help="print every setting with its value")
    settings.add_argument("--markdown", action="store_true", help="the README table")
    settings.set_defaults(func=cmd_settings)


def cmd_settings(args: argparse.Namespace) -> int:
    rows = settings_table()
    if args.markdown:
        print("| environment variable | flag | default | meaning |")
        print("|---|---|---|---|")
        for env, default, description in rows:
            flag = "--" + env.removeprefix("MTSERVE_").lower().replace("_", "-")
            print(f"| `{env}` | `{flag}` | `{default}` | {description} |")
    else:
        current = Settings()
        for env, _default, description in rows:
            name = env.removeprefix("MTSERVE_").lower()
            print(f"{env}={getattr(current, name)}    # {description}")
    return 0
