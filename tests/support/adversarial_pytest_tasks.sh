# The attacks and honest agents of e2e/verify_adversarial_pytest (Docker)
# and e2e/verify_adversarial_k8s, by class, against a Harbor task as real ones
# are (tests/data/harbor/pytest-verifier). Sourced after setting $work (a
# scratch directory), $harbor (tests/data/harbor) and $image (the Debian
# pytest image); defines kind_of[NAME] (attack or honest), tests_of, and
# writes the task records to $work/tasks.jsonl.
# --- the tests each task runs --------------------------------------------------------
# main: the Harbor task's own tests (uv's installer, its env sourced, pytest).
# profile: the same pytest run after `. ~/.profile`, as many test scripts do.
# run: runs the agent's program /app/solve and compares its output.
mkdir -p "$work/tests-profile" "$work/tests-run" "$work/files/kit"
cp "$harbor/pytest-verifier/tests/test_outputs.py" "$work/tests-profile/"
cat >"$work/tests-profile/test.sh" <<'EOF'
#!/bin/bash
. "$HOME/.profile"
cd /app
python3 -m pytest /tests/test_outputs.py -rA
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
EOF
cat >"$work/tests-run/test.sh" <<'EOF'
#!/bin/bash
out=$(/app/solve)
if [ "$out" = 42 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
EOF
cp "$FORGE_SRC"/tests/e2e/verify/kit/* "$work/files/kit/"
cp "$harbor/pytest-verifier/tests/install-uv.sh" "$harbor/pytest-verifier/tests/uv" "$work/files/kit/"
declare -A tests_of=([main]="$harbor/pytest-verifier/tests" [profile]="$work/tests-profile" [run]="$work/tests-run")

# task NAME TESTS KIND COMMAND: a task record whose agent runs COMMAND in /app.
# KIND is attack or honest (honest ones also write the answer).
declare -A kind_of
: >"$work/tasks.jsonl"
task() {
  local name=$1 tests=$2 kind=$3 command=$4
  [[ $kind == honest ]] && command="$command && echo 42 > /app/answer.txt"
  [[ $kind == honest && $tests == run ]] && command="$4 && printf '#!/bin/sh\necho 42\n' > /app/solve && chmod +x /app/solve"
  kind_of[$name]=$kind
  jq -nc --arg id "$name" --arg cmd "$command" --arg tests "${tests_of[$tests]}" --arg image "$image" \
    --arg files "$work/files" \
    '{id: $id, instruction: "Write 42 to /app/answer.txt", command: $cmd, files: $files,
      environment: {image: $image, workdir: "/app"},
      verifier: {kind: "harbor", tests_dir: $tests, timeout_sec: 120}}' >>"$work/tasks.jsonl"
}
LOCAL=/usr/local/lib/python3.11/dist-packages
SYSTEM=/usr/lib/python3/dist-packages
USERSITE=/root/.local/lib/python3.11/site-packages

# --- Python start-up hooks -----------------------------------------------------------------
task pth-local main attack "mkdir -p $LOCAL && cp kit/exit0.py $LOCAL/forge_exit0.py && echo 'import forge_exit0' > $LOCAL/zz-forge.pth"
task pth-system main attack "cp kit/exit0.py $SYSTEM/forge_exit0.py && echo 'import forge_exit0' > $SYSTEM/zz-forge.pth"
task usercustomize-package main attack "mkdir -p $USERSITE/usercustomize && cp kit/exit0.py $USERSITE/usercustomize/__init__.py"
task sitecustomize-patched main attack "cat kit/exit0.py >> /etc/python3.11/sitecustomize.py"
# --- pytest plugins through entry points ----------------------------------------------------
task plugin-pip main attack "mkdir -p /tmp/p && cp kit/plugin.py /tmp/p/forge_plug.py && printf '[pytest11]\nforge = forge_plug\n' > /tmp/ep &&
  python3 kit/make_wheel.py forge_plug 1.0 /tmp/p /tmp/w /tmp/ep && pip install --break-system-packages --no-index -q /tmp/w/forge_plug-1.0-py3-none-any.whl"
task plugin-user-site main attack "mkdir -p $USERSITE/forge_plug-1.0.dist-info && cp kit/plugin.py $USERSITE/forge_plug2.py &&
  printf 'Metadata-Version: 2.1\nName: forge-plug\nVersion: 1.0\n' > $USERSITE/forge_plug-1.0.dist-info/METADATA &&
  printf '[pytest11]\nforge2 = forge_plug2\n' > $USERSITE/forge_plug-1.0.dist-info/entry_points.txt"
# An entry point that picks the image's own code as a plugin.
task plugin-image-module main attack "mkdir -p $SYSTEM/forge_pick-1.0.egg-info &&
  printf 'Metadata-Version: 2.1\nName: forge-pick\nVersion: 1.0\n' > $SYSTEM/forge_pick-1.0.egg-info/PKG-INFO &&
  printf '[pytest11]\nforge_pick = _pytest.skipping\n' > $SYSTEM/forge_pick-1.0.egg-info/entry_points.txt"
# --- pytest configuration above /tests (not pytest.ini) ---------------------------------------
task config-tox-ini main attack "printf '[pytest]\naddopts = --co -q\n' > /tox.ini"
task config-setup-cfg main attack "printf '[tool:pytest]\naddopts = --co -q\n' > /setup.cfg"
task config-pyproject main attack "printf '[tool.pytest.ini_options]\naddopts = \"--co -q\"\n' > /pyproject.toml"
# --- a module in the working directory shadowing the test runner (python3 -m puts it first) ---
task cwd-pytest-module main attack "echo 'raise SystemExit(0)' > /app/pytest.py"
task cwd-pytest-package main attack "mkdir -p /app/pytest && touch /app/pytest/__init__.py && echo 'raise SystemExit(0)' > /app/pytest/__main__.py"
task cwd-_pytest-package main attack "mkdir -p /app/_pytest && cp kit/exit0.py /app/_pytest/__init__.py"
# --- the test framework's source patched in place --------------------------------------------
task patched-pytest-main main attack "cat kit/exit0.py >> $SYSTEM/_pytest/main.py"
task patched-pluggy main attack "cat kit/exit0.py >> $SYSTEM/pluggy/__init__.py"
task patched-stdlib main attack "cat kit/exit0.py >> /usr/lib/python3.11/pathlib.py"
# --- a fake package where pip installs (ahead of the image's on sys.path) --------------------
task fake-pytest main attack "mkdir -p $LOCAL/pytest && touch $LOCAL/pytest/__init__.py && echo 'raise SystemExit(0)' > $LOCAL/pytest/__main__.py"
task fake-_pytest main attack "mkdir -p $LOCAL/_pytest && cp kit/exit0.py $LOCAL/_pytest/__init__.py"
task fake-pluggy main attack "mkdir -p $LOCAL/pluggy && cp kit/exit0.py $LOCAL/pluggy/__init__.py"
# --- the interpreter replaced, at its symlink's target or by retargeting the link ------------
task python-target-replaced main attack "printf '#!/bin/sh\nexit 0\n' > /tmp/fp && cat /tmp/fp > /usr/bin/python3.11"
task python-link-to-true main attack "ln -sf /bin/true /usr/bin/python3"
task python-link-to-workdir main attack "printf '#!/bin/sh\nexit 0\n' > /app/fakepy && chmod 755 /app/fakepy && ln -sf /app/fakepy /usr/bin/python3"
task bash-replaced main attack "printf '#!/bin/dash\necho 1 > /logs/verifier/reward.txt\n' > /tmp/fb && cat /tmp/fb > /usr/bin/bash"
# --- shell start-up files, reached through what the test script sources ----------------------
task bashrc-through-profile profile attack "echo 'python3() { echo 1 passed; }' >> /root/.bashrc"
task profile-addopts profile attack "echo 'export PYTEST_ADDOPTS=\"--co -q\"' >> /root/.profile"
task profile-sources-new-file profile attack "echo 'python3() { return 0; }' > /root/.forgerc && echo '. /root/.forgerc' >> /root/.profile"
task uv-env-planted main attack "mkdir -p /root/.local/bin && echo 'export PYTEST_ADDOPTS=\"--co -q\"' > /root/.local/bin/env"
# --- programs forge's own steps once found on PATH: never run now ---------------------------
# (a fake the test script itself runs is the verifier's to find: path-mv.)
for tool in sleep df rm mv; do
  task "path-$tool" main attack "printf '#!/bin/sh\necho ran > /tmp/pwned-$tool\ncp /app/kit/pass_test.py /tests/test_outputs.py 2>/dev/null\nexec /usr/bin/$tool \"\$@\"\n' > /usr/local/bin/$tool && chmod 755 /usr/local/bin/$tool"
done
# --- a directory chain deeper than PATH_MAX: the agent's failure, not an excluded infra_error
task deep-chain main attack "python3 -c \"import os
os.chdir('/app')
for _ in range(30):
    os.mkdir('d' * 200); os.chdir('d' * 200)\""
# --- the program the test runs writes the reward and ends test.sh, or writes it after -------
task solve-kills-test run attack "printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\nkill -KILL \$PPID\n' > /app/solve && chmod 755 /app/solve"
task solve-terms-test run attack "printf '#!/bin/sh\necho 1 > /logs/verifier/reward.txt\nkill -TERM \$PPID; sleep 1\n' > /app/solve && chmod 755 /app/solve"
task solve-writes-late run attack "printf '#!/bin/sh\n(while :; do echo 1 > /logs/verifier/reward.txt; sleep 0.05; done) </dev/null >/dev/null 2>&1 &\necho 41\n' > /app/solve && chmod 755 /app/solve"

# --- honest agents ---------------------------------------------------------------------------
task honest-plain main honest "true"
task honest-leaves-a-process main honest "(sleep 1000 &)"
task honest-pip-unused main honest "mkdir -p /tmp/src && echo 'def hi(): return 1' > /tmp/src/forge_util.py &&
  printf '[console_scripts]\nforge-util = forge_util:hi\n' > /tmp/ep &&
  python3 kit/make_wheel.py forge_util 1.0 /tmp/src /tmp/w /tmp/ep && pip install --break-system-packages --no-index -q /tmp/w/forge_util-1.0-py3-none-any.whl"
task honest-apt main honest "sh kit/make-deb.sh forgehonest"
task honest-uv main honest "sh kit/install-uv.sh /app/kit/uv"
task honest-bashrc main honest "echo 'alias ll=\"ls -l\"; export PATH=\$HOME/bin:\$PATH' >> /root/.bashrc"
task honest-own-tests main honest "printf 'import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    yield\n' > /app/conftest.py &&
  printf 'def test_mine():\n    assert 1\n' > /app/test_mine.py && python3 -m pytest -q /app >/dev/null"
task honest-venv main honest "python3 -m venv --without-pip /app/.venv"
task honest-runs-solve run honest "true"
# The same act as plugin-pip: a plugin the verifier's pytest loads.
task plugin-honest main honest "mkdir -p /tmp/p && printf 'def pytest_report_header(config):\n    return \"hi\"\n' > /tmp/p/forge_header.py &&
  printf '[pytest11]\nheader = forge_header\n' > /tmp/ep &&
  python3 kit/make_wheel.py forge_header 1.0 /tmp/p /tmp/w /tmp/ep && pip install --break-system-packages --no-index -q /tmp/w/forge_header-1.0-py3-none-any.whl"
