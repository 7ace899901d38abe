"""Language codes, names, and the sets each model family really translates.

Codes follow LibreTranslate (ISO 639-1, plus ``zt`` for Traditional Chinese), so
its clients keep working.
"""

from __future__ import annotations

# code -> (English name, name used inside prompts)
LANGUAGES: dict[str, str] = {
    "en": "English",
    "zh": "Chinese",
    "zt": "Traditional Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "fr": "French",
    "de": "German",
    "es": "Spanish",
    "pt": "Portuguese",
    "it": "Italian",
    "ru": "Russian",
    "ar": "Arabic",
    "vi": "Vietnamese",
    "th": "Thai",
    "id": "Indonesian",
    "ms": "Malay",
    "tr": "Turkish",
    "nl": "Dutch",
    "pl": "Polish",
    "uk": "Ukrainian",
    "cs": "Czech",
    "fa": "Persian",
    "he": "Hebrew",
    "hi": "Hindi",
    "bn": "Bengali",
    "ta": "Tamil",
    "te": "Telugu",
    "mr": "Marathi",
    "gu": "Gujarati",
    "ur": "Urdu",
    "tl": "Filipino",
    "km": "Khmer",
    "my": "Burmese",
    "kk": "Kazakh",
    "mn": "Mongolian",
}

# Chinese names, for the Hunyuan zh<->xx template, which is written in Chinese.
CHINESE_NAMES: dict[str, str] = {
    "en": "英语", "zh": "中文", "zt": "繁体中文", "ja": "日语", "ko": "韩语",
    "fr": "法语", "de": "德语", "es": "西班牙语", "pt": "葡萄牙语", "it": "意大利语",
    "ru": "俄语", "ar": "阿拉伯语", "vi": "越南语", "th": "泰语", "id": "印尼语",
    "ms": "马来语", "tr": "土耳其语", "nl": "荷兰语", "pl": "波兰语", "uk": "乌克兰语",
    "cs": "捷克语", "fa": "波斯语", "he": "希伯来语", "hi": "印地语", "bn": "孟加拉语",
    "ta": "泰米尔语", "te": "泰卢固语", "mr": "马拉地语", "gu": "古吉拉特语", "ur": "乌尔都语",
    "tl": "菲律宾语", "km": "高棉语", "my": "缅甸语", "kk": "哈萨克语", "mn": "蒙古语",
}

# Targets whose grammar marks formality (pronouns of address, polite verb forms), so a prompted
# engine can be told a register (DeepL's ``formality``): code -> (formal, informal), as a prompt
# names them. English and the rest have no such marking, as DeepL reports for them too.
FORMAL_REGISTERS: dict[str, tuple[str, str]] = {
    "de": ("Sie", "du"), "fr": ("vous", "tu"), "es": ("usted", "tú"), "it": ("Lei", "tu"),
    "pt": ("o senhor / a senhora", "você"), "nl": ("u", "jij"), "pl": ("Pan / Pani", "ty"),
    "ru": ("вы", "ты"), "uk": ("ви", "ти"), "cs": ("vy", "ty"), "tr": ("siz", "sen"),
    "ja": ("です/ます forms", "plain forms"), "ko": ("존댓말, 합니다/해요", "반말"),
    "zh": ("您", "你"), "zt": ("您", "你"),
}

# Qwen2.5 is documented for 29+ languages; these are the ones a 1.5B model
# translates usefully to and from English and Chinese.
_QWEN = ["en", "zh", "zt", "ja", "ko", "fr", "de", "es", "pt", "it", "ru", "ar",
         "vi", "th", "id", "ms", "tr", "nl", "pl", "uk"]

# Hunyuan-MT / HY-MT1.5: 33 languages (the five minority languages have no
# ISO 639-1 code in LibreTranslate's scheme and are left out here).
_HUNYUAN = list(LANGUAGES)

_SETS = {"qwen": _QWEN, "hunyuan": _HUNYUAN}


def language_set(name: str) -> list[str]:
    try:
        return list(_SETS[name])
    except KeyError:
        raise ValueError(f"unknown language set {name!r}; known: {sorted(_SETS)}") from None


def language_name(code: str) -> str:
    return LANGUAGES.get(code, code)


def is_cjk(code: str) -> bool:
    return code in {"zh", "zt", "ja", "ko"}
