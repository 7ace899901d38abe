"""Seq2seq models built at test time: no weights can be downloaded here, so we make them.

A SentencePiece vocabulary is trained on a small generated zh/en corpus, and a
Marian (or M2M100 / NLLB) config with tiny dimensions gets random weights
under a fixed seed. The weights are drawn wider than Hugging Face's default
init (``init_std``) and Marian's end-of-sequence logit gets a bias, so outputs
depend on the input and stop at different lengths: both matter for the
equality and batch invariance tests. The benchmark builds an opus-mt-sized Marian the same way.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

ZH_WORDS = list("我你他她们的是在有不这人中大上个国到说时要就出会可也子和地学对生能而年天水书热冷好")
EN_WORDS = (
    "the a is of and to in that it for you was with on as have be at one this from by "
    "hot cold book water good day year people country student school"
).split()

# Inputs the engine tests translate: short and long, so batches mix lengths.
SAMPLE_ZH = [
    "我是中国人。",
    "他们在学校学习。",
    "你好",
    "这个国家很大，我们的人民很好。",
    "书",
    "他说你要学。",
    "中国的大学有很多学生，他们每天都在学习，也会说话。",
    "有人在说",
    "水很热。",
    "今年的天气很冷，我们不出去。",
    "她的书在上面。",
    "我们可以说",
]


def synthetic_corpus(pairs: int = 1500, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    lines = []
    for _ in range(pairs):
        lines.append("".join(rng.choice(ZH_WORDS) for _ in range(rng.randint(3, 14))) + "。")
        lines.append(" ".join(rng.choice(EN_WORDS) for _ in range(rng.randint(3, 10))).capitalize() + ".")
    return lines


def train_sentencepiece(work: Path, vocab_size: int, *, fairseq_ids: bool = False) -> Path:
    """A unigram model on the synthetic corpus; Marian ids (eos 0, unk 1) or fairseq's layout."""
    import sentencepiece as spm

    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus.txt"
    corpus.write_text("\n".join(synthetic_corpus()), encoding="utf-8")
    # fairseq tokenizers (NLLB, M2M100) shift SentencePiece's default ids by their own specials
    ids = (
        dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1)
        if fairseq_ids
        else dict(unk_id=1, bos_id=-1, eos_id=0, pad_id=-1)
    )
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(work / "spm"),
        vocab_size=vocab_size,
        character_coverage=1.0,
        model_type="unigram",
        num_threads=1,
        minloglevel=2,
        hard_vocab_limit=False,
        **ids,
    )
    return work / "spm.model"


def _bias_end_token(model, eos_bias: float, eos_id: int) -> None:
    """Make end-of-sequence likely enough that random outputs end at different lengths."""
    import torch

    if hasattr(model, "final_logits_bias"):  # Marian; CTranslate2 converts it as the output bias
        with torch.no_grad():
            model.final_logits_bias.zero_()
            model.final_logits_bias[0, eos_id] = eos_bias


def build_marian(
    out: Path,
    *,
    d_model: int = 32,
    layers: int = 2,
    heads: int = 4,
    ffn: int = 64,
    spm_vocab: int = 300,
    vocab_size: int | None = None,
    init_std: float = 0.3,
    eos_bias: float = 3.0,
    seed: int = 0,
    pair: tuple[str, str] = ("zh", "en"),
) -> Path:
    """A Marian directory as opus-mt ships one: config, weights, source/target spm, vocab.json.

    ``vocab_size`` pads the vocabulary with unused tokens up to that size
    (the benchmark's 65k), since a small corpus cannot train that many pieces.
    """
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    out = Path(out)
    work = out.parent / f".{out.name}-spm"
    model_file = train_sentencepiece(work, spm_vocab)
    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    vocab = {processor.id_to_piece(i): i for i in range(processor.get_piece_size())}
    vocab["</s>"], vocab["<unk>"] = 0, 1
    while vocab_size is not None and len(vocab) < vocab_size - 1:
        vocab[f"<unused{len(vocab)}>"] = len(vocab)
    vocab["<pad>"] = len(vocab)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("source.spm", "target.spm"):
        shutil.copy(model_file, out / name)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tokenizer = MarianTokenizer(
        str(out / "source.spm"),
        str(out / "target.spm"),
        str(out / "vocab.json"),
        source_lang=pair[0],
        target_lang=pair[1],
    )
    size = len(vocab)
    config = MarianConfig(
        vocab_size=size,
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn,
        decoder_ffn_dim=ffn,
        max_position_embeddings=512,
        pad_token_id=size - 1,
        decoder_start_token_id=size - 1,
        eos_token_id=0,
        bos_token_id=0,
        forced_eos_token_id=0,
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        activation_function="swish",
        init_std=init_std,
    )
    torch.manual_seed(seed)
    model = MarianMTModel(config).eval()
    _bias_end_token(model, eos_bias, eos_id=0)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    shutil.rmtree(work, ignore_errors=True)
    return out


def build_m2m100(
    out: Path,
    *,
    nllb: bool = False,
    d_model: int = 32,
    layers: int = 2,
    heads: int = 4,
    ffn: int = 64,
    spm_vocab: int = 300,
    init_std: float = 0.3,
    seed: int = 0,
) -> Path:
    """A tiny M2M100 or NLLB directory (both are M2M100ForConditionalGeneration in HF)."""
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    out = Path(out)
    work = out.parent / f".{out.name}-spm"
    out.mkdir(parents=True, exist_ok=True)
    if nllb:
        from transformers import NllbTokenizer

        model_file = train_sentencepiece(work, spm_vocab, fairseq_ids=True)
        tokenizer = NllbTokenizer(str(model_file), src_lang="zho_Hans", tgt_lang="eng_Latn")
    else:
        import sentencepiece as spm
        from transformers import M2M100Tokenizer

        model_file = train_sentencepiece(work, spm_vocab, fairseq_ids=True)
        processor = spm.SentencePieceProcessor(model_file=str(model_file))
        vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
        for i in range(processor.get_piece_size()):
            vocab.setdefault(processor.id_to_piece(i), len(vocab))
        (work / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
        from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

        # Published M2M100 tokenizers list their language tokens as additional special
        # tokens, and CTranslate2's converter builds the vocabulary from that list.
        languages = [f"__{code}__" for code in FAIRSEQ_LANGUAGE_CODES["m2m100"]]
        tokenizer = M2M100Tokenizer(
            str(work / "vocab.json"),
            str(model_file),
            src_lang="zh",
            tgt_lang="en",
            additional_special_tokens=languages,
        )
    if nllb:  # published NLLB checkpoints also have a couple of rows beyond the tokenizer
        size = len(tokenizer) + 2
    else:  # M2M100 ids: the vocabulary, the language tokens, then 8 "madeup word" rows
        size = tokenizer.encoder_size + len(tokenizer.lang_code_to_id) + tokenizer.num_madeup_words
    config = M2M100Config(
        vocab_size=size,
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=ffn,
        decoder_ffn_dim=ffn,
        max_position_embeddings=512,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        scale_embedding=True,
        activation_function="relu",
        init_std=init_std,
        dropout=0.0,
        attention_dropout=0.0,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
    )
    torch.manual_seed(seed)
    model = M2M100ForConditionalGeneration(config).eval()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    shutil.rmtree(work, ignore_errors=True)
    return out
