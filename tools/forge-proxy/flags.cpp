#include "forge-proxy/flags.h"

#include "base/json_scan.h"

namespace forge::tools::proxy {
namespace {

std::vector<cli::Flag> UpstreamFlags(Args& a) {
  forge::proxy::ProxyConfig& c = a.config;
  return {
      {.names = "--store", .value = "FILE", .bind = cli::Bind(c.store_path),
       .more = [](CLI::Option& f) { f.required(); },
       .help = "SQLite store the calls are recorded in",
       .doc = R"~(SQLite store to record into (created if missing). Required. The proxy also
writes its call log beside it (\fIFILE\fB\-calls\-\fIID\fR), so its
directory must be writable.)~"},
      {.names = "--upstream", .value = "URL", .bind = cli::Bind(c.upstreams),
       .help = "OpenAI-compatible upstream URL (repeatable), http://host:port[/base] or https://... (TLS, "
               "certificate checked)",
       .doc = R"~(An OpenAI\-compatible upstream, \fBhttp://host:port[/base]\fR or
\fBhttps://host[:port][/base]\fR (a hosted API; TLS with the certificate
checked against the system's CAs and \fB\-\-upstream\-ca\fR, and the host
name or IP address checked against the certificate); repeatable. A
rollout sticks to one upstream (hash of its id, for the prefix cache); an
unhealthy one is skipped for the least busy healthy one. Connection failures
are retried on another upstream before any byte of the answer.)~"},
      {.names = "--upstream-ca", .value = "FILE", .bind = cli::Bind(c.upstream_ca_file),
       .help = "PEM file of CA certificates trusted for https upstreams, besides the system's",
       .doc = R"~(PEM file of CA certificates trusted for https upstreams besides the system's
(a private CA, or a self\-signed test server). A file that cannot be read is a
configuration error (78). A certificate that does not verify fails the call
with 502 before any byte of the request is sent.)~"},
      {.names = "--upstream-api", .value = "openai|anthropic", .bind = cli::Bind(c.upstream_api), .show_default = true,
       .help = "what the upstreams speak: openai (chat completions; every client format is translated to it) or "
               "anthropic (a Messages API such as a teacher model: /v1/messages passes through untranslated with "
               "anthropic-version/anthropic-beta, the key goes as x-api-key, no token ids)",
       .doc = R"~(What the upstreams speak. \fBopenai\fR: chat completions, to which
every client format is translated. \fBanthropic\fR: an Anthropic Messages
API such as a hosted teacher model. Then \fB/v1/messages\fR and
\fB/v1/messages/count_tokens\fR pass through untranslated: the client's
body byte for byte, its \fBanthropic\-version\fR (default 2023\-06\-01) and
\fBanthropic\-beta\fR headers, the proxy's key as \fBx\-api\-key\fR; the
answer is relayed as sent (streams event by event) and the assembled message
recorded, without token ids. Other client formats get 400.)~"},
      {.names = "--upstream-key-env", .value = "VAR", .bind = cli::Bind(c.upstream_key_env),
       .help = "environment variable with an API key sent only upstream (never recorded): as a bearer token, or "
               "x-api-key for --upstream-api anthropic",
       .doc = R"~(Send the key in environment variable VAR upstream as a bearer token
(\fBx\-api\-key\fR with \fB\-\-upstream\-api anthropic\fR). The key
never reaches the client and is never recorded; client keys are never
forwarded.)~"},
  };
}

std::vector<cli::Flag> ServingFlags(Args& a) {
  forge::proxy::ProxyConfig& c = a.config;
  return {
      {.names = "--listen", .value = "ADDR", .bind = cli::Bind(c.listen_host), .show_default = true,
       .help = "address to listen on",
       .doc = "Address to listen on."},
      {.names = "--port", .value = "N", .bind = cli::Bind(c.port), .show_default = true,
       .help = "port to listen on",
       .doc = "Port to listen on."},
      {.names = "--open", .bind = cli::Bind(c.open),
       .help = "serve calls without a rollout secret (rollout \"anonymous\")",
       .doc = R"~(Serve calls without a rollout secret (rollout "anonymous").)~"},
      {.names = "--admin-token", .value = "TOKEN", .bind = cli::Bind(c.admin_token),
       .help = "bearer token for /admin/* (default: loopback only)",
       .doc = "Require this bearer token on /admin/* (default: the admin API answers loopback only)."},
      {.names = "--replay", .value = "FILE", .bind = cli::Bind(c.replay_path),
       .help = "serve recorded responses instead of an upstream, from a store or a recorded-exchange file "
               "(JSONL, as --export writes)",
       .doc = R"~(Serve recorded responses instead of calling an upstream. FILE is a store, or
a recorded\-exchange file (JSON Lines as \fB\-\-export\fR writes; told
apart by the file's first bytes). A request is matched by the client's
request (its JSON without \fBstream\fR and \fBstream_options\fR) and client
format; a request recorded several times is answered with each recording in
turn. Replayed calls are recorded in \fB\-\-store\fR with the recorded
token ids and logprobs. An unmatched request gets 404. A bad line of the file
is reported as \fIfile\fB:\fIline\fB:\fR \fIreason\fR and skipped; a file
with no servable line is an error (65).)~"},
      {.names = "--threads", .value = "N", .bind = cli::Bind(c.threads), .show_default = true,
       .help = "io threads",
       .doc = "I/O threads. Connections are coroutines, not threads."},
      {.names = "--body-limit", .value = "BYTES", .bind = cli::Bind(c.body_limit), .show_default = true,
       .help = "largest client request body, bytes",
       .doc = R"~(Largest request body; larger gets 413, at once when
Content\-Length says so. A client that sends
.B "Expect: 100-continue"
gets
.B "100 Continue"
as soon as its header is read.)~"},
      {.names = "--max-json-depth", .value = "N", .bind = cli::Bind(c.max_json_depth), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(1, kMaxJsonDepthCeiling)); },
       .help = "deepest nesting of objects and arrays a request body may have (answered 400 beyond it)",
       .doc = R"~(Deepest nesting of objects and arrays a request body may have (at most 4096);
a deeper body gets 400 in the client's error shape, before any
translation (which recurses) sees it. Readers of the store read documents up
to 4096 deep, so anything a proxy accepted; a deeper one that an older proxy
recorded is read back as a string holding its text.)~"},
      {.names = "--header-timeout", .value = "S", .bind = cli::Bind(c.header_timeout), .show_default = true,
       .help = "seconds a client has to send a request's header (408 after), and between reads of its body (0: none)",
       .doc = R"~(Seconds a new connection has to send its first request's whole header, and a
request its header once begun (nginx's client_header_timeout);
also the longest wait between reads of a body. A partial header gets 408; a
connection that sends nothing is closed. 0 waits forever.)~"},
      {.names = "--idle-timeout", .value = "S", .bind = cli::Bind(c.idle_timeout), .show_default = true,
       .help = "seconds a kept-alive client connection may wait for its next request before it is closed (0: none)",
       .doc = R"~(Seconds a kept\-alive client connection may wait for its next request before
it is closed (nginx's keepalive_timeout; 0 waits forever).)~"},
  };
}

std::vector<cli::Flag> CallFlags(Args& a) {
  forge::proxy::ProxyConfig& c = a.config;
  return {
      {.names = "--require-token-ids", .bind = cli::Bind(c.require_token_ids),
       .help = "fail a call (502, recorded as failed) whose upstream answer carries no completion token ids, as an "
               "upstream that ignores return_token_ids sends; without it such calls are recorded, counted and "
               "warned of",
       .doc = R"~(Fail a call whose upstream answer carries no token ids (an upstream that
ignores \fBreturn_token_ids\fR): the client gets 502 saying so and the call
is recorded as failed. Without it such calls are recorded, counted in
\fBforge_proxy_calls_without_token_ids_total\fR and warned of once on stderr.)~"},
      {.names = "--upstream-retries", .value = "N", .bind = cli::Bind(c.upstream_retries), .show_default = true,
       .more = [](CLI::Option& f) { f.check(CLI::Range(0, 10)); },
       .help = "times a call is retried upstream, before the first byte of its answer, after a connection failure, "
               "a 502 or 503, or a 429 whose Retry-After is at most --retry-after-max (0: off; every attempt is "
               "recorded)",
       .doc = R"~(Retry a call upstream up to N times (0: off; at most 10) before the
first byte of its answer: after a refused or broken connection, a 502 or 503,
or a 429 whose Retry\-After is at most \fB\-\-retry\-after\-max\fR. The pause is
the upstream's Retry\-After (or retry\-after\-ms), else 0.25 s doubling up to
4 s. Every attempt is recorded; a failed one with its status and
"retried by the proxy, attempt K of N+1". A timeout is never retried (the
generation may be running).)~"},
      {.names = "--retry-after-max", .value = "S", .bind = cli::Bind(c.retry_after_max), .show_default = true,
       .help = "longest Retry-After, in seconds, a 429 is retried after with --upstream-retries",
       .doc = R"~(Longest Retry\-After a 429 is retried after with \fB\-\-upstream\-retries\fR;
a longer one goes to the client, which decides.)~"},
      {.names = "--upstream-idle-timeout", .value = "S", .bind = cli::Bind(c.upstream_idle_timeout),
       .show_default = true, .help = "seconds without a byte from the upstream before the call fails",
       .doc = R"~(Seconds without a byte from the upstream before the call fails:
504 before the answer started; after it, the client's connection breaks. Waits are checked every
quarter of S (at most every second), so a timeout ends within 1.25 S.)~"},
      {.names = "--keepalive", .value = "S", .bind = cli::Bind(c.keepalive_interval), .show_default = true,
       .help = "seconds before and between SSE keepalive comments while waiting (0: off)",
       .doc = R"~(While a streaming call waits for its first token, send SSE comment
keepalives every S seconds (0 turns them off). Gemini clients get none:
the google\-genai SDK's SSE reader drops every event after a comment.)~"},
      {.names = "--health-interval", .value = "S", .bind = cli::Bind(c.health_interval), .show_default = true,
       .help = "seconds between upstream health checks (0: off)",
       .doc = "Seconds between upstream health checks (0 turns them off)."},
      {.names = "--health-path", .value = "PATH", .bind = cli::Bind(c.health_path), .show_default = true,
       .help = "upstream health check path",
       .doc = "The upstream's health check path."},
      {.names = "--drain-timeout", .value = "S", .bind = cli::Bind(c.drain_timeout), .show_default = true,
       .help = "seconds SIGTERM waits for in-flight calls",
       .doc = "How long SIGTERM waits for calls in flight, in seconds."},
      {.names = "--max-per-rollout", .value = "N", .bind = cli::Bind(c.max_per_rollout), .show_default = true,
       .help = "concurrent calls per rollout (0: no cap)",
       .doc = "Concurrent calls per rollout; more get 429 (0: no cap)."},
      {.names = "--max-tokens-cap", .value = "N", .bind = cli::Bind(c.max_tokens_cap), .show_default = true,
       .help = "largest max_tokens sent upstream for translated formats (Anthropic, Responses, Gemini); 0: as asked",
       .doc = R"~(Largest max_tokens (or max_completion_tokens) sent upstream; a request asking
more is lowered to N (0: sent as asked). Claude Code asks for 128000
(32000 for a non\-Claude model name), which a policy server with a smaller
context refuses before generating (vLLM: max_tokens plus the prompt must fit
max_model_len). The recorded client request keeps what the harness asked.
It applies to the translated formats (Anthropic Messages, Responses, Gemini);
chat and completions requests go upstream as the client's own bytes and keep
their max_tokens.)~"},
      {.names = "--secret-cache", .value = "S", .bind = cli::Bind(c.secret_cache_ttl), .show_default = true,
       .help = "seconds a live rollout's secret stays cached (a rollout that ends is refused within this)",
       .doc = R"~(Seconds a live rollout's secret stays cached; a rollout that
ends is refused within this.)~"},
  };
}

std::vector<cli::Flag> StoreCommandFlags(Args& a) {
  return {
      {.names = "--dump-rollout", .value = "ID", .bind = cli::Bind(a.dump_rollout),
       .help = "print the calls recorded for this rollout as JSONL and exit",
       .doc = "Print the calls recorded for rollout ID as JSON Lines and exit."},
      {.names = "--export", .bind = cli::Bind(a.export_calls),
       .help = "print every call recorded in the store as JSONL (a recorded-exchange file for --replay) and exit",
       .doc = R"~(Print every call recorded in the store as JSON Lines (rollouts in the order
their first call was recorded, calls by sequence number) and exit: a
recorded\-exchange file for \fB\-\-replay\fR.)~"},
      {.names = "--check-call-log", .bind = cli::Bind(a.check_call_log),
       .help = "check every record of the call logs beside the store (one JSON line per log; exit 65 if one fails) "
               "without moving them into it, and exit",
       .doc = R"~(Check every record of the call logs beside the store (a running proxy's, or
one a crash left) without moving anything into the store, print one JSON line
per log (\fBcalls\fR, \fBrequest_records\fR, \fBbad_records\fR: the byte
offsets of records whose checksum or encoding fails, or calls whose request
record or prompt base is not there whole, \fBend\fR,
\fBcut_short\fR: a last record cut short by a crash, which is expected and
dropped) and exit: 0, or 65 when a record fails (recovery would stop there).)~"},
  };
}

}  // namespace

cli::FlagTable DefineFlags(CLI::App& app, Args& a, const Env&) {
  cli::FlagTable table;
  table.Add(app, "options", UpstreamFlags(a));
  table.Add(app, "options", ServingFlags(a));
  table.Add(app, "options", CallFlags(a));
  table.Add(app, "options", StoreCommandFlags(a));
  return table;
}

}  // namespace forge::tools::proxy
