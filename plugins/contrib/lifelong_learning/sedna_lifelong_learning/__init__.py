"""Sedna's LifelongLearningJob controller as a sedna-gm feature plugin.

It reaches the GM only through `sedna.runtime`'s public API, exactly as a third-party
plugin would; `plugin` is the entry point (`sedna.features` group).
"""

from __future__ import annotations

__version__ = "0.1.0"
