"""What the seq2seq engines share: model directories, languages, tokenization, batching.

Three engines serve encoder-decoder NMT models (Marian/opus-mt, NLLB, M2M100):
``transformers`` runs the Hugging Face directory as it is, ``onnx`` and
``ctranslate2`` run what ``mtserve convert`` made of it. They differ only in
how they generate token ids; everything around that lives here, once, so the
three agree token for token:

- ``inspect_model_dir`` tells what a directory holds, so a wrong
  ``--engine``/``--model`` pair is refused with a message saying what to do.
- ``ModelSpec`` is what an engine must know besides weights: the family, the
  language pairs, the special token ids. ``convert`` writes it to
  ``mtserve.json`` beside the converted model.
- ``Seq2SeqTokenizer`` turns a request into source ids plus the forced decoder
  prefix (NLLB and M2M100 start the target with a language token; Marian is
  one pair, or picks its target with a ``>>xx<<`` source token).
- ``Seq2SeqEngine`` is the Engine and batching surface; subclasses implement
  ``_load_model`` and ``_generate``. It sorts a batch by length, cuts it into
  sub-batches within ``max_batch_size`` and puts each result back in place.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from mtserve.engines.base import (
    CancelToken,
    DeltaCallback,
    EngineError,
    EngineRequest,
    TranslationResult,
    log_loaded,
)

log = logging.getLogger(__name__)

MANIFEST = "mtserve.json"
TOKENIZER_DIR = "tokenizer"  # where convert puts the tokenizer when the root is taken (CTranslate2)
FAMILIES = ("marian", "nllb", "m2m100")
BATCH_TYPES = ("examples", "tokens")
ONNX_FILES = ("encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx")

# mtserve language code -> FLORES-200 code (NLLB). The ISO 639-3 part also
# names Marian pairs ("zho", "eng") and multi-target tokens (">>fra<<").
FLORES: dict[str, str] = {
    "en": "eng_Latn",
    "zh": "zho_Hans",
    "zt": "zho_Hant",
    "ja": "jpn_Jpan",
    "ko": "kor_Hang",
    "fr": "fra_Latn",
    "de": "deu_Latn",
    "es": "spa_Latn",
    "pt": "por_Latn",
    "it": "ita_Latn",
    "ru": "rus_Cyrl",
    "ar": "arb_Arab",
    "vi": "vie_Latn",
    "th": "tha_Thai",
    "id": "ind_Latn",
    "ms": "zsm_Latn",
    "tr": "tur_Latn",
    "nl": "nld_Latn",
    "pl": "pol_Latn",
    "uk": "ukr_Cyrl",
    "cs": "ces_Latn",
    "fa": "pes_Arab",
    "he": "heb_Hebr",
    "hi": "hin_Deva",
    "bn": "ben_Beng",
    "ta": "tam_Taml",
    "te": "tel_Telu",
    "mr": "mar_Deva",
    "gu": "guj_Gujr",
    "ur": "urd_Arab",
    "tl": "tgl_Latn",
    "km": "khm_Khmr",
    "my": "mya_Mymr",
    "kk": "kaz_Cyrl",
    "mn": "khk_Cyrl",
}
# Other three-letter spellings seen in opus-mt model names and tokenizer configs.
_ALPHA3_EXTRA = {
    "cmn": "zh",
    "chi": "zh",
    "ara": "ar",
    "msa": "ms",
    "may": "ms",
    "fas": "fa",
    "per": "fa",
    "mon": "mn",
    "fre": "fr",
    "ger": "de",
    "cze": "cs",
    "dut": "nl",
    "bur": "my",
    "fil": "tl",
}
_ALPHA3: dict[str, str] = {**{v.split("_")[0]: k for k, v in FLORES.items() if k != "zt"}, **_ALPHA3_EXTRA}
_OPUS_NAME = re.compile(r"opus-mt-(?:tc-big-)?(?P<src>[a-zA-Z]{2,3})-(?P<tgt>[a-zA-Z]{2,3})(?:$|[^a-zA-Z])")
_MARIAN_TARGET_TOKEN = re.compile(r"^>>(?P<code>[a-zA-Z_]+)<<$")


class ModelDirError(ValueError):
    """A model directory is missing or not what was asked for; the message says what to do."""


def normalize_language(code: str) -> str | None:
    """An mtserve code for a language named as ``zh``, ``zho``, ``zho_Hans`` or ``cmn_Hant``."""
    code = code.strip()
    if code in FLORES:
        return code
    base, _, script = code.partition("_")
    base = base.lower()
    if script.lower() == "hant" and base in ("zho", "cmn", "zh"):
        return "zt"
    if base in FLORES and base != "zt":
        return base
    return _ALPHA3.get(base)


# --- what a directory holds ------------------------------------------------------------
@dataclass(frozen=True)
class ModelDirKind:
    format: str  # "huggingface" | "onnx" | "ctranslate2" | "gguf" | "unknown"
    path: Path
    detail: str = ""  # e.g. the HF model_type


def inspect_model_dir(path: Path) -> ModelDirKind:
    """Say what ``path`` is without loading anything."""
    path = Path(path).expanduser()
    if path.is_file():
        return ModelDirKind("gguf" if path.suffix.lower() == ".gguf" else "unknown", path)
    if not path.is_dir():
        raise ModelDirError(f"model directory {path} does not exist")
    manifest = _read_json(path / MANIFEST)
    if manifest.get("format") in ("onnx", "ctranslate2"):
        return ModelDirKind(manifest["format"], path, manifest.get("family", ""))
    if all((path / name).is_file() for name in ONNX_FILES):
        return ModelDirKind("onnx", path)
    if (path / "model.bin").is_file() and (path / "config.json").is_file():
        return ModelDirKind("ctranslate2", path)
    config = _read_json(path / "config.json")
    has_weights = any(path.glob("*.safetensors")) or any(path.glob("pytorch_model*.bin"))
    if config and has_weights:
        return ModelDirKind("huggingface", path, str(config.get("model_type", "")))
    if any(path.glob("*.gguf")):
        return ModelDirKind("gguf", path)
    return ModelDirKind("unknown", path)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


# --- the model spec ---------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """Everything an engine needs to know about a seq2seq model besides its weights."""

    family: str  # "marian" | "nllb" | "m2m100"
    model_name: str
    sources: tuple[str, ...]  # mtserve codes the model reads
    targets: tuple[str, ...]  # mtserve codes the model writes
    decoder_start_token_id: int
    eos_token_id: int
    pad_token_id: int
    # Marian multi-target models pick the target with a source token like ">>fra<<".
    target_tokens: dict[str, str] = field(default_factory=dict)

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.sources) | set(self.targets)))

    def supports(self, source: str, target: str) -> bool:
        return source in self.sources and target in self.targets

    def check_pair(self, source: str, target: str) -> None:
        if not self.supports(source, target):
            raise EngineError(
                f"model {self.model_name!r} translates {'/'.join(self.sources)} -> "
                f"{'/'.join(self.targets)}, not {source} -> {target}"
            )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["sources"], data["targets"] = list(self.sources), list(self.targets)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ModelSpec":
        return cls(
            family=data["family"],
            model_name=data["model_name"],
            sources=tuple(data["sources"]),
            targets=tuple(data["targets"]),
            decoder_start_token_id=int(data["decoder_start_token_id"]),
            eos_token_id=int(data["eos_token_id"]),
            pad_token_id=int(data["pad_token_id"]),
            target_tokens=dict(data.get("target_tokens") or {}),
        )


def load_spec(model_dir: Path) -> ModelSpec:
    """The spec from ``mtserve.json`` when ``convert`` wrote one, else read from the HF files."""
    model_dir = Path(model_dir)
    manifest = _read_json(model_dir / MANIFEST)
    if "spec" in manifest:
        return ModelSpec.from_json(manifest["spec"])
    return spec_from_hf_dir(model_dir, manifest)


def spec_from_hf_dir(model_dir: Path, overrides: dict[str, Any] | None = None) -> ModelSpec:
    """Read family, languages and special ids from a Hugging Face seq2seq directory.

    ``overrides`` (``mtserve.json`` keys ``source``/``target`` or ``languages``)
    settle a Marian pair the files do not name.
    """
    overrides = overrides or {}
    model_dir = Path(model_dir)
    config = _read_json(model_dir / "config.json")
    if not config:
        raise ModelDirError(f"{model_dir} has no config.json; pass a Hugging Face model directory")
    if not config.get("is_encoder_decoder", False):
        raise ModelDirError(
            f"{model_dir} holds a {config.get('model_type', 'non-seq2seq')} model, not an "
            "encoder-decoder translator; GGUF LLMs run with --engine llamacpp"
        )
    tok_config = _read_json(_tokenizer_dir(model_dir) / "tokenizer_config.json")
    model_type = str(config.get("model_type", ""))
    tokenizer_class = str(tok_config.get("tokenizer_class", ""))
    name = str(overrides.get("model_name") or _model_name(model_dir, config))
    ids = dict(
        decoder_start_token_id=int(config.get("decoder_start_token_id") or config.get("eos_token_id") or 0),
        eos_token_id=int(config.get("eos_token_id") or 0),
        pad_token_id=int(config.get("pad_token_id") if config.get("pad_token_id") is not None else 0),
    )
    if model_type == "marian":
        sources, targets, target_tokens = _marian_languages(model_dir, config, tok_config, overrides)
        return ModelSpec("marian", name, sources, targets, target_tokens=target_tokens, **ids)
    if model_type == "m2m_100":
        family = "nllb" if "nllb" in tokenizer_class.lower() or "nllb" in name.lower() else "m2m100"
        vocab = _language_tokens(model_dir, tok_config)
        if family == "nllb":
            langs = tuple(code for code, flores in FLORES.items() if flores in vocab)
        else:
            langs = tuple(code for code in FLORES if code != "zt" and f"__{code}__" in vocab)
        if not langs:
            raise ModelDirError(f"{model_dir}: no language tokens found in the tokenizer")
        return ModelSpec(family, name, langs, langs, **ids)
    raise ModelDirError(
        f"{model_dir} is a {model_type!r} model; the seq2seq engines serve Marian (opus-mt), "
        "NLLB and M2M100 directories"
    )


def _model_name(model_dir: Path, config: dict[str, Any]) -> str:
    origin = str(config.get("_name_or_path") or "")
    if origin and not origin.startswith(("/", ".")):
        return origin.split("/")[-1]
    return model_dir.resolve().name


def _tokenizer_dir(model_dir: Path) -> Path:
    sub = Path(model_dir) / TOKENIZER_DIR
    return sub if (sub / "tokenizer_config.json").is_file() else Path(model_dir)


def _language_tokens(model_dir: Path, tok_config: dict[str, Any]) -> set[str]:
    """The language tokens an NLLB or M2M100 tokenizer knows.

    Saved tokenizers list them among their added/special tokens; the slow
    M2M100 tokenizer keeps them in its class, named by ``language_codes``.
    """
    tok_dir = _tokenizer_dir(model_dir)
    found: set[str] = set()
    for entry in (tok_config.get("added_tokens_decoder") or {}).values():
        found.add(str(entry.get("content", "")))
    found.update(str(t) for t in tok_config.get("additional_special_tokens") or [])
    special = _read_json(tok_dir / "special_tokens_map.json")
    for token in special.get("additional_special_tokens") or []:
        found.add(token if isinstance(token, str) else str(token.get("content", "")))
    found.update(_read_json(tok_dir / "added_tokens.json"))
    if str(tok_config.get("tokenizer_class", "")).startswith("M2M100"):
        from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

        codes = FAIRSEQ_LANGUAGE_CODES.get(str(tok_config.get("language_codes", "m2m100")), [])
        found.update(f"__{code}__" for code in codes)
    return found


def _marian_languages(
    model_dir: Path, config: dict[str, Any], tok_config: dict[str, Any], overrides: dict[str, Any]
) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, str]]:
    vocab = _read_json(_tokenizer_dir(model_dir) / "vocab.json")
    target_tokens: dict[str, str] = {}
    for token in vocab:
        match = _MARIAN_TARGET_TOKEN.match(token)
        code = normalize_language(match["code"]) if match else None
        if code and code not in target_tokens:
            target_tokens[code] = token
    pair = None
    if overrides.get("source") and overrides.get("target"):
        pair = (str(overrides["source"]), str(overrides["target"]))
    elif tok_config.get("source_lang") and tok_config.get("target_lang"):
        pair = (str(tok_config["source_lang"]), str(tok_config["target_lang"]))
    else:
        for text in (str(config.get("_name_or_path") or ""), Path(model_dir).resolve().name):
            if match := _OPUS_NAME.search(text):
                pair = (match["src"], match["tgt"])
                break
    source = normalize_language(pair[0]) if pair else None
    target = normalize_language(pair[1]) if pair else None
    if source is None or (target is None and not target_tokens):
        raise ModelDirError(
            f"cannot tell which languages the Marian model in {model_dir} translates; "
            f'write {{"source": "zh", "target": "en"}} to {Path(model_dir) / MANIFEST}'
        )
    if target_tokens:
        return (source,), tuple(sorted(target_tokens)), target_tokens
    assert target is not None
    return (source,), (target,), {}


# --- tokenization -----------------------------------------------------------------------
@dataclass(frozen=True)
class EncodedRequest:
    """One request as ids, with where it sits in the caller's list."""

    index: int
    request: EngineRequest
    source_ids: tuple[int, ...]
    prefix_ids: tuple[int, ...]  # decoder start token, then forced target-language tokens
    max_new_tokens: int
    cancel: CancelToken | None = None

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.cancelled


