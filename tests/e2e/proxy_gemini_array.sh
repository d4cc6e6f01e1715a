#!/usr/bin/env bash
# Gemini streamGenerateContent without alt=sse: the answer is one JSON array
# (application/json) written element by element as the upstream streams,
# carrying the same responses as the SSE form; the call is recorded with its
# token ids. A cut upstream stream breaks the client's transfer after the
# elements sent, as the upstream's broke.
source "$FORGE_SRC/tests/support/proxy_env.sh"

start_fake up
STORE=$WORK/forge.db
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT" --open
body='{"contents":[{"role":"user","parts":[{"text":"hello array"}]}]}'
url=$PROXY/r/gem/v1beta/models/policy:streamGenerateContent

curl -s -D "$WORK/headers" -o "$WORK/array" -H 'content-type: application/json' -d "$body" "$url" || fail "array stream"
grep -qi '^content-type: application/json' "$WORK/headers" || fail "content type: $(cat "$WORK/headers")"
grep -qi '^transfer-encoding: chunked' "$WORK/headers" || fail "the array was not streamed (chunked)"
curl -s -o "$WORK/sse" -H 'content-type: application/json' -d "$body" "$url?alt=sse" || fail "sse stream"
python3 - "$WORK/array" "$WORK/sse" <<'PY' || fail "the JSON array does not carry what the SSE stream carries"
import json, sys
array = json.load(open(sys.argv[1]))
sse = [json.loads(l[6:]) for l in open(sys.argv[2]) if l.startswith("data: ")]
assert isinstance(array, list) and len(array) >= 2, array
strip = lambda r: [c["content"] for c in r.get("candidates", [])]
assert [strip(r) for r in array] == [strip(r) for r in sse], (array, sse)
assert array[-1]["candidates"][0]["finishReason"] == "STOP", array[-1]
text = "".join(p.get("text", "") for r in array for c in r["candidates"] for p in c["content"]["parts"])
assert text, array
PY
[ "$(calls "$STORE" gem | jq -s 'map(select(.http_status == 200 and (.completion_ids | length) > 0)) | length')" = 2 ] \
  || fail "array and SSE calls not both recorded with token ids"
pass "streamGenerateContent without alt=sse: one JSON array, streamed, same responses as SSE, recorded"

cut='{"contents":[{"role":"user","parts":[{"text":"script:disconnect"}]}]}'
rc=0
curl -s -o "$WORK/cut" -d "$cut" "$url" || rc=$?
[ "$rc" = 18 ] || fail "a cut stream must end the client's transfer unfinished (curl exit $rc, want 18)"
grep -q '"candidates"' "$WORK/cut" || fail "what came before the cut is lost: $(cat "$WORK/cut")"
if grep -q '"error"' "$WORK/cut"; then fail "a cut stream ended with an error element: $(cat "$WORK/cut")"; fi
pass "an upstream cut mid-stream breaks the client's array after what was sent, as the upstream's connection broke"
echo "all Gemini JSON-array checks passed"
