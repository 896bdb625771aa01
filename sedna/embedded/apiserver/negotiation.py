"""Content negotiation of reads: which representation the ``Accept`` header asks for.

kube-apiserver walks the media ranges of ``Accept`` (higher ``q`` first, otherwise in
the order given) and serves the first one it supports: the object itself, or a
conversion named by ``as=<Kind>;g=meta.k8s.io;v=<v1|v1beta1>``: ``Table`` for
``kubectl get`` (``tables``), ``PartialObjectMetadata`` and
``PartialObjectMetadataList`` for client-go's metadata client and metadata-only
informers (``metadata_only``). A range asking for a conversion the server does not
know (another kind, group or version) is not acceptable, so clients list fallbacks:
kubectl sends Table v1, Table v1beta1, then plain JSON. When every JSON range is
unacceptable the answer is 406 NotAcceptable, as kube's.

This server answers JSON only: ranges of other media types (protobuf, YAML, CBOR) are
passed over, and a header offering nothing but those gets JSON, as it always did
(the clients that send them all fall back to JSON).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import APIError

META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
TABLE = "Table"
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
CONVERSIONS = (TABLE, PARTIAL, PARTIAL_LIST)

_JSON_RANGES = ("application/json", "application/*", "*/*")


@dataclass(frozen=True)
class Target:
    """A conversion the client asked for: ``kind`` in ``meta.k8s.io/<version>``."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"

    def content_type(self) -> str:
        """The Content-Type of a converted response (kube's media type with its params)."""
        return f"application/json;as={self.kind};v={self.version};g={META_GROUP}"


@dataclass(frozen=True)
class _Range:
    mime: str
    params: dict[str, str]
    q: float


def _ranges(accept: str) -> list[_Range]:
    out = []
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        if not fields[0]:
            continue
        params: dict[str, str] = {}
        for f in fields[1:]:
            k, _, v = f.partition("=")
            params[k.strip().lower()] = v.strip()
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0
        out.append(_Range(fields[0].lower(), params, q))
    # Stable: ranges of equal weight keep the client's order (kubectl relies on it).
    out.sort(key=lambda r: (-r.q, r.mime.startswith("*"), r.mime.endswith("/*")))
    return out


def not_acceptable(message: str) -> APIError:
    """406 NotAcceptable, the Status kube-apiserver answers a failed negotiation with."""
    return APIError(406, "NotAcceptable", message)


def negotiate(accept: str) -> Target | None:
    """The conversion the first acceptable JSON range asks for; None for the object itself.

    Raises 406 when the header offers JSON only with conversions this server lacks.
    """
    refused: list[str] = []
    for r in _ranges(accept):
        if r.q <= 0 or r.mime not in _JSON_RANGES:
            continue
        kind = r.params.get("as")
        if kind is None:
            return None
        group, version = r.params.get("g"), r.params.get("v", "")
        if kind in CONVERSIONS and group == META_GROUP and version in META_VERSIONS:
            return Target(kind, version)
        refused.append(f"as={kind};g={group or ''};v={version}")
    if refused:
        raise not_acceptable(
            "only the following media types are accepted: application/json "
            f"(as= may name Table, {PARTIAL} or {PARTIAL_LIST} in {META_GROUP} v1 or v1beta1; "
            f"asked for {', '.join(refused)})"
        )
    return None
