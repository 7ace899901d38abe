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
