# Sandboxes of the end-to-end tests' own runs. Tests share one Docker engine
# (and may run beside a user's forge), so each removes only the containers
# whose forge.run label starts with its own run prefix.

# remove_run_containers PREFIX
remove_run_containers() {
  local prefix=$1 c
  for c in $(docker ps -aq --filter "label=forge.managed=1"); do
    case "$(docker inspect -f '{{index .Config.Labels "forge.run"}}' "$c" 2>/dev/null)" in
      "$prefix"*) docker rm -f "$c" >/dev/null 2>&1 || true ;;
    esac
  done
}

# The opening of a forge-launch test on the Docker backend, after `source`:
# docker_launch_test PREFIX makes the busybox image, a work directory $work
# and $run_prefix (PREFIX, the shell's pid, a random number), and on exit
# kills every pid in $pids, calls cleanup_more when the test defines it, and
# removes the prefix's containers and $work. It defines fail, count_run RUN
# (containers labelled with RUN), $common (the flags every call shares) and
# L ARGS... (forge-launch with them).
source "${FORGE_SRC:?}/tests/support/require_docker.sh"

docker_launch_test() {
  require_docker
  LAUNCH="${FORGE_BIN:?}/forge-launch"
  bash "${FORGE_SRC:?}/scripts/make-busybox-image.sh" >/dev/null
  IMAGE=forge-busybox:latest
  work="$(mktemp -d)"
  run_prefix="$1-$$-$RANDOM"
  pids=()
  common=(--backend docker --store "$work/forge.db" --image "$IMAGE" --retry-backoff 0.1)
  trap docker_launch_cleanup EXIT
  fail() { echo "FAIL: $*" >&2; exit 1; }
  count_run() { docker ps -aq --filter "label=forge.run=$1" | wc -l; }
  L() { "$LAUNCH" "${common[@]}" "$@"; }
}

docker_launch_cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if declare -F cleanup_more >/dev/null; then cleanup_more; fi
  remove_run_containers "$run_prefix"
  rm -rf "$work"
}
