"""`sedna-gm --config gm.yaml` runs, serves metrics and health, and stops on SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml


class GM:
    """`sedna-gm --config` as a subprocess, its merged output read by a thread.

    Every wait has a deadline: a GM that goes quiet fails the test with what it wrote
    (a blocking readline would hang until pytest's timeout, saying nothing).
    """

    def __init__(self, config: dict[str, Any], tmp_path: Path) -> None:
        path = tmp_path / "gm.yaml"
        path.write_text(yaml.safe_dump(config))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sedna.cli", "--config", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._eof = False
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._queue.put(line)
        self._queue.put(None)

    def _next(self, deadline: float) -> str | None:
        """The next line, None at the end of output; raises queue.Empty at the deadline."""
        if self._eof:
            return None
        line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
        if line is None:
            self._eof = True
        else:
            self.lines.append(line)
        return line

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def until(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        """The first line of output so far, or to come, that matches `pattern`."""
        for line in self.lines:
            if found := re.search(pattern, line):
                return found
        deadline = time.monotonic() + timeout
        try:
            while (line := self._next(deadline)) is not None:
                if found := re.search(pattern, line):
                    return found
        except queue.Empty:
            pass
        raise AssertionError(f"{pattern!r} not seen; output:\n{self.output}")

    def stopped(self, sig: signal.Signals, timeout: float = 30) -> int:
        """Send `sig`, wait for the exit and the end of output; return the exit code.

        A GM that does not stop fails with the stack of every thread (SIGUSR1, see the
        CLI), so a hang says where it is.
        """
        self.proc.send_signal(sig)
        deadline = time.monotonic() + timeout
        try:
            while self._next(deadline) is not None:
                pass
            return self.proc.wait(max(0.1, deadline - time.monotonic()))
        except (queue.Empty, subprocess.TimeoutExpired):
            self.proc.send_signal(signal.SIGUSR1)
            with contextlib.suppress(queue.Empty):
                while self._next(time.monotonic() + 2) is not None:
                    pass
            raise AssertionError(
                f"the GM did not stop within {timeout:g} s; output and thread stacks:\n"
                + self.output
            ) from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


METRICS_TOKEN = "cli-scrape-token"


def base_config(apiserver: Any, tmp_path: Path) -> dict[str, Any]:
    kubeconfig = tmp_path / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig)
    metrics_token = tmp_path / "metrics-token"
    metrics_token.write_text(METRICS_TOKEN + "\n")
    return {
        "kubeConfig": str(kubeconfig),
        # A namespace of its own: a GM with every feature on would otherwise reconcile
        # the jobs of tests running beside it on the shared server.
        "namespace": f"cli-{uuid.uuid4().hex[:10]}",
        "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
        "metrics": {"address": "127.0.0.1", "port": 0, "tokenFile": str(metrics_token)},
        "features": {"incremental_learning": {"enabled": False}},
    }


def test_runs_serves_health_and_stops_cleanly_on_sigterm(apiserver: Any, tmp_path: Path) -> None:
    config = base_config(apiserver, tmp_path)
    config["features"] = {}  # every installed feature runs
    gm = GM(config, tmp_path)
    try:
        port = int(gm.until(r"serving /metrics.* on 127\.0\.0\.1:(\d+)")[1])
        gm.until(r"sedna-gm started")
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
            assert r.status == 200
        with urllib.request.urlopen(base + "/readyz", timeout=5) as r:
            body = r.read().decode()
        assert "[+]informer-sync ok" in body
        assert "[+]websocket ok" in body
        scrape = urllib.request.Request(
            base + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
        with urllib.request.urlopen(scrape, timeout=5) as r:
            metrics = r.read().decode()
        assert "lc_connected_nodes" in metrics
        # The features' controllers report on the GM's registry under controller-runtime's names.
        assert 'workqueue_depth{name="IncrementalLearningJob"}' in metrics
        assert "workqueue_adds_total" in metrics
        assert "# TYPE controller_reconcile_time_seconds histogram" in metrics
        code = gm.stopped(signal.SIGTERM)
    finally:
        gm.kill()
    assert code == 0, gm.output
    assert "received SIGTERM, stopping" in gm.output
    assert "Traceback" not in gm.output


def test_sigusr1_dumps_every_thread_and_the_gm_goes_on(apiserver: Any, tmp_path: Path) -> None:
    gm = GM(base_config(apiserver, tmp_path), tmp_path)
    try:
        gm.until(r"sedna-gm started")
        gm.proc.send_signal(signal.SIGUSR1)
        gm.until(r"^Current thread 0x")
        gm.until(r'File ".*informer\.py", line \d+ in ')  # the informers' threads too
        code = gm.stopped(signal.SIGTERM)
    finally:
        gm.kill()
    assert code == 0, gm.output
    assert "received SIGTERM, stopping" in gm.output


def test_sigint_also_exits_zero_and_json_logs_are_one_object_per_line(
    apiserver: Any, tmp_path: Path
) -> None:
    config = base_config(apiserver, tmp_path)
    config["logging"] = {"format": "json", "level": "DEBUG"}
    gm = GM(config, tmp_path)
    try:
        gm.until(r"sedna-gm started")
        code = gm.stopped(signal.SIGINT)
    finally:
        gm.kill()
    assert code == 0, gm.output
    bad = [x for x in gm.lines if x.strip() and not x.startswith("{")]
    assert not bad, "\n".join(bad)
    records = [json.loads(line) for line in gm.lines if line.strip()]
    assert {"time", "level", "message"} <= set(records[0])
    assert any(r["message"] == "received SIGINT, stopping" for r in records)
    # Libraries' standard-logging records (websockets, asyncio at DEBUG) arrive as JSON too.
    libraries = ("websockets", "asyncio", "urllib3", "kubernetes")
    assert any(r["logger"].startswith(libraries) for r in records), {r["logger"] for r in records}


def test_without_embedded_nothing_of_it_is_imported(apiserver: Any, tmp_path: Path) -> None:
    """The GM's own modules never pull in the in-process API server or the stand-ins."""
    config = base_config(apiserver, tmp_path)
    config["features"] = {}  # every installed feature on
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(config))
    probe = (
        "import sys, threading\n"
        "from sedna.runtime.config import load_config\n"
        "from sedna.manager import Manager\n"
        f"m = Manager(load_config({str(path)!r}))\n"
        "m.start(); m.stop()\n"
        "loaded = sorted(n for n in sys.modules if n.startswith('sedna.embedded'))\n"
        "print('EMBEDDED:', loaded)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "EMBEDDED: []" in proc.stdout


def test_no_cluster_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "gm.yaml"
    path.write_text("metrics:\n  enabled: false\n")  # no kubeConfig, no master
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update(HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "none"))
    proc = subprocess.run(
        [sys.executable, "-m", "sedna.cli", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("sedna-gm: ")]
    assert errors == [
        "sedna-gm: cannot configure the Kubernetes client: no kubeConfig or master configured, "
        "in-cluster config failed (Service host/port is not set.) and the default kubeconfig "
        "failed (Invalid kube-config file. No configuration found.)"
    ]


def test_a_start_that_fails_leaves_the_collector_on_and_the_switch_interval_as_it_was(
    tmp_path: Path,
) -> None:
    """The run command keeps automatic collections off on the way to ready (sedna.heap)
    and switches threads more often (cli.STARTUP_SWITCH_INTERVAL); a start that fails
    (here: no cluster) must undo both for whoever called `main` in its own process."""
    path = tmp_path / "gm.yaml"
    path.write_text("metrics:\n  enabled: false\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update(HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "none"))
    probe = (
        "import gc, sys\n"
        "import sedna.manager\n"
        "seen = []\n"
        "start = sedna.manager.Manager.start\n"
        "def starting(self):\n"
        "    seen.append((sys.getswitchinterval(), gc.isenabled()))\n"
        "    return start(self)\n"
        "sedna.manager.Manager.start = starting\n"
        "from sedna.cli import main\n"
        "sys.setswitchinterval(0.004)\n"
        f"code = main(['--config', {str(path)!r}])\n"
        "print('EXIT', code, 'COLLECTOR', gc.isenabled(), 'SWITCH', sys.getswitchinterval())\n"
        "print('STARTING', seen)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env
    )
    assert "EXIT 2 COLLECTOR True SWITCH 0.004" in proc.stdout, proc.stdout + proc.stderr
    assert "STARTING [(0.001, False)]" in proc.stdout  # what the start ran with


@pytest.mark.parametrize(
    ("manifest", "error"),
    [
        (None, r"missing\.yaml: no such file or directory"),
        (  # refused by the server's schema: the official client's 422, over real HTTP
            {
                "apiVersion": "sedna.io/v1alpha1",
                "kind": "Model",
                "metadata": {"name": "m"},
                "spec": {"format": 3},
            },
            r"Model m: 422 Invalid: .*spec\.format",
        ),
    ],
    ids=["missing", "refused"],
)
def test_apiserver_apply_errors_are_one_line_and_exit_2(
    manifest: dict[str, Any] | None, error: str, tmp_path: Path
) -> None:
    """`sedna-gm apiserver --apply PATH` with a wrong PATH says so, as a bad gm.yaml does."""
    path = tmp_path / ("missing.yaml" if manifest is None else "manifest.yaml")
    if manifest is not None:
        path.write_text(yaml.safe_dump(manifest))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sedna.cli",
            "apiserver",
            "--port",
            "0",
            "--kubeconfig",
            str(tmp_path / "kubeconfig"),
            "--apply",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("sedna-gm: apiserver: --apply: "), lines
    assert re.search(error, lines[0]), lines[0]


def test_apiserver_tells_a_busy_port_from_a_path_it_cannot_write(tmp_path: Path) -> None:
    """Only a bind failure is "cannot listen"; an unwritable --state-dir names the path."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    def apiserver(*extra: str) -> subprocess.CompletedProcess[str]:
        kubeconfig = str(tmp_path / "kubeconfig")
        return subprocess.run(
            [sys.executable, "-m", "sedna.cli", "apiserver", "--kubeconfig", kubeconfig, *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy = apiserver("--port", str(sock.getsockname()[1]))
    unwritable = apiserver("--port", "0", "--state-dir", str(blocker / "state"))
    for proc in (busy, unwritable):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert busy.stderr.startswith("sedna-gm: apiserver: cannot listen on 127.0.0.1:")
    assert "cannot listen" not in unwritable.stderr, unwritable.stderr
    assert str(blocker) in unwritable.stderr, unwritable.stderr


def run_cli_script(script: str, apiserver: Any, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`python -c script gm.yaml`: the GM's CLI with what `script` arranges around it."""
    path = tmp_path / "gm.yaml"
    path.write_text(yaml.safe_dump(base_config(apiserver, tmp_path)))
    return subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=30
    )


# Run as `python -c`: the GM's CLI in the main thread, and a thread that, once the GM
# is started and the main thread waits, takes the SIGTERM itself (`pthread_kill` of its
# own thread). The kernel does that too when the main thread is not where it can take
# a signal at the instant it comes (as right after a SIGUSR1 dump): the handler is then
# due in the main thread, but nothing wakes the main thread to run it.
_SIGNAL_ON_ANOTHER_THREAD = """
import signal, sys, threading, time
import sedna.manager
from sedna.cli import main

started = threading.Event()
activate = sedna.manager.Manager._activate

def _activate(self):
    activate(self)
    started.set()

sedna.manager.Manager._activate = _activate

def sigterm_here():
    started.wait()
    time.sleep(0.5)  # the main thread is in Manager.run's wait by now
    signal.pthread_kill(threading.get_ident(), signal.SIGTERM)

threading.Thread(target=sigterm_here, daemon=True).start()
sys.exit(main(["--config", sys.argv[1]]))
"""


def test_a_stop_signal_taken_by_another_thread_still_stops_the_gm(
    apiserver: Any, tmp_path: Path
) -> None:
    """The main thread waits for the stop in a way that also sees a signal whose wake-up
    it missed (an untimed wait slept on: the GM never stopped)."""
    proc = run_cli_script(_SIGNAL_ON_ANOTHER_THREAD, apiserver, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "received SIGTERM, stopping" in proc.stderr
    assert "sedna-gm stopped" in proc.stderr


_STOP_THAT_HANGS = """
import os, signal, sys, threading, time
import sedna.cli
import sedna.manager
from sedna.cli import main

sedna.cli.STOP_DEADLINE_SECONDS = 1.0
activate = sedna.manager.Manager._activate
stop = sedna.manager.Manager.stop

def _activate(self):
    activate(self)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()

def stuck_in_stop(self):
    time.sleep(3600)  # a part that never stops

sedna.manager.Manager._activate = _activate
sedna.manager.Manager.stop = stuck_in_stop
sys.exit(main(["--config", sys.argv[1]]))
"""


def test_a_stop_that_hangs_ends_at_the_deadline_with_every_thread_s_stack(
    apiserver: Any, tmp_path: Path
) -> None:
    proc = run_cli_script(_STOP_THAT_HANGS, apiserver, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "received SIGTERM, stopping" in proc.stderr
    assert "in stuck_in_stop" in proc.stderr  # the stack says where it hung
    assert "sedna-gm stopped" not in proc.stderr


def test_a_stop_while_the_api_server_is_unreachable_exits_zero_at_once(tmp_path: Path) -> None:
    """SIGINT while the caches wait for an API server that is down: the wait ends (it
    would last `cacheSyncTimeout`), the exit is clean, and urllib3's per-retry lines stay
    out of the log (the informer's own line says what failed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "down",
                        "cluster": {
                            "server": f"https://127.0.0.1:{port}",
                            "insecure-skip-tls-verify": True,
                        },
                    }
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "down", "user": "u"}}],
                "current-context": "c",
            }
        )
    )
    config = {
        "kubeConfig": str(kubeconfig),
        "websocket": {"address": "127.0.0.1", "port": 0, "auth": "none"},
        "metrics": {"address": "127.0.0.1", "port": 0, "auth": "none"},
    }
    gm = GM(config, tmp_path)
    try:
        gm.until(r"list/watch failed")
        code = gm.stopped(signal.SIGINT, timeout=20)
    finally:
        gm.kill()
    assert code == 0, gm.output
    assert "received SIGINT, stopping" in gm.output
    assert "did not sync" not in gm.output
    assert "Retrying (" not in gm.output
