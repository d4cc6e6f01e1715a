#!/usr/bin/env bash
# The real pipeline on the Docker engine: forge-launch --hold runs a command
# harness per rollout and holds the sandbox; forge-verify verifies each with
# the task's Harbor tests in that sandbox, stores the verdicts and releases
# the sandboxes; report reads the result.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
[[ -x "$FORGE_BIN/forge-launch" ]] || { echo "FAIL: $FORGE_BIN/forge-launch is not built" >&2; exit 1; }
image="${FORGE_BUSYBOX_IMAGE:-forge-busybox:latest}"
work="$(mktemp -d)"
run_id="e2e-verify-pipeline-$$"
cleanup() {
  docker ps -aq --filter "label=forge.run=$run_id" | xargs -r docker rm -f >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$FORGE_SRC/tests/e2e/verify/image.sh"
ensure_busybox_image "$image"

mkdir -p "$work/tests"
printf '#!/bin/sh\nif [ "$(cat /work/answer.txt)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n' \
  >"$work/tests/test.sh"
printf '{"id":"p42","instruction":"write 42 to /work/answer.txt","environment":{"image":"%s"},"verifier":{"kind":"harbor","tests_dir":"%s","timeout_sec":30}}\n' \
  "$image" "$work/tests" >"$work/tasks.jsonl"

"$FORGE_BIN/forge-launch" "$work/tasks.jsonl" -n 3 --hold --run-id "$run_id" --store "$work/forge.db" \
  --command 'echo 42 > /work/answer.txt' >"$work/rollouts.jsonl" 2>"$work/launch.err" ||
  { cat "$work/launch.err" >&2; fail "forge-launch failed"; }
[[ $(docker ps -q --filter "label=forge.run=$run_id" | wc -l) -eq 3 ]] || fail "expected 3 held sandboxes"

"$FORGE_BIN/forge-verify" "$work/rollouts.jsonl" --store "$work/forge.db" -j 3 >"$work/verdicts.jsonl" ||
  fail "forge-verify exit $?"
[[ $(jq -r .verdict.outcome "$work/verdicts.jsonl" | sort | uniq -c | awk '{print $1, $2}') == "3 passed" ]] ||
  fail "verdicts: $(jq -c .verdict "$work/verdicts.jsonl")"
[[ $(sqlite3 "$work/forge.db" "SELECT count(*) FROM verdicts WHERE outcome = 'passed' AND reward = 1.0") -eq 3 ]] ||
  fail "verdicts not in the store"
[[ $(docker ps -aq --filter "label=forge.run=$run_id" | wc -l) -eq 0 ]] || fail "sandboxes not released"
"$FORGE_BIN/forge-verify" report -k 1,3 --json "$work/verdicts.jsonl" | jq -e '.overall.pass_hat_k["3"] == 1' >/dev/null ||
  fail "report"
echo "verify_pipeline: ok"
