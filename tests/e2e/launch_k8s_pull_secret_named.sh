#!/usr/bin/env bash
# Private images a task names itself (environment.image / docker_image, no
# --registry build) on the fake cluster's real mode, whose node pulls each
# registry image with the pod's imagePullSecrets as a kubelet does: the run's
# one pull Secret holds the docker config's credentials for every registry
# the pods pull from (one kubernetes.io/dockerconfigjson with an "auths"
# entry each: a task's named image on one htpasswd registry and --registry's
# built image on another both pull in one run), still only when there are
# credentials, still deleted at the run's end; a task's image on a registry
# with no credentials pulls anonymously (a private one then refuses: not
# retried); an identity token is refused before any pod; the password never
# reaches a record, stderr or the store.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
source "$FORGE_SRC/tests/support/registry.sh"
k8s_real_mode_or_skip launch_k8s_pull_secret_named
registry_or_skip launch_k8s_pull_secret_named
bash "$FORGE_SRC/scripts/make-busybox-image.sh" >/dev/null || exit 1
K8S_NS=forge-e2e
pids=()
built_port=$(free_port); named_port=$(free_port); open_port=$(free_port)
named="127.0.0.1:$named_port/psn-$$/img:1"
unpulled="127.0.0.1:$named_port/psn-$$/img:2"  # ones the node never pulled
harbor_image="127.0.0.1:$named_port/psn-$$/img:3"
open="127.0.0.1:$open_port/psn-$$/img:1"
cleanup() {
  stop_k8s_fake
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  drop_registry_images "$built_port" psn-both
  drop_registry_images "$named_port"
  drop_registry_images "$open_port"
  rm -rf "$WORK"
}
trap cleanup EXIT
# Two htpasswd registries (robot:s3cret), one open one; configs with both
# registries' credentials, with --registry's only, with an identity token.
start_private_registry built "$built_port" || { fail "registry: $(cat "$WORK/built.log")"; finish; exit 1; }
start_registry named "$named_port" "auth:
  htpasswd:
    realm: forge-e2e
    path: $WORK/built.htpasswd" || { fail "registry: $(cat "$WORK/named.log")"; finish; exit 1; }
start_registry open "$open_port" || { fail "registry: $(cat "$WORK/open.log")"; finish; exit 1; }
mkdir -p "$WORK/both" "$WORK/token"
cred=$(printf robot:s3cret | base64)
printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"},"http://127.0.0.1:%s":{"auth":"%s"}}}' \
  "$built_port" "$cred" "$named_port" "$cred" >"$WORK/both/config.json"
printf '{"auths":{"127.0.0.1:%s":{"identitytoken":"tok-%s"}}}' "$named_port" "$$" >"$WORK/token/config.json"
start_k8s_fake real --node-cpu 16 --node-memory 64Gi || { fail "start"; finish; exit 1; }
docker tag forge-busybox:latest "$named" && DOCKER_CONFIG="$WORK/both" docker push "$named" >/dev/null 2>&1 &&
  docker tag forge-busybox:latest "$unpulled" && DOCKER_CONFIG="$WORK/both" docker push "$unpulled" >/dev/null 2>&1 &&
  docker tag forge-busybox:latest "$harbor_image" && DOCKER_CONFIG="$WORK/both" docker push "$harbor_image" >/dev/null 2>&1 &&
  docker tag forge-busybox:latest "$open" && docker push "$open" >/dev/null 2>&1 && pass || fail "push the images"
docker image rm "$named" "$unpulled" "$harbor_image" "$open" >/dev/null 2>&1  # what the node runs, it pulls

# Tasks naming the images; a Harbor task naming the private one; one forge builds.
printf '{"id":"named","instruction":"x","environment":{"image":"%s"}}\n{"id":"open","instruction":"x","environment":{"image":"%s"}}\n' \
  "$named" "$open" >"$WORK/named.jsonl"
printf '{"id":"named","instruction":"x","environment":{"image":"%s"}}\n{"id":"open","instruction":"x","environment":{"image":"%s"}}\n' \
  "$unpulled" "$open" >"$WORK/unpulled.jsonl"
mkdir -p "$WORK/harbor/tests"
printf '[environment]\ndocker_image = "%s"\n' "$harbor_image" >"$WORK/harbor/task.toml"
echo 'Say hello.' >"$WORK/harbor/instruction.md"
printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n' >"$WORK/harbor/tests/test.sh"
make_built_task "$WORK/built-task" psn

