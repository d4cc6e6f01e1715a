# The common start of forge-verify's Docker e2e tests. verify_setup NAME sets
# $verify, $image (built when missing), $work (removed at exit) and
# $run_label (the containers carrying it are removed at exit).
source "$FORGE_SRC/tests/e2e/verify/image.sh"

fail() { echo "FAIL: $*" >&2; exit 1; }

verify_setup() {
  verify="$FORGE_BIN/forge-verify"
  image="${FORGE_BUSYBOX_IMAGE:-forge-busybox:latest}"
  run_label="forge.run=e2e-$1-$$"
  work="$(mktemp -d)"
  trap 'docker ps -aq --filter "label=$run_label" | xargs -r docker rm -f >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
  ensure_busybox_image "$image"
}
