"""A throw-away Python environment layered on the test suite's own, for installing plugins.

The new venv has no packages of its own; a .pth line adds the suite's site-packages
after its own (with their .pth files, so editable installs resolve), so pip, setuptools,
sedna-gm and pytest are all there offline, and whatever is installed into it stays
out of the suite's environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path


class TempEnv:
    def __init__(self, root: Path) -> None:
        self.root = root
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=60
        )
        self.python = root / "bin" / "python"
        own = Path(
            subprocess.run(
                [
                    str(self.python),
                    "-c",
                    "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
        )
        parent = sysconfig.get_paths()["purelib"]
        (own / "_parent_env.pth").write_text(f"import site; site.addsitedir({parent!r})\n")

    def run(
        self, *args: str, cwd: Path | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.root / 'bin'}:{env.get('PATH', '')}"
        return subprocess.run(
            [str(self.python), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=env,
        )

    def pip_install(self, path: Path) -> None:
        """Install a plugin from source, offline, with what the suite has installed.

        Built from a copy: setuptools writes build/ and egg-info next to the sources.
        """
        src = self.root.parent / f"{path.name}-src"
        shutil.copytree(path, src, ignore=shutil.ignore_patterns("build", "*.egg-info"))
        proc = self.run(
            "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
            str(src),
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
