"""Seq2seq translation on ONNX Runtime: an encoder plus a decoder with past key/values.

``mtserve convert --to onnx`` exports three graphs with optimum's exporter:
the encoder, a first-step decoder that also returns the cross-attention
keys/values, and a decoder that takes the past keys/values, so every later
step feeds one new token and reads the cache instead of recomputing the
prefix. FP32 and INT8 (dynamic or static) models load the same way.

The decode loop is here, in NumPy, rather than ``ORTModelForSeq2SeqLM.generate``:
it is the part that runs per token, and a direct loop over ``session.run``
has no torch round trip per step. Rows that finish (or are cancelled) leave
the batch at once, cache and all, so a long sentence does not make short
ones pay for its steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mtserve.engines.base import EngineError
from mtserve.engines.seq2seq import (
    ONNX_FILES,
    DecodeOptions,
    EncodedRequest,
    Generated,
    Sampling,
    Seq2SeqEngine,
)

GRAPH_OPTIMIZATION_LEVELS = ("disable", "basic", "extended", "all")
SAMPLING_TOP_K = 50  # the same top-k every seq2seq engine samples from


class OnnxEngine(Seq2SeqEngine):
    name = "onnx"

    def __init__(
        self,
        model_dir: Path,
        *,
        inter_op_threads: int = 1,
        graph_optimization: str = "all",
        **kwargs: Any,
    ):
        super().__init__(model_dir, **kwargs)
        if graph_optimization not in GRAPH_OPTIMIZATION_LEVELS:
            raise ValueError(
                f"graph optimization must be one of {GRAPH_OPTIMIZATION_LEVELS}, got {graph_optimization!r}"
            )
        self.inter_op_threads = max(1, inter_op_threads)
        self.graph_optimization = graph_optimization
        self._encoder: Any = None
        self._decoder: Any = None
        self._decoder_past: Any = None

    # --- lifecycle -------------------------------------------------------------------
    def session_options(self) -> Any:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = self.inter_op_threads
        options.execution_mode = (
            ort.ExecutionMode.ORT_PARALLEL if self.inter_op_threads > 1 else ort.ExecutionMode.ORT_SEQUENTIAL
        )
        options.graph_optimization_level = {
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }[self.graph_optimization]
        options.log_severity_level = 3  # ORT warns about every unused initializer otherwise
        return options

    def _load_model(self) -> None:
        import onnxruntime as ort

        missing = [name for name in ONNX_FILES if not (self.model_dir / name).is_file()]
        if missing:
            raise EngineError(
                f"{self.model_dir} lacks {', '.join(missing)}; make it with "
                f"`mtserve convert MODEL_DIR --to onnx --out {self.model_dir}`"
            )
        options = self.session_options()
        providers = ["CPUExecutionProvider"]
        sessions = [
            ort.InferenceSession(str(self.model_dir / name), sess_options=options, providers=providers)
            for name in ONNX_FILES
        ]
        self._encoder, self._decoder, self._decoder_past = sessions
        outputs = [o.name for o in self._decoder.get_outputs()]
        self._present_names = outputs[1:]
        self._self_past = [n.replace("present", "past_key_values") for n in outputs[1:] if ".decoder." in n]
        self._cross_past = [n.replace("present", "past_key_values") for n in outputs[1:] if ".encoder." in n]
        self._past_outputs = [o.name for o in self._decoder_past.get_outputs()][1:]

    def close(self) -> None:
        self._encoder = self._decoder = self._decoder_past = None
        super().close()

    # --- decoding --------------------------------------------------------------------
    def _generate(self, batch: list[EncodedRequest], sampling: Sampling | None) -> list[Generated]:
        if self._encoder is None:
            raise EngineError("engine is not loaded")
        beams = 1 if sampling is not None else self.decode.num_beams
        if beams > 1:
            return BeamSearch(self, batch, beams).run()
        return self._greedy(batch, sampling)

    def start(
        self, batch: list[EncodedRequest], expand: int = 1
    ) -> tuple[np.ndarray, np.ndarray, dict, dict]:
        """Encode the sources and run the decoder over the prefix.

        Returns the last-position logits, the encoder mask, and the cross- and
        self-attention caches, with every row repeated ``expand`` times (beams).
        """
        pad = self.spec.pad_token_id
        width = max(len(row.source_ids) for row in batch)
        ids = np.full((len(batch), width), pad, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for i, row in enumerate(batch):
            ids[i, : len(row.source_ids)] = row.source_ids
            mask[i, : len(row.source_ids)] = 1
        hidden = self._encoder.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
        prefix = np.array([row.prefix_ids for row in batch], dtype=np.int64)
        if expand > 1:
            hidden, mask, prefix = (np.repeat(a, expand, axis=0) for a in (hidden, mask, prefix))
        outputs = self._decoder.run(
            None,
            {
                "encoder_attention_mask": mask,
                "input_ids": prefix,
                "encoder_hidden_states": hidden,
            },
        )
        cache = {n.replace("present", "past_key_values"): v for n, v in zip(self._present_names, outputs[1:])}
        cross = {n: cache[n] for n in self._cross_past}
        own = {n: cache[n] for n in self._self_past}
        return outputs[0][:, -1, :], mask, cross, own

    def step(self, tokens: np.ndarray, mask: np.ndarray, cross: dict, own: dict) -> tuple[np.ndarray, dict]:
        """One decoder step from the cache: logits for the next token and the grown cache."""
        feed = {"encoder_attention_mask": mask, "input_ids": tokens.reshape(-1, 1).astype(np.int64)}
        feed.update(cross)
        feed.update(own)
        outputs = self._decoder_past.run(None, feed)
        own = {n.replace("present", "past_key_values"): v for n, v in zip(self._past_outputs, outputs[1:])}
        return outputs[0][:, -1, :], own

    def mask_logits(self, logits: np.ndarray, generated: int) -> np.ndarray:
        """Never pad; no end-of-sequence before ``min_new_tokens`` (as the other engines do)."""
        logits = np.array(logits, dtype=np.float32, copy=True)
        if self.spec.pad_token_id != self.spec.eos_token_id:
            logits[:, self.spec.pad_token_id] = -np.inf
        if generated < self.decode.min_new_tokens:
            logits[:, self.spec.eos_token_id] = -np.inf
        return logits

    def _greedy(self, batch: list[EncodedRequest], sampling: Sampling | None) -> list[Generated]:
        eos = self.spec.eos_token_id
        logits, mask, cross, own = self.start(batch)
        rng = np.random.default_rng(sampling.seed) if sampling is not None else None
        tokens: list[list[int]] = [[] for _ in batch]
        finish: list[str | None] = [None] * len(batch)
        active = list(range(len(batch)))  # batch rows still decoding, in cache order
        generated = 0
        while True:
            scores = self.mask_logits(logits, generated)
            chosen = scores.argmax(axis=-1) if rng is None else sample(scores, sampling, rng)
            keep = []
            for slot, row in enumerate(active):
                token = int(chosen[slot])
                if token == eos:
                    finish[row] = "stop"
                else:
                    tokens[row].append(token)
                    if len(tokens[row]) >= batch[row].max_new_tokens:
                        finish[row] = "length"
                if finish[row] is None and batch[row].cancelled:
                    finish[row] = "cancelled"
                if finish[row] is None:
                    keep.append(slot)
            if not keep:
                break
            if len(keep) < len(active):  # drop finished rows, cache and all
                active = [active[s] for s in keep]
                chosen, mask = chosen[keep], mask[keep]
                cross = {n: v[keep] for n, v in cross.items()}
                own = {n: v[keep] for n, v in own.items()}
            logits, own = self.step(chosen, mask, cross, own)
            generated += 1
        return [Generated(tokens[i], finish[i] or "stop") for i in range(len(batch))]


def sample(scores: np.ndarray, sampling: Sampling, rng: np.random.Generator) -> np.ndarray:
    """Temperature sampling among the top-k tokens, one draw per row."""
    k = min(SAMPLING_TOP_K, scores.shape[-1])
    top = np.argpartition(-scores, k - 1, axis=-1)[:, :k]
    picked = np.take_along_axis(scores, top, axis=-1) / max(sampling.temperature, 1e-5)
    picked = np.exp(picked - picked.max(axis=-1, keepdims=True))
    picked /= picked.sum(axis=-1, keepdims=True)
    return np.array([top[i, rng.choice(k, p=picked[i])] for i in range(len(scores))])


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


class BeamSearch:
    """Beam search over the cached decoder, batched: ``beams`` cache rows per request.

    A hypothesis ends at end-of-sequence or at its row's length limit; its
    score is the summed log-probability over ``length ** length_penalty``. A
    row is done once it holds ``beams`` finished hypotheses and no live beam
    can still beat the worst of them (the rule Hugging Face uses by default).
    """

    def __init__(self, engine: OnnxEngine, batch: list[EncodedRequest], beams: int):
        self.engine, self.batch, self.beams = engine, batch, beams
        self.decode: DecodeOptions = engine.decode
        self.finished: list[list[tuple[float, list[int], str]]] = [[] for _ in batch]

    def _normalized(self, score: float, length: int) -> float:
        return score / (max(1, length) ** self.decode.length_penalty)

    def _add(self, row: int, score: float, tokens: list[int], reason: str) -> None:
        hyps = self.finished[row]
        hyps.append((self._normalized(score, len(tokens) + 1), tokens, reason))
        hyps.sort(key=lambda h: -h[0])
        del hyps[self.beams :]

    def _row_done(self, row: int, best_live: float, length: int) -> bool:
        hyps = self.finished[row]
        return len(hyps) >= self.beams and self._normalized(best_live, length) <= hyps[-1][0]

    def run(self) -> list[Generated]:
        engine, batch, k = self.engine, self.batch, self.beams
        eos = engine.spec.eos_token_id
        logits, mask, cross, own = engine.start(batch, expand=k)
        scores = np.zeros((len(batch), k), dtype=np.float64)
        scores[:, 1:] = -1e9  # all beams start equal: let only the first one expand at step 0
        sequences: list[list[list[int]]] = [[[] for _ in range(k)] for _ in batch]
        active = list(range(len(batch)))
        generated = 0
        while True:
            logp = log_softmax(engine.mask_logits(logits, generated)).reshape(len(active), k, -1)
            vocab = logp.shape[-1]
            totals = (scores[:, :, None] + logp).reshape(len(active), -1)
            # the 2k best candidates per row, best first (enough: at most k of them end a beam)
            best = np.argpartition(-totals, 2 * k - 1, axis=-1)[:, : 2 * k]
            order = np.argsort(-np.take_along_axis(totals, best, axis=-1), axis=-1, kind="stable")
            top = np.take_along_axis(best, order, axis=-1)
            new_scores = np.zeros_like(scores)
            new_tokens = np.zeros((len(active), k), dtype=np.int64)
            origins = np.zeros((len(active), k), dtype=np.int64)
            keep_rows = []
            for slot, row in enumerate(active):
                live: list[tuple[float, int, int]] = []
                for rank, flat in enumerate(top[slot]):
                    beam, token = divmod(int(flat), vocab)
                    total = float(totals[slot, flat])
                    if token == eos:
                        if rank < k:
                            self._add(row, total, sequences[row][beam], "stop")
                        continue
                    live.append((total, beam, token))
                    if len(live) == k:
                        break
                length = generated + 1
                limit = batch[row].max_new_tokens
                if length >= limit or batch[row].cancelled:
                    reason = "cancelled" if batch[row].cancelled else "length"
                    for total, beam, token in live:
                        self._add(row, total, sequences[row][beam] + [token], reason)
                    continue
                if self._row_done(row, live[0][0], length):
                    continue
                for j, (total, beam, token) in enumerate(live):
                    new_scores[slot, j], new_tokens[slot, j], origins[slot, j] = total, token, beam
                sequences[row] = [sequences[row][beam] + [token] for _, beam, token in live]
                keep_rows.append(slot)
            if not keep_rows:
                break
            # The self-attention cache follows the surviving beams; the encoder side is the
            # same for every beam of a row, so it changes only when a row leaves.
            cache_rows = np.array([s * k + origins[s, j] for s in keep_rows for j in range(k)])
            if len(keep_rows) < len(active):
                row_block = np.array([s * k + j for s in keep_rows for j in range(k)])
                mask = mask[row_block]
                cross = {n: v[row_block] for n, v in cross.items()}
            active = [active[s] for s in keep_rows]
            scores, new_tokens = new_scores[keep_rows], new_tokens[keep_rows]
            own = {n: v[cache_rows] for n, v in own.items()}
            logits, own = engine.step(new_tokens.reshape(-1), mask, cross, own)
            generated += 1
        results = []
        for row, hyps in enumerate(self.finished):
            if not hyps:
                results.append(Generated([], "cancelled" if batch[row].cancelled else "stop"))
                continue
            _, tokens, reason = hyps[0]
            results.append(Generated(list(tokens), reason))
        return results
