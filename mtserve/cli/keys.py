"""``mtserve keys add|list|remove``: API keys (only their hashes are stored)."""

from __future__ import annotations

import argparse
import sys

from mtserve.cli.common import add_setting_flags, fail, settings_from
from mtserve.service.access import QUOTA_PERIODS


def add_parser(commands) -> None:
    keys = commands.add_parser("keys", help="API keys: add, list, remove")
    keys_cmds = keys.add_subparsers(dest="keys_cmd", required=True)
    add = keys_cmds.add_parser("add", help="create a key (printed once)")
    add.add_argument("--name", default="", help="a label for the key")
    add.add_argument("--rpm", type=int, default=0, help="requests per minute (0 = unlimited)")
    add.add_argument("--char-quota", type=int, default=0,
                     help="characters this key may translate per period, on every API (0 = unlimited)")
    add.add_argument("--period", choices=QUOTA_PERIODS, default="month",
                     help="the quota's period: month (calendar, UTC; the default), day, or total")
    keys_cmds.add_parser("list", help="keys by id (secrets are never shown again)")
    remove = keys_cmds.add_parser("remove", help="revoke a key")
    remove.add_argument("id", help="the key's id from `keys list`")
    for sub in keys_cmds.choices.values():
        add_setting_flags(sub, ("home",))
    keys.set_defaults(func=cmd_keys)


def cmd_keys(args: argparse.Namespace) -> int:
    from mtserve.service.access import KeyStore

    settings = settings_from(args)
    store = KeyStore(settings.keys_db)
    if args.keys_cmd == "add":
        secret, key = store.add(name=args.name, rpm=args.rpm, char_quota=args.char_quota, period=args.period)
        print(f"id {key.id}  name {key.name or '-'}  rpm {key.rpm or 'unlimited'}  {_quota(key)}")
        print(secret)
        print("Store this key now: only its hash is kept. Serve with --api-keys to enforce keys.",
              file=sys.stderr)
    elif args.keys_cmd == "list":
        for key in store.list():
            rpm = key.rpm or "unlimited"
            used = f" ({store.used(key):,} used)" if key.char_quota else ""
            print(f"{key.id}  {key.name or '-':<20} rpm {rpm}  {_quota(key)}{used}")
    elif args.keys_cmd == "remove":
        if not store.remove(args.id):
            return fail(f"no key with id {args.id!r}; see `mtserve keys list`")
        print(f"removed {args.id}")
    return 0


def _quota(key) -> str:
    if not key.char_quota:
        return "chars unlimited"
    return f"{key.char_quota:,} chars per {key.period}" if key.period != "total" else f"{key.char_quota:,} chars"
