"""Simplified and Traditional Chinese: tell them apart, and convert with OpenCC.

Language detectors report "Chinese" for both scripts. The difference is in
the characters: a Traditional text has characters that OpenCC's t2s changes
(國, 這, 說) and none that s2t changes. ``variant`` counts both.

The service uses this two ways. Traditional input (``zt``, or ``zh`` that is
really Traditional) goes to the model as Simplified, which small models were
mostly trained on, so zh-Hant translates as well as zh. And Traditional
output is the model's Simplified output converted with OpenCC's s2t, which is
deterministic where a 1.5B model's own Traditional is not.
"""

from __future__ import annotations

import itertools
import re
import threading
from functools import lru_cache

# OpenCC configurations: s2t/t2s are the standard character sets; s2tw/s2hk add
# Taiwan and Hong Kong character forms.
TO_TRADITIONAL = "s2t"
TO_SIMPLIFIED = "t2s"
_lock = threading.Lock()


@lru_cache(maxsize=None)
def _converter(config: str):
    try:
        import opencc
    except ImportError:
        raise RuntimeError("Traditional Chinese needs OpenCC: pip install opencc") from None
    return opencc.OpenCC(config if config.endswith(".json") else f"{config}.json")


def convert(text: str, config: str) -> str:
    if not text:
        return text
    converter = _converter(config)
    with _lock:  # the OpenCC binding is not documented as thread-safe
        return converter.convert(text)


def to_simplified(text: str) -> str:
    return convert(text, TO_SIMPLIFIED)


def to_traditional(text: str) -> str:
    return convert(text, TO_TRADITIONAL)


_HAN = re.compile("[\u3400-\u9fff\uf900-\ufaff]")
VARIANT_SAMPLE = 10_000  # Han characters read to tell the script: plenty, and a megabyte costs no more


def variant(text: str) -> str | None:
    """'zt' if the Han text reads as Traditional, 'zh' if Simplified, None without Han characters.

    A text whose characters are the same in both scripts (我们 is not, 你好 is)
    counts as Simplified.
    """
    han = "".join(itertools.islice((m.group() for m in _HAN.finditer(text)), VARIANT_SAMPLE))
    if not han:
        return None
    simplified, traditional = to_simplified(han), to_traditional(han)
    traditional_only = sum(a != b for a, b in zip(han, simplified))  # changed by t2s
    simplified_only = sum(a != b for a, b in zip(han, traditional))  # changed by s2t
    # s2t also "converts" characters Traditional texts use as they are (台, 里, 干),
    # so a tie is Traditional: 我們去台北 has one of each.
    return "zt" if traditional_only and traditional_only >= simplified_only else "zh"


# Japanese shinjitai forms that neither Chinese script writes: OpenCC's t2jp
# output for the Traditional HSK characters, less every form OpenCC's
# Taiwan and Hong Kong standards produce, less rare forms Chinese does use
# (芸, 弁, 塡, 厠, 兎, 倶). 図 is 图/圖, 駅 is 站/驛, 気 is 气/氣.
SHINJITAI = frozenset(
    "両乗亜仏仮伝価値剣剰労効勧単厳収営団囲図圏圧塩増壊売変奨実寛対専巻帯帰庁広廃弾従徳徴応恵悪"
    "懐戦戯戸抜択拝拠拡挙挿捜掲揺摂撃斉晩暁暦曽査栄検楽様権歓歩歳歴毎気氷汚浄涙渇済渉満溌焼犠産"
    "痩発県砕穏竜粛経絵絶継続総緑縁縦繋聡聴脳臓舎舗荘蔵薬覚覧観訳証読譲豊賛転軽輌辺逓遅郷酔醤釈"
    "鉄銭錬録関闘陥険隠隣雑霊頼顔顕験髪鶏麺黒黙齢駅円児"
)
# Japanese-made characters (kokuji) that Chinese does not write.
KOKUJI = frozenset("働込畑峠枠辻笹匂凪搾噺榊躾")


def has_japanese_kanji(text: str) -> bool:
    """Whether a kana-less text still shows it is Japanese by its kanji forms."""
    return any(ch in SHINJITAI or ch in KOKUJI for ch in text)


def is_traditional(text: str) -> bool:
    return variant(text) == "zt"
