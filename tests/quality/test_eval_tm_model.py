"""`mtserve eval --dataset software --tm software` on the real small model: the set's TM reaches the prompt."""

from __future__ import annotations

import json

import pytest

from tests.eval.helpers import mtserve
from tests.servers import TEST_MODEL

pytestmark = pytest.mark.model


def test_eval_with_the_software_tm_gives_examples_and_reports_them(tmp_path, model_path):
    # seed 0's six dev sentences have no entry at similarity 70 or more, some at the default 60
    result = mtserve("eval", "--dataset", "software", "--split", "dev", "--limit", "6", "--tm", "software",
                     "--model", TEST_MODEL, "--n-parallel", "2", "--quiet",
                     "--json", str(tmp_path / "r.json"), "--markdown", str(tmp_path / "r.md"), timeout=600)
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["dataset"]["name"] == "software" and report["n"] == 6
    assert report["system"]["model"] == TEST_MODEL
    assert report["system"]["tm"].startswith("software-tm.tsv (15289 entries, k=2, min similarity 60)")
    memory = report["memory"]
    # seed 0's six dev sentences: some have TM entries at similarity 60 or more, none an
    # exact match (the builder drops those from dev and test)
    assert memory["segments"] >= 6 and memory["example_segments"] >= 1 and memory["exact_segments"] == 0
    assert memory["with_examples"]["n"] + memory["without_examples"]["n"] == 6
    assert sum(s["memory"] == "examples" for s in report["sentences"]) == memory["sentences_with_examples"]
    assert all(s["hypothesis"].strip() for s in report["sentences"])
    assert "tm: " in result.stdout and "translation memory:" in (tmp_path / "r.md").read_text()
    print(f"\nsoftware dev, six sentences with the TM: BLEU {report['bleu']:.1f}, chrF {report['chrf']:.1f}; "
          f"{memory['example_segments']} of {memory['segments']} segments with examples")
