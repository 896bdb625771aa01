"""Differential testing against Sedna's Go GM: the same inputs on two API servers, one
GM each, then what each made of them compared after a normalisation.

The normalisation removes what differs between any two runs of the same GM: uids,
resourceVersions, timestamps, generated names (a name made from `generateName` becomes
`<generateName>*`), the API server's allocations (cluster IPs, node ports) and the
kubelet's part of a pod (its status). Each remaining difference gets an id
`<area>/<Kind>/<detail>`; `docs/differences-from-sedna.md` lists the ids that are
expected, each with its reason.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes
import yaml

from sedna.embedded.apiserver import APIServer
from sedna.testing import LCBase

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DIFFERENCES_PAGE = PROJECT_ROOT / "docs" / "differences-from-sedna.md"
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# k8s.io/apimachinery's rand.String(5), alone or after a dash (a WORKER_NAME's tail)
RANDOM_SUFFIX = re.compile(r"(^|-)[bcdfghjklmnpqrstvwxz2456789]{5}$")
GO_TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?( [+-]\d{4} \w+)?")
DROPPED_META = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
)


class GoGM:
    """Sedna's Go GM on one API server (through a kubeconfig), its LC websocket on
    127.0.0.1:`port`, all namespaces, no LC auth (it has none)."""

    def __init__(self, binary: Path, server: APIServer, folder: Path, port: int) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        kubeconfig = folder / "kubeconfig"
        server.write_kubeconfig(kubeconfig)
        self.config = folder / "gm-config.yaml"
        self.config.write_text(
            yaml.safe_dump(
                {
                    "kubeConfig": str(kubeconfig),
                    "namespace": "",
                    "websocket": {"address": "127.0.0.1", "port": port},
                    "localController": {"server": "http://localhost:9100"},
                }
            )
        )
        self.binary = binary
        self.port = port
        self.log = folder / "go-gm.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> GoGM:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [str(self.binary), "--config", str(self.config), "--v=2"],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def tail(self, lines: int = 30) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


# ---- snapshots --------------------------------------------------------------------


@dataclass
class Snapshot:
    """What one GM made of one scenario's inputs."""

    owned: dict[str, list[dict[str, Any]]]  # "pods" -> objects, ...
    statuses: dict[str, dict[str, Any]]  # "Kind/name" -> status
    messages: dict[str, list[dict[str, Any]]]  # "node op Kind/name" -> payloads


def take_snapshot(
    client: kubernetes.client.ApiClient,
    ns: str,
    subjects: Iterable[tuple[str, str, str]],
    lcs: Iterable[LCBase],
) -> Snapshot:
    """`subjects`: (Kind, plural, name) of the scenario's Sedna objects."""
    custom = kubernetes.client.CustomObjectsApi(client)
    owned: dict[str, list[dict[str, Any]]] = {}
    core = kubernetes.client.CoreV1Api(client)
    listings = {
        "pods": core.list_namespaced_pod,
        "deployments": kubernetes.client.AppsV1Api(client).list_namespaced_deployment,
        "services": core.list_namespaced_service,
        "hpas": kubernetes.client.AutoscalingV2Api(
            client
        ).list_namespaced_horizontal_pod_autoscaler,
    }
    for key, list_them in listings.items():
        items: list[Any] = list_them(ns).items  # type: ignore[attr-defined]
        owned[key] = [client.sanitize_for_serialization(i) for i in items]  # type: ignore[no-untyped-call]
    statuses: dict[str, dict[str, Any]] = {}
    for kind, plural, name in subjects:
        obj: Any = custom.get_namespaced_custom_object("sedna.io", "v1alpha1", ns, plural, name)
        statuses[f"{kind}/{name}"] = dict(obj.get("status") or {})
    messages: dict[str, list[dict[str, Any]]] = {}
    for lc in lcs:
        for m in lc.select():
            if m.namespace != ns:
                continue
            key = f"{lc.node} {m.operation} {m.kind}/{m.name}"
            messages.setdefault(key, []).append(m.payload)
    return Snapshot(owned, statuses, messages)


