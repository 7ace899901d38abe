"""``mtserve convert``: a Hugging Face seq2seq directory to ONNX or CTranslate2, FP32 or INT8;
a GGUF LLM to a Hugging Face directory (``--to hf``) for the vllm engine.

The output directory is complete on its own: the model files, the tokenizer,
and ``mtserve.json`` (format, family, languages, special ids, how it was
quantized), so ``mtserve serve --engine onnx|ctranslate2 --model OUT`` needs
nothing else. Everything is written to a temporary directory beside OUT and
moved into place at the end, so a failed conversion leaves no half model.

ONNX: optimum's exporter writes an encoder, a first-step decoder and a decoder
with past key/values. INT8 is either dynamic (weights quantized ahead,
activations at run time) or static (activations too, with ranges calibrated
by running the FP32 model over sentences from ``--calibration``), in QDQ or
QOperator format. CTranslate2: its own converter, with int8 weights or not.

GGUF to Hugging Face (``--to hf``): transformers reads the GGUF file
(``from_pretrained(dir, gguf_file=...)``, which dequantizes the weights; it needs the
``gguf`` package of ``mtserve[baseline]``) and ``save_pretrained`` writes the model as
safetensors (bfloat16 unless ``--dtype`` says otherwise) and the tokenizer, the GGUF's
chat template included. ``mtserve.json`` records the prompt family and the registry
name, so the vllm engine uses the same prompt template and recommended sampling as
llama.cpp did. Offline: nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from mtserve import __version__
from mtserve.engines.seq2seq import (
    MANIFEST,
    ONNX_FILES,
    TOKENIZER_DIR,
    ModelDirError,
    ModelSpec,
    inspect_model_dir,
    spec_from_hf_dir,
)
from mtserve.extras import BASELINE_MODULES, CONVERT_MODULES, missing_extra

log = logging.getLogger(__name__)

TARGETS = ("onnx", "ctranslate2", "hf")
HF_DTYPES = ("bfloat16", "float16", "float32")
QUANTIZATIONS = ("int8",)
QUANT_FORMATS = ("qdq", "qoperator")
CALIBRATION_MAX_SENTENCES = 200  # MinMax ranges settle long before this
CALIBRATION_MAX_TOKENS = 32  # decoder steps recorded per calibration sentence
# Calibration keeps every intermediate tensor of every feed in memory until the end
# (ORT's incremental option drops data in 1.32), so the feeds per graph are capped,
# spread evenly over the sentences and their decoder steps.
CALIBRATION_MAX_FEEDS = 256
EXTERNAL_DATA_BYTES = 1_800_000_000  # protobuf's 2 GB limit, with room to spare


class ConversionError(ValueError):
    """A conversion cannot go ahead; the message says what to change."""


@dataclass(frozen=True)
class Quantization:
    """How to quantize to INT8; ``None`` in place of this means FP32."""

    static: bool = False
    calibration: Path | None = None
    quant_format: str = "qdq"  # static only: "qdq" | "qoperator"
    per_channel: bool = False
    reduce_range: bool = False  # 7-bit weights: safer on CPUs without VNNI

    def describe(self) -> dict[str, Any]:
        if not self.static:
            return {"method": "dynamic", "per_channel": self.per_channel, "reduce_range": self.reduce_range}
        return {
            "method": "static",
            "format": self.quant_format,
            "per_channel": self.per_channel,
            "reduce_range": self.reduce_range,
            "calibration": str(self.calibration),
        }


@dataclass
class ConversionReport:
    out: Path
    target: str
    spec: ModelSpec | None  # None for --to hf (an LLM, not a seq2seq model)
    quantization: dict[str, Any] | None
    seconds: float
    files: dict[str, int] = field(default_factory=dict)  # name -> bytes


def convert(
    model_dir: Path,
    target: str,
    out: Path,
    *,
    quantize: str | None = None,
    quantization: Quantization | None = None,
    calibration_pair: tuple[str, str] | None = None,
    force: bool = False,
    threads: int = 1,
    dtype: str = "bfloat16",
) -> ConversionReport:
    """Convert ``model_dir`` (a Hugging Face seq2seq directory) for the ``target`` engine,
    or, for ``target="hf"``, a GGUF file (a path or a registry name) to a Hugging Face directory."""
    if target not in TARGETS:
        raise ConversionError(f"--to must be one of {', '.join(TARGETS)}, got {target!r}")
    if target == "hf":
        static = quantization is not None and (quantization.static or quantization.calibration)
        if quantize is not None or static:
            raise ConversionError("--to hf writes unquantized weights; --quantize and --static do not apply")
        return gguf_to_hf(model_dir, out, force=force, dtype=dtype)
    model_dir, out = Path(model_dir).expanduser(), Path(out).expanduser()
    if quantize not in (None, *QUANTIZATIONS):
        raise ConversionError(f"--quantize must be one of {', '.join(QUANTIZATIONS)}, got {quantize!r}")
    quantization = quantization or Quantization()
    if quantize is None and (quantization.static or quantization.calibration):
        raise ConversionError("--static and --calibration only apply with --quantize int8")
    if quantization.static and target != "onnx":
        raise ConversionError("static quantization is for ONNX; CTranslate2 quantizes weights only")
    if quantization.static and quantization.calibration is None:
        raise ConversionError(
            "static INT8 needs calibration sentences: add --calibration FILE "
            "(source-language text, one sentence per line; a few hundred is plenty)"
        )
    if quantization.calibration is not None and not quantization.static:
        raise ConversionError("--calibration is used by static quantization; add --static")
    if quantization.quant_format not in QUANT_FORMATS:
        raise ConversionError(f"--quant-format must be one of {', '.join(QUANT_FORMATS)}")
    try:
        kind = inspect_model_dir(model_dir)
    except ModelDirError as exc:
        raise ConversionError(str(exc)) from None
    if kind.format != "huggingface":
        raise ConversionError(
            f"{model_dir} is {_describe_kind(kind.format)}; convert takes a Hugging Face model "
            "directory (config.json plus *.safetensors or pytorch_model.bin)"
        )
    if problem := missing_extra(f"converting to {target}", "seq2seq", CONVERT_MODULES[target]):
        raise ConversionError(problem)
    overrides = _read_json(model_dir / MANIFEST)
    try:
        spec = spec_from_hf_dir(model_dir, overrides)
    except ModelDirError as exc:
        raise ConversionError(str(exc)) from None
    if out.exists() and any(out.iterdir()) and not force:
        raise ConversionError(f"{out} exists and is not empty; pick another --out or add --force")

    started = time.perf_counter()
    with _staged(out) as staging:
        if target == "onnx":
            described = _to_onnx(model_dir, staging, spec, quantize, quantization, calibration_pair, threads)
        else:
            described = _to_ctranslate2(model_dir, staging, quantize)
        _write_manifest(staging, {
            "format": target,
            "family": spec.family,
            "spec": spec.to_json(),
            "quantization": described,
            "source_model": str(model_dir.resolve()),
        })
    return ConversionReport(out, target, spec, described, time.perf_counter() - started, _files(out))


@contextlib.contextmanager
def _staged(out: Path) -> Iterator[Path]:
    """A directory beside ``out`` to convert into: it replaces ``out`` only once complete.

    A failed or interrupted conversion leaves no half-written model behind, and an
    existing ``out`` (with --force) is kept until the new one is ready.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield staging
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _write_manifest(staging: Path, manifest: dict[str, Any]) -> None:
    manifest = {**manifest, "created_by": f"mtserve {__version__}"}
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")


