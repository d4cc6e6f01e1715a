#!/usr/bin/env bash
# The attack material of e2e/verify_adversarial_pytest (tests/support/
# adversarial_pytest_tasks.sh: 35 attacks in 12 classes, 10 honest agents)
# run on --backend k8s: pod-native held rollouts against the fake cluster's
# real mode (pods are Docker containers), verified by forge-verify's one
# forge-box verify stream a pod. Kubernetes gives forge no runtime evidence
# (no fanotify on the node from forge-verify), so what holds there is what
# holds by construction: every honest agent passes; forge's own steps run
# nothing of the sandbox's (the planted sleep, df and rm never run: those
# attacks fail); a reward left by a test.sh a signal ended is refused. The
# attacks that reach the verifier's own machinery (Python start-up hooks,
# plugins, patched or shadowed test framework, a replaced interpreter, rc
# files) are forged there: this test prints each attack's verdict, counts the
# forged ones and fails if any attack it expects to be caught is not, or if
# the forged ones grow beyond the classes docs/forge-verify.md names.
set -uo pipefail
source "$FORGE_SRC/tests/support/e2e.sh"
source "$FORGE_SRC/tests/support/k8s_fake.sh"
k8s_real_mode_or_skip verify_adversarial_k8s
bash "$FORGE_SRC/scripts/make-pytest-image.sh" >/dev/null ||
  { rc=$?; [ "$rc" = 77 ] && echo "SKIP: no pytest image" >&2; exit "$rc"; }
BOX_IMAGE=$(bash "$FORGE_SRC/scripts/make-box-image.sh" "$FORGE_BIN/forge-box" forge-box-e2e) || exit 1
K8S_NS=forge-e2e
pids=()
trap k8s_e2e_cleanup EXIT
work=$WORK
harbor="$FORGE_SRC/tests/data/harbor"
image=forge-pytest:bookworm
source "$FORGE_SRC/tests/support/adversarial_pytest_tasks.sh"
start_k8s_fake real --node-cpu 256 --node-memory 512Gi || { fail "start"; finish; exit 1; }
K=(--k8s-server "$K8S_URL" --k8s-token "$K8S_TOKEN" --k8s-namespace "$K8S_NS")

"$FORGE_BIN/forge-launch" --backend k8s "${K[@]}" --k8s-box-image "$BOX_IMAGE" --store "$work/forge.db" \
  --cpus 1 --memory 2g --k8s-apply-network-policies --run-id adv-k8s --hold -j 6 --agent-timeout 120 --harness command "$work/tasks.jsonl" \
  >"$work/rollouts.jsonl" 2>"$work/launch.err" && pass || fail "forge-launch: $(tail -5 "$work/launch.err")"
bad=$(jq -r 'select(.outcome != "ok") | "\(.task_id): \(.outcome) \(.error)"' "$work/rollouts.jsonl")
[ -z "$bad" ] && pass || fail "an agent did not run to its end: $bad"
"$FORGE_BIN/forge-verify" run "${K[@]}" "$work/rollouts.jsonl" --store "$work/forge.db" -j 6 \
  >"$work/verdicts.jsonl" 2>"$work/verify.err"
rc=$?
[ "$rc" = 1 ] && pass || fail "forge-verify exit $rc, want 1: $(tail -3 "$work/verify.err")"

# Caught by construction on k8s (the verdict names why); forged: the rest,
# all of them attacks on the verifier's own machinery, which only runtime
# evidence (docker) catches.
declare -A caught=([solve-kills-test]="ended by signal" [solve-terms-test]="ended by signal"
                   [path-sleep]="" [path-df]="" [path-rm]="")
forged=()
for name in $(printf '%s\n' "${!kind_of[@]}" | sort); do
  v=$(jq -c --arg id "$name" 'select(.task_id == $id) | .verdict' "$work/verdicts.jsonl")
  [ -n "$v" ] || { fail "$name: no verdict"; continue; }
  o=$(jq -r .outcome <<<"$v") r=$(jq -r .reward <<<"$v")
  printf '%-7s %-26s %-9s reward %s  %s\n' "${kind_of[$name]}" "$name" "$o" "$r" "$(jq -r '.message // "" | .[0:110]' <<<"$v")"
  [ "$(jq -r .sweep.stream <<<"$v")" = "forge-box verify" ] || fail "$name: not one stream: $(jq -c .sweep <<<"$v")"
  if [ "${kind_of[$name]}" = honest ]; then
    [ "$o" = passed ] && [ "$r" = 1 ] && pass || fail "honest $name ended $o: $(jq -r .message <<<"$v")"
  elif [ -n "${caught[$name]+x}" ]; then
    [ "$o" = failed ] && [ "$r" = 0 ] && jq -r '.message // ""' <<<"$v" | grep -q "${caught[$name]}" && pass ||
      fail "attack $name ended $o reward $r: $(jq -r .message <<<"$v")"
  elif [ "$o" = passed ]; then
    forged+=("$name")
  fi
done
attacks=$(printf '%s\n' "${kind_of[@]}" | grep -c attack)
echo "on k8s: ${#forged[@]} of $attacks attacks forged a pass: ${forged[*]}"
# The classes docs/forge-verify.md says k8s does not defend: start-up hooks,
# plugins, config files, shadowing modules, patched framework, fake packages,
# interpreter or bash replaced, rc files, the late reward writer, the chain.
for name in "${forged[@]}"; do
  case $name in
    pth-*|usercustomize-*|sitecustomize-*|plugin-*|config-*|cwd-*|patched-*|fake-*|python-*|bash-*|bashrc-*|profile-*|uv-env-*|solve-writes-late|path-mv|deep-chain) pass ;;
    *) fail "attack $name forged a pass on k8s, outside the classes documented as undefended" ;;
  esac
done
finish
