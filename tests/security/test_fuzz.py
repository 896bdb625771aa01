"""Fuzzed custom-resource specs and request bodies: 0 crashes, 0 unhandled tracebacks.

Hypothesis mutates Sedna's sample IncrementalLearningJob (replaces or deletes values at
random paths with random JSON) and posts random bodies to the embedded API server. The
server never answers 5xx, the GM answers every job (a condition or an Event) and logs
no traceback, and a valid job still runs afterwards.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from incremental_learning.helpers import create_dependencies, sample_job
from support.logs import LogCapture
from support.waiting import poll

from sedna.runtime.kube import ApiError

from .conftest import Api, GMFactory

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(spec: dict[str, Any], edits: list[tuple[int, Any, bool]]) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    for index, value, delete in edits:
        paths = _paths(spec)
        if not paths:
            break
        path = paths[index % len(paths)]
        parent: Any = spec
        for part in path[:-1]:
            parent = parent[part]
        if delete and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = value
    return spec


EDITS = st.lists(st.tuples(st.integers(0, 10_000), JSON, st.booleans()), min_size=1, max_size=4)


@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=st.lists(EDITS, min_size=15, max_size=15))
def test_fuzzed_job_specs_never_crash_the_gm(
    edits: list[list[tuple[int, Any, bool]]],
    api: Api,
    make_gm: GMFactory,
    sample_dir: Path,
    logs: LogCapture,
) -> None:
    gm = make_gm()  # one GM per example: stopped at its end
    try:
        _fuzz_jobs(edits, api, sample_dir, logs)
    finally:
        gm.stop()


def _fuzz_jobs(
    edits: list[list[tuple[int, Any, bool]]], api: Api, sample_dir: Path, logs: LogCapture
) -> None:
    if not api.jobs.list(api.ns)["items"]:
        create_dependencies(api, sample_dir)
    base = sample_job(sample_dir)
    created: list[str] = []
    offset = len(api.jobs.list(api.ns)["items"])
    for i, job_edits in enumerate(edits):
        job = dict(base, spec=_mutate(base["spec"], job_edits))
        job["metadata"] = dict(base["metadata"], name=f"fuzz-{offset + i}")
        try:
            api.create(job)
        except ApiError as exc:
            assert exc.status < 500, (exc, json.dumps(job["spec"])[:500])
            continue
        created.append(job["metadata"]["name"])

    def answered() -> list[str]:
        events = {e["involvedObject"].get("name") for e in api.events.list(api.ns)["items"]}
        states = {
            j["metadata"]["name"]
            for j in api.jobs.list(api.ns)["items"]
            if (j.get("status") or {}).get("conditions")
        }
        return [n for n in created if n not in events and n not in states]

    poll(lambda: not answered(), 20, interval=0.2, failure=lambda _: f"unanswered: {answered()}")
    assert not [line for line in logs.lines if "Traceback" in line]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=JSON,
    ctype=st.sampled_from(["application/json", "application/yaml", "application/merge-patch+json"]),
)
def test_fuzzed_bodies_never_get_a_5xx(
    body: Any, ctype: str, api_client: Any, namespace: str
) -> None:
    from apiserver.helpers import call

    raw = json.dumps(body)
    for method, path in (
        ("POST", f"/api/v1/namespaces/{namespace}/configmaps"),
        ("POST", f"/apis/sedna.io/v1alpha1/namespaces/{namespace}/datasets"),
        ("PATCH", f"/api/v1/namespaces/{namespace}/configmaps/absent"),
    ):
        status, answer = call(api_client, method, path, raw, content_type=ctype)
        assert status < 500, (method, path, raw[:200], answer)


def test_a_malformed_pod_template_is_an_error_naming_the_field() -> None:
    """Regression (found by the fuzz above): a template whose volumeMounts held a string
    crashed the reconcile with an AttributeError instead of naming the field."""
    import pytest

    from sedna.runtime.workers.errors import WorkerError
    from sedna.runtime.workers.labels import job_ref
    from sedna.runtime.workers.pods import template_spec

    job = job_ref(
        {"kind": "IncrementalLearningJob", "apiVersion": "sedna.io/v1alpha1",
         "metadata": {"name": "j", "namespace": "ns", "uid": "u"}}
    )  # fmt: skip
    bad = {"spec": {"containers": [{"name": "c", "volumeMounts": ["x"]}]}}
    with pytest.raises(WorkerError) as err:
        template_spec(job, bad, "spec.trainSpec.template")
    assert "spec.trainSpec.template.spec.containers[0].volumeMounts[0]" in str(err.value)
    with pytest.raises(WorkerError) as err:
        template_spec(job, {"metadata": {"labels": []}, **bad}, "spec.t")
    assert "spec.t" in str(err.value)
