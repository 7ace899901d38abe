"""LlamaCppEngine's tuning options, checked without loading a model."""

import pytest

from mtserve.engines.base import EngineError
from mtserve.engines.llamacpp import SPECULATIVE_TYPES, LlamaCppEngine


def _engine(**options):
    return LlamaCppEngine("/nonexistent.gguf", model_name="m", family="qwen", languages=("zh", "en"),
                          threads=2, n_parallel=2, ctx_per_slot=256, max_output_tokens=64, **options)


def test_speculative_modes_are_checked_up_front():
    with pytest.raises(EngineError, match="unknown speculative mode"):
        _engine(speculative="eagle")
    assert set(SPECULATIVE_TYPES) >= {"none", "ngram-simple"}


def test_batch_threads_default_to_threads_and_timings_start_empty():
    engine = _engine()
    assert engine._batch_threads == 2
    assert _engine(batch_threads=1)._batch_threads == 1
    assert engine.last_timings() is None


def test_speculative_type_names_exist_in_xllamacpp():
    xllamacpp = pytest.importorskip("xllamacpp")
    for name in SPECULATIVE_TYPES.values():
        assert hasattr(xllamacpp.common_speculative_type, name)


def test_gpu_layers_reach_llama_cpp(monkeypatch, tmp_path):
    xllamacpp = pytest.importorskip("xllamacpp")
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    seen = {}

    def fake_server(params):  # what llama.cpp would be started with
        seen["n_gpu_layers"] = params.n_gpu_layers
        seen["n_parallel"] = params.n_parallel
        return object()

    monkeypatch.setattr(xllamacpp, "Server", fake_server)
    for layers in (0, 999):
        engine = LlamaCppEngine(model, model_name="m", family="qwen", languages=("zh", "en"), threads=2,
                                n_parallel=2, ctx_per_slot=256, max_output_tokens=64, gpu_layers=layers)
        engine.load()
        assert seen == {"n_gpu_layers": layers, "n_parallel": 2}
        engine.close()
