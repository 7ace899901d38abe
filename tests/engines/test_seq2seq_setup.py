"""Choosing, converting and serving a seq2seq model: the errors a user meets, and the happy paths."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from mtserve.convert import ConversionError, Quantization, convert
from mtserve.engines.base import EngineRequest
from mtserve.engines.factory import EngineConfigError, create_engine
from mtserve.engines.seq2seq import (
    MANIFEST,
    ModelDirError,
    inspect_model_dir,
    load_spec,
    normalize_language,
    plan_sub_batches,
    spec_from_hf_dir,
)
from mtserve.settings import Settings
from tests.servers import free_port, server_log, start_server, stop_server, wait_ready


def mtserve(*args: str, stdin: str | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
    env = {**os.environ, "MTSERVE_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mtserve.cli", *args],
        input=stdin,
        text=True,
        capture_output=True,
        timeout=timeout,
        env=env,
    )


# --- what a directory is -------------------------------------------------------------------
def test_inspect_tells_the_formats_apart(seq2seq_models, tmp_path):
    assert inspect_model_dir(seq2seq_models.path("hf")).format == "huggingface"
    assert inspect_model_dir(seq2seq_models.path("onnx")).format == "onnx"
    assert inspect_model_dir(seq2seq_models.path("ct2")).format == "ctranslate2"
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    assert inspect_model_dir(gguf).format == "gguf"
    (tmp_path / "empty").mkdir()
    assert inspect_model_dir(tmp_path / "empty").format == "unknown"


def test_converted_directories_carry_their_spec(seq2seq_models):
    manifest = json.loads((seq2seq_models.path("onnx-int8-static-qdq") / MANIFEST).read_text())
    assert manifest["format"] == "onnx"
    assert manifest["quantization"]["method"] == "static" and manifest["quantization"]["format"] == "qdq"
    spec = load_spec(seq2seq_models.path("ct2-int8"))
    assert (spec.family, spec.sources, spec.targets) == ("marian", ("zh",), ("en",))


@pytest.mark.parametrize(
    "family, languages", [("m2m100", {"zh", "en", "fr"}), ("nllb", {"zh", "zt", "en", "fr"})]
)
def test_multilingual_specs_list_their_languages(seq2seq_models, family, languages):
    spec = load_spec(seq2seq_models.path("hf", family))
    assert spec.family == family
    assert languages <= set(spec.sources) and languages <= set(spec.targets)


def test_marian_pair_comes_from_the_name_when_the_tokenizer_does_not_say(seq2seq_models, tmp_path):
    model = tmp_path / "opus-mt-de-en"
    model.mkdir()
    config = json.loads((seq2seq_models.path("hf") / "config.json").read_text())
    (model / "config.json").write_text(json.dumps(config))
    (model / "vocab.json").write_text(json.dumps({"</s>": 0, "<unk>": 1}))
    spec = spec_from_hf_dir(model)
    assert (spec.sources, spec.targets) == (("de",), ("en",))


def test_marian_multi_target_models_use_their_language_tokens(seq2seq_models, tmp_path):
    model = tmp_path / "opus-mt-en-ROMANCE"
    model.mkdir()
    config = json.loads((seq2seq_models.path("hf") / "config.json").read_text())
    (model / "config.json").write_text(json.dumps(config))
    (model / "vocab.json").write_text(
        json.dumps({"</s>": 0, "<unk>": 1, ">>fra<<": 2, ">>es<<": 3, ">>pt_br<<": 4})
    )
    (model / "tokenizer_config.json").write_text(json.dumps({"source_lang": "en", "target_lang": "ROMANCE"}))
    spec = spec_from_hf_dir(model)
    assert spec.targets == ("es", "fr", "pt") and spec.target_tokens["fr"] == ">>fra<<"


def test_a_marian_model_with_no_known_pair_says_how_to_name_it(seq2seq_models, tmp_path):
    model = tmp_path / "my-model"
    model.mkdir()
    config = json.loads((seq2seq_models.path("hf") / "config.json").read_text())
    config.pop("_name_or_path", None)
    (model / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelDirError, match='"source": "zh", "target": "en"'):
        spec_from_hf_dir(model)


@pytest.mark.parametrize(
    "code, expected",
    [
        ("zh", "zh"),
        ("zho", "zh"),
        ("zho_Hans", "zh"),
        ("cmn_Hant", "zt"),
        ("eng", "en"),
        ("fra", "fr"),
        ("ger", "de"),
        ("xx", None),
    ],
)
def test_language_codes_normalize_to_mtserve_codes(code, expected):
    assert normalize_language(code) == expected


@pytest.mark.parametrize(
    "lengths, limit, kind, expected",
    [
        ([1, 2, 3, 4, 5], 2, "examples", [[0, 1], [2, 3], [4]]),
        ([2, 2, 3, 9, 20], 12, "tokens", [[0, 1, 2], [3], [4]]),  # 3 rows x 3 = 9 fits; 4 x 9 does not
        ([50], 10, "tokens", [[0]]),  # one row always runs, however long
    ],
)
def test_sub_batches_respect_the_budget(lengths, limit, kind, expected):
    assert plan_sub_batches(lengths, limit, kind) == expected


# --- choosing an engine --------------------------------------------------------------------
def settings_for(engine: str, model: Path | str) -> Settings:
    return Settings(engine=engine, model=str(model), threads=1)


@pytest.mark.parametrize(
    "engine, variant, message",
    [
        ("onnx", "hf", "Convert it first: `mtserve convert"),
        ("ctranslate2", "hf", "--to ctranslate2"),
        ("ctranslate2", "onnx", "it is an ONNX export; use --engine onnx"),
        ("onnx", "ct2", "it is a CTranslate2 model; use --engine ctranslate2"),
        ("transformers", "onnx", "use --engine onnx"),
        ("llamacpp", "hf", "it is a Hugging Face model directory; use --engine transformers"),
    ],
)
def test_a_wrong_engine_and_model_pair_is_a_clear_error(seq2seq_models, engine, variant, message):
    with pytest.raises(EngineConfigError, match=message.replace("(", r"\(")):
        create_engine(settings_for(engine, seq2seq_models.path(variant)))


def test_a_gguf_file_with_a_seq2seq_engine_points_to_llamacpp(tmp_path):
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(EngineConfigError, match="GGUF file; use --engine llamacpp"):
        create_engine(settings_for("onnx", gguf))


def test_a_seq2seq_engine_without_a_directory_says_how_to_make_one():
    with pytest.raises(EngineConfigError, match="mtserve convert HF_MODEL_DIR --to onnx"):
        create_engine(settings_for("onnx", "qwen2.5-coder-1.5b-instruct-q4_k_m"))


def test_the_factory_passes_batching_and_thread_settings(seq2seq_models):
    settings = Settings(
        engine="ctranslate2",
        model=str(seq2seq_models.path("ct2-int8")),
        threads=2,
        inter_threads=2,
        max_batch_size=16,
        batch_type="tokens",
        compute_type="int8",
    )
    engine = create_engine(settings)
    assert (engine.max_concurrency, engine.max_batch_size, engine.batch_type) == (2, 16, "tokens")
    assert engine.compute_type == "int8"


# --- converting ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(target="onnx", quantize="int8", quantization=Quantization(static=True)),
            "needs calibration sentences",
        ),
        (
            dict(target="onnx", quantize="int8", quantization=Quantization(calibration=Path("x.txt"))),
            "add --static",
        ),
        (dict(target="onnx", quantization=Quantization(static=True)), "only apply with --quantize int8"),
        (
            dict(
                target="ctranslate2",
                quantize="int8",
                quantization=Quantization(static=True, calibration=Path("x")),
            ),
            "static quantization is for ONNX",
        ),
        (dict(target="tflite"), "--to must be one of"),
    ],
)
def test_conversion_options_that_do_not_fit_are_refused(seq2seq_models, tmp_path, kwargs, message):
    with pytest.raises(ConversionError, match=message):
        convert(seq2seq_models.path("hf"), out=tmp_path / "out", **kwargs)


def test_converting_a_converted_model_is_refused(seq2seq_models, tmp_path):
    with pytest.raises(ConversionError, match="already an ONNX export"):
        convert(seq2seq_models.path("onnx"), "ctranslate2", tmp_path / "out")


def test_an_existing_output_is_kept_unless_forced(seq2seq_models, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(ConversionError, match="add --force"):
        convert(seq2seq_models.path("hf"), "ctranslate2", out)
    assert (out / "keep.txt").read_text() == "mine"


def test_convert_then_translate_from_the_command_line(seq2seq_models, tmp_path, load_engine):
    out = tmp_path / "ct2"
    result = mtserve("convert", str(seq2seq_models.path("hf")), "--to", "ctranslate2", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert f"--engine ctranslate2 --model {out}" in result.stdout
    result = mtserve(
        "translate",
        "--engine",
        "ctranslate2",
        "--model",
        str(out),
        "-s",
        "zh",
        "-t",
        "en",
        stdin="我是中国人。\n\n他们在学校学习。\n",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == ""
    reference = load_engine("ctranslate2").translate_batch(
        [EngineRequest(t, "zh", "en") for t in ("我是中国人。", "他们在学校学习。")]
    )
    assert [lines[0], lines[2]] == [r.text for r in reference]


def test_the_command_line_names_a_wrong_pair(seq2seq_models):
    result = mtserve(
        "translate",
        "你好",
        "--engine",
        "ctranslate2",
        "--model",
        str(seq2seq_models.path("onnx")),
        "-s",
        "zh",
    )
    assert result.returncode == 2
    assert "use --engine onnx" in result.stderr and "Traceback" not in result.stderr


# --- serving -----------------------------------------------------------------------------------
def test_serve_onnx_answers_translate_over_http(seq2seq_models, load_engine):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(
        port,
        seq2seq_models.path("onnx"),
        {
            "MTSERVE_ENGINE": "onnx",
            "MTSERVE_THREADS": "1",
            "MTSERVE_MAX_QUEUE_DELAY_MS": "5",
        },
    )
    try:
        wait_ready(proc, url, timeout_s=120)
        texts = ["我是中国人。", "他们在学校学习。", "水很热。"]
        one = httpx.post(f"{url}/translate", json={"q": texts[0], "source": "zh", "target": "en"}, timeout=60)
        assert one.status_code == 200, (one.text, server_log(proc))
        many = httpx.post(f"{url}/translate", json={"q": texts, "source": "zh", "target": "en"}, timeout=60)
        assert many.status_code == 200, many.text
        languages = httpx.get(f"{url}/languages", timeout=10).json()
        assert {lang["code"] for lang in languages} == {"zh", "en"}
        # a Marian zh->en model translates one direction: /languages says so, and en->zh is a 400
        assert {lang["code"]: lang["targets"] for lang in languages} == {"zh": ["en"], "en": []}
        wrong = httpx.post(f"{url}/translate", json={"q": "I am here.", "source": "en", "target": "zh"},
                           timeout=60)
        assert wrong.status_code == 400, wrong.text
        # LibreTranslate's words, with mtserve's advice beside them
        assert wrong.json()["error"] == "Chinese (zh) is not available as a target language from English (en)"
        assert "does not translate en -> zh" in wrong.json()["hint"]
        expected = [
            r.text
            for r in load_engine("onnx").translate_batch([EngineRequest(t, "zh", "en") for t in texts])
        ]
        got = many.json()["translatedText"]
        assert len(got) == 3 and got[0] == one.json()["translatedText"]
        # the service may tidy whitespace around the raw engine output; the words are the engine's
        assert [g.split() for g in got] == [e.split() for e in expected]
    finally:
        stop_server(proc)
