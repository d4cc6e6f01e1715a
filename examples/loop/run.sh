#!/usr/bin/env bash
# The loop closed in miniature (examples/loop/README.md): a small policy learns,
# round after round, from what forge recorded.
#
#   examples/loop/run.sh [--out DIR] [--seed S] [--train-tasks N] [--validation-tasks N] [--heldout-tasks N]
#                        [--untrained-tasks N] [--rounds R] [--attempts N] [--round-tasks T] [--eval-attempts N]
#                        [--sft-steps K] [--sft-chunk K] [--sft-band LO:HI] [--updates K] [--sft-lr X] [--rl-lr X]
#                        [--jobs J]
#
# A teacher (policy_server.py --teacher) solves the train split through
# forge-proxy; forge-verify keeps the passed rollouts, forge-dedup drops
# duplicates, forge-pack writes sft-tokens and the trainer's SFT stage starts
# the policy, --sft-chunk steps at a time: each piece's checkpoint is served
# and measured as the held-out split is (one attempt at each validation task,
# forge-verify's pass@1; the first 8 tasks first, the rest only when those pass
# at least half of LO). SFT stops at the first checkpoint inside --sft-band; one
# above it is dropped and the piece redone from the checkpoint before, half as
# long (down to one step, then it is kept), so that every seed leaves RL the
# same room (the rise is steep: 0.1 to 0.6 in 5 steps). Each
# round then: forge-proxy pause + drain, the policy server loads the newest
# weights, the policy version is bumped, resume; forge-launch runs N attempts
# at each of T train tasks drawn for the round (reference ReACT harness, local
# backend under bubblewrap), forge-verify, forge-pack rl --max-staleness 0,
# one GRPO update (the trainer first checks its log-probabilities against the
# recorded ones). Held-out pass@1 is measured for the untrained model (on the
# first --untrained-tasks held-out tasks), the SFT checkpoint and after every
# round; DIR/rounds.jsonl keeps the figures, DIR/runs/ every stage's records.
# Every checkpoint served is a policy version (0 untrained, 1.. the SFT pieces,
# then one a round), so `forge-verify report --by policy_version` over the
# held-out verdicts is the learning curve, which DIR/learning.html draws
# after each evaluation.
# FORGE_BIN names the directory with the forge binaries (default: build).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
out=loop-out seed=1 train_tasks=256 validation_tasks=48 heldout_tasks=32 untrained_tasks= rounds=3 attempts=4
round_tasks=64 eval_attempts=4 sft_steps=600 sft_chunk=20 sft_band=0.4:0.6 updates=4 jobs=4 sft_lr=3e-3 rl_lr=1e-3
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --train-tasks) train_tasks=$2; shift 2 ;;
    --validation-tasks) validation_tasks=$2; shift 2 ;;
    --heldout-tasks) heldout_tasks=$2; shift 2 ;;
    --untrained-tasks) untrained_tasks=$2; shift 2 ;;
    --attempts) attempts=$2; shift 2 ;;
    --round-tasks) round_tasks=$2; shift 2 ;;
    --eval-attempts) eval_attempts=$2; shift 2 ;;
    --sft-steps) sft_steps=$2; shift 2 ;;
    --sft-chunk) sft_chunk=$2; shift 2 ;;
    --sft-band) sft_band=$2; shift 2 ;;
    --updates) updates=$2; shift 2 ;;
    --sft-lr) sft_lr=$2; shift 2 ;;
    --rl-lr) rl_lr=$2; shift 2 ;;
    --jobs|-j) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "loop: unknown argument $1 (try --help)" >&2; exit 64 ;;
  esac
done
bin=$(cd "${FORGE_BIN:-$src/build}" && pwd)
py=/usr/bin/python3
for tool in forge-proxy forge-launch forge-verify forge-dedup forge-pack; do
  [ -x "$bin/$tool" ] || { echo "loop: $bin/$tool missing (build it, or set FORGE_BIN)" >&2; exit 69; }
