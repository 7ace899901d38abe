"""What every command shares: the settings flags, generated from the Settings class, and help.

Every setting is also a flag (``--n-parallel 2`` for ``MTSERVE_N_PARALLEL``), so
flags, environment and defaults are one table. The field groups say which
settings each command takes.

Each command's ``--help`` shows its own options; the engine and server tuning it also takes
(``--threads``, ``--n-parallel``...) is listed by ``--help-all``, and by ``mtserve serve --help``,
where it is the subject. Every option's help is one line, with its default.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import typing
from typing import Iterable

from mtserve.settings import Settings, settings_table

SERVICE_FIELDS = ("home", "model", "engine", "threads", "n_parallel", "ctx_per_slot", "prompt_cache_ram_mib",
                  "llama_params", "queue_ahead", "max_output_tokens", "max_queue", "max_queue_per_caller",
                  "request_timeout_s", "cache_size",
                  "segment_max_chars", "segment_budget_chars", "paragraph_slots",
                  "detect_prior", "log_level", "log_format",
                  # seq2seq engines and the dynamic batcher
                  "max_batch_size", "batch_type", "max_queue_delay_ms", "inter_threads", "num_beams",
                  "compute_type", "onnx_inter_op_threads", "onnx_graph_optimization",
                  # quality: terminology and output checks
                  "glossary_file", "guardrails", "script_grammar", "markup_grammar", "markup_mode",
                  # GPUs: the vllm engine, llama.cpp offload, the device of vllm and ctranslate2
                  "device", "gpu_layers", "gpu_memory_utilization", "max_num_seqs", "max_model_len",
                  "dtype", "quantization", "sampling")
SERVER_FIELDS = ("host", "port", "max_connections", "idle_timeout_s", "header_timeout_s", "body_timeout_s",
                 "write_timeout_s", "send_buffer_bytes", "forwarded_allow_ips", "char_limit", "batch_limit",
                 "max_alternatives", "max_body_bytes", "max_request_line_bytes", "max_header_bytes", "max_headers",
                 "json_max_depth", "api_keys", "require_api_key", "metrics_require_key",
                 "anonymous_rpm", "rate_limit_callers", "cors_origins",
                 "shutdown_grace_s", "glossaries_per_key", "glossary_bytes_per_key", "glossary_max_entries",
                 "glossary_request_entries", "style_rules_per_key",
                 # what API keys may store in the translation memory
                 "tm_entries_per_key", "tm_bytes_per_key", "tm_suggestions_per_key", "tm_suggestion_bytes_per_key")
# Bounds a document is read within (the CLI's translate-file takes them too).
FILES_LIMIT_FIELDS = ("files_max_expanded_mb", "files_max_archive_entries", "files_max_xml_mb",
                      "files_max_xml_nodes", "files_max_depth", "files_max_pdf_pages",
                      "files_max_pdf_page_chars", "files_max_pdf_stream_mb", "files_parse_workers",
                      "files_parse_memory_mb", "files_parse_cpu_s", "files_parse_timeout_s")
FILES_FIELDS = ("files_formats", "files_max_mb", "files_max_segments", "files_ttl_s", "files_jobs",
                "files_queue", "files_chunk",
                "files_xlsx_sheet_names")  # documents: /translate_file and /jobs
CLIENT_FIELDS = ("url", "api_key")  # translate and translate-file through a running server
RAY_FIELDS = ("ray", "ray_address", "ray_min_replicas", "ray_max_replicas", "ray_target_ongoing_requests",
              "ray_replica_cpus")  # scaling out: mtserve serve --ray
FLAG_ALIASES = {"ray_address": ("--address",)}  # `mtserve serve --ray --address auto`
# What a command that runs the engine in its process shows in its own --help: which model, where it lives.
MODEL_FIELDS = ("home", "model", "engine", "glossary_file")
SETTINGS_TITLE = "settings (each also MTSERVE_<NAME>)"
TUNING_TITLE = "engine tuning, in process (each also MTSERVE_<NAME>)"


def add_setting_flags(parser: argparse.ArgumentParser, names: Iterable[str], title: str = SETTINGS_TITLE,
                      *, shown: bool = True) -> None:
    """A flag for each setting of ``names``, in a group of its own; ``shown=False``: listed by
    ``--help-all`` only."""
    group = parser.add_argument_group(title)
    for name in names:
        field = Settings.model_fields[name]
        flags = ("--" + name.replace("_", "-"), *FLAG_ALIASES.get(name, ()))
        if field.annotation is bool:
            action = group.add_argument(*flags, dest=name, action=argparse.BooleanOptionalAction, default=None,
                                        help=setting_help(name))
        elif typing.get_origin(field.annotation) is typing.Literal:
            action = group.add_argument(*flags, dest=name, choices=typing.get_args(field.annotation),
                                        default=None, help=setting_help(name))
        else:
            kind = field.annotation if field.annotation in (int, float) else str
            action = group.add_argument(*flags, dest=name, type=kind, default=None, help=setting_help(name))
        if not shown:
            hide(action)


def add_service_flags(parser: argparse.ArgumentParser, extra: Iterable[str] = ()) -> None:
    """The service settings of a command that runs the engine in its process: the model's in its help,
    the tuning (and ``extra``) under --help-all."""
    add_setting_flags(parser, MODEL_FIELDS, "the model, in process (each also MTSERVE_<NAME>)")
    tuning = [name for name in SERVICE_FIELDS if name not in MODEL_FIELDS] + list(extra)
    add_setting_flags(parser, tuning, TUNING_TITLE, shown=False)


# --- help ------------------------------------------------------------------------------------------
# A sentence ends at a full stop after a word (not "e.g." or "i.e.") and before a capital, a number or a bracket.
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]'`])(?<!e\.g)(?<!i\.e)\.\s+(?=[A-Z0-9(`'])")


@functools.cache
def _defaults() -> dict[str, str]:
    return {env.removeprefix("MTSERVE_").lower(): default for env, default, _ in settings_table()}


def setting_help(name: str) -> str:
    """One line: the first sentence of the setting's description, and its default."""
    defaults = _defaults()
    description = Settings.model_fields[name].description or name.replace("_", " ")
    first = _SENTENCE_END.split(description, maxsplit=1)[0].rstrip(".")
    if "(default" not in first:  # threads: "(default: all cores)" says it in its own words
        default = defaults[name]
        shown = "empty" if default == "" else default.lower() if default in ("True", "False", "None") else default
        first += f" (default: {shown})"
    return first.replace("%", "%%")


