"""The storage initializer: how a worker gets its models and datasets.

Sedna's rules (``storage_initializer_injector.go``), which the storage
initializer image and the sedna Python library depend on:

- ``s3``/``http``/``https`` URLs to download: the ``storage-initializer`` init
  container downloads ``<url>`` into the parent directory of
  ``/downloads/<host><path>``; one ``emptyDir`` volume holds ``/downloads``,
  writable for the init container, read-only for the workers.
- host paths (no scheme): a file mounts its parent directory, a directory
  mounts itself, at ``/home/data/<path>``; ``DATA_PATH_PREFIX=/home/data``.
- ``indirect`` (index) URLs: every entry is downloaded; the destination gets
  the ``@`` mark; a host-path index is mounted into the init container only.
- ``enable_if_host_path``: a URL with a scheme is dropped.
- each mount's env var is its container paths (or original URLs) joined by ``;``.
- S3 credentials go to the init container for downloaded URLs and to the
  workers for URLs they access themselves.

Where we differ on purpose (the Go GM produces pods the API server rejects
or silently loses credentials): distinct host paths whose names fold to the
same volume name get distinct volume names; a mount path or a name is never
added twice; an unknown scheme, an unparsable URL and a secret name no Secret can have
are errors; a missing secret, or an S3 secret without its endpoint, is a
`MissingReference` (callers wait and retry: creating or fixing the Secret cures it, no
edit of the spec is needed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sedna.runtime.workers.credentials import CredentialInjection, MissingEndpoint, s3_secret_envs
from sedna.runtime.workers.env import inject_by_key, list_field, merge_first_wins
from sedna.runtime.workers.errors import MissingReference
from sedna.runtime.workers.labels import JobRef
from sedna.runtime.workers.paths import convert_k8s_valid_name, go_join, go_split
from sedna.runtime.workers.types import MountURL, WorkerMount
from sedna.runtime.workers.urls import parse_url

__all__ = [
    "DEFAULT_STORAGE_INITIALIZER_IMAGE",
    "DEFAULT_VOLUME_NAME",
    "DOWNLOAD_PREFIX",
    "DOWNLOAD_VOLUME_NAME",
    "HOST_PATH_PREFIX",
    "HOST_PATH_PREFIX_ENV",
    "INDIRECT_URL_MARK",
    "INDIRECT_URL_MARK_ENV",
    "REASON_SECRET_INCOMPLETE",
    "REASON_SECRET_NOT_FOUND",
    "STORAGE_INITIALIZER_NAME",
    "URLS_FIELD_SEP",
    "ResolvedURL",
    "SecretGetter",
    "StoragePlan",
    "apply_storage",
    "plan_storage",
]

STORAGE_INITIALIZER_NAME = "storage-initializer"
DEFAULT_STORAGE_INITIALIZER_IMAGE = "kubeedge/sedna-storage-initializer:v0.3.0"
DOWNLOAD_PREFIX = "/downloads"
DOWNLOAD_VOLUME_NAME = "sedna-storage-initializer"
HOST_PATH_PREFIX_ENV = "DATA_PATH_PREFIX"
HOST_PATH_PREFIX = "/home/data"
URLS_FIELD_SEP = ";"
INDIRECT_URL_MARK = "@"
INDIRECT_URL_MARK_ENV = "INDIRECT_URL_MARK"
DEFAULT_VOLUME_NAME = "sedna-default-volume-name"
_DOWNLOAD_SCHEMES = ("s3", "http", "https")
REASON_SECRET_NOT_FOUND = "SecretNotFound"
REASON_SECRET_INCOMPLETE = "SecretIncomplete"  # e.g. an S3 Secret without its endpoint
# what the API server accepts as a Secret's name (a DNS-1123 subdomain)
_SECRET_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

SecretGetter = Callable[[str], Mapping[str, Any] | None]
"""Returns the secret of that name in the job's namespace, or None when it does not exist."""


