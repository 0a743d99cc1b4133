#!/usr/bin/env bash
# Builds a Python base image from Debian packages, for machines that cannot pull images
# (no registry reachable): debootstrap a minimal bookworm with python3, python3-venv, git and
# ca-certificates, then `podman import` it. Build the healthd image on it with
#
#   scripts/local_base_image.sh localhost/healthd-base:bookworm
#   podman build --build-arg PYTHON_IMAGE=localhost/healthd-base:bookworm -t healthd .
#
# The root filesystem is kept as a tarball in .cache/base-image/ (CACHE_DIR overrides), so a
# second run, or a CI job that caches .cache/, skips debootstrap (about 100 s). Needs root,
# debootstrap and podman. MIRROR overrides the Debian mirror (default: the host's).
set -euo pipefail
cd "$(dirname "$0")/.."

image="${1:-localhost/healthd-base:bookworm}"
suite=bookworm
packages=python3,python3-venv,git,ca-certificates
cache_dir="${CACHE_DIR:-.cache/base-image}"
key="$(printf '%s %s' "$suite" "$packages" | sha256sum | cut -c1-12)"
tarball="$cache_dir/$suite-$key.tar"

if podman image exists "$image" \
  && [ "$(podman image inspect --format '{{index .Labels "healthd.base-key"}}' "$image" 2>/dev/null)" = "$key" ]; then
  exit 0
fi

if [ ! -s "$tarball" ]; then
  mirror="${MIRROR:-}"
  if [ -z "$mirror" ]; then
    mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  fi
  mirror="${mirror:-http://deb.debian.org/debian}"
  mkdir -p "$cache_dir"
  rootfs="$(mktemp -d "$cache_dir/rootfs.XXXXXX")"
  trap 'rm -rf "$rootfs"' EXIT
  debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >&2
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
fi

podman import --change "LABEL healthd.base-key=$key" --change 'CMD ["python3"]' \
  "$tarball" "$image" >/dev/null
