"""The things ``mtserve bench`` measures, behind one small interface.

- ``HttpTarget``: a running mtserve (or any LibreTranslate-compatible server)
  on loopback, over ``POST /translate`` and ``POST /translate/stream``.
- ``EngineTarget``: the limit. The raw engine in this process with the same
  model, prompt template and decoding as the server, no HTTP and no scheduler;
  client threads call it directly, so llama.cpp's slots batch them.
- ``NaiveTarget``: naive serving, as LibreTranslate does it. One request at a
  time in arrival order (a FIFO lock), its sentences translated one after
  another by an engine with one slot.
- ``TransformersTarget``: what a user would start from. Hugging Face
  ``generate`` per request on the same GGUF file, dequantized to FP32 by
  transformers. Needs the ``baseline`` extra (torch); imported only when used.

A target's ``call`` blocks and is safe to call from many threads at once.
"""

from __future__ import annotations

import ipaddress
import os
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from mtserve.bench.workloads import WorkItem
from mtserve.extras import BASELINE_MODULES, missing_extra

TARGET_KINDS = ("http", "engine", "naive", "transformers")


@dataclass
class Reply:
    """What a target reports about one call; the load generator adds the timing it saw."""

    ok: bool = True
    ttft_s: float | None = None  # from the start of the call
    generated_tokens: int | None = None
    queue_ms: float | None = None
    engine_ms: float | None = None
    prompt_ms: float | None = None
    decode_ms: float | None = None
    cached_segments: int | None = None
    text: str = ""
    error: str | None = None


class Target(Protocol):
    name: str

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def call(self, item: WorkItem, stream: bool = False) -> Reply: ...

    def pid(self) -> int | None:
        """The process whose CPU and memory are the target's (None: not known)."""

    def describe(self) -> dict: ...


# --- loopback only ---------------------------------------------------------------
class NotLoopback(ValueError):
    pass


