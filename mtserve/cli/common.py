"""What every command shares: the settings flags, generated from the Settings class.

Every setting is also a flag (``--n-parallel 2`` for ``MTSERVE_N_PARALLEL``), so
flags, environment and defaults are one table. The field groups say which
settings each command takes.
"""

from __future__ import annotations

import argparse
import sys
import typing
from typing import Iterable

from mtserve.settings import Settings

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
                 "glossary_request_entries",
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


def add_setting_flags(parser: argparse.ArgumentParser, names: Iterable[str],
                      title: str = "settings (each also MTSERVE_<NAME>)") -> None:
    group = parser.add_argument_group(title)
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
