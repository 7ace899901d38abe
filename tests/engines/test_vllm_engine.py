"""The vllm engine without a GPU: sampling, prompts, device and model checks, and the
streaming / cancellation plumbing through its event-loop thread, against a test double of
vLLM's async engine. One test at the end needs real vLLM on a CUDA GPU and says so when skipped.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mtserve.engines.base import CancelToken, EngineCancelled, EngineDead, EngineError, EngineRequest
from mtserve.engines.factory import EngineConfigError, create_engine, create_vllm_engine
from mtserve.engines.prompts import TEMPLATES, template_for
from mtserve.engines.vllm import (
    ALTERNATIVE_SAMPLING,
    CPU_ENGINES,
    GREEDY,
    VllmConfigError,
    VllmEngine,
    cuda_available,
    require_vllm,
    resolve_model,
    sampling_params_for,
    select_device,
    strict_regex,
)
from mtserve.models.registry import known_models, sampling_defaults
from mtserve.settings import Settings

HUNYUAN = "hunyuan-mt-7b-q4_k_m"
ZH = "国际商业机器公司发布了新电脑。"
TERMS = (("国际商业机器公司", "IBM"),)


# --- sampling ------------------------------------------------------------------------------
def test_greedy_is_the_default_and_every_knob_is_neutral():
    params = sampling_params_for(EngineRequest("我喜欢猫。", "zh", "en"), max_tokens=40)
    assert params["temperature"] == 0.0 and params["seed"] is None
    assert params["max_tokens"] == 40
    # nothing left for vLLM (or a generation_config.json) to fill in
    assert {k: params[k] for k in GREEDY} == GREEDY
    assert params["repetition_penalty"] == 1.0 and params["top_k"] == 0
    assert "structured_outputs" not in params


def test_a_sampled_request_keeps_its_temperature_and_seed_in_greedy_mode():
    request = EngineRequest("我喜欢猫。", "zh", "en", temperature=0.7, seed=3)
    params = sampling_params_for(request, max_tokens=40)
    assert params["temperature"] == 0.7 and params["seed"] == 3
    for key, value in ALTERNATIVE_SAMPLING.items():  # llama.cpp's truncation, as its alternatives get
        assert params[key] == value


def test_registry_holds_hunyuan_recommended_sampling():
    entry = known_models()[HUNYUAN]
    assert entry.sampling == {"top_k": 20, "top_p": 0.6, "repetition_penalty": 1.05, "temperature": 0.7}
    assert isinstance(entry.sampling["top_k"], int)
    # a directory only known by its family gets the family's recommendation; Qwen has none
    assert sampling_defaults(None, "hunyuan-mt") == entry.sampling
    assert sampling_defaults("qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen") == {}


def test_model_sampling_applies_only_when_asked_for():
    model = known_models()[HUNYUAN].sampling
    request = EngineRequest(ZH, "zh", "en")
    greedy = sampling_params_for(request, max_tokens=64, model_sampling=model)
    assert greedy["temperature"] == 0.0 and greedy["top_k"] == 0  # mode greedy ignores the table
    sampled = sampling_params_for(request, max_tokens=64, mode="model", model_sampling=model)
    for key, value in model.items():
        assert sampled[key] == value
    # the request's own temperature and seed (alternatives) still win over the model's
    alternative = EngineRequest(ZH, "zh", "en", temperature=1.0, seed=5)
    params = sampling_params_for(alternative, max_tokens=64, mode="model", model_sampling=model)
    assert params["temperature"] == 1.0 and params["seed"] == 5
    assert params["top_k"] == model["top_k"] and params["repetition_penalty"] == model["repetition_penalty"]
    # a model without a recommendation decodes greedily even in model mode
    assert sampling_params_for(request, max_tokens=64, mode="model", model_sampling={})["temperature"] == 0.0
    with pytest.raises(ValueError, match="sampling must be one of"):
        sampling_params_for(request, max_tokens=64, mode="creative")


def test_the_strict_retry_is_greedy_and_keeps_cjk_out_of_english():
    model = known_models()[HUNYUAN].sampling
    retry = EngineRequest("他很高兴。", "zh", "en", strict=True)
    params = sampling_params_for(retry, max_tokens=32, mode="model", model_sampling=model)
    assert params["temperature"] == 0.0 and params["seed"] is None
    regex = params["structured_outputs"]["regex"]
    assert re.fullmatch(regex, "He is very happy, isn't he? (100%)")
    assert not re.fullmatch(regex, "He is 高兴.")
    assert not re.fullmatch(regex, "カタカナ") and not re.fullmatch(regex, "한국어")
    # with a term that must stay in CJK, nothing is constrained; into Chinese, English words are
    # (tests/quality/test_guardrails.py)
    assert strict_regex("zh", "en", (("北京", "北京"),)) is None
    into_chinese = sampling_params_for(EngineRequest("He is happy.", "en", "zh", strict=True), max_tokens=32)
    assert not re.fullmatch(into_chinese["structured_outputs"]["regex"], "他很 happy。")


# --- prompts ---------------------------------------------------------------------------------
QWEN_LIKE_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def chat_tokenizer():
    """A real Hugging Face fast tokenizer (one token per character) with a chat template."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    vocab = {"[UNK]": 0, "<|im_start|>": 1, "<|im_end|>": 2}
    for ch in sorted(set(map(chr, range(32, 127))) | set(ZH + "我喜欢猫他很高兴")):
        vocab.setdefault(ch, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", additional_special_tokens=["<|im_start|>", "<|im_end|>"]
    )
    tokenizer.chat_template = QWEN_LIKE_CHAT_TEMPLATE
    return tokenizer


