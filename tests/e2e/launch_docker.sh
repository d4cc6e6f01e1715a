#!/usr/bin/env bash
# forge-launch against the real Docker engine: limits, OOM classification,
# deadline, hold, resume after kill -9, gc, SIGINT, a harness reaching a
# server on 127.0.0.1 with its secret, the ReACT harness, a Harbor task dir
# built through the engine, and bad input.
set -euo pipefail
BIN="${FORGE_BIN:?}"; SRC="${FORGE_SRC:?}"
source "$SRC/tests/support/docker_runs.sh"
docker_launch_test e2e
cleanup_more() { "$LAUNCH" --backend docker gc --run-id "$run_prefix-a" >/dev/null 2>&1 || true; }

echo "== limits are applied at create; a held sandbox keeps its labels"
echo '{"id":"limits","instruction":"x","environment":{"cpus":0.5,"memory_mb":64},"resources":{"pids":50}}' >"$work/limits.jsonl"
L --run-id "$run_prefix-limits" --hold --cap-drop-all --command 'true' "$work/limits.jsonl" >"$work/limits.out"
id="$(jq -r .sandbox.id "$work/limits.out")"
[[ "$(jq -r .outcome "$work/limits.out")" == ok ]] || fail "limits run not ok"
inspect="$(docker inspect "$id")"
[[ "$(jq '.[0].HostConfig.Memory' <<<"$inspect")" == 67108864 ]] || fail "Memory"
[[ "$(jq '.[0].HostConfig.MemorySwap' <<<"$inspect")" == 67108864 ]] || fail "MemorySwap must equal Memory"
[[ "$(jq '.[0].HostConfig.NanoCpus' <<<"$inspect")" == 500000000 ]] || fail "NanoCpus"
[[ "$(jq '.[0].HostConfig.PidsLimit' <<<"$inspect")" == 50 ]] || fail "PidsLimit"
[[ "$(jq -c '.[0].HostConfig.CapDrop' <<<"$inspect")" == '["ALL"]' ]] || fail "CapDrop"
[[ "$(jq -c '.[0].HostConfig.SecurityOpt' <<<"$inspect")" == '["no-new-privileges"]' ]] || fail "SecurityOpt"
[[ "$(jq -r '.[0].HostConfig.NetworkMode' <<<"$inspect")" == none ]] || fail "NetworkMode"
[[ "$(jq -r '.[0].Config.Labels["forge.run"]' <<<"$inspect")" == "$run_prefix-limits" ]] || fail "label forge.run"
[[ "$(jq -r '.[0].Config.Labels["forge.rollout"]' <<<"$inspect")" == "$(jq -r .rollout_id "$work/limits.out")" ]] || fail "label forge.rollout"
# The harness ran as the container's own process, which then keeps it alive.
[[ "$(jq -r '.[0].Args[-1]' <<<"$inspect")" == forge-oneshot ]] || fail "held one-shot PID 1"
[[ "$(jq -r '.[0].State.Running' <<<"$inspect")" == true ]] || fail "held sandbox not running"
[[ "$(jq -r '.[0].HostConfig.AutoRemove' <<<"$inspect")" == false ]] || fail "held sandbox must not AutoRemove"
# The pids limit holds inside: 60 background sleeps cannot all start.
out="$(docker exec "$id" sh -c 'for i in $(seq 60); do sleep 5 & done 2>&1; wait' 2>&1 || true)"
grep -qi "resource\|fork\|can't" <<<"$out" || fail "pids limit not enforced: $out"
"$LAUNCH" --backend docker gc --run-id "$run_prefix-limits" 2>/dev/null
[[ "$(count_run "$run_prefix-limits")" == 0 ]] || fail "gc left containers"

echo "== a harness allocating past its memory limit is killed and classified"
echo '{"id":"hog","instruction":"x","environment":{"memory_mb":32}}' >"$work/hog.jsonl"
L --run-id "$run_prefix-hog" --command 'x=aaaaaaaaaaaaaaaa; while true; do x="$x$x"; done' "$work/hog.jsonl" >"$work/hog.out"
[[ "$(jq -r .outcome "$work/hog.out")" == agent_error ]] || fail "hog outcome $(cat "$work/hog.out")"
[[ "$(jq -r .oom "$work/hog.out")" == true ]] || fail "hog not classified as OOM"
[[ "$(jq -r .exit_code "$work/hog.out")" == 137 ]] || fail "hog exit code"
grep -q "out of memory" <<<"$(jq -r .error "$work/hog.out")" || fail "hog error text"
[[ "$(count_run "$run_prefix-hog")" == 0 ]] || fail "released sandbox still there"

