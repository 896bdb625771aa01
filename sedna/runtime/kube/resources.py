"""API resource coordinates and the resources the GM talks to.

Controllers address the API by ``Resource`` (group, version, plural) rather than by
the generated ``*Api`` classes: one raw code path serves core kinds, built-in groups
and Sedna's CRDs alike, and no generated model class is ever involved.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

__all__ = [
    "CONFIGMAPS",
    "DATASETS",
    "DEPLOYMENTS",
    "EVENTS",
    "FEATURE_EXTRACTION_SERVICES",
    "FEDERATED_LEARNING_JOBS",
    "HPAS",
    "INCREMENTAL_LEARNING_JOBS",
    "JOINT_INFERENCE_SERVICES",
    "LEASES",
    "LIFELONG_LEARNING_JOBS",
    "MODELS",
    "NAMESPACES",
    "NODES",
    "OBJECT_SEARCH_SERVICES",
    "OBJECT_TRACKING_SERVICES",
    "PODS",
    "REID_JOBS",
    "SECRETS",
    "SEDNA_GROUP",
    "SEDNA_KINDS",
    "SEDNA_VERSION",
    "SERVICES",
    "VIDEO_ANALYTICS_JOBS",
    "Resource",
    "sedna_resource",
]


def _segment(value: str) -> str:
    # Names are DNS labels in practice; quoting keeps a hostile name from
    # escaping its path segment.
    return quote(value, safe="")


@dataclass(frozen=True)
class Resource:
    """One REST resource; frozen so it can key the informer factory's cache."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` objects of this resource carry (``v1``, ``apps/v1``)."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``plural.group`` as kube-apiserver spells it (``pods``, ``models.sedna.io``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """Return the URL path; a namespace on a cluster-scoped resource is ignored.

        Ignoring rather than rejecting lets a namespace-scoped informer factory hold
        cluster-scoped informers (nodes) without special cases at every caller.
        """
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        parts = [base]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{_segment(namespace)}")
        parts.append(self.plural)
        if name is not None:
            if not name:
                raise ValueError(f"empty name for {self.group_resource}")
            parts.append(_segment(name))
            if subresource:
                parts.append(subresource)
        elif subresource:
            raise ValueError("a subresource needs a name")
        return "/".join(parts)


PODS = Resource("", "v1", "pods", "Pod")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")

SEDNA_GROUP = "sedna.io"
SEDNA_VERSION = "v1alpha1"

# plural -> kind, from Sedna's CRDs (all namespaced, all with a status subresource).
SEDNA_KINDS: dict[str, str] = {
    "datasets": "Dataset",
    "models": "Model",
    "incrementallearningjobs": "IncrementalLearningJob",
    "jointinferenceservices": "JointInferenceService",
    "federatedlearningjobs": "FederatedLearningJob",
    "lifelonglearningjobs": "LifelongLearningJob",
    "objectsearchservices": "ObjectSearchService",
    "objecttrackingservices": "ObjectTrackingService",
    "featureextractionservices": "FeatureExtractionService",
    "reidjobs": "ReidJob",
    "videoanalyticsjobs": "VideoAnalyticsJob",
}


def sedna_resource(plural: str) -> Resource:
    """Return the ``sedna.io/v1alpha1`` resource for a plural; unknown plurals fail loudly.

    A typo in a plugin's resource name should fail at start-up, not as 404s later.
    """
    try:
        kind = SEDNA_KINDS[plural]
    except KeyError:
        known = ", ".join(sorted(SEDNA_KINDS))
        raise ValueError(f"unknown Sedna resource {plural!r}; known: {known}") from None
    return Resource(SEDNA_GROUP, SEDNA_VERSION, plural, kind)


DATASETS = sedna_resource("datasets")
MODELS = sedna_resource("models")
INCREMENTAL_LEARNING_JOBS = sedna_resource("incrementallearningjobs")
JOINT_INFERENCE_SERVICES = sedna_resource("jointinferenceservices")
FEDERATED_LEARNING_JOBS = sedna_resource("federatedlearningjobs")
LIFELONG_LEARNING_JOBS = sedna_resource("lifelonglearningjobs")
OBJECT_SEARCH_SERVICES = sedna_resource("objectsearchservices")
OBJECT_TRACKING_SERVICES = sedna_resource("objecttrackingservices")
FEATURE_EXTRACTION_SERVICES = sedna_resource("featureextractionservices")
REID_JOBS = sedna_resource("reidjobs")
VIDEO_ANALYTICS_JOBS = sedna_resource("videoanalyticsjobs")
