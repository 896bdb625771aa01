"""WorkerParams built the way Sedna's IncrementalLearningJob controller builds them.

A transcription of the decisions in Go's ``createPod``/``createInferPod``
(``controllers/incrementallearning/incrementallearningjob.go``) onto our
types: which URL gets which secret, which mounts download, the env names,
``RestartPolicy=OnFailure`` and ``HostNetwork`` for train/eval. The random
``WORKER_NAME`` suffix is fixed so the pods can be compared to fixtures.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sedna.runtime.workers import ModelHotUpdate, MountURL, WorkerMount, WorkerParam

LC_SERVER = "http://localhost:9100"
SUFFIX = "abcde"


def _secret(name: str | None) -> str | None:
    return name or None


def train_or_eval_param(
    stage: str,
    job: Mapping[str, Any],
    initial_model: Mapping[str, Any],
    dataset: Mapping[str, Any],
    cond_input: Mapping[str, Any],
) -> WorkerParam:
    """Go's ``createPod(job, podtype)`` for ``train`` and ``eval``."""
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    job_secret = _secret(job["spec"].get("credentialName"))
    dataset_secret = _secret(dataset["spec"].get("credentialName"))
    initial_url = initial_model["spec"]["url"]
    initial_secret = _secret(initial_model["spec"].get("credentialName"))
    data_url = cond_input.get("dataURL", "")
    model_urls = (
        [cond_input["model"]["url"]]
        if cond_input.get("model")
        else [m["url"] for m in cond_input.get("models", [])]
    )
    original = cond_input.get("dataIndexURL") or dataset["spec"]["url"]
    indirect = dataset["spec"]["url"] != original

    if stage == "train":
        base = model_urls[0]
        return WorkerParam(
            worker_type="train",
            env={
                "NAMESPACE": ns,
                "JOB_NAME": name,
                "WORKER_NAME": "train-worker-" + SUFFIX,
                "LC_SERVER": LC_SERVER,
            },
            mounts=[
                WorkerMount(
                    url=MountURL(
                        url=base,
                        secret_name=initial_secret if base == initial_url else job_secret,
                        download_by_initializer=True,
                    ),
                    env_name="BASE_MODEL_URL",
                ),
                WorkerMount(
                    url=MountURL(url=cond_input.get("outputDir", ""), secret_name=job_secret),
                    env_name="MODEL_URL",
                ),
                WorkerMount(
                    url=MountURL(
                        url=data_url, download_by_initializer=True, secret_name=job_secret
                    ),
                    env_name="TRAIN_DATASET_URL",
                ),
                WorkerMount(
                    url=MountURL(
                        url=original,
                        secret_name=dataset_secret,
                        download_by_initializer=True,
                        indirect=indirect,
                    ),
                    env_name="ORIGINAL_DATASET_URL",
                ),
            ],
            restart_policy="OnFailure",
            host_network=True,
        )
    return WorkerParam(
        worker_type="Eval",  # sic: Go uses "Eval" here, lowercased in labels and names
        env={
            "NAMESPACE": ns,
            "JOB_NAME": name,
            "WORKER_NAME": "eval-worker-" + SUFFIX,
            "LC_SERVER": LC_SERVER,
        },
        mounts=[
            WorkerMount(
                urls=[
                    MountURL(
                        url=u,
                        secret_name=initial_secret if u == initial_url else job_secret,
                        download_by_initializer=True,
                    )
                    for u in model_urls
                ],
                name="models",
                env_name="MODEL_URLS",
            ),
            WorkerMount(
                url=MountURL(
                    url=data_url, secret_name=dataset_secret, download_by_initializer=True
                ),
                name="datasets",
                env_name="TEST_DATASET_URL",
            ),
            WorkerMount(
                url=MountURL(
                    url=original,
                    secret_name=dataset_secret,
                    download_by_initializer=True,
                    indirect=indirect,
                ),
                name="origin-dataset",
                env_name="ORIGINAL_DATASET_URL",
            ),
        ],
        restart_policy="OnFailure",
        host_network=True,
    )


def inference_param(job: Mapping[str, Any], deploy_model: Mapping[str, Any]) -> WorkerParam:
    """Go's ``createInferPod``."""
    deploy = job["spec"]["deploySpec"]
    hem = deploy.get("hardExampleMining") or {}
    # Go marshals a nil parameter list as "null"
    hem_params = json.dumps(hem.get("parameters"), separators=(",", ":"))
    model_spec = deploy["model"]
    hot = ModelHotUpdate()
    if model_spec.get("hotUpdateEnabled"):
        hot = ModelHotUpdate(True, int(model_spec.get("pollPeriodSeconds") or 0))
    return WorkerParam(
        worker_type="inference",
        mounts=[
            WorkerMount(
                url=MountURL(
                    url=deploy_model["spec"]["url"],
                    secret_name=_secret(deploy_model["spec"].get("credentialName")),
                    download_by_initializer=True,
                ),
                name="model",
                env_name="MODEL_URL",
            )
        ],
        env={
            "NAMESPACE": job["metadata"]["namespace"],
            "JOB_NAME": job["metadata"]["name"],
            "WORKER_NAME": "inferworker-" + SUFFIX,
            "HEM_NAME": hem.get("name", ""),
            "HEM_PARAMETERS": hem_params,
            "LC_SERVER": LC_SERVER,
        },
        model_hot_update=hot,
        host_network=True,
    )
