"""Which feature reconciles which Sedna kind, and which kinds nobody reconciles.

The table names the first-party plugin of each of Sedna's kinds, so the GM can tell an
operator what to enable or install when a kind installed in the cluster has no
enabled feature. It is advice only: any installed plugin may claim any kind.

`Model` has no controller, in Sedna's Go GM either: a Model is data that the jobs
name (`spec.initialModel`, `spec.deploySpec.model`, ...) and read through their own
informers. It is therefore never reported as unreconciled; a plugin may still claim it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from loguru import logger

from sedna.runtime.kube import SEDNA_GROUP, SEDNA_KINDS, ApiError, KubeClient, Resource

# kind -> the first-party plugin (entry-point name) that reconciles it; None: no controller.
FIRST_PARTY: Mapping[str, str | None] = {
    "IncrementalLearningJob": "incremental_learning",
    "Dataset": "dataset",
    "LifelongLearningJob": "lifelong_learning",
    "JointInferenceService": "joint_inference",
    "FederatedLearningJob": "federated_learning",
    "ObjectSearchService": "object_search",
    "ReidJob": "reid",
    "VideoAnalyticsJob": "video_analytics",
    "FeatureExtractionService": "feature_extraction",
    "ObjectTrackingService": "object_tracking",
    "Model": None,
}

NO_CONTROLLER_NOTE = "no controller: data read by the jobs that name it"


def sedna_kinds() -> list[str]:
    """Sedna's eleven kinds, sorted."""
    return sorted(SEDNA_KINDS.values())


def is_sedna_kind(kind: str) -> bool:
    return kind in FIRST_PARTY


@dataclass(frozen=True)
class InstalledKind:
    """A kind served by a CRD in the cluster."""

    group: str
    kind: str
    plural: str


def unreconciled_kinds(
    installed: Iterable[InstalledKind], reconciled: Iterable[str]
) -> list[InstalledKind]:
    """The `sedna.io` kinds installed in the cluster that no enabled feature reconciles.

    Kinds without a controller by design (Model) are not listed.
    """
    done = set(reconciled)
    return sorted(
        (
            k
            for k in installed
            if k.group == SEDNA_GROUP
            and k.kind not in done
            and not (k.kind in FIRST_PARTY and FIRST_PARTY[k.kind] is None)
        ),
        key=lambda k: k.kind,
    )


def would_reconcile(kind: str, installed_plugins: Iterable[str]) -> str:
    """The advice for an unreconciled kind: which plugin to enable or install."""
    plugin = FIRST_PARTY.get(kind)
    if plugin is None:
        return "no known plugin reconciles it"
    if plugin in set(installed_plugins):
        return f"plugin {plugin} would, but features.{plugin} is disabled"
    return f"plugin {plugin} would, but it is not installed"


CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)


class KindsUnknown(Exception):
    """A feature names a kind the cluster does not serve; the message is for the operator."""


def installed_kinds(kube: KubeClient) -> list[InstalledKind]:
    """Every kind served by a CRD in the cluster (raises ApiError if CRDs cannot be listed)."""
    out = []
    for crd in kube.resource(CRDS).list(None).get("items", []):
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        if names.get("kind"):
            out.append(InstalledKind(str(spec.get("group", "")), names["kind"], names["plural"]))
    return out


def installed_sedna_kinds(kube: KubeClient) -> list[InstalledKind]:
    """The `sedna.io` kinds served by a CRD, read from the CRDs' names only.

    A CRD is named `<plural>.<group>`, and Sedna's plurals name its kinds, so only the
    CRDs' metadata is listed: a few KB where the whole CRDs, schemas included, are a
    megabyte with Sedna's eleven (read at every start, and whose transient objects
    stayed in the GM's resident memory). A `sedna.io` plural that is not one of
    Sedna's reads the whole CRDs, as before. Raises ApiError like `installed_kinds`.
    """
    names = kube.resource(CRDS).list(None, metadata_only=True).get("items", [])
    found = []
    for crd in names:
        plural, _, group = str((crd.get("metadata") or {}).get("name") or "").partition(".")
        if group != SEDNA_GROUP:
            continue
        kind = SEDNA_KINDS.get(plural)
        if kind is None:
            return [k for k in installed_kinds(kube) if k.group == SEDNA_GROUP]
        found.append(InstalledKind(group, kind, plural))
    return found


def check_foreign_kinds(foreign: Sequence[tuple[str, str, str]], kube: KubeClient) -> None:
    """Each (plugin, feature, kind) that is not a Sedna kind must be a CRD of the cluster.

    A typo'd or missing kind would otherwise start a feature that never sees an object.
    """
    if not foreign:
        return
    try:
        served = {k.kind for k in installed_kinds(kube)}
    except ApiError as exc:
        plugin, feature, kind = foreign[0]
        raise KindsUnknown(
            f"plugin {plugin}: feature {feature} names kind {kind}, which is not a Sedna kind, "
            f"and the installed CRDs cannot be listed to find it ({exc.status} {exc.reason}; "
            "the GM needs list on customresourcedefinitions.apiextensions.k8s.io)"
        ) from None
    for plugin, feature, kind in foreign:
        if kind not in served:
            raise KindsUnknown(
                f"plugin {plugin}: feature {feature} names kind {kind}, which is neither a Sedna "
                f"kind ({', '.join(sedna_kinds())}) nor served by an installed CRD"
            )


def warn_unreconciled(
    kube: KubeClient,
    reconciled: Iterable[str],
    installed_plugins: Iterable[str],
) -> list[str]:
    """Log one warning per installed Sedna kind that no installed feature would reconcile.

    A kind whose plugin is installed but left off by the config is the operator's
    choice, reported in the one line that lists the features left off; a kind whose
    plugin is missing is likely a mistake. Returns the kinds warned about. Only the
    CRDs are read: listing a kind's objects would need access that no enabled feature
    declares (a 403 under generated RBAC).
    """
    try:
        kinds = unreconciled_kinds(installed_sedna_kinds(kube), reconciled)
    except ApiError as exc:
        logger.info(
            "cannot list CRDs ({} {}): unreconciled kinds not checked", exc.status, exc.reason
        )
        return []
    plugins = list(installed_plugins)
    kinds = [k for k in kinds if FIRST_PARTY.get(k.kind) not in plugins]
    for k in kinds:
        logger.warning(
            "kind {} is installed but no enabled feature reconciles it ({}): its objects "
            "are not reconciled",
            k.kind,
            would_reconcile(k.kind, plugins),
        )
    return [k.kind for k in kinds]
