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
say() { echo "setup: $*"; }
# uv installs what pip takes minutes over (hundreds of wheels, downloaded in parallel) in well under one: uv
# itself comes hash-checked from the lock, then installs the rest. Into this interpreter's environment (a venv,
# or outside one a Python that is not the system's: see the PEP 668 check above).
uv_args=(--python "$PY")
[ -z "${PIP_BREAK_SYSTEM_PACKAGES:-}" ] || uv_args+=(--break-system-packages)
pip_links=()  # pip's find-links (PIP_FIND_LINKS or pip config: where a CPU torch wheel may lie), for uv too
for link in ${PIP_FIND_LINKS:-$("$PY" -m pip config get global.find-links 2>/dev/null || true)}; do
  pip_links+=(--find-links "$link")
done
UV=("$PY" -m uv)
install_uv() {
  "$PY" -m uv --version >/dev/null 2>&1 && return 0
  local req
  req=$(mktemp)
  awk '/^uv==/{p=1} p{print} p && !/\\$/{exit}' "$LOCK" > "$req"
  say "uv from $LOCK ($(head -1 "$req" | tr -d ' \\'))"
  "${PIP[@]}" --require-hashes --no-deps -r "$req"
  rm -f "$req"
}

# torch: only the CPU build, never PyPI's multi-GB CUDA one unasked. It is taken from pip's find-links (here a
# local wheel) or from an index the user named (PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu);
# where neither has it for this Python, setup says so, leaves torch out, and the tests that need it skip.
torch_version=$(grep -E '^torch==' requirements/torch.txt | head -1 | cut -d= -f3)
have_torch=0
install_torch() {
  [ ${#torch[@]} -gt 0 ] || return 0
  if "$PY" -c "import sys, torch; sys.exit(torch.__version__.split('+')[0] != '$torch_version')" 2>/dev/null; then
    have_torch=1; return 0
  fi
  say "torch $torch_version (the CPU build)"
  # uv where it is there (pip byte-compiles torch's thousands of files: minutes), only from the local find-links
  local torch_pip=("${PIP[@]}")
  "$PY" -m uv --version >/dev/null 2>&1 && torch_pip=("$PY" -m uv pip install -q "${uv_args[@]}")
  if [ ${#pip_links[@]} -gt 0 ] && "${torch_pip[@]}" --no-deps --no-index "${pip_links[@]}" "torch==$torch_version" 2>/dev/null; then
    have_torch=1
  elif [[ "${PIP_EXTRA_INDEX_URL:-}${PIP_INDEX_URL:-}" == *download.pytorch.org/whl/cpu* ]]; then
    "${PIP[@]}" --no-deps "${torch[@]}" && have_torch=1
  else
    echo "WARNING: no CPU build of torch $torch_version for $("$PY" -c 'import platform; print("Python", platform.python_version())') in pip's find-links, and no CPU index named; torch is not installed (never PyPI's CUDA build) and the tests that need it skip. PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/test.sh installs it." >&2
  fi
}

if "$PY" -c 'import platform, sys; sys.exit(not (sys.version_info[:2] == (3, 11) and sys.platform == "linux" and platform.machine() == "x86_64"))'; then
  install_uv
  say "the locked packages ($(grep -c '^[a-z0-9]' "$LOCK") in $LOCK, hash-checked) with uv"
  "${UV[@]}" pip install "${uv_args[@]}" --require-hashes --no-deps -q -r "$LOCK"
  install_torch
  say "cotk-repro and the plugins ${plugins[*]##*/} (editable, from this checkout)"
  "${UV[@]}" pip install "${uv_args[@]}" --no-deps -q -e . "${plugins[@]/#/-e}"
  # the lock must cover every requirement of what was just installed (else: bash scripts/lock.sh)
  broken=$("$PY" -m pip check 2>&1 | grep -iE "^($names) " || true)
  [ "$have_torch" = 1 ] || broken=$(echo "$broken" | grep -vE " requires torch," || true)
  if [ -n "$broken" ]; then
    echo "$broken" >&2
    echo "error: $LOCK does not cover these requirements; run bash scripts/lock.sh and commit the lock" >&2
    exit 2
  fi
else
  echo "WARNING: $LOCK is for CPython 3.11 on Linux x86_64; this is $("$PY" -c 'import platform; print(platform.python_implementation(), platform.python_version(), platform.system(), platform.machine())'): resolving from pyproject.toml's ranges" >&2
  UVPIP=("${UV[@]}" pip install "${uv_args[@]}")
  install_uv || UVPIP=("$PY" -m pip install --disable-pip-version-check)
  install_torch
  say "cotk-repro with its postgres, compare and test extras (editable), resolved from pyproject.toml's ranges"
  "${UVPIP[@]}" "${pip_links[@]}" -e ".[postgres,compare,test]"
  for plugin in "${plugins[@]}"; do
    if [ "$have_torch" = 0 ] && grep -qsE '^[[:space:]]*"torch[^a-z_-]' "$plugin/pyproject.toml"; then
      echo "WARNING: ${plugin##*/} needs torch, which is not installed: left out, its tests skip" >&2
      continue
    fi
    say "${plugin##*/} (editable)"
    "${UVPIP[@]}" "${pip_links[@]}" -c requirements/torch.txt -e "$plugin"
  done
fi
# CoTK 0.1.0 in a venv of its own (the compat tests cross-check against it; benchmarks compare with it)
COTK_VENV=${COTK_REPRO_COTK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cotk-repro/bench-cotk-venv}
if [ ! -x "$COTK_VENV/bin/python" ] || ! "$COTK_VENV/bin/python" -c 'import cotk' 2>/dev/null; then
  say "CoTK 0.1.0 into $COTK_VENV (the peer of the compat tests)"
  cotk_install=("$COTK_VENV/bin/python" -m pip install -q --disable-pip-version-check)
  "$PY" -m uv --version >/dev/null 2>&1 && cotk_install=("$PY" -m uv pip install -q --python "$COTK_VENV/bin/python")
  { "$PY" -m venv "$COTK_VENV" && "${cotk_install[@]}" "cotk==0.1.0"; } \
    || echo "WARNING: could not install CoTK 0.1.0; the CoTK cross-check tests will skip" >&2
fi
say "done"
echo "setup done"
