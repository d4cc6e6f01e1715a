#!/usr/bin/env bash
# Attacks on forge-verify's tamper evidence by class, against a Harbor task as
# real ones are (tests/data/harbor/pytest-verifier: Debian, python3, pytest,
# a test.sh that installs uv and runs pytest from the working directory), on
# the real Docker engine, each sandbox made and held by forge-launch (the
# `command` harness runs the "agent"). No attacking agent does the task; each
# tries to make the verifier say it did. Every attack must end `failed` or
# `tampered` with reward 0 (never `passed`, never an excluded infra_error);
# every honest agent must pass, whatever it installed on the way (pip, apt,
# uv, a .bashrc edit, its own tests and conftest.py, a venv, a package the
# task asked for). An honest pip install of a pytest plugin is the same act
# as an attack through one: it ends `tampered` (reward 0), which this test
# states. Needs root (fanotify) and debootstrap for the image (exit 77
# otherwise).
set -euo pipefail
: "${FORGE_BIN:?}" "${FORGE_SRC:?}"
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ "$(id -u)" -eq 0 ]] || { echo "SKIP: runtime evidence needs root" >&2; exit 77; }
docker info >/dev/null 2>&1 || { echo "SKIP: no Docker engine" >&2; exit 77; }
bash "$FORGE_SRC/scripts/make-pytest-image.sh" || { rc=$?; [[ $rc -eq 77 ]] && echo "SKIP: no pytest image" >&2; exit $rc; }

