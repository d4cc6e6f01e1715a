#!/usr/bin/env bash
# Builds forge-node:bookworm, the image real npm harnesses (Claude Code, Codex,
# Gemini CLI, ...) run in: `debootstrap --variant=minbase bookworm`, then
# Debian's nodejs and what the harnesses shell out to, installed with apt-get
# in the chroot, then `docker import`. No registry image is pulled; packages
# come from the Debian mirror the host's apt already uses (or
# $FORGE_DEBIAN_MIRROR). The harnesses themselves are not in the image:
# forge-launch bind-mounts scripts/install-harnesses.sh's directory read-only
# at /opt/forge/harnesses.
#
# --x11 builds forge-node:bookworm-x11 instead: the same plus xvfb and
# x11-utils, for GUI tasks (forge-launch --display starts Xvfb from the image;
# nothing is installed at rollout time). Not in the default image because
# Debian's xvfb pulls Mesa and LLVM through libgl1: 218 MB -> 412 MB.
#
# Idempotent: does nothing when the image exists (--force rebuilds).
# Progress goes to stderr. Needs root (debootstrap, chroot) and debootstrap.
set -euo pipefail

force=0 x11=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    --x11) x11=1 ;;
    *) echo "make-node-image: unknown argument $arg (--force, --x11)" >&2; exit 64 ;;
  esac
done
if ((x11)); then
  image="${FORGE_NODE_IMAGE:-forge-node:bookworm-x11}"
else
  image="${FORGE_NODE_IMAGE:-forge-node:bookworm}"
fi
suite=bookworm
# nodejs: for the harnesses that are Node programs; the rest are what agents
# and their tools call (bash, ps, CA certificates for any https the harness
# insists on, though tests point everything at 127.0.0.1).
packages=(nodejs ca-certificates bash coreutils procps findutils grep sed)
# Xvfb for forge-launch --display, xdpyinfo and friends for checking a screen.
((x11)) && packages+=(xvfb x11-utils)

say() { echo "make-node-image: $*" >&2; }

if ((!force)) && docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi
command -v debootstrap >/dev/null 2>&1 ||
  { say "debootstrap is needed (apt-get install debootstrap; scripts/bootstrap.sh lists it)"; exit 69; }
[[ "$(id -u)" -eq 0 ]] || { say "must run as root (debootstrap and chroot)"; exit 77; }

# The host's own Debian mirror: deb822 .sources first, then sources.list.
mirror="${FORGE_DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
  mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
           grep -v -- '-security' | head -1 || true)
fi
if [[ -z "$mirror" ]]; then
  mirror=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list |
           awk '{for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' |
           grep -v -- '-security' | head -1 || true)
fi
[[ -n "$mirror" ]] || { say "no Debian mirror found in /etc/apt; set FORGE_DEBIAN_MIRROR"; exit 78; }

root="$(mktemp -d /tmp/forge-node-root.XXXXXX)"
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
start=$SECONDS

say "debootstrap --variant=minbase $suite from $mirror"
# The host's apt cache holds the .debs it already fetched; reuse them.
debootstrap --variant=minbase --cache-dir=/var/cache/apt/archives "$suite" "$root" "$mirror" \
  >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; rm -f "$root.log"; say "debootstrap failed"; exit 69; }
rm -f "$root.log"
say "base system ready after $((SECONDS - start)) s; installing ${packages[*]}"

cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
# No daemons start inside the chroot, and no docs or man pages are kept.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod +x "$root/usr/sbin/policy-rc.d"
# A throwaway root: dpkg need not fsync every file (the slow part of apt here).
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/02-forge-unsafe-io"
printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\npath-exclude /usr/share/info/*\n' \
  >"$root/etc/dpkg/dpkg.cfg.d/01-forge-nodoc"
chroot "$root" /usr/bin/env DEBIAN_FRONTEND=noninteractive sh -c \
  "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${packages[*]}" \
  >"$root/tmp/apt.log" 2>&1 || { tail -20 "$root/tmp/apt.log" >&2; say "apt-get in the chroot failed"; exit 69; }
chroot "$root" apt-get clean
umount "$root/proc"
rm -rf "$root"/var/lib/apt/lists/* "$root/usr/sbin/policy-rc.d" "$root/tmp/apt.log" \
  "$root/etc/dpkg/dpkg.cfg.d/02-forge-unsafe-io"
: >"$root/etc/resolv.conf"
mkdir -p "$root/work" "$root/opt/forge/harnesses"
node_version=$(chroot "$root" node --version)
say "node $node_version installed after $((SECONDS - start)) s; importing $image"

tar -C "$root" -cf - . | docker import \
  --change 'CMD ["/bin/bash"]' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /work' \
  - "$image" >/dev/null
say "built $image (node $node_version) in $((SECONDS - start)) s"