def _engine(family: str = "qwen", **options) -> VllmEngine:
    options.setdefault("sampling_factory", dict)
    return VllmEngine("/models/x", model_name="x", family=family, languages=("zh", "en", "fr"), **options)


def _turns(rendered: str) -> list[tuple[str, str]]:
    return re.findall(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>", rendered, flags=re.DOTALL)


def test_prompts_are_rendered_by_the_models_own_chat_template(chat_tokenizer):
    engine = _engine("qwen", tokenizer=chat_tokenizer)
    request = EngineRequest("我喜欢猫。", "zh", "en")
    rendered = engine.render(request)
    messages = template_for("qwen").messages(request.text, "zh", "en")
    assert rendered == chat_tokenizer.apply_chat_template(messages, tokenize=False,
                                                          add_generation_prompt=True)
    assert rendered.endswith("<|im_start|>assistant\n")  # the model answers next
    turns = _turns(rendered)
    assert turns[0][0] == "system" and "Chinese" in turns[0][1] and "English" in turns[0][1]
    examples = TEMPLATES["qwen"].examples[("zh", "en")]
    assert [role for role, _ in turns[1:]] == ["user", "assistant"] * len(examples) + ["user"]
    assert turns[-1] == ("user", "我喜欢猫。")
    # the token ids vLLM gets are this text, tokenized without adding special tokens again
    assert engine.encode(request) == chat_tokenizer.encode(rendered, add_special_tokens=False)


def test_qwen_glossary_goes_into_the_texts_turn_and_strict_replaces_the_system_prompt(chat_tokenizer):
    engine = _engine("qwen", tokenizer=chat_tokenizer)
    turns = _turns(engine.render(EngineRequest(ZH, "zh", "en", glossary=TERMS)))
    plain_turns = _turns(engine.render(EngineRequest(ZH, "zh", "en")))
    assert turns[:-1] == plain_turns[:-1]  # the cached prefix is the same with or without terms
    assert turns[-1][0] == "user" and "国际商业机器公司 → IBM" in turns[-1][1] and turns[-1][1].endswith(ZH)
    strict = _turns(engine.render(EngineRequest(ZH, "zh", "en", strict=True)))[0][1]
    plain = _turns(engine.render(EngineRequest(ZH, "zh", "en")))[0][1]
    assert strict != plain and "nothing else" in strict


def test_hunyuan_families_use_their_model_card_prompts(chat_tokenizer):
    hunyuan = _engine("hunyuan-mt", tokenizer=chat_tokenizer)
    turns = _turns(hunyuan.render(EngineRequest(ZH, "zh", "en")))
    assert [role for role, _ in turns] == ["user"]  # no system prompt, as the model card says
    assert turns[0][1].startswith("把下面的文本翻译成英语") and turns[0][1].endswith(ZH)
    english = _turns(hunyuan.render(EngineRequest("Bonjour.", "fr", "en")))[0][1]
    assert english.startswith("Translate the following segment into English")
    strict = _turns(hunyuan.render(EngineRequest(ZH, "zh", "en", strict=True)))[0][1]
    assert "Output only the translation" in strict and strict.endswith(ZH)

    hy_mt = _engine("hy-mt1.5", tokenizer=chat_tokenizer)
    [(role, user)] = _turns(hy_mt.render(EngineRequest(ZH, "zh", "en", glossary=TERMS)))
    assert role == "user" and user.startswith("参考下面的翻译：\n国际商业机器公司 翻译成 IBM")
    assert user.endswith(ZH)


# --- where it runs, and what it loads ---------------------------------------------------------
def test_device_selection_names_the_cpu_engines():
    assert select_device("auto", probe=lambda: True) == "cuda"
    assert select_device("cuda", probe=lambda: True) == "cuda"
    for requested in ("auto", "cuda"):
        with pytest.raises(VllmConfigError) as excinfo:
            select_device(requested, probe=lambda: False)
        message = str(excinfo.value)
        assert "needs a CUDA GPU" in message
        assert all(engine in message for engine in CPU_ENGINES)
    with pytest.raises(VllmConfigError, match="not with --device cpu"):
        select_device("cpu", probe=lambda: True)
    with pytest.raises(VllmConfigError, match="device must be one of"):
        select_device("tpu")


def _hf_dir(root: Path, name: str = "Qwen2.5-0.5B-Instruct", **manifest) -> Path:
    path = root / name
    path.mkdir()
    config = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"]}
    (path / "config.json").write_text(json.dumps(config))
    (path / "model.safetensors").write_bytes(b"")
    if manifest:
        (path / "mtserve.json").write_text(json.dumps({"format": "huggingface", **manifest}))
    return path


@pytest.mark.skipif(cuda_available(), reason="this machine has a CUDA GPU")
def test_on_this_cpu_machine_the_vllm_engine_says_which_engines_to_use(tmp_path):
    settings = Settings(home=tmp_path, engine="vllm", model=str(_hf_dir(tmp_path)))
    with pytest.raises(EngineConfigError) as excinfo:
        create_engine(settings)
    message = str(excinfo.value)
    assert "needs a CUDA GPU" in message and "--engine llamacpp" in message


def test_a_gguf_model_with_vllm_is_refused_with_the_conversion_command(tmp_path):
    gguf = tmp_path / "model-q4_k_m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    for model in (str(gguf), "qwen2.5-coder-0.5b-instruct-q4_k_m"):
        with pytest.raises(EngineConfigError) as excinfo:
            create_engine(Settings(home=tmp_path, engine="vllm", model=model))
        message = str(excinfo.value)
        assert "Hugging Face format model directory" in message
        assert f"mtserve convert {model} --to hf --out DIR" in message
        assert "--engine llamacpp" in message
    # a directory holding only a GGUF file is one too
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "m.gguf").write_bytes(b"GGUF")
    with pytest.raises(VllmConfigError, match="is a GGUF file"):
        resolve_model(str(folder))