# ---- normalisation ----------------------------------------------------------------


def _generated(snapshot: Snapshot) -> dict[str, str]:
    """Each generated name -> `<generateName>*`."""
    names: dict[str, str] = {}
    for objects in snapshot.owned.values():
        for obj in objects:
            meta = obj.get("metadata") or {}
            if meta.get("generateName") and meta.get("name"):
                names[meta["name"]] = f"{meta['generateName']}*"
    return names


def _text(value: str, names: Mapping[str, str]) -> str:
    for name, generic in names.items():
        if name in value:
            value = value.replace(name, generic)
    value = UID.sub("<uid>", TIME.sub("<time>", value))
    return GO_TIME.sub("<time>", value)


def _empty(value: Any) -> bool:
    """Absent, null and empty are one to Go's `omitempty` and to the API."""
    return value is None or value == {} or value == [] or value == ""


def _env(items: list[Any], names: Mapping[str, str]) -> list[Any]:
    """Env vars by name (their order means nothing here); a worker's name is generated."""
    out = []
    for item in items:
        item = dict(item) if isinstance(item, dict) else item
        if isinstance(item, dict) and item.get("name") == "WORKER_NAME":
            item["value"] = RANDOM_SUFFIX.sub(r"\1*", str(item.get("value")))
        out.append(_norm(item, names))
    return sorted(out, key=lambda e: str(e.get("name")) if isinstance(e, dict) else "")


