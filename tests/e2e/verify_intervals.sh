#!/usr/bin/env bash
# compare's per-task intervals against an independent reference
# (tests/e2e/verify/posterior_reference.py: the Jeffreys posterior's
# distribution function as an exact Fourier series, the difference's by
# tanh-sinh quadrature; no code shared with lib/verify/posterior.cpp), at
# n = 1, 2, 3, 10 and 100 trials per run, with passes at the edges (none,
# all) and between, and runs of different sizes: every end of every level
# and difference interval, for pass@k and pass^k at each k, has posterior
# probability 2.5 % below it (97.5 %) within 1e-7, or is the estimate or
# Jeffreys' 0 or 1 where it should be. Then the intervals' frequentist
# coverage by exact enumeration (tests/e2e/verify/coverage.py) at n = 1, 2,
# 3 and 10: near 95 % on average over true rates in 0.05..0.95, and never far
# below (the per-trial bootstrap these replaced covered 3 % on average at
# n = 1, 72 % at n = 3).
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
verify=$FORGE_BIN/forge-verify
reference=$FORGE_SRC/tests/e2e/verify/posterior_reference.py

run() {  # FILE PREFIX N C: N verdicts of task t, the first C passed
  local i outcome
  : >"$1"
  for ((i = 1; i <= $3; i++)); do
    outcome=failed; ((i <= $4)) && outcome=passed
    printf '{"rollout_id":"%s%d","task_id":"t","verdict":{"outcome":"%s"}}\n' "$2" "$i" "$outcome" >>"$1"
  done
}

# na ca nb cb ks
while read -r na ca nb cb ks; do
  run "$WORK/a.jsonl" a "$na" "$ca"
  run "$WORK/b.jsonl" b "$nb" "$cb"
  expect_exit 0 "compare n=($na,$nb) c=($ca,$cb)" "$verify" compare -k "$ks" --json "$WORK/a.jsonl" "$WORK/b.jsonl"
  python3 "$reference" check "$OUT" "$na" "$ca" "$nb" "$cb" && pass || fail "n=($na,$nb) c=($ca,$cb) k=$ks: $(jq -c '.tasks[0]' "$OUT")"
done <<'CASES'
1 0 1 1 1
1 1 1 1 1
2 1 2 2 1,2
2 0 2 0 1,2
3 0 3 3 1,2,3
3 1 3 2 1,3
10 2 10 7 1,2,10
10 0 10 10 1,5
100 40 100 55 1,2,10
100 0 100 3 1,10
100 97 100 100 1,2,10
3 1 100 60 1,3
100 50 3 3 1,2
CASES

# n: the least average coverage allowed, the least coverage at any rates.
while read -r n mean least; do
  python3 "$FORGE_SRC/tests/e2e/verify/coverage.py" "$verify" "$n" "$WORK" >"$WORK/coverage.json" &&
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); print("coverage", c)
assert float(sys.argv[2]) <= c["mean"] <= 0.98 and c["min"] >= float(sys.argv[3]), c' "$WORK/coverage.json" "$mean" "$least" &&
    pass || fail "coverage at n=$n: $(cat "$WORK/coverage.json")"
done <<'LIMITS'
1 0.94 0.75
2 0.94 0.80
3 0.94 0.85
10 0.94 0.90
LIMITS
finish