def test_seq2seq_and_missing_directories_are_refused(tmp_path):
    seq2seq = tmp_path / "opus-mt-zh-en"
    seq2seq.mkdir()
    (seq2seq / "config.json").write_text(json.dumps({"model_type": "marian", "is_encoder_decoder": True}))
    with pytest.raises(VllmConfigError, match="seq2seq .*--engine transformers"):
        resolve_model(str(seq2seq))
    with pytest.raises(VllmConfigError, match="neither"):
        resolve_model(str(tmp_path / "nothing-here"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(VllmConfigError, match="config.json"):
        resolve_model(str(empty))
    # and llama.cpp, handed a decoder-only Hugging Face directory, points to vllm
    with pytest.raises(EngineConfigError, match="--engine vllm"):
        create_engine(Settings(home=tmp_path, engine="llamacpp", model=str(_hf_dir(tmp_path))))


def test_a_missing_vllm_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError
    with pytest.raises(VllmConfigError) as excinfo:
        require_vllm()
    assert "pip install 'mtserve[gpu]'" in str(excinfo.value) and "CUDA" in str(excinfo.value)
    settings = Settings(home=tmp_path, engine="vllm", model=str(_hf_dir(tmp_path)))
    with pytest.raises(EngineConfigError, match=re.escape("pip install 'mtserve[gpu]'")):
        create_vllm_engine(settings, cuda_probe=lambda: True)


def test_the_factory_builds_the_engine_from_the_settings(tmp_path):
    converted = _hf_dir(tmp_path, "converted", family="hunyuan-mt", registry_name=HUNYUAN, model_name=HUNYUAN)
    settings = Settings(home=tmp_path, engine="vllm", model=str(converted), max_num_seqs=12,
                        max_model_len=2048, gpu_memory_utilization=0.5, quantization="fp8", sampling="model")
    engine = create_vllm_engine(settings, cuda_probe=lambda: True, importer=lambda name: object())
    assert isinstance(engine, VllmEngine) and engine.name == "vllm" and engine.prompted
    assert engine.max_concurrency == 12  # the scheduler keeps max_num_seqs segments in flight
    assert engine.family == "hunyuan-mt" and engine.model_name == HUNYUAN
    assert engine.languages == known_models()[HUNYUAN].languages
    assert engine.model_sampling == known_models()[HUNYUAN].sampling
    args = engine.engine_args()
    assert args["model"] == str(converted.resolve()) and args["tokenizer"] == args["model"]
    assert (args["max_num_seqs"], args["max_model_len"], args["gpu_memory_utilization"]) == (12, 2048, 0.5)
    assert args["quantization"] == "fp8" and args["enable_prefix_caching"] is True
    # no quantization is None for vLLM, not ""; a directory without a manifest is guessed by name
    by_name = Settings(home=tmp_path, engine="vllm", model=str(_hf_dir(tmp_path, "HY-MT1.5-7B")))
    plain = create_vllm_engine(by_name, cuda_probe=lambda: True, importer=lambda name: object())
    assert plain.engine_args()["quantization"] is None and plain.family == "hy-mt1.5"
    assert plain.engine_args()["dtype"] == "auto" and plain.sampling == "greedy"
    with pytest.raises(EngineConfigError, match="quantization must be one of"):
        create_vllm_engine(Settings(home=tmp_path, engine="vllm", model=str(converted), quantization="int3"),
                           cuda_probe=lambda: True, importer=lambda name: object())


def test_a_hugging_face_model_id_is_passed_to_vllm():
    model = resolve_model("tencent/Hunyuan-MT-7B", registry={})
    assert model.source == "tencent/Hunyuan-MT-7B" and model.family == "hunyuan-mt"


# --- streaming and cancellation through the loop thread ------------------------------------------
class CharTokenizer:
    """One id per character; renders messages as role: content lines."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}\n" for m in messages) + "<assistant>"

    def encode(self, text, add_special_tokens=False):
        return [ord(ch) for ch in text]


@dataclass
class FakeCompletion:
    text: str
    token_ids: list[int]
    finish_reason: str | None = None


@dataclass
class FakeOutput:
    prompt_token_ids: list[int]
    outputs: list[FakeCompletion]
    finished: bool = False


class EngineDeadError(RuntimeError):
    """Named like vLLM's, which is what the engine looks at."""


@dataclass
class FakeAsyncEngine:
    """vLLM's async engine, as the vllm engine uses it: ``generate`` streams DELTA outputs.

    It "translates" by upper-casing the last user turn of the prompt it was given, a few
    characters (one token each) per step, and honours ``max_tokens``. ``hold`` keeps a
    request waiting after ``hold`` steps until it is aborted.
    """

    hold: int | None = None
    fail: BaseException | None = None
    finish_as: str | None = None
    step_s: float = 0.001
    requests: list[tuple[str, dict]] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    threads: set[str] = field(default_factory=set)
    running: int = 0
    most_running: int = 0
    shut_down: bool = False
    stops: dict[str, asyncio.Event] = field(default_factory=dict)

    async def generate(self, prompt, sampling_params, request_id):
        self.threads.add(threading.current_thread().name)
        self.requests.append((request_id, sampling_params))
        stop = asyncio.Event()
        self.stops[request_id] = stop
        ids = prompt["prompt_token_ids"]
        source = "".join(map(chr, ids)).rsplit("<user>", 1)[1].rsplit("\n<assistant>", 1)[0]
        answer = source.upper()
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            if self.fail is not None:
                raise self.fail
            produced = 0
            step = 0
            while produced < len(answer):
                if self.hold is not None and step == self.hold:
                    await stop.wait()
                    return
                await asyncio.sleep(self.step_s)
                chunk = answer[produced:produced + 3][: sampling_params["max_tokens"] - produced]
                produced += len(chunk)
                step += 1
                done = produced >= min(len(answer), sampling_params["max_tokens"])
                reason = None
                if done:
                    reason = self.finish_as or ("length" if produced < len(answer) else "stop")
                yield FakeOutput(ids, [FakeCompletion(chunk, [ord(c) for c in chunk], reason)], done)
                if done:
                    return
        finally:
            self.running -= 1

    async def abort(self, request_id):
        self.threads.add(threading.current_thread().name)
        self.aborted.append(request_id)
        self.stops[request_id].set()

    def shutdown(self):
        self.shut_down = True


def _loaded(fake: FakeAsyncEngine, **options) -> VllmEngine:
    engine = _engine("qwen", engine_factory=lambda: fake, tokenizer=CharTokenizer(), **options)
    engine.load()
    return engine


def test_translate_streams_deltas_through_the_loop_thread():
    fake = FakeAsyncEngine()
    engine = _loaded(fake)
    try:
        deltas: list[str] = []
        callers: set[str] = set()

        def on_delta(text: str) -> None:
            deltas.append(text)
            callers.add(threading.current_thread().name)

        text = "I like cats and dogs."
        result = engine.translate(EngineRequest(text, "en", "fr"), on_delta=on_delta)
        assert result.text == text.upper() == "".join(deltas)
        assert len(deltas) > 1  # streamed, not one final chunk
        assert result.generated_tokens == len(text) and result.finish_reason == "stop"
        assert result.prompt_tokens == len(engine.encode(EngineRequest(text, "en", "fr")))
        assert result.engine_ms > 0
        # vLLM ran on the engine's loop thread; the callback on the caller's
        assert fake.threads == {engine._loop.thread.name} and callers == {threading.current_thread().name}
        [(_, params)] = fake.requests
        assert params["temperature"] == 0.0 and params["max_tokens"] <= engine.max_output_tokens
    finally:
        engine.close()
    assert fake.shut_down and not engine._loop


def test_max_tokens_reaches_vllm_and_a_cut_output_reports_length():
    fake = FakeAsyncEngine()
    engine = _loaded(fake)
    try:
        result = engine.translate(EngineRequest("a long sentence to cut", "en", "fr", max_tokens=5))
        assert result.finish_reason == "length" and result.generated_tokens == 5
        assert result.text == "A LON"
        assert fake.requests[-1][1]["max_tokens"] == 5
    finally:
        engine.close()


def test_cancel_while_decoding_aborts_the_request_in_vllm():
    fake = FakeAsyncEngine(hold=1)
    engine = _loaded(fake)
    try:
        cancel = CancelToken()
        deltas: list[str] = []

        def on_delta(text: str) -> None:  # the client goes away after the first words
            deltas.append(text)
            cancel.cancel()

        started = time.monotonic()
        with pytest.raises(EngineCancelled):
            engine.translate(EngineRequest("never finished", "en", "fr"), cancel=cancel,
                             on_delta=on_delta)
        assert time.monotonic() - started < 5
        assert deltas == ["NEV"]
        assert fake.aborted == [fake.requests[0][0]]  # abort(request_id) of that very request
        assert fake.threads == {engine._loop.thread.name}
    finally:
        engine.close()


def test_cancel_while_waiting_for_a_first_token_aborts_too():
    fake = FakeAsyncEngine(hold=0)  # queued in vLLM: no output at all yet
    engine = _loaded(fake)
    try:
        cancel = CancelToken()
        threading.Timer(0.2, cancel.cancel).start()
        with pytest.raises(EngineCancelled):
            engine.translate(EngineRequest("queued", "en", "fr"), cancel=cancel)
        assert fake.aborted == [fake.requests[0][0]]
        # the engine still serves the next request
        fake.hold = None
        assert engine.translate(EngineRequest("next", "en", "fr")).text == "NEXT"
    finally:
        engine.close()


def test_many_callers_decode_at_once():
    fake = FakeAsyncEngine(step_s=0.01)
    engine = _loaded(fake, max_num_seqs=8)
    try:
        texts = [f"sentence number {i}" for i in range(8)]
        results: dict[int, str] = {}

        def call(i: int) -> None:
            results[i] = engine.translate(EngineRequest(texts[i], "en", "fr")).text

        threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == {i: text.upper() for i, text in enumerate(texts)}
        assert fake.most_running > 1  # interleaved on one loop, not one after another
        assert len({request_id for request_id, _ in fake.requests}) == 8  # one id per request
    finally:
        engine.close()


def test_engine_failures_map_to_engine_errors():
    dead = _loaded(FakeAsyncEngine(fail=EngineDeadError("engine core process exited")))
    try:
        with pytest.raises(EngineDead, match="engine core process exited"):
            dead.translate(EngineRequest("x", "en", "fr"))
    finally:
        dead.close()
    broken = _loaded(FakeAsyncEngine(fail=ValueError("bad prompt")))
    try:
        with pytest.raises(EngineError, match="bad prompt") as excinfo:
            broken.translate(EngineRequest("x", "en", "fr"))
        assert not isinstance(excinfo.value, EngineDead)
    finally:
        broken.close()
    aborted = _loaded(FakeAsyncEngine(finish_as="abort"))
    try:
        with pytest.raises(EngineError, match="aborted"):
            aborted.translate(EngineRequest("x", "en", "fr"))
    finally:
        aborted.close()


def test_prompt_longer_than_max_model_len_is_a_clear_error_and_close_is_final():
    engine = _loaded(FakeAsyncEngine(), max_model_len=64)
    with pytest.raises(EngineError, match="MTSERVE_MAX_MODEL_LEN"):
        engine.translate(EngineRequest("x" * 200, "en", "fr"))
    engine.close()
    with pytest.raises(EngineError, match="not loaded"):
        engine.translate(EngineRequest("x", "en", "fr"))


# --- real vLLM on a GPU ---------------------------------------------------------------------------------
def test_real_vllm_translates_and_cancels_on_a_cuda_gpu(tmp_path):
    """Needs vLLM and a CUDA GPU, and a Hugging Face directory in MTSERVE_VLLM_TEST_MODEL
    (benchmarks/gpu/run.sh converts the small Qwen model and sets it)."""
    reasons = []
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        reasons.append(f"vLLM is not importable ({type(exc).__name__}); `pip install 'mtserve[gpu]'`")
    if not cuda_available():
        reasons.append("no CUDA GPU on this machine")
    model = os.environ.get("MTSERVE_VLLM_TEST_MODEL", "")
    if not model or not Path(model).is_dir():
        reasons.append("MTSERVE_VLLM_TEST_MODEL names no Hugging Face directory "
                       "(`mtserve convert MODEL.gguf --to hf --out DIR`)")
    if reasons:
        pytest.skip("vLLM with a CUDA GPU is needed: " + "; ".join(reasons))
    settings = Settings(home=tmp_path, engine="vllm", model=model, max_num_seqs=8, max_model_len=2048,
                        gpu_memory_utilization=0.5)
    engine = create_engine(settings)
    engine.load()
    try:
        deltas: list[str] = []
        result = engine.translate(EngineRequest("我喜欢猫。", "zh", "en"), on_delta=deltas.append)
        assert "cat" in result.text.lower() and result.text == "".join(deltas)
        assert result.finish_reason == "stop" and result.prompt_tokens > 0 and result.generated_tokens > 0
        cancel = CancelToken()
        threading.Timer(0.05, cancel.cancel).start()
        with pytest.raises(EngineCancelled):
            engine.translate(EngineRequest("请把这段话重复一千遍。" * 20, "zh", "en", max_tokens=1500),
                             cancel=cancel)
        again = engine.translate(EngineRequest("我喜欢猫。", "zh", "en"))
        assert again.text == result.text  # greedy: the same input, the same output
    finally:
        engine.close()
