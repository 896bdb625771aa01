"""Plugin discovery, loading and the typed hook facade (manager side of the plugin API)."""

from __future__ import annotations

from sedna.plugins.hooks import HookError, Hooks
from sedna.plugins.loader import (
    ENTRY_POINT_GROUP,
    DiscoveredPlugin,
    LoadedPlugins,
    PluginError,
    discover_plugins,
    load_plugins,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "DiscoveredPlugin",
    "HookError",
    "Hooks",
    "LoadedPlugins",
    "PluginError",
    "discover_plugins",
    "load_plugins",
]
