"""Discovery documents (/api, /apis, /apis/<g>/<v>), /version and minimal OpenAPI.

kubectl walks discovery to map kinds and short names to resources, and fetches
/openapi/v3 before ``apply``: each group-version document lists, per resource, the
POST/PUT/PATCH operations with a ``fieldValidation`` query parameter, which tells
kubectl the server validates fields itself, so it skips client-side schema checks.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .resources import VERBS, Registry, ResourceType

VERSION_INFO = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-sedna-embedded",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


def api_versions(address: str) -> dict[str, Any]:
    """GET /api."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def api_groups(reg: Registry) -> dict[str, Any]:
    """GET /apis."""
    groups = []
    for name, versions in sorted(reg.groups().items()):
        gvs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        groups.append({"name": name, "versions": gvs, "preferredVersion": gvs[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(reg: Registry, group: str) -> dict[str, Any] | None:
    """GET /apis/<group>."""
    versions = reg.groups().get(group)
    if not versions:
        return None
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": gvs,
        "preferredVersion": gvs[0],
    }


def _entry(rt: ResourceType) -> list[dict[str, Any]]:
    main: dict[str, Any] = {
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": VERBS,
        "storageVersionHash": hashlib.sha256(rt.qualified.encode()).hexdigest()[:12],
    }
    if rt.short_names:
        main["shortNames"] = list(rt.short_names)
    if rt.categories:
        main["categories"] = list(rt.categories)
    out = [main]
    if rt.status_subresource:
        out.append(
            {
                "name": f"{rt.plural}/status",
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    if rt.key == ("", "pods"):
        out.append(
            {
                "name": "pods/log",
                "singularName": "",
                "namespaced": True,
                "kind": "Pod",
                "verbs": ["get"],
            }
        )
    return out


def resource_list(reg: Registry, group: str, version: str) -> dict[str, Any] | None:
    """GET /api/v1 or /apis/<group>/<version>."""
    types = sorted(reg.in_group_version(group, version), key=lambda r: r.plural)
    if not types:
        return None
    resources = [e for rt in types for e in _entry(rt)]
    gv = f"{group}/{version}" if group else version
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def openapi_v3_index(reg: Registry) -> dict[str, Any]:
    """GET /openapi/v3: one entry per group-version."""
    paths = {}
    gvs = sorted({(rt.group, rt.version) for rt in reg.all()})
    for g, v in gvs:
        p = _gv_path(g, v)
        h = hashlib.sha256(repr(sorted(r.plural for r in reg.in_group_version(g, v))).encode())
        paths[p] = {"serverRelativeURL": f"/openapi/v3/{p}?hash={h.hexdigest()[:32].upper()}"}
    return {"paths": paths}


_FIELD_VALIDATION = {
    "name": "fieldValidation",
    "in": "query",
    "description": "Strict, Warn or Ignore: how the server treats unknown or duplicate fields.",
    "schema": {"type": "string", "uniqueItems": True},
}


def _ops(rt: ResourceType) -> dict[str, dict[str, Any]]:
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    prefix = "/" + _gv_path(rt.group, rt.version)
    coll = (
        f"{prefix}/namespaces/{{namespace}}/{rt.plural}"
        if rt.namespaced
        else f"{prefix}/{rt.plural}"
    )
    item = coll + "/{name}"
    ref = {"$ref": f"#/components/schemas/{_schema_name(rt)}"}
    resp = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}

    def op(action: str) -> dict[str, Any]:
        return {
            "operationId": f"{action}{rt.kind}",
            "parameters": [_FIELD_VALIDATION],
            "responses": resp,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }

    return {
        coll: {"post": op("post"), "get": dict(op("list"), parameters=[])},
        item: {
            "put": op("put"),
            "patch": op("patch"),
            "get": dict(op("get"), parameters=[]),
            "delete": dict(op("delete"), parameters=[]),
        },
    }


def _schema_name(rt: ResourceType) -> str:
    group = rt.group or "core"
    return f"io.k8s.api.{group}.{rt.version}.{rt.kind}"


def openapi_v3_doc(reg: Registry, group: str, version: str) -> dict[str, Any] | None:
    """GET /openapi/v3/<gv>: operations (for kubectl's fieldValidation check), open schemas."""
    types = list(reg.in_group_version(group, version))
    if not types:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rt in types:
        paths.update(_ops(rt))
        schemas[_schema_name(rt)] = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-group-version-kind": [
                {"group": rt.group, "version": rt.version, "kind": rt.kind}
            ],
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
        "paths": paths,
        "components": {"schemas": schemas},
    }


def openapi_v2(reg: Registry) -> dict[str, Any]:
    """GET /openapi/v2: Swagger 2.0 with the same operations and open definitions."""
    paths: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for rt in reg.all():
        for p, ops in _ops(rt).items():
            v2ops = {}
            for method, op in ops.items():
                v2 = {k: v for k, v in op.items() if k != "responses"}
                v2["parameters"] = [
                    {"name": x["name"], "in": "query", "type": "string", "uniqueItems": True}
                    for x in op["parameters"]
                ]
                v2["responses"] = {"200": {"description": "OK"}}
                v2ops[method] = v2
            paths[p] = v2ops
        defs[_schema_name(rt)] = {
            "type": "object",
            "x-kubernetes-group-version-kind": [
                {"group": rt.group, "version": rt.version, "kind": rt.kind}
            ],
        }
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": VERSION_INFO["gitVersion"]},
        "paths": paths,
        "definitions": defs,
    }


def _pb_field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2)."""
    length, varint = len(payload), bytearray()
    while True:
        byte, length = length & 0x7F, length >> 7
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    return bytes([(number << 3) | 2]) + bytes(varint) + payload


def _pb_patch_path(path: str, rt: ResourceType) -> bytes:
    """A gnostic `NamedPathItem` whose PATCH takes `dryRun` and names its kind.

    kubectl before 1.26 asks this before `--dry-run=server`: a kind whose PATCH has no
    `dryRun` parameter (or, for a custom kind, a server whose Namespace's has none) gets
    "doesn't support dry-run" without a request.
    """
    dry_run = _pb_field(2, b"query") + _pb_field(4, b"dryRun")  # QueryParameterSubSchema
    param = _pb_field(1, _pb_field(2, _pb_field(3, dry_run)))  # Parameter.non_body.query
    gvk = json.dumps({"group": rt.group, "version": rt.version, "kind": rt.kind})
    extension = _pb_field(1, b"x-kubernetes-group-version-kind") + _pb_field(
        2, _pb_field(2, gvk.encode())
    )  # NamedAny{name, Any{yaml}}
    operation = _pb_field(8, param) + _pb_field(13, extension)
    return _pb_field(1, path.encode()) + _pb_field(2, _pb_field(8, operation))


def openapi_v2_protobuf(reg: Registry) -> bytes:
    """A minimal gnostic `openapi_v2.Document`: swagger, info, and each kind's PATCH.

    kubectl before 1.27 asks /openapi/v2 for protobuf only and validates `apply` input
    against it; a document without definitions makes it skip validation of every kind,
    as it does for CRDs without a schema. The paths tell it which kinds take dry runs.
    """
    info = _pb_field(1, b"Kubernetes") + _pb_field(2, str(VERSION_INFO["gitVersion"]).encode())
    paths = b"".join(
        _pb_field(2, _pb_patch_path(p, rt))
        for rt in reg.all()
        for p, ops in _ops(rt).items()
        if "patch" in ops
    )
    return _pb_field(1, b"2.0") + _pb_field(2, info) + _pb_field(8, paths)
