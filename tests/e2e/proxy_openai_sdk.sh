#!/usr/bin/env bash
# The official OpenAI Node SDK (npm "openai", installed under the build tree,
# not committed) as a client of forge-proxy: streaming and not, tool calls.
source "$FORGE_SRC/tests/support/proxy_env.sh"

SDK_DIR=$FORGE_BIN/npm-openai
if [ ! -d "$SDK_DIR/node_modules/openai" ]; then
  mkdir -p "$SDK_DIR"
  (cd "$SDK_DIR" && npm init -y >/dev/null && npm install --no-audit --no-fund openai >/dev/null 2>&1) \
    || fail "npm install openai failed (needs the npm registry)"
fi
cp "$FORGE_SRC/tests/e2e/sdk/openai_client.mjs" "$SDK_DIR/"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT"
register_rollout "$STORE" sdk sdk-secret
PROXY_URL=$PROXY ROLLOUT_SECRET=sdk-secret node "$SDK_DIR/openai_client.mjs" || fail "the SDK client failed"
n=$(calls "$STORE" sdk | python3 -c 'import sys,json; print(sum(1 for l in sys.stdin if json.loads(l)["http_status"]==200 and json.loads(l)["completion_ids"]))')
[ "$n" = 4 ] || fail "expected 4 successful recorded calls, got $n"
pass "OpenAI Node SDK: streaming and not, tool calls; 4 calls recorded with ids"