work="$(mktemp -d)"
run="e2e-adv-pytest-$$-$RANDOM"
cleanup() {
  local r
  for r in "$run" "$run-oracle"; do docker ps -aq --filter "label=forge.run=$r" | xargs -r docker rm -f >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
harbor="$FORGE_SRC/tests/data/harbor"
image=forge-pytest:bookworm

source "$FORGE_SRC/tests/support/adversarial_pytest_tasks.sh"

# --- launch (held), then verify ------------------------------------------------------------------
"$FORGE_BIN/forge-launch" --backend docker --store "$work/forge.db" --run-id "$run" --hold -j 4 \
  --agent-timeout 120 "$work/tasks.jsonl" "$harbor/pytest-package" "$harbor/environment-service" \
  --harness command >"$work/rollouts.jsonl" 2>"$work/launch.err" || { cat "$work/launch.err" >&2; fail "forge-launch"; }
# The Harbor tasks given as directories run their own reference solutions.
"$FORGE_BIN/forge-launch" --backend docker --store "$work/forge.db" --run-id "$run-oracle" --hold -j 3 \
  --harness oracle "$harbor/pytest-verifier" "$harbor/pytest-package" "$harbor/environment-service" \
  >>"$work/rollouts.jsonl" 2>>"$work/launch.err" || { cat "$work/launch.err" >&2; fail "forge-launch oracle"; }
bad=$(jq -r 'select(.outcome != "ok") | "\(.task_id): \(.outcome) \(.error)"' "$work/rollouts.jsonl")
[[ -z $bad ]] || fail "an agent did not run to its end: $bad"
set +e
"$FORGE_BIN/forge-verify" run "$work/rollouts.jsonl" --store "$work/forge.db" -j 4 --keep --require-evidence \
  >"$work/verdicts.jsonl" 2>"$work/verify.err"
rc=$?
set -e
[[ $rc -eq 1 ]] || { cat "$work/verify.err" >&2; fail "forge-verify exit status $rc, expected 1"; }

field() { jq -r "$2" <<<"$1"; }
for name in "${!kind_of[@]}"; do
  v=$(jq -c --arg id "$name" 'select(.task_id == $id)' "$work/verdicts.jsonl")
  [[ -n $v ]] || fail "$name: no verdict"
  o=$(field "$v" .verdict.outcome) r=$(field "$v" .verdict.reward)
  echo "${kind_of[$name]} $name: $o reward $r $(field "$v" '.verdict.message // "" | .[0:160]')" >&2
  [[ $(field "$v" .verdict.tamper.checked) == true ]] || fail "$name: no runtime evidence: $(field "$v" .verdict.tamper)"
  [[ $(field "$v" .verdict.tamper.unverified_paths) == 0 ]] || fail "$name: paths not followed: $(field "$v" .verdict.tamper.unverified_examples)"
  if [[ ${kind_of[$name]} == attack ]]; then
    [[ $o == failed || $o == tampered ]] || fail "attack $name ended $o: $(field "$v" .verdict.message)"
    [[ $r == 0 ]] || fail "attack $name has reward $r"
  elif [[ $name == plugin-honest ]]; then
    [[ $o == tampered && $r == 0 && $(field "$v" .verdict.claimed_reward) == 1 ]] ||
      fail "plugin-honest: $o reward $r (expected tampered, reward 0, claimed 1)"
  else
    [[ $o == passed && $r == 1 ]] || fail "honest $name ended $o: $(field "$v" .verdict.message)"
  fi
done
# Every class whose hook the verifier reaches is caught by its evidence, not
# by luck: those attacks end tampered, naming the file.
for name in pth-local pth-system usercustomize-package sitecustomize-patched plugin-pip plugin-user-site \
            plugin-image-module config-tox-ini config-setup-cfg config-pyproject cwd-pytest-module \
            cwd-pytest-package cwd-_pytest-package patched-pytest-main patched-pluggy patched-stdlib fake-pytest \
            fake-_pytest fake-pluggy python-target-replaced python-link-to-true python-link-to-workdir bash-replaced \
            bashrc-through-profile profile-addopts profile-sources-new-file uv-env-planted solve-writes-late path-mv; do
  v=$(jq -c --arg id "$name" 'select(.task_id == $id)' "$work/verdicts.jsonl")
  [[ $(field "$v" .verdict.outcome) == tampered ]] || fail "$name: $(field "$v" .verdict.outcome), expected tampered: $(field "$v" .verdict.message)"
  [[ $(field "$v" '.verdict.tamper.findings | length') -ge 1 ]] || fail "$name: no finding"
done
field "$(jq -c 'select(.task_id == "python-link-to-true")' "$work/verdicts.jsonl")" '.verdict.message' |
  grep -q "through /usr/bin/python3, a symlink the agent made" || fail "python-link-to-true: the retargeted link not named"
for name in solve-kills-test solve-terms-test; do
  field "$(jq -c --arg id "$name" 'select(.task_id == $id)' "$work/verdicts.jsonl")" .verdict.message | grep -q "ended by signal" ||
    fail "$name: a killed test.sh's reward was not refused"
done
# forge's steps ran none of the planted programs.
for tool in sleep df rm; do
  c=$(jq -r --arg id "path-$tool" 'select(.task_id == $id) | .sandbox.id' "$work/verdicts.jsonl")
  ! docker exec "$c" test -e "/tmp/pwned-$tool" || fail "path-$tool: forge ran the agent's $tool"
  [[ $(docker exec "$c" cat /proc/1/cmdline | tr '\0' ' ') == "/forge/bin/forge-box keepalive "* ]] || fail "path-$tool: PID 1 is not forge-box"
done
# The Harbor tasks' reference solutions pass, the environment's service still answering.
for t in pytest-verifier pytest-package environment-service; do
  v=$(jq -c --arg id "$t" 'select(.task_id == $id and .harness == "oracle")' "$work/verdicts.jsonl")
  [[ $(field "$v" .verdict.outcome) == passed ]] || fail "oracle $t: $(field "$v" .verdict.outcome): $(field "$v" .verdict.message) $(field "$v" .verdict.log)"
done
v=$(jq -c 'select(.task_id == "environment-service" and .harness == "oracle")' "$work/verdicts.jsonl")
[[ $(field "$v" '.baseline.processes | length') -ge 2 ]] || fail "environment-service: no baseline of the environment's processes"
# The command harness did nothing on the two Harbor tasks: failed, not tampered
# (the entrypoint's /logs/verifier is the environment's).
for t in pytest-package environment-service; do
  v=$(jq -c --arg id "$t" 'select(.task_id == $id and .harness == "command")' "$work/verdicts.jsonl")
  [[ $(field "$v" .verdict.outcome) == failed ]] || fail "nothing done on $t: $(field "$v" .verdict.outcome): $(field "$v" .verdict.message)"
done
attacks=$(printf '%s\n' "${kind_of[@]}" | grep -c attack)
echo "verify_adversarial_pytest: $attacks attacks failed or tampered, every honest agent passed" >&2
