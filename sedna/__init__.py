"""sedna-gm: a Python GlobalManager for KubeEdge Sedna, built as a plugin framework."""

from __future__ import annotations

from importlib import metadata

try:
    __version__ = metadata.version("sedna-gm")
except metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
