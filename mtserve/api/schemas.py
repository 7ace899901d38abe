"""Request and response models of the LibreTranslate-compatible API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from mtserve.api.fields import JSON_DEPTH_DEFAULT, BadJson, decode_json


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    q: str | list[str] = Field(..., description="Text to translate, or a list of texts.")
    source: str = Field("auto", description="Source language code, or 'auto' to detect it.")
    target: str = Field(..., description="Target language code.")
    format: Literal["text", "html"] = Field("text", description="'html' keeps markup intact.")
    alternatives: int = Field(0, ge=0, description="How many alternative translations to add.")
    api_key: str | None = Field(None, description="API key, when the server has keys on.")
    timeout: float | None = Field(
        None, gt=0, description="Seconds; shortens the server's deadline for this request."
    )
    glossary: dict[str, str] | None = Field(
        None,
        description='Terms to translate as given, e.g. {"国际商业机器公司": "IBM"}; in form data, '
        "the same object as a JSON string. Adds to (and overrides) the server-wide glossary.",
    )
    tm: bool = Field(
        True, description="Use the translation memory: exact matches are served from it, and similar "
        "entries guide the translation. false leaves it out.",
    )
    context: str | None = Field(
        None,
        description="An mtserve extension, DeepL's field: text that informs the translation (the "
        "sentences around it, what it is: 'a button in a Git client') and is neither translated nor "
        "billed. Up to MTSERVE_CONTEXT_MAX_CHARS characters; LLM engines only (seq2seq ones ignore it).",
    )
    glossary_id: str | None = Field(
        None,
        description="Id of a stored glossary (`mtserve glossary add`, or DeepL's POST /v2/glossaries) "
        "for exactly this source -> target pair; it needs an explicit source, not 'auto'. Its entries "
        "override the server-wide glossary, and `glossary` overrides them. Another pair is a 400, an "
        "unknown id a 404.",
    )

    @field_validator("glossary_id", mode="before")
    @classmethod
    def _glossary_id(cls, value: Any) -> Any:
        if isinstance(value, str):  # an empty form field means none
            return value.strip() or None
        return value

    @field_validator("glossary", mode="before")
    @classmethod
    def _glossary(cls, value: Any, info: ValidationInfo) -> Any:
        from mtserve.service.glossary import validate_entries

        if value is None or value == "":
            return None
        if isinstance(value, str):  # form data and the query string carry it as JSON text
            depth = (info.context or {}).get("json_max_depth", JSON_DEPTH_DEFAULT)
            try:
                value = decode_json(value, depth, "the glossary")
            except BadJson as exc:
                raise ValueError('must be a JSON object of term -> translation, e.g. {"猫": "cat"}: '
                                 f"{exc}") from None
        return validate_entries(value, "glossary")


class DetectRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    q: str = Field(..., description="Text whose language to detect.")
    api_key: str | None = None


class DetectedLanguage(BaseModel):
    language: str
    confidence: float


class TranslateResponse(BaseModel):
    translatedText: str | list[str]
    detectedLanguage: DetectedLanguage | list[DetectedLanguage] | None = None
    alternatives: list[str] | list[list[str]] | None = None
    translationMemory: dict[str, int] | None = None  # segments served from the translation memory


class LanguageInfo(BaseModel):
    code: str
    name: str
    targets: list[str]