echo "== the deadline kills a runaway harness; the held sandbox survives for the verifier"
echo '{"id":"runaway","instruction":"x","agent":{"timeout_sec":2}}' >"$work/runaway.jsonl"
start=$SECONDS
L --run-id "$run_prefix-runaway" --hold --command 'echo before; (sleep 1000 &); sleep 1000; echo never' "$work/runaway.jsonl" >"$work/runaway.out"
(( SECONDS - start < 30 )) || fail "deadline took $((SECONDS - start)) s"
[[ "$(jq -r .outcome "$work/runaway.out")" == agent_timeout ]] || fail "runaway outcome"
[[ "$(jq -r .logs.stdout "$work/runaway.out")" == before ]] || fail "logs before the deadline kept"
id="$(jq -r .sandbox.id "$work/runaway.out")"
[[ "$(docker inspect -f '{{.State.Running}}' "$id")" == true ]] || fail "held sandbox died with the harness"
sleep 0.5
left="$(docker exec "$id" ps -o pid,args | grep -c 'sleep 1000' || true)"
[[ "$left" == 0 ]] || fail "the runaway's processes survived the deadline: $(docker exec "$id" ps)"
"$LAUNCH" --backend docker gc --run-id "$run_prefix-runaway" 2>/dev/null

echo "== the harness reaches a server on 127.0.0.1 (network host) with its secret"
port_file="$work/port"
python3 - "$port_file" "$work/seen" <<'PY' &
import http.server, sys
port_file, seen = sys.argv[1], sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(seen, "a") as f:
            f.write(self.headers.get("Authorization", "") + " " + self.path + "\n")
        body = b"pong\n"
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
pids+=($!)
for _ in $(seq 50); do [[ -s "$port_file" ]] && break; sleep 0.1; done
port="$(cat "$port_file")"
echo '{"id":"net","instruction":"x"}' >"$work/net.jsonl"
L --run-id "$run_prefix-net" --proxy "http://127.0.0.1:$port" \
  --command 'wget -q -O - --header "Authorization: Bearer $OPENAI_API_KEY" "$OPENAI_BASE_URL/ping?rollout=$FORGE_ROLLOUT_ID"' \
  "$work/net.jsonl" >"$work/net.out"
[[ "$(jq -r .outcome "$work/net.out")" == ok ]] || fail "net outcome $(cat "$work/net.out")"
[[ "$(jq -r .logs.stdout "$work/net.out")" == pong ]] || fail "no answer from the loopback server"
rollout="$(jq -r .rollout_id "$work/net.out")"
read -r bearer key path <"$work/seen"
[[ "$path" == "/v1/ping?rollout=$rollout" ]] || fail "request path $path"
[[ "$key" == forge-* ]] || fail "secret missing: $key"
hash="$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)"
stored="$(sqlite3 "$work/forge.db" "select secret_hash from rollouts where id='$rollout'")"
[[ "$hash" == "$stored" ]] || fail "store has not the secret's hash"
! grep -q "$key" "$work/net.out" || fail "the secret leaked into the rollout record"

echo "== kill -9 of forge-launch, then a rerun redoes no finished attempt; gc leaves nothing"
for i in 1 2 3 4 5 6; do echo "{\"id\":\"r$i\",\"instruction\":\"x\"}"; done >"$work/resume.jsonl"
run="$run_prefix-a"
# Not through L: $! must be forge-launch itself, not a subshell.
"$LAUNCH" "${common[@]}" --run-id "$run" -j 2 --command 'sleep 1.5' "$work/resume.jsonl" >"$work/first.out" 2>/dev/null &
launcher=$!
for _ in $(seq 300); do (( $(wc -l <"$work/first.out") >= 2 )) && break; sleep 0.1; done
kill -9 "$launcher"; wait "$launcher" 2>/dev/null || true
finished_before="$(sqlite3 "$work/forge.db" "select count(*) from rollouts where run_id='$run' and status='finished' and outcome='ok'")"
(( finished_before >= 2 && finished_before < 6 )) || fail "finished before kill: $finished_before"
# Not held, so each harness was its sandbox's own process: the running ones
# end by themselves and the engine removes them (AutoRemove), no gc needed.
# (By the clock, not by polls: on a loaded machine one `docker ps` takes a
# good part of a second, and a create the engine was serving at the kill
# still starts its container.)
deadline=$((SECONDS + 60))
while left="$(docker ps --filter "label=forge.run=$run" --format '{{.Names}} {{.Status}} {{.Command}}')"; do
  [[ -z "$left" ]] || (( SECONDS >= deadline )) || { sleep 0.2; continue; }
  break
