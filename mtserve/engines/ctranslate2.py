"""Seq2seq translation on CTranslate2: a model converted by ``mtserve convert --to ctranslate2``.

CTranslate2 does the whole decode in C++ (with its own int8 kernels), so the
Python side only maps ids to tokens and back. ``inter_threads`` translators
run batches in parallel, each with ``threads // inter_threads`` cores; the
scheduler keeps that many batches in flight. The compute type is chosen at
load time: ``default`` keeps the type the model was converted to.

``device``: ``cpu``, ``cuda`` (CTranslate2's PyPI wheels carry CUDA kernels; they need
the CUDA 12 cuBLAS/cuDNN libraries), or ``auto``: CUDA when CTranslate2 sees a GPU.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

from mtserve.engines.base import EngineError
from mtserve.engines.seq2seq import EncodedRequest, Generated, Sampling, Seq2SeqEngine, strip_output

COMPUTE_TYPES = ("default", "auto", "int8", "int8_float32", "int16", "float32",
                 "float16", "bfloat16", "int8_float16", "int8_bfloat16")  # the last four: GPU types
DEVICES = ("auto", "cpu", "cuda")
SAMPLING_TOP_K = 50

_ct2_rng = threading.Lock()  # CTranslate2's random seed is process-wide


class CTranslate2Engine(Seq2SeqEngine):
    name = "ctranslate2"

    def __init__(self, model_dir: Path, *, compute_type: str = "default", device: str = "cpu", **kwargs: Any):
        super().__init__(model_dir, **kwargs)
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute type must be one of {COMPUTE_TYPES}, got {compute_type!r}")
        if device not in DEVICES:
            raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {device!r}")
        self.compute_type = compute_type
        self.device = device  # as asked; ``resolved_device`` once loaded
        self.resolved_device: str | None = None
        self._translator: Any = None
        self._suppress: list[list[str]] | None = None

    def _load_model(self) -> None:
        import ctranslate2

        if not (self.model_dir / "model.bin").is_file():
            raise EngineError(
                f"{self.model_dir} holds no CTranslate2 model; make one with "
                f"`mtserve convert MODEL_DIR --to ctranslate2 --out {self.model_dir}`"
            )
        self.resolved_device = resolve_device(self.device, ctranslate2.get_cuda_device_count())
        self.on_gpu = self.resolved_device == "cuda"
        self._translator = ctranslate2.Translator(
            str(self.model_dir),
            device=self.resolved_device,
            compute_type=self.compute_type,
            inter_threads=self.inter_threads,
            intra_threads=max(1, self.threads // self.inter_threads),
        )
        # The converter drops Marian's <pad> from the vocabulary; elsewhere it must be kept out.
        if self.spec.family != "marian" and self.spec.pad_token_id != self.spec.eos_token_id:
            self._suppress = [self._tokenizer().tokens([self.spec.pad_token_id])]

    def close(self) -> None:
        self._translator = None
        super().close()

    def _generate(self, batch: list[EncodedRequest], sampling: Sampling | None) -> list[Generated]:
        translator = self._translator
        if translator is None:
            raise EngineError("engine is not loaded")
        tok = self._tokenizer()
        source = [tok.tokens(row.source_ids) for row in batch]
        # CTranslate2 adds the decoder start token itself; it wants only the forced tokens.
        prefixes = [tok.tokens(row.prefix_ids[1:]) for row in batch]
        forced = len(batch[0].prefix_ids) - 1
        beams = 1 if sampling is not None else self.decode.num_beams
        options: dict[str, Any] = dict(
            beam_size=beams,
            length_penalty=self.decode.length_penalty,
            max_decoding_length=max(row.max_new_tokens for row in batch) + forced,
            min_decoding_length=self.decode.min_new_tokens + forced,
            suppress_sequences=self._suppress,
            max_input_length=0,  # never truncate silently; the service bounds segment length
        )
        if beams == 1:
            options["callback"] = lambda step: batch[step.batch_id].cancelled
        if sampling is not None:
            options.update(sampling_topk=SAMPLING_TOP_K, sampling_temperature=sampling.temperature)
        with _ct2_rng if sampling is not None else contextlib.nullcontext():
            if sampling is not None and sampling.seed is not None:
                import ctranslate2

                ctranslate2.set_random_seed(sampling.seed)
            results = translator.translate_batch(
                source, target_prefix=prefixes if forced else None, **options
            )
        generated = []
        for row, result in zip(batch, results):
            ids = tok.ids(result.hypotheses[0])[forced:]
            out = strip_output(ids, self.spec.eos_token_id, row.max_new_tokens)
            if row.cancelled:
                out.finish_reason = "cancelled"
            generated.append(out)
        return generated


def resolve_device(requested: str, cuda_devices: int) -> str:
    """``auto`` is CUDA when CTranslate2 sees a GPU, else the CPU; ``cuda`` without one is an error."""
    if requested == "auto":
        return "cuda" if cuda_devices > 0 else "cpu"
    if requested == "cuda" and cuda_devices == 0:
        raise EngineError(
            "device 'cuda': CTranslate2 sees no CUDA GPU here (get_cuda_device_count() is 0); "
            "use --device cpu or auto"
        )
    return requested