done
"$py" -c 'import torch, numpy' 2>/dev/null || { echo "loop: $py lacks torch/numpy (apt-get install python3-torch)" >&2; exit 69; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "${out:?}"/{tasks,runs,sandboxes,weights,*.db*,rounds.jsonl,*.log}
mkdir -p "$out/runs" "$out/weights"
export FORGE_LOCAL_ROOT=$out/sandboxes
say() { printf '== %s\n' "$*" >&2; }

source "$here/lib.sh"

# evaluate STAGE VERSION [TASKS]: held-out pass@1 of the weights now served, a line of rounds.jsonl
# (with the JSON members in $extra).
evaluate() {
  rollouts "eval-$1" "${3:-$out/tasks/heldout.jsonl}" "$eval_attempts" "$policy_proxy" "$out/forge.db"
  local p; p=$(pass_at_1 "$out/runs/eval-$1.verdicts.jsonl")
  printf '%-10s policy_version %-3s held-out pass@1 %s\n' "$1" "$2" "$p"
  jq -nc --arg stage "$1" --argjson v "$2" --argjson p "$p" --arg w "$out/weights/v$2.safetensors" \
    "{stage: \$stage, policy_version: \$v, heldout_pass_at_1: \$p, weights: \$w} + {${extra:-}}" \
    >>"$out/rounds.jsonl"
  # The learning curve so far: held-out pass@1 per policy version (read from the calls), with intervals.
  "$bin/forge-verify" report --by policy_version --store "$out/forge.db" -k 1 --html "$out/learning.html" \
    "$out"/runs/eval-*.verdicts.jsonl >/dev/null 2>>"$out/report.log" || true
}

say "tasks: train, validation and held-out splits"
"$py" "$here/make_tasks.py" "$out/tasks" --train "$train_tasks" --validation "$validation_tasks" \
  --heldout "$heldout_tasks" >/dev/null
head -n "${untrained_tasks:-$heldout_tasks}" "$out/tasks/heldout.jsonl" >"$out/tasks/untrained.jsonl"

say "policy server (untrained, seed $seed) and forge-proxy in front of it"
"$py" "$here/trainer.py" init --seed "$seed" --out "$out/weights/v0.safetensors" >/dev/null
start_server policy --weights "$out/weights/v0.safetensors" --seed "$seed"
policy_url=$server_url
start_proxy "$out/forge.db" "$policy_url"
policy_proxy=$proxy_url
admin "policy-version?version=0"
extra= evaluate untrained 0 "$out/tasks/untrained.jsonl"

say "teacher: one rollout per train task through forge-proxy -> forge-verify -> forge-dedup -> forge-pack sft-tokens"
start_server teacher --teacher --teacher-error 0.1 --seed "$seed"
start_proxy "$out/teacher.db" "$server_url"
rollouts teacher "$out/tasks/train.jsonl" 1 "$proxy_url" "$out/teacher.db"
"$bin/forge-dedup" --field logs.stdout --id-field rollout_id --threshold 1 --quiet \
  --rank 'verdict.reward desc,rollout_id asc' --dropped "$out/runs/teacher.dropped.jsonl" \
  <"$out/runs/teacher.verdicts.jsonl" >"$out/runs/teacher.deduped.jsonl"
"$bin/forge-pack" --store "$out/teacher.db" --format sft-tokens --passed-only --quiet \
  "$out/runs/teacher.deduped.jsonl" >"$out/runs/sft-tokens.jsonl"
say "teacher: $(jq -s 'map(select(.verdict.passed)) | length' "$out/runs/teacher.verdicts.jsonl") of \
$(wc -l <"$out/runs/teacher.verdicts.jsonl") passed, $(wc -l <"$out/runs/teacher.deduped.jsonl") after dedup, \
$(wc -l <"$out/runs/sft-tokens.jsonl") SFT rows"

low=${sft_band%%:*} high=${sft_band##*:}
jq -en "$low <= $high" >/dev/null 2>&1 || { echo "loop: --sft-band $sft_band: expected LO:HI" >&2; exit 64; }
say "SFT: $sft_chunk steps at a time until validation pass@1 is in [$low, $high] (room for RL), at most $sft_steps steps"
head -n 8 "$out/tasks/validation.jsonl" >"$out/runs/validation-quick.tasks.jsonl"
tail -n +9 "$out/tasks/validation.jsonl" >"$out/runs/validation-rest.tasks.jsonl"
# validate VERSION: validation pass@1 of the weights now served -> $valid. A quick
# look first: when the first 8 tasks pass under half of LO, the checkpoint is
# below the band (a miss costs one more piece), else the rest too.
validate() {
  local v=$1
  rollouts "validation-$v-quick" "$out/runs/validation-quick.tasks.jsonl" 1 "$policy_proxy" "$out/forge.db"
  cp "$out/runs/validation-$v-quick.verdicts.jsonl" "$out/runs/validation-$v.verdicts.jsonl"
  valid=$(pass_at_1 "$out/runs/validation-$v.verdicts.jsonl")
  if jq -en "$valid >= $low / 2" >/dev/null && [ -s "$out/runs/validation-rest.tasks.jsonl" ]; then
    rollouts "validation-$v-rest" "$out/runs/validation-rest.tasks.jsonl" 1 "$policy_proxy" "$out/forge.db"
    cat "$out/runs/validation-$v-rest.verdicts.jsonl" >>"$out/runs/validation-$v.verdicts.jsonl"
    valid=$(pass_at_1 "$out/runs/validation-$v.verdicts.jsonl")
  fi
}
# from: the last checkpoint below the band (0: the untrained weights) and its steps.
version=0 from=0 from_steps=0 chunk=$sft_chunk
while :; do
  version=$((version + 1)) steps=$((from_steps + chunk))
  resume=()
  [ "$from" -eq 0 ] || resume=(--resume "$out/weights/v$from.state")
  "$py" "$here/trainer.py" sft --weights "$out/weights/v$from.safetensors" "${resume[@]}" \
    --data "$out/runs/sft-tokens.jsonl" --steps "$chunk" --lr "$sft_lr" --seed "$seed" \
    --out "$out/weights/v$version.safetensors" --save-state "$out/weights/v$version.state" \
    >"$out/runs/sft-$version.json" 2>>"$out/trainer.log"
  load "$out/weights/v$version.safetensors" "$version"
  validate "$version"
  tasks=$(wc -l <"$out/runs/validation-$version.verdicts.jsonl")
  say "SFT step $steps (policy version $version): validation pass@1 $valid over $tasks tasks"
  jq -nc --argjson v "$version" --argjson s "$steps" --argjson p "$valid" --argjson n "$tasks" \
    '{policy_version: $v, steps: $s, validation_pass_at_1: $p, validation_tasks: $n}' >>"$out/runs/sft-checks.jsonl"
  if jq -en "$valid > $high" >/dev/null && [ "$chunk" -ge 2 ]; then
    chunk=$((chunk / 2))  # overshot: the piece again from the checkpoint before, half as long
  elif jq -en "$valid < $low" >/dev/null && [ "$steps" -lt "$sft_steps" ]; then
    from=$version from_steps=$steps
  else
    break
  fi
done
extra="sft_steps: $steps, validation_pass_at_1: $valid" evaluate sft "$version"

for round in $(seq 1 "$rounds"); do
  say "round $round: $attempts attempts at each of $round_tasks train tasks, policy version $version"
  shuf -n "$round_tasks" --random-source=<(yes "$seed-$round") "$out/tasks/train.jsonl" >"$out/runs/round-$round.tasks.jsonl"
  rollouts "round-$round" "$out/runs/round-$round.tasks.jsonl" "$attempts" "$policy_proxy" "$out/forge.db"
  train_p=$(pass_at_1 "$out/runs/round-$round.verdicts.jsonl")
  rm -rf "$out/runs/rl-$round"
  mkdir -p "$out/runs/rl-$round"  # the index is written there as forge-pack runs
  "$bin/forge-pack" --store "$out/forge.db" --format rl --advantage grpo --drop-zero-variance \
    --max-staleness 0 --out-dir "$out/runs/rl-$round" --quiet --stats "$out/runs/rl-$round.stats.json" \
    "$out/runs/round-$round.verdicts.jsonl" >"$out/runs/rl-$round/index.jsonl"
  next=$((version + 1))
  if [ -s "$out/runs/rl-$round/index.jsonl" ]; then
    "$py" "$here/trainer.py" rl --weights "$out/weights/v$version.safetensors" \
      --index "$out/runs/rl-$round/index.jsonl" --updates "$updates" --lr "$rl_lr" --seed "$seed" \
      --out "$out/weights/v$next.safetensors" >"$out/runs/rl-$round.json" 2>>"$out/trainer.log"
    diff=$(jq -r '.agreement | "\(.max_abs_diff) over \(.rows_single) single-call and \(.rows_merged) merged rows"' \
      "$out/runs/rl-$round.json")
    agreement=$(jq -c .agreement "$out/runs/rl-$round.json")
  else
    cp "$out/weights/v$version.safetensors" "$out/weights/v$next.safetensors"
    diff="n/a (every group had equal rewards)" agreement=null
  fi
  say "round $round: train pass@1 $train_p; trainer vs recorded logprobs, max abs diff $diff"
  load "$out/weights/v$next.safetensors" "$next"
  version=$next
  extra="train_pass_at_1: $train_p, agreement: $agreement" evaluate "round-$round" "$version"
done
say "figures: $out/rounds.jsonl"
