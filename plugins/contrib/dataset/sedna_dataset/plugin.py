"""Entry point of the plugin: declares the `dataset` feature (kind `Dataset`).

The feature takes no options: Sedna's Dataset controller has no knobs, and a typo'd key
in gm.yaml is then reported by the framework instead of being silently ignored. Its
kinds and RBAC come from the handlers' declaration in `controller`.
"""

from __future__ import annotations

from .controller import feature

FEATURE_NAME = feature.name
KINDS = tuple(res.kind for res in feature.kinds())
ACCESS = tuple(feature.access())

sedna_features = feature.hook()
