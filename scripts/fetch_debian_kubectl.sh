#!/usr/bin/env bash
# Fetches Debian's kubectl (package kubernetes-client, v1.20 on bookworm) into
# .cache/kubectl-debian/ so tests/apiserver/test_kubectl.py also runs against an old
# client (it only speaks protobuf OpenAPI v2 and predates several API changes).
# Never fails its caller: when it cannot fetch, it says why and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."

DEST=.cache/kubectl-debian
BIN="$DEST/usr/bin/kubectl"

note() { echo "== fetch_debian_kubectl: $*"; }

if [ -x "$BIN" ]; then
    note "already present: $BIN"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
    note "no apt-get/dpkg here: tests run with the kubectl on PATH only"
    exit 0
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

download() { (cd "$TMP" && apt-get download -qq kubernetes-client >/dev/null 2>&1); }

if ! download; then
    if [ "$(id -u)" = 0 ]; then
        note "download failed, running apt-get update first"
        apt-get update -qq >/dev/null 2>&1 || true
        download || true
    fi
fi
DEB="$(ls "$TMP"/kubernetes-client_*.deb 2>/dev/null | head -n 1)"
if [ -z "$DEB" ]; then
    note "could not download kubernetes-client (no such package, or no network): skipped"
    exit 0
fi

mkdir -p "$DEST"
if ! dpkg -x "$DEB" "$DEST" || [ ! -x "$BIN" ]; then
    note "could not extract $DEB: skipped"
    exit 0
fi
note "$("$BIN" version --client 2>/dev/null | head -n 1) at $BIN"
exit 0
