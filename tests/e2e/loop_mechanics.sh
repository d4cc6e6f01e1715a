#!/usr/bin/env bash
# The loop's mechanics (examples/loop/) on a few tasks: real forge-proxy,
# forge-launch (reference ReACT harness, local backend under bubblewrap),
# forge-verify, forge-pack, and the example policy server and trainer.
#
# One server serves the policy. It first answers as the teacher (the scripted
# solution, scored by the untrained model) at policy version 1; those rollouts
# give the SFT data. The SFT stage (a few steps) writes new weights; the server
# is paused, drained, given the new weights in sampling mode, and the version
# bumped to 2; one RL round runs on tasks whose verifier passes about half the
# attempts (a coin flip, so that the round's GRPO advantages are not all zero
# whatever the barely trained policy writes; a long agent deadline, as a
# loaded machine samples slowly), then one RL update.
# Checks: the weights change (SFT and RL); every call of the round carries
# version 2 at start and end; forge-pack --max-staleness 0 over the teacher
# rollouts and the round drops the teacher's version-1 samples as stale and
# keeps the round's; the trainer's log-probabilities equal the recorded ones
# (max abs diff <= 1e-4) for single-call and merged multi-call rows.
# Needs Debian's python3-torch (bootstrap installs it) and bubblewrap: exits
# 77 (skipped) without them.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
py=/usr/bin/python3
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
  echo "SKIP: $py cannot import torch and numpy (apt-get install python3-torch)"; exit 77
fi
if ! bwrap --ro-bind / / true 2>/dev/null; then
  echo "SKIP: bubblewrap cannot run here"; exit 77
