"""Tiny seq2seq models, built and converted once per test session.

``seq2seq_models`` holds a Marian directory and everything ``mtserve convert``
makes of it (ONNX FP32, INT8 dynamic, INT8 static QDQ and QOperator,
CTranslate2 float32 and int8), plus tiny M2M100 and NLLB directories with
their FP32 conversions. ``load_engine`` hands out loaded engines, cached per
session, with one thread each: the tests check results, not speed, and a
shared CI box must not be oversubscribed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from mtserve.convert import Quantization, convert
from mtserve.engines.seq2seq import DecodeOptions, Seq2SeqEngine
from tests.engines.helpers import AGREEMENT, ENGINE_VARIANTS
from tests.engines.tiny_models import SAMPLE_ZH, build_m2m100, build_marian


@dataclass
class Seq2SeqModels:
    root: Path
    dirs: dict[str, dict[str, Path]] = field(default_factory=dict)  # family -> variant -> dir

    def path(self, variant: str, family: str = "marian") -> Path:
        return self.dirs[family][variant]


@pytest.fixture(scope="session")
def seq2seq_models(tmp_path_factory) -> Seq2SeqModels:
    root = tmp_path_factory.mktemp("seq2seq")
    models = Seq2SeqModels(root)
    marian = build_marian(root / "marian")
    calibration = root / "calibration.zh.txt"
    calibration.write_text("\n".join(SAMPLE_ZH) + "\n", encoding="utf-8")
    variants = {"hf": marian}
    for name, target, quantize, quantization in (
        ("onnx", "onnx", None, None),
        ("onnx-int8-dynamic", "onnx", "int8", Quantization()),
        ("onnx-int8-static-qdq", "onnx", "int8", Quantization(static=True, calibration=calibration)),
        (
            "onnx-int8-static-qoperator",
            "onnx",
            "int8",
            Quantization(static=True, calibration=calibration, quant_format="qoperator", per_channel=True),
        ),
        ("ct2", "ctranslate2", None, None),
        ("ct2-int8", "ctranslate2", "int8", None),
    ):
        variants[name] = convert(
            marian, target, root / f"marian-{name}", quantize=quantize, quantization=quantization
        ).out
    models.dirs["marian"] = variants
    for family in ("m2m100", "nllb"):
        hf = build_m2m100(root / family, nllb=family == "nllb")
        models.dirs[family] = {
            "hf": hf,
            "onnx": convert(hf, "onnx", root / f"{family}-onnx").out,
            "ct2": convert(hf, "ctranslate2", root / f"{family}-ct2").out,
        }
    return models


LoadEngine = Callable[..., Seq2SeqEngine]


@pytest.fixture(scope="session")
def load_engine(seq2seq_models) -> LoadEngine:
    """``load_engine("onnx", family="marian", num_beams=1, max_batch_size=32)`` -> a loaded engine."""
    cache: dict[tuple, Seq2SeqEngine] = {}

    def load(
        name: str,
        family: str = "marian",
        num_beams: int = 1,
        max_batch_size: int = 64,
        batch_type: str = "examples",
    ) -> Seq2SeqEngine:
        key = (name, family, num_beams, max_batch_size, batch_type)
        if key not in cache:
            engine_name, variant, compute_type = ENGINE_VARIANTS[name]
            common = dict(
                threads=1,
                max_batch_size=max_batch_size,
                batch_type=batch_type,
                decode=DecodeOptions(num_beams=num_beams),
            )
            path = seq2seq_models.path(variant, family)
            if engine_name == "transformers":
                from mtserve.engines.transformers import TransformersEngine

                engine: Seq2SeqEngine = TransformersEngine(path, **common)
            elif engine_name == "onnx":
                from mtserve.engines.onnx import OnnxEngine

                engine = OnnxEngine(path, **common)
            else:
                from mtserve.engines.ctranslate2 import CTranslate2Engine

                engine = CTranslate2Engine(path, compute_type=compute_type, **common)
            engine.load()
            cache[key] = engine
        return cache[key]

    yield load
    for engine in cache.values():
        engine.close()


SEQ2SEQ_FIXTURES = {"seq2seq_models", "load_engine"}


def pytest_collection_modifyitems(items) -> None:
    """Mark every test that builds the tiny models (it needs torch and mtserve[seq2seq]) as ``seq2seq``,
    so `make test-unit`, which installs neither, can deselect them."""
    for item in items:
        if SEQ2SEQ_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.seq2seq)


def pytest_terminal_summary(terminalreporter) -> None:
    if AGREEMENT:
        terminalreporter.section("seq2seq INT8 agreement (measured, not asserted)")
        for name, line in sorted(AGREEMENT.items()):
            terminalreporter.write_line(f"{name:<32} {line}")
