"""Seq2seq translation on PyTorch: ``AutoModelForSeq2SeqLM.generate``, batched with padding.

This is the reference the other seq2seq engines are tested against: the Hugging
Face model directory as the user has it, no conversion. ``generate`` runs with
the KV cache, greedy or beam search, under a generation config built from
mtserve's own decoding options rather than the model's ``generation_config.json``
(opus-mt ships ``num_beams=4`` and a forced end token at ``max_length``), so all
engines decode alike. The decoder prefix (start token, then the target
language for NLLB/M2M100) goes in as ``decoder_input_ids`` per row, which lets
one batch mix target languages.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from mtserve.engines.base import EngineError
from mtserve.engines.seq2seq import EncodedRequest, Generated, Sampling, Seq2SeqEngine, strip_output

SAMPLING_TOP_K = 50

_torch_rng = threading.Lock()  # torch's RNG is global: one seeded sample at a time


class TransformersEngine(Seq2SeqEngine):
    name = "transformers"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._model: Any = None

    def _load_model(self) -> None:
        import torch
        from transformers import AutoModelForSeq2SeqLM

        torch.set_num_threads(self.threads)
        try:
            self._model = AutoModelForSeq2SeqLM.from_pretrained(
                str(self.model_dir), dtype=torch.float32
            ).eval()
        except (OSError, ValueError) as exc:
            raise EngineError(f"cannot load the Hugging Face model in {self.model_dir}: {exc}") from exc
        # generate() fills any option left at its global default from the model's own
        # generation config (opus-mt: num_beams=4, forced_eos_token_id at the length
        # limit). A neutral one here means only generation_config() below decides.
        from transformers import GenerationConfig

        self._model.generation_config = GenerationConfig()

    def close(self) -> None:
        self._model = None
        super().close()

    def generation_config(self, sampling: Sampling | None, max_new: int) -> Any:
        from transformers import GenerationConfig

        spec, decode = self.spec, self.decode
        options: dict[str, Any] = dict(
            max_new_tokens=max_new,
            min_new_tokens=decode.min_new_tokens or None,
            decoder_start_token_id=spec.decoder_start_token_id,
            eos_token_id=spec.eos_token_id,
            pad_token_id=spec.pad_token_id,
            suppress_tokens=[spec.pad_token_id] if spec.pad_token_id != spec.eos_token_id else None,
            use_cache=True,
        )
        if sampling is not None:
            options.update(
                do_sample=True, temperature=sampling.temperature, top_k=SAMPLING_TOP_K, num_beams=1
            )
        else:
            options.update(do_sample=False, num_beams=decode.num_beams, length_penalty=decode.length_penalty)
        return GenerationConfig(**options)

    def _generate(self, batch: list[EncodedRequest], sampling: Sampling | None) -> list[Generated]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        model = self._model
        if model is None:
            raise EngineError("engine is not loaded")
        pad = self.spec.pad_token_id
        width = max(len(row.source_ids) for row in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, row in enumerate(batch):
            ids[i, : len(row.source_ids)] = torch.tensor(row.source_ids)
            mask[i, : len(row.source_ids)] = 1
        prefix = torch.tensor([row.prefix_ids for row in batch], dtype=torch.long)

        class Cancelled(StoppingCriteria):
            """Stop a row whose caller has gone (all rows at once under beam search)."""

            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                flags = [row.cancelled for row in batch]
                if input_ids.shape[0] != len(flags):  # beam search: rows x candidate beams
                    return torch.full((input_ids.shape[0],), all(flags), dtype=torch.bool)
                return torch.tensor(flags, dtype=torch.bool)

        config = self.generation_config(sampling, max(row.max_new_tokens for row in batch))
        with torch.inference_mode(), _torch_rng if sampling is not None else contextlib.nullcontext():
            if sampling is not None and sampling.seed is not None:
                torch.manual_seed(sampling.seed)
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                decoder_input_ids=prefix,
                generation_config=config,
                stopping_criteria=StoppingCriteriaList([Cancelled()]),
            )
        results = []
        for row, sequence in zip(batch, out.tolist()):
            new = sequence[len(row.prefix_ids) :]
            while new and new[-1] == pad and pad != self.spec.eos_token_id:
                new.pop()  # rows that finished early are padded to the batch's length
            generated = strip_output(new, self.spec.eos_token_id, row.max_new_tokens)
            if row.cancelled:
                generated.finish_reason = "cancelled"
            results.append(generated)
        return results
