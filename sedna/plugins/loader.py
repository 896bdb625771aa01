"""Finding plugins through entry points and turning gm.yaml's `features:` into features.

First-party features come in exactly this way; the core has no list of features.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy
from pydantic import ValidationError

from sedna.plugins import hookspecs
from sedna.plugins.hooks import Hooks
from sedna.runtime.config import GMConfig, describe_error
from sedna.runtime.plugin_api import PROJECT, Feature, FeatureOptionsError

ENTRY_POINT_GROUP = "sedna.features"


class PluginError(Exception):
    """A plugin cannot be used; the message names the plugin and the reason."""


@dataclass(frozen=True)
class DiscoveredPlugin:
    """An entry point as installed, read from metadata only (nothing imported)."""

    name: str
    value: str
    distribution: str
    version: str

    @classmethod
    def from_entry_point(cls, ep: metadata.EntryPoint) -> DiscoveredPlugin:
        dist = ep.dist
        return cls(
            name=ep.name,
            value=ep.value,
            distribution=dist.metadata["Name"] if dist is not None else "?",
            version=dist.version if dist is not None else "?",
        )


@dataclass
class LoadedFeature:
    feature: Feature
    plugin: str
    workers: int
    options: Any


@dataclass
class LoadedPlugins:
    hooks: Hooks
    discovered: list[DiscoveredPlugin]
    features: list[LoadedFeature] = field(default_factory=list)

    def feature(self, name: str) -> LoadedFeature:
        for f in self.features:
            if f.feature.name == name:
                return f
        raise KeyError(name)


def discover_plugins(group: str = ENTRY_POINT_GROUP) -> list[DiscoveredPlugin]:
    seen: dict[str, DiscoveredPlugin] = {}
    for ep in metadata.entry_points(group=group):
        seen.setdefault(ep.name, DiscoveredPlugin.from_entry_point(ep))
    return sorted(seen.values(), key=lambda p: p.name)


def _entry_points(group: str) -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def new_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    return pm


def load_plugins(
    config: GMConfig,
    *,
    source: str = "gm.yaml",
    extra_plugins: Mapping[str, object] | None = None,
    group: str = ENTRY_POINT_GROUP,
    use_entry_points: bool = True,
) -> LoadedPlugins:
    """Import enabled plugins, collect their features and validate their options.

    Disabled features are blocked in pluggy before any entry point is loaded, so their
    modules are never imported. `extra_plugins` (name -> plugin object) are registered
    as if found through entry points; embedding applications and tests use them, and
    an embedding application may turn entry-point discovery off altogether.
    """
    pm = new_plugin_manager()
    eps = _entry_points(group) if use_entry_points else {}
    extra = dict(extra_plugins or {})
    known = set(eps) | set(extra)
    for name, section in config.features.items():
        # Switching off a plugin that is not installed is harmless; asking for one is not.
        if name not in known and section.enabled:
            installed = ", ".join(sorted(known)) or "none"
            raise PluginError(
                f"{source}: features.{name}: no installed plugin provides this feature "
                f"(installed: {installed})"
            )
    for name in known:
        if not config.feature(name).enabled:
            pm.set_blocked(name)

    for name, ep in sorted(eps.items()):
        if pm.is_blocked(name) or name in extra:
            continue
        where = DiscoveredPlugin.from_entry_point(ep)
        try:
            plugin = ep.load()
        except Exception as exc:  # any import-time failure of a third-party module
            raise PluginError(
                f"plugin {name} ({where.distribution} {where.version}): cannot import "
                f"{ep.value}: {type(exc).__name__}: {exc}"
            ) from exc
        _register(pm, name, plugin)
    for name, plugin in extra.items():
        if not pm.is_blocked(name):
            _register(pm, name, plugin)

    hooks = Hooks(pm)
    loaded = LoadedPlugins(
        hooks=hooks, discovered=discover_plugins(group) if use_entry_points else []
    )
    try:
        pairs = hooks.features()
    except Exception as exc:
        raise PluginError(f"a plugin failed while declaring its features: {exc}") from exc
    _check_features(pairs)
    for plugin_name, feature in pairs:
        section = config.feature(feature.name)
        if not section.enabled:
            continue
        options = _validate_options(source, plugin_name, feature, section.options)
        loaded.features.append(LoadedFeature(feature, plugin_name, section.workers, options))
    return loaded


def _register(pm: pluggy.PluginManager, name: str, plugin: object) -> None:
    try:
        pm.register(plugin, name=name)
    except (ValueError, pluggy.PluginValidationError) as exc:
        raise PluginError(f"plugin {name}: invalid plugin: {exc}") from exc


def _check_features(pairs: Iterable[tuple[str, Feature]]) -> None:
    names: dict[str, str] = {}
    kinds: dict[str, tuple[str, str]] = {}
    for plugin_name, feature in pairs:
        if not isinstance(feature, Feature):
            raise PluginError(
                f"plugin {plugin_name}: sedna_features returned {type(feature).__name__}, "
                "expected sedna.runtime.Feature"
            )
        if feature.name in names:
            raise PluginError(
                f"plugin {plugin_name}: feature {feature.name} is already provided by plugin "
                f"{names[feature.name]}"
            )
        names[feature.name] = plugin_name
        for kind in feature.kinds:
            if kind in kinds:
                other_plugin, other_feature = kinds[kind]
                raise PluginError(
                    f"plugin {plugin_name}: feature {feature.name} claims kind {kind}, "
                    f"already claimed by feature {other_feature} of plugin {other_plugin}"
                )
            kinds[kind] = (plugin_name, feature.name)


def _validate_options(
    source: str, plugin_name: str, feature: Feature, options: Mapping[str, Any]
) -> Any:
    merged = {**feature.default_options, **options}
    if feature.validate_options is None:
        if options:
            key = sorted(options)[0]
            raise PluginError(
                f"{source}: features.{feature.name}.{key}: unknown option "
                f"(plugin {plugin_name} takes no options)"
            )
        return merged
    prefix = f"{source}: features.{feature.name}."
    try:
        return feature.validate_options(merged)
    except FeatureOptionsError as exc:
        raise PluginError(f"{prefix}{exc.key}: {exc.reason} (plugin {plugin_name})") from None
    except ValidationError as exc:
        lines = [f"{prefix}{describe_error(e)} (plugin {plugin_name})" for e in exc.errors()]
        raise PluginError("\n".join(lines)) from None
    except Exception as exc:
        raise PluginError(
            f"{prefix[:-1]}: plugin {plugin_name} rejected its options: {exc}"
        ) from None


@dataclass(frozen=True)
class PluginRow:
    name: str
    distribution: str
    version: str
    kinds: str
    enabled: str


def describe_plugins(config: GMConfig, group: str = ENTRY_POINT_GROUP) -> list[PluginRow]:
    """One row per installed plugin for `sedna-gm plugins`.

    Listing kinds means importing the plugin, so this imports disabled plugins too (in
    a throw-away plugin manager); running the GM never does. An import failure shows
    in the kinds column instead of aborting the listing.
    """
    rows = []
    for name, ep in sorted(_entry_points(group).items()):
        where = DiscoveredPlugin.from_entry_point(ep)
        try:
            pm = new_plugin_manager()
            pm.register(ep.load(), name=name)
            kinds = sorted({k for _, f in Hooks(pm).features() for k in f.kinds})
            kinds_text = ",".join(kinds) or "-"
        except Exception as exc:
            kinds_text = f"error: {type(exc).__name__}: {exc}"
        enabled = "yes" if config.feature(name).enabled else "no"
        rows.append(PluginRow(name, where.distribution, where.version, kinds_text, enabled))
    return rows
