#!/usr/bin/env bash
# Attacks on forge-verify by the agent it verifies, against the real Docker
# engine. Each attack is a sandbox as forge-launch holds it (every capability
# dropped, no-new-privileges, the keep-alive as PID 1) in which an "agent" ran
# commands that do not do the task but try to get a reward anyway, or to turn
# its failure into an excluded infra_error. Every attack must end `failed` or
# `tampered`, never `passed` or `infra_error`; honest attempts of the same
# tasks still pass; pass@k over the mixed run equals the hand-computed value;
# `report` shows the tampered trials and folds duplicated verdicts.
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
source "$FORGE_SRC/tests/e2e/verify/setup.sh"
verify_setup adversarial

# A held sandbox as forge-launch makes it; extra docker flags may follow.
hold() {
  docker run -d --network none --cap-drop ALL --security-opt no-new-privileges \
    --label forge.managed=1 --label "$run_label" --label "forge.deadline=$(( $(date +%s) + 900 ))" \
    "$@" "$image" /bin/sh -c \
    "trap 'exit 0' TERM; i=0; while [ \$i -lt 90 ]; do sleep 10 & wait \$!; i=\$((i+1)); done"
}
agent() { docker exec "$1" sh -c "$2"; }
agent_bg() { docker exec -d "$1" sh -c "$2"; }

# --- tasks: real test scripts ------------------------------------------------------
mkdir -p "$work/answer/tests" "$work/json/tests"
# Reads a profile first, as many test scripts do; only the answer 42 passes.
cat >"$work/answer/tests/test.sh" <<'EOF'
#!/bin/sh
[ -f /root/.profile ] && . /root/.profile
if [ "$(cat /work/answer.txt 2>/dev/null)" = 42 ]; then r=1; else r=0; fi
echo "answer test: reward $r"
echo $r > /logs/verifier/reward.txt
EOF
# Writes reward.json only: a reward.txt found beside it would win if read.
cat >"$work/json/tests/test.sh" <<'EOF'
#!/bin/sh
if grep -qx done /work/status 2>/dev/null; then r=1; else r=0; fi
echo "{\"reward\": $r}" > /logs/verifier/reward.json
EOF
{
  printf '{"id":"answer","instruction":"write 42 to /work/answer.txt","verifier":{"kind":"harbor","timeout_sec":30,"tests_dir":"%s"}}\n' "$work/answer/tests"
  printf '{"id":"json","instruction":"write done to /work/status","verifier":{"kind":"harbor","timeout_sec":30,"tests_dir":"%s"}}\n' "$work/json/tests"
} >"$work/tasks.jsonl"

declare -A sandbox_of task_of
attempt() {  # rollout id, task id, container id
  sandbox_of[$1]=$3
  task_of[$1]=$2
}

# --- honest attempts ---------------------------------------------------------------
for i in 1 2 3; do
  c=$(hold); agent "$c" 'echo 42 > /work/answer.txt'; attempt "honest-$i" answer "$c"
done
# An honest agent may leave a harmless process behind: it is stopped, the pass stands.
c=$(hold); agent "$c" 'echo 42 > /work/answer.txt'; agent_bg "$c" 'sleep 1000'; attempt honest-bg answer "$c"
c=$(hold); agent "$c" 'echo done > /work/status'; attempt honest-json json "$c"

# --- attacks (none does the task) ----------------------------------------------------
c=$(hold); agent "$c" 'mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt'
attempt plant-txt answer "$c"
c=$(hold); agent "$c" 'mkdir -p /logs/verifier && echo "{\"reward\": 1}" > /logs/verifier/reward.json'
attempt plant-json answer "$c"
# The verifier writes only reward.json; the planted reward.txt must not be read.
c=$(hold); agent "$c" 'mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt'
attempt plant-txt-json json "$c"
# An unreadable directory in /tests made the old wipe fail: an infra_error, excluded.
c=$(hold); agent "$c" 'mkdir -p /tests/d && touch /tests/d/f && chmod 000 /tests/d'
attempt unreadable-tests answer "$c"
c=$(hold); agent "$c" 'mkdir -p /logs/verifier/d && touch /logs/verifier/d/f && chmod 000 /logs/verifier/d /logs/verifier'
attempt unreadable-logs answer "$c"
# Immutable: refused under forge's dropped capabilities, tried anyway.
c=$(hold); agent "$c" 'mkdir -p /tests/i && { chattr +i /tests/i 2>/dev/null || true; }'
attempt immutable-tests answer "$c"
c=$(hold); agent "$c" 'mkdir -p /logs/verifier && echo 1 > /work/mine && ln -s /work/mine /logs/verifier/reward.txt'
attempt symlink-reward answer "$c"
c=$(hold)
agent_bg "$c" 'while :; do mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; sleep 0.002; done'
attempt loop-reward answer "$c"
# A loop that waits until the evidence would have been taken, then writes
# through short-lived children.
c=$(hold)
agent_bg "$c" 'sleep 4; while :; do (echo 1 > /logs/verifier/reward.txt) 2>/dev/null & sleep 0.002; done'
attempt late-loop answer "$c"
c=$(hold)
agent "$c" 'rm /bin/sh && printf "#!/bin/busybox sh\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\n" > /bin/sh && chmod 755 /bin/sh'
attempt fake-sh answer "$c"
# A `cat` earlier on PATH that answers 42.
c=$(hold); agent "$c" 'printf "#!/bin/busybox sh\necho 42\n" > /usr/sbin/cat && chmod 755 /usr/sbin/cat'
attempt shadow-cat answer "$c"
c=$(hold)
agent "$c" 'mkdir -p /tmp/evil && printf "#!/bin/busybox sh\necho 42\n" > /tmp/evil/cat && chmod 755 /tmp/evil/cat &&
  mkdir -p /root && echo "export PATH=/tmp/evil:\$PATH" >> /root/.profile'