done
[[ -z "$left" ]] || fail "sandboxes still running 60 s after kill -9: $left"
L --run-id "$run" -j 2 --command 'sleep 1.5' "$work/resume.jsonl" >"$work/second.out" 2>"$work/second.err"
[[ "$(wc -l <"$work/second.out")" == 6 ]] || fail "rerun did not emit 6 records"
[[ "$(jq -s '[.[] | select(.resumed == true)] | length' "$work/second.out")" == "$finished_before" ]] || fail "resumed count"
[[ "$(jq -s '[.[] | select(.resumed != true)] | length' "$work/second.out")" == "$((6 - finished_before))" ]] || fail "rerun count"
[[ "$(jq -s '[.[] | .task_id] | unique | length' "$work/second.out")" == 6 ]] || fail "every task once"
grep -q "finished attempts skipped" "$work/second.err" || fail "no note about skipped attempts"
"$LAUNCH" --backend docker gc --run-id "$run" 2>"$work/gc.err"
[[ "$(count_run "$run")" == 0 ]] || fail "gc left containers"

echo "== SIGINT releases every sandbox and exits 130"
for i in 1 2 3 4; do echo "{\"id\":\"s$i\",\"instruction\":\"x\"}"; done >"$work/sigint.jsonl"
"$LAUNCH" "${common[@]}" --run-id "$run_prefix-int" -j 2 --hold --command 'sleep 100' "$work/sigint.jsonl" >"$work/int.out" 2>/dev/null &
launcher=$!
for _ in $(seq 200); do (( $(count_run "$run_prefix-int") >= 2 )) && break; sleep 0.1; done
sleep 1
kill -INT "$launcher"
rc=0; wait "$launcher" || rc=$?
[[ "$rc" == 130 ]] || fail "SIGINT exit status $rc"
[[ "$(count_run "$run_prefix-int")" == 0 ]] || fail "SIGINT left containers"
[[ "$(jq -s '[.[] | select(.outcome == "cancelled")] | length' "$work/int.out")" -ge 2 ]] || fail "cancelled records"

echo "== a Harbor task directory: instruction.md, task.toml, environment/Dockerfile built by the engine"
mkdir -p "$work/harbor/hello/environment" "$work/harbor/hello/tests"
printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n' >"$work/harbor/hello/tests/test.sh"
echo "Write the word forge to hello.txt" >"$work/harbor/hello/instruction.md"
printf '[agent]\ntimeout_sec = 60.0\n[environment]\nmemory_mb = 128\n' >"$work/harbor/hello/task.toml"
printf 'FROM %s\nRUN echo built-by-forge > /etc/forge-build\n' "$IMAGE" >"$work/harbor/hello/environment/Dockerfile"
L --run-id "$run_prefix-harbor" --command 'cat /etc/forge-build; cat "$FORGE_INSTRUCTION_FILE"' "$work/harbor/hello" >"$work/harbor.out"
[[ "$(jq -r .outcome "$work/harbor.out")" == ok ]] || fail "harbor outcome $(cat "$work/harbor.out")"
[[ "$(jq -r .task_id "$work/harbor.out")" == hello ]] || fail "harbor task id"
[[ "$(jq -r .logs.stdout "$work/harbor.out")" == $'built-by-forge\nWrite the word forge to hello.txt' ]] || fail "harbor stdout"

echo "== bad input: a broken line and a missing image cost nothing else"
printf '{"id":"good","instruction":"x"}\n{"id": broken\n{"id":"noimage","instruction":"x","environment":{"image":"127.0.0.1:9/forge-no-such-image:never"}}\n' >"$work/bad.jsonl"
rc=0
L --run-id "$run_prefix-bad" --infra-retries 1 --command 'echo fine' "$work/bad.jsonl" >"$work/bad.out" 2>"$work/bad.err" || rc=$?
[[ "$rc" == 65 ]] || fail "bad input exit status $rc"
grep -q "bad.jsonl:2:" "$work/bad.err" || fail "broken line not named"
[[ "$(jq -r 'select(.task_id=="good") | .outcome' "$work/bad.out")" == ok ]] || fail "good task lost"
[[ "$(jq -r 'select(.task_id=="noimage") | .outcome' "$work/bad.out")" == infra_error ]] || fail "missing image not infra_error"
[[ "$(jq -r 'select(.task_id=="noimage") | .infra_retries' "$work/bad.out")" == 1 ]] || fail "missing image retries"
grep -q "forge-no-such-image" "$work/bad.err" || fail "retry warning does not name the image"

echo "PASS"
