#!/usr/bin/env bash
# forge-launch against the real Docker engine, the newer parts: skills copied
# into the profile's skills_dir (held and one-shot sandboxes, --skills and a
# task's own), SIGINT during one-shot sandboxes, per-rollout progress lines
# on a terminal and nothing on a pipe, and the Kubernetes flags.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
source "$SRC/tests/support/docker_runs.sh"
docker_launch_test e2x

echo "== skills: every folder with a SKILL.md lands in the profile's skills_dir"
mkdir -p "$work/skills/review/scripts" "$work/skills/deploy" "$work/skills/not-a-skill" "$work/task-skills/local"
printf -- '---\nname: review\n---\nReview it.\n' >"$work/skills/review/SKILL.md"
printf '#!/bin/sh\necho helper\n' >"$work/skills/review/scripts/run.sh"; chmod +x "$work/skills/review/scripts/run.sh"
printf -- '---\nname: deploy\n---\n' >"$work/skills/deploy/SKILL.md"
echo "no SKILL.md here" >"$work/skills/not-a-skill/README"
printf -- '---\nname: local\n---\n' >"$work/task-skills/local/SKILL.md"
mkdir -p "$work/profiles"
cat >"$work/profiles/skilled.json" <<'JSON'
{"name": "skilled", "command": ["/bin/sh", "-c", "cd /opt/skills && find . -type f | sort && ./review/scripts/run.sh"],
 "skills_dir": "/opt/skills"}
JSON
echo "{\"id\":\"sk\",\"instruction\":\"x\",\"skills\":\"$work/task-skills\"}" >"$work/skills.jsonl"
expected=$'./deploy/SKILL.md\n./local/SKILL.md\n./review/SKILL.md\n./review/scripts/run.sh\nhelper'
for mode in one-shot held; do
  extra=(); [[ "$mode" == held ]] && extra=(--hold)
  L --run-id "$run_prefix-skills-$mode" "${extra[@]}" --harness-dir "$work/profiles" --harness skilled \
    --skills "$work/skills" "$work/skills.jsonl" >"$work/skills-$mode.out"
  [[ "$(jq -r .outcome "$work/skills-$mode.out")" == ok ]] || fail "$mode skills outcome $(cat "$work/skills-$mode.out")"
  [[ "$(jq -r .logs.stdout "$work/skills-$mode.out")" == "$expected" ]] || fail "$mode skills: $(jq -r .logs.stdout "$work/skills-$mode.out")"
done
"$LAUNCH" --backend docker gc --run-id "$run_prefix-skills-held" 2>/dev/null
rc=0; L --run-id "$run_prefix-noskills" --skills "$work/skills/not-a-skill" --command true "$work/skills.jsonl" \
  >/dev/null 2>"$work/noskills.err" || rc=$?
[[ "$rc" == 64 ]] || fail "a --skills dir without skills: exit $rc"
grep -q "not-a-skill.*no skill folder" "$work/noskills.err" || fail "error does not name the dir: $(cat "$work/noskills.err")"

echo "== a harness profile that is not there: one error naming it, no store error after it"
rc=0; L --run-id "$run_prefix-noprofile" --harness-dir "$work/profiles" --harness no-such "$work/skills.jsonl" \
  >"$work/noprofile.out" 2>"$work/noprofile.err" || rc=$?
[[ "$rc" == 69 ]] || fail "a missing profile: exit $rc: $(cat "$work/noprofile.err")"
[[ "$(jq -r .outcome "$work/noprofile.out")" == infra_error ]] || fail "a missing profile: $(cat "$work/noprofile.out")"
grep -q "sk attempt 0: .*no-such.json: no such harness profile" "$work/noprofile.err" ||
  fail "the error does not name the task and profile: $(cat "$work/noprofile.err")"
! grep -q "store: rollout" "$work/noprofile.err" || fail "a store error followed: $(cat "$work/noprofile.err")"

echo "== SIGINT while one-shot sandboxes run: exit 130, nothing left"
for i in 1 2 3; do echo "{\"id\":\"s$i\",\"instruction\":\"x\"}"; done >"$work/sigint.jsonl"
"$LAUNCH" "${common[@]}" --run-id "$run_prefix-int" -j 3 --command 'sleep 100' "$work/sigint.jsonl" >"$work/int.out" 2>/dev/null &
launcher=$!
for _ in $(seq 300); do (( $(docker ps -q --filter "label=forge.run=$run_prefix-int" | wc -l) >= 3 )) && break; sleep 0.1; done
sleep 1
kill -INT "$launcher"
rc=0; wait "$launcher" || rc=$?
[[ "$rc" == 130 ]] || fail "SIGINT exit status $rc"
[[ "$(count_run "$run_prefix-int")" == 0 ]] || fail "SIGINT left containers"
[[ "$(jq -s '[.[] | select(.outcome == "cancelled")] | length' "$work/int.out")" == 3 ]] || fail "cancelled records"

