#!/usr/bin/env bash
# Build the Docker base images the tests (and offline users) reproduce in, one per Python minor version:
#   cotk-repro-base:bookworm   Debian 12 with Python 3.11
#   cotk-repro-base:trixie     Debian 13 with Python 3.13
# each with python3, python3-venv and python3-pip, made with debootstrap from Debian's packages and
# `docker import`ed (no registry is needed). Each image carries the label org.cotk-repro.python=X.Y, by which
# `cotk-repro reproduce` finds "an image with Python X.Y" when python:X.Y-slim cannot be pulled
# (docs/reproduce.md). The rootfs tarballs are cached under ~/.cache/cotk-repro (base-SUITE-python3.tar);
# an image already in the engine is left as it is.
#   usage: scripts/base-image.sh [SUITE|TAG ...]   (default: bookworm trixie; a TAG is cotk-repro-base:SUITE)
set -euo pipefail
CACHE=${COTK_REPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cotk-repro}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
LABEL=org.cotk-repro.python
[ $# -gt 0 ] || set -- bookworm trixie

# the Python minor version of each suite's python3 (checked against the rootfs after debootstrap)
suite_python() {
  case "$1" in
    bookworm) echo 3.11 ;;
    trixie) echo 3.13 ;;
    *) return 1 ;;
  esac
}

build() {  # build SUITE TAG (called as `build ... || status=$?`, where set -e does not apply: each step checks)
  local suite=$1 tag=$2 tarball="$CACHE/base-$1-python3.tar" python rootfs found
  python=$(suite_python "$suite") || { echo "unknown suite $suite (bookworm: Python 3.11, trixie: Python 3.13)" >&2; return 2; }
  if docker image inspect "$tag" >/dev/null 2>&1; then
    echo "base image $tag present (Python $python)"; return 0
  fi
  mkdir -p "$CACHE"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || { echo "debootstrap is not installed" >&2; return 2; }
    rootfs=$(mktemp -d /tmp/cotk-rootfs.XXXXXX)
    echo "debootstrap $suite into $rootfs (a few minutes, cached afterwards) ..."
    if ! debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
        "$suite" "$rootfs" "$MIRROR" > "$CACHE/debootstrap-$suite.log" 2>&1; then
      tail -20 "$CACHE/debootstrap-$suite.log" >&2; rm -rf "$rootfs"; return 2
    fi
    found=$(readlink "$rootfs/usr/bin/python3" || true)
    if [ "$found" != "python$python" ]; then
      echo "the $suite rootfs has $found, not python$python" >&2; rm -rf "$rootfs"; return 2
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball" || { rm -rf "$rootfs"; return 2; }
    rm -rf "$rootfs"
  fi
  docker import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' --change "LABEL $LABEL=$python" \
    "$tarball" "$tag" >/dev/null || return 2
  echo "base image $tag (Python $python) imported from $tarball"
}

status=0
for arg in "$@"; do
  suite=${arg#cotk-repro-base:}
  build "$suite" "cotk-repro-base:$suite" || status=$?
done
exit "$status"
