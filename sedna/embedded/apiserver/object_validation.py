"""The shape every stored object must have, and a structural check of the core kinds.

kube-apiserver decodes built-in objects into Go structs, so a ConfigMap with `data: 5`
or a Pod with `ownerReferences: "nope"` never reaches storage, and its validation
refuses a container named `../x` (not a DNS-1123 label). This server stores JSON as it
comes; without these checks such objects were stored and then broke their readers
(a Table list of the namespace's ConfigMaps answered 500, the garbage collector
tripped over the owner references). Here they are a 422 `Invalid` whose
`details.causes[].field` names the field, as kube's validation answers, on create,
update and every patch type (the patched result is checked).

Checked for every object, custom resources included (their CRD's schema covers the rest,
see `schema_validation`): `metadata` is an object, `name`/`generateName`/`namespace`
strings, `labels` and `annotations` maps of strings, `finalizers` a list of strings,
`ownerReferences` a list of objects with string `apiVersion`, `kind`, `name` and `uid`.
For the core kinds the project serves, the fields its controllers, the kubelet and
Deployment stand-ins and `kubectl get` read: ConfigMap and Secret data, a Pod's spec
(containers with DNS-1123 label names, string images, env, command and args) and status,
pod templates of the workload kinds, Node spec and status, Service, Namespace, Lease.
Only types and names are checked, not kube's whole validation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import APIError

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_MAX_CAUSES = 20  # the first ones name the problem; kube caps its causes too
_STR_MAP = "an object of strings"


def _show(value: Any) -> str:
    """A value as kube's messages quote it, cut short."""
    try:
        text = json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Check:
    """The causes found in one object, kube's `field.ErrorList`."""

    def __init__(self) -> None:
        self.causes: list[dict[str, str]] = []

    def add(self, reason: str, field: str, message: str) -> None:
        if len(self.causes) < _MAX_CAUSES:
            self.causes.append({"reason": reason, "message": message, "field": field})

    def wrong_type(self, field: str, value: Any, what: str) -> None:
        self.add("FieldValueTypeInvalid", field, f"Invalid value: {_show(value)}: must be {what}")

    def required(self, field: str) -> None:
        self.add("FieldValueRequired", field, "Required value")

    # -- typed getters: a wrong type is a cause, and the caller gets None -----------------

    def obj(self, parent: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any] | None:
        value = parent.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.wrong_type(_join(path, key), value, "an object")
            return None
        return value

    def lst(self, parent: Mapping[str, Any], key: str, path: str) -> list[Any] | None:
        value = parent.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            self.wrong_type(_join(path, key), value, "a list")
            return None
        return value

    def string(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        value = parent.get(key)
        if value is not None and not isinstance(value, str):
            self.wrong_type(_join(path, key), value, "a string")

    def boolean(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        value = parent.get(key)
        if value is not None and not isinstance(value, bool):
            self.wrong_type(_join(path, key), value, "a boolean")

    def integer(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        value = parent.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            self.wrong_type(_join(path, key), value, "an integer")

    def str_map(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        value = parent.get(key)
        if value is None:
            return
        field = _join(path, key)
        if not isinstance(value, Mapping):
            self.wrong_type(field, value, _STR_MAP)
            return
        for k, v in value.items():
            if not isinstance(v, str):
                self.wrong_type(f"{field}[{k}]", v, "a string")

    def str_list(self, parent: Mapping[str, Any], key: str, path: str) -> None:
        items = self.lst(parent, key, path)
        for i, v in enumerate(items or ()):
            if not isinstance(v, str):
                self.wrong_type(f"{_join(path, key)}[{i}]", v, "a string")

    def objects(
        self, parent: Mapping[str, Any], key: str, path: str
    ) -> list[tuple[str, Mapping[str, Any]]]:
        """The entries of a list of objects with their paths; others are causes."""
        out: list[tuple[str, Mapping[str, Any]]] = []
        for i, v in enumerate(self.lst(parent, key, path) or ()):
            where = f"{_join(path, key)}[{i}]"
            if isinstance(v, Mapping):
                out.append((where, v))
            else:
                self.wrong_type(where, v, "an object")
        return out

    def required_strings(self, obj: Mapping[str, Any], path: str, *keys: str) -> None:
        for key in keys:
            value = obj.get(key)
            if value is None or value == "":
                self.required(_join(path, key))
            elif not isinstance(value, str):
                self.wrong_type(_join(path, key), value, "a string")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# -- metadata ---------------------------------------------------------------------------


def _metadata(c: _Check, meta: Mapping[str, Any], path: str = "metadata") -> None:
    for key in ("name", "generateName", "namespace", "resourceVersion", "uid"):
        c.string(meta, key, path)
    c.str_map(meta, "labels", path)
    c.str_map(meta, "annotations", path)
    c.str_list(meta, "finalizers", path)
    for where, ref in c.objects(meta, "ownerReferences", path):
        c.required_strings(ref, where, "apiVersion", "kind", "name", "uid")
        c.boolean(ref, "controller", where)
        c.boolean(ref, "blockOwnerDeletion", where)


# -- the core kinds ---------------------------------------------------------------------


def _containers(c: _Check, spec: Mapping[str, Any], key: str, path: str, seen: set[str]) -> None:
    for where, ctr in c.objects(spec, key, path):
        name = ctr.get("name")
        field = f"{where}.name"
        if name is None or name == "":
            c.required(field)
        elif not isinstance(name, str):
            c.wrong_type(field, name, "a string")
        elif len(name) > 63 or not _DNS1123_LABEL.match(name):
            c.add("FieldValueInvalid", field, f"Invalid value: {_show(name)}: {_LABEL_MSG}")
        elif name in seen:
            c.add("FieldValueDuplicate", field, f"Duplicate value: {_show(name)}")
        else:
            seen.add(name)
        for k in ("image", "imagePullPolicy", "workingDir"):
            c.string(ctr, k, where)
        c.str_list(ctr, "command", where)
        c.str_list(ctr, "args", where)
        for env_at, env in c.objects(ctr, "env", where):
            c.required_strings(env, env_at, "name")
            c.string(env, "value", env_at)
        for mount_at, mount in c.objects(ctr, "volumeMounts", where):
            c.required_strings(mount, mount_at, "name", "mountPath")
        c.objects(ctr, "ports", where)
        c.obj(ctr, "resources", where)


def _pod_spec(c: _Check, spec: Mapping[str, Any], path: str) -> None:
    seen: set[str] = set()
    _containers(c, spec, "containers", path, seen)
    _containers(c, spec, "initContainers", path, seen)
    for key in (
        "nodeName",
        "serviceAccountName",
        "serviceAccount",
        "schedulerName",
        "restartPolicy",
        "dnsPolicy",
        "hostname",
        "subdomain",
        "priorityClassName",
    ):
        c.string(spec, key, path)
    c.str_map(spec, "nodeSelector", path)
    c.integer(spec, "terminationGracePeriodSeconds", path)
    c.integer(spec, "activeDeadlineSeconds", path)
    for key in ("hostNetwork", "hostPID", "hostIPC", "automountServiceAccountToken"):
        c.boolean(spec, key, path)
    for where, vol in c.objects(spec, "volumes", path):
        c.required_strings(vol, where, "name")
    c.objects(spec, "tolerations", path)
    c.objects(spec, "imagePullSecrets", path)
    c.obj(spec, "affinity", path)
    c.obj(spec, "securityContext", path)


def _template(c: _Check, spec: Mapping[str, Any], path: str) -> None:
    """A workload's pod template (kube validates it as a pod's)."""
    template = c.obj(spec, "template", path)
    if template is None:
        return
    where = _join(path, "template")
    meta = c.obj(template, "metadata", where)
    if meta is not None:
        _metadata(c, meta, f"{where}.metadata")
    pod_spec = c.obj(template, "spec", where)
    if pod_spec is not None:
        _pod_spec(c, pod_spec, f"{where}.spec")


def _conditions(c: _Check, status: Mapping[str, Any], path: str) -> None:
    for where, cond in c.objects(status, "conditions", path):
        c.required_strings(cond, where, "type")
        for key in ("status", "reason", "message"):
            c.string(cond, key, where)


def _configmap(c: _Check, obj: Mapping[str, Any]) -> None:
    c.str_map(obj, "data", "")
    c.str_map(obj, "binaryData", "")
    c.boolean(obj, "immutable", "")


def _secret(c: _Check, obj: Mapping[str, Any]) -> None:
    c.str_map(obj, "data", "")
    c.str_map(obj, "stringData", "")
    c.string(obj, "type", "")
    c.boolean(obj, "immutable", "")


def _pod(c: _Check, obj: Mapping[str, Any]) -> None:
    spec = c.obj(obj, "spec", "")
    if spec is not None:
        _pod_spec(c, spec, "spec")
    status = c.obj(obj, "status", "")
    if status is None:
        return
    for key in ("phase", "reason", "message", "hostIP", "podIP", "startTime"):
        c.string(status, key, "status")
    _conditions(c, status, "status")
    for key in ("containerStatuses", "initContainerStatuses"):
        for where, cs in c.objects(status, key, "status"):
            c.string(cs, "name", where)
            c.obj(cs, "state", where)
            c.boolean(cs, "ready", where)
            c.integer(cs, "restartCount", where)


def _node(c: _Check, obj: Mapping[str, Any]) -> None:
    spec = c.obj(obj, "spec", "")
    if spec is not None:
        c.boolean(spec, "unschedulable", "spec")
        c.string(spec, "podCIDR", "spec")
        c.string(spec, "providerID", "spec")
        for where, taint in c.objects(spec, "taints", "spec"):
            c.required_strings(taint, where, "key", "effect")
    status = c.obj(obj, "status", "")
    if status is None:
        return
    _conditions(c, status, "status")
    for where, addr in c.objects(status, "addresses", "status"):
        c.required_strings(addr, where, "type", "address")
    c.obj(status, "nodeInfo", "status")


def _namespace(c: _Check, obj: Mapping[str, Any]) -> None:
    spec = c.obj(obj, "spec", "")
    if spec is not None:
        c.str_list(spec, "finalizers", "spec")
    status = c.obj(obj, "status", "")
    if status is not None:
        c.string(status, "phase", "status")


def _service(c: _Check, obj: Mapping[str, Any]) -> None:
    spec = c.obj(obj, "spec", "")
    if spec is None:
        return
    c.str_map(spec, "selector", "spec")
    for key in ("type", "clusterIP", "sessionAffinity"):
        c.string(spec, key, "spec")
    for where, port in c.objects(spec, "ports", "spec"):
        c.string(port, "name", where)
        c.integer(port, "port", where)


def _workload(c: _Check, obj: Mapping[str, Any]) -> None:
    spec = c.obj(obj, "spec", "")
    if spec is None:
        return
    c.integer(spec, "replicas", "spec")
    selector = c.obj(spec, "selector", "spec")
    if selector is not None:
        c.str_map(selector, "matchLabels", "spec.selector")
        c.objects(selector, "matchExpressions", "spec.selector")
    _template(c, spec, "spec")
    status = c.obj(obj, "status", "")
    if status is not None:
        _conditions(c, status, "status")


def _lease(c: _Check, obj: Mapping[str, Any]) -> None:
    spec = c.obj(obj, "spec", "")
    if spec is None:
        return
    c.string(spec, "holderIdentity", "spec")
    c.integer(spec, "leaseDurationSeconds", "spec")
    c.integer(spec, "leaseTransitions", "spec")
    c.string(spec, "acquireTime", "spec")
    c.string(spec, "renewTime", "spec")


_KINDS: dict[tuple[str, str], Callable[[_Check, Mapping[str, Any]], None]] = {
    ("", "configmaps"): _configmap,
    ("", "secrets"): _secret,
    ("", "pods"): _pod,
    ("", "nodes"): _node,
    ("", "namespaces"): _namespace,
    ("", "services"): _service,
    ("apps", "deployments"): _workload,
    ("apps", "replicasets"): _workload,
    ("apps", "daemonsets"): _workload,
    ("coordination.k8s.io", "leases"): _lease,
}


def validate_object(
    obj: Mapping[str, Any], *, kind: str, group: str, key: tuple[str, str], custom: bool
) -> None:
    """Raise a 422 `Invalid` naming each malformed field of `obj` (see the module)."""
    c = _Check()
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        c.wrong_type("metadata", meta, "an object")
    elif meta is not None:
        _metadata(c, meta)
    check = None if custom else _KINDS.get(key)
    if check is not None:
        check(c, obj)
    if not c.causes:
        return
    name = meta.get("name") if isinstance(meta, Mapping) else None
    name = name if isinstance(name, str) else ""
    shown = [f"{cause['field']}: {cause['message']}" for cause in c.causes]
    detail = shown[0] if len(shown) == 1 else f"[{', '.join(shown)}]"
    raise APIError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {detail}',
        name=name,
        group=group,
        kind=kind,
        causes=c.causes,
    )
