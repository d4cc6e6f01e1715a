#!/usr/bin/env bash
# forge-launch pulls a task's docker_image through the Engine API from a real
# registry (Debian's docker-registry on 127.0.0.1; the engine trusts
# 127.0.0.0/8 registries without TLS): the image is pulled once for all
# rollouts, and the record says so; a tag the registry does not have is a
# deterministic failure, not retried, and so is a build FROM one or a failing
# Dockerfile step; a registry that is down is transient, retried, for a pull
# and for a build FROM it; gc --images removes what the run pulled and built.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/require_docker.sh"
require_docker
source "$FORGE_SRC/tests/support/registry.sh"
registry_or_skip launch_registry
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
LAUNCH="$FORGE_BIN/forge-launch"
run="registry-$$"
port=$(free_port)
repo="127.0.0.1:$port/forge-e2e/busybox"
pids=()
source "${FORGE_SRC:?}/tests/support/docker_runs.sh"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  remove_run_containers "$run"
  docker image rm -f "$repo:1" "forge-e2e-built:$run" "${private:-$repo}:1" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
L() { "$LAUNCH" --backend docker --store "$WORK/forge.db" --retry-backoff 0.1 "$@"; }

start_registry registry "$port"
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$port/v2/" >/dev/null || { fail "registry did not start: $(cat "$WORK/registry.log")"; finish; exit 1; }

docker tag forge-busybox:latest "$repo:1" && docker push -q "$repo:1" >/dev/null && docker image rm "$repo:1" >/dev/null ||
  { fail "could not push to the registry"; finish; exit 1; }

echo "== a registry image is pulled once, for every rollout of the task"
printf '{"id":"pulled","instruction":"x","environment":{"image":"%s:1"}}\n' "$repo" >"$WORK/pull.jsonl"
expect_exit 0 "launch from a registry image" L --run-id "$run-pull" -n 3 -j 3 --command 'echo from-registry' "$WORK/pull.jsonl"
[ "$(jq -r .outcome "$OUT" | sort -u)" = ok ] && pass || fail "outcomes: $(cat "$OUT") $(cat "$ERR")"
[ "$(jq -r '.logs.stdout == "from-registry\n"' "$OUT" | sort -u)" = true ] && pass || fail "stdout: $(jq -c .logs "$OUT")"
[ "$(jq -r 'select(.image_pulled) | .image_pulled' "$OUT")" = "$repo:1" ] && pass || fail "exactly one rollout pulled it: $(jq -c .image_pulled "$OUT")"
docker image inspect "$repo:1" >/dev/null 2>&1 && pass || fail "image not there after the pull"

echo "== gc --images removes what the run pulled"
expect_exit 0 "gc --images" "$LAUNCH" --backend docker --store "$WORK/forge.db" gc --run-id "$run-pull" --images
docker image inspect "$repo:1" >/dev/null 2>&1 && fail "pulled image left by gc --images" || pass
grep -q "removed 1 image" "$ERR" && pass || fail "gc note: $(cat "$ERR")"

echo "== a built image goes too, and only with --images"
mkdir -p "$WORK/built/environment" "$WORK/built/tests"
printf 'FROM forge-busybox:latest\nRUN echo %s > /etc/built-for\n' "$run" >"$WORK/built/environment/Dockerfile"
echo 'Say where.' >"$WORK/built/instruction.md"
: >"$WORK/built/task.toml"
printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n' >"$WORK/built/tests/test.sh"
expect_exit 0 "launch a built task" L --run-id "$run-built" --command 'cat /etc/built-for' "$WORK/built"
built=$(docker images -q --filter "label=forge.run=$run-built")
[ -n "$built" ] && pass || fail "no image labelled with the run"
expect_exit 0 "gc without --images" "$LAUNCH" --backend docker --store "$WORK/forge.db" gc --run-id "$run-built"
[ -n "$(docker images -q --filter "label=forge.run=$run-built")" ] && pass || fail "gc without --images removed the image"
expect_exit 0 "gc --images" "$LAUNCH" --backend docker --store "$WORK/forge.db" gc --run-id "$run-built" --images
[ -z "$(docker images -q --filter "label=forge.run=$run-built")" ] && pass || fail "built image left by gc --images"

