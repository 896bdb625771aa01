"""The plugin tutorial (docs/tutorial.md), step by step: the code is examples/tutorial/'s.

Installs the plugin into a throw-away environment, lists it, runs its own tests there
(they use sedna.testing), then runs a GM with it in embedded mode and sees it work.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import yaml
from support.venv import TempEnv

from sedna.runtime import EVENTS, KubeClient, api_client_from_config
from sedna.testing import poll

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "examples" / "tutorial"
PLUGIN = TUTORIAL / "model_check"
PAGE = ROOT / "docs" / "tutorial.md"


def test_the_tutorial_steps(tmp_path: Path) -> None:
    env = TempEnv(tmp_path / "venv")
    env.pip_install(PLUGIN)  # step: install

    listed = env.run("-m", "sedna.cli", "plugins")  # step: sedna-gm plugins
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert ["model_check", "sedna-gm-model-check", "0.1.0", "Model", "yes"] in rows
    assert ["Model", "model_check"] in rows

    tests = env.run("-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=PLUGIN)
    assert tests.returncode == 0, tests.stdout + tests.stderr  # step: its tests pass
    assert "2 passed" in tests.stdout

    state = tmp_path / "state"  # step: run the GM on the tutorial's gm.yaml, from its folder
    gm = subprocess.Popen(
        [str(env.python), "-m", "sedna.cli", "--config", "gm.yaml"],
        cwd=TUTORIAL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "SEDNA_GM_EMBEDDED_STATEDIR": str(state), "PYTHONPATH": ""},
    )
    try:
        kubeconfig = poll(
            lambda: (state / "kubeconfig").exists() and state / "kubeconfig",
            30.0,
            interval=0.1,
            failure="the embedded API server never wrote its kubeconfig",
        )
        events = KubeClient(api_client_from_config(str(kubeconfig), "")).resource(EVENTS)

        def verdicts() -> dict[str, tuple[str, str, str]]:
            return {
                e["involvedObject"]["name"]: (e["type"], e["reason"], e["message"])
                for e in events.list("default")["items"]
            }

        seen = poll(  # step: kubectl describe model shows the verdicts
            lambda: len(verdicts()) == 2 and verdicts(),
            30.0,
            interval=0.1,
            failure=lambda _: f"verdicts seen: {json.dumps(verdicts())}",
        )
    finally:
        gm.send_signal(signal.SIGTERM)
        log, _ = gm.communicate(timeout=30)
    assert gm.returncode == 0, log
    assert seen == {
        "helmet-detector": ("Normal", "ModelValid", "format pb is usable"),
        "old-detector": (
            "Warning",
            "SyncFailed",
            "handler check: spec.format: 'h5' is not one of pb, ckpt; not retried until the"
            " object changes",
        ),
    }
    assert "feature model_check (plugin model_check) ready" in log


def test_the_tutorial_page_works_from_the_authors_directory() -> None:
    """The page's commands run in the reader's own directory, laid out as examples/tutorial/
    is, and it shows every file that directory needs (none is left to the repository)."""
    page = PAGE.read_text()
    commands = "\n".join(re.findall(r"```bash\n(.*?)```", page, re.S))
    assert "sedna-gm --config gm.yaml" in commands
    assert "examples/" not in commands  # no path of a clone of the repository
    included = set(re.findall(r'--8<-- "examples/tutorial/([^"]+)"', page))
    config = yaml.safe_load((TUTORIAL / "gm.yaml").read_text())
    assert "gm.yaml" in included
    for folder in config["embedded"]["apply"]:
        files = sorted(p.relative_to(TUTORIAL).as_posix() for p in (TUTORIAL / folder).iterdir())
        assert files and set(files) <= included, (files, included)
    state = (TUTORIAL / config["embedded"]["stateDir"]).resolve()
    assert state.is_relative_to(TUTORIAL)  # next to gm.yaml, not somewhere in a clone


def test_the_tutorial_gm_runs_only_its_feature_beside_the_first_party_plugins() -> None:
    """Step 8 says "only this feature": a reader who installed the first-party plugins
    (getting started) must not get them enabled too, since an installed plugin is on
    unless gm.yaml switches it off."""
    listed = subprocess.run(
        [sys.executable, "-m", "sedna.cli", "plugins", "--config", str(TUTORIAL / "gm.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    table = listed.stdout.split("\n\n")[0].splitlines()[1:]  # the plugins, not the kinds
    assert len(table) >= 10, listed.stdout  # the ten first-party plugins are installed here
    enabled = [row.split()[0] for row in table if row.split()[-1] == "yes"]
    assert enabled in ([], ["model_check"]), listed.stdout
