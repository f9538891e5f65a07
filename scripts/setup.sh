#!/usr/bin/env bash
# Install everything cotk-repro and its tests need on a fresh Debian machine (idempotent).
# Debian packages only when run as root and missing; Python packages with pip into the current Python:
#   1. requirements/test.lock: every third-party package, pinned and hash-checked (refresh: scripts/lock.sh)
#   2. requirements/torch.txt: the exact CPU torch, never a plain `torch` (a 3 GB CUDA build from PyPI)
#   3. the core and each first-party plugin under plugins/, editable, without resolving anything more
# On another interpreter than the lock's (CPython 3.11, Linux x86_64) it warns and resolves from the ranges.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOCK=requirements/test.lock

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  need=()
  command -v git >/dev/null || need+=(git)
  command -v dockerd >/dev/null || need+=(docker.io)
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
  command -v chromium >/dev/null || need+=(chromium)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v ip >/dev/null || need+=(iproute2)
  [ -d /usr/share/wordnet ] || need+=(wordnet-base)  # WordNet 3.0 for METEOR and the LM plugin's synonyms
  [ -f /usr/share/wordnet/index.sense ] || need+=(wordnet-sense-index)  # its sense index (NLTK's reader wants it)
  lean=()  # installed without Debian's recommended packages (TeX's recommends are hundreds of MB of fonts and docs)
  command -v pdflatex >/dev/null || lean+=(texlive-latex-recommended)  # compare's report.tex is compiled in the tests
  if [ ${#need[@]} -gt 0 ]; then
    echo "apt-get install ${need[*]}"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/tmp/cotk-repro-apt.log 2>&1 \
      || { tail -30 /tmp/cotk-repro-apt.log >&2; exit 2; }
  fi
  if [ ${#lean[@]} -gt 0 ]; then
    echo "apt-get install --no-install-recommends ${lean[*]}"
    [ ${#need[@]} -gt 0 ] || apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${lean[@]}" \
      >/tmp/cotk-repro-apt.log 2>&1 || { tail -30 /tmp/cotk-repro-apt.log >&2; exit 2; }
  fi
fi

# First-party plugins: every plugins/*/ with a pyproject.toml, except the example plugin, whose toy
# components would show up in every `cotk-repro metrics` list (tests/test_plugins.py installs it into a
# throw-away venv of its own).
plugins=()
for plugin in plugins/*/; do
  case "$plugin" in */cotk-repro-example/) continue ;; esac
  [ -f "$plugin/pyproject.toml" ] && plugins+=("${plugin%/}")
done

if "$PY" -c 'import sys, sysconfig, os; sys.exit(not (sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))))' \
   && [ -z "${PIP_BREAK_SYSTEM_PACKAGES:-}" ]; then
  echo "error: $PY belongs to the system's package manager (PEP 668); run in a virtual environment (python3 -m venv .venv && . .venv/bin/activate) or set PIP_BREAK_SYSTEM_PACKAGES=1" >&2
  exit 2
fi

torch=()  # the CPU torch, only when a plugin needs torch
grep -qsE '^[[:space:]]*"torch[^a-z_-]' "${plugins[@]/%//pyproject.toml}" /dev/null && torch=(-r requirements/torch.txt)
names=cotk-repro
for plugin in "${plugins[@]}"; do names+="|${plugin##*/}"; done

PIP=("$PY" -m pip install -q --disable-pip-version-check)
if "$PY" -c 'import platform, sys; sys.exit(not (sys.version_info[:2] == (3, 11) and sys.platform == "linux" and platform.machine() == "x86_64"))'; then
  "${PIP[@]}" --require-hashes --no-deps -r "$LOCK"
  [ ${#torch[@]} -eq 0 ] || "${PIP[@]}" --no-deps "${torch[@]}"
  "${PIP[@]}" --no-deps -e . "${plugins[@]/#/-e}"
  # the lock must cover every requirement of what was just installed (else: bash scripts/lock.sh)
  broken=$("$PY" -m pip check 2>&1 | grep -iE "^($names) " || true)
  if [ -n "$broken" ]; then
    echo "$broken" >&2
    echo "error: $LOCK does not cover these requirements; run bash scripts/lock.sh and commit the lock" >&2
    exit 2
  fi
else
  echo "WARNING: $LOCK is for CPython 3.11 on Linux x86_64; this is $("$PY" -c 'import platform; print(platform.python_implementation(), platform.python_version(), platform.system(), platform.machine())'): resolving from pyproject.toml's ranges" >&2
  [ ${#torch[@]} -eq 0 ] || "${PIP[@]}" "${torch[@]}"
  "${PIP[@]}" -c requirements/torch.txt -e ".[postgres,compare,test]" "${plugins[@]/#/-e}"
fi
# CoTK 0.1.0 in a venv of its own (the compat tests cross-check against it; benchmarks compare with it)
COTK_VENV=${COTK_REPRO_COTK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cotk-repro/bench-cotk-venv}
if [ ! -x "$COTK_VENV/bin/python" ] || ! "$COTK_VENV/bin/python" -c 'import cotk' 2>/dev/null; then
  echo "CoTK 0.1.0 into $COTK_VENV (the peer of the compat tests)"
  { "$PY" -m venv "$COTK_VENV" && "$COTK_VENV/bin/python" -m pip install -q --disable-pip-version-check "cotk==0.1.0"; } \
    || echo "WARNING: could not install CoTK 0.1.0; the CoTK cross-check tests will skip" >&2
fi
echo "setup done"
