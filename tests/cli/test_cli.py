"""The `mtserve` command as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.servers import TEST_MODEL


def mtserve(*args: str, stdin: str | None = None, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtserve.cli", *args], input=stdin, text=True,
                          capture_output=True, timeout=timeout, env={**os.environ})


@pytest.mark.model
def test_translate_reads_stdin_line_by_line_keeping_empty_lines(model_path):
    result = mtserve("translate", "--source", "zh", "--target", "en", "--model", TEST_MODEL,
                     stdin="我喜欢猫。\n\n今天很冷。\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert "cat" in lines[0].lower() and "cold" in lines[2].lower()


@pytest.mark.model
def test_translate_a_text_argument_with_auto_source(model_path):
    result = mtserve("translate", "我喜欢音乐。", "--model", TEST_MODEL)
    assert result.returncode == 0, result.stderr
    assert "music" in result.stdout.lower()


def test_models_list_shows_known_models():
    result = mtserve("models", "list")
    assert result.returncode == 0
    assert "qwen2.5-coder-1.5b-instruct-q4_k_m" in result.stdout and "(default)" in result.stdout


def test_unknown_model_is_a_clear_error():
    result = mtserve("translate", "你好", "--model", "no-such-model")
    assert result.returncode == 2
    assert "neither a known model name" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [["translate", "你好"], ["translate-file", "-t", "en", "IN"]])
def test_a_model_llama_cpp_cannot_load_is_one_line_not_a_traceback(tmp_path, command):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(range(256)) * 4)  # passes the header check, fails in llama.cpp
    text = tmp_path / "in.txt"
    text.write_text("你好\n", encoding="utf-8")
    result = mtserve(*[str(text) if part == "IN" else part for part in command], "--model", str(broken))
    assert result.returncode == 2, result.stderr
    assert "mtserve: the engine did not start: " in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "in.en.txt").exists()


def test_missing_model_names_the_command_to_run(tmp_path):
    result = mtserve("models", "path", "qwen2.5-coder-1.5b-instruct-q4_k_m", "--home", str(tmp_path))
    assert result.returncode == 2
    assert "mtserve models pull qwen2.5-coder-1.5b-instruct-q4_k_m" in result.stderr


def test_settings_markdown_lists_every_setting():
    from mtserve.settings import Settings

    result = mtserve("settings", "--markdown")
    assert result.returncode == 0
    for name in Settings.model_fields:
        assert f"`MTSERVE_{name.upper()}`" in result.stdout


def test_a_setting_with_fixed_choices_lists_them_and_refuses_others(capsys):
    from mtserve.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["serve", "--script-grammar", "retry"]).script_grammar == "retry"
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["serve", "--script-grammar", "sometimes"])
    assert exc.value.code == 2
    assert "invalid choice: 'sometimes'" in capsys.readouterr().err


GIT_BUTTON = "这是 Git 图形客户端里的一个按钮：把暂存的更改记录到仓库。"


@pytest.mark.model
def test_translate_takes_a_context_and_can_leave_the_translation_memory_out(model_path, tmp_path):
    """The CLI's --context reaches the prompt (the Git button is "commit", not a form's "submit"),
    and --no-tm skips an exact match the memory would serve."""
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / model_path.name).symlink_to(model_path)
    env = {"MTSERVE_HOME": str(home)}
    memory = tmp_path / "memory.tsv"
    memory.write_text("我喜欢猫。\tCats are what I like, says the memory.\n", encoding="utf-8")
    imported = mtserve_env(env, "tm", "import", str(memory), "--source", "zh", "--target", "en")
    assert imported.returncode == 0, imported.stderr

    guided = mtserve_env(env, "translate", "提交", "-s", "zh", "-t", "en", "--model", TEST_MODEL,
                         "--context", GIT_BUTTON)
    assert guided.returncode == 0, guided.stderr
    assert "commit" in guided.stdout.lower(), guided.stdout

    stored = mtserve_env(env, "translate", "我喜欢猫。", "-s", "zh", "-t", "en", "--model", TEST_MODEL)
    engine = mtserve_env(env, "translate", "我喜欢猫。", "-s", "zh", "-t", "en", "--model", TEST_MODEL, "--no-tm")
    assert stored.stdout.strip() == "Cats are what I like, says the memory."
    assert engine.returncode == 0 and "memory" not in engine.stdout and "cat" in engine.stdout.lower()


def mtserve_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtserve.cli", *args], text=True, capture_output=True,
                          timeout=180, env={**os.environ, **env})