@dataclass(frozen=True)
class ResolvedURL:
    """A :class:`MountURL` after Sedna's ``Parse()``: where it lands and how it gets there."""

    source: MountURL
    container_path: str = ""
    mount_path: str = ""
    host_path: str = ""
    download_src: str = ""
    download_dst_dir: str = ""
    secret_envs: tuple[Mapping[str, Any], ...] = ()

    @property
    def env_path(self) -> str:
        """What the worker sees in the mount's env var; the URL itself when not localised."""
        return self.container_path or self.source.url


@dataclass
class StoragePlan:
    """The result of Sedna's ``PrepareStorage``: mount env vars and the kept URLs."""

    env: dict[str, str] = field(default_factory=dict)
    urls: list[ResolvedURL] = field(default_factory=list)


def _resolve(
    job: JobRef,
    m: MountURL,
    url_field: str,
    get_secret: SecretGetter,
    mode: CredentialInjection,
) -> ResolvedURL | None:
    try:
        u = parse_url(m.url)
    except ValueError as exc:
        raise job.error(url_field, f"invalid URL {m.url!r}: {exc}") from None
    if u.scheme and m.enable_if_host_path:
        return None
    if u.scheme and u.scheme not in _DOWNLOAD_SCHEMES:
        raise job.error(
            url_field,
            f"unsupported URL scheme {u.scheme!r} in {m.url!r} "
            "(supported: s3, http, https, or a host path)",
        )

    container_path = mount_path = host_path = download_src = download_dst = ""
    if m.download_by_initializer and u.scheme in _DOWNLOAD_SCHEMES:
        mount_path = DOWNLOAD_PREFIX
        # host + path, so that equal paths on different hosts do not collide
        container_path = go_join(mount_path, u.host + u.path)
        download_src = m.url
        download_dst = go_split(container_path)[0]
    if not u.scheme:
        if m.is_dir:
            host_path = m.url
            mount_path = go_join(HOST_PATH_PREFIX, u.path)
            container_path = mount_path
        else:
            host_path = go_split(m.url)[0]
            container_path = go_join(HOST_PATH_PREFIX, u.path)
            mount_path = go_split(container_path)[0]
            if m.indirect:
                download_src = container_path
                container_path = go_join(DOWNLOAD_PREFIX, u.host + u.path)
                download_dst = go_split(container_path)[0]

    secret_envs: list[dict[str, Any]] = []
    if m.secret_name:
        if len(m.secret_name) > 253 or not _SECRET_NAME.match(m.secret_name):
            # no Secret can ever have this name: a spec error, not something to wait for
            raise job.error(m.secret_field, f"{m.secret_name!r} is not a valid Secret name")
        secret = get_secret(m.secret_name)
        if secret is None:
            raise MissingReference(
                job.key,
                m.secret_field,
                f"secret {m.secret_name!r} not found in namespace {job.namespace}",
                kind=job.kind,
                reason=REASON_SECRET_NOT_FOUND,
            )
        if u.scheme == "s3" or m.indirect:
            try:
                secret_envs = s3_secret_envs(secret, mode)
            except MissingEndpoint as exc:
                # the Secret, not the spec, is incomplete: fixing the Secret cures it
                raise MissingReference(
                    job.key,
                    m.secret_field,
                    str(exc),
                    kind=job.kind,
                    reason=REASON_SECRET_INCOMPLETE,
                ) from None
    return ResolvedURL(
        source=m,
        container_path=container_path,
        mount_path=mount_path,
        host_path=host_path,
        download_src=download_src,
        download_dst_dir=download_dst,
        secret_envs=tuple(secret_envs),
    )


def plan_storage(
    job: JobRef,
    mounts: list[WorkerMount],
    get_secret: SecretGetter,
    mode: CredentialInjection,
    *,
    field_prefix: str = "",
) -> StoragePlan:
    """Resolve every mount; the env var of a mount is set even when all its URLs are dropped."""
    plan = StoragePlan()
    for i, mount in enumerate(mounts):
        paths: list[str] = []
        label = mount.env_name or mount.name or str(i)
        for j, m in enumerate(mount.all_urls()):
            url_field = m.field or f"{field_prefix}mounts[{label}].urls[{j}]"
            r = _resolve(job, m, url_field, get_secret, mode)
            if r is None:
                continue
            plan.urls.append(r)
            paths.append(r.env_path)
        if mount.env_name:
            plan.env[mount.env_name] = URLS_FIELD_SEP.join(paths)
    return plan


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = list_field(spec, "containers")
    return containers


