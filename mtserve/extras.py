"""The optional extras of pyproject.toml, and the one line a command says when one it needs is missing.

The base install runs every command; a few options need a heavy extra (torch and its kin). Such an
option checks for the modules it needs before it does anything, and names the extra to install,
instead of failing later with a ModuleNotFoundError.
"""

from __future__ import annotations

import importlib.util
from typing import Iterable

# The modules an option imports, by the extra that brings them: `bench --transformers` and
# `convert --to hf` (baseline), the seq2seq engines and their conversions (seq2seq).
BASELINE_MODULES = ("torch", "transformers", "gguf", "accelerate")
# What each seq2seq engine and conversion imports (the tokenizer is transformers' for all of them).
SEQ2SEQ_ENGINE_MODULES = {
    "transformers": ("torch", "transformers"),
    "onnx": ("onnxruntime", "transformers"),
    "ctranslate2": ("ctranslate2", "transformers"),
}
CONVERT_MODULES = {
    "onnx": ("torch", "transformers", "optimum", "onnx", "onnxruntime"),
    "ctranslate2": ("torch", "transformers", "ctranslate2"),
}


def missing_modules(names: Iterable[str]) -> list[str]:
    """The modules of ``names`` that cannot be imported here (not installed, or blocked)."""
    absent = []
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package missing, or a module set to None
            found = False
        if not found:
            absent.append(name)
    return absent


def missing_extra(what: str, extra: str, modules: Iterable[str]) -> str | None:
    """One line saying that ``what`` needs ``extra`` and how to install it, or None when every one of
    ``modules`` is there."""
    absent = missing_modules(modules)
    if not absent:
        return None
    return (f"{what} needs the '{extra}' extra ({', '.join(absent)} not installed): "
            f"pip install 'mtserve[{extra}]'")


# Which extra brings a module mtserve imports on demand: the safety net of every command, for an
# import no option checked beforehand.
EXTRA_OF_MODULE = {
    "torch": "seq2seq", "transformers": "seq2seq", "sentencepiece": "seq2seq", "sacremoses": "seq2seq",
    "onnx": "seq2seq", "onnxruntime": "seq2seq", "optimum": "seq2seq", "ctranslate2": "seq2seq",
    "gguf": "baseline", "accelerate": "baseline",
    "hsk_sentences_audio": "eval", "matplotlib": "bench", "psutil": "bench",
    "ray": "ray", "vllm": "gpu",
}


def extra_for(module: str | None) -> str | None:
    """The line to say for a module that failed to import, when an extra brings it; None otherwise."""
    extra = EXTRA_OF_MODULE.get((module or "").partition(".")[0])
    if extra is None:
        return None
    return f"this needs {module.partition('.')[0]}, from the '{extra}' extra: pip install 'mtserve[{extra}]'"