def _files(out: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(out.iterdir()) if p.is_file()}


def _describe_kind(fmt: str) -> str:
    return {
        "onnx": "already an ONNX export (serve it with --engine onnx)",
        "ctranslate2": "already a CTranslate2 model (serve it with --engine ctranslate2)",
        "gguf": "a GGUF file (serve it with --engine llamacpp)",
    }.get(fmt, "not a model directory mtserve recognizes")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


# --- ONNX ---------------------------------------------------------------------------------------
def export_onnx(model_dir: Path, out: Path) -> None:
    """Encoder, decoder and decoder-with-past graphs, plus config and tokenizer, into ``out``."""
    from optimum.exporters.onnx import main_export
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    # The tracer's notes on Python control flow in the model are not for users.
    with warnings.catch_warnings(), contextlib.ExitStack() as restore:
        restore.callback(hf_logging.set_verbosity, verbosity)
        warnings.simplefilter("ignore")
        main_export(
            str(model_dir),
            output=str(out),
            task="text2text-generation-with-past",
            device="cpu",
            local_files_only=True,
            do_validation=False,
            no_post_process=True,  # keep the separate decoders; the merged one adds an If node per step
        )
    missing = [name for name in ONNX_FILES if not (out / name).is_file()]
    if missing:
        raise ConversionError(f"the ONNX export produced no {', '.join(missing)}")


def _to_onnx(
    model_dir: Path,
    staging: Path,
    spec: ModelSpec,
    quantize: str | None,
    quantization: Quantization,
    calibration_pair: tuple[str, str] | None,
    threads: int,
) -> dict[str, Any] | None:
    if quantize is None:
        export_onnx(model_dir, staging)
        return None
    with tempfile.TemporaryDirectory(prefix="mtserve-onnx-fp32-", dir=staging.parent) as tmp:
        fp32 = Path(tmp)
        export_onnx(model_dir, fp32)
        (fp32 / MANIFEST).write_text(json.dumps({"format": "onnx", "spec": spec.to_json()}))
        for path in fp32.iterdir():  # tokenizer and configs travel as they are
            if path.is_file() and path.suffix != ".onnx" and not path.name.endswith(".onnx_data"):
                shutil.copy2(path, staging / path.name)
        if quantization.static:
            assert quantization.calibration is not None
            sentences = read_calibration(quantization.calibration)
            pair = calibration_pair or default_pair(spec)
            for name in ONNX_FILES:
                quantize_static_file(fp32, name, staging / name, quantization, sentences, pair, threads)
        else:
            for name in ONNX_FILES:
                quantize_dynamic_file(fp32 / name, staging / name, quantization)
    return quantization.describe()