echo "== progress: one line per running rollout with its phase on a terminal, nothing on a pipe"
for i in 1 2 3 4; do echo "{\"id\":\"p$i\",\"instruction\":\"x\"}"; done >"$work/progress.jsonl"
cmd="$LAUNCH --backend docker --store $work/forge.db --image $IMAGE --run-id $run_prefix-tty -j 2 --command 'sleep 2' $work/progress.jsonl > $work/tty.out"
# A pseudo-terminal for stderr (stdout goes to a file inside $cmd).
python3 -c 'import pty, sys; pty.spawn(sys.argv[1:])' sh -c "$cmd" >"$work/tty.log" </dev/null
grep -q "rollouts" "$work/tty.log" || fail "no overall line on the terminal"
grep -q "passed" "$work/tty.log" || fail "no passed count"
grep -aq "p[1-4] #0 *agent" "$work/tty.log" || fail "no per-rollout line with its phase: $(tr -d '\033' <"$work/tty.log" | head -c 600)"
[[ "$(wc -l <"$work/tty.out")" == 4 ]] || fail "stdout not 4 records under a terminal"
L --run-id "$run_prefix-pipe" -j 2 --command 'true' "$work/progress.jsonl" >"$work/pipe.out" 2>"$work/pipe.err"
! grep -q $'\033' "$work/pipe.err" || fail "escape codes on a pipe"

echo "== Kubernetes flags: documented, and each one reaches the backend"
"$LAUNCH" --help >"$work/help"
for flag in --kubeconfig --k8s-context --k8s-namespace --k8s-qps --k8s-burst --k8s-in-cluster --skills; do
  grep -q -- "$flag" "$work/help" || fail "--help lacks $flag"
  roff="${flag//-/\\-}"
  grep -qF -- "$roff" "$SRC/man/forge-launch.1" || fail "man page lacks $flag"
done
# forge-verify attaches to k8s rollouts' pods with the same flags.
"$(dirname "$LAUNCH")/forge-verify" run --help >"$work/verify-help"
for flag in --kubeconfig --k8s-context --k8s-namespace --k8s-server --k8s-token --k8s-ca --k8s-in-cluster; do
  grep -q -- "$flag" "$work/verify-help" || fail "forge-verify run --help lacks $flag"
  grep -qF -- "${flag//-/\\-}" "$SRC/man/forge-verify.1" || fail "forge-verify's man page lacks $flag"
done
echo '{"rollout_id":"r-k8s","task_id":"t","run_id":"x","attempt":0,"outcome":"ok","sandbox":{"backend":"k8s","id":"ns/forge-pod"},"task":{"id":"t","instruction":"x","verifier":{"kind":"command","command":"true"}}}' >"$work/k8s-rollout.jsonl"
rc=0; "$(dirname "$LAUNCH")/forge-verify" --kubeconfig "$work/missing-kubeconfig" "$work/k8s-rollout.jsonl" \
  >/dev/null 2>"$work/k8s-verify.err" || rc=$?
[[ "$rc" == 78 ]] && grep -q "missing-kubeconfig" "$work/k8s-verify.err" ||
  fail "forge-verify --kubeconfig missing: exit $rc $(cat "$work/k8s-verify.err")"
rc=0; "$LAUNCH" --backend k8s --kubeconfig "$work/missing-kubeconfig" gc --all 2>"$work/k8s1.err" || rc=$?
[[ "$rc" == 78 ]] || fail "missing kubeconfig: exit $rc"
grep -q "missing-kubeconfig" "$work/k8s1.err" || fail "missing kubeconfig not named"
cat >"$work/kubeconfig" <<'YAML'
apiVersion: v1
kind: Config
current-context: a
contexts:
- name: a
  context:
    cluster: a
    user: a
clusters:
- name: a
  cluster:
    server: "http://127.0.0.1:9"
users:
- name: a
  user:
    token: t
YAML
rc=0; "$LAUNCH" --backend k8s --kubeconfig "$work/kubeconfig" --k8s-context nope gc --all 2>"$work/k8s2.err" || rc=$?
(( rc != 0 )) && grep -q "nope" "$work/k8s2.err" || fail "unknown context not named (exit $rc): $(cat "$work/k8s2.err")"
rc=0; env -u KUBERNETES_SERVICE_HOST "$LAUNCH" --backend k8s --k8s-in-cluster gc --all 2>"$work/k8s3.err" || rc=$?
[[ "$rc" == 78 ]] && grep -q "KUBERNETES_SERVICE_HOST" "$work/k8s3.err" || fail "in-cluster outside a pod: exit $rc $(cat "$work/k8s3.err")"
rc=0; "$LAUNCH" --backend k8s --k8s-in-cluster --kubeconfig "$work/kubeconfig" gc --all 2>/dev/null || rc=$?
[[ "$rc" == 64 ]] || fail "--k8s-in-cluster with --kubeconfig: exit $rc"
rc=0; "$LAUNCH" --backend k8s --k8s-qps 0 gc --all 2>/dev/null || rc=$?
[[ "$rc" == 64 ]] || fail "--k8s-qps 0: exit $rc"

echo "PASS"