class Seq2SeqTokenizer:
    """Hugging Face tokenizer plus the family's language-code conventions.

    Source ids are built from the plain text ids and the family's special
    tokens by hand, not by setting ``src_lang`` on the shared tokenizer, so
    concurrent requests in different languages cannot race.
    """

    def __init__(self, model_dir: Path, spec: ModelSpec):
        from transformers import AutoTokenizer  # heavy; only when an engine loads

        self.spec = spec
        self._tok = AutoTokenizer.from_pretrained(str(_tokenizer_dir(model_dir)))
        self._lock = threading.Lock()  # slow (python) tokenizers are not thread-safe
        self._legacy_nllb = bool(getattr(self._tok, "legacy_behaviour", False))

    def language_token(self, code: str) -> str:
        if self.spec.family == "nllb":
            return FLORES[code]
        if self.spec.family == "m2m100":
            return f"__{code}__"
        return self.spec.target_tokens[code]

    def token_id(self, token: str) -> int:
        token_id = self._tok.convert_tokens_to_ids(token)
        if token_id is None or token_id == self._tok.unk_token_id:
            raise EngineError(f"the tokenizer of {self.spec.model_name!r} has no token {token!r}")
        return int(token_id)

    def source_ids(self, text: str, source: str, target: str) -> list[int]:
        family, eos = self.spec.family, self.spec.eos_token_id
        if family == "marian" and self.spec.target_tokens:
            text = f"{self.spec.target_tokens[target]} {text}"
        with self._lock:
            ids = list(self._tok(text, add_special_tokens=False)["input_ids"])
        if family == "marian":
            return ids + [eos]
        lang = self.token_id(self.language_token(source))
        if family == "nllb" and self._legacy_nllb:
            return ids + [eos, lang]
        return [lang] + ids + [eos]

    def prefix_ids(self, target: str) -> list[int]:
        start = [self.spec.decoder_start_token_id]
        if self.spec.family in ("nllb", "m2m100"):
            return start + [self.token_id(self.language_token(target))]
        return start

    def tokens(self, ids: Sequence[int]) -> list[str]:
        return list(self._tok.convert_ids_to_tokens(list(ids)))

    def ids(self, tokens: Sequence[str]) -> list[int]:
        return [int(i) for i in self._tok.convert_tokens_to_ids(list(tokens))]

    def decode(self, ids: Sequence[int]) -> str:
        with self._lock:
            return self._tok.decode(list(ids), skip_special_tokens=True).strip()

    @property
    def hf_tokenizer(self) -> Any:
        return self._tok


