#!/usr/bin/env bash
# Harbor compose tasks as pods on the real Docker engine, end to end with the
# oracle solution (tests/data/harbor): two services with depends_on,
# healthchecks and a shared volume; an MCP server; a simulated user the agent
# talks to over HTTP by service name; skill folders the image holds. Checks
# that each reaches the reward its verifier defines, that the services share
# main's network namespace with their names on 127.0.0.1 and no network was
# made, that releasing the sandbox (forge-verify) and gc remove the services
# and volumes, and that refused compose keys stop the task with file, line
# and key.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
LAUNCH="$BIN/forge-launch"; VERIFY="$BIN/forge-verify"
source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker
bash "$SRC/scripts/make-busybox-image.sh"
data="$SRC/tests/data/harbor"
work="$(mktemp -d)"
run="e2e-compose-$$-$RANDOM"
cleanup() {
  for r in "$run" "$run-gc" "$run-skills"; do "$LAUNCH" --backend docker gc --run-id "$r" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in launch.err verify.err; do [[ -s "$work/$f" ]] && { echo "--- $f" >&2; tail -20 "$work/$f" >&2; }; done
  exit 1
}
labelled() { docker ps -aq --filter "label=$1" | wc -l; }
volumes_of() { docker volume ls -q --filter "label=$1" | wc -l; }
networks_before="$(docker network ls -q | sort)"

echo "== the oracle solves each pod task (held for the verifier)"
"$LAUNCH" --backend docker --store "$work/forge.db" --run-id "$run" --harness oracle --hold -j 2 \
  --retry-backoff 0.1 "$data/compose-two-services" "$data/mcp-server" "$data/simulated-user" "$data/skills" \
  >"$work/rollouts.jsonl" 2>"$work/launch.err" || fail "forge-launch exit $?"
[[ "$(jq -s 'map(select(.outcome == "ok")) | length' "$work/rollouts.jsonl")" == 4 ]] ||
  fail "outcomes: $(jq -c '{task_id, outcome, error}' "$work/rollouts.jsonl")"

echo "== a pod: services in main's network namespace, names on 127.0.0.1, no network made"
two=$(jq -r 'select(.task_id == "compose-two-services") | .rollout_id' "$work/rollouts.jsonl")
main=$(jq -r 'select(.task_id == "compose-two-services") | .sandbox.id' "$work/rollouts.jsonl")
[[ "$(labelled "forge.pod=$two")" == 3 ]] || fail "expected main + 2 services labelled forge.pod=$two"
for service in db api; do
  mode=$(docker inspect -f '{{.HostConfig.NetworkMode}}' "forge-$two-$service")
  [[ "$mode" == "container:$main" ]] || fail "$service NetworkMode is $mode"
  [[ "$(docker inspect -f '{{index .Config.Labels "forge.run"}}' "forge-$two-$service")" == "$run" ]] ||
    fail "$service lacks the run label"
  docker exec "$main" grep -Eq "^127\.0\.0\.1[[:space:]]+$service\$" /etc/hosts || fail "$service not in main's /etc/hosts"
done
[[ "$(docker inspect -f '{{.HostConfig.NetworkMode}}' "$main")" == none ]] || fail "main should have no network"
[[ "$(volumes_of "forge.pod=$two")" == 1 ]] || fail "the shared volume is not a labelled Docker volume"
[[ "$(docker network ls -q | sort)" == "$networks_before" ]] || fail "a Docker network was created"

echo "== forge-verify: each task's own reward; releasing a pod removes its services and volumes"
"$VERIFY" --store "$work/forge.db" "$work/rollouts.jsonl" >"$work/verdicts.jsonl" 2>"$work/verify.err" ||
  fail "forge-verify exit $?"
[[ "$(jq -s 'map(select(.verdict.reward == 1)) | length' "$work/verdicts.jsonl")" == 4 ]] ||
  fail "rewards: $(jq -c '{task_id, verdict}' "$work/verdicts.jsonl" | head -c 3000)"
[[ "$(labelled "forge.run=$run")" == 0 ]] || fail "containers of the run left after release"
[[ "$(volumes_of "forge.run=$run")" == 0 ]] || fail "volumes of the run left after release"

