"""The bare llama.cpp wrapper target of ``mtserve bench``, on the real small model."""

from __future__ import annotations

import pytest

from mtserve.bench.targets import WorkItem, WrapperTarget, make_target
from mtserve.settings import Settings

pytestmark = pytest.mark.model


def test_the_wrapper_translates_with_its_one_line_prompt(model_path):
    target = make_target("wrapper", Settings(model=str(model_path), n_parallel=2, threads=2))
    assert isinstance(target, WrapperTarget)
    target.start()
    try:
        reply = target.call(WorkItem("我喜欢猫。", "zh", "en", "short"), stream=True)
    finally:
        target.stop()
    print(reply)
    assert reply.ok, reply.error
    assert "cat" in reply.text.lower() and reply.generated_tokens and reply.ttft_s is not None
    assert target.describe()["prompt"].startswith("Translate the following")
