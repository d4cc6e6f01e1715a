#!/usr/bin/env bash
# forge-launch's virtual display for GUI tasks. The harness runs xdpyinfo
# (an X client) and writes the screen it sees to a file; forge-verify's files
# verifier checks the file has the size the task asked for.
#   - local backend, -j 2: a task's "display" field (string and object forms)
#     and --display for a task without one; the two running at once get two
#     different display numbers; no Xvfb is left when forge-launch ends.
#   - no Xvfb (local: none on PATH; docker: busybox image): a clear infra_error
#     naming the host or image and Xvfb, error_kind no_xvfb, not retried, exit
#     69, and not counted as an attempt (a rerun redoes it).
#   - docker backend, in an image with Xvfb ($FORGE_DISPLAY_IMAGE, default
#     forge-node:bookworm-x11, which scripts/make-node-image.sh --x11 builds
#     when it is missing): one-shot and held sandboxes at -j 2 with host
#     networking (X's abstract sockets share the host's namespace there, so
#     the numbers must differ too). Without a Docker engine the test reports
#     a skip (exit 77) after its local parts.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
LAUNCH="$BIN/forge-launch"; VERIFY="$BIN/forge-verify"
work="$(mktemp -d)"
run="display-$$-$RANDOM"
busybox="${FORGE_BUSYBOX_IMAGE:-forge-busybox:latest}"
x11_image="${FORGE_DISPLAY_IMAGE:-forge-node:bookworm-x11}"
cleanup() {
  FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local gc --run-id "$run-local" >/dev/null 2>&1 || true
  for r in "$run-docker" "$run-nox" "$run-held"; do
    docker ps -aq --filter "label=forge.run=$r" 2>/dev/null | xargs -r docker rm -f >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$work"/*.err; do [[ -s "$f" ]] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
command -v Xvfb >/dev/null && command -v xdpyinfo >/dev/null ||
  fail "the host needs xvfb and x11-utils (scripts/bootstrap.sh installs them)"

# The harness: what an X client sees of its screen (to a file for the
# verifier, and to stdout for the record), and which display it was given.
# Local rollouts share the host's file system: a barrier there makes the
# first two hold their displays at the same time whatever the machine's load.
# Containers cannot see it, so there the harness holds its display for 2 s.
barrier="mkdir -p $work/barrier && touch $work/barrier/\$FORGE_TASK_ID; i=0; while [ \$(ls $work/barrier | wc -l) -lt 2 ] && [ \$i -lt 300 ]; do sleep 0.1; i=\$((i+1)); done"
probe='size=$(xdpyinfo | awk "/dimensions:/ {print \$2}"); depth=$(xdpyinfo | awk "/depth of root window/ {print \$5}"); echo "$size" > screen.txt; echo "display=$DISPLAY size=$size depth=$depth"'
task() {  # id display-json image expected-size
  local command="$probe; sleep 2"
  [[ -n "$3" ]] || command="$probe; $barrier"
  jq -cn --arg id "$1" --argjson display "$2" --arg image "$3" --arg size "$4" --arg probe "$command" '
    {id: $id, instruction: "report the screen size", command: $probe,
     verifier: {kind: "files", expect: [{path: "/work/screen.txt", equals: ($size + "\n")}]}}
    + (if $image == "" then {} else {environment: {image: $image}} end)
    + (if $display == null then {} else {display: $display} end)'
}
saw() {  # rollouts task-id -> "display=:N size=WxH depth=D"
  jq -r "select(.task_id==\"$2\") | .logs.stdout" "$1" | grep '^display='
}
number() { sed -n 's/^display=:\([0-9]*\) .*/\1/p' <<<"$1"; }
verify_all() {  # label rollouts backend-env... ; every verdict passed
  local label=$1 rollouts=$2; shift 2
  env "$@" "$VERIFY" --store "$work/forge.db" -j 2 "$rollouts" >"$work/$label-verdicts.jsonl" \
    2>"$work/$label-verify.err" || fail "forge-verify $label: exit $?"
  local n; n=$(wc -l <"$rollouts")
  [[ "$(jq -r .verdict.outcome "$work/$label-verdicts.jsonl" | sort | uniq -c | awk '{print $1, $2}')" == "$n passed" ]] ||
    fail "$label verdicts: $(jq -c '{task_id, verdict}' "$work/$label-verdicts.jsonl")"
}

echo "== local backend, -j 2, held, verified"
{
  task big '"640x480x24"' "" 640x480
  task small '{"width": 320, "height": 200, "depth": 16}' "" 320x200
  task flag null "" 1024x768
} >"$work/local.jsonl"
FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local -j 2 --hold --display 1024x768x24 \
  --run-id "$run-local" --store "$work/forge.db" "$work/local.jsonl" >"$work/local-rollouts.jsonl" \
  2>"$work/local.err" || fail "forge-launch local: exit $?"
[[ "$(jq -r .outcome "$work/local-rollouts.jsonl" | sort | uniq -c | awk '{print $1, $2}')" == "3 ok" ]] ||
  fail "local outcomes: $(jq -c '{task_id, outcome, error}' "$work/local-rollouts.jsonl")"
big="$(saw "$work/local-rollouts.jsonl" big)"; small="$(saw "$work/local-rollouts.jsonl" small)"
flag="$(saw "$work/local-rollouts.jsonl" flag)"
[[ "$big" == *" size=640x480 depth=24" ]] || fail "big saw: $big"
[[ "$small" == *" size=320x200 depth=16" ]] || fail "small saw: $small"
[[ "$flag" == *" size=1024x768 depth=24" ]] || fail "flag (--display) saw: $flag"
[[ -n "$(number "$big")" && "$(number "$big")" != "$(number "$small")" ]] ||
  fail "two rollouts at once shared a display: '$big' / '$small'"
[[ "$(jq -r 'select(.task_id=="flag") | .display' "$work/local-rollouts.jsonl")" == 1024x768x24 ]] ||
  fail "the record does not name --display's screen"
[[ "$(jq -r 'select(.task_id=="small") | .display' "$work/local-rollouts.jsonl")" == 320x200x16 ]] ||
  fail "the task's own display did not win over --display"
for line in "$big" "$small" "$flag"; do
  [[ ! -e "/tmp/.X$(number "$line")-lock" ]] || fail "Xvfb of $line still running after its harness"
done
verify_all local "$work/local-rollouts.jsonl" FORGE_LOCAL_ROOT="$work/local"

echo "== a broken display field: that task named and skipped (65), the next one runs"
rc=0
printf '{"id":"bad","instruction":"x","display":"big"}\n{"id":"good","instruction":"x"}\n' >"$work/bad.jsonl"
FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local --run-id "$run-bad" --store "$work/forge.db" \
  --command true "$work/bad.jsonl" >"$work/bad-rollouts.jsonl" 2>"$work/bad.err" || rc=$?
[[ $rc == 65 ]] || fail "broken display: exit $rc, expected 65"
grep -q "bad.jsonl:1: display 'big': expected WIDTHxHEIGHT" "$work/bad.err" || fail "broken display not named: $(cat "$work/bad.err")"
[[ "$(jq -r '.task_id + " " + .outcome' "$work/bad-rollouts.jsonl")" == "good ok" ]] || fail "the good task did not run"

echo "== local backend: no Xvfb on the host's PATH"
mkdir -p "$work/nobin"
start=$SECONDS
rc=0
PATH="$work/nobin" FORGE_LOCAL_ROOT="$work/local" "$LAUNCH" --backend local --display 640x480 \
  --retry-backoff 0.1 --run-id "$run-local-nox" --store "$work/forge.db" \
  --command 'touch ran' <<<'{"id":"nox","instruction":"x"}' >"$work/nox.jsonl" 2>"$work/nox.err" || rc=$?
[[ $rc == 69 ]] || fail "no Xvfb (local): exit $rc, expected 69"
(( SECONDS - start < 20 )) || fail "no Xvfb (local) took $((SECONDS - start)) s"
jq -e '.outcome == "infra_error" and .error_kind == "no_xvfb" and .infra_retries == 0
       and (.error | test("the host \\(local backend\\) has no Xvfb"))' "$work/nox.jsonl" >/dev/null ||
  fail "no Xvfb (local) record: $(cat "$work/nox.jsonl")"
grep -q '^forge-launch: .*nox attempt 0: the host (local backend) has no Xvfb' "$work/nox.err" ||
  fail "no Xvfb (local): stderr does not say so: $(cat "$work/nox.err")"

source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker "the docker parts of launch_display"
source "$SRC/tests/e2e/verify/image.sh"
ensure_busybox_image "$busybox"

echo "== docker backend: an image without Xvfb"
task nox '"640x480"' "$busybox" 640x480 >"$work/nox-docker.jsonl"
for pass in first rerun; do
  rc=0
  "$LAUNCH" --backend docker --retry-backoff 0.1 --run-id "$run-nox" --store "$work/forge.db" \
    "$work/nox-docker.jsonl" >"$work/nox-docker-$pass.jsonl" 2>"$work/nox-docker.err" || rc=$?
  [[ $rc == 69 ]] || fail "no Xvfb (docker, $pass): exit $rc, expected 69"
  jq -e --arg image "$busybox" '.outcome == "infra_error" and .error_kind == "no_xvfb"
        and .infra_retries == 0 and (.resumed | not)
        and (.error | contains("image " + $image + " has no Xvfb"))' \
    "$work/nox-docker-$pass.jsonl" >/dev/null ||
    fail "no Xvfb (docker, $pass) record: $(cat "$work/nox-docker-$pass.jsonl")"
done
[[ -z "$(docker ps -aq --filter "label=forge.run=$run-nox")" ]] || fail "no Xvfb (docker) left a container"

echo "== image $x11_image"
FORGE_NODE_IMAGE="$x11_image" bash "$SRC/scripts/make-node-image.sh" --x11 || fail "make-node-image.sh --x11"
docker run --rm --network none "$x11_image" sh -c 'command -v Xvfb && command -v xdpyinfo' >/dev/null 2>&1 ||
  fail "$x11_image has no Xvfb/xdpyinfo (rebuild it: scripts/make-node-image.sh --x11 --force)"

echo "== docker backend ($x11_image): one-shot at -j 2, host network"
{
  task big '"640x480x24"' "$x11_image" 640x480
  task small '{"width": 320, "height": 200, "depth": 16}' "$x11_image" 320x200
} >"$work/docker.jsonl"
"$LAUNCH" --backend docker -j 2 --network host --run-id "$run-docker" --store "$work/forge.db" \
  "$work/docker.jsonl" >"$work/docker-rollouts.jsonl" 2>"$work/docker.err" || fail "forge-launch docker: exit $?"
[[ "$(jq -r .outcome "$work/docker-rollouts.jsonl" | sort | uniq -c | awk '{print $1, $2}')" == "2 ok" ]] ||
  fail "docker outcomes: $(jq -c '{task_id, outcome, error, logs}' "$work/docker-rollouts.jsonl")"
big="$(saw "$work/docker-rollouts.jsonl" big)"; small="$(saw "$work/docker-rollouts.jsonl" small)"
[[ "$big" == *" size=640x480 depth=24" ]] || fail "docker big saw: $big"
[[ "$small" == *" size=320x200 depth=16" ]] || fail "docker small saw: $small"
[[ "$(number "$big")" != "$(number "$small")" ]] ||
  fail "two containers sharing the host's network namespace got one display: '$big' / '$small'"

echo "== docker backend ($x11_image): held, verified"
"$LAUNCH" --backend docker -j 2 --hold --run-id "$run-held" --store "$work/forge.db" \
  "$work/docker.jsonl" >"$work/held-rollouts.jsonl" 2>"$work/held.err" || fail "forge-launch docker --hold: exit $?"
[[ "$(jq -r .outcome "$work/held-rollouts.jsonl" | sort | uniq -c | awk '{print $1, $2}')" == "2 ok" ]] ||
  fail "held outcomes: $(jq -c '{task_id, outcome, error, logs}' "$work/held-rollouts.jsonl")"
# The harness has ended, so its Xvfb has too, while the sandbox stays held.
for id in $(jq -r .sandbox.id "$work/held-rollouts.jsonl"); do
  left="$(docker exec "$id" sh -c 'ls /tmp/.X*-lock 2>/dev/null; ps -eo comm | grep -c "^Xvfb" || true')"
  [[ "$left" == 0 ]] || fail "held sandbox $id still runs Xvfb after its harness: $left"
done
verify_all held "$work/held-rollouts.jsonl"
[[ -z "$(docker ps -aq --filter "label=forge.run=$run-held")" ]] || fail "forge-verify left held containers"
echo "ok"
