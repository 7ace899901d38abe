"""LlamaCppEngine's tuning options, checked without loading a model."""

import re

import pytest

from mtserve.engines.base import EngineError
from mtserve.engines.llamacpp import SPECULATIVE_TYPES, LlamaCppEngine, apply_param_overrides


def _engine(**options):
    return LlamaCppEngine("/nonexistent.gguf", model_name="m", family="qwen", languages=("zh", "en"),
                          threads=2, n_parallel=2, ctx_per_slot=256, max_output_tokens=64, **options)


def _model(tmp_path):
    """A file the engine takes for a GGUF model; nothing here loads it."""
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return model


def _started_params(monkeypatch) -> list:
    """The params each llama.cpp server would be started with (xllamacpp.Server replaced)."""
    xllamacpp = pytest.importorskip("xllamacpp")
    started: list = []
    monkeypatch.setattr(xllamacpp, "Server", lambda params: started.append(params) or object())
    return started


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


def test_param_overrides_reach_nested_and_enum_fields():
    xllamacpp = pytest.importorskip("xllamacpp")
    params = xllamacpp.CommonParams()
    apply_param_overrides(params, {"flash_attn_type": 0, "cache_type_k": 8, "speculative.draft.n_max": 5})
    assert params.flash_attn_type == xllamacpp.llama_flash_attn_type(0)
    assert params.cache_type_k == xllamacpp.ggml_type.GGML_TYPE_Q8_0
    assert params.speculative.draft.n_max == 5


def test_gpu_layers_reach_llama_cpp(monkeypatch, tmp_path):
    started, model = _started_params(monkeypatch), _model(tmp_path)
    for layers in (0, 999):
        engine = LlamaCppEngine(model, model_name="m", family="qwen", languages=("zh", "en"), threads=2,
                                n_parallel=2, ctx_per_slot=256, max_output_tokens=64, gpu_layers=layers)
        engine.load()
        assert (started[-1].n_gpu_layers, started[-1].n_parallel) == (layers, 2)
        engine.close()


def test_the_engine_is_on_a_gpu_only_where_layers_are_offloaded_to_one(monkeypatch):
    xllamacpp = pytest.importorskip("xllamacpp")
    assert _engine().on_gpu is False  # gpu_layers 0: llama.cpp is not asked about devices
    cpu_only = [d["type"].name for d in xllamacpp.get_device_info()] == ["GGML_BACKEND_DEVICE_TYPE_CPU"]
    assert _engine(gpu_layers=999).on_gpu is not cpu_only  # this build's own devices
    gpu = type("DeviceType", (), {"name": "GGML_BACKEND_DEVICE_TYPE_GPU"})()
    monkeypatch.setattr(xllamacpp, "get_device_info", lambda: [{"type": gpu}])
    assert _engine(gpu_layers=999).on_gpu is True
    assert _engine(gpu_layers=0).on_gpu is False


def test_queue_ahead_keeps_segments_waiting_inside_llama_cpp_beyond_its_slots():
    assert _engine().max_concurrency == 2 + 2  # the default: two waiting beside two slots
    assert _engine(queue_ahead=0).max_concurrency == 2
    assert _engine(queue_ahead=-3).max_concurrency == 2


def test_the_queue_ahead_setting_reaches_the_engine(tmp_path):
    from mtserve.engines.factory import create_engine
    from mtserve.settings import Settings

    engine = create_engine(Settings(home=tmp_path, model=str(_model(tmp_path)), n_parallel=3, queue_ahead=1))
    assert (engine.slots, engine.max_concurrency) == (3, 4)