echo "== a tag the registry lacks is deterministic: not retried"
printf '{"id":"notag","instruction":"x","environment":{"image":"%s:no-such-tag"}}\n' "$repo" >"$WORK/notag.jsonl"
expect_exit 69 "missing tag" L --run-id "$run-notag" --infra-retries 3 --command true "$WORK/notag.jsonl"
[ "$(jq -r .infra_retries "$OUT")" = 0 ] && pass || fail "missing tag retried: $(cat "$OUT")"
[ "$(jq -r .transient "$OUT")" = false ] && pass || fail "missing tag transient: $(jq -c . "$OUT")"
grep -q "no-such-tag" "$ERR" && pass || fail "error does not name the image: $(cat "$ERR")"

# A Harbor task built from a Dockerfile: the build's failures, like a pull's,
# are retried only when the registry did not answer.
built_task() {  # dir, Dockerfile text
  mkdir -p "$1/environment" "$1/tests"
  printf '%b' "$2" >"$1/environment/Dockerfile"
  echo 'Say where.' >"$1/instruction.md"
  : >"$1/task.toml"
  printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n' >"$1/tests/test.sh"
}

echo "== a build FROM a tag the registry lacks is deterministic: not retried"
built_task "$WORK/from-notag" "FROM $repo:no-such-tag\n"
expect_exit 69 "build from a missing tag" L --run-id "$run-from-notag" --infra-retries 3 --command true "$WORK/from-notag"
[ "$(jq -r .infra_retries "$OUT")" = 0 ] && pass || fail "build from a missing tag retried: $(cat "$OUT")"
grep -q "no-such-tag" "$ERR" && pass || fail "error does not name the image: $(cat "$ERR")"

echo "== a Dockerfile step that fails is the task's: not retried"
built_task "$WORK/step-fails" "FROM forge-busybox:latest\nRUN exit 3\n"
expect_exit 69 "build step fails" L --run-id "$run-step" --infra-retries 3 --command true "$WORK/step-fails"
[ "$(jq -r .infra_retries "$OUT")" = 0 ] && pass || fail "failed build step retried: $(cat "$OUT")"
[ "$(jq -r .transient "$OUT")" = false ] && pass || fail "failed build step transient: $(jq -c . "$OUT")"
grep -q "exit code: 3" "$ERR" && pass || fail "error does not give the step's status: $(cat "$ERR")"

echo "== a registry that wants credentials: from the docker config, or a credential helper, as the docker CLI finds them"
auth_port=$(free_port)
private="127.0.0.1:$auth_port/forge-e2e/private"
python3 -W ignore -c 'import crypt; print("robot:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH)))' >"$WORK/htpasswd"
start_registry registry-auth "$auth_port" "auth:
  htpasswd:
    realm: forge-e2e
    path: $WORK/htpasswd"
for _ in $(seq 100); do [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$auth_port/v2/")" = 401 ] && break; sleep 0.1; done
mkdir -p "$WORK/login" "$WORK/anon" "$WORK/helper" "$WORK/bin"
echo '{}' >"$WORK/anon/config.json"
echo s3cret | DOCKER_CONFIG="$WORK/login" docker login -u robot --password-stdin "127.0.0.1:$auth_port" >/dev/null 2>"$WORK/login.err" ||
  { fail "docker login: $(cat "$WORK/login.err") $(cat "$WORK/registry-auth.log")"; finish; exit 1; }
docker tag forge-busybox:latest "$private:1" && DOCKER_CONFIG="$WORK/login" docker push -q "$private:1" >/dev/null &&
  docker image rm "$private:1" >/dev/null || { fail "could not push to the private registry"; finish; exit 1; }
