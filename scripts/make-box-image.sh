#!/usr/bin/env bash
# Builds the forge image that pods get forge-box from (forge-launch
# --k8s-box-image): forge-box alone at /forge-box, imported through
# `docker import` with no registry access, tagged by the binary's SHA-256 so
# a rebuilt forge-box is a new image. Prints the image's name. Push it to the
# cluster's registry (docker tag/push) for a real cluster.
#   scripts/make-box-image.sh [FORGE_BOX] [REPOSITORY]   (default: build/forge-box, forge-box)
set -euo pipefail

box="${1:-build/forge-box}"
repo="${2:-forge-box}"
if [[ ! -x "$box" ]] || ldd "$box" >/dev/null 2>&1; then
  echo "make-box-image: $box is not a static executable (build the forge-box target)" >&2
  exit 66
fi
image="$repo:$(sha256sum "$box" | cut -c1-16)"
if docker image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
cp "$box" "$root/forge-box"
chmod 0555 "$root/forge-box"
tar -C "$root" -cf - forge-box | docker import --change 'ENTRYPOINT ["/forge-box"]' - "$image" >/dev/null
echo "$image"
