"""`sedna-gm new-plugin NAME`: an installable feature plugin that works from the first run.

The package it writes has what every plugin needs and nothing it must delete: the
entry point, a feature with validated options, a controller on the runtime's
`Controller` (informer, workqueue, Events), the API access it declares, a test on
`sedna.testing` and a README. As written it passes `ruff check`, `ruff format --check`
(ruff's defaults) and `mypy --strict`, and its test passes.

`--kind` names one of Sedna's kinds (`Model`) or any CRD's kind with its group and
version, `GROUP/VERSION/KIND` (`example.com/v1/Widget`), as a feature may claim any kind.
"""

from __future__ import annotations

import json
import re
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

from sedna.plugins import discover_plugins
from sedna.runtime.kube import SEDNA_GROUP, SEDNA_KINDS, SEDNA_VERSION

_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_KIND = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
# a CRD's group: a DNS subdomain with at least one dot (kube requires the dot)
_GROUP = re.compile(r"(?=.{1,253}$)[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+")
_VERSION = re.compile(r"v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?")
_PLURAL = re.compile(r"[a-z][a-z0-9]{0,62}")
_WIDTH = 88  # ruff's default line length: the package passes a plain `ruff check`
KIND_FORM = "KIND (one of Sedna's) or GROUP/VERSION/KIND (e.g. example.com/v1/Widget)"


class ScaffoldError(Exception):
    """The plugin cannot be written; the message is for the user."""


@dataclass(frozen=True)
class KindRef:
    """The kind a new feature claims, with its API group, version and plural."""

    group: str
    version: str
    kind: str
    plural: str

    @property
    def is_sedna(self) -> bool:
        return self.group == SEDNA_GROUP


@dataclass(frozen=True)
class Plan:
    name: str  # feature and entry-point name
    package: str  # the Python package
    distribution: str
    target: KindRef
    root: Path

    @property
    def kind(self) -> str:
        return self.target.kind

    @property
    def plural(self) -> str:
        return self.target.plural

    @property
    def title(self) -> str:
        return "".join(part.capitalize() for part in self.name.split("_"))


def default_plural(kind: str) -> str:
    """kube's guess for a CRD's plural (`kubectl` and controller-gen guess alike)."""
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    return lower + "s"


def parse_kind(text: str, plural: str | None = None) -> KindRef:
    """`Model` or `example.com/v1/Widget`; a malformed value is one line naming the part."""
    where = f"new-plugin: --kind {text!r}"
    sedna = {k: p for p, k in SEDNA_KINDS.items()}
    parts = text.split("/")
    if len(parts) == 1:
        if text not in sedna:
            raise ScaffoldError(
                f"{where} is not a Sedna kind ({', '.join(sorted(sedna))}); name another "
                "CRD's kind as GROUP/VERSION/KIND, e.g. example.com/v1/Widget"
            )
        group, version, kind = SEDNA_GROUP, SEDNA_VERSION, text
    elif len(parts) == 3:
        group, version, kind = parts
        if not _GROUP.fullmatch(group):
            raise ScaffoldError(
                f"{where}: group {group!r} is not a CRD's API group (a lower-case DNS "
                "name with a dot, e.g. example.com)"
            )
        if not _VERSION.fullmatch(version):
            raise ScaffoldError(
                f"{where}: version {version!r} is not an API version (v1, v1beta1, v2alpha1)"
            )
        if not _KIND.fullmatch(kind):
            raise ScaffoldError(
                f"{where}: kind {kind!r} is not a kind (CamelCase, starting with a capital "
                "letter, e.g. Widget)"
            )
        if group == SEDNA_GROUP and (version != SEDNA_VERSION or kind not in sedna):
            raise ScaffoldError(
                f"{where}: {SEDNA_GROUP} serves only Sedna's kinds, in {SEDNA_VERSION} "
                f"({', '.join(sorted(sedna))})"
            )
    else:
        raise ScaffoldError(f"{where}: expected {KIND_FORM}")
    if group == SEDNA_GROUP:
        if plural not in (None, sedna[kind]):
            raise ScaffoldError(
                f"new-plugin: --plural {plural!r}: {kind}'s plural is {sedna[kind]}"
            )
        return KindRef(group, version, kind, sedna[kind])
    if plural is not None and not _PLURAL.fullmatch(plural):
        raise ScaffoldError(
            f"new-plugin: --plural {plural!r} is not a resource name (lower-case letters "
            "and digits, e.g. widgets)"
        )
    return KindRef(group, version, kind, plural or default_plural(kind))