# --- decoding options and sub-batches ---------------------------------------------------
@dataclass(frozen=True)
class DecodeOptions:
    """How every seq2seq engine decodes; the same values give the same greedy output."""

    num_beams: int = 1
    max_output_tokens: int = 512  # hard cap per segment
    min_new_tokens: int = 0  # > 0 only in benchmarks, to force the decode length
    length_penalty: float = 1.0  # beam search: score / length**length_penalty


@dataclass(frozen=True)
class Sampling:
    temperature: float
    seed: int | None


@dataclass
class Generated:
    """Token ids an engine generated for one request: no prefix, no end-of-sequence token."""

    ids: list[int]
    finish_reason: str  # "stop" | "length" | "cancelled"


def max_new_tokens(source_len: int, cap: int) -> int:
    """Bound a decode by the source length: a translation rarely needs over twice the tokens."""
    return max(16, min(cap, 2 * source_len + 16))


def plan_sub_batches(lengths: Sequence[int], max_batch_size: int, batch_type: str) -> list[list[int]]:
    """Cut positions, already sorted by length, into runs that fit ``max_batch_size``.

    In ``tokens`` mode the cost of a run is its padded size: rows times the
    longest source. Sorting first is what makes this cut padding: similar
    lengths end up together. A single row always forms a run, however long.
    """
    runs: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for position, length in enumerate(lengths):
        if current:
            rows, widest = len(current) + 1, max(longest, length)
            cost = rows if batch_type == "examples" else rows * widest
            if cost > max_batch_size:
                runs.append(current)
                current, longest = [], 0
        current.append(position)
        longest = max(longest, length)
    if current:
        runs.append(current)
    return runs


