"""Token providers and the constant-time check."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest

from sedna.runtime.config import ConfigError
from sedna.runtime.messaging import (
    bearer_token,
    file_token_provider,
    secret_token_provider,
    token_valid,
)


def test_bearer_token_parsing() -> None:
    assert bearer_token("Bearer abc") == "abc"
    assert bearer_token("bearer   abc ") == "abc"
    assert bearer_token("Basic abc") is None
    assert bearer_token("Bearer ") is None
    assert bearer_token(None) is None


def test_token_valid() -> None:
    assert token_valid("a", {"b", "a"})
    assert not token_valid("a", {"ab"})
    assert not token_valid("a", set())
    assert not token_valid(None, {"a"})


def test_file_provider_rereads_when_the_file_changes(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one\n")
    provide = file_token_provider(path)
    assert provide() == {"one"}
    path.write_text("one\ntwo\n\n")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert provide() == {"one", "two"}
    path.unlink()
    assert provide() == frozenset()
    path.write_text("three")
    assert provide() == {"three"}


def test_secret_provider(tmp_path: Path) -> None:
    secrets: dict[tuple[str, str], dict[str, Any]] = {}
    provide = secret_token_provider(lambda ns, name: secrets.get((ns, name)), "sedna/lc-token")
    assert provide() == frozenset()
    secrets["sedna", "lc-token"] = {"data": {"token": base64.b64encode(b"s3cret\n").decode()}}
    assert provide() == {"s3cret"}
    secrets["sedna", "lc-token"] = {"stringData": {"token": "plain"}}
    assert provide() == {"plain"}
    secrets["sedna", "lc-token"] = {"data": {"token": "%%%"}}
    assert provide() == frozenset()
    secrets["sedna", "lc-token"] = {"data": {"other": "eA=="}}
    assert provide() == frozenset()


def test_secret_ref_must_be_namespace_slash_name() -> None:
    for ref in ("name", "a/b/c", "/b", "a/"):
        with pytest.raises(ConfigError, match="tokenSecret"):
            secret_token_provider(lambda ns, name: None, ref)
