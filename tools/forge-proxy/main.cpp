// forge-proxy: serve and record every model call a harness makes.
#include "base/json_scan.h"
#include "cli/tool.h"
#include "proxy/dump.h"
#include "proxy/proxy.h"

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-proxy", "Serve and record every model call a harness makes.");
  forge::proxy::ProxyConfig c;
  c.env = &tool.env();
  CLI::App& app = tool.app();
  app.add_option("--store", c.store_path, "SQLite store the calls are recorded in")->required();
  app.add_option("--upstream", c.upstreams,
                 "OpenAI-compatible upstream URL (repeatable), http://host:port[/base] or https://... (TLS, "
                 "certificate checked)");
  app.add_option("--upstream-ca", c.upstream_ca_file,
                 "PEM file of CA certificates trusted for https upstreams, besides the system's");
  app.add_option("--upstream-api", c.upstream_api,
                 "what the upstreams speak: openai (chat completions; every client format is translated to it) or "
                 "anthropic (a Messages API such as a teacher model: /v1/messages passes through untranslated with "
                 "anthropic-version/anthropic-beta, the key goes as x-api-key, no token ids)")
      ->capture_default_str();
  app.add_option("--upstream-key-env", c.upstream_key_env,
                 "environment variable with an API key sent only upstream (never recorded): as a bearer token, or "
                 "x-api-key for --upstream-api anthropic");
  app.add_option("--listen", c.listen_host, "address to listen on")->capture_default_str();
  app.add_option("--port", c.port, "port to listen on")->capture_default_str();
  app.add_flag("--open", c.open, "serve calls without a rollout secret (rollout \"anonymous\")");
  app.add_option("--admin-token", c.admin_token, "bearer token for /admin/* (default: loopback only)");
  app.add_option("--replay", c.replay_path,
                 "serve recorded responses instead of an upstream, from a store or a recorded-exchange file "
                 "(JSONL, as --export writes)");
  app.add_option("--threads", c.threads, "io threads")->capture_default_str();
  app.add_option("--body-limit", c.body_limit, "largest client request body, bytes")->capture_default_str();
  app.add_option("--max-json-depth", c.max_json_depth,
                 "deepest nesting of objects and arrays a request body may have (answered 400 beyond it)")
      ->capture_default_str()
      ->check(CLI::Range(1, forge::kMaxJsonDepthCeiling));
  app.add_option("--header-timeout", c.header_timeout,
                 "seconds a client has to send a request's header (408 after), and between reads of its body (0: none)")
      ->capture_default_str();
  app.add_option("--idle-timeout", c.idle_timeout,
                 "seconds a kept-alive client connection may wait for its next request before it is closed (0: none)")
      ->capture_default_str();
  app.add_flag("--require-token-ids", c.require_token_ids,
               "fail a call (502, recorded as failed) whose upstream answer carries no completion token ids, as an "
               "upstream that ignores return_token_ids sends; without it such calls are recorded, counted and warned of");
  app.add_option("--upstream-retries", c.upstream_retries,
                 "times a call is retried upstream, before the first byte of its answer, after a connection failure, "
                 "a 502 or 503, or a 429 whose Retry-After is at most --retry-after-max (0: off; every attempt is "
                 "recorded)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10));
  app.add_option("--retry-after-max", c.retry_after_max,
                 "longest Retry-After, in seconds, a 429 is retried after with --upstream-retries")
      ->capture_default_str();
  app.add_option("--upstream-idle-timeout", c.upstream_idle_timeout,
                 "seconds without a byte from the upstream before the call fails")->capture_default_str();
  app.add_option("--keepalive", c.keepalive_interval,
                 "seconds before and between SSE keepalive comments while waiting (0: off)")->capture_default_str();
  app.add_option("--health-interval", c.health_interval, "seconds between upstream health checks (0: off)")
      ->capture_default_str();
  app.add_option("--health-path", c.health_path, "upstream health check path")->capture_default_str();
  app.add_option("--drain-timeout", c.drain_timeout, "seconds SIGTERM waits for in-flight calls")
      ->capture_default_str();
  app.add_option("--max-per-rollout", c.max_per_rollout, "concurrent calls per rollout (0: no cap)")
      ->capture_default_str();
  app.add_option("--max-tokens-cap", c.max_tokens_cap,
                 "largest max_tokens sent upstream for translated formats (Anthropic, Responses, Gemini); 0: as asked")
      ->capture_default_str();
  app.add_option("--secret-cache", c.secret_cache_ttl, "seconds a live rollout's secret stays cached (a rollout that ends is refused within this)")
      ->capture_default_str();
  std::string dump_rollout;
  app.add_option("--dump-rollout", dump_rollout, "print the calls recorded for this rollout as JSONL and exit");
  bool export_calls = false;
  app.add_flag("--export", export_calls,
               "print every call recorded in the store as JSONL (a recorded-exchange file for --replay) and exit");
  bool check_call_log = false;
  app.add_flag("--check-call-log", check_call_log,
               "check every record of the call logs beside the store (one JSON line per log; exit 65 if one fails) "
               "without moving them into it, and exit");
  return tool.Run(argc, argv, [&] {
    if (check_call_log) return forge::proxy::CheckCallLogs(c.store_path);
    if (!dump_rollout.empty()) return forge::proxy::DumpRolloutCalls(c.store_path, dump_rollout);
    if (export_calls) return forge::proxy::ExportCalls(c.store_path);
    return forge::proxy::RunProxy(c);
  });
}