def check_loopback(url: str) -> str:
    """Return the URL without a trailing slash, or refuse it unless its host is this machine's loopback."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise NotLoopback(f"{url!r} is not an http(s) URL; use e.g. http://127.0.0.1:8000")
    host = parts.hostname
    loopback = host == "localhost"
    if not loopback:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
    if not loopback:
        raise NotLoopback(
            f"refusing {url!r}: load goes only to this machine's loopback, and {host!r} is not "
            "127.0.0.0/8, localhost or ::1. Start the server here and use http://127.0.0.1:PORT"
        )
    return url.rstrip("/")


# --- over HTTP ------------------------------------------------------------------
_TIMING = re.compile(r"(queue|engine);dur=([0-9.]+)")
_SEGMENTS = re.compile(r"(\d+) segments, (\d+) cached, (\d+) tokens")


def parse_server_timing(header: str | None) -> dict[str, float | int]:
    """``queue;dur=1.0, engine;dur=2.0, segments;desc="1 segments, 0 cached, 9 tokens"`` as numbers."""
    found: dict[str, float | int] = {}
    if not header:
        return found
    for name, value in _TIMING.findall(header):
        found[f"{name}_ms"] = float(value)
    match = _SEGMENTS.search(header)
    if match:
        found["segments"], found["cached"], found["tokens"] = (int(g) for g in match.groups())
    return found


class HttpTarget:
    def __init__(self, url: str, *, name: str | None = None, server_pid: int | None = None,
                 timeout_s: float = 300.0, transport: Any = None):
        self.url = check_loopback(url)
        self.name = name or "mtserve-http"
        self._server_pid = server_pid
        self._timeout_s = timeout_s
        self._transport = transport  # tests pass an httpx.MockTransport
        self._local = threading.local()
        self._clients: list[Any] = []
        self._lock = threading.Lock()
        self._health: dict = {}

    def _client(self):
        client = getattr(self._local, "client", None)
        if client is None:
            import httpx

            client = httpx.Client(timeout=self._timeout_s, transport=self._transport)
            self._local.client = client
            with self._lock:
                self._clients.append(client)
        return client

    def start(self) -> None:
        import httpx

        try:
            response = self._client().get(f"{self.url}/health")
        except httpx.TransportError as exc:
            raise RuntimeError(f"cannot reach {self.url} ({exc}); is `mtserve serve` running there?") from None
        if response.status_code != 200:
            raise RuntimeError(f"{self.url} is not ready: /health answered {response.status_code}")
        details = self._client().get(f"{self.url}/health/details")  # model and engine; mtserve's own
        self._health = details.json() if details.status_code == 200 else {}

    def stop(self) -> None:
        with self._lock:
            for client in self._clients:
                client.close()
            self._clients.clear()

    def pid(self) -> int | None:
        if self._server_pid is None:
            from mtserve.bench.process import find_listening_pid

            self._server_pid = find_listening_pid(urlsplit(self.url).port or 80)
        return self._server_pid

    def describe(self) -> dict:
        return {"kind": "http", "url": self.url, "model": self._health.get("model"),
                "engine": self._health.get("engine"), "pid": self.pid()}

    def call(self, item: WorkItem, stream: bool = False) -> Reply:
        body = {"q": item.text, "source": item.source, "target": item.target}
        try:
            return self._stream(body) if stream else self._plain(body)
        except Exception as exc:  # a failed request is a figure, not a crash
            return Reply(ok=False, error=f"{type(exc).__name__}: {exc}")

    def _plain(self, body: dict) -> Reply:
        response = self._client().post(f"{self.url}/translate", json=body)
        if response.status_code != 200:
            return Reply(ok=False, error=f"HTTP {response.status_code}: {response.text[:200]}")
        timing = parse_server_timing(response.headers.get("server-timing"))
        return Reply(
            text=response.json().get("translatedText", ""),
            generated_tokens=timing.get("tokens"), queue_ms=timing.get("queue_ms"),
            engine_ms=timing.get("engine_ms"), cached_segments=timing.get("cached"),
        )

    def _stream(self, body: dict) -> Reply:
        import json

        started = time.perf_counter()
        ttft = None
        event = None
        final = ""
        with self._client().stream("POST", f"{self.url}/translate/stream", json=body) as response:
            if response.status_code != 200:
                response.read()
                return Reply(ok=False, error=f"HTTP {response.status_code}: {response.text[:200]}")
            for line in response.iter_lines():
                if line.startswith("event:"):
                    event = line[6:].strip()
                elif line.startswith("data:"):
                    data = json.loads(line[5:].strip() or "{}")
                    if event == "delta" and ttft is None and data.get("text", "").strip():
                        ttft = time.perf_counter() - started
                    elif event == "error":
                        return Reply(ok=False, error=f"stream error: {data.get('error')}")
                    elif event == "done":
                        final = data.get("translatedText", "")
        return Reply(text=final, ttft_s=ttft)


# --- in process -----------------------------------------------------------------
def _segments(text: str, source: str, settings: Any) -> list[str]:
    from mtserve.text.segment import split_text

    pieces = split_text(text, source, settings.segment_max_chars, getattr(settings, "segment_budget_chars", 0))
    return [p.text for p in pieces if p.translate and p.text.strip()]


class EngineTarget:
    """The raw engine: client threads call ``engine.translate`` directly.

    A multi-sentence text is cut into the same sentences mtserve would cut,
    and they are translated one after another in the caller's thread, which
    is what a program using the engine directly would write.
    """

    kind = "engine"

    def __init__(self, settings: Any, *, name: str | None = None, split: bool = True):
        self.settings = settings
        self.name = name or "raw-engine"
        self._split = split
        self.engine: Any = None

    def _build(self) -> Any:
        from mtserve.engines.factory import create_engine

        return create_engine(self.settings)

    def start(self) -> None:
        self.engine = self._build()
        self.engine.load()

    def stop(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    def pid(self) -> int | None:
        return os.getpid()

    def describe(self) -> dict:
        return {"kind": self.kind, "model": self.settings.model, "threads": self.settings.threads,
                # the engine's slots, not max_concurrency, which adds the segments queued ahead
                "n_parallel": self.engine.slots if self.engine is not None else self.settings.n_parallel,
                "pid": os.getpid()}

    def _pieces(self, item: WorkItem) -> list[str]:
        if not self._split:
            return [item.text]
        return _segments(item.text, item.source, self.settings) or [item.text]

    def _translate_all(self, item: WorkItem, stream: bool) -> Reply:
        from mtserve.engines.base import EngineRequest

        started = time.perf_counter()
        first: list[float] = []

        def on_delta(text: str) -> None:
            if not first and text.strip():
                first.append(time.perf_counter() - started)

        reply = Reply(generated_tokens=0, engine_ms=0.0, prompt_ms=0.0, decode_ms=0.0, queue_ms=0.0)
        timings_known = hasattr(self.engine, "last_timings")
        outputs = []
        for piece in self._pieces(item):
            result = self.engine.translate(EngineRequest(piece, item.source, item.target),
                                           on_delta=on_delta if stream else None)
            outputs.append(result.text)
            reply.generated_tokens += result.generated_tokens
            reply.engine_ms += result.engine_ms
            if timings_known:
                timings = self.engine.last_timings() or {}
                reply.prompt_ms += float(timings.get("prompt_ms", 0.0))
                reply.decode_ms += float(timings.get("predicted_ms", 0.0))
        if not timings_known:
            reply.prompt_ms = reply.decode_ms = None
        reply.text = " ".join(outputs)
        reply.ttft_s = first[0] if first else None
        return reply

    def call(self, item: WorkItem, stream: bool = False) -> Reply:
        try:
            return self._translate_all(item, stream)
        except Exception as exc:
            return Reply(ok=False, error=f"{type(exc).__name__}: {exc}")


class FifoLock:
    """A lock granted strictly in arrival order (``threading.Lock`` promises no order)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._waiters: deque[threading.Event] = deque()
        self._held = False

    def __enter__(self) -> "FifoLock":
        with self._guard:
            if not self._held and not self._waiters:
                self._held = True
                return self
            turn = threading.Event()
            self._waiters.append(turn)
        turn.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._guard:
            if self._waiters:
                self._waiters.popleft().set()  # hand over; _held stays True
            else:
                self._held = False


