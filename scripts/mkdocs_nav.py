"""MkDocs hook: every page under docs/ is in the navigation, listed or not.

Feature pages (docs/<feature>.md) come with the plugins; this adds each page the nav in
mkdocs.yml does not list under "Features", so a new page never builds unreachable.
"""

from __future__ import annotations

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
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").replace("_", " ").capitalize()
