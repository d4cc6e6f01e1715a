#!/usr/bin/env bash
# The attack material of e2e/verify_adversarial_pytest (tests/support/
# adversarial_pytest_tasks.sh: 35 attacks in 12 classes, 10 honest agents)
# run on --backend k8s: pod-native held rollouts against the fake cluster's
# real mode (pods are Docker containers), verified by forge-verify's one
# forge-box verify stream a pod, under forge-box's tracer (verify/tracer.h:
# ptrace and seccomp inside the pod, the fanotify watch's rules). What the
# docker suite requires holds here: every attack ends failed or tampered with
# reward 0, every honest agent passes (plugin-honest, which runs its own
# pytest plugin, ends tampered with its claimed reward kept, as on docker),
# and the attacks on the verifier's machinery end tampered, naming the file.
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

field() { jq -r "$2" <<<"$1"; }
for name in $(printf '%s\n' "${!kind_of[@]}" | sort); do
  v=$(jq -c --arg id "$name" 'select(.task_id == $id) | .verdict' "$work/verdicts.jsonl")
  [ -n "$v" ] || { fail "$name: no verdict"; continue; }
  o=$(field "$v" .outcome) r=$(field "$v" .reward)
  printf '%-7s %-26s %-9s reward %s  %s\n' "${kind_of[$name]}" "$name" "$o" "$r" "$(field "$v" '.message // "" | .[0:110]')"
  [ "$(field "$v" .sweep.stream)" = "forge-box verify" ] || fail "$name: not one stream: $(jq -c .sweep <<<"$v")"
  [ "$(field "$v" .tamper.checked)" = true ] && [ "$(field "$v" .tamper.method)" = ptrace ] ||
    fail "$name: no runtime evidence: $(jq -c .tamper <<<"$v")"
  [ "$(field "$v" .tamper.unverified_paths)" = 0 ] || fail "$name: paths not followed: $(jq -c .tamper.unverified_examples <<<"$v")"
  if [ "${kind_of[$name]}" = attack ]; then
    { [ "$o" = failed ] || [ "$o" = tampered ]; } && [ "$r" = 0 ] && pass || fail "attack $name ended $o reward $r: $(field "$v" .message)"
  elif [ "$name" = plugin-honest ]; then
    [ "$o" = tampered ] && [ "$r" = 0 ] && [ "$(field "$v" .claimed_reward)" = 1 ] && pass ||
      fail "plugin-honest: $o reward $r (expected tampered, reward 0, claimed 1)"
  else
    [ "$o" = passed ] && [ "$r" = 1 ] && pass || fail "honest $name ended $o: $(field "$v" .message)"
  fi
done
# As on docker: the attacks on the verifier's machinery are caught by its
# evidence, naming the file; a killed test.sh's reward is refused.
for name in pth-local pth-system usercustomize-package sitecustomize-patched plugin-pip plugin-user-site \
            plugin-image-module config-tox-ini config-setup-cfg config-pyproject cwd-pytest-module \
            cwd-pytest-package cwd-_pytest-package patched-pytest-main patched-pluggy patched-stdlib fake-pytest \
            fake-_pytest fake-pluggy python-target-replaced python-link-to-true python-link-to-workdir bash-replaced \
            bashrc-through-profile profile-addopts profile-sources-new-file uv-env-planted solve-writes-late path-mv; do
  v=$(jq -c --arg id "$name" 'select(.task_id == $id) | .verdict' "$work/verdicts.jsonl")
  [ "$(field "$v" .outcome)" = tampered ] && [ "$(field "$v" '.tamper.findings | length')" -ge 1 ] && pass ||
    fail "$name: $(field "$v" .outcome), expected tampered with a finding: $(field "$v" .message)"
done
field "$(jq -c 'select(.task_id == "python-link-to-true") | .verdict' "$work/verdicts.jsonl")" .message |
  grep -q "through /usr/bin/python3, a symlink the agent made" && pass || fail "python-link-to-true: the retargeted link not named"
for name in solve-kills-test solve-terms-test; do
  field "$(jq -c --arg id "$name" 'select(.task_id == $id) | .verdict' "$work/verdicts.jsonl")" .message |
    grep -q "ended by signal" && pass || fail "$name: a killed test.sh's reward was not refused"
done
attacks=$(printf '%s\n' "${kind_of[@]}" | grep -c attack)
caught=$(jq -r 'select(.verdict.outcome == "failed" or .verdict.outcome == "tampered") | .task_id' "$work/verdicts.jsonl" |
         while read -r id; do [ "${kind_of[$id]:-}" = attack ] && echo "$id"; done | wc -l)
echo "on k8s: $caught of $attacks attacks failed or tampered with reward 0"
finish