def _norm(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in DROPPED_META or k.endswith("Timestamp") or k.endswith("Time"):
                continue
            if k == "env" and isinstance(v, list):
                out[k] = _env(v, names)
                continue
            if k == "data" and isinstance(v, str) and v.startswith("{"):
                with contextlib.suppress(ValueError):
                    v = json.loads(v)
            normed = _norm(v, names)
            if not _empty(normed):
                out[k] = normed
        return out
    if isinstance(value, list):
        items = [_norm(v, names) for v in value]
        if items and all(isinstance(i, dict) and set(i) == {"key", "value"} for i in items):
            return sorted(items, key=lambda i: str(i["key"]))  # metrics: from a Go map
        return items
    if isinstance(value, str):
        return _text(value, names)
    return value


def normalise_object(obj: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    out = dict(obj)
    out.pop("status", None)  # the kubelet's / controllers' part, compared apart
    meta = dict(out.get("metadata") or {})
    for ref in meta.get("ownerReferences") or []:
        ref.pop("uid", None)
    out["metadata"] = meta
    spec = out.get("spec")
    if out.get("kind") == "Service" and isinstance(spec, dict):
        spec = dict(spec)
        for key in ("clusterIP", "clusterIPs"):
            spec.pop(key, None)
        spec["ports"] = [
            {k: v for k, v in p.items() if k != "nodePort"} for p in spec.get("ports") or []
        ]
        out["spec"] = spec
    normed = _norm(out, names)
    assert isinstance(normed, dict)
    return normed


def _object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    name = meta.get("name", "")
    if meta.get("generateName"):
        name = f"{meta['generateName']}*"
    node = spec.get("nodeName") if isinstance(spec, dict) else None
    key = f"{name}@{node}" if node else str(name)
    if obj.get("kind", "Pod") == "Pod" and isinstance(spec, dict) and "containers" in spec:
        # several pods of one generateName (tracking workers) differ in their containers
        key += "[" + ",".join(sorted(str(c.get("name")) for c in spec["containers"])) + "]"
    return key


def _owner_kind(obj: Mapping[str, Any]) -> str:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("kind"))
    return "-"


# ---- differences ------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    id: str
    detail: str


def _paths(a: Any, b: Any, path: str = "") -> Iterable[tuple[str, Any, Any]]:
    """The leaf paths where a and b differ (list indexes kept, as `[i]`)."""
    if isinstance(a, dict) and b is None:
        b = {}
    if isinstance(b, dict) and a is None:
        a = {}
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            yield from _paths(a.get(k), b.get(k), f"{path}.{k}" if path else k)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _paths(x, y, f"{path}[{i}]")
    elif a != b:
        yield path, a, b


def _generic(path: str) -> str:
    """A path's id form: list indexes dropped (`env[3].value` -> `env.value`)."""
    return re.sub(r"\[\d+\]", "", path)


def differences(ours: Snapshot, go: Snapshot) -> list[Difference]:
    """Every difference between this GM's snapshot and the Go GM's, normalised."""
    out: list[Difference] = []
    our_names, go_names = _generated(ours), _generated(go)
    for area, mine in ours.owned.items():
        a = {_object_key(o): o for o in mine}
        b = {_object_key(o): o for o in go.owned.get(area, [])}
        for key in sorted(set(a) | set(b)):
            if key not in b:
                kind = _owner_kind(a[key])
                out.append(Difference(f"{area}/{kind}/only-ours", key))
                continue
            if key not in a:
                kind = _owner_kind(b[key])
                out.append(Difference(f"{area}/{kind}/only-go", key))
                continue
            kind = _owner_kind(a[key])
            x = normalise_object(a[key], our_names)
            y = normalise_object(b[key], go_names)
            for path, u, v in _paths(x, y):
                out.append(
                    Difference(f"{area}/{kind}/{_generic(path)}", f"{key} {path}: {u!r} != {v!r}")
                )
    for subject in sorted(set(ours.statuses) | set(go.statuses)):
        kind = subject.split("/", 1)[0]
        x = _norm(ours.statuses.get(subject, {}), our_names)
        y = _norm(go.statuses.get(subject, {}), go_names)
        for path, u, v in _paths(x, y):
            out.append(
                Difference(f"status/{kind}/{_generic(path)}", f"{subject} {path}: {u!r} != {v!r}")
            )
    for key in sorted(set(ours.messages) | set(go.messages)):
        _node, op, subject = key.split(" ")
        kind = subject.split("/", 1)[0]
        mine = [_message(p, our_names) for p in ours.messages.get(key, [])]
        theirs = [_message(p, go_names) for p in go.messages.get(key, [])]
        if not theirs or not mine:
            side = "only-ours" if mine else "only-go"
            out.append(Difference(f"lc/{kind}/{op}/{side}", f"{key}"))
            continue
        if len(_distinct(mine)) != len(_distinct(theirs)):
            out.append(
                Difference(
                    f"lc/{kind}/{op}/resent",
                    f"{key}: {len(_distinct(mine))} distinct payloads here, "
                    f"{len(_distinct(theirs))} from the Go GM",
                )
            )
        for path, u, v in _paths(_spec_of(mine[0]), _spec_of(theirs[0])):
            out.append(
                Difference(f"lc/{kind}/{op}/{_generic(path)}", f"{key} {path}: {u!r} != {v!r}")
            )
    return out


def _message(payload: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    normed = _norm(payload, names)
    assert isinstance(normed, dict)
    return normed


def _spec_of(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A message's object without its status (the status is compared apart)."""
    return {k: v for k, v in payload.items() if k != "status"}


def _distinct(payloads: list[dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for p in payloads:
        text = json.dumps(p, sort_keys=True)
        if not seen or seen[-1] != text:
            seen.append(text)
    return seen


# ---- the documented differences ----------------------------------------------------


def documented() -> dict[str, str]:
    """id (a glob) -> reason, from the YAML blocks of the differences page."""
    text = DIFFERENCES_PAGE.read_text()
    found: dict[str, str] = {}
    for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S):
        doc = yaml.safe_load(block)
        if not isinstance(doc, list):
            continue
        for entry in doc:
            if isinstance(entry, dict) and "id" in entry:
                found[str(entry["id"])] = str(entry.get("reason", ""))
    return found


def undocumented(found: Iterable[Difference], listed: Mapping[str, str]) -> list[Difference]:
    return [d for d in found if not any(fnmatch.fnmatchcase(d.id, pat) for pat in listed)]
