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


def test_queue_ahead_keeps_segments_waiting_inside_llama_cpp_beyond_its_slots():
    assert _engine().max_concurrency == 2 + 2  # the default: two waiting beside two slots
    assert _engine(queue_ahead=0).max_concurrency == 2
    assert _engine(queue_ahead=-3).max_concurrency == 2


def test_the_queue_ahead_setting_reaches_the_engine(tmp_path):
    from mtserve.engines.factory import create_engine
    from mtserve.settings import Settings

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    engine = create_engine(Settings(home=tmp_path, model=str(model), n_parallel=3, queue_ahead=1))
    assert (engine.slots, engine.max_concurrency) == (3, 4)
