"""Where the CTranslate2 engine runs: --device auto|cpu|cuda."""

import pytest

from mtserve.engines.base import EngineError
from mtserve.engines.ctranslate2 import DEVICES, resolve_device


def test_auto_is_cuda_only_when_ctranslate2_sees_a_gpu():
    assert resolve_device("auto", cuda_devices=1) == "cuda"
    assert resolve_device("auto", cuda_devices=0) == "cpu"
    assert resolve_device("cpu", cuda_devices=2) == "cpu"
    assert resolve_device("cuda", cuda_devices=1) == "cuda"
    assert DEVICES == ("auto", "cpu", "cuda")


def test_cuda_without_a_gpu_says_what_to_use():
    with pytest.raises(EngineError, match="sees no CUDA GPU.*--device cpu or auto"):
        resolve_device("cuda", cuda_devices=0)


def test_on_this_machine_auto_resolves_to_what_ctranslate2_reports():
    ctranslate2 = pytest.importorskip("ctranslate2")
    count = ctranslate2.get_cuda_device_count()
    assert resolve_device("auto", count) == ("cuda" if count > 0 else "cpu")


def test_the_factory_passes_the_device_and_auto_loads_where_ctranslate2_can(seq2seq_models):
    ctranslate2 = pytest.importorskip("ctranslate2")
    from mtserve.engines.base import EngineRequest
    from mtserve.engines.factory import EngineConfigError, create_engine
    from mtserve.settings import Settings

    model = str(seq2seq_models.path("ct2"))
    engine = create_engine(Settings(engine="ctranslate2", model=model, threads=1, compute_type="float32"))
    assert engine.device == "auto"  # the setting's default
    engine.load()
    try:
        expected = "cuda" if ctranslate2.get_cuda_device_count() > 0 else "cpu"
        assert engine.resolved_device == expected
        [result] = engine.translate_batch([EngineRequest("我是中国人。", "zh", "en")])
        assert result.text and result.generated_tokens > 0
    finally:
        engine.close()
    with pytest.raises(EngineConfigError, match="device must be one of"):
        create_engine(Settings(engine="ctranslate2", model=model, device="tpu"))
    if ctranslate2.get_cuda_device_count() == 0:
        cuda = create_engine(Settings(engine="ctranslate2", model=model, threads=1, device="cuda"))
        with pytest.raises(EngineError, match="sees no CUDA GPU"):
            cuda.load()