def plan(name: str, kind: str, parent: Path, plural: str | None = None) -> Plan:
    if not _NAME.fullmatch(name):
        raise ScaffoldError(
            f"new-plugin: {name!r} is not a plugin name: lower-case letters, digits and _, "
            "starting with a letter (it becomes the feature's name and its gm.yaml key)"
        )
    target = parse_kind(kind, plural)
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
    return Plan(name, package, distribution, target, root)


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


def _inline(value: Any) -> str:
    """A Python literal on one line, as ruff's formatter writes it (double quotes)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_inline(k)}: {_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)  # bool, None, int, float: Python's spelling


def _literal(value: Any, indent: int, column: int, suffix: int = 1) -> str:
    """A literal starting at `column` of a line indented by `indent`, as ruff formats it.

    What fits in the line stays on it; a dict or list that does not is split one item a
    line with a trailing comma (ruff always splits a collection display that way).
    `suffix` is how many characters follow it on its line.
    """
    inline = _inline(value)
    if column + len(inline) + suffix <= _WIDTH or not value or not isinstance(value, dict | list):
        return inline
    inner = indent + 4
    lines = []
    if isinstance(value, dict):
        for k, v in value.items():
            key = f"{_inline(k)}: "
            lines.append(" " * inner + key + _literal(v, inner, inner + len(key)) + ",")
    else:
        for v in value:
            lines.append(" " * inner + _literal(v, inner, inner) + ",")
    opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
    return opening + "\n" + "\n".join(lines) + "\n" + " " * indent + closing


def _call(function: str, args: list[str], column: int) -> str:
    """A call with string arguments as ruff formats it, starting at `column`."""
    inline = f"{function}({', '.join(json.dumps(a) for a in args)})"
    if column + len(inline) <= _WIDTH:
        return inline
    hugged = ", ".join(json.dumps(a) for a in args)
    if 4 + len(hugged) <= _WIDTH:
        return f"{function}(\n    {hugged}\n)"
    return f"{function}(\n" + "".join(f"    {json.dumps(a)},\n" for a in args) + ")"


def _crd(k: KindRef) -> dict[str, Any]:
    """A CRD serving `k` with any spec, for the test's API server."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{k.plural}.{k.group}"},
        "spec": {
            "group": k.group,
            "names": {
                "kind": k.kind,
                "listKind": f"{k.kind}List",
                "plural": k.plural,
                "singular": k.kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": k.version,
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                    "subresources": {"status": {}},
                }
            ],
        },
    }


def _sedna_source_root() -> Path | None:
    """sedna-gm's source tree when it is installed editable, else None.

    An editable install is found through an import hook that mypy cannot follow; the
    generated package's mypy configuration then points `mypy_path` at the tree, so
    `mypy --strict` works as written, with no MYPYPATH to set.
    """
    import sedna

    root = Path(sedna.__file__).resolve().parent.parent
    installed = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    return None if root in installed else root


def _mypy_section() -> str:
    root = _sedna_source_root()
    if root is None:
        return MYPY
    return MYPY + (
        "# sedna-gm is an editable install here: mypy reads its sources from its tree\n"
        f"mypy_path = {json.dumps(str(root))}\n"
    )


def write(p: Plan) -> list[Path]:
    """Write the plugin's files under `p.root`; returns them."""
    k = p.target
    sedna = k.is_sedna
    spec = example_spec(k.kind) if sedna else {}
    if sedna:
        resource = f'sedna_resource("{k.plural}")'
        # ruff's isort order: classes, then functions
        runtime_names = ["DeclarativeFeature", "HandlerContext", "sedna_resource"]
        crd_block = ""
        crd_args = ""
        crd_install = ""
        readme_crd = ""
    else:
        resource = _call("Resource", [k.group, k.version, k.plural, k.kind], len("RESOURCE = "))
        runtime_names = ["DeclarativeFeature", "HandlerContext", "Resource"]
        crd = _literal(_crd(k), 0, len("CRD = "), 0)
        crd_block = f"\n# The CRD of {k.kind}, served by the test's API server\nCRD = {crd}\n"
        crd_args = "    sedna_apiserver: Any,\n"
        crd_install = "    sedna_apiserver.install_crd(CRD)  # the cluster serves it as well\n"
        readme_crd = (
            f"\n{k.kind} is not one of Sedna's kinds: the cluster must serve its CRD "
            f"({k.plural}.{k.group}), or the GM refuses to start.\n"
        )
    values = {
        "spec": _literal(spec, 12, len('            "spec": ')),
        "name": p.name,
        "package": p.package,
        "distribution": p.distribution,
        "kind": k.kind,
        "plural": k.plural,
        "group": k.group,
        "api_version": f"{k.group}/{k.version}",
        "title": p.title,
        "resource": resource,
        "runtime_names": "".join(f"    {n},\n" for n in runtime_names),
        "crd_block": crd_block,
        "test_resource_import": "sedna_resource" if sedna else "Resource",
        "crd_args": crd_args,
        "crd_install": crd_install,
        "readme_crd": readme_crd,
        "any_import": "" if sedna else "from typing import Any\n",
        "mypy": _mypy_section(),
    }
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{p.package}/__init__.py": INIT,
        f"{p.package}/py.typed": "",
        f"{p.package}/options.py": OPTIONS,
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


