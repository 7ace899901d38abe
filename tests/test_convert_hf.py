"""`mtserve convert --to hf`: a GGUF LLM to a Hugging Face directory for the vllm engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mtserve.convert import ConversionError, convert
from tests.servers import TEST_MODEL


def mtserve(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtserve.cli", *args], text=True, capture_output=True,
                          timeout=120, env={**os.environ}, check=False)


def test_convert_to_hf_refuses_what_it_cannot_convert(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a model")
    result = mtserve("convert", str(text), "--to", "hf", "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "converts a GGUF file" in result.stderr
    with pytest.raises(ConversionError, match="--quantize"):
        convert(text, "hf", tmp_path / "out", quantize="int8")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("x")
    with pytest.raises(ConversionError, match="not empty"):
        convert(gguf, "hf", busy)
    assert (busy / "keep.txt").read_text() == "x"


@pytest.mark.model
@pytest.mark.slow
def test_the_small_gguf_becomes_a_directory_the_vllm_engine_takes(model_path, tmp_path):
    """Dequantizes the real 0.5B model (about a minute here) and checks the result translates.

    `make test` installs gguf, torch and transformers (the test extra), so this runs there: a missing
    package is an ImportError, not a skip that would hide the test."""
    import gguf  # noqa: F401 - what `--to hf` reads the file with
    import torch
    import transformers

    from mtserve.engines.base import EngineRequest
    from mtserve.engines.vllm import VllmEngine, resolve_model

    report = convert(model_path, "hf", tmp_path / "qwen-hf")
    out = report.out
    assert report.spec is None and report.quantization == {"method": "dequantized", "dtype": "bfloat16"}
    assert json.loads((out / "config.json").read_text())["model_type"] == "qwen2"
    assert any(out.glob("*.safetensors")) and sum(report.files.values()) > 500e6  # 0.5B in bf16
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left behind
    manifest = json.loads((out / "mtserve.json").read_text())
    assert manifest["family"] == "qwen" and manifest["registry_name"] == TEST_MODEL
    # the vllm engine takes it, with the registry's name and family
    model = resolve_model(str(out))
    assert (model.family, model.registry_name, model.source) == ("qwen", TEST_MODEL, str(out.resolve()))

    # the tokenizer kept the GGUF's chat template: prompts render as llama.cpp renders them
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    engine = VllmEngine(str(out), model_name=TEST_MODEL, family="qwen", languages=("zh", "en"),
                        tokenizer=tokenizer)
    request = EngineRequest("我喜欢猫。", "zh", "en")
    prompt = engine.render(request)
    assert prompt.count("<|im_start|>user") == 7 and prompt.endswith("<|im_start|>assistant\n")

    # and the weights are the model's: greedy decoding translates
    lm = transformers.AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.bfloat16)
    ids = torch.tensor([engine.encode(request)])
    with torch.inference_mode():
        generated = lm.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False)
    text = tokenizer.decode(generated[0, ids.shape[1]:], skip_special_tokens=True)
    assert "cat" in text.lower(), text
