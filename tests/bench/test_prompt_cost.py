"""benchmarks/prompt_cost.py's variants differ from mtserve's request by exactly what they are named for."""

from __future__ import annotations

import pytest

from mtserve.engines.factory import create_engine
from mtserve.settings import Settings
from tests.bench.helpers import benchmark_script

pytestmark = pytest.mark.model  # the model file names the prompt family; it is not loaded

SENTENCE = "我喜欢猫。"


@pytest.fixture
def body_of(model_path):
    """The request body a variant sends for SENTENCE."""
    prompt_cost = benchmark_script("prompt_cost")
    settings = Settings(model=str(model_path))
    engine = create_engine(settings)

    def body(variant: str) -> dict:
        [one] = prompt_cost.bodies(variant, [SENTENCE], engine, settings.max_output_tokens)
        return one

    return body


def test_each_variant_drops_only_its_part(body_of):
    full, no_grammar, no_examples, wrapper = map(body_of, ("mtserve", "no-grammar", "no-examples", "wrapper"))
    assert "grammar" in full and len(full["messages"]) > 3  # system, the fixed examples' turns, the sentence
    assert no_grammar == {key: value for key, value in full.items() if key != "grammar"}
    assert no_examples["messages"] == [full["messages"][0], full["messages"][-1]]
    assert no_examples["grammar"] == full["grammar"]
    assert SENTENCE in full["messages"][-1]["content"] and SENTENCE in wrapper["messages"][-1]["content"]
    assert [m["role"] for m in wrapper["messages"]] == ["system", "user"] and "grammar" not in wrapper


def test_the_wrapper_variants_add_only_the_grammar_or_a_longer_system_prompt(body_of):
    wrapper, with_grammar, filled, full = map(body_of, ("wrapper", "wrapper-grammar", "wrapper-filler", "mtserve"))
    assert with_grammar == {**wrapper, "grammar": full["grammar"]}
    assert {key: value for key, value in filled.items() if key != "messages"} == \
        {key: value for key, value in wrapper.items() if key != "messages"}
    assert filled["messages"][1:] == wrapper["messages"][1:]
    system, filled_system = wrapper["messages"][0]["content"], filled["messages"][0]["content"]
    assert filled_system.startswith(system) and len(filled_system) > len(system) + 1000
