"""Everything under the state directory is its owner's only: folders 0700, files 0600.

The directory itself was 0700, but `logs/` inside it was created 0755 and each pod
log 0644. The database, its WAL, keys, tokens, the kubeconfig and the lock were
already private; this walks the whole directory, so a new file cannot slip through.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from sedna.embedded.kubelet import SIMULATE_RUN_ANNOTATION, SimulatedKubelet
from sedna.embedded.mode import LOGS_DIR_NAME, EmbeddedMode
from sedna.embedded.pod_logs import append_line
from sedna.runtime.config import GMConfig
from sedna.runtime.kube import PODS, KubeClient, api_client_from_config
from sedna.testing import wait_until

NODE = "perm-node"


def _loose(root: Path) -> list[str]:
    """Paths under `root` that its group or others may read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        if mode & 0o077:
            found.append(f"{path.relative_to(root)} {oct(mode)}")
    return found


def test_append_line_makes_a_private_directory_and_file(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        append_line(tmp_path / "logs", "ns", "pod", "c", "hello")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "logs").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "logs" / "ns_pod_c.log").stat().st_mode) == 0o600


def test_nothing_under_the_state_dir_is_open_to_others(tmp_path: Path) -> None:
    state = tmp_path / "state"
    # what an older version left: an open logs/ and an open log file
    (state / LOGS_DIR_NAME).mkdir(parents=True, mode=0o755)
    os.chmod(state / LOGS_DIR_NAME, 0o755)
    old_log = state / LOGS_DIR_NAME / "default_old_c.log"
    old_log.write_text("old\n")
    os.chmod(old_log, 0o644)
    config = GMConfig.model_validate(
        {"embedded": {"enabled": True, "port": 0, "stateDir": str(state), "apply": []}}
    )
    old = os.umask(0o022)
    mode = EmbeddedMode(config)
    try:
        prepared = mode.prepare()
        client = api_client_from_config(prepared.kubeConfig, "")
        kube = KubeClient(client, pool_size=None)
        kubelet = SimulatedKubelet(NODE, kube, pod_start_seconds=0.0, log_dir=state / LOGS_DIR_NAME)
        kubelet.start()
        try:
            kube.resource(PODS).create("default", {
                "metadata": {"name": "echo",
                             "annotations": {SIMULATE_RUN_ANNOTATION: "true"}},
                "spec": {"nodeName": NODE, "restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "x",
                                         "command": [sys.executable, "-c", "print('hi')"]}]},
            })  # fmt: skip
            wait_until(
                lambda: (
                    (kube.resource(PODS).get("default", "echo").get("status") or {}).get("phase")
                    == "Succeeded"
                ),
                timeout=30,
                what="the pod to finish",
            )
        finally:
            kubelet.stop()
            client.close()
        assert (state / LOGS_DIR_NAME / "default_echo_c.log").read_text().strip() == "hi"
        assert (state / "state.db").exists() and (state / "kubeconfig").exists()
        assert _loose(state) == []
    finally:
        mode.stop()
        os.umask(old)
