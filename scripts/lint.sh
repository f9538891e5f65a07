#!/usr/bin/env bash
# Lint and types ([tool.ruff] and [tool.mypy] in pyproject.toml):
#   bash scripts/lint.sh           fix what ruff fixes safely (imports, pyupgrade, unused noqa), format, then check
#   bash scripts/lint.sh --check   check only, change nothing (what .ci/run runs): ruff check, ruff format --check, mypy
# Exit status: the first failing step's; every step runs, so one run reports all three.
set -uo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && check=1
status=0
step() { "$@" || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }; }
if [ "$check" -eq 0 ]; then
  python3 -m ruff check --fix --quiet . || true  # safe fixes only; what remains is reported below
  python3 -m ruff format --quiet .
fi
step python3 -m ruff check .
step python3 -m ruff format --check .
step python3 -m mypy  # files, strictness and per-package settings: [tool.mypy] in pyproject.toml
exit "$status"