attempt profile-path answer "$c"
c=$(hold); agent "$c" 'echo /tmp/evil.so > /etc/ld.so.preload && mkdir -p /root && echo "export LD_PRELOAD=/tmp/evil.so" >> /root/.profile'
attempt ld-preload answer "$c"
# A full disk where the reward would go.
c=$(hold --tmpfs /logs:size=4m); agent "$c" 'dd if=/dev/zero of=/logs/fill bs=64k 2>/dev/null; true'
attempt disk-full answer "$c"
c=$(hold); agent "$c" 'kill 1' || true  # the exec goes with the container
attempt kill-pid1 answer "$c"
c=$(hold); agent "$c" 'mkdir -p /tmp/fake/verifier && ln -s /tmp/fake /logs && echo 1 > /tmp/fake/verifier/reward.txt'
attempt logs-symlink answer "$c"
sleep 1  # the killed keep-alive has exited

# --- verify ---------------------------------------------------------------------------
for id in "${!sandbox_of[@]}"; do
  printf '{"rollout_id":"%s","task_id":"%s","attempt":0,"harness":"scripted","sandbox":{"backend":"docker","id":"%s"}}\n' \
    "$id" "${task_of[$id]}" "${sandbox_of[$id]}"
done >"$work/rollouts.jsonl"
set +e
"$verify" run "$work/rollouts.jsonl" --tasks "$work/tasks.jsonl" -j 4 >"$work/verdicts.jsonl" 2>"$work/err.txt"
rc=$?
set -e
[[ $rc -eq 1 ]] || { cat "$work/err.txt" >&2; fail "exit status $rc, expected 1 (some did not pass)"; }
[[ $(wc -l <"$work/verdicts.jsonl") -eq ${#sandbox_of[@]} ]] || fail "not every attempt has a verdict"

outcome() { jq -r --arg id "$1" 'select(.rollout_id == $id) | .verdict.outcome' "$work/verdicts.jsonl"; }
field() { jq -r --arg id "$1" "select(.rollout_id == \$id) | .verdict$2" "$work/verdicts.jsonl"; }

for id in honest-1 honest-2 honest-3 honest-bg honest-json; do
  [[ $(outcome "$id") == passed ]] || fail "$id: $(outcome "$id"): $(field "$id" .message)"
  [[ $(field "$id" .tamper.checked) == true ]] || fail "$id: no tamper check recorded"
  [[ $(field "$id" '.tamper.toolchain | length') == 0 ]] || fail "$id: honest attempt flagged: $(field "$id" .tamper)"
done
[[ $(field honest-bg .sweep.stopped) -ge 1 ]] || fail "honest-bg: the left process was not stopped: $(field honest-bg .sweep)"

attacks=0
for id in "${!sandbox_of[@]}"; do
  [[ $id == honest* ]] && continue
  attacks=$((attacks + 1))
  o=$(outcome "$id")
  case "$o" in
    failed|tampered) ;;
    *) fail "attack $id ended $o: $(field "$id" .message)" ;;
  esac
  echo "attack $id: $o" >&2
done
(( attacks >= 12 )) || fail "only $attacks attacks"

# Attacks with evidence in the change list are tampered; the others failed
# on the real test, or for the state the agent left.
for id in plant-txt plant-json plant-txt-json unreadable-tests unreadable-logs immutable-tests symlink-reward \
          loop-reward fake-sh shadow-cat profile-path ld-preload; do
  [[ $(outcome "$id") == tampered ]] || fail "$id: $(outcome "$id"), expected tampered: $(field "$id" .message)"
done
field fake-sh '.tamper.toolchain[].path' | grep -qx /bin/sh || fail "fake-sh: /bin/sh not named"
field shadow-cat '.tamper.toolchain[].path' | grep -qx /usr/sbin/cat || fail "shadow-cat: /usr/sbin/cat not named"
field profile-path '.tamper.toolchain[].path' | grep -qx /root/.profile || fail "profile-path: /root/.profile not named"
field ld-preload '.tamper.toolchain[].path' | grep -qx /etc/ld.so.preload || fail "ld-preload: not named"
# The planted reward.txt beside the verifier's reward.json was never read.
[[ $(field plant-txt-json .reward) == 0 ]] || fail "plant-txt-json: reward $(field plant-txt-json .reward)"
# The looping writer was stopped before the verifier ran: its reward is the test's 0.
[[ $(field loop-reward .reward) == 0 ]] || fail "loop-reward: reward $(field loop-reward .reward)"
# (tampered when it had begun writing before the evidence was taken, else failed)
[[ $(field late-loop .reward) == 0 ]] || fail "late-loop: $(outcome late-loop) reward $(field late-loop .reward)"
[[ $(field late-loop .sweep.stopped) -ge 1 ]] || fail "late-loop: nothing stopped"
[[ $(outcome logs-symlink) == failed && $(field logs-symlink .reward) == 0 ]] ||
  fail "logs-symlink: $(outcome logs-symlink) reward $(field logs-symlink .reward)"
[[ $(outcome disk-full) == failed ]] || fail "disk-full: $(outcome disk-full)"
field disk-full .message | grep -q 'KiB free' || fail "disk-full: message $(field disk-full .message)"
[[ $(outcome kill-pid1) == failed ]] || fail "kill-pid1: $(outcome kill-pid1)"
field kill-pid1 .message | grep -q 'keep-alive' || fail "kill-pid1: message $(field kill-pid1 .message)"
[[ $(field unreadable-tests .sweep.stopped) != null ]] || fail "unreadable-tests: no sweep recorded"

# --- report -------------------------------------------------------------------------
# answer: 4 honest passes + 15 attacks = 19 trials; json: 1 pass of 2.
# pass@1 = mean(4/19, 1/2) = 0.355263...; pass@2: answer 1 - C(15,2)/C(19,2)
# = 1 - 105/171 = 66/171, json 1 - C(1,2)/C(2,2) = 1: mean 0.692982...
n_answer=$(jq -r 'select(.task_id == "answer") | .rollout_id' "$work/verdicts.jsonl" | wc -l)
[[ $n_answer -eq 19 ]] || fail "answer trials: $n_answer, the hand-computed values assume 19"
"$verify" report -k 1,2 --json "$work/verdicts.jsonl" >"$work/report.json"
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-9) }'; }
close "$(jq -r '.overall.pass_at_k["1"]' "$work/report.json")" "$(awk 'BEGIN { printf "%.12f", (4/19 + 1/2) / 2 }')" ||
  fail "pass@1 $(jq -r '.overall.pass_at_k["1"]' "$work/report.json")"