def hide(action: argparse.Action) -> None:
    """Leave ``action`` out of --help; --help-all lists it."""
    action.full_help = action.help  # type: ignore[attr-defined]
    action.help = argparse.SUPPRESS


class DefaultsHelp(argparse.HelpFormatter):
    """Help that ends each option's line with its default, unless the line says it already or there is
    none worth saying (an absent value, an off switch)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default in (None, False, "", argparse.SUPPRESS) or action.default == []:
            return text
        if not action.option_strings and action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE):
            return text
        return text + " (default: %(default)s)"


class RawDescriptionDefaultsHelp(DefaultsHelp, argparse.RawDescriptionHelpFormatter):
    """The same, for a command whose description or epilog is laid out by hand (examples)."""


class HelpAll(argparse.Action):
    """``--help-all``: the help with every option, the tuning ``--help`` leaves out included."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        for action in parser._actions:
            if hasattr(action, "full_help"):
                action.help = action.full_help
        parser.print_help()
        parser.exit()


def parsers_of(parser: argparse.ArgumentParser, name: str = "mtserve") -> Iterable[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and every command and subcommand under it, with its name (``tm import``)."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from parsers_of(sub, f"{name} {sub_name}")


def finish_help(parser: argparse.ArgumentParser) -> None:
    """Every command's help: the defaults on each line, ``--help-all``, and a pointer to it where
    ``--help`` leaves options out."""
    for name, each in parsers_of(parser):
        if each is parser:
            continue
        if not issubclass(each.formatter_class, DefaultsHelp):
            raw = issubclass(each.formatter_class, argparse.RawDescriptionHelpFormatter)
            each.formatter_class = RawDescriptionDefaultsHelp if raw else DefaultsHelp
        each.add_argument("--help-all", action=HelpAll,
                          help="show this help with every option, the tuning that --help leaves out included")
        if any(hasattr(action, "full_help") for action in each._actions):
            more = f"More options (engine tuning, in process): {name} --help-all"
            each.epilog = f"{each.epilog}\n\n{more}" if each.epilog else more


def add_guidance_flags(parser: argparse.ArgumentParser, file_default: bool = False) -> None:
    """``--context``: DeepL's field, for the CLI. It goes into every segment's prompt, untranslated."""
    default = (" (default: the format's own, e.g. \"These are user-interface strings of a software "
               "application.\" for a .po file)") if file_default else ""
    parser.add_argument("--context", default="", metavar="TEXT",
                        help="what the text is, to translate it by: informs the translation, and is "
                             "neither translated nor repeated" + default)


def guidance_from(args: argparse.Namespace):
    from mtserve.engines.base import Guidance

    return Guidance(context=args.context) if args.context.strip() else None


def in_process_flags(args: argparse.Namespace, names: Iterable[str]) -> list[str]:
    """The flags of ``names`` given on the command line: what sets up an engine in this process."""
    return ["--" + name.replace("_", "-") for name in names if getattr(args, name, None) is not None]


def settings_from(args: argparse.Namespace) -> Settings:
    given = {
        name: value for name, value in vars(args).items()
        if name in Settings.model_fields and value is not None
    }
    return Settings(**given)


def fail(message: object) -> int:
    """Say what went wrong on stderr, in one line, and give the exit status for a usage error."""
    print(f"mtserve: {message}", file=sys.stderr)
    return 2
