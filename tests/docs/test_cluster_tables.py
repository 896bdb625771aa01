"""docs/cluster.md's tables say what the chart and the CRDs hold."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from sedna.embedded.crds import crd_manifests

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "docs" / "cluster.md"
VALUES = ROOT / "config" / "helm" / "sedna-gm" / "values.yaml"


def table(heading: str, first_header: str) -> list[list[str]]:
    """The rows (cells) of the first table under `heading`, whose first header is given."""
    section = CLUSTER.read_text().split(heading, 1)[1]
    lines = ("|" + section.split("\n|", 1)[1]).split("\n\n", 1)[0].splitlines()
    assert lines[0].split("|")[1].strip() == first_header
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines[2:]]


def test_the_printer_column_table_is_the_crds() -> None:
    documented: dict[str, tuple[list[str], list[str]]] = {}
    for kinds, short, columns in table("## CRDs", "kind"):
        names = [
            re.sub(r"\s*\(.*?\)", "", c).strip() for c in re.split(r",\s*(?![^()]*\))", columns)
        ]
        for kind, sn in zip(kinds.split(", "), short.split(", "), strict=True):
            documented[kind] = ([sn.strip("`")], names)
    actual = {
        c["spec"]["names"]["kind"]: (
            list(c["spec"]["names"].get("shortNames") or []),
            [col["name"] for col in c["spec"]["versions"][0]["additionalPrinterColumns"]],
        )
        for c in crd_manifests()
    }
    assert documented == actual


def leaves(data: Any, prefix: str = "") -> list[str]:
    if not isinstance(data, dict) or not data:
        return [prefix]
    out: list[str] = []
    for key, value in data.items():
        out += leaves(value, f"{prefix}.{key}" if prefix else str(key))
    return out


def test_the_helm_table_names_every_value() -> None:
    rows = table("## Helm values", "value")
    named = {
        token.removesuffix(".<name>").removesuffix(".*")
        for row in rows
        for token in re.findall(r"`([^`]+)`", row[0])
    }
    values = yaml.safe_load(VALUES.read_text())
    missing = [
        leaf
        for leaf in leaves(values)
        if not any(leaf == n or leaf.startswith(n + ".") for n in named)
    ]
    assert missing == []


def test_the_helm_table_says_which_features_the_chart_enables() -> None:
    features = yaml.safe_load(VALUES.read_text())["features"]
    (row,) = [r for r in table("## Helm values", "value") if r[0] == "`features.<name>`"]
    on = [name for name, section in features.items() if section.get("enabled", True)]
    assert len(on) == len(features) == 10 and row[1].startswith("all ten")
