"""Inputs for the load generator: short sentences, paragraphs, a long document, a user's file.

Short Chinese sentences come from the ``hsk-sentences-audio`` package when it
is installed (4,354 graded HSK 3.0 sentences; its data is CC-BY-SA-4.0, see
``HSK_ATTRIBUTION``), otherwise from a small built-in list.

Every request of a run gets text no earlier request had (until the pool runs
out), so neither mtserve's translation cache nor llama.cpp's prompt cache can
answer a repeat: each figure is real decoding work. The ``Workload`` hands
items out in order from a shared cursor, one thread-safe ``next()`` at a time.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from pathlib import Path

HSK_ATTRIBUTION = (
    "Short sentences: hsk-sentences-audio (https://github.com/no7z/hsk-sentences-audio), "
    "HSK 3.0 graded sentences, dataset licensed CC-BY-SA-4.0."
)

# Used when hsk-sentences-audio is not installed.
BUILTIN_SENTENCES = (
    "请在会议开始前把报告发给我。", "我每天早上喝一杯咖啡。", "这本书非常有意思。",
    "明天我们去北京。", "他昨天买了一辆新自行车。", "图书馆星期天不开门。",
    "你能帮我把窗户关上吗？", "这个问题比我想的复杂得多。", "我们公司明年打算扩大规模。",
    "天气预报说下午会下雨。", "她的中文说得越来越流利了。", "这家餐厅的菜又便宜又好吃。",
    "请把你的护照和机票给我看一下。", "孩子们在公园里放风筝。", "医生建议他多休息，少喝酒。",
    "我把钥匙忘在办公室了。", "这部电影让我想起了我的童年。", "火车晚点了半个小时。",
    "如果你有问题，随时给我打电话。", "他们正在讨论新的环保政策。",
)

KINDS = ("short", "paragraph", "long", "file")


@dataclass(frozen=True)
class WorkItem:
    text: str
    source: str
    target: str
    kind: str  # one of KINDS


def short_sentences(limit: int | None = None, seed: int = 0, min_chars: int = 6) -> tuple[list[str], str]:
    """Distinct short zh sentences, shuffled by ``seed``, and where they came from."""
    try:
        from hsk_sentences_audio import load_sentences
    except ImportError:
        pool = list(BUILTIN_SENTENCES)
        origin = "built-in list (install hsk-sentences-audio for 4,354 sentences)"
    else:
        seen: set[str] = set()
        pool = []
        for record in load_sentences():
            text = (record.get("chinese") or "").strip()
            if len(text) >= min_chars and text not in seen:
                seen.add(text)
                pool.append(text)
        origin = HSK_ATTRIBUTION
    random.Random(seed).shuffle(pool)
    return (pool[:limit] if limit else pool), origin


def paragraphs(sentences: list[str], per_paragraph: int = 4) -> list[str]:
    """Consecutive sentences joined into paragraphs of ``per_paragraph`` sentences."""
    n = max(1, per_paragraph)
    return ["".join(sentences[i:i + n]) for i in range(0, len(sentences) - n + 1, n)]


def long_document(sentences: list[str], n_sentences: int = 40, per_paragraph: int = 5) -> str:
    """One document of ``n_sentences`` sentences in paragraphs separated by blank lines."""
    chosen = sentences[:n_sentences]
    paras = ["".join(chosen[i:i + per_paragraph]) for i in range(0, len(chosen), per_paragraph)]
    return "\n\n".join(paras)


def file_texts(path: Path, mode: str = "lines") -> list[str]:
    """A user's file: one text per non-empty line, per blank-line paragraph, or the whole file."""
    content = Path(path).read_text(encoding="utf-8")
    if mode == "lines":
        texts = [line.strip() for line in content.splitlines() if line.strip()]
    elif mode == "paragraphs":
        texts = [p.strip() for p in content.split("\n\n") if p.strip()]
    elif mode == "whole":
        texts = [content.strip()] if content.strip() else []
    else:
        raise ValueError(f"unknown file mode {mode!r}; use lines, paragraphs or whole")
    if not texts:
        raise ValueError(f"{path} has no text to translate")
    return texts


class Workload:
    """A pool of items handed out in order; ``wrapped`` counts passes past the end."""

    def __init__(self, name: str, items: list[WorkItem], origin: str = ""):
        if not items:
            raise ValueError(f"workload {name!r} is empty")
        self.name = name
        self.items = items
        self.origin = origin
        self._at = 0
        self.wrapped = 0
        self._lock = threading.Lock()

    def next(self) -> WorkItem:
        with self._lock:
            if self._at >= len(self.items):
                self._at = 0
                self.wrapped += 1
            item = self.items[self._at]
            self._at += 1
            return item

    def tell(self) -> int:
        """The cursor, for ``seek``: items handed out so far."""
        with self._lock:
            return self.wrapped * len(self.items) + self._at

    def seek(self, position: int) -> None:
        """Hand out from ``position`` again, so that several targets get the very same texts."""
        with self._lock:
            self.wrapped, self._at = divmod(position, len(self.items))

    def tail(self, n: int) -> "Workload":
        """A separate workload of the last ``n`` items (warm-ups), which a run rarely reaches."""
        return Workload(f"{self.name}-tail", self.items[-max(1, min(n, len(self.items))):], self.origin)

    @property
    def used(self) -> int:
        return self.wrapped * len(self.items) + self._at


def build_workload(
    name: str,
    source: str = "zh",
    target: str = "en",
    file: Path | None = None,
    file_mode: str = "lines",
    seed: int = 0,
    long_sentences: int = 40,
) -> Workload:
    """``short``, ``paragraph``, ``long`` or ``file``; the sentence pools are zh unless a file is given."""
    if name == "file":
        if file is None:
            raise ValueError("the file workload needs --file PATH")
        return Workload("file", [WorkItem(t, source, target, "file") for t in file_texts(file, file_mode)],
                        origin=str(file))
    sentences, origin = short_sentences(seed=seed)
    # Disjoint slices of the pool, so one workload never warms the cache for another.
    cut1, cut2 = int(len(sentences) * 0.6), int(len(sentences) * 0.85)
    if name == "short":
        return Workload("short", [WorkItem(s, source, target, "short") for s in sentences[:cut1]], origin)
    if name == "paragraph":
        paras = paragraphs(sentences[cut1:cut2]) or paragraphs(sentences)
        return Workload("paragraph", [WorkItem(p, source, target, "paragraph") for p in paras], origin)
    if name == "long":
        pool = sentences[cut2:]
        n = max(1, min(long_sentences, len(pool)))
        docs = [long_document(pool[i:i + n], n) for i in range(0, len(pool) - n + 1, n)]
        return Workload("long", [WorkItem(d, source, target, "long") for d in docs], origin)
    raise ValueError(f"unknown workload {name!r}; use short, paragraph, long or file")
