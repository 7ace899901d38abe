"""Request and response models of the LibreTranslate-compatible API."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


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


class LanguageInfo(BaseModel):
    code: str
    name: str
    targets: list[str]


class ErrorBody(BaseModel):
    error: str