def quantize_dynamic_file(src: Path, dst: Path, quantization: Quantization) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    prepared = prepare_for_quantization(src)
    quantize_dynamic(
        str(prepared),
        str(dst),
        weight_type=QuantType.QInt8,
        per_channel=quantization.per_channel,
        reduce_range=quantization.reduce_range,
        use_external_data_format=_is_large(src),
    )
    if prepared != src:
        prepared.unlink(missing_ok=True)


def prepare_for_quantization(src: Path) -> Path:
    """Shape inference first, as ORT recommends before quantizing; the graph itself is unchanged.

    The exported graph still quantizes when a model defeats symbolic shape inference.
    """
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = src.with_name(f"{src.stem}.prepared.onnx")
    try:
        quant_pre_process(
            str(src), str(prepared), skip_optimization=True, save_as_external_data=_is_large(src)
        )
    except Exception as exc:  # noqa: BLE001 - an optional preparation step
        log.warning(
            "shape inference before quantization failed; quantizing the graph as exported",
            extra={"event": "quant_pre_process_failed", "graph": src.name, "error": repr(exc)},
        )
        return src
    return prepared


def _is_large(model: Path) -> bool:
    data = model.with_name(model.name + "_data")
    return model.stat().st_size + (data.stat().st_size if data.exists() else 0) > EXTERNAL_DATA_BYTES


def read_calibration(path: Path) -> list[str]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConversionError(f"cannot read the calibration file {path}: {exc}") from None
    sentences = [line.strip() for line in lines if line.strip()][:CALIBRATION_MAX_SENTENCES]
    if not sentences:
        raise ConversionError(f"the calibration file {path} holds no sentences")
    return sentences


def default_pair(spec: ModelSpec) -> tuple[str, str]:
    """The calibration pair when none is given: zh->en if the model has it, else its first pair."""
    source = "zh" if "zh" in spec.sources else spec.sources[0]
    targets = [t for t in spec.targets if t != source]
    target = "en" if "en" in targets else (targets or list(spec.targets))[0]
    return source, target


