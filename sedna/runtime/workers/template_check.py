"""Checks of a user's pod template before any worker is built from it.

The Go GM hands templates to the API server as they are; a container env value that is
a YAML list (as in Sedna's own ObjectSearchService and ObjectTrackingService samples)
then fails deep in the client's decoding and the service just goes ``Failed``. Checking
the fields the API server would reject, and naming the first wrong one, lets a
controller answer with an Event and a condition the user can act on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["check_pod_template"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _is_map(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # JSON gives dicts: no ABC check


def _check_env(env: Any, field: str) -> tuple[str, str] | None:
    # field paths are built only for a finding: this runs on every sync of a job
    if not isinstance(env, list):
        return field, "must be a list of {name, value} entries"
    for j, e in enumerate(env):
        if not _is_map(e):
            return f"{field}[{j}]", "must be an object with name and value"
        name = e.get("name")
        if not isinstance(name, str) or not name:
            return f"{field}[{j}].name", "must be a non-empty string"
        value = e.get("value")
        if value is not None and not isinstance(value, str):
            got = type(value).__name__
            return f"{field}[{j}].value", f"must be a string, got a {got} (quote it in YAML)"
        source = e.get("valueFrom")
        if source is not None and not _is_map(source):
            return f"{field}[{j}].valueFrom", "must be an object"
    return None


def _check_container(c: Any, where: str, i: int) -> tuple[str, str] | None:
    if not _is_map(c):
        return f"{where}[{i}]", "must be an object"
    name = c.get("name")
    if not isinstance(name, str) or len(name) > 63 or not _DNS_LABEL.match(name):
        return f"{where}[{i}].name", f"{name!r} is not a lowercase RFC 1123 label"
    image = c.get("image")
    if image is not None and not isinstance(image, str):
        return f"{where}[{i}].image", "must be a string"
    env = c.get("env")
    if env is not None:
        found = _check_env(env, f"{where}[{i}].env")
        if found:
            return found
    for key in ("command", "args"):
        value = c.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            return f"{where}[{i}].{key}", "must be a list of strings"
    return None


def check_pod_template(template: Any, field: str) -> tuple[str, str] | None:
    """The first wrong field of a PodTemplateSpec at `field` and why; None when it is fine.

    Checked: the template and its spec are objects, containers a non-empty list, each
    container named by an RFC 1123 label, env entries named with string values, command
    and args lists of strings. Everything else is the API server's to judge.
    """
    if not _is_map(template):
        return field, "must be a pod template (an object with a spec)"
    meta = template.get("metadata")
    if meta is not None and not _is_map(meta):
        return f"{field}.metadata", "must be an object"
    for key in ("labels", "annotations"):
        values = (meta or {}).get(key)
        if values is not None and (
            not _is_map(values) or not all(isinstance(v, str) for v in values.values())
        ):
            return f"{field}.metadata.{key}", "must map names to strings"
    spec = template.get("spec")
    if not _is_map(spec):
        return f"{field}.spec", "pod template has no spec"
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return f"{field}.spec.containers", "pod template has no containers"
    for key, items in (("containers", containers), ("initContainers", spec.get("initContainers"))):
        for i, c in enumerate(items or ()):
            found = _check_container(c, f"{field}.spec.{key}", i)
            if found:
                return found
    selector = spec.get("nodeSelector")
    if selector is not None and (
        not _is_map(selector) or not all(isinstance(v, str) for v in selector.values())
    ):
        return f"{field}.spec.nodeSelector", "must map label names to strings"
    return None
