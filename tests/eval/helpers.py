"""Data and a command runner the eval tests and the real-model quality tests share."""

from __future__ import annotations

import os
import subprocess
import sys

from mtserve.eval.datasets import EvalPair

PAIRS = [
    EvalPair("a", "我喜欢猫。", "I like cats.", "hsk1"),
    EvalPair("b", "今天很冷。", "It is cold today.", "hsk1"),
    EvalPair("c", "他在看书。", "He is reading a book.", "hsk2"),
    EvalPair("d", "我们明天去北京。", "We are going to Beijing tomorrow.", "hsk2"),
    EvalPair("e", "这个问题很难。", "This question is difficult.", "hsk2"),
]


def mtserve(*args: str, timeout: int = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`mtserve ARGS` as a user runs it; ``env`` adds to this process's environment."""
    return subprocess.run([sys.executable, "-m", "mtserve.cli", *args], text=True, capture_output=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
