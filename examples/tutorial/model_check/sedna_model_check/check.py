"""What makes a Model usable: a pure function, tested without any server."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .options import ModelCheckOptions


def problem_of(model: Mapping[str, Any], options: ModelCheckOptions) -> str | None:
    """The first thing wrong with the Model, naming its field; None if it is usable."""
    spec = model.get("spec") or {}
    fmt = spec.get("format")
    if not fmt:
        return "spec.format: required"
    if fmt not in options.formats:
        return f"spec.format: {fmt!r} is not one of {', '.join(options.formats)}"
    url = str(spec.get("url") or "")
    if not url:
        return "spec.url: required"
    scheme = url.split("://", 1)[0] if "://" in url else "file"  # a bare path is a local file
    if scheme not in options.schemes:
        return f"spec.url: scheme {scheme!r} is not one of {', '.join(options.schemes)}"
    return None
