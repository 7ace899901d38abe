"""One settings object for the whole service.

Defaults live here and only here. Environment variables (``MTSERVE_<NAME>``)
override them, and CLI flags override the environment. The settings reference,
docs/settings.md, is generated from this class (``mtserve settings --page``), so the
three never drift apart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_home() -> Path:
    return Path(os.path.expanduser("~/.cache/mtserve"))


def _default_threads() -> int:
    return max(1, os.cpu_count() or 1)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MTSERVE_", extra="ignore")

    # --- where things live -------------------------------------------------
    home: Path = Field(
        default_factory=_default_home,
        description="Cache root; models are stored under HOME/models.",
    )

    # --- network -----------------------------------------------------------
    host: str = Field("127.0.0.1", description="Address the HTTP server binds to.")
    port: int = Field(8000, description="Port the HTTP server listens on.")
    # Measured on a 2-core machine with benchmarks/connection_flood.py: 8,000 idle connections
    # cost 42 MB of RSS and left /health/live at 3 ms median, so idle ones are cheap; what a busy one may hold
    # is not: a body of up to max_body_bytes read into memory, and a send buffer. 1,000 of those is a gigabyte
    # at the default body limit, and 15 times the requests max_queue admits at once.
    max_connections: int = Field(
        1000, ge=1, description="Most HTTP connections open at once. Past it a new connection closes the one "
        "that has waited longest for a request (idle, or sending its head slowly), or, when every one is "
        "busy with a request, is itself closed at once with a 503. The soft limit on open files is raised "
        "to fit it. 1,000: idle connections cost about 5 KB each, but each busy one may hold a body of up to "
        "max_body_bytes in memory.",
    )
    idle_timeout_s: float = Field(
        5.0, gt=0, description="A connection with no request under way (a new one, or a kept-alive one "
        "between requests) that sends nothing for this long is closed.",
    )
    header_timeout_s: float = Field(
        10.0, gt=0, description="A request's line and headers must arrive within this many seconds of their "
        "first byte; past it 408, and the connection is closed.",
    )
    body_timeout_s: float = Field(
        15.0, gt=0, description="Longest pause in a request body while the server is reading it; past it "
        "408, and the connection is closed.",
    )
    write_timeout_s: float = Field(
        10.0, gt=0, description="A client that stops reading a response (a stream, a download): once its unread "
        "output fills the socket buffers, a send that waits this long closes the connection, and the request's "
        "work (a stream's engine segments) is cancelled, as when a client hangs up.",
    )
    send_buffer_bytes: int = Field(
        262_144, ge=0, description="Socket send buffer of each connection (SO_SNDBUF; the kernel doubles it). "
        "Bounds the kernel memory a client that stops reading can pin (Linux grows it to 4 MiB on its own) and "
        "how much unread output it takes before write_timeout_s counts; 512 KiB in flight still carries 5 MB/s "
        "at 100 ms round trip. 0 = the kernel's own sizing.",
    )
    forwarded_allow_ips: str = Field(
        "", description="Proxies trusted to say who the client is: comma-separated addresses or networks "
        "(10.0.0.5, 10.0.0.0/8; '*' any) whose X-Forwarded-For and X-Forwarded-Proto are believed. Empty: "
        "none, and a client's address (which the anonymous rate limit counts) is its connection's. Name "
        "only your reverse proxy or load balancer, never an address clients connect from.",
    )

    # --- model and engine --------------------------------------------------
    model: str = Field(
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Model name from the store, a path to a local GGUF file, or (seq2seq and vllm "
        "engines) a model directory.",
    )
    engine: str = Field(
        "llamacpp",
        description="Engine: llamacpp (GGUF LLMs), vllm (Hugging Face LLM directories on a CUDA GPU), "
        "or for seq2seq NMT model directories transformers, onnx, ctranslate2.",
    )
    threads: int = Field(
        default_factory=_default_threads,
        description="CPU threads for the engine (default: all cores).",
    )
    n_parallel: int = Field(
        4,
        description=(
            "Engine slots decoding at once (continuous batching). On a CPU this buys "
            "fairness and latency for short requests, not throughput."
        ),
    )
    ctx_per_slot: int = Field(
        1024, description="KV-cache tokens per slot; a sentence segment needs far less."
    )
    prompt_cache_ram_mib: int = Field(
        128, description="Host RAM llama.cpp may use to keep evicted slot states (MiB); bounds memory."
    )
    llama_params: str = Field(
        "", description="llama.cpp: more of its own params, as NAME=NUMBER pairs separated by commas "
        "(flash_attn_type=0, cache_type_k=8, cache_type_v=8: llama.cpp's enums by number; a dotted NAME "
        "reaches a nested param). For tuning; the defaults are what BENCHMARKS.md measured.",
    )
    queue_ahead: int = Field(
        2, ge=0, description="llama.cpp: segments handed to llama.cpp beyond its slots, so a freed slot "
        "starts the next one in its very next decode step. They wait in llama.cpp's own queue, first "
        "come first served."
    )
    paragraph_slots: int = Field(
        0, ge=0, description="Segments of several sentences (see segment_budget_chars) one request may have "
        "in the engine at once. Such a segment holds its slot until all its sentences are written, so a "
        "document that came first could otherwise fill every slot and keep the one-line requests after it "
        "waiting for a whole paragraph. A request starts its second and later ones only while no other "
        "request has a segment waiting. 0 = one on a CPU, where two decoded side by side cost nearly as "
        "much as each in turn (a lone document took 0.89x to 1.13x the time it took with two); half the "
        "engine's slots on a GPU. Engines that decode batches (the seq2seq ones) have no cap."
    )
    max_output_tokens: int = Field(
        512, description="Hard cap on generated tokens per segment."
    )
    gpu_layers: int = Field(
        0, description="llama.cpp: model layers offloaded to the GPU (0 = CPU only, 999 = all, -1 = "
        "llama.cpp's own default); offload needs a CUDA build of xllamacpp."
    )
    device: str = Field(
        "auto", description="Device for the vllm and ctranslate2 engines: auto (CUDA when a GPU is "
        "present), cpu, cuda. vllm needs cuda."
    )

    # --- GPU: the vllm engine ------------------------------------------------
    gpu_memory_utilization: float = Field(
        0.9, description="vllm: fraction of the GPU's memory vLLM may take for weights and KV cache."
    )
    max_num_seqs: int = Field(
        64, description="vllm: sequences decoded at once (continuous batching); the scheduler keeps "
        "this many segments in flight."
    )
    max_model_len: int = Field(
        4096, description="vllm: context length per sequence (prompt + output tokens); bounds KV-cache "
        "memory."
    )
    dtype: str = Field(
        "auto", description="vllm: weight and activation dtype: auto (the model's), bfloat16, float16, "
        "float32."
    )
    quantization: str = Field(
        "", description="vllm: '' (none: as the checkpoint is), fp8 (weights quantized at load), awq or "
        "gptq (checkpoints quantized that way)."
    )
    sampling: str = Field(
        "greedy", description="vllm: greedy (deterministic), or model: the registry's recommended sampling "
        "for the model (Hunyuan-MT: top_k 20, top_p 0.6, repetition_penalty 1.05, temperature 0.7)."
    )

    # --- seq2seq engines and the dynamic batcher -----------------------------
    max_batch_size: int = Field(
        32, description="Seq2seq engines: most examples (or source tokens, with batch_type "
        "tokens) decoded in one batch."
    )
    batch_type: str = Field(
        "examples", description="What max_batch_size counts: examples, or tokens (rows x longest source)."
    )
    max_queue_delay_ms: float = Field(
        5.0, description="How long a partial batch may wait for more requests while the engine is "
        "busy; a lone request on an idle engine never waits."
    )
    inter_threads: int = Field(
        1, description="Seq2seq batches decoded at once (CTranslate2 inter_threads); the threads "
        "are split between them."
    )
    num_beams: int = Field(1, description="Seq2seq beam size (1 = greedy, batch-invariant).")
    compute_type: str = Field(
        "default", description="CTranslate2 compute type: default (as converted), int8, "
        "int8_float32, float32; on a GPU also float16, bfloat16, int8_float16."
    )
    onnx_inter_op_threads: int = Field(
        1, description="ONNX Runtime inter-op threads (above 1 runs independent graph branches "
        "in parallel)."
    )
    onnx_graph_optimization: str = Field(
        "all", description="ONNX Runtime graph optimization level: disable, basic, extended, all."
    )

    # --- scheduling --------------------------------------------------------
    max_queue: int = Field(
        64, description="Requests admitted at once; beyond this the API answers 503."
    )
    max_queue_per_caller: int = Field(
        32, description="Requests one caller (an API key, or a client address without one: an IPv4 address "
        "or an IPv6 /64) may have admitted at once; beyond this it gets 429 with Retry-After while the others "
        "are still admitted, so one caller's flood (streams it stops reading, a burst of calls) cannot fill "
        "the queue. 32: half of max_queue's default. Document jobs and the CLI are not counted. 0 = no cap."
    )
    request_timeout_s: float = Field(
        60.0, description="Deadline per request; past it the API answers 504."
    )
    engine_hang_s: float = Field(
        120.0,
        description="A segment still in the engine this long (past its deadline) means a hung "
        "engine: the watchdog reloads it.",
    )
    cache_size: int = Field(
        4096, description="Entries in the in-memory LRU translation cache (0 = off)."
    )
    segment_max_chars: int = Field(
        400, description="Longer sentences are split at clause boundaries, then between words, and a "
        "word longer than this is cut, so no segment sent to the engine is longer (a character beyond "
        "U+FFFF, an emoji or rare CJK, counts as 3: it takes several tokens)."
    )
    # 200 keeps a short paragraph whole. Measured with the default model (QUALITY.md, "Segments of
    # several sentences"): +5.5 BLEU and +3.6 chrF on the prose set's test split, 17 right readings of 20 against 6;
    # on unrelated sentences side by side (HSK paragraphs) -1.7 / -1.3, the case for 0. A grouped segment
    # costs its request one scheduler turn per sentence, so documents keep their share (scheduler.py).
    segment_budget_chars: int = Field(
        200, ge=0, description="Consecutive whole sentences of one line go to the engine as one segment up to "
        "this many characters (never past segment_max_chars, never across a line break), so a UI string or "
        "a short paragraph is translated with its context; a translation that drops a sentence is redone "
        "sentence by sentence. 0 = one sentence per segment (for lists of unrelated sentences)."
    )

    glossary_file: Path | None = Field(
        None,
        description="Server-wide glossary applied to every request: TSV term<TAB>translation"
        "[<TAB>source<TAB>target] or JSON {term: translation}; request glossaries override it.",
    )
    glossaries_per_key: int = Field(
        100, description="Most stored glossaries one API key may own (with api_keys off: that the API may "
        "create in all); more get 403. `mtserve glossary add` is not bound (0 = no cap)."
    )
    glossary_bytes_per_key: int = Field(
        5_000_000, ge=0, description="Most bytes of glossary entries (terms and translations, UTF-8) the stored "
        "glossaries of one API key may hold together (with api_keys off: those the API creates in all); a "
        "glossary that would pass it gets 403. `mtserve glossary add` is not bound (0 = no cap)."
    )
    glossary_max_entries: int = Field(
        10_000, description="Most entries in one stored glossary (POST /v2/glossaries, `mtserve glossary "
        "add`); more get 413 (0 = no cap)."
    )
    glossary_request_entries: int = Field(
        1_000, description="Most entries in a request's own glossary object (/translate, /translate/stream, "
        "/translate_file, /jobs); more get 413 (0 = no cap)."
    )
    style_rules_per_key: int = Field(
        100, ge=0, description="Most style rules (DeepL's POST /v3/style_rules) one API key may own (with "
        "api_keys off: that the API may create in all); more get 403 (0 = no cap)."
    )
    context_max_chars: int = Field(
        1_000, ge=0, description="Longest `context` a request may send (DeepL's field, also on /translate, "
        "/translate_file and /v1); every segment's prompt carries it, so it costs prompt tokens per "
        "segment; longer gets 413 (0 = no cap)."
    )
    guardrails: bool = Field(
        True,
        description="Check each output (left untranslated, or with a source word left in it, looping, explaining, "
        "refusing, answering, restating the context, glossary term missed) and retry once with a stricter prompt.",
    )
    warm_strict: str = Field(
        "zh:en", description="`mtserve serve` on llama.cpp: language pairs (source:target, comma-separated) "
        "whose strict-retry prompt is computed before the server reports ready, so llama.cpp's prompt cache "
        "holds it. A retry then computes only its text, where a cold one computes its ~630-token prompt while "
        "every slot waits (9 s on the 0.5B, 14 s on the 1.5B with 2 threads); start-up is that much longer "
        "once. Empty: none.",
    )
    script_grammar: Literal["always", "retry"] = Field(
        "always",
        description="llama.cpp: from Chinese, Japanese or Korean into a language written without their "
        "characters, decode under a grammar that excludes them: on every request (always), or only "
        "on the guardrails' retry (retry).",
    )
    # --- translation memory (mtserve tm; tm.sqlite3 under home) ---------------------------------
    # Tuned on the software set's dev split (QUALITY.md; the runs in docs/decisions/017-tm-retrieval.md).
    # With a memory of the products' own other strings, what a TM is for, and the strings with
    # placeholders taking part (a sixth of the software strings have one), k 2 at 60 scored 57.5 / 70.3
    # BLEU / chrF against 48.2 / 64.7 without a memory, 57.1 / 69.7 at k 3 and 56.7 / 69.8 at k 1, at
    # 1.19x the time of no TM against 1.26x at k 3; a floor of 70 gave fewer strings examples and less.
    # With a memory of other projects every k and floor tried was within noise of no TM.
    tm_k: int = Field(
        2, ge=0, description="Translation memory: most similar entries a segment gets as examples (0 = none)."
    )
    tm_min_similarity: float = Field(
        60.0, ge=0, le=100, description="Translation memory: lowest similarity (rapidfuzz ratio of the "
        "normalised sources, 0-100) for an entry to count as similar and become an example."
    )
    tm_candidates: int = Field(
        50, ge=1, description="Translation memory: entries the n-gram index pre-selects for scoring per lookup; "
        "more finds more, slower."
    )
    suggestions: bool = Field(
        False, description="Accept LibreTranslate's /suggest: store suggestions, which enter the translation "
        "memory once the operator accepts them (`mtserve tm accept`, POST /tm/suggestions/accept)."
    )
    tm_entries_per_key: int = Field(
        100_000, ge=0, description="Most translation-memory entries one API key may hold through POST /tm/import "
        "(with api_keys off: the operator's entries, past which the API imports no more); an import that would "
        "pass it gets 403. `mtserve tm import` is not bound (0 = no cap)."
    )
    tm_suggestions_per_key: int = Field(
        1_000, ge=0, description="Most suggestions (/suggest) waiting for the operator from one API key (callers "
        "without a key share one allowance); more get 403 until some are accepted or removed (0 = no cap)."
    )
    # Bytes, not only entries: one entry may hold 5,000 characters on each side, and an indexed entry takes
    # 13-16 times its text on disk once the WAL is checkpointed (short UI strings and long CJK paragraphs
    # measured alike), up to twice that while the WAL still holds a large import.
    tm_bytes_per_key: int = Field(
        10_000_000, ge=0, description="Most bytes of translation-memory text (sources and targets, UTF-8) one API "
        "key may hold through POST /tm/import (with api_keys off: the operator's, past which the API imports no "
        "more); an import that would pass it gets 403. With its index an entry takes about 15 times its text on "
        "disk. `mtserve tm import` is not bound (0 = no cap)."
    )
    tm_suggestion_bytes_per_key: int = Field(
        1_000_000, ge=0, description="Most bytes of suggestion text (q and s, UTF-8) waiting for the operator from "
        "one API key (callers without a key share one allowance); past it /suggest gets 403 (0 = no cap)."
    )
    markup_mode: Literal["context", "transfer"] = Field(
        "transfer",
        description="A sentence with inline tags, on an LLM: translated with its tags in the prompt "
        "(context), or translated without them and the tags then put into that translation by a "
        "second, grammar-constrained request (transfer). Measured in QUALITY.md.",
    )
    markup_grammar: Literal["always", "retry", "off"] = Field(
        "retry",
        description="llama.cpp: for a segment with inline tags or placeholders, decode under a grammar "
        "that requires each of them once, properly nested: on every request (always), only on the "
        "retry after a translation that lost or broke one (retry), or never (off).",
    )
    detect_prior: str = Field(
        "en=3,zh=2",
        description="Weights for source=auto on short, ambiguous text (code=weight, ...).",
    )

    # --- request limits ----------------------------------------------------
    char_limit: int = Field(
        10000, description="Characters per request (all texts together)."
    )
    batch_limit: int = Field(64, description="Texts per request when q is a list.")
    max_alternatives: int = Field(3, description="Most alternatives a request may ask for.")

    # --- documents (/translate_file, /jobs) ----------------------------------
    files_formats: str = Field(
        "txt,md,html,srt,vtt,docx,pptx,odt,epub,pdf,po,json,xliff,xlsx",
        description="Document formats accepted, comma-separated ('all': every one; empty: files off).",
    )
    files_xlsx_sheet_names: bool = Field(
        False, description="Translate the sheet names of .xlsx workbooks too (formulas naming a renamed "
        "sheet are updated; a sheet named inside a string or a 3-D reference keeps its name).",
    )
    files_max_mb: float = Field(20.0, description="Largest document upload, in MB; bigger ones get 413.")
    files_max_segments: int = Field(
        5000, description="Most segments (paragraphs, passages of subtitle cues, strings) per document; more get 413."
    )
    files_max_expanded_mb: float = Field(
        200.0, description="Most a document may expand to while it is read, in MB: the entries of a "
        ".docx/.pptx/.odt/.epub archive together, or the decoded streams of a PDF; more get 413.",
    )
    files_max_archive_entries: int = Field(
        10_000, description="Most entries (files) in a .docx/.pptx/.odt/.epub archive; more get 413."
    )
    files_max_xml_mb: float = Field(
        32.0, description="Largest XML part of a document archive once inflated, in MB; bigger get 413."
    )
    files_max_xml_nodes: int = Field(
        1_000_000, description="Most markup nodes (tags, attributes, entities) in one XML part or HTML "
        "page of a document, counted before it is parsed; more get 413. Bounds the parser's memory.",
    )
    files_max_depth: int = Field(
        100, description="Deepest nesting in a document (XML elements, JSON objects and lists, Markdown "
        "links); deeper gets 413. XML is also held to libxml2's own 256 levels.",
    )
    files_max_pdf_pages: int = Field(1000, description="Most pages in a PDF; more get 413.")
    files_max_pdf_page_chars: int = Field(
        100_000, description="Most characters drawn on one PDF page (each costs the layout analysis about "
        "a kilobyte); more get 413.",
    )
    files_max_pdf_stream_mb: float = Field(
        32.0, description="Largest PDF stream once decoded (content, fonts, object streams), in MB; "
        "bigger get 413.",
    )
    files_parse_workers: int = Field(
        1, description="Worker processes that read and render documents under the memory, CPU and time "
        "limits below (0: in the server process, held by the caps above only).",
    )
    files_parse_memory_mb: int = Field(
        1024, description="Memory a document parse or render may allocate in its worker process, in MiB "
        "(RLIMIT_AS above the worker's start-up size); past it the upload gets 413.",
    )
    files_parse_cpu_s: float = Field(
        30.0, description="CPU seconds a document parse may use in its worker (a render: twice); past it 413."
    )
    files_parse_timeout_s: float = Field(
        60.0, description="Wall-clock seconds a document parse may take (a render: twice); past it the "
        "worker is killed and the upload gets 413.",
    )
    files_ttl_s: float = Field(
        3600.0, description="Seconds an uploaded document and its translation are kept before deletion."
    )
    files_jobs: int = Field(1, description="Documents translated at once; later ones wait their turn.")
    files_queue: int = Field(
        16, description="Documents waiting or running at once; beyond this uploads get 503 with Retry-After."
    )
    files_chunk: int = Field(
        8, description="Segments per scheduler request in a document job (progress is reported per chunk)."
    )
    max_body_bytes: int = Field(
        1_000_000, description="Largest request body accepted (bytes); larger gets 413."
    )
    # Apache's LimitRequestLine is 8 KiB and nginx's large header buffer 8 KiB; twice that leaves room for
    # GET /translate/stream with q in the URL (about 1,800 CJK characters percent-encoded).
    max_request_line_bytes: int = Field(
        16_384, ge=64, description="Longest request line (method, URL, version) accepted; longer gets 414, "
        "however the bytes arrive. Long text goes in a POST body."
    )
    max_header_bytes: int = Field(
        16_384, ge=256, description="Most bytes of request headers together; more get 431, however the "
        "bytes arrive."
    )
    max_headers: int = Field(
        100, ge=8, description="Most request headers; more get 431 (Apache's LimitRequestFields is 100)."
    )
    json_max_depth: int = Field(
        32, ge=2, le=200, description="Deepest nesting of arrays and objects in a JSON body, or in a JSON "
        "text field such as glossary; deeper gets 400 (at most 200, the JSON parser's own bound)."
    )

    # --- access --------------------------------------------------------------
    api_keys: bool = Field(
        False, description="Turn on API keys and rate limits (keys: `mtserve keys add`)."
    )
    require_api_key: bool = Field(
        False, description="With api_keys on: refuse requests without a key (LibreTranslate's 400, OpenAI's "
        "401, DeepL's 403), on every route that does or reveals work (translation, detection, documents "
        "and jobs, downloads, /v1/models)."
    )
    metrics_require_key: bool = Field(
        False, description="/metrics needs an API key too (Authorization: Bearer); needs api_keys on, "
        "and without it /metrics answers 403."
    )
    anonymous_rpm: int = Field(
        60, description="With api_keys on: requests per minute without a key, per IPv4 address or IPv6 /64 "
        "(0 = unlimited)."
    )
    rate_limit_callers: int = Field(
        100_000, description="With api_keys on: callers (keys, addresses) the rate limiter tracks at once; "
        "idle ones are forgotten first."
    )
    cors_origins: str = Field(
        "", description="Comma-separated origins allowed by CORS ('*' for any); empty = CORS off."
    )
    shutdown_grace_s: float = Field(
        20.0, description="On SIGTERM, how long in-flight requests may take to finish."
    )

    # --- scaling out: Ray Serve (mtserve[ray]) ---------------------------------
    ray: bool = Field(
        False, description="Serve through Ray Serve: replicas of the whole service behind Ray's HTTP proxy."
    )
    ray_address: str = Field(
        "", description="Ray cluster to join: '' starts a local one, 'auto' joins the one on this machine, "
        "ray://HOST:10001 a remote head."
    )
    ray_min_replicas: int = Field(1, description="Ray Serve: fewest replicas (each loads the model once).")
    ray_max_replicas: int = Field(1, description="Ray Serve: most replicas the autoscaler may start.")
    ray_target_ongoing_requests: float = Field(
        4.0, description="Ray Serve: ongoing requests per replica the autoscaler aims at."
    )
    ray_replica_cpus: float = Field(
        1.0, description="Ray Serve: CPUs reserved per replica (set it to MTSERVE_THREADS on a real cluster)."
    )

    # --- the CLI as a client of a running server -------------------------------
    url: str = Field(
        "", description="A running mtserve (e.g. http://127.0.0.1:8000) that `mtserve translate` and "
        "`translate-file` send their work to, through its HTTP API, loading no model themselves. Empty: they "
        "load the model in their own process.",
    )
    api_key: SecretStr = Field(
        SecretStr(""), description="The API key `mtserve translate` and `translate-file` send to the server at "
        "url, when it has api_keys on (`mtserve keys add`). Never printed.",
    )

    # --- logging -----------------------------------------------------------
    log_level: str = Field("info", description="Log level: debug, info, warning, error.")
    log_format: Literal["auto", "text", "json"] = Field(
        "auto", description="Console log lines: text (readable), json (one object per line), or auto: "
        "text on a terminal, json otherwise."
    )

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    @property
    def glossaries_db(self) -> Path:
        """Named glossaries (``mtserve.service.glossary_store.GlossaryStore``)."""
        return self.home / "glossaries.sqlite3"

    @property
    def style_rules_db(self) -> Path:
        """Style rules (``mtserve.service.style_rules.StyleRuleStore``)."""
        return self.home / "style_rules.sqlite3"

    @property
    def tm_db(self) -> Path:
        """The translation memory (``mtserve.service.tm.TranslationMemory``)."""
        return self.home / "tm.sqlite3"

    @property
    def files_dir(self) -> Path:
        return self.home / "files"

    @property
    def jobs_db(self) -> Path:
        """Document jobs (``mtserve.documents.jobs.records.JobRecords``); their files are under files_dir."""
        return self.home / "jobs.sqlite3"

    @property
    def keys_db(self) -> Path:
        return self.home / "keys.sqlite3"


def settings_table() -> list[tuple[str, str, str]]:
    """(environment variable, default, description) for every setting."""
    rows = []
    for name, field in Settings.model_fields.items():
        if field.default_factory is not None:
            default = {
                "home": "~/.cache/mtserve",
                "threads": "number of CPU cores",
            }.get(name, str(field.default_factory()))
        elif isinstance(field.default, SecretStr):
            default = field.default.get_secret_value()
        else:
            default = str(field.default)
        rows.append((f"MTSERVE_{name.upper()}", default, field.description or ""))
    return rows
