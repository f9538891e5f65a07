#!/usr/bin/env bash
# The README's test command: install what the tests need, start services, run every test.
#   bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the same condition setup.sh installs the lock under: then tests/test_environment.py checks every version
python3 -c 'import platform, sys; sys.exit(not (sys.version_info[:2] == (3, 11) and sys.platform == "linux" and platform.machine() == "x86_64"))' \
  && export COTK_REPRO_LOCKED=1
source scripts/services.sh
export COTK_REPRO_TEST_ARTIFACTS=${COTK_REPRO_TEST_ARTIFACTS:-$PWD/test-artifacts}
python3 -m pytest -p no:cacheprovider "$@"
