#!/usr/bin/env bash
# Real Harbor recipes' shapes end to end on the real Docker engine
# (tests/data/harbor, issue 54), each with the oracle solution and
# forge-verify: a Dockerfile only BuildKit builds, and --legacy-builder
# refusing it; two tasks sharing a Dockerfile give one image with one tag,
# and gc --images leaves none of the run's; a compose environment's secret
# template reaches the containers but no record, log or store; an online
# compose task at -n 3 -j 3 under --proxy, each pod its own ports, the
# proxy reached through the relay and, on an engine without a bridge, egress
# through forge-relay and forge-launch's forward proxy; an entrypoint that starts a service late
# and an image HEALTHCHECK, waited on at -n 4 -j 4; `forge-launch check` on
# the whole corpus, building and starting nothing (forge-launch(1)'s check
# EXAMPLE). Talks only to 127.0.0.0/8.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
docker info >/dev/null 2>&1 || { echo "SKIP: no Docker engine"; exit 77; }
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
LAUNCH="$FORGE_BIN/forge-launch"
VERIFY="$FORGE_BIN/forge-verify"
run="recipes-$$-$RANDOM"
corpus="$FORGE_SRC/tests/data/harbor"
pids=()
source "$FORGE_SRC/tests/support/docker_runs.sh"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  remove_run_containers "$run"
  for i in $(docker images -q --filter "label=forge.run" | sort -u); do
    case "$(docker inspect -f '{{index .Config.Labels "forge.run"}}' "$i" 2>/dev/null)" in
      "$run"*) docker rmi -f "$i" >/dev/null 2>&1 || true ;;
    esac
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
L() { "$LAUNCH" --backend docker --store "$WORK/forge.db" --retry-backoff 0.1 "$@"; }

# oracle LABEL TASK... [-- FLAGS]: the oracle (held), then forge-verify;
# rollouts in $WORK/LABEL.rollouts, verdicts in $WORK/LABEL.verdicts.
oracle() {
  local label=$1; shift
  local tasks=() flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do tasks+=("$1"); shift; done
  [ "${1:-}" = -- ] && { shift; flags=("$@"); }
  local dirs=() task_flags=()
  for t in "${tasks[@]}"; do dirs+=("$corpus/$t"); task_flags+=(--tasks "$corpus/$t"); done
  L --run-id "$run-$label" --harness oracle --hold "${flags[@]}" "${dirs[@]}" \
    >"$WORK/$label.rollouts" 2>"$WORK/$label.err"
  "$VERIFY" run --store "$WORK/forge.db" "${task_flags[@]}" <"$WORK/$label.rollouts" \
    >"$WORK/$label.verdicts" 2>"$WORK/$label.verr"
}
rewards() { jq -r '.verdict.reward' "$WORK/$1.verdicts" | sort | uniq -c | tr -s ' ' | sed 's/^ //'; }
run_images() { docker images -q --filter "label=forge.run=$1" | sort -u; }

echo "== forge-launch check: the corpus read as a run reads it, nothing built or started"
images_before=$(docker images -q | sort | md5sum)
expect_exit 65 "check on the corpus (some tasks are refused on purpose)" "$LAUNCH" check "$corpus"
refused_dirs=$(ls -d "$corpus"/refused-* "$corpus"/compose-refused-* "$corpus"/compose-bad-depends "$corpus"/mcp-bad-transport | wc -l)
[ "$(jq -s 'map(select(.status == "refused")) | length' "$OUT")" = "$refused_dirs" ] && pass ||
  fail "refused records: $(jq -c 'select(.status == "refused") | .error' "$OUT" | head -c 2000)"
jq -e -s 'map(select(.task_id == "warned"))[0] | .status == "warned" and (.warnings | length > 0)' "$OUT" >/dev/null && pass ||
  fail "the warned task has no warnings: $(grep '"warned"' "$OUT")"
jq -e -s 'map(select(.schema == "forge.check/1" and (.status == "ok" or .status == "warned" or .status == "refused"))) | length == (. | length)' "$OUT" >/dev/null && pass ||
  fail "records: $(head -c 1000 "$OUT")"
grep -q "checked $(jq -s length "$OUT") task(s): .* refused; nothing built or started" "$ERR" && pass ||
  fail "summary: $(tail -2 "$ERR")"
grep -q 'compose-refused-ports/environment/docker-compose.yaml:4: services.web.ports' "$OUT" && pass ||
  fail "a refusal names file, line and key: $(grep compose-refused-ports "$OUT")"
[ "$(docker images -q | sort | md5sum)" = "$images_before" ] && pass || fail "check built or pulled an image"
[ -z "$(docker ps -aq --filter label=forge.managed=1 --filter "label=forge.run=$run")" ] && pass || fail "check started a container"
expect_exit 0 "check on good tasks" "$LAUNCH" check "$corpus/buildkit-only" "$corpus/single-container"
[ "$(jq -r .status "$OUT" | sort -u)" = ok ] && pass || fail "good tasks: $(cat "$OUT")"

echo "== a Dockerfile only BuildKit builds (COPY a b ., RUN --mount, FROM --platform); --legacy-builder refuses it"
oracle buildkit buildkit-only
[ "$(rewards buildkit)" = "1 1" ] && pass || fail "buildkit-only: $(cat "$WORK/buildkit.verdicts") $(tail -5 "$WORK/buildkit.err")"
L --run-id "$run-legacy" --harness oracle --legacy-builder "$corpus/buildkit-only" >"$OUT" 2>"$ERR"
[ "$(jq -r '[.outcome, .transient, .infra_retries] | join(" ")' "$OUT")" = "infra_error false 0" ] && pass ||
  fail "legacy builder: $(cat "$OUT")"
