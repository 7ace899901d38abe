"""``mtserve tm import|export|stats|remove|accept|search``: the translation memory under ``$MTSERVE_HOME``.

The operator's tool: what it imports belongs to the operator (visible to every
key), and it sees, exports and removes every key's entries too. ``accept``
turns suggestions (LibreTranslate's ``/suggest``) into entries; ``search``
shows what a segment would find, with the similarity scores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mtserve.cli.common import add_setting_flags, fail, settings_from


def add_parser(commands) -> None:
    parser = commands.add_parser("tm", help="translation memory: import, export, stats, remove, accept, search",
                                 description="The translation memory: earlier translations, looked up exactly "
                                             "or by similarity.")
    sub = parser.add_subparsers(dest="tm_cmd", required=True)
    imp = sub.add_parser("import", help="add the pairs of a .tmx, .po, .xliff or .tsv file")
    imp.add_argument("file", help="a .tmx, .po (msgid/msgstr; fuzzy entries skipped), .xliff/.xlf or .tsv "
                                  "(source<TAB>target) file")
    imp.add_argument("--source", "-s", help="source language (a .tsv needs it; a .tmx, .po or .xliff has "
                                            "its own)")
    imp.add_argument("--target", "-t", help="target language (as --source)")
    imp.add_argument("--origin", help="a label for where the pairs came from (default: the file's name); "
                                      "`tm remove --origin` removes them again")
    imp.add_argument("--format", choices=("tmx", "po", "tsv", "xliff"),
                     help="the file's format (default: its extension)")
    exp = sub.add_parser("export", help="write the entries to a TMX 1.4b file")
    exp.add_argument("file", help="the .tmx file to write")
    exp.add_argument("--source", "-s", help="only this source language")
    exp.add_argument("--target", "-t", help="only this target language")
    sub.add_parser("stats", help="entries, suggestions and origins per language pair")
    remove = sub.add_parser("remove", help="delete entries by origin, by id, or all of them")
    which = remove.add_mutually_exclusive_group(required=True)
    which.add_argument("--origin", help="the entries imported with this origin")
    which.add_argument("--id", type=int, nargs="+", dest="ids", metavar="N", help="these entry ids")
    which.add_argument("--all", action="store_true", dest="everything", help="every entry and suggestion")
    accept = sub.add_parser("accept", help="turn suggestions into entries (without ids: list them)")
    accept.add_argument("ids", type=int, nargs="*", metavar="ID", help="the suggestions to accept")
    accept.add_argument("--all", action="store_true", dest="everything", help="accept every suggestion")
    search = sub.add_parser("search", help="the entries most similar to a text, with their scores")
    search.add_argument("text", help="the source text")
    search.add_argument("--source", "-s", required=True, help="source language, e.g. zh")
    search.add_argument("--target", "-t", required=True, help="target language, e.g. en")
    search.add_argument("-k", type=int, default=None, help="how many (default: the tm_k setting)")
    search.add_argument("--min-similarity", type=float, default=None,
                        help="lowest score shown, 0-100 (default: the tm_min_similarity setting)")
    for command in sub.choices.values():
        add_setting_flags(command, ("home",))
    parser.set_defaults(func=cmd_tm)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def cmd_tm(args: argparse.Namespace) -> int:
    import sqlite3

    from mtserve.service.tm import ALL_OWNERS, AddReport, TMError, TranslationMemory, language_code
    from mtserve.service.tm_files import format_of, read_tm, write_tmx

    settings = settings_from(args)
    tm = TranslationMemory(settings.tm_db)
    try:
        if args.tm_cmd == "import":
            path = Path(args.file).expanduser()
            fmt = format_of(path.name, args.format)
            if not path.is_file():
                return fail(f"no file {path}; give a .tmx, .po, .xliff or .tsv file")
            found = read_tm(path.read_bytes(), fmt, args.source, args.target)
            report = AddReport(skipped=dict(found.skipped))
            tm.add(found.pairs, found.source_lang, found.target_lang, origin=args.origin or path.name,
                   report=report)
            print(f"{found.source_lang}->{found.target_lang} from {path.name}: {report.describe()}")
        elif args.tm_cmd == "export":
            data, count = write_tmx(tm.entries(args.source, args.target, owner=ALL_OWNERS),
                                    language_code(args.source) if args.source else None)
            Path(args.file).expanduser().write_bytes(data)
            print(f"{count} entries written to {args.file}")
        elif args.tm_cmd == "stats":
            rows = tm.stats(owner=ALL_OWNERS)
            if not rows:
                print(f"the translation memory {tm.path} is empty; fill it with `mtserve tm import`",
                      file=sys.stderr)
            for row in rows:
                print(f"{row.source_lang}->{row.target_lang}  {row.entries:>7} entries  "
                      f"{row.suggestions:>5} suggestions  {row.origins:>3} origins")
        elif args.tm_cmd == "remove":
            removed = tm.remove(origin=args.origin, ids=args.ids, everything=args.everything, owner=ALL_OWNERS)
            if not removed:
                return fail("no entry matched; see `mtserve tm stats` and `mtserve tm search`")
            print(f"removed {removed} entries")
        elif args.tm_cmd == "accept":
            if not args.ids and not args.everything:
                pending = list(tm.entries(owner=ALL_OWNERS, suggestions=True))
                if not pending:
                    print("no suggestions waiting", file=sys.stderr)
                for entry in pending:
                    print(f"{entry.id}\t{entry.source_lang}->{entry.target_lang}\t{_one_line(entry.source)}\t"
                          f"{_one_line(entry.target)}\t{entry.origin}")
                return 0
            accepted = tm.accept(None if args.everything else args.ids)
            print(f"accepted {accepted} suggestions")
        elif args.tm_cmd == "search":
            source = language_code(args.source, "source language")
            target = language_code(args.target, "target language")
            k = settings.tm_k if args.k is None else args.k
            floor = settings.tm_min_similarity if args.min_similarity is None else args.min_similarity
            matches = tm.similar(args.text, source, target, k=k, min_similarity=floor, owner=ALL_OWNERS,
                                 candidates=settings.tm_candidates)
            if not matches:
                print(f"no entry scores {floor:g} or more", file=sys.stderr)
            for match in matches:
                entry = match.entry
                print(f"{match.score:5.1f}  {entry.id}\t{_one_line(entry.source)}\t{_one_line(entry.target)}")
    except (TMError, OSError, sqlite3.Error) as exc:
        return fail(exc)
    finally:
        tm.close()
    return 0
