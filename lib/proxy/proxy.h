// forge-proxy's entry point: the settings a command line gives, and the
// server run that serves and records model calls until SIGINT/SIGTERM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"

namespace forge::proxy {

struct ProxyConfig {
  Env* env = nullptr;                     // required: reports, the stop, the environment
  std::string listen_host = "127.0.0.1";
  uint16_t port = 8000;
  std::string store_path;                 // where calls are recorded
  std::vector<std::string> upstreams;     // http://host:port[/base], OpenAI-compatible
  std::string upstream_ca_file;           // PEM CAs trusted for https upstreams, besides the system's
  std::string upstream_api = "openai";    // "anthropic": Messages pass through to an Anthropic-format API
  std::string upstream_key_env;           // env var holding a key only the proxy sends upstream
  bool open = false;                      // no secret needed; calls go to rollout "anonymous"
  std::string admin_token;                // empty: admin API from loopback only
  std::string replay_path;                // serve recorded responses from this store or recorded-exchange file
  int threads = 2;
  uint64_t body_limit = 64ull << 20;      // client request body, bytes
  int max_json_depth = 512;               // nesting a request body may have (kDefaultMaxJsonDepth)
  double upstream_idle_timeout = 900;     // seconds without a byte from the upstream
  double header_timeout = 60;             // seconds for a request's header, and between reads of its body
  double idle_timeout = 75;               // seconds a kept-alive connection may wait for its next request
  bool require_token_ids = false;         // a 200 without completion token ids fails the call (502)
  int upstream_retries = 0;               // attempts repeated upstream before the answer's first byte
  double retry_after_max = 10;            // longest Retry-After (seconds) a 429 is retried after
  double keepalive_interval = 3;          // seconds before/between SSE keepalive comments
  double health_interval = 5;             // seconds between upstream health checks
  std::string health_path = "/health";
  double drain_timeout = 120;             // seconds SIGTERM waits for in-flight calls
  int max_per_rollout = 0;                // concurrent calls per rollout; 0 = no cap
  int64_t max_tokens_cap = 0;             // largest max_tokens sent upstream; 0 = as asked
  double secret_cache_ttl = 5;            // seconds a positive secret lookup is cached
};

// What the upstreams speak (--upstream-api, upstream_api_asio.h).
enum class UpstreamApiKind { kOpenAI, kAnthropic };
// --upstream-api's word for it: "openai" or "anthropic".
Result<UpstreamApiKind> ParseUpstreamApi(const std::string& name);

// Runs until a stop signal; drains in-flight calls before returning.
Status RunProxy(const ProxyConfig& config);

}  // namespace forge::proxy
