"""Prompt templates, one per model family. They are data, not code paths.

Each template turns (text, source, target) into chat messages; the GGUF file's
own chat template then renders them into tokens, so each family gets the exact
turn markup it was trained on. The Hunyuan and HY-MT templates are the ones
their model cards give.
"""

from __future__ import annotations

from dataclasses import dataclass

from mtserve.text.languages import CHINESE_NAMES, language_name

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class PromptTemplate:
    family: str
    system: str | None  # str.format fields: {source}, {target}
    user: str  # fields: {text}, {source}, {target}, and the *_zh names
    user_zh: str | None = None  # used when Chinese is on either side, if given

    def messages(self, text: str, source: str, target: str) -> Messages:
        fields = {
            "text": text,
            "source": language_name(source),
            "target": language_name(target),
            "source_zh": CHINESE_NAMES.get(source, language_name(source)),
            "target_zh": CHINESE_NAMES.get(target, language_name(target)),
        }
        involves_chinese = source in ("zh", "zt") or target in ("zh", "zt")
        user = self.user_zh if (self.user_zh and involves_chinese) else self.user
        messages: Messages = []
        if self.system:
            messages.append({"role": "system", "content": self.system.format(**fields)})
        messages.append({"role": "user", "content": user.format(**fields)})
        return messages


TEMPLATES: dict[str, PromptTemplate] = {
    "qwen": PromptTemplate(
        family="qwen",
        system=(
            "You are a professional translator. Translate the user's {source} text into "
            "fluent {target}. Output only the {target} translation, with no notes, "
            "explanations or quotation marks."
        ),
        user="{text}",
    ),
    "hunyuan-mt": PromptTemplate(
        family="hunyuan-mt",
        system=None,
        user="Translate the following segment into {target}, without additional explanation.\n\n{text}",
        user_zh="把下面的文本翻译成{target_zh}，不要额外解释。\n\n{text}",
    ),
    "hy-mt1.5": PromptTemplate(
        family="hy-mt1.5",
        system=None,
        user="将以下文本翻译为{target_zh}，注意只需要输出翻译后的结果，不要额外解释：\n\n{text}",
    ),
}


def template_for(family: str) -> PromptTemplate:
    try:
        return TEMPLATES[family]
    except KeyError:
        raise ValueError(f"no prompt template for family {family!r}; known: {sorted(TEMPLATES)}") from None