L() {  # RUN_ID CONFIG ARGS...; the rollouts run $CMD
  "$FORGE_BIN/forge-launch" --backend k8s --k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS" \
    --k8s-apply-network-policies --store "$WORK/forge.db" --retry-backoff 0.1 --infra-retries 2 --run-id "$1" \
    --docker-config "$WORK/$2/config.json" --command "${CMD:-echo ran}" "${@:3}"
}
requests() { curl -fsS "$K8S_URL/_fake/stats" | jq -r --arg k "$1" '.requests[$k] // 0'; }
secret_name() { echo "forge-pull-$1-$(printf %s "$1" | sha256sum | cut -c1-10)"; }
no_credentials_in() {
  local f
  for f in "$@"; do
    grep -aqE "s3cret|$cred|tok-$$|$(printf %s "{\"auths\"" | base64 | cut -c1-12)" "$f" &&
      fail "the credentials reached $f" || pass
  done
}

echo "== tasks naming a private image and an open one, no --registry: the Secret holds the private registry's credentials"
creates=$(requests "create secrets")
expect_exit 0 "named" L psn-named both "$WORK/named.jsonl"
[ "$(jq -sr 'map("\(.task_id)=\(.outcome)") | sort | join(" ")' "$OUT")" = "named=ok open=ok" ] && pass ||
  fail "the run: $(jq -c '{task_id, outcome, error}' "$OUT") $(cat "$ERR")"
[ "$(requests "create secrets")" = $((creates + 1)) ] && pass || fail "secrets created: $(requests "create secrets") (before: $creates)"
kc get secrets "$(secret_name psn-named)" >/dev/null 2>&1 && fail "the Secret outlived its run" || pass
grep -Eq '"(GET|HEAD) /v2/psn-'$$'/img/manifests/1 HTTP/[0-9.]*" 200' "$WORK/named.log" && pass ||
  fail "the node did not pull from the private registry: $(tail -3 "$WORK/named.log")"
no_credentials_in "$OUT" "$ERR" "$WORK/forge.db"

echo "== a Harbor task's docker_image and --registry's built image, on two private registries, in one run"
CMD='cat /etc/built-for 2>/dev/null || echo named' expect_exit 0 "both" L psn-both both \
  --registry "127.0.0.1:$built_port/psn-$$" "$WORK/harbor" "$WORK/built-task"
[ "$(jq -sr 'map(.outcome) | unique | join(" ")' "$OUT")" = ok ] && [ "$(jq -s length "$OUT")" = 2 ] && pass ||
  fail "the run: $(jq -c '{task_id, outcome, error}' "$OUT") $(cat "$ERR")"
jq -sr '.[].logs.stdout' "$OUT" | grep -qx "psn-$$" && jq -sr '.[].logs.stdout' "$OUT" | grep -qx named && pass ||
  fail "each pod ran its image: $(jq -sr '.[].logs.stdout' "$OUT")"
[ "$(requests "create secrets")" = $((creates + 2)) ] && pass || fail "one Secret for the run: $(requests "create secrets")"
no_credentials_in "$OUT" "$ERR" "$WORK/forge.db"

echo "== credentials for --registry only: a task's image on another registry pulls anonymously, and a private one refuses"
creates=$(requests "create secrets")
expect_exit 69 "anonymous" L psn-anon login "$WORK/unpulled.jsonl"
[ "$(jq -sr 'map("\(.task_id)=\(.outcome)") | sort | join(" ")' "$OUT")" = "named=infra_error open=ok" ] && pass ||
  fail "the run: $(jq -c '{task_id, outcome, error}' "$OUT")"
jq -sr '.[] | select(.task_id == "named") | "\(.transient) \(.infra_retries) \(.error)"' "$OUT" |
  grep -Eq "^false 0 .*(no basic auth credentials|unauthorized).*the registry refused the credentials" && pass ||
  fail "the refused pull: $(jq -c 'select(.task_id == "named") | {transient, infra_retries, error}' "$OUT")"
[ "$(requests "create secrets")" = "$creates" ] && pass || fail "a Secret without credentials for the pods' registries"

echo "== an identity token for a task's registry: refused before any pod"
expect_exit 78 "identity token" L psn-token token "$WORK/named.jsonl"
grep -q "the credentials for 127.0.0.1:$named_port (image $named) are an identity token" "$ERR" && pass ||
  fail "the refusal: $(cat "$ERR")"
[ "$(kc get pods -l forge.run=psn-token | jq '.items | length')" = 0 ] && pass || fail "a refused run made pods"
no_credentials_in "$OUT" "$ERR"
finish
