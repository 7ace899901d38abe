"""The ``mtserve`` command: serve, translate, models, settings.

Every setting is also a flag (``--n-parallel 2`` for ``MTSERVE_N_PARALLEL``),
generated from the Settings class, so flags, environment and defaults are one
table.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import typing
from typing import Iterable, Iterator

from mtserve import __version__
from mtserve.settings import Settings, settings_table

SERVICE_FIELDS = ("home", "model", "engine", "threads", "n_parallel", "ctx_per_slot", "prompt_cache_ram_mib",
                  "queue_ahead", "max_output_tokens", "max_queue", "request_timeout_s", "cache_size",
                  "segment_max_chars", "detect_prior", "log_level",
                  # seq2seq engines and the dynamic batcher
                  "max_batch_size", "batch_type", "max_queue_delay_ms", "inter_threads", "num_beams",
                  "compute_type", "onnx_inter_op_threads", "onnx_graph_optimization",
                  # quality: terminology and output checks
                  "glossary_file", "guardrails", "script_grammar",
                  # GPUs: the vllm engine, llama.cpp offload, the device of vllm and ctranslate2
                  "device", "gpu_layers", "gpu_memory_utilization", "max_num_seqs", "max_model_len",
                  "dtype", "quantization", "sampling")
SERVER_FIELDS = ("host", "port", "char_limit", "batch_limit", "max_alternatives", "max_body_bytes",
                 "api_keys", "require_api_key", "anonymous_rpm", "cors_origins", "shutdown_grace_s")
# Bounds a document is read within (the CLI's translate-file takes them too).
FILES_LIMIT_FIELDS = ("files_max_expanded_mb", "files_max_archive_entries", "files_max_xml_mb",
                      "files_max_xml_nodes", "files_max_depth", "files_max_pdf_pages",
                      "files_max_pdf_page_chars", "files_max_pdf_stream_mb", "files_parse_workers",
                      "files_parse_memory_mb", "files_parse_cpu_s", "files_parse_timeout_s")
FILES_FIELDS = ("files_formats", "files_max_mb", "files_max_segments", "files_ttl_s", "files_jobs",
                "files_queue", "files_chunk") + FILES_LIMIT_FIELDS  # documents: /translate_file and /jobs
RAY_FIELDS = ("ray", "ray_address", "ray_min_replicas", "ray_max_replicas", "ray_target_ongoing_requests",
              "ray_replica_cpus")  # scaling out: mtserve serve --ray
FLAG_ALIASES = {"ray_address": ("--address",)}  # `mtserve serve --ray --address auto`


def _add_setting_flags(parser: argparse.ArgumentParser, names: Iterable[str]) -> None:
    group = parser.add_argument_group("settings (each also MTSERVE_<NAME>)")
    for name in names:
        field = Settings.model_fields[name]
        flags = ("--" + name.replace("_", "-"), *FLAG_ALIASES.get(name, ()))
        if field.annotation is bool:
            group.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction, default=None,
                               help=field.description)
            continue
        if typing.get_origin(field.annotation) is typing.Literal:
            group.add_argument(*flags, dest=name, choices=typing.get_args(field.annotation), default=None,
                               help=field.description)
            continue
        kind = field.annotation if field.annotation in (int, float) else str
        group.add_argument(*flags, dest=name, type=kind, default=None, help=field.description)


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
    if settings.ray:
        return _serve_on_ray(settings)
    try:
        app = create_app(settings)
    except (ModelStoreError, EngineConfigError) as exc:
        print(f"mtserve: {exc}", file=sys.stderr)
        return 2
    print(f"mtserve {__version__}: serving {settings.model} on http://{settings.host}:{settings.port}",
          file=sys.stderr)
    # uvicorn drains in-flight requests on SIGTERM, then re-raises the signal so the
    # previous handler decides the exit; a drained shutdown is a success, so exit 0.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    # The event loop and HTTP parser are named, not "auto": installing an extra (Ray brings uvloop
    # and httptools) must not change the server that the tests and benchmarks measured.
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None, loop="asyncio", http="h11",
                timeout_graceful_shutdown=settings.shutdown_grace_s)
    return 0


def _serve_on_ray(settings: Settings) -> int:
    from mtserve.deploy.ray_serve import RayUnavailable, run

    try:
        return run(settings)  # bad replica counts (ValueError) are refused before Ray starts
    except (RayUnavailable, ValueError) as exc:
        print(f"mtserve: {exc}", file=sys.stderr)
        return 2


def _read_lines(stream) -> Iterator[str]:
    for line in stream:
        yield line[:-1] if line.endswith("\n") else line


async def _translate_lines(settings: Settings, lines: Iterable[str], source: str, target: str,
                           fmt: str, out) -> None:
    from mtserve.engines.base import in_flight_capacity
    from mtserve.service.runtime import Runtime

    runtime = Runtime(settings)
    await runtime.start()
    await runtime.wait_ready()
    if runtime.service is None:
        raise RuntimeError(runtime.load_error or "the engine did not start")
    service = runtime.service
    # enough lines in flight to fill every slot or batch, within admission
    window = min(in_flight_capacity(runtime.engine), settings.max_queue)
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


def cmd_keys(args: argparse.Namespace) -> int:
    from mtserve.service.access import KeyStore

    settings = settings_from(args)
    store = KeyStore(settings.keys_db)
    if args.keys_cmd == "add":
        secret, key = store.add(name=args.name, rpm=args.rpm)
        print(f"id {key.id}  name {key.name or '-'}  rpm {key.rpm or 'unlimited'}")
        print(secret)
        print("Store this key now: only its hash is kept. Serve with --api-keys to enforce keys.",
              file=sys.stderr)
    elif args.keys_cmd == "list":
        for key in store.list():
            rpm = key.rpm or "unlimited"
            print(f"{key.id}  {key.name or '-':<20} rpm {rpm}")
    elif args.keys_cmd == "remove":
        if not store.remove(args.id):
            print(f"mtserve: no key with id {args.id!r}; see `mtserve keys list`", file=sys.stderr)
            return 2
        print(f"removed {args.id}")
    return 0


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
    _add_setting_flags(serve, SERVER_FIELDS + SERVICE_FIELDS + FILES_FIELDS + RAY_FIELDS)
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

    keys = commands.add_parser("keys", help="API keys: add, list, remove")
    keys_cmds = keys.add_subparsers(dest="keys_cmd", required=True)
    add = keys_cmds.add_parser("add", help="create a key (printed once)")
    add.add_argument("--name", default="", help="a label for the key")
    add.add_argument("--rpm", type=int, default=0, help="requests per minute (0 = unlimited)")
    keys_cmds.add_parser("list", help="keys by id (secrets are never shown again)")
    remove = keys_cmds.add_parser("remove", help="revoke a key")
    remove.add_argument("id", help="the key's id from `keys list`")
    for sub in keys_cmds.choices.values():
        _add_setting_flags(sub, ("home",))
    keys.set_defaults(func=cmd_keys)

    settings = commands.add_parser("settings", help="print every setting with its value")
    settings.add_argument("--markdown", action="store_true", help="the README table")
    settings.set_defaults(func=cmd_settings)

    from mtserve.bench.cli import add_parser as add_bench_parser  # light: imports nothing heavy

    add_bench_parser(commands)

    from mtserve.cli_eval import add_parser as add_eval_parser  # light too: sacrebleu loads on use

    add_eval_parser(commands, _add_setting_flags, SERVICE_FIELDS)

    from mtserve.convert import add_parser as add_convert_parser  # light: converters load on use

    add_convert_parser(commands)

    from mtserve.cli_files import add_parser as add_files_parser  # light: format libraries load on use

    add_files_parser(commands, _add_setting_flags, SERVICE_FIELDS)

    from mtserve.cli_glossary import add_parser as add_glossary_parser  # light: the standard library only

    add_glossary_parser(commands, _add_setting_flags)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
