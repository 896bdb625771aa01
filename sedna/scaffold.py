"""`sedna-gm new-plugin NAME`: an installable feature plugin that works from the first run.

The package it writes has what every plugin needs and nothing it must delete: the
entry point, a feature with validated options, a controller on the runtime's
`Controller` (informer, workqueue, Events), the API access it declares, a test on
`sedna.testing` and a README. It passes `mypy --strict`, and its test passes.
"""

from __future__ import annotations

import pprint
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from sedna.plugins import discover_plugins
from sedna.runtime.kube import SEDNA_KINDS

_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")


class ScaffoldError(Exception):
    """The plugin cannot be written; the message is for the user."""


@dataclass(frozen=True)
class Plan:
    name: str  # feature and entry-point name
    package: str  # the Python package
    distribution: str
    kind: str
    plural: str
    root: Path

    @property
    def title(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


def plan(name: str, kind: str, parent: Path) -> Plan:
    if not _NAME.fullmatch(name):
        raise ScaffoldError(
            f"new-plugin: {name!r} is not a plugin name: lower-case letters, digits and _, "
            "starting with a letter (it becomes the feature's name and its gm.yaml key)"
        )
    plurals = {k: p for p, k in SEDNA_KINDS.items()}
    if kind not in plurals:
        raise ScaffoldError(
            f"new-plugin: --kind {kind!r} is not a Sedna kind ({', '.join(sorted(plurals))})"
        )
    installed = {d.name: d for d in discover_plugins()}
    if name in installed:
        d = installed[name]
        raise ScaffoldError(
            f"new-plugin: a plugin named {name} is installed already ({d.distribution} "
            f"{d.version}); two plugins may not declare one feature"
        )
    package = name if name.startswith("sedna_") else f"sedna_{name}"
    distribution = "sedna-gm-" + name.removeprefix("sedna_").replace("_", "-")
    root = parent / name
    if root.exists():
        raise ScaffoldError(f"new-plugin: {root} exists already; choose another name or --dir")
    return Plan(name, package, distribution, kind, plurals[kind], root)


def _minimal(schema: Mapping[str, Any]) -> Any:
    """The smallest value the CRD's structural schema accepts (required fields only).

    The scaffold's test creates an object of the plugin's kind on a server that validates
    like kube-apiserver, so `spec: {}` would be refused for most of Sedna's kinds.
    """
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: _minimal(props.get(k) or {}) for k in schema.get("required") or []}
    if kind == "array":
        count = int(schema.get("minItems") or 0)
        return [_minimal(schema.get("items") or {}) for _ in range(count)]
    if kind == "integer":
        return max(1, int(schema.get("minimum") or 0))
    if kind == "number":
        return float(max(1, schema.get("minimum") or 0))
    if kind == "boolean":
        return False
    return "example"


def example_spec(kind: str) -> dict[str, Any]:
    """A minimal valid `spec` of `kind` under Sedna's schema."""
    from sedna.embedded.crds import schema_for

    spec = (schema_for(kind).get("properties") or {}).get("spec") or {}
    value = _minimal(spec)
    return value if isinstance(value, dict) else {}


def _literal(value: Any, indent: int) -> str:
    text = pprint.pformat(value, width=100 - indent, sort_dicts=False)
    return text.replace("\n", "\n" + " " * indent)


def write(p: Plan) -> list[Path]:
    """Write the plugin's files under `p.root`; returns them."""
    values = {
        "spec": _literal(example_spec(p.kind), 12),
        "name": p.name,
        "package": p.package,
        "distribution": p.distribution,
        "kind": p.kind,
        "plural": p.plural,
        "title": p.title,
    }
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{p.package}/__init__.py": INIT,
        f"{p.package}/py.typed": "",
        f"{p.package}/options.py": OPTIONS,
        f"{p.package}/controller.py": CONTROLLER,
        f"{p.package}/plugin.py": PLUGIN,
        f"tests/test_{p.name}.py": TEST,
    }
    written = []
    for rel, template in files.items():
        path = p.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(Template(template).substitute(values), encoding="utf-8")
        written.append(path)
    return written


PYPROJECT = """\
[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "$distribution"
version = "0.1.0"
description = "sedna-gm feature plugin $name"
requires-python = ">=3.11"
dependencies = ["sedna-gm"]

[project.optional-dependencies]
test = ["pytest>=8", "mypy>=1.10"]  # what the README runs

# The entry point's name is the feature's name and its key under `features:` in gm.yaml.
[project.entry-points."sedna.features"]
$name = "$package.plugin"

[tool.setuptools.packages.find]
include = ["$package*"]

[tool.setuptools.package-data]
"$package" = ["py.typed"]
"""

