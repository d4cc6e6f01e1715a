#!/usr/bin/env bash
# The README's first command, end to end: scripts/demo.sh on the example tasks
# with the embedded default policy (the recorded example played back by
# forge-proxy --replay), checked file by file.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker

out=$WORK/demo-out
FORGE_BUILD_DIR=$FORGE_BIN FORGE_DEMO_OUT=$out bash "$FORGE_SRC/scripts/demo.sh" >"$OUT" 2>"$ERR"
status=$?
[ "$status" -eq 0 ] && pass || fail "demo exited $status: $(tail -20 "$ERR")"

grep -q "replaying .* recorded responses from examples/demo-recorded.jsonl" "$out/proxy.log" && pass \
  || fail "the embedded policy was not forge-proxy --replay of the recorded example: $(head -5 "$out/proxy.log")"
[ "$(sqlite3 "$out/forge.db" "select count(distinct upstream) from calls")" = 1 ] &&
  sqlite3 "$out/forge.db" "select upstream from calls limit 1" | grep -q '^replay:' && pass \
  || fail "calls were not served by the replay"
[ "$(wc -l <"$out/rollouts.jsonl")" -eq 8 ] && pass || fail "want 8 rollouts (2 tasks x 4 attempts)"
[ "$(jq -r .outcome "$out/rollouts.jsonl" | sort -u)" = ok ] && pass || fail "some rollouts did not finish ok"
[ "$(wc -l <"$out/verdicts.jsonl")" -eq 8 ] && pass || fail "want 8 verdicts"
passed=$(jq -r .verdict.outcome "$out/verdicts.jsonl" | grep -c '^passed$')
failed=$(jq -r .verdict.outcome "$out/verdicts.jsonl" | grep -c '^failed$')
[ "$passed" -ge 1 ] && [ "$failed" -ge 1 ] && [ $((passed + failed)) -eq 8 ] && pass \
  || fail "want passing and failing attempts only, got $passed passed, $failed failed"
calls=$(sqlite3 "$out/forge.db" "select count(*) from calls where prompt_suffix is not null and length(completion_ids) > 0")
[ "$calls" -ge 16 ] && pass || fail "want at least 16 recorded calls with token ids, got $calls"
jq -e '.overall // .tasks // .' "$out/report.json" >/dev/null && pass || fail "report.json is not JSON"
[ "$(wc -l <"$out/sft.jsonl")" -ge 1 ] && pass || fail "no SFT samples"
jq -e '.messages | length >= 3' "$(printf '%s' "$out/sft.jsonl")" >/dev/null 2>&1 || \
  head -1 "$out/sft.jsonl" | jq -e '.messages | length >= 3' >/dev/null && pass || fail "SFT sample has no conversation"
[ "$(wc -l <"$out/rl-index.jsonl")" -ge 1 ] && pass || fail "no RL batches"
ls "$out"/rl/*.safetensors >/dev/null 2>&1 && pass || fail "no safetensors files in $out/rl"
grep -q "RL micro-batches" "$OUT" && pass || fail "no summary printed"
grep -q "report page (open in a browser): *$out/report.html" "$OUT" && pass || fail "the summary does not name the page"
for id in chart-pass-curves chart-outcomes chart-tool-use chart-rates chart-effort; do
  grep -q "<svg id=\"$id\"" "$out/report.html" && pass || fail "report.html has no $id"
done
# The ReACT agent's shell commands, half of its attempts reading back what they wrote.
jq -e '.behaviour.share_by_kind.shell == 1 and .behaviour.self_verification_rate == 0.5' "$out/report.json" >/dev/null \
  && pass || fail "demo behaviour: $(jq -c .behaviour "$out/report.json")"
left=$(docker ps -a --filter label=forge.run --format '{{.ID}} {{.Status}} {{.Label "forge.rollout"}} {{.Label "forge.task"}}')
[ -z "$left" ] && pass || fail "the demo left containers behind: $left"
finish