printf '{"id":"private","instruction":"x","environment":{"image":"%s:1"}}\n' "$private" >"$WORK/private.jsonl"
expect_exit 69 "no credentials" L --run-id "$run-anon" --docker-config "$WORK/anon/config.json" --infra-retries 3 --command true "$WORK/private.jsonl"
[ "$(jq -r .infra_retries "$OUT")" = 0 ] && pass || fail "a pull without credentials retried: $(cat "$OUT")"
grep -q "no basic auth credentials\|unauthorized" "$ERR" && pass || fail "error does not say why: $(cat "$ERR")"
expect_exit 0 "credentials from docker login" L --run-id "$run-login" --docker-config "$WORK/login/config.json" --command 'echo private' "$WORK/private.jsonl"
[ "$(jq -r '.outcome + .logs.stdout' "$OUT")" = okprivate ] && pass || fail "private pull: $(cat "$OUT") $(cat "$ERR")"
docker image rm "$private:1" >/dev/null 2>&1
cat >"$WORK/bin/docker-credential-forge-e2e" <<'EOF'
#!/bin/sh
read -r server
echo "$server" >>"$(dirname "$0")/asked"
echo "{\"ServerURL\":\"$server\",\"Username\":\"robot\",\"Secret\":\"s3cret\"}"
EOF
chmod +x "$WORK/bin/docker-credential-forge-e2e"
printf '{"credHelpers":{"127.0.0.1:%s":"forge-e2e"}}\n' "$auth_port" >"$WORK/helper/config.json"
PATH="$WORK/bin:$PATH" expect_exit 0 "credentials from a credential helper" L --run-id "$run-helper" --docker-config "$WORK/helper/config.json" --command 'echo private' "$WORK/private.jsonl"
[ "$(jq -r .outcome "$OUT")" = ok ] && pass || fail "pull through the helper: $(cat "$OUT") $(cat "$ERR")"
grep -qx "127.0.0.1:$auth_port" "$WORK/bin/asked" && pass || fail "the helper was not asked for the registry: $(cat "$WORK/bin/asked" 2>&1)"
docker image rm "$private:1" >/dev/null 2>&1
built_task "$WORK/from-private" "FROM $private:1\nRUN echo built-from-private > /etc/from\n"
expect_exit 0 "a build FROM the private registry, with credentials" L --run-id "$run-from-private" --docker-config "$WORK/login/config.json" --command 'cat /etc/from' "$WORK/from-private"
[ "$(jq -r .logs.stdout "$OUT")" = built-from-private ] && pass || fail "build from private: $(cat "$OUT") $(cat "$ERR")"
"$LAUNCH" --backend docker --store "$WORK/forge.db" gc --run-id "$run-from-private" --images >/dev/null 2>&1
docker image rm "$private:1" >/dev/null 2>&1

echo "== a registry that is down is transient: retried"
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null
printf '{"id":"down","instruction":"x","environment":{"image":"%s:2"}}\n' "$repo" >"$WORK/down.jsonl"
expect_exit 69 "registry down" L --run-id "$run-down" --infra-retries 2 --command true "$WORK/down.jsonl"
[ "$(jq -r .infra_retries "$OUT")" = 2 ] && pass || fail "registry down not retried: $(cat "$OUT")"
[ "$(jq -r .transient "$OUT")" = true ] && pass || fail "registry down transient: $(jq -c . "$OUT")"

echo "== a build FROM a registry that is down is transient too: retried"
built_task "$WORK/from-down" "FROM $repo:1\n"
expect_exit 69 "build from the registry that is down" L --run-id "$run-from-down" --infra-retries 2 --command true "$WORK/from-down"
[ "$(jq -r .infra_retries "$OUT")" = 2 ] && pass || fail "build from a registry that is down not retried: $(cat "$OUT")"
[ "$(jq -r .transient "$OUT")" = true ] && pass || fail "build from a registry that is down transient: $(jq -c . "$OUT")"
finish
