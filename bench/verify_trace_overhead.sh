#!/usr/bin/env bash
# What forge-box's tracer (verify/tracer.h) costs a verification on a
# pod-native pod: the honest pytest Harbor task (tests/data/harbor/
# pytest-verifier, its reference solution) verified by one `forge-box verify`
# stream, traced vs --no-trace, alternately in the same container, which is
# set up as the fake cluster's real mode sets up a pod (forge-pytest image,
# forge-box mounted read-only at /forge/bin, no network, no added
# capabilities, Docker's default seccomp profile). Wall and CPU (user + sys
# of forge-box and everything it waited for) a verification, their ratio per
# round and its range.
#
#   bench/verify_trace_overhead.sh [--rounds 3]
#
# FORGE_BIN names the directory with this build's binaries (default: build).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "verify_trace_overhead: unknown argument $1" >&2; exit 64 ;;
  esac
done
box=$(cd "${FORGE_BIN:-$src/build}" && pwd)/forge-box
bash "$src/scripts/make-pytest-image.sh" >/dev/null
work=$(mktemp -d)
name=forge-bench-trace-$$
trap 'docker rm -f "$name" >/dev/null 2>&1; rm -rf "$work"' EXIT
task="$src/tests/data/harbor/pytest-verifier"
mkdir -p "$work/in"
printf '/tests/test.sh\0' >"$work/in/argv"
: >"$work/in/env"
cp -r "$task/tests" "$work/in/tests"
tar --format=ustar -C "$work/in" -cf "$work/archive.tar" argv env tests
docker run -d --name "$name" --network none -v "$box:/forge/bin/forge-box:ro" -w /app forge-pytest:bookworm \
  /forge/bin/forge-box keepalive 3600 >/dev/null
docker exec "$name" sh -c 'mkdir -p /app /logs/verifier'
t0=$(docker exec "$name" sh -c 'date +%s%N')
sleep 0.05
docker exec "$name" sh -c "$(cat "$task/solution/solve.sh")"
# The container's CPU in µs, from its cgroup on the host (v1 cpuacct, else v2).
cg() {
  local id; id=$(docker inspect -f '{{.Id}}' "$name")
  for f in /sys/fs/cgroup/cpuacct/docker/$id/cpuacct.usage /sys/fs/cgroup/cpu,cpuacct/docker/$id/cpuacct.usage; do
    [ -r "$f" ] && { echo "v1 $f"; return; }
  done
  f=$(find /sys/fs/cgroup -path "*$id*" -name cpu.stat 2>/dev/null | head -1)
  [ -n "$f" ] && echo "v2 $f" || { echo "verify_trace_overhead: no cgroup CPU figure for $name" >&2; exit 1; }
}
usage() {
  case $cgroup in
    v1\ *) echo $(( $(cat "${cgroup#v1 }") / 1000 )) ;;
    v2\ *) sed -n 's/^usage_usec //p' "${cgroup#v2 }" ;;
  esac
}
one() {  # $1: extra flag; prints "wall cpu" in seconds (CPU: the container's cgroup, forge-box exec'd alone
         # as forge-verify execs it: its sweep stops every other process)
  local c0 c1 w0 w1
  c0=$(usage) w0=$(date +%s%N)
  docker exec -i "$name" /forge/bin/forge-box verify --tag "b$RANDOM" --stop --clear --timeout 300 --max-output 1048576 \
    --shebang --reward 65536 --t0 "$t0" $1 <"$work/archive.tar" >"$work/answer"
  w1=$(date +%s%N) c1=$(usage)
  grep -a -q '^forge-verify: exit=0 ' "$work/answer" ||
    { echo "verify_trace_overhead: the verification did not pass: $(tail -20 "$work/answer")" >&2; exit 1; }
  awk -v w=$((w1 - w0)) -v c=$((c1 - c0)) 'BEGIN { printf "%.3f %.3f\n", w / 1e9, c / 1e6 }'
}
cgroup=$(cg)
one "" >/dev/null  # warm the page cache and Python's bytecode
grep -a -E "^(checked|judged|events|processes|finding_count)" "$work/answer" | tr '\n' ' '
echo
echo "round  traced wall/cpu s  untraced wall/cpu s  ratio wall  ratio cpu"
for r in $(seq "$rounds"); do
  read -r tw tc < <(one "")
  read -r uw uc < <(one --no-trace)
  awk -v r="$r" -v tw="$tw" -v tc="$tc" -v uw="$uw" -v uc="$uc" \
    'BEGIN { printf "%5d  %6.2f / %5.2f     %6.2f / %5.2f       %5.2f      %5.2f\n", r, tw, tc, uw, uc, tw / uw, tc / uc }'
done
