#!/usr/bin/env bash
# The main job end to end on the example tasks shipped in examples/:
#   forge-proxy in front of a policy, forge-launch (the reference ReACT
#   harness in a Docker sandbox per rollout), forge-verify (the tasks' own
#   Harbor verifiers, in the rollouts' sandboxes), forge-dedup, forge-pack
#   (SFT messages and packed RL batches from the recorded token ids).
#
# The embedded default policy is a recorded example played back by
# forge-proxy itself (--replay examples/demo-recorded.jsonl), so no GPU is
# needed. Name a real OpenAI-compatible policy server (vLLM, SGLang) to use
# it instead (or set FORGE_DEMO_UPSTREAM):
#   bash scripts/demo.sh --upstream http://127.0.0.1:8000 --model NAME
#
# Output goes to demo-out/ (FORGE_DEMO_OUT); the summary says what is where.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
upstream=${FORGE_DEMO_UPSTREAM:-}
model="policy"
attempts=4
while [ $# -gt 0 ]; do
  case "$1" in
    --upstream) upstream=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    -n) attempts=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo: unknown argument $1 (try --help)" >&2; exit 64 ;;
  esac
done

say() { printf '\n== %s\n' "$*" >&2; }

say "installing what is missing, starting dockerd, building"
bash scripts/bootstrap.sh >&2
bash scripts/start-dockerd.sh
build=${FORGE_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target forge-proxy forge-launch forge-verify forge-dedup forge-pack >&2
bin=$(cd "$build" && pwd)
bash scripts/make-busybox-image.sh >&2

out=${FORGE_DEMO_OUT:-$src/demo-out}
rm -rf "$out"
mkdir -p "$out"
store=$out/forge.db
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  "$bin/forge-launch" --backend docker gc --run-id "${run_id:-none}" >/dev/null 2>&1 || true
}
trap cleanup EXIT

if [ -n "$upstream" ]; then
  say "starting forge-proxy in front of $upstream"
  policy=(--upstream "$upstream")
else
  say "starting forge-proxy playing back the embedded default policy (a recorded example, no GPU)"
  policy=(--replay examples/demo-recorded.jsonl)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin/forge-proxy" --store "$store" "${policy[@]}" --listen 127.0.0.1 --port "$port" 2>"$out/proxy.log" &
pids+=($!)
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$port/healthz" >/dev/null || { echo "demo: forge-proxy did not start; see $out/proxy.log" >&2; exit 69; }

run_id="demo-$(date +%Y%m%d-%H%M%S)"
say "forge-launch: $attempts attempts of each example task, one Docker sandbox each"
"$bin/forge-launch" --store "$store" --backend docker --harness react --model "$model" \
  --proxy "http://127.0.0.1:$port" --run-id "$run_id" -n "$attempts" -j 4 --hold \
  examples/tasks.jsonl >"$out/rollouts.jsonl"

say "forge-verify: each task's own verifier, in the rollout's sandbox"
status=0
"$bin/forge-verify" run --store "$store" --tasks examples/tasks.jsonl -j 4 \
  <"$out/rollouts.jsonl" >"$out/verdicts.jsonl" || status=$?
# 1 means some verdicts are negative, which a demo with failing attempts expects.
[ "$status" -le 1 ] || exit "$status"
# The report page: pass@k curves, outcomes, and the agent's behaviour (tool
# use, self-verification, recovery, turns and tokens) from the recorded calls.
"$bin/forge-verify" report --json -k 1,2 --store "$store" --html "$out/report.html" \
  "$out/verdicts.jsonl" >"$out/report.json"

say "forge-dedup: drop near-duplicate trajectories"
"$bin/forge-dedup" --field logs.stdout --id-field rollout_id --rank 'verdict.reward desc,rollout_id asc' \
  --dropped "$out/dropped.jsonl" --quiet <"$out/verdicts.jsonl" >"$out/deduped.jsonl"

say "forge-pack: SFT messages and RL batches from the recorded token ids"
"$bin/forge-pack" --store "$store" --format sft-messages --passed-only --quiet \
  "$out/deduped.jsonl" >"$out/sft.jsonl"
"$bin/forge-pack" --store "$store" --format rl --advantage grpo --out-dir "$out/rl" --quiet \
  "$out/verdicts.jsonl" >"$out/rl-index.jsonl"

say "summary"
"$bin/forge-verify" report --table -k 1,2 "$out/verdicts.jsonl" || true
calls=$(sqlite3 "$store" "select count(*) from calls")
cat <<SUMMARY

  model calls recorded by forge-proxy:  $calls (store: $store)
  rollouts:                             $(wc -l <"$out/rollouts.jsonl")  ($out/rollouts.jsonl)
  verdicts:                             $(wc -l <"$out/verdicts.jsonl")  ($out/verdicts.jsonl, report: $out/report.json)
  after dedup:                          $(wc -l <"$out/deduped.jsonl")  (dropped: $out/dropped.jsonl)
  SFT samples (passed only):            $(wc -l <"$out/sft.jsonl")  ($out/sft.jsonl)
  RL micro-batches (safetensors):       $(wc -l <"$out/rl-index.jsonl")  ($out/rl/, index: $out/rl-index.jsonl)
  report page (open in a browser):      $out/report.html
SUMMARY