MYPY = """\
[tool.mypy]
strict = true
"""

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
test = ["pytest>=8", "mypy>=1.10", "ruff>=0.5"]  # what the README runs

# The entry point's name is the feature's name and its key under `features:` in gm.yaml.
[project.entry-points."sedna.features"]
$name = "$package.plugin"

[tool.setuptools.packages.find]
include = ["$package*"]

[tool.setuptools.package-data]
"$package" = ["py.typed"]

$mypy"""

README = """\
# $distribution

A sedna-gm feature plugin: feature `$name`, reconciling `$kind` ($api_version).
$readme_crd
```bash
pip install -e ".[test]"
sedna-gm plugins          # lists $name
pytest                    # tests/ run a GM with this feature on an in-process API server
mypy --strict $package tests
ruff check . && ruff format --check .
```

Enable and configure it in gm.yaml (a gm.yaml that names features runs only those):

```yaml
features:
  $name:
    workers: 1
    message: reconciled   # the option of $package/options.py
```

Where to go from here: the handlers in `$package/plugin.py` are the feature's logic
(sedna-gm's docs, "Declarative features": add, change and delete handlers, related
objects through indexes, status from what a handler returns). Declare each API call
a handler makes by hand in `DeclarativeFeature(..., access=[...])`, so the GM's RBAC
grants it (the tests fail on a call the declared access does not grant, as the
cluster would refuse it).
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

PLUGIN = '''\
"""The feature, as handlers: what runs for each $kind, and the entry point that tells
sedna-gm what this plugin provides (its kinds and RBAC are derived from the handlers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sedna.runtime import (
$runtime_names)

from .options import validate

RESOURCE = $resource

feature = DeclarativeFeature(
    "$name",  # the entry point's name, and its key under `features:` in gm.yaml
    validate_options=validate,
)


@feature.reconcile(RESOURCE)
def reconcile(obj: Mapping[str, Any], ctx: HandlerContext) -> None:
    """Runs for the current version of each $kind: when it is added or changed, and
    at the informer's periodic resync. Raise TemporaryError(msg, delay=s) to retry
    later, PermanentError(msg) to wait until the object changes (both become a Warning
    Event on it); return a dict instead of None to merge it into its status."""
    ctx.events.normal(obj, "Reconciled", ctx.options.message)


sedna_features = feature.hook()
'''

TEST = '''\
"""The feature on a real (in-process) API server, with sedna.testing's fixtures."""

from __future__ import annotations

from collections.abc import Callable
$any_import
from sedna.runtime import EVENTS, KubeClient, $test_resource_import
from sedna.testing import GMHarness, poll

RESOURCE = $resource
$crd_block

def test_each_object_gets_a_reconciled_event(
$crd_args    sedna_gm: Callable[..., GMHarness],
    sedna_kube: KubeClient,
    sedna_namespace: str,
) -> None:
$crd_install    sedna_gm(features={"$name": {"message": "hello from $name"}})
    sedna_kube.resource(RESOURCE).create(
        sedna_namespace,
        {
            "apiVersion": "$api_version",
            "kind": "$kind",
            "metadata": {"name": "first"},
            "spec": $spec,
        },
    )

    def reconciled() -> list[str]:
        items = sedna_kube.resource(EVENTS).list(sedna_namespace)["items"]
        return [e["message"] for e in items if e["reason"] == "Reconciled"]

    messages = poll(reconciled, 10.0, failure="no Reconciled event")
    assert messages == ["hello from $name"]
'''
