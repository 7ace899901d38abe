"""Every command after the base install (`pip install mtserve`, no extras).

The commands run in a subprocess in which every module that the base install would not bring is
blocked: the modules of the distributions outside pyproject's `dependencies` and what they require.
What works there works after a base install; what needs an extra says which, in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from mtserve.cli import COMMAND_GROUPS, build_parser
from mtserve.extras import EXTRA_OF_MODULE, extra_for
from tests.fakes import FakeEngine
from tests.servers import serve

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
RUN = """
import json, os, sys
for name in json.loads(os.environ["MTSERVE_TEST_BLOCKED"]):
    sys.modules[name] = None
from mtserve.cli import main
sys.exit(main(sys.argv[1:]))
"""
HELP_OF_EVERY_COMMAND = """
import contextlib, io, json, os, sys
for name in json.loads(os.environ["MTSERVE_TEST_BLOCKED"]):
    sys.modules[name] = None
from mtserve.cli import build_parser
for command in sys.argv[1:]:
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):
        build_parser().parse_args([command, "--help"])
    assert shown.getvalue().startswith("usage: mtserve " + command), command
    print(command, "ok")
"""


def pyproject() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]


@cache
def base_distributions() -> frozenset[str]:
    """The distributions a base install brings: the project's dependencies and everything they require."""
    found: set[tuple[str, tuple[str, ...]]] = set()
    todo = [Requirement(line) for line in pyproject()["dependencies"]]
    while todo:
        requirement = todo.pop()
        key = (canonicalize_name(requirement.name), tuple(sorted(requirement.extras)))
        if key in found:
            continue
        found.add(key)
        try:
            requires = metadata.distribution(requirement.name).requires or []
        except metadata.PackageNotFoundError:
            continue
        for line in requires:
            needed = Requirement(line)
            if needed.marker is None or any(needed.marker.evaluate({"extra": extra})
                                             for extra in ("", *requirement.extras)):
                todo.append(needed)
    return frozenset(name for name, _ in found)


@cache
def blocked_modules() -> tuple[str, ...]:
    """Top-level modules installed here that no distribution of the base install provides."""
    base = base_distributions() | {"mtserve"}
    return tuple(sorted(
        module for module, distributions in metadata.packages_distributions().items()
        if module.isidentifier() and not module.startswith("_")
        and not any(canonicalize_name(d) in base for d in distributions)
    ))


def after_base_install(*args: str, script: str = RUN, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "MTSERVE_TEST_BLOCKED": json.dumps(blocked_modules())}
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def one_clean_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.strip().splitlines()
             if not line.startswith("mtserve: no server given: loading")]  # translate's note before it loads
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_the_extras_heavy_modules_are_blocked_and_httpx_and_sacrebleu_are_not():
    blocked = set(blocked_modules())
    assert {"torch", "transformers", "onnxruntime", "hsk_sentences_audio", "pytest"} <= blocked
    assert not {"httpx", "sacrebleu", "uvicorn", "xllamacpp"} & blocked


def test_every_command_shows_its_help_after_the_base_install():
    commands = [name for name in build_parser()._subparsers._group_actions[0].choices]
    assert len(commands) == len(COMMAND_GROUPS)
    result = after_base_install(*commands, script=HELP_OF_EVERY_COMMAND)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [word for command in commands for word in (command, "ok")]


def test_eval_and_bench_run_against_a_server_after_the_base_install(tmp_path):
    with serve(FakeEngine()) as url:
        evaluated = after_base_install("eval", "--dataset", "prose", "--split", "dev", "--limit", "2",
                                       "--url", url, "--quiet")
        assert evaluated.returncode == 0, evaluated.stderr
        assert "BLEU" in evaluated.stdout and "chrF" in evaluated.stdout
        benched = after_base_install("bench", "--url", url, "--concurrency", "1", "--requests", "2",
                                     "--warmup", "1", "--no-progress", "--out", str(tmp_path / "bench"))
        assert benched.returncode == 0, benched.stderr
        assert (tmp_path / "bench" / "result.json").is_file()


def seq2seq_directory(path: Path) -> Path:
    """What `mtserve convert` and the seq2seq engines recognise as a Hugging Face directory."""
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "marian", "is_encoder_decoder": True}))
    (path / "model.safetensors").write_bytes(b"")
    return path


@pytest.mark.parametrize("command, extra", [
    (["bench", "--transformers"], "baseline"),
    (["convert", "HF", "--to", "onnx", "--out", "OUT"], "seq2seq"),
    (["convert", "HF", "--to", "ctranslate2", "--out", "OUT"], "seq2seq"),
    (["translate", "你好", "--engine", "transformers", "--model", "HF"], "seq2seq"),
    (["eval", "--dataset", "hsk", "--limit", "1"], "eval"),
])
def test_what_needs_an_extra_names_it_in_one_line(tmp_path, command, extra):
    model = seq2seq_directory(tmp_path / "opus-mt")
    args = [{"HF": str(model), "OUT": str(tmp_path / "out")}.get(part, part) for part in command]
    line = one_clean_line(after_base_install(*args, "--home", str(tmp_path)) if command[0] != "convert"
                          else after_base_install(*args))
    assert f"pip install 'mtserve[{extra}]'" in line, line
    assert not (tmp_path / "out").exists()


def test_a_module_no_option_checked_for_is_named_with_its_extra(monkeypatch, capsys):
    from mtserve import cli

    def needs_torch(args):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    parser = build_parser()
    parser._subparsers._group_actions[0].choices["settings"].set_defaults(func=needs_torch)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main(["settings"]) == 2
    assert capsys.readouterr().err.strip() == ("mtserve: this needs torch, from the 'seq2seq' extra: "
                                               "pip install 'mtserve[seq2seq]'")
    assert extra_for("left_pad") is None


def test_each_module_is_in_the_extra_it_is_said_to_be_in():
    extras = {name: {canonicalize_name(Requirement(line).name) for line in lines}
              for name, lines in pyproject()["optional-dependencies"].items()}
    provided = metadata.packages_distributions()
    for module, extra in EXTRA_OF_MODULE.items():
        if module not in provided:  # vllm: installed only on a GPU machine
            assert Requirement(module).name in extras[extra], (module, extra)
            continue
        distributions = {canonicalize_name(d) for d in provided[module]}
        assert distributions & extras[extra], f"{module} ({distributions}) is not in mtserve[{extra}]"
