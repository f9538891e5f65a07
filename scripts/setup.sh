#!/usr/bin/env bash
# Install everything cotk-repro and its tests need on a fresh Debian machine (idempotent).
# Debian packages (docker.io, postgresql, chromium, debootstrap, git) only when run as root
# and missing; Python packages with pip into the current Python.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  need=()
  command -v git >/dev/null || need+=(git)
  command -v dockerd >/dev/null || need+=(docker.io)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  command -v chromium >/dev/null || need+=(chromium)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v ip >/dev/null || need+=(iproute2)
  if [ ${#need[@]} -gt 0 ]; then
    echo "apt-get install ${need[*]}"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/tmp/cotk-repro-apt.log 2>&1 \
      || { tail -30 /tmp/cotk-repro-apt.log >&2; exit 2; }
  fi
fi

"$PY" -m pip install -q --disable-pip-version-check -e ".[postgres,compare,test]"
for plugin in plugins/*/; do
  [ -f "$plugin/pyproject.toml" ] && "$PY" -m pip install -q --disable-pip-version-check -e "$plugin"
done
echo "setup done"
