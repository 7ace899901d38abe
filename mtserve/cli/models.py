"""``mtserve models list|pull|path``: the model store."""

from __future__ import annotations

import argparse
import sys

from mtserve.cli.common import add_setting_flags, fail, settings_from


def add_parser(commands) -> None:
    models = commands.add_parser("models", help="the model store: list, pull, path")
    models_cmds = models.add_subparsers(dest="models_cmd", required=True)
    for name, help_text in (("list", "known and present models"),
                            ("pull", "fetch, join and verify a model"),
                            ("path", "print the file a --model value resolves to")):
        sub = models_cmds.add_parser(name, help=help_text)
        if name != "list":
            sub.add_argument("name", nargs="?", help="model name (default: the configured model)")
        add_setting_flags(sub, ("home", "model"))
    models.set_defaults(func=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    from mtserve.models.store import ModelStore, ModelStoreError

    settings = settings_from(args)
    store = ModelStore(settings.models_dir)
    try:
        if args.models_cmd == "list":
            print(f"store: {store.models_dir}")
            for entry, present in store.list():
                mark = "present" if present else "-"
                size = f"{entry.size / 1e6:,.0f} MB" if entry.size else "?"
                default = " (default)" if entry.default else ""
                print(f"  {entry.name:<40} {mark:<8} {size:>9}  {entry.description}{default}")
        elif args.models_cmd == "path":
            print(store.resolve(args.name or settings.model).path)
        elif args.models_cmd == "pull":
            name = args.name or settings.model
            if store.is_present(name):
                print(f"{name} is already in the store: {store.path(name)}")
                return 0
            path = store.pull(name, progress_factory=_tqdm_progress)
            print(f"{name}: verified and stored at {path}")
    except ModelStoreError as exc:
        return fail(exc)
    return 0


def _tqdm_progress(total: int, name: str):
    from tqdm import tqdm

    bar = tqdm(total=total or None, unit="B", unit_scale=True, unit_divisor=1024,
               desc=f"pull {name}", file=sys.stderr)

    def update(n: int) -> None:
        bar.update(n)
        if total and bar.n >= total:
            bar.close()

    return update
