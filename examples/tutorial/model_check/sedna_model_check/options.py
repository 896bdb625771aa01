"""The feature's options: its section under `features.model_check` in gm.yaml."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ModelCheckOptions(BaseModel):
    # A typo'd key in gm.yaml is an error naming it, not an option silently ignored.
    model_config = ConfigDict(extra="forbid")

    formats: list[str] = Field(default_factory=lambda: ["pb", "ckpt", "pth", "onnx", "pkl"])
    schemes: list[str] = Field(default_factory=lambda: ["s3", "http", "https", "file"])


def validate(options: Mapping[str, Any]) -> ModelCheckOptions:
    return ModelCheckOptions.model_validate(options)
