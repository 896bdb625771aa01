"""Sedna's own sample objects from the reference data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def load_sample(ref: Path, file: str) -> dict[str, Any]:
    return dict(yaml.safe_load((ref / file).read_text()))