README = """\
# $distribution

A sedna-gm feature plugin: feature `$name`, reconciling Sedna's `$kind`.

```bash
pip install -e ".[test]"
sedna-gm plugins          # lists $name
pytest                    # tests/ run a GM with this feature on an in-process API server
mypy --strict $package tests
```

(mypy cannot follow the import hook of an *editable* sedna-gm install: then set
`MYPYPATH` to sedna-gm's source tree.)

Enable and configure it in gm.yaml:

```yaml
features:
  $name:
    enabled: true
    workers: 1
    message: reconciled   # the option of $package/options.py
```

Where to go from here: `$package/controller.py` is where the feature's logic goes
(`sync` is called with the key of every $kind that changed); declare each further API
call in `plugin.py`'s `access`, so the GM's RBAC grants it.
"""

INIT = '''\
"""$name: a sedna-gm feature plugin reconciling $kind."""
'''

OPTIONS = '''\
"""The feature's options: its section under `features.$name` in gm.yaml."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict


class ${title}Options(BaseModel):
    # A typo'd key in gm.yaml is an error naming it, not an option silently ignored.
    model_config = ConfigDict(extra="forbid")

    message: str = "reconciled"


def validate(options: Mapping[str, Any]) -> ${title}Options:
    return ${title}Options.model_validate(options)
'''

CONTROLLER = '''\
"""The controller: each $kind that changes is synced by key on a worker thread."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
    Controller,
    ControllerContext,
    DeletedFinalStateUnknown,
    ResourceEventHandlerFuncs,
    Result,
    meta_namespace_key,
    sedna_resource,
)

from .options import ${title}Options

RESOURCE = sedna_resource("$plural")


class ${title}Controller(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self.options: ${title}Options = ctx.options
        self.events = ctx.events
        self.informer = ctx.informers.informer(RESOURCE)
        super().__init__(
            "$name",
            workers=ctx.workers,
            metrics=ctx.metrics,
            clock=ctx.clock,
            events=ctx.events,  # a failing sync becomes a Warning Event on its object
            informer=self.informer,
        )
        self.informer.add_event_handler(
            ResourceEventHandlerFuncs(
                add=self._enqueue,
                update=lambda _old, new: self._enqueue(new),
                delete=self._enqueue,
            )
        )

    def _enqueue(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        self.enqueue(meta_namespace_key(obj))

    def sync(self, key: str) -> Result | None:
        obj = self.informer.lister.get_by_key(key)
        if obj is None:
            return None  # deleted
        # Raise TemporaryError(msg, delay=s) to retry later, PermanentError(msg) to give up.
        self.events.normal(obj, "Reconciled", self.options.message)
        return None

    def start(self) -> None:
        self.run()
'''

PLUGIN = '''\
"""The entry point: what sedna-gm imports to learn what this plugin provides."""

from __future__ import annotations

from collections.abc import Sequence

from sedna.runtime import ApiAccess, ControllerContext, Feature, FeatureController, hookimpl

from .options import validate


def _build(ctx: ControllerContext) -> FeatureController:
    from .controller import ${title}Controller  # imported only when the feature runs

    return ${title}Controller(ctx)


@hookimpl
def sedna_features() -> Sequence[Feature]:
    return [
        Feature(
            name="$name",
            kinds=["$kind"],
            factory=_build,
            validate_options=validate,
            access=[ApiAccess("sedna.io", ["$plural"], ["get", "list", "watch"])],
        )
    ]
'''

TEST = '''\
"""The feature on a real (in-process) API server, through the fixtures of sedna.testing."""

from __future__ import annotations

from collections.abc import Callable

from sedna.runtime import EVENTS, KubeClient, sedna_resource
from sedna.testing import GMHarness, poll


def test_each_object_gets_a_reconciled_event(
    sedna_gm: Callable[..., GMHarness], sedna_kube: KubeClient, sedna_namespace: str
) -> None:
    sedna_gm(features={"$name": {"message": "hello from $name"}})
    sedna_kube.resource(sedna_resource("$plural")).create(
        sedna_namespace,
        {
            "apiVersion": "sedna.io/v1alpha1",
            "kind": "$kind",
            "metadata": {"name": "first"},
            "spec": $spec,
        },
    )

    def reconciled() -> list[str]:
        items = sedna_kube.resource(EVENTS).list(sedna_namespace)["items"]
        return [e["message"] for e in items if e["reason"] == "Reconciled"]

    messages = poll(reconciled, 10.0, interval=0.05, failure="no Reconciled event")
    assert messages == ["hello from $name"]
'''
