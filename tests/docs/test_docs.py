"""The documentation site builds with `mkdocs build --strict`, offline, and stays complete."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import sedna.runtime

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reference = (tmp_path / "reference" / "runtime" / "index.html").read_text()
    assert "Raise from <code>sync</code> for a failure that will pass" in reference
    assert reference.count('class="doc doc-heading"') >= len(sedna.runtime.__all__)
    tutorial = (tmp_path / "tutorial" / "index.html").read_text()
    assert "Runs for the current version of each Model" in tutorial  # the included code
    cluster = text_of(tmp_path / "cluster" / "index.html")
    for command in ("docker build", "helm install sedna-gm", "--server-side", "token create"):
        assert command in cluster, command
    embedding = text_of(tmp_path / "embedding" / "index.html")
    assert "kubectl apply" in embedding  # without a Model the manager sends nothing
    assert "cat messages.jsonl" in embedding
    assert "--8<--" not in embedding and "[start:commands]" not in embedding


def text_of(page: Path) -> str:
    """A built page's text, without the highlighter's markup."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_the_reference_lists_every_public_name() -> None:
    init = (ROOT / "sedna" / "runtime" / "__init__.py").read_text()
    groups = load_nav_hook().export_groups(init)
    listed = [name for _, names in groups for name in names]
    assert sorted(listed) == sorted(sedna.runtime.__all__)
    assert groups[0] == ("plugin API", listed[: len(groups[0][1])])


def load_nav_hook() -> Any:
    spec = importlib.util.spec_from_file_location("mkdocs_nav", ROOT / "scripts/mkdocs_nav.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_page_the_nav_does_not_list_is_added_under_features(tmp_path: Path) -> None:
    (tmp_path / "index.md").write_text("# Home\n")
    (tmp_path / "reid.md").write_text("# Re-identification\n\ntext\n")
    nav = [{"Home": "index.md"}, {"API reference": "reference.md"}]
    config = load_nav_hook().on_config({"docs_dir": str(tmp_path), "nav": nav})
    assert config["nav"] == [
        {"Home": "index.md"},
        {"Features": [{"Re-identification": "reid.md"}]},
        {"API reference": "reference.md"},
    ]


def test_nav_labels_are_plain_text(tmp_path: Path) -> None:
    """MkDocs shows a label verbatim: a heading's `code` must not bring its backticks."""
    (tmp_path / "index.md").write_text("# Home\n")
    (tmp_path / "reid.md").write_text("# Re-identification (`reid`)\n")
    config = load_nav_hook().on_config({"docs_dir": str(tmp_path), "nav": []})
    assert config["nav"] == [
        {"Features": [{"Home": "index.md"}, {"Re-identification (reid)": "reid.md"}]}
    ]
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    site = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    nav = load_nav_hook().on_config({"docs_dir": str(DOCS), "nav": site["nav"]})["nav"]

    def labels(item: Any) -> list[str]:
        if isinstance(item, list):
            return [label for each in item for label in labels(each)]
        if isinstance(item, dict):
            return [*item, *labels(list(item.values()))]
        return []

    assert [label for label in labels(nav) if "`" in label] == []


def test_docs_speak_to_users_only() -> None:
    assert not (DOCS / "contracts.md").exists()
    for path in [*DOCS.rglob("*.md"), ROOT / "CONTRIBUTING.md", ROOT / "mkdocs.yml"]:
        text = path.read_text()
        # no path of the machine that built them (the checkout's parent folder)
        assert str(ROOT.parent) + "/" not in text, path