def strip_output(ids: Sequence[int], eos: int, max_new: int) -> Generated:
    """Cut generated ids at end-of-sequence or the row's own length limit."""
    out: list[int] = []
    for token in ids:
        if token == eos:
            return Generated(out, "stop")
        if len(out) >= max_new:
            break
        out.append(int(token))
    return Generated(out, "length" if len(out) >= max_new else "stop")


# --- the engine surface -----------------------------------------------------------------
class Seq2SeqEngine:
    """Engine and batching surface shared by the transformers, onnx and ctranslate2 engines."""

    name = "seq2seq"
    prompted = False  # a trained translation model: no prompt to make stricter

    def __init__(
        self,
        model_dir: Path,
        *,
        model_name: str | None = None,
        threads: int = 1,
        inter_threads: int = 1,
        max_batch_size: int = 32,
        batch_type: str = "examples",
        decode: DecodeOptions = DecodeOptions(),
    ):
        if batch_type not in BATCH_TYPES:
            raise ValueError(f"batch_type must be one of {BATCH_TYPES}, got {batch_type!r}")
        self.model_dir = Path(model_dir)
        self.spec = load_spec(self.model_dir)
        self.model_name = model_name or self.spec.model_name
        self.languages = self.spec.languages
        self.threads = max(1, threads)
        self.inter_threads = max(1, inter_threads)
        self.max_concurrency = self.inter_threads  # batches in flight at once
        self.slots = self.inter_threads
        self.on_gpu = False  # CTranslate2 sets it once its device is resolved
        self.max_batch_size = max(1, max_batch_size)
        self.batch_type = batch_type
        self.decode = decode
        self.tokenizer: Seq2SeqTokenizer | None = None

    # --- lifecycle ---------------------------------------------------------------
    def load(self) -> None:
        started = time.perf_counter()
        self.tokenizer = Seq2SeqTokenizer(self.model_dir, self.spec)
        self._load_model()
        log_loaded(self, started)

    def close(self) -> None:
        self.tokenizer = None

    def _load_model(self) -> None:
        raise NotImplementedError

    def _generate(self, batch: list[EncodedRequest], sampling: Sampling | None) -> list[Generated]:
        """Generate for rows sorted by source length; one Generated per row, in order."""
        raise NotImplementedError

    # --- work ----------------------------------------------------------------------
    def supports(self, source: str, target: str) -> bool:
        """Whether the model translates this direction (a Marian model has one)."""
        return self.spec.supports(source, target)

    def _tokenizer(self) -> Seq2SeqTokenizer:
        if self.tokenizer is None:
            raise EngineError("engine is not loaded")
        return self.tokenizer

    def batch_cost(self, request: EngineRequest) -> int:
        """What one request counts against ``max_batch_size``: 1, or its source tokens."""
        if self.batch_type == "examples":
            return 1
        return len(self._tokenizer().source_ids(request.text, request.source, request.target))

    def encode(
        self, index: int, request: EngineRequest, cancel: CancelToken | None = None
    ) -> EncodedRequest:
        self.spec.check_pair(request.source, request.target)
        tok = self._tokenizer()
        source_ids = tok.source_ids(request.text, request.source, request.target)
        cap = self.decode.max_output_tokens
        limit = min(request.max_tokens, cap) if request.max_tokens else max_new_tokens(len(source_ids), cap)
        return EncodedRequest(
            index, request, tuple(source_ids), tuple(tok.prefix_ids(request.target)), limit, cancel
        )

    def translate(
        self,
        request: EngineRequest,
        cancel: CancelToken | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> TranslationResult:
        """One segment: a batch of one. The text arrives as one delta when it is done."""
        [result] = self.translate_batch([request], [cancel])
        if on_delta is not None and result.text:
            on_delta(result.text)
        return result

    def translate_batch(
        self,
        requests: Sequence[EngineRequest],
        cancels: Sequence[CancelToken | None] | None = None,
    ) -> list[TranslationResult]:
        """Translate requests together; results come back in the order of ``requests``.

        A cancelled request comes back with ``finish_reason="cancelled"``.
        """
        started = time.perf_counter()
        rows = self.generate(requests, cancels)
        engine_ms = (time.perf_counter() - started) * 1000
        tok = self._tokenizer()
        return [
            TranslationResult(
                text=tok.decode(out.ids),
                prompt_tokens=len(row.source_ids),
                generated_tokens=len(out.ids),
                finish_reason=out.finish_reason,
                engine_ms=engine_ms,
            )
            for row, out in rows
        ]

    def generate(
        self,
        requests: Sequence[EngineRequest],
        cancels: Sequence[CancelToken | None] | None = None,
    ) -> list[tuple[EncodedRequest, Generated]]:
        """Token ids for each request, in request order (what tests compare across engines).

        Greedy and beam requests are sorted by source length and decoded in
        sub-batches within ``max_batch_size``. A sampled request (temperature
        > 0, a seed) decodes alone, so its seed alone decides its output.
        """
        cancels = list(cancels) if cancels is not None else [None] * len(requests)
        encoded = [self.encode(i, r, c) for i, (r, c) in enumerate(zip(requests, cancels))]
        generated: dict[int, Generated] = {
            e.index: Generated([], "cancelled") for e in encoded if e.cancelled
        }
        encoded_live = [e for e in encoded if not e.cancelled]  # gone before decoding: not decoded at all
        greedy = sorted(
            (e for e in encoded_live if e.request.temperature <= 0), key=lambda e: len(e.source_ids)
        )
        for run in plan_sub_batches(
            [len(e.source_ids) for e in greedy], self.max_batch_size, self.batch_type
        ):
            rows = [greedy[p] for p in run]
            for row, out in zip(rows, self._generate(rows, None)):
                generated[row.index] = out
        for row in encoded_live:
            if row.request.temperature > 0:
                [generated[row.index]] = self._generate(
                    [row], Sampling(row.request.temperature, row.request.seed)
                )
        return [(row, generated[row.index]) for row in encoded]
