#!/usr/bin/env bash
# Builds forge-busybox:latest from the host's busybox-static, with no registry
# access: a rootfs tarball with busybox and its applet links, imported through
# `docker import`. Idempotent: does nothing when the image already exists
# (pass --force to rebuild). Used by the e2e tests, benchmarks and the demo.
set -euo pipefail

image="${FORGE_BUSYBOX_IMAGE:-forge-busybox:latest}"
if [[ "${1:-}" != "--force" ]] && docker image inspect "$image" >/dev/null 2>&1; then
  exit 0
fi

busybox=""
for candidate in /bin/busybox /usr/bin/busybox; do
  if [[ -x "$candidate" ]] && ! ldd "$candidate" >/dev/null 2>&1; then busybox="$candidate"; break; fi
done
if [[ -z "$busybox" ]]; then
  echo "make-busybox-image: a static busybox is needed (apt-get install busybox-static)" >&2
  exit 69
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,tmp,work,etc,root,proc,sys,dev}
chmod 1777 "$root/tmp"
cp "$busybox" "$root/bin/busybox"
for applet in $("$root/bin/busybox" --list-full); do
  [[ "$applet" == bin/busybox ]] && continue
  mkdir -p "$root/$(dirname "$applet")"
  ln -sf /bin/busybox "$root/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
tar -C "$root" -cf - . | docker import \
  --change 'CMD ["/bin/sh"]' --change 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
  - "$image" >/dev/null
echo "make-busybox-image: built $image" >&2