grep -q "buildkit-only/environment: .*platform" "$ERR" && pass || fail "legacy builder's error: $(tail -3 "$ERR")"

echo "== two tasks sharing a Dockerfile: one image, one forge tag; gc --images leaves none of the run's"
oracle shared shared-dockerfile-a shared-dockerfile-b
[ "$(rewards shared)" = "2 1" ] && pass || fail "shared: $(cat "$WORK/shared.verdicts") $(tail -5 "$WORK/shared.err")"
[ "$(run_images "$run-shared" | wc -l)" = 1 ] && pass || fail "images of the run: $(run_images "$run-shared")"
[ "$(docker inspect -f '{{len .RepoTags}}' "$(run_images "$run-shared")")" = 1 ] && pass ||
  fail "tags: $(docker inspect -f '{{.RepoTags}}' "$(run_images "$run-shared")")"
expect_exit 0 "gc --images" "$LAUNCH" --backend docker --store "$WORK/forge.db" gc --run-id "$run-shared" --images
grep -q "removed 1 image(s) of run $run-shared" "$ERR" && pass || fail "gc: $(cat "$ERR")"
[ -z "$(run_images "$run-shared")" ] && pass || fail "gc --images left $(run_images "$run-shared")"

echo "== a compose environment's secret: in the containers, in no record, log or store"
secret="forge-planted-$RANDOM$RANDOM$RANDOM"
FORGE_CORPUS_SECRET=$secret oracle secret compose-secret
[ "$(rewards secret)" = "1 1" ] && pass || fail "compose-secret: $(cat "$WORK/secret.verdicts") $(tail -5 "$WORK/secret.err")"
jq -e '.task.pod.main.environment.API_KEY == "${FORGE_CORPUS_SECRET}"' "$WORK/secret.rollouts" >/dev/null && pass ||
  fail "the record must keep the template: $(jq -c .task.pod.main "$WORK/secret.rollouts")"
sqlite3 "$WORK/forge.db" .dump >"$WORK/store.sql"
leaks=$(grep -l -- "$secret" "$WORK"/secret.* "$WORK/store.sql" "$WORK/forge.db"* 2>/dev/null)
[ -z "$leaks" ] && pass || fail "the secret is in: $leaks"

echo "== an online compose task, -n 3 -j 3 under --proxy: each pod its own namespace and ports"
# serve HOST PORTFILE ANSWER: a one-answer HTTP server on HOST (127.0.0.0/8).
serve() {
  python3 - "$@" <<'PY' &
import http.server, sys
host, port_file, answer = sys.argv[1], sys.argv[2], sys.argv[3].encode() + b"\n"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", str(len(answer))); self.end_headers()
        self.wfile.write(answer)
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer((host, 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
  pids+=($!)
  for _ in $(seq 100); do [ -s "$2" ] && break; sleep 0.1; done
}
serve 127.0.0.1 "$WORK/proxy.port" proxy-answer
proxy="http://127.0.0.1:$(cat "$WORK/proxy.port")"
# "The internet" for the pod's egress: a host address the pod's own loopback lacks.
serve 127.0.0.2 "$WORK/origin.port" egress-answer
origin="http://127.0.0.2:$(cat "$WORK/origin.port")"
oracle online compose-online -- -n 3 -j 3 --proxy "$proxy"
[ "$(jq -r .outcome "$WORK/online.rollouts" | sort | uniq -c | tr -s ' ' | sed 's/^ //')" = "3 ok" ] && pass ||
  fail "outcomes: $(jq -c '{outcome, error}' "$WORK/online.rollouts") $(tail -5 "$WORK/online.err")"
[ "$(rewards online)" = "3 1" ] && pass || fail "online: $(jq -c .verdict "$WORK/online.verdicts")"
L --run-id "$run-online-cmd" --harness command --proxy "$proxy" --hold \
  --command "wget -q -O- \"\$FORGE_PROXY_URL/x\" && wget -q -O- http://web:8080/id && { [ -z \"\$HTTPS_PROXY\" ] || http_proxy=\$HTTPS_PROXY wget -q -O- $origin/e; }" \
  "$corpus/compose-online" >"$OUT" 2>"$ERR"
jq -e '.logs.stdout | startswith("proxy-answer\npod-")' "$OUT" >/dev/null && pass ||
  fail "the pod's harness reaches the proxy and its sidecar: $(jq -c '{outcome, error, logs}' "$OUT") $(tail -3 "$ERR")"
main=$(jq -r .sandbox.id "$OUT")
mode=$(docker inspect -f '{{.HostConfig.NetworkMode}}' "$main")
if [ "$mode" = none ]; then
  # No bridge on this engine: egress through forge-relay (a sidecar) and forge-launch's forward proxy.
  jq -e '.logs.stdout | endswith("egress-answer\n")' "$OUT" >/dev/null && pass ||
    fail "the pod's egress: $(jq -c '.logs' "$OUT")"
  docker exec "$main" sh -c 'echo "$HTTPS_PROXY $NO_PROXY"' | grep -q "^http://127.0.0.1:3128 localhost,127.0.0.1,::1,.*web" && pass ||
    fail "proxy variables in main: $(docker exec "$main" env | grep -i proxy)"
else
  [ "$mode" = bridge ] && pass || fail "the pod's NetworkMode is $mode"
fi

echo "== an entrypoint that starts a service late, and the image's HEALTHCHECK waited on, at -n 4 -j 4"
oracle ready entrypoint-healthcheck -- -n 4 -j 4
[ "$(rewards ready)" = "4 1" ] && pass ||
  fail "entrypoint-healthcheck: $(jq -c .verdict "$WORK/ready.verdicts") $(jq -c '{outcome, error, logs}' "$WORK/ready.rollouts" | head -c 2000)"

finish
