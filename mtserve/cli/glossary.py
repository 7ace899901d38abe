"""``mtserve glossary add|list|show|remove``: named glossaries under ``$MTSERVE_HOME``.

The same store (``glossaries.sqlite3``) as DeepL's ``/v2/glossaries`` and the
``glossary_id`` of ``/translate``: a glossary added here is listed by
``GET /v2/glossaries`` and usable at once by a running server, and one made
through the API shows up here. Entries are TSV (``term<TAB>translation``), CSV
or a JSON object, read from a file or, with ``-``, from stdin.

The CLI is the operator: it lists, shows and removes every glossary, whoever
made it, and the glossaries it adds belong to the operator, which API callers
may read and use but not delete. ``list`` names each glossary's owner
(``operator`` or the ``key:ID`` that made it through the API).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mtserve.cli.common import add_setting_flags, fail, settings_from

FORMAT_BY_SUFFIX = {".tsv": "tsv", ".txt": "tsv", ".csv": "csv", ".json": "json"}


def add_parser(commands) -> None:
    parser = commands.add_parser("glossary", help="named glossaries: add, list, show, remove",
                                 description="Named glossaries, shared with DeepL's /v2/glossaries and "
                                             "/translate's glossary_id.")
    sub = parser.add_subparsers(dest="glossary_cmd", required=True)
    add = sub.add_parser("add", help="create a glossary from a TSV, CSV or JSON file (or - for stdin)")
    add.add_argument("name", help="a label for the glossary")
    add.add_argument("file", help="entries: term<TAB>translation lines (.tsv), .csv, or a .json object; "
                                  "- for stdin")
    add.add_argument("--source", "-s", required=True, help="source language code, e.g. zh")
    add.add_argument("--target", "-t", required=True, help="target language code, e.g. en")
    add.add_argument("--format", choices=("tsv", "csv", "json"), default=None,
                     help="entries format (default: from the file's extension; tsv for stdin)")
    sub.add_parser("list", help="id, name, language pair, entry count, creation time and owner of each glossary")
    show = sub.add_parser("show", help="print a glossary's entries as TSV")
    show.add_argument("id", help="the glossary's id from `glossary list`")
    remove = sub.add_parser("remove", help="delete a glossary")
    remove.add_argument("id", help="the glossary's id from `glossary list`")
    for command in sub.choices.values():
        add_setting_flags(command, ("home",))
    add_setting_flags(add, ("glossary_max_entries",))
    parser.set_defaults(func=cmd_glossary)


def _read_entries(file: str, fmt: str | None) -> tuple[str, str]:
    """The entries text and its format; a GlossaryError for a missing or unreadable file."""
    from mtserve.service.glossary import GlossaryError

    if file == "-":
        return sys.stdin.read(), fmt or "tsv"
    path = Path(file).expanduser()
    if not path.is_file():
        raise GlossaryError(f"no entries file {path}; give a .tsv, .csv or .json file, or - for stdin")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise GlossaryError(f"{path} is not UTF-8 text; save it as UTF-8") from None
    return text, fmt or FORMAT_BY_SUFFIX.get(path.suffix.lower(), "tsv")


def cmd_glossary(args: argparse.Namespace) -> int:
    import sqlite3

    from mtserve.service.glossary import GlossaryError, format_entries, parse_entries
    from mtserve.service.glossary_store import GlossaryStore

    settings = settings_from(args)
    store = GlossaryStore(settings.glossaries_db)
    try:
        if args.glossary_cmd == "add":
            text, fmt = _read_entries(args.file, args.format)
            cap = settings.glossary_max_entries
            glossary = store.create(args.name, args.source.strip().lower(), args.target.strip().lower(),
                                    parse_entries(text, fmt, max_entries=cap), max_entries=cap)
            print(f"{glossary.id}  {glossary.name}  {glossary.source_lang}->{glossary.target_lang}  "
                  f"{glossary.entry_count} entries")
        elif args.glossary_cmd == "list":
            glossaries = store.list()
            if not glossaries:
                print(f"no glossaries in {store.path}; add one with `mtserve glossary add`", file=sys.stderr)
            for g in glossaries:
                pair = g.pairs
                owner = f"key:{g.owner}" if g.owner else "operator"
                print(f"{g.id}  {g.name:<20} {pair:<8} {g.entry_count:>5} entries  {g.created}  {owner}")
        elif args.glossary_cmd == "show":
            sys.stdout.write(format_entries(store.get(args.id).entries, "tsv"))
        elif args.glossary_cmd == "remove":
            if not store.delete(args.id):
                return fail(f"no glossary with id {args.id!r}; see `mtserve glossary list`")
            print(f"removed {args.id}")
    except (GlossaryError, OSError, UnicodeDecodeError, sqlite3.Error) as exc:
        return fail(exc)
    return 0