class NaiveTarget(EngineTarget):
    """One request at a time, in arrival order; each request's sentences in a Python loop."""

    kind = "naive"

    def __init__(self, settings: Any, *, name: str | None = None):
        super().__init__(settings.model_copy(update={"n_parallel": 1}), name=name or "naive")
        self._turn = FifoLock()

    def call(self, item: WorkItem, stream: bool = False) -> Reply:
        arrived = time.perf_counter()
        with self._turn:
            waited_ms = (time.perf_counter() - arrived) * 1000
            reply = super().call(item, stream)
        reply.queue_ms = waited_ms
        if reply.ttft_s is not None:
            reply.ttft_s += waited_ms / 1000
        return reply


class WrapperTarget:
    """A bare wrapper around llama.cpp with a one-line prompt: the baseline mtserve's whole path,
    prompt included (system prompt, examples, grammar), is measured against.

    It is what a user would write in twenty lines: the same model, slots and threads, one chat
    request per text with "Translate ... Output only the translation.", greedy, streamed, and
    nothing else: no examples, no grammar, no sentence splitting, no cleanup, no queue.
    """

    kind = "wrapper"
    SYSTEM = "Translate the following {source} text into {target}. Output only the translation."

    def __init__(self, settings: Any, *, name: str | None = None):
        self.settings = settings
        self.name = name or "wrapper"
        self._server: Any = None
        self._slots = max(1, settings.n_parallel)

    @staticmethod
    def llama_server(model_path: str, threads: int, slots: int, ctx_per_slot: int,
                     overrides: dict[str, Any] | None = None) -> Any:
        """The llama.cpp server the wrapper runs (also benchmarks/wrapper_server.py's); ``overrides``
        (llama.cpp params by dotted path) only for benchmarks/prompt_cost.py's experiments."""
        import xllamacpp

        from mtserve.engines.llamacpp import apply_param_overrides

        params = xllamacpp.CommonParams()
        params.model.path = model_path
        params.n_parallel = slots
        params.n_ctx = ctx_per_slot * slots
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
        params.verbosity = -1
        apply_param_overrides(params, overrides or {})
        return xllamacpp.Server(params)

    @classmethod
    def body(cls, text: str, source: str, target: str, max_output_tokens: int) -> dict:
        """The one chat request per text: the one-line prompt, greedy, the service's token bound."""
        from mtserve.engines.base import default_max_tokens
        from mtserve.text.languages import language_name

        system = cls.SYSTEM.format(source=language_name(source), target=language_name(target))
        return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": text}],
                "temperature": 0, "top_k": 1, "max_tokens": default_max_tokens(text, max_output_tokens)}

    def start(self) -> None:
        from mtserve.engines.factory import create_engine

        engine = create_engine(self.settings)  # only to resolve the model file the same way; never loaded
        self._server = self.llama_server(str(engine.model_path), self.settings.threads, self._slots,
                                   self.settings.ctx_per_slot)

    def stop(self) -> None:
        self._server = None

    def pid(self) -> int | None:
        return os.getpid()

    def describe(self) -> dict:
        return {"kind": self.kind, "model": self.settings.model, "threads": self.settings.threads,
                "n_parallel": self._slots, "prompt": self.SYSTEM, "pid": os.getpid()}

    def call(self, item: WorkItem, stream: bool = False) -> Reply:
        started = time.perf_counter()
        parts: list[str] = []
        first: list[float] = []
        usage: dict = {}

        def on_chunk(chunk: dict) -> bool:
            for choice in chunk.get("choices", ()):
                if (delta := (choice.get("delta") or {}).get("content")):
                    if not first:
                        first.append(time.perf_counter() - started)
                    parts.append(delta)
            usage.update(chunk.get("usage") or {})
            return False

        body = {**self.body(item.text, item.source, item.target, self.settings.max_output_tokens),
                "stream": True, "stream_options": {"include_usage": True}}
        try:
            self._server.handle_chat_completions(body, on_chunk)
        except Exception as exc:
            return Reply(ok=False, error=f"{type(exc).__name__}: {exc}")
        return Reply(text="".join(parts), ttft_s=first[0] if first and stream else None,
                     generated_tokens=int(usage.get("completion_tokens", len(parts))))


