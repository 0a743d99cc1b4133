#!/usr/bin/env bash
# The property tests at length: incremental == full (the whole JSON report, restarts and
# growing probe sets included) and the reference memory serving only current facts, each on
# PROPERTY_EXAMPLES random timelines (default here 20,000; the test command uses
# 2,000 each).
#
#   scripts/property-run.sh
#   PROPERTY_EXAMPLES=100000 scripts/property-run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPERTY_EXAMPLES="${PROPERTY_EXAMPLES:-20000}"
exec .venv/bin/python -m pytest -q -p no:cacheprovider --hypothesis-show-statistics \
  tests/test_incremental_property.py tests/test_reference_property.py "$@"
