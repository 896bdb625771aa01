"""Sedna's Dataset controller as a sedna-gm feature plugin.

Real LCs learn about a dataset only from the GM's Dataset messages (their
incremental-learning manager looks the dataset up by name), and report its sample
count back; without this feature no IncrementalLearningJob triggers on a Go LC.
It reaches the GM only through `sedna.runtime`'s public API; `plugin` is the entry
point (`sedna.features` group).
"""

from __future__ import annotations

__version__ = "0.1.0"
