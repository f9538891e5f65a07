#!/usr/bin/env bash
# Build the Docker base image the tests (and offline users) reproduce in: Debian bookworm
# with python3, python3-venv and python3-pip, made with debootstrap from Debian's packages
# and `docker import`ed (no registry is needed). The rootfs tarball is cached.
#   usage: scripts/base-image.sh [TAG]      (default tag: cotk-repro-base:bookworm)
set -euo pipefail
TAG=${1:-cotk-repro-base:bookworm}
CACHE=${COTK_REPRO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cotk-repro}
TARBALL="$CACHE/base-bookworm-python3.tar"
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if docker image inspect "$TAG" >/dev/null 2>&1; then
  echo "base image $TAG present"; exit 0
fi
mkdir -p "$CACHE"
if [ ! -s "$TARBALL" ]; then
  command -v debootstrap >/dev/null || { echo "debootstrap is not installed" >&2; exit 2; }
  ROOTFS=$(mktemp -d /tmp/cotk-rootfs.XXXXXX)
  trap 'rm -rf "$ROOTFS"' EXIT
  echo "debootstrap bookworm into $ROOTFS (a few minutes, cached afterwards) ..."
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$ROOTFS" "$MIRROR" > "$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; exit 2; }
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
  tar -C "$ROOTFS" -cf "$TARBALL.tmp" . && mv "$TARBALL.tmp" "$TARBALL"
fi
docker import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' "$TARBALL" "$TAG" >/dev/null
echo "base image $TAG imported from $TARBALL"
