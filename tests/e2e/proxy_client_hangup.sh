#!/usr/bin/env bash
# A client that hangs up before its answer is done (a harness's own timeout,
# an SDK giving up to retry): the proxy closes the upstream connection within
# a sweep (~1 s), so the upstream stops generating for no one, records the
# call as 499 without blaming the upstream, and serves the next call.
source "$FORGE_SRC/tests/support/proxy_env.sh"

STORE=$WORK/forge.db
start_fake up
start_proxy "$STORE" --upstream "http://127.0.0.1:$FAKE_PORT/v1" --open

# Connections from the proxy to the fake upstream still open.
upstream_conns() { ss -Htn state established "( dport = :$FAKE_PORT )" | wc -l; }
wait_upstream_closed() {  # what: the proxy closes its connection to the upstream within 5 s
  for _ in $(seq 1 50); do [ "$(upstream_conns)" = 0 ] && return 0; sleep 0.1; done
  fail "$1: the proxy still holds its upstream connection 5 s after the client hung up"
}
last_call() { calls "$STORE" anonymous | tail -1; }
metric() { curl -s "$PROXY/metrics" | awk -v m="$1" '$1 == m {print $2}'; }

# hang_up WHAT SECONDS BODY CHECK: a client that sends BODY and leaves after
# SECONDS; the proxy must close its upstream connection, and record the call
# (the N-th, N counted here) so that the Python expression CHECK holds.
recorded=0
hang_up() {
  curl -sN -o /dev/null --max-time "$2" -d "$3" "$PROXY/v1/chat/completions" && fail "$1: the call ended by itself"
  wait_upstream_closed "$1"
  recorded=$((recorded + 1))
  for _ in $(seq 1 30); do [ "$(calls "$STORE" anonymous | wc -l)" = "$recorded" ] && break; sleep 0.1; done
  last_call | py "$4" || fail "$1: record: $(last_call)"
  pass "$1: the client's hangup closed the upstream connection; recorded as 499"
}

# A whole answer the upstream never finishes; a stream whose first token
# never comes (a long prefill, a full queue); a stream of 40 tokens 50 ms
# apart, left after 0.6 s (the tokens so far are kept).
hang_up "whole answer" 1 '{"model":"m","messages":[{"role":"user","content":"script:hang"}]}' \
  'd["http_status"]==499 and "hung up" in d["error"] and d["completion_ids"]==[]'
hang_up "stream before its first token" 1 \
  '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:hang"}]}' \
  'd["http_status"]==499 and "hung up" in d["error"]'
hang_up "stream midway" 0.6 '{"model":"m","stream":true,"messages":[{"role":"user","content":"script:slow:40"}]}' \
  'd["http_status"]==499 and 0 < len(d["completion_ids"]) < 40'

# The upstream was not blamed, and serves the next call.
[ "$(metric forge_proxy_upstream_errors_total)" = 0 ] || fail "hangups counted as upstream errors: $(metric forge_proxy_upstream_errors_total)"
[ "$(metric forge_proxy_client_hangups_total)" = 3 ] || fail "hangups not counted: $(metric forge_proxy_client_hangups_total)"
out=$(curl -s -d '{"model":"m","messages":[{"role":"user","content":"hi"}]}' "$PROXY/v1/chat/completions")
echo "$out" | py 'd["choices"][0]["message"]["content"]=="hello from fake!"' || fail "the next call: $out"
pass "3 hangups counted, no upstream error; the next call is served"
