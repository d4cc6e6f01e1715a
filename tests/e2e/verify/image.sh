# ensure_busybox_image IMAGE: the launch stage's script builds it; without
# that script, a busybox rootfs is imported here the same way. Without a
# Docker engine the test is a skip (require_docker.sh).
source "$FORGE_SRC/tests/support/require_docker.sh"

ensure_busybox_image() {
  require_docker
  local image="$1"
  docker image inspect "$image" >/dev/null 2>&1 && return 0
  if [[ -x "$FORGE_SRC/scripts/make-busybox-image.sh" ]]; then
    FORGE_BUSYBOX_IMAGE="$image" bash "$FORGE_SRC/scripts/make-busybox-image.sh"
    return 0
  fi
  local busybox root
  busybox="$(command -v busybox)" || { echo "busybox-static is needed" >&2; return 69; }
  root="$(mktemp -d)"
  mkdir -p "$root"/{bin,tmp,work,etc,root,proc,sys,dev}
  cp "$busybox" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do ln -sf /bin/busybox "$root/bin/$applet"; done
  printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
  tar -C "$root" -cf - . | docker import --change 'ENV PATH=/bin' - "$image" >/dev/null
  rm -rf "$root"
}
