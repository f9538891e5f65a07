#!/usr/bin/env bash
# The README's test command: install what the tests need, start services, run every test.
#   bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/services.sh
export COTK_REPRO_TEST_ARTIFACTS=${COTK_REPRO_TEST_ARTIFACTS:-$PWD/test-artifacts}
python3 -m pytest -p no:cacheprovider "$@"
