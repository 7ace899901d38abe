"""Summarize py-spy's collapsed stacks: time by thread kind, and the hottest leaf and inclusive frames.

    python benchmarks/profile_summary.py profile.txt
"""

from __future__ import annotations

import re
import sys
from collections import Counter


def main(path: str) -> None:
    by_thread: Counter[str] = Counter()
    leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        n = int(count)
        frames = stack.split(";")
        thread = frames[0]
        kind = re.sub(r"\(.*?\)|0x[0-9a-f]+|\d+", "", thread).strip() or thread
        by_thread[kind] += n
        total += n
        names = [re.sub(r" \(.*", "", f) for f in frames[1:]]
        if names:
            leaf[names[-1]] += n
        for name in set(names):
            inclusive[name] += n
    print(f"samples: {total}")
    print("\nby thread:")
    for kind, n in by_thread.most_common(8):
        print(f"  {100 * n / total:5.1f}%  {kind}")
    print("\ninclusive (a frame anywhere on the stack):")
    for name, n in inclusive.most_common(25):
        print(f"  {100 * n / total:5.1f}%  {name}")
    print("\nleaf (where the sample landed):")
    for name, n in leaf.most_common(15):
        print(f"  {100 * n / total:5.1f}%  {name}")


if __name__ == "__main__":
    main(sys.argv[1])