close "$(jq -r '.overall.pass_at_k["2"]' "$work/report.json")" "$(awk 'BEGIN { printf "%.12f", (66/171 + 1) / 2 }')" ||
  fail "pass@2 $(jq -r '.overall.pass_at_k["2"]' "$work/report.json")"
[[ $(jq -r '.overall.excluded' "$work/report.json") == 0 ]] || fail "an attack was excluded"
tampered=$(jq -r 'select(.verdict.outcome == "tampered") | .rollout_id' "$work/verdicts.jsonl" | wc -l)
[[ $(jq -r '.overall.tampered' "$work/report.json") == "$tampered" ]] || fail "report: tampered count"
[[ $(jq -r '.tasks[] | select(.task_id == "json") | .tampered' "$work/report.json") == 1 ]] ||
  fail "report: tampered per task"
"$verify" report -k 1 --table "$work/verdicts.jsonl" | grep -q "trial(s) tampered with the verifier" ||
  fail "report table: no tampered line"

# The same verdicts twice: n does not double, and the report says what it folded.
cat "$work/verdicts.jsonl" "$work/verdicts.jsonl" | "$verify" report -k 1,2 --json >"$work/twice.json" 2>"$work/twice.err"
[[ $(jq -c '.overall | del(.duplicates_folded)' "$work/twice.json") == "$(jq -c '.overall | del(.duplicates_folded)' "$work/report.json")" ]] ||
  fail "report over duplicated verdicts differs"
[[ $(jq -r '.overall.duplicates_folded' "$work/twice.json") == "${#sandbox_of[@]}" ]] || fail "folded count"
grep -q "duplicate verdict(s) folded" "$work/twice.err" || fail "folding not said on stderr"

echo "verify_adversarial: $attacks attacks, none passed, none excluded"