echo "== the nop agent on the same pod gets reward 0 (the verifier can fail)"
"$LAUNCH" --backend docker --store "$work/forge.db" --run-id "$run-gc" --harness nop --hold \
  "$data/compose-two-services" >"$work/nop.jsonl" 2>"$work/launch.err" || fail "nop launch exit $?"
nop=$(jq -r .rollout_id "$work/nop.jsonl")
"$VERIFY" --store "$work/forge.db" --keep "$work/nop.jsonl" >"$work/nop-verdict.jsonl" 2>"$work/verify.err" || true
[[ "$(jq -r .verdict.reward "$work/nop-verdict.jsonl")" == 0 ]] || fail "nop verdict: $(cat "$work/nop-verdict.jsonl")"

echo "== gc removes a kept pod's services and volumes"
[[ "$(labelled "forge.pod=$nop")" == 3 ]] || fail "the kept pod is not whole"
"$LAUNCH" --backend docker gc --run-id "$run-gc" 2>"$work/gc.err" || fail "gc exit $?"
[[ "$(labelled "forge.run=$run-gc")" == 0 ]] || fail "gc left containers"
[[ "$(volumes_of "forge.run=$run-gc")" == 0 ]] || fail "gc left volumes"

echo "== environment.skills_dir joins the harness's skills, beside --skills"
mkdir -p "$work/harnesses" "$work/host-skills/style"
printf -- '---\nname: style\ndescription: house style\n---\nUse tabs.\n' >"$work/host-skills/style/SKILL.md"
cat >"$work/harnesses/skillcheck.json" <<'EOF'
{"name": "skillcheck", "command": ["/bin/sh", "-c", "ls /root/.agent/skills > /work/skills.txt && sed -n 's/.*`\\(skill-word-[0-9]*\\)`.*/\\1/p' /root/.agent/skills/release-notes/SKILL.md > /work/answer.txt"],
 "skills_dir": "/root/.agent/skills"}
EOF
"$LAUNCH" --backend docker --store "$work/forge.db" --run-id "$run-skills" --harness-dir "$work/harnesses" \
  --harness skillcheck --skills "$work/host-skills" --hold "$data/skills" >"$work/skills.jsonl" 2>"$work/launch.err" ||
  fail "skills launch exit $?"
box=$(jq -r .sandbox.id "$work/skills.jsonl")
[[ "$(docker exec "$box" cat /work/skills.txt | tr '\n' ' ')" == "release-notes style " ]] ||
  fail "skills seen by the harness: $(docker exec "$box" cat /work/skills.txt)"
"$VERIFY" --store "$work/forge.db" "$work/skills.jsonl" >"$work/skills-verdict.jsonl" 2>"$work/verify.err" ||
  fail "skills verify exit $?"
[[ "$(jq -r .verdict.reward "$work/skills-verdict.jsonl")" == 1 ]] || fail "skills verdict"

echo "== refused compose keys and MCP fields stop the task, naming file, line and key"
set +e
"$LAUNCH" --backend docker --store "$work/forge.db" --run-id "$run-refused" --harness oracle \
  "$data/compose-refused-ports" "$data/compose-refused-networks" "$data/mcp-bad-transport" "$data/compose-two-services" \
  >"$work/refused.jsonl" 2>"$work/refused.err"
status=$?
set -e
[[ $status == 65 ]] || fail "exit $status for refused tasks (want 65)"
grep -q "compose-refused-ports/environment/docker-compose.yaml:4: services.web.ports: not supported" "$work/refused.err" ||
  fail "ports refusal: $(cat "$work/refused.err")"
grep -q "compose-refused-networks/environment/docker-compose.yaml:[0-9]*: networks: not supported" "$work/refused.err" ||
  fail "networks refusal: $(cat "$work/refused.err")"
grep -q 'mcp-bad-transport/task.toml:8: environment.mcp_servers\[1\].transport' "$work/refused.err" ||
  fail "transport refusal: $(cat "$work/refused.err")"
[[ "$(jq -r .task_id "$work/refused.jsonl")" == compose-two-services ]] || fail "the good task did not run"
"$LAUNCH" --backend docker gc --run-id "$run-refused" >/dev/null 2>&1 || true
echo "PASS"
