"""The seq2seq engine variants the tests load, and the agreement figures they report."""

from __future__ import annotations

# name -> (engine, model variant, compute type)
ENGINE_VARIANTS: dict[str, tuple[str, str, str]] = {
    "transformers": ("transformers", "hf", "default"),
    "onnx": ("onnx", "onnx", "default"),
    "onnx-int8-dynamic": ("onnx", "onnx-int8-dynamic", "default"),
    "onnx-int8-static-qdq": ("onnx", "onnx-int8-static-qdq", "default"),
    "onnx-int8-static-qoperator": ("onnx", "onnx-int8-static-qoperator", "default"),
    "ctranslate2": ("ctranslate2", "ct2", "float32"),
    "ctranslate2-int8": ("ctranslate2", "ct2-int8", "int8"),
    "ctranslate2-int8_float32": ("ctranslate2", "ct2-int8", "int8_float32"),
}
FP32_ENGINES = ("transformers", "onnx", "ctranslate2")
INT8_ENGINES = tuple(name for name in ENGINE_VARIANTS if "int8" in name)

# Agreement rates the INT8 tests measure, printed at the end of the run.
AGREEMENT: dict[str, str] = {}
