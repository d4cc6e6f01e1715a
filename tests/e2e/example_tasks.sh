#!/usr/bin/env bash
# The example Harbor tasks under examples/tasks/ are solvable and not
# trivially passing: in a real container from the busybox image the demo
# uses, each task's solution/solve.sh makes tests/test.sh write reward 1,
# and doing nothing makes it write 0 (Harbor's oracle and nop checks).
set -euo pipefail
: "${FORGE_SRC:?FORGE_SRC must name the source directory}"

source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker

image="forge-busybox:e2e-tasks-$$"
work="$(mktemp -d)"
cleanup() {
  docker image rm -f "$image" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The same kind of image the demo builds: busybox-static, imported, no Dockerfile.
mkdir -p "$work/rootfs/bin"
cp /bin/busybox "$work/rootfs/bin/busybox"
for applet in $(/bin/busybox --list); do
  [ "$applet" = busybox ] || ln -s busybox "$work/rootfs/bin/$applet"
done
tar -C "$work/rootfs" -cf "$work/rootfs.tar" .
docker import "$work/rootfs.tar" "$image" >/dev/null

# Runs one attempt in a fresh container: optionally the reference solution,
# then the verifier; prints the reward the verifier wrote.
reward() {
  local task_dir="$1" solve="$2"
  docker run --rm --network none -v "$task_dir:/task:ro" "$image" /bin/sh -c "
    set -e
    if [ $solve = yes ]; then cp -r /task/solution /solution; sh /solution/solve.sh; fi
    cp -r /task/tests /tests
    sh /tests/test.sh
    cat /logs/verifier/reward.txt"
}

count=0
for task_dir in "$FORGE_SRC"/examples/tasks/*/; do
  task_dir="${task_dir%/}"
  name="$(basename "$task_dir")"
  oracle="$(reward "$task_dir" yes)"
  nop="$(reward "$task_dir" no)"
  if [ "$oracle" != 1 ]; then
    echo "example_tasks: $name: the reference solution scored '$oracle', expected 1" >&2
    exit 1
  fi
  if [ "$nop" != 0 ]; then
    echo "example_tasks: $name: doing nothing scored '$nop', expected 0" >&2
    exit 1
  fi
  echo "example_tasks: $name: solution 1, nothing 0"
  count=$((count + 1))
done
[ "$count" -ge 2 ] || { echo "example_tasks: found $count example tasks, expected 2" >&2; exit 1; }
