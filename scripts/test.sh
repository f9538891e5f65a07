#!/usr/bin/env bash
# The README's test command: install what the tests need, start services, run every test.
#   bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
# COTK_REPRO_STAGE_TIMES=FILE: each stage's wall time is appended there (.ci/run prints them last)
_stage() { [ -z "${COTK_REPRO_STAGE_TIMES:-}" ] || echo "$1 $(( SECONDS - _t0 )) s" >> "$COTK_REPRO_STAGE_TIMES"; _t0=$SECONDS; }
_t0=$SECONDS
bash scripts/setup.sh
_stage setup
# the same condition setup.sh installs the lock under: then tests/test_environment.py checks every version
python3 -c 'import platform, sys; sys.exit(not (sys.version_info[:2] == (3, 11) and sys.platform == "linux" and platform.machine() == "x86_64"))' \
  && export COTK_REPRO_LOCKED=1
source scripts/services.sh
_stage services
export COTK_REPRO_TEST_ARTIFACTS=${COTK_REPRO_TEST_ARTIFACTS:-$PWD/test-artifacts}
# on COTK_REPRO_TEST_WORKERS pytest-xdist workers (default: twice the cores, at least 2, at most 16): most tests
# wait on processes, servers, the Docker engine, git and timeouts more than they use a core (each test's CPU
# seconds are in test-artifacts/durations.json beside its seconds), so two workers a core keep both cores busy (4
# workers against 2 on a CLI-heavy set of files: the same CPU, 20% less wall). Tests that share one thing (a
# module's fixture, a Docker module's images) are grouped or locked (tests/conftest.py), which also orders the work
# longest first from the last full run's times (--no-loadscope-reorder: xdist would otherwise put the groups with
# the most tests first, whatever their time); `-n 0` (or -p no:xdist) runs in one process.
workers=()
case " $* " in
  *" -n "*|*" -n0 "*|*" --numprocesses"*|*" -p no:xdist "*) ;;
  *) python3 -c 'import xdist' 2>/dev/null \
       && workers=(-n "${COTK_REPRO_TEST_WORKERS:-$(python3 -c 'import os; print(min(16, max(2, 2 * len(os.sched_getaffinity(0)))))')}" --dist loadgroup --no-loadscope-reorder) ;;
esac
# every test's time goes to $COTK_REPRO_TEST_ARTIFACTS/durations.json; the 25 slowest are printed at the end
rc=0
python3 -m pytest -p no:cacheprovider "${workers[@]}" "$@" || rc=$?
_stage suite
exit "$rc"