def test_the_llama_params_setting_reaches_llama_cpp(monkeypatch, tmp_path):
    xllamacpp = pytest.importorskip("xllamacpp")
    from mtserve.engines.factory import create_engine
    from mtserve.settings import Settings

    started = _started_params(monkeypatch)
    monkeypatch.setenv("MTSERVE_LLAMA_PARAMS", "flash_attn_type=0, cache_type_k=8,speculative.draft.n_min=3")
    create_engine(Settings(home=tmp_path, model=str(_model(tmp_path)), n_parallel=3)).load()
    [params] = started
    assert (params.flash_attn_type, params.cache_type_k, params.speculative.draft.n_min, params.n_parallel) == (
        xllamacpp.llama_flash_attn_type(0), xllamacpp.ggml_type.GGML_TYPE_Q8_0, 3, 3)


@pytest.mark.parametrize(("value", "words"), [
    ("flash_attn_type", "is not NAME=NUMBER"),
    ("flash_attn_type=on", "wants a number, not 'on'"),
    ("no_such_param=1", "llama.cpp has no param 'no_such_param'"),
    ("model=1", "model is not a number or an enum"),
    ("n_ctx=1.5", "n_ctx is mtserve's ctx_per_slot setting; set that instead (MTSERVE_CTX_PER_SLOT)"),
    ("n_batch=1.5", "n_batch=1.5 is refused by llama.cpp"),
])
def test_a_bad_llama_params_setting_is_a_configuration_error_that_names_it(tmp_path, value, words):
    pytest.importorskip("xllamacpp")
    from mtserve.engines.factory import EngineConfigError, create_engine
    from mtserve.settings import Settings

    with pytest.raises(EngineConfigError, match=re.escape(words)):
        create_engine(Settings(home=tmp_path, model=str(_model(tmp_path)), llama_params=value))


class _ContextWindow:
    """llama.cpp's server as far as a prompt's size goes: one that is over ``limit`` characters is
    refused as llama.cpp refuses it (an error object, before any decoding); else a fixed answer."""

    def __init__(self, limit: int):
        self.limit = limit
        self.prompts: list[str] = []

    def handle_chat_completions(self, body, on_chunk):
        prompt = "".join(m["content"] for m in body["messages"])
        self.prompts.append(prompt)
        if len(prompt) > self.limit:
            on_chunk({"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": len(prompt),
                                "n_ctx": self.limit}})
            return
        on_chunk({"choices": [{"delta": {"content": "Commit"}, "finish_reason": "stop"}],
                  "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1}})


def test_a_guidance_too_long_for_the_context_is_cut_until_it_fits():
    from mtserve.engines.base import EngineRequest, Guidance, PromptTooLong

    engine = _engine()
    plain = EngineRequest("提交", "zh", "en")
    engine._server = server = _ContextWindow(limit=len("".join(
        m["content"] for m in engine.build_request(plain)["messages"])) + 400)
    context = "".join(chr(0x4E00 + i) for i in range(1000))  # 1,000 distinct characters: over by far
    result = engine.translate(EngineRequest("提交", "zh", "en", guidance=Guidance(context=context)))
    assert result.text == "Commit"
    assert len(server.prompts) >= 3  # refused, halved (500), refused, halved again... until it fit
    assert context[-100:] in server.prompts[-1]  # the end of the context, nearest the text, is kept
    assert context[:100] not in server.prompts[-1]
    assert len(server.prompts[-1]) <= server.limit
    server.limit = 10  # not even the bare segment fits: a clear error, which the API answers with 413
    with pytest.raises(PromptTooLong, match="MTSERVE_CTX_PER_SLOT"):
        engine.translate(EngineRequest("提交", "zh", "en", guidance=Guidance(context=context)))
    with pytest.raises(PromptTooLong):
        engine.translate(plain)


def test_a_strict_retry_waiting_for_its_turn_can_be_cancelled():
    from mtserve.engines.base import CancelToken, EngineCancelled

    engine = _engine()
    cancel = CancelToken()
    with engine._one_strict_at_a_time(None):  # another retry holds the turn
        cancel.cancel()
        with pytest.raises(EngineCancelled, match="waiting for the strict retry"):
            with engine._one_strict_at_a_time(cancel):
                pass
    with engine._one_strict_at_a_time(cancel):  # the turn was given back
        pass