def _inject_into_containers(spec: dict[str, Any], key: str, entries: list[dict[str, Any]]) -> None:
    if not entries:
        return
    for c in _containers(spec):
        inject_by_key(list_field(c, key), entries, "mountPath" if key == "volumeMounts" else "name")


def _volume_namer(spec: Mapping[str, Any]) -> Callable[[str], str]:
    taken = {str(v.get("name")) for v in spec.get("volumes") or []}
    by_path: dict[str, str] = {}

    def name_for(host_path: str) -> str:
        if host_path in by_path:
            return by_path[host_path]
        base = convert_k8s_valid_name(host_path) or DEFAULT_VOLUME_NAME
        name, n = base, 1
        while name in taken:
            n += 1
            suffix = f"-{n}"
            name = base[: 63 - len(suffix)] + suffix
        taken.add(name)
        by_path[host_path] = name
        return name

    return name_for


def apply_storage(spec: dict[str, Any], plan: StoragePlan, image: str) -> None:
    """Add init container, volumes, mounts and credential env to a pod spec, in Go's order.

    Order matters for parity: the download volume first, then host paths,
    then ``DATA_PATH_PREFIX``, then the workers' own credentials.
    """
    # 1. download by the init container
    pairs: list[str] = []
    init_secret_envs: list[dict[str, Any]] = []
    for r in plan.urls:
        if r.download_src and r.download_dst_dir:
            dst = r.download_dst_dir
            if r.source.indirect:
                dst = INDIRECT_URL_MARK + dst  # tells the initializer to read the index
            pairs += [r.download_src, dst]
            merge_first_wins(init_secret_envs, r.secret_envs)
    init: dict[str, Any] | None = None
    if pairs:
        init = {
            "name": STORAGE_INITIALIZER_NAME,
            "image": image,
            "args": pairs,
            "env": [*init_secret_envs, {"name": INDIRECT_URL_MARK_ENV, "value": INDIRECT_URL_MARK}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
            "volumeMounts": [{"name": DOWNLOAD_VOLUME_NAME, "mountPath": DOWNLOAD_PREFIX}],
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "imagePullPolicy": "IfNotPresent",
        }
        inject_by_key(list_field(spec, "initContainers"), [init], "name")
        inject_by_key(
            list_field(spec, "volumes"), [{"name": DOWNLOAD_VOLUME_NAME, "emptyDir": {}}], "name"
        )
        _inject_into_containers(
            spec,
            "volumeMounts",
            [{"name": DOWNLOAD_VOLUME_NAME, "mountPath": DOWNLOAD_PREFIX, "readOnly": True}],
        )

    # 2. host paths
    name_for = _volume_namer(spec)
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    init_mounts: list[dict[str, Any]] = []
    for r in plan.urls:
        if not r.host_path:
            continue
        name = name_for(r.host_path)
        if all(v["name"] != name for v in volumes):
            volumes.append({"name": name, "hostPath": {"path": r.host_path, "type": "Directory"}})
        vm = {"mountPath": r.mount_path, "name": name}
        # an indirect index is read by the init container only
        (init_mounts if r.source.indirect else mounts).append(vm)
    if volumes:
        inject_by_key(list_field(spec, "volumes"), volumes, "name")
    _inject_into_containers(spec, "volumeMounts", mounts)
    if mounts:
        _inject_into_containers(
            spec, "env", [{"name": HOST_PATH_PREFIX_ENV, "value": HOST_PATH_PREFIX}]
        )
    if init_mounts and init is not None:
        # an indirect host path always has a download pair, so ``init`` exists
        inject_by_key(spec["initContainers"][-1]["volumeMounts"], init_mounts, "mountPath")

    # 3. credentials of URLs the workers access themselves
    worker_secret_envs: list[dict[str, Any]] = []
    for r in plan.urls:
        if not r.source.download_by_initializer:
            merge_first_wins(worker_secret_envs, r.secret_envs)
    _inject_into_containers(spec, "env", worker_secret_envs)
