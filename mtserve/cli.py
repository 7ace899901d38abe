"""The ``mtserve`` command: serve, translate, models, settings.

Every setting is also a flag (``--n-parallel 2`` for ``MTSERVE_N_PARALLEL``),
generated from the Settings class, so flags, environment and defaults are one
table.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

from mtserve import __version__
from mtserve.settings import Settings, settings_table

SERVICE_FIELDS = ("home", "model", "engine", "threads", "n_parallel", "ctx_per_slot",
                  "max_output_tokens", "max_queue", "request_timeout_s", "cache_size",
                  "segment_max_chars", "detect_prior", "log_level")
SERVER_FIELDS = ("host", "port", "char_limit", "batch_limit", "max_alternatives")


def _add_setting_flags(parser: argparse.ArgumentParser, names: Iterable[str]) -> None:
    group = parser.add_argument_group("settings (each also MTSERVE_<NAME>)")
    for name in names:
        field = Settings.model_fields[name]
        annotation = field.annotation
        kind = annotation if annotation in (int, float) else str
        group.add_argument(
            "--" + name.replace("_", "-"), dest=name, type=kind, default=None,
            help=field.description,
        )


def settings_from(args: argparse.Namespace) -> Settings:
    given = {
        name: value for name, value in vars(args).items()
        if name in Settings.model_fields and value is not None
    }
    return Settings(**given)


# --- commands -------------------------------------------------------------------------
def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from mtserve.api.app import create_app
    from mtserve.engines.factory import EngineConfigError
    from mtserve.logs import configure_logging
    from mtserve.models.store import ModelStoreError

    settings = settings_from(args)
    configure_logging(settings.log_level)
    try:
        app = create_app(settings)
    except (ModelStoreError, EngineConfigError) as exc:
        print(f"mtserve: {exc}", file=sys.stderr)
        return 2
    print(f"mtserve {__version__}: serving {settings.model} on http://{settings.host}:{settings.port}",
          file=sys.stderr)
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None,
                timeout_graceful_shutdown=10)
    return 0


def _read_lines(stream) -> Iterator[str]:
    for line in stream:
        yield line[:-1] if line.endswith("\n") else line


async def _translate_lines(settings: Settings, lines: Iterable[str], source: str, target: str,
                           fmt: str, out) -> None:
    from mtserve.service.runtime import Runtime

    runtime = Runtime(settings)
    await runtime.start()
    await runtime.wait_ready()
    if runtime.service is None:
        raise RuntimeError(runtime.load_error or "the engine did not start")
    service = runtime.service
    window = max(1, runtime.engine.max_concurrency)
    pending: list[asyncio.Task] = []

    async def one(text: str) -> str:
        if not text.strip():
            return text
        [result] = await service.translate([text], source, target, fmt)
        return result.text

    try:
        for line in lines:  # keep a window of lines in flight; print in input order
            pending.append(asyncio.create_task(one(line)))
            if len(pending) >= window:
                print(await pending.pop(0), file=out, flush=True)
        for task in pending:
            print(await task, file=out, flush=True)
    finally:
        await runtime.stop()


def cmd_translate(args: argparse.Namespace) -> int:
    from mtserve.engines.factory import EngineConfigError
    from mtserve.models.store import ModelStoreError
    from mtserve.service.scheduler import DeadlineExceeded
    from mtserve.service.translator import UnsupportedLanguage

    settings = settings_from(args)
    if args.text is not None:
        lines: Iterable[str] = [args.text]
    else:
        lines = _read_lines(sys.stdin)
    try:
        asyncio.run(_translate_lines(settings, lines, args.source, args.target, args.format, sys.stdout))
    except (ModelStoreError, EngineConfigError, UnsupportedLanguage, DeadlineExceeded) as exc:
        print(f"mtserve: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


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
        print(f"mtserve: {exc}", file=sys.stderr)
        return 2
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


# --- parser ----------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mtserve", description="Self-hosted machine translation.")
    parser.add_argument("--version", action="version", version=f"mtserve {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the WebUI and the API")
    _add_setting_flags(serve, SERVER_FIELDS + SERVICE_FIELDS)
    serve.set_defaults(func=cmd_serve)

    translate = commands.add_parser(
        "translate", help="translate TEXT, or stdin line by line (empty lines kept)"
    )
    translate.add_argument("text", nargs="?", help="text to translate; omit to read stdin")
    translate.add_argument("--source", "-s", default="auto", help="source language code or auto")
    translate.add_argument("--target", "-t", default="en", help="target language code")
    translate.add_argument("--format", choices=("text", "html"), default="text")
    _add_setting_flags(translate, SERVICE_FIELDS)
    translate.set_defaults(func=cmd_translate)

    models = commands.add_parser("models", help="the model store: list, pull, path")
    models_cmds = models.add_subparsers(dest="models_cmd", required=True)
    for name, help_text in (("list", "known and present models"),
                            ("pull", "fetch, join and verify a model"),
                            ("path", "print the file a --model value resolves to")):
        sub = models_cmds.add_parser(name, help=help_text)
        if name != "list":
            sub.add_argument("name", nargs="?", help="model name (default: the configured model)")
        _add_setting_flags(sub, ("home", "model"))
    models.set_defaults(func=cmd_models)

    settings = commands.add_parser("settings", help="print every setting with its value")
    settings.add_argument("--markdown", action="store_true", help="the README table")
    settings.set_defaults(func=cmd_settings)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
