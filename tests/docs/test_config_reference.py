"""Every gm.yaml key is in the configuration reference (docs/reference/config.md)."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import yaml
from pydantic import BaseModel

from sedna.runtime.config import FeatureConfig, GMConfig

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "config.md"


def config_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """The dotted key of every leaf of the model; a map of sections is `<name>`."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            keys += config_keys(ann, path + ".")
        elif typing.get_origin(ann) is dict:
            value = typing.get_args(ann)[1]
            assert value is FeatureConfig, f"{path}: a map of {value} is not covered here"
            keys += config_keys(value, path + ".<name>.")
        else:
            keys.append(path)
    return keys


def documented_keys() -> set[str]:
    """The keys of the reference's tables: the first cell of each row, in backquotes."""
    return set(re.findall(r"^\| `([^`]+)` \|", REFERENCE.read_text(), re.M))


def test_the_walk_sees_the_keys_operators_ask_about() -> None:
    keys = config_keys(GMConfig)
    for key in (
        "websocket.updatesAsInsert",
        "websocket.maxUnroutedReportsPerNode",
        "websocket.tls.clientCAFile",
        "embedded.simulate.nodes",
        "embedded.simulate.podStartSeconds",
        "embedded.simulate.podRunSeconds",
        "features.<name>.enabled",
        "features.<name>.workers",
    ):
        assert key in keys


def test_every_config_key_is_documented() -> None:
    missing = [k for k in config_keys(GMConfig) if k not in documented_keys()]
    assert not missing, f"not in {REFERENCE.name}: {missing}"


def test_the_reference_documents_no_key_gm_yaml_refuses() -> None:
    known = set(config_keys(GMConfig)) | {"features.<name>.<option>"}
    assert sorted(documented_keys() - known) == []


def default_of(key: str) -> object:
    parts = key.split(".")
    if parts[0] == "features":
        return FeatureConfig.model_fields[parts[2]].get_default(call_default_factory=True)
    model: type[BaseModel] = GMConfig
    for part in parts[:-1]:
        ann = model.model_fields[part].annotation
        assert isinstance(ann, type) and issubclass(ann, BaseModel)
        model = ann
    return model.model_fields[parts[-1]].get_default(call_default_factory=True)


def test_the_documented_defaults_are_the_models() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]*)` \|", REFERENCE.read_text(), re.M)
    assert len(rows) == len(config_keys(GMConfig))
    for key, cell in rows:
        assert yaml.safe_load(cell) == default_of(key), key
