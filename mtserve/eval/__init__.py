"""Translation quality measured like speed is: ``mtserve eval``.

- ``datasets``: source/reference pairs, the built-in HSK and everyday sets, the fixed dev/test split
- ``scoring``: sacrebleu BLEU (tokenizer by target) and chrF, with signatures
- ``targets``: the engine in process, or a running server over HTTP
- ``runner``: translate, score, report
- ``report``: per-group scores and the worst sentences, as JSON and Markdown
"""

from mtserve.eval.datasets import EvalPair, EvalSet, load_builtin, load_file, sample, split_of
from mtserve.eval.report import EvalReport
from mtserve.eval.runner import evaluate

__all__ = ["EvalPair", "EvalReport", "EvalSet", "evaluate", "load_builtin", "load_file", "sample", "split_of"]