fi
here=$SRC/examples/loop
bin=$(cd "$BIN" && pwd)
out=$(mktemp -d /tmp/forge-loop.XXXXXX)
jobs=4
mkdir -p "$out/runs" "$out/weights"
export FORGE_LOCAL_ROOT=$out/sandboxes
source "$here/lib.sh"
on_exit='[ -n "${KEEP:-}" ] || rm -rf "$out"'
fail() { echo "FAIL: $*" >&2; for f in "$out"/*.log; do echo "--- $f"; tail -5 "$f"; done >&2; exit 1; }
trainer() { "$py" "$here/trainer.py" "$@" 2>>"$out/trainer.log"; }
same_weights() {  # a b: exit 0 when every tensor is equal
  "$py" - "$1" "$2" <<'PY'
import os
import sys
import numpy as np
sys.path.insert(0, os.environ["LOOP_DIR"])
import policy
a, _ = policy.read_safetensors(sys.argv[1])
b, _ = policy.read_safetensors(sys.argv[2])
sys.exit(0 if a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a) else 1)
PY
}
export LOOP_DIR=$here

"$py" "$here/make_tasks.py" "$out/tasks" --train 8 --heldout 2 >/dev/null
# The round's tasks: the first four train tasks with a coin-flip verifier.
head -4 "$out/tasks/train.jsonl" |
  jq -c '.verifier.command = "[ $(od -An -N1 -tu1 /dev/urandom) -lt 128 ]" | .agent.timeout_sec = 600' \
  >"$out/coin.jsonl"

trainer init --seed 3 --out "$out/weights/v0.safetensors" >/dev/null
start_server policy --weights "$out/weights/v0.safetensors" --teacher --seed 3
policy_url=$server_url
start_proxy "$out/forge.db" "$policy_url"
policy_proxy=$proxy_url

echo "== teacher rollouts at policy version 1, SFT"
admin "policy-version?version=1"
rollouts teacher "$out/tasks/train.jsonl" 1 "$policy_proxy" "$out/forge.db"
[[ "$(jq -s 'map(select(.verdict.passed)) | length' "$out/runs/teacher.verdicts.jsonl")" == 8 ]] ||
  fail "the teacher should pass all 8 tasks: $(jq -c .verdict "$out/runs/teacher.verdicts.jsonl" | head -3)"
"$bin/forge-pack" --store "$out/forge.db" --format sft-tokens --passed-only --quiet \
  "$out/runs/teacher.verdicts.jsonl" >"$out/sft.jsonl"
[[ "$(wc -l <"$out/sft.jsonl")" == 8 ]] || fail "expected 8 SFT rows (one merged sample a rollout)"
trainer sft --weights "$out/weights/v0.safetensors" --data "$out/sft.jsonl" --steps 40 --lr 1e-2 --seed 3 \
  --out "$out/weights/v1.safetensors" >"$out/sft.json" || fail "trainer sft"
jq -e '.last_loss < .first_loss' "$out/sft.json" >/dev/null || fail "SFT loss did not fall: $(cat "$out/sft.json")"
! same_weights "$out/weights/v0.safetensors" "$out/weights/v1.safetensors" || fail "SFT left the weights as they were"

echo "== pause, drain, new weights, policy version 2, resume; one RL round"
load "$out/weights/v1.safetensors" 2 false
curl -fs "$policy_proxy/admin/state" | jq -e '.policy_version == 2 and (.paused | not)' >/dev/null ||
  fail "proxy state: $(curl -fs "$policy_proxy/admin/state")"
curl -fs "$policy_url/admin/state" | jq -e --arg w "$out/weights/v1.safetensors" '.weights == $w and (.teacher | not)' \
  >/dev/null || fail "server state: $(curl -fs "$policy_url/admin/state")"
rollouts round "$out/coin.jsonl" 4 "$policy_proxy" "$out/forge.db"
ids=$(jq -r '"\u0027" + .rollout_id + "\u0027"' "$out/runs/round.rollouts.jsonl" | paste -sd,)
versions=$(sqlite3 "$out/forge.db" \
  "SELECT policy_version_start || '/' || policy_version_end, count(*) FROM calls WHERE rollout_id IN ($ids) GROUP BY 1")
[[ "$versions" =~ ^2/2\|[0-9]+$ ]] || fail "the round's calls should all be at version 2 start and end: $versions"
echo "round calls: $versions"

echo "== forge-pack rl --max-staleness 0 over the teacher's rollouts and the round"
cat "$out/runs/teacher.verdicts.jsonl" "$out/runs/round.verdicts.jsonl" >"$out/both.jsonl"
mkdir -p "$out/rl"
"$bin/forge-pack" --store "$out/forge.db" --format rl --advantage grpo --max-staleness 0 --quiet \
  --stats "$out/rl.stats.json" --out-dir "$out/rl" "$out/both.jsonl" >"$out/rl/index.jsonl" ||
  fail "forge-pack rl exit $?"
jq -e '.dropped.stale == 8' "$out/rl.stats.json" >/dev/null ||
  fail "the 8 teacher samples (version 1) should be dropped as stale: $(jq -c .dropped "$out/rl.stats.json")"
packed=$(jq -r '.rollout_ids[]' "$out/rl/index.jsonl" | sort -u)
[[ -n "$packed" ]] || fail "nothing of the round was packed: $(jq -c .dropped "$out/rl.stats.json")"
for r in $packed; do
  grep -q "\"$r\"" "$out/runs/round.rollouts.jsonl" || fail "$r is not a rollout of the round (stale data packed)"
done

echo "== log-probability agreement, then one GRPO update"
trainer check-logprobs --weights "$out/weights/v1.safetensors" --index "$out/rl/index.jsonl" >"$out/check.json" ||
  fail "trainer and server disagree: $(cat "$out/check.json")"
cat "$out/check.json"
jq -e '.tokens > 0 and .rows_merged > 0' "$out/check.json" >/dev/null ||
  fail "expected merged multi-call rows among the round's samples: $(cat "$out/check.json")"
trainer rl --weights "$out/weights/v1.safetensors" --index "$out/rl/index.jsonl" --updates 2 \
  --out "$out/weights/v2.safetensors" >"$out/rl.json" || fail "trainer rl"
jq -e '.agreement.max_abs_diff <= 1e-4' "$out/rl.json" >/dev/null || fail "rl agreement: $(cat "$out/rl.json")"
! same_weights "$out/weights/v1.safetensors" "$out/weights/v2.safetensors" || fail "the RL update left the weights as they were"

echo "== the server loads the RL weights"
load "$out/weights/v2.safetensors" 3
curl -fs "$policy_url/admin/state" | jq -e --arg w "$out/weights/v2.safetensors" '.weights == $w' >/dev/null ||
  fail "server did not load v2"
echo PASS