class TransformersTarget:
    """Hugging Face transformers ``generate``, one request at a time, greedy, on the GGUF file."""

    kind = "transformers"

    def __init__(self, settings: Any, *, name: str | None = None):
        # said before any target starts: a missing extra is a mistake in the command, not in a run
        if problem := missing_extra("the transformers baseline (--transformers)", "baseline", BASELINE_MODULES):
            raise ValueError(problem)
        self.settings = settings
        self.name = name or "transformers"
        self._lock = FifoLock()
        self._model: Any = None
        self._tokenizer: Any = None
        self.load_s: float | None = None

    def start(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from mtserve.engines.prompts import template_for
        from mtserve.models.store import ModelStore

        resolved = ModelStore(self.settings.models_dir).resolve(self.settings.model)
        path = Path(resolved.path)
        self._template = template_for(resolved.family)
        torch.set_num_threads(max(1, self.settings.threads))
        started = time.perf_counter()
        self._tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        self._model = AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.float32
        )
        self._model.eval()
        self.load_s = time.perf_counter() - started
        self._torch = torch

    def stop(self) -> None:
        self._model = None
        self._tokenizer = None

    def pid(self) -> int | None:
        return os.getpid()

    def describe(self) -> dict:
        return {"kind": self.kind, "model": self.settings.model, "threads": self.settings.threads,
                "dtype": "float32", "load_s": self.load_s, "pid": os.getpid()}

    def call(self, item: WorkItem, stream: bool = False) -> Reply:
        try:
            with self._lock:
                return self._generate(item)
        except Exception as exc:
            return Reply(ok=False, error=f"{type(exc).__name__}: {exc}")

    def _generate(self, item: WorkItem) -> Reply:
        from mtserve.engines.base import default_max_tokens

        reply = Reply(generated_tokens=0, engine_ms=0.0)
        outputs = []
        for piece in _segments(item.text, item.source, self.settings) or [item.text]:
            messages = self._template.messages(piece, item.source, item.target)
            ids = self._tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
            max_new = min(default_max_tokens(piece, self.settings.max_output_tokens),
                          self.settings.max_output_tokens)
            started = time.perf_counter()
            with self._torch.inference_mode():
                out = self._model.generate(ids, attention_mask=self._torch.ones_like(ids), max_new_tokens=max_new,
                                           do_sample=False, pad_token_id=self._tokenizer.eos_token_id)
            reply.engine_ms += (time.perf_counter() - started) * 1000
            new = out[0, ids.shape[1]:]
            reply.generated_tokens += int(new.shape[0])
            outputs.append(self._tokenizer.decode(new, skip_special_tokens=True))
        reply.text = " ".join(outputs)
        return reply


def make_target(spec: str, settings: Any, server_pid: int | None = None) -> Target:
    """A target from a spec: a loopback URL, ``engine``, ``naive``, ``wrapper`` or ``transformers``."""
    if "://" in spec or ":" in spec or "." in spec:  # anything URL-like is checked as one
        return HttpTarget(spec, server_pid=server_pid)
    if spec in ("engine", "llamacpp", "raw"):
        return EngineTarget(settings)
    if spec == "naive":
        return NaiveTarget(settings)
    if spec in ("transformers", "hf"):
        return TransformersTarget(settings)
    if spec == "wrapper":
        return WrapperTarget(settings)
    raise ValueError(f"unknown target {spec!r}; use a loopback URL (http://127.0.0.1:PORT), "
                     "engine, naive, wrapper or transformers")
