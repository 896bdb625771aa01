"""A credential Secret a Model names (``spec.credentialName``) that does not exist: not a
spec error. The service waits (``Pending``/``SecretNotFound`` naming the field), looks
again with a backoff (Secrets are not watched) and starts once the Secret is there;
workers already running are kept. An S3 Secret without its endpoint is the same
(``SecretIncomplete``). A name no Secret can have stays ``InvalidSpec``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.deployments import DeploymentControllerFactory
from support.logs import LogCapture

from sedna.runtime import FakeClock
from sedna.runtime.workloads.controller import (
    MISSING_RETRY_MAX_SECONDS,
    MISSING_RETRY_SECONDS,
    missing_retry_after,
)

from .conftest import GMFactory
from .helpers import (
    BIG,
    CLOUD_DEPLOYMENT,
    EDGE_DEPLOYMENT,
    LITTLE,
    SAMPLE,
    Api,
    model,
    sample_service,
    wait_until,
)

SECRET = "model-creds"
FIELD = f"Model {BIG}: spec.credentialName"  # the cloud worker's Model is read first


def _secret(name: str = SECRET) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "annotations": {"s3-endpoint": "minio.local:9000"}},
        "stringData": {"ACCESS_KEY_ID": "a", "SECRET_ACCESS_KEY": "b"},
    }


def _models(api: Api, credential: Any) -> None:
    for name in (LITTLE, BIG):
        m = model(name)
        m["spec"]["credentialName"] = credential
        api.models.create(api.ns, m)


def _within(pred: Callable[[], Any], seconds: float) -> bool:
    try:
        wait_until(pred, seconds, "")
    except AssertionError:
        return False
    return True


def _step_until(clock: FakeClock, pred: Callable[[], Any], what: str) -> None:
    """Advance virtual time one first retry at a time until `pred` holds (the retry's
    timer may be armed just after the state the test waited for)."""
    for _ in range(8):
        clock.step(MISSING_RETRY_SECONDS)
        if _within(pred, 0.5):
            return
    raise AssertionError(f"{what}: not after {8 * MISSING_RETRY_SECONDS} s of virtual time")


def _secret_refs(dep: dict[str, Any]) -> set[str]:
    spec = dep["spec"]["template"]["spec"]
    envs = [e for c in spec.get("initContainers") or [] for e in c.get("env") or []]
    return {e["valueFrom"]["secretKeyRef"]["name"] for e in envs if "valueFrom" in e}


def test_backoff_doubles_from_the_first_retry_up_to_its_bound() -> None:
    delays = [missing_retry_after(n) for n in range(1, 12)]
    assert delays[0] == MISSING_RETRY_SECONDS
    assert delays[1] == 2 * MISSING_RETRY_SECONDS
    assert delays == sorted(delays) and delays[-1] == MISSING_RETRY_MAX_SECONDS
    assert missing_retry_after(10**6) == MISSING_RETRY_MAX_SECONDS  # no overflow


def test_a_missing_secret_waits_and_the_service_starts_once_it_exists(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    clock = FakeClock()
    deployment_controller()
    _models(api, SECRET)
    gm = make_gm(clock=clock)
    api.create(sample_service(sample_dir))
    wait_until(lambda: api.latest() == ("Pending", "SecretNotFound"), 10.0, "SecretNotFound")
    message = api.status()["conditions"][-1]["message"]
    assert message.startswith(f"{FIELD}: "), message
    assert repr(SECRET) in message and api.ns in message
    api.wait_event("SecretNotFound", FIELD)
    warning = [e for e in api.events_of() if e["reason"] == "SecretNotFound"]
    assert warning and warning[0]["type"] == "Warning"
    assert api.names("deployments") == []
    # still missing at the retry: no Deployment without credentials (as Sedna makes)
    clock.step(MISSING_RETRY_SECONDS)
    assert gm.manager is not None
    assert gm.manager.features[0].controller.wait_idle(5)  # type: ignore[attr-defined]
    assert api.latest() == ("Pending", "SecretNotFound")
    assert api.names("deployments") == []

    api.create(_secret())  # no edit of the service or the Models
    _step_until(clock, lambda: len(api.names("deployments")) == 2, "the Deployments")
    assert api.names("deployments") == sorted([CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT])
    for name in (CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT):
        assert _secret_refs(api.deployments.get(api.ns, name)) == {SECRET}
    api.until_running()
    reasons = [(c["type"], c["reason"]) for c in api.status()["conditions"]]
    assert reasons[0] == ("Pending", "SecretNotFound")
    assert reasons[-1] == ("Running", "WorkersAvailable")
    assert ("Failed", "InvalidSpec") not in reasons


def test_a_secret_deleted_while_running_keeps_the_workers(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
    logs: LogCapture,
) -> None:
    deployment_controller()
    api.create(_secret())
    _models(api, SECRET)
    make_gm()
    api.create(sample_service(sample_dir))
    api.until_running()
    before = {d: api.deployments.get(api.ns, d)["metadata"]["uid"]
              for d in (CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT)}  # fmt: skip
    api.secrets.delete(api.ns, SECRET)
    api.jis.patch(api.ns, SAMPLE, {"metadata": {"labels": {"poke": "1"}}})  # a sync
    logs.wait(f"{api.ns}/{SAMPLE}: {FIELD}", "workers are kept as they are")
    assert api.latest() == ("Running", "WorkersAvailable")
    assert {d: api.deployments.get(api.ns, d)["metadata"]["uid"] for d in before} == before


def test_an_empty_credential_name_means_no_credentials(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    deployment_controller()
    _models(api, "")
    make_gm()
    api.create(sample_service(sample_dir))
    api.until_running()
    for name in (CLOUD_DEPLOYMENT, EDGE_DEPLOYMENT):
        assert _secret_refs(api.deployments.get(api.ns, name)) == set()


@pytest.mark.parametrize("name", ["Model_Creds", "a/b", "x" * 254, "-creds"])
def test_a_name_no_secret_can_have_is_an_invalid_spec(
    api: Api, make_gm: GMFactory, sample_dir: Path, name: str
) -> None:
    _models(api, name)
    make_gm()
    api.create(sample_service(sample_dir))
    wait_until(lambda: api.latest() == ("Failed", "InvalidSpec"), 10.0, "InvalidSpec")
    message = api.status()["conditions"][-1]["message"]
    assert message.startswith(f"{FIELD}: ") and "not a valid Secret name" in message
    api.wait_event("InvalidSpec", FIELD)
    assert api.names("deployments") == []


def test_an_s3_secret_without_its_endpoint_waits_until_the_secret_is_fixed(
    api: Api,
    make_gm: GMFactory,
    deployment_controller: DeploymentControllerFactory,
    sample_dir: Path,
) -> None:
    clock = FakeClock()
    deployment_controller()
    incomplete = _secret()
    incomplete["metadata"]["annotations"] = {}  # no s3-endpoint
    api.create(incomplete)
    _models(api, SECRET)
    make_gm(clock=clock)
    api.create(sample_service(sample_dir))
    wait_until(lambda: api.latest() == ("Pending", "SecretIncomplete"), 10.0, "SecretIncomplete")
    message = api.status()["conditions"][-1]["message"]
    assert message.startswith(f"{FIELD}: ") and "s3-endpoint" in message, message
    api.wait_event("SecretIncomplete", FIELD)
    assert api.names("deployments") == []
    # the Secret is fixed, the service is not touched: the retry starts it
    api.secrets.patch(api.ns, SECRET, {"metadata": {"annotations": {"s3-endpoint": "m:9000"}}})
    _step_until(clock, lambda: len(api.names("deployments")) == 2, "the Deployments")
    api.until_running()
