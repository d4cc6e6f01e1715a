#!/usr/bin/env bash
# Builds forge-apt:bookworm: a `debootstrap --variant=minbase bookworm` root
# (apt, dpkg, bash, coreutils; nothing else) imported with `docker import`,
# for tests whose tasks run apt-get the way real Harbor verifiers do. Its apt
# sources are emptied: inside a sandbox there is no internet, so a task adds
# its own file:// source. Packages come from the host's Debian mirror (or
# $FORGE_DEBIAN_MIRROR) at build time only.
#
# $FORGE_APT_INCLUDE (comma separated) adds Debian packages to the root:
# scripts/make-pytest-image.sh makes forge-pytest:bookworm (python3,
# python3-pytest, python3-pip) this way.
#
# Idempotent: does nothing when the image exists (--force rebuilds). Needs
# root and debootstrap (scripts/bootstrap.sh installs it).
set -euo pipefail
image="${FORGE_APT_IMAGE:-forge-apt:bookworm}"
include="${FORGE_APT_INCLUDE:+--include=$FORGE_APT_INCLUDE}"
[[ "${1:-}" == --force ]] || ! docker image inspect "$image" >/dev/null 2>&1 || exit 0
say() { echo "make-apt-image: $*" >&2; }
command -v debootstrap >/dev/null 2>&1 || { say "debootstrap is needed"; exit 69; }
[[ "$(id -u)" -eq 0 ]] || { say "must run as root (debootstrap)"; exit 77; }
mirror="${FORGE_DEBIAN_MIRROR:-}"
[[ -n "$mirror" ]] || mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
                               grep -v -- '-security' | head -1 || true)
[[ -n "$mirror" ]] || mirror=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
                               awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' |
                               grep -v -- '-security' | head -1 || true)
[[ -n "$mirror" ]] || { say "no Debian mirror found in /etc/apt; set FORGE_DEBIAN_MIRROR"; exit 78; }
root="$(mktemp -d /tmp/forge-apt-root.XXXXXX)"
trap 'rm -rf "$root" "$root.log"' EXIT
say "debootstrap --variant=minbase $include bookworm from $mirror"
debootstrap --variant=minbase $include --cache-dir=/var/cache/apt/archives bookworm "$root" "$mirror" >"$root.log" 2>&1 ||
  { tail -20 "$root.log" >&2; say "debootstrap failed"; exit 69; }
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
: >"$root/etc/apt/sources.list"
: >"$root/etc/resolv.conf"
tar -C "$root" -cf - . | docker import --change 'CMD ["/bin/bash"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$image" >/dev/null
say "built $image"
