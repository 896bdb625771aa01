"""MkDocs hooks: every page under docs/ is in the navigation, and the API reference lists
every name `sedna.runtime` exports.

Feature pages (docs/<feature>.md) come with the plugins; `on_config` adds each page the
nav in mkdocs.yml does not list under "Features", so a new page never builds
unreachable. The reference page is generated from the export table itself, so a new
public name is documented the moment it is exported.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def _listed(nav: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(nav, str):
        out.add(nav)
    elif isinstance(nav, list):
        for item in nav:
            out |= _listed(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            out |= _listed(value)
    return out


def on_config(config: Any) -> Any:
    docs = Path(config["docs_dir"])
    listed = _listed(config["nav"])
    extra = sorted(
        p.relative_to(docs).as_posix()
        for p in docs.rglob("*.md")
        if p.relative_to(docs).as_posix() not in listed
    )
    if extra:
        pages = [{_title(docs / rel): rel} for rel in extra]
        config["nav"].insert(len(config["nav"]) - 1, {"Features": pages})
    return config


def _title(path: Path) -> str:
    """The page's heading as a nav label: plain text, since MkDocs shows a label verbatim
    (a heading's `code` would keep its backticks)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return re.sub(r"`([^`]*)`", r"\1", line[2:].strip())
    return path.stem.replace("-", " ").replace("_", " ").capitalize()


# -- the API reference, generated from sedna.runtime's export table -------------------

EXPORTS_MARKER = "<!-- sedna.runtime exports -->"
_GROUP_TITLES = {
    "plugin API": "Declaring a feature",
    "embedding: chosen features on the runtime": "Embedding",
    "config": "Configuration",
    "clock": "Clocks",
    "kube access": "API access",
    "informers": "Informers and listers",
    "workqueue and controllers": "Workqueue and controllers",
    "declarative features": "Declarative features",
    "workers": "Worker pods",
    "messaging": "Edge messaging",
    "events, metrics": "Events, leader election, metrics",
}


def export_groups(init_source: str) -> list[tuple[str, list[str]]]:
    """(comment, names) of `_EXPORTS` in sedna/runtime/__init__.py, in source order."""
    body = init_source[init_source.index("_EXPORTS") :]
    body = body[: body.index("\n}\n")]
    groups: list[tuple[str, list[str]]] = [("more", [])]
    for line in body.splitlines():
        comment = re.match(r"\s*# (.*)", line)
        if comment:
            groups.append((comment.group(1), []))
            continue
        entry = re.match(r'\s*"(\w+)": "[\w.]+",', line)
        if entry:
            groups[-1][1].append(entry.group(1))
    return [(title, names) for title, names in groups if names]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if EXPORTS_MARKER not in markdown:
        return markdown
    init = Path(config["config_file_path"]).parent / "sedna" / "runtime" / "__init__.py"
    out: list[str] = []
    for title, names in export_groups(init.read_text(encoding="utf-8")):
        out += [f"## {_GROUP_TITLES.get(title, title.capitalize())}", ""]
        for name in names:
            out += [f"::: sedna.runtime.{name}", ""]
    return markdown.replace(EXPORTS_MARKER, "\n".join(out))