class _RecordingSession:
    """Wraps an InferenceSession and keeps copies of the inputs it is run with."""

    def __init__(self, session: Any):
        self._session = session
        self.feeds: list[dict[str, Any]] = []

    def run(self, names: Any, feed: dict[str, Any]) -> Any:
        import numpy as np

        self.feeds.append({k: np.array(v, copy=True) for k, v in feed.items()})
        return self._session.run(names, feed)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def calibration_feeds(
    fp32_dir: Path, graph: str, sentences: list[str], pair: tuple[str, str], threads: int
) -> Iterator[dict[str, Any]]:
    """Real inputs of one graph, recorded while the FP32 model translates the sentences.

    Sentence by sentence, so memory holds one sentence's caches, not the whole
    set's; at most ``CALIBRATION_MAX_FEEDS`` in all, evenly spaced within each
    sentence's decoder steps.
    """
    from mtserve.engines.base import EngineRequest
    from mtserve.engines.onnx import OnnxEngine

    engine = OnnxEngine(fp32_dir, threads=threads)
    engine.load()
    attribute = {
        "encoder_model.onnx": "_encoder",
        "decoder_model.onnx": "_decoder",
        "decoder_with_past_model.onnx": "_decoder_past",
    }[graph]
    recorder = _RecordingSession(getattr(engine, attribute))
    setattr(engine, attribute, recorder)
    per_sentence = max(1, CALIBRATION_MAX_FEEDS // len(sentences))
    try:
        for index, sentence in enumerate(sentences):
            engine.translate_batch(
                [EngineRequest(sentence, pair[0], pair[1], max_tokens=CALIBRATION_MAX_TOKENS)]
            )
            feeds, recorder.feeds = recorder.feeds, []
            stride = max(1, -(-len(feeds) // per_sentence))
            yield from feeds[index % stride :: stride]  # a different step offset per sentence
    finally:
        engine.close()


def quantize_static_file(
    fp32_dir: Path,
    graph: str,
    dst: Path,
    quantization: Quantization,
    sentences: list[str],
    pair: tuple[str, str],
    threads: int,
) -> None:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self._feeds = calibration_feeds(fp32_dir, graph, sentences, pair, threads)

        def get_next(self) -> dict[str, Any] | None:
            return next(self._feeds, None)

    src = fp32_dir / graph
    large = _is_large(src)
    prepared = prepare_for_quantization(src)
    quantize_static(
        str(prepared),
        str(dst),
        Reader(),
        quant_format=QuantFormat.QDQ if quantization.quant_format == "qdq" else QuantFormat.QOperator,
        op_types_to_quantize=["MatMul", "Gemm"],
        per_channel=quantization.per_channel,
        reduce_range=quantization.reduce_range,
        activation_type=QuantType.QUInt8,  # ORT's advice for x86 CPUs
        weight_type=QuantType.QInt8,
        use_external_data_format=large,
        extra_options={"MatMulConstBOnly": True},  # weights only: attention score matmuls stay FP32
    )
    if prepared != src:
        prepared.unlink(missing_ok=True)


# --- CTranslate2 ---------------------------------------------------------------------------------
def _to_ctranslate2(model_dir: Path, staging: Path, quantize: str | None) -> dict[str, Any] | None:
    import ctranslate2
    from transformers import AutoTokenizer

    converter = ctranslate2.converters.TransformersConverter(str(model_dir))
    converter.convert(str(staging), quantization=quantize, force=True)
    # CTranslate2 writes its own config.json, so the tokenizer goes in a folder of its own.
    AutoTokenizer.from_pretrained(str(model_dir)).save_pretrained(str(staging / TOKENIZER_DIR))
    return {"method": "weights", "type": quantize} if quantize else None


# --- GGUF to Hugging Face --------------------------------------------------------------------------
def resolve_gguf(source: Path | str, models_dir: Path | None = None) -> tuple[Path, str | None, str]:
    """(GGUF path, registry name or None, prompt family) for a path or a registry name."""
    from mtserve.models.registry import known_models
    from mtserve.models.store import ModelStore, ModelStoreError, guess_family

    registry = known_models()
    if str(source) in registry:
        if models_dir is None:
            from mtserve.settings import Settings

            models_dir = Settings().models_dir
        try:
            resolved = ModelStore(models_dir).resolve(str(source))
        except ModelStoreError as exc:
            raise ConversionError(str(exc)) from None
        return resolved.path, str(source), resolved.family
    path = Path(source).expanduser()
    if not path.is_file():
        raise ConversionError(f"--to hf converts a GGUF file or a registry model name; {source} is neither")
    if path.suffix.lower() != ".gguf":
        raise ConversionError(f"--to hf converts a GGUF file; {path} is not one (no .gguf suffix)")
    name = next((entry.name for entry in registry.values() if entry.file == path.name), None)
    return path.resolve(), name, registry[name].family if name else guess_family(path.name)


def gguf_to_hf(
    source: Path | str, out: Path, *, force: bool = False, dtype: str = "bfloat16",
    models_dir: Path | None = None,
) -> ConversionReport:
    """A GGUF LLM to a Hugging Face directory (weights dequantized to ``dtype``) for --engine vllm."""
    out = Path(out).expanduser()
    if dtype not in HF_DTYPES:
        raise ConversionError(f"--dtype must be one of {', '.join(HF_DTYPES)}, got {dtype!r}")
    path, registry_name, family = resolve_gguf(source, models_dir)
    if out.exists() and any(out.iterdir()) and not force:
        raise ConversionError(f"{out} exists and is not empty; pick another --out or add --force")
    if problem := missing_extra("converting to hf", "baseline", BASELINE_MODULES):
        raise ConversionError(problem)
    import gguf  # noqa: F401 - transformers needs it to read the file
    import torch
    import transformers
    from packaging.version import Version
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype_key = "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"
    started = time.perf_counter()
    with _staged(out) as staging:
        where = dict(gguf_file=path.name, local_files_only=True)
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(path.parent), **where)
            model = AutoModelForCausalLM.from_pretrained(
                str(path.parent), **where, **{dtype_key: getattr(torch, dtype)}
            )
        except (ValueError, KeyError, NotImplementedError) as exc:  # e.g. an architecture it cannot read
            raise ConversionError(
                f"transformers cannot convert {path.name}: {exc}. Download the model's original "
                "Hugging Face checkpoint instead (for example tencent/Hunyuan-MT-7B), or serve the GGUF "
                "file with --engine llamacpp"
            ) from None
        model.save_pretrained(str(staging), safe_serialization=True)
        tokenizer.save_pretrained(str(staging))
        del model
        _write_manifest(staging, {
            "format": "huggingface",
            "family": family,
            "registry_name": registry_name,
            "model_name": registry_name or path.stem,
            "source_gguf": str(path),
            "dtype": dtype,
        })
    return ConversionReport(out, "hf", None, {"method": "dequantized", "dtype": dtype},
                            time.perf_counter() - started, _files(out))
