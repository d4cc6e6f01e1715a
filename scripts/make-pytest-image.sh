#!/usr/bin/env bash
# Builds forge-pytest:bookworm: Debian bookworm (debootstrap minbase) with
# python3, python3-pytest and python3-pip, the image real Harbor tasks whose
# tests/test.sh runs pytest are made of. Cached: does nothing when the image
# exists (--force rebuilds). Needs root and debootstrap.
set -euo pipefail
FORGE_APT_IMAGE="${FORGE_PYTEST_IMAGE:-forge-pytest:bookworm}" \
FORGE_APT_INCLUDE=python3,python3-pytest,python3-pip \
  exec bash "$(dirname "$0")/make-apt-image.sh" "$@"
