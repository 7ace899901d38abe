"""``mtserve convert``: seq2seq models to ONNX or CTranslate2, and GGUF LLMs to Hugging Face.

The conversions themselves live in ``mtserve.convert``; this module only reads
the flags and prints what was written.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from mtserve.cli.common import fail
from mtserve.convert import (
    CALIBRATION_MAX_SENTENCES,
    HF_DTYPES,
    QUANT_FORMATS,
    QUANTIZATIONS,
    TARGETS,
    ConversionError,
    Quantization,
    convert,
)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "convert",
        help="convert a Hugging Face seq2seq model directory to ONNX or CTranslate2, or a GGUF LLM to "
        "a Hugging Face directory",
        description="Convert a Marian/opus-mt, NLLB or M2M100 directory for --engine onnx or "
        "--engine ctranslate2, in FP32 or INT8; or (--to hf) a GGUF LLM file, or a registry model "
        "name, to a Hugging Face directory for --engine vllm (dequantized). The output directory is "
        "all the engine needs: serve it with `mtserve serve --engine ENGINE --model OUT`.",
    )
    parser.add_argument("model_dir", type=Path,
                        help="Hugging Face model directory (config.json + weights); for --to hf a .gguf "
                        "file or a registry model name")
    parser.add_argument("--to", required=True, choices=TARGETS,
                        help="the engine to convert for: onnx, ctranslate2, or hf (Hugging Face, for vllm)")
    parser.add_argument("--dtype", choices=HF_DTYPES, default="bfloat16",
                        help="--to hf: the dtype the dequantized weights are saved in (default bfloat16)")
    parser.add_argument("--out", required=True, type=Path, help="output directory (created)")
    parser.add_argument(
        "--quantize",
        choices=QUANTIZATIONS,
        default=None,
        help="INT8 weights (ONNX: dynamic unless --static; CTranslate2: int8; default: none, FP32)",
    )
    parser.add_argument(
        "--static", action="store_true", help="ONNX static INT8: activations too, calibrated on --calibration"
    )
    parser.add_argument(
        "--calibration",
        type=Path,
        default=None,
        help="static INT8: source-language sentences, one per line "
        f"(the first {CALIBRATION_MAX_SENTENCES} are used)",
    )
    parser.add_argument(
        "--quant-format",
        choices=QUANT_FORMATS,
        default="qdq",
        help="static INT8 graph format (default qdq, the one ORT's CPU kernels prefer)",
    )
    parser.add_argument("--per-channel", action="store_true", help="INT8: one scale per output channel")
    parser.add_argument(
        "--reduce-range",
        action="store_true",
        help="INT8: 7-bit weights, against overflow on CPUs without VNNI",
    )
    parser.add_argument("--source", default=None, help="calibration source language (default: the model's)")
    parser.add_argument("--target", default=None, help="calibration target language (default: the model's)")
    parser.add_argument("--force", action="store_true", help="replace --out if it exists")
    parser.add_argument("--threads", type=int, default=None,
                        help="CPU threads for calibration (default: all cores)")
    parser.set_defaults(func=cmd_convert)
    return parser


def cmd_convert(args: argparse.Namespace) -> int:
    from mtserve.logs import configure_logging

    configure_logging("warning")
    quantization = Quantization(
        static=args.static,
        calibration=args.calibration,
        quant_format=args.quant_format,
        per_channel=args.per_channel,
        reduce_range=args.reduce_range,
    )
    pair = None
    if args.source or args.target:
        if not (args.source and args.target):
            return fail("give both --source and --target for calibration")
        pair = (args.source, args.target)
    try:
        report = convert(
            args.model_dir,
            args.to,
            args.out,
            quantize=args.quantize,
            quantization=quantization,
            calibration_pair=pair,
            force=args.force,
            threads=args.threads or os.cpu_count() or 1,
            dtype=args.dtype,
        )
    except ConversionError as exc:
        return fail(exc)
    size = sum(report.files.values())
    if report.spec is None:  # --to hf
        print(f"{args.model_dir}: Hugging Face {args.dtype}, {size / 1e6:,.1f} MB in {report.seconds:.1f} s "
              f"-> {report.out}")
        print(f"serve it on a CUDA GPU: mtserve serve --engine vllm --model {report.out}")
        return 0
    kind = "FP32" if report.quantization is None else f"INT8 ({report.quantization['method']})"
    print(
        f"{report.spec.model_name} ({report.spec.family}, {'/'.join(report.spec.sources)} -> "
        f"{'/'.join(report.spec.targets)}): {report.target} {kind}, {size / 1e6:,.1f} MB "
        f"in {report.seconds:.1f} s -> {report.out}"
    )
    print(f"serve it: mtserve serve --engine {report.target} --model {report.out}")
    return 0
