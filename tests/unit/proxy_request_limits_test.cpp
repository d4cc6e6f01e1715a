// CapMaxTokens: what a harness asks for (Claude Code: 128000) lowered to what
// the policy server can give, before the request goes upstream.
#include <doctest/doctest.h>

#include "proxy/request_limits.h"
#include "proxy/upstream_answer_asio.h"
#include "proxy/upstream_faults.h"

using forge::proxy::CapMaxTokens;
using forge::proxy::Json;

TEST_CASE("CapMaxTokens lowers max_tokens and max_completion_tokens above the cap only") {
  Json claude = {{"model", "m"}, {"max_tokens", 128000}, {"messages", Json::array()}};
  CHECK(CapMaxTokens(claude, 4096));
  CHECK(claude["max_tokens"] == 4096);
  CHECK(claude["model"] == "m");

  Json small = {{"max_tokens", 1}};  // an Anthropic count_tokens probe stays one token
  CHECK_FALSE(CapMaxTokens(small, 4096));
  CHECK(small["max_tokens"] == 1);

  Json openai = {{"max_completion_tokens", 32768}, {"max_tokens", 100}};
  CHECK(CapMaxTokens(openai, 8192));
  CHECK(openai["max_completion_tokens"] == 8192);
  CHECK(openai["max_tokens"] == 100);

  Json none = {{"messages", Json::array()}};  // the server's default already fits
  CHECK_FALSE(CapMaxTokens(none, 4096));
  CHECK_FALSE(none.contains("max_tokens"));

  Json off = {{"max_tokens", 128000}};
  CHECK_FALSE(CapMaxTokens(off, 0));
  CHECK(off["max_tokens"] == 128000);

  Json null_field = {{"max_tokens", nullptr}};
  CHECK_FALSE(CapMaxTokens(null_field, 10));
  CHECK(null_field["max_tokens"].is_null());
}

TEST_CASE("upstream faults: the retry headers a client gets, and which answers the proxy retries") {
  using namespace forge::proxy;
  http::fields f;
  f.set("Retry-After", "1");
  f.set("retry-after-ms", "1500");
  f.set("x-ratelimit-remaining-requests", "0");
  f.set("anthropic-ratelimit-tokens-reset", "2026-01-01T00:00:00Z");
  f.set("x-internal", "secret");
  f.set("Content-Type", "application/json");
  Headers h = RetryHeaders(f);
  REQUIRE(h.size() == 4);
  CHECK(h[0] == std::pair<std::string, std::string>("Retry-After", "1"));
  for (const auto& [name, value] : h) CHECK((name != "x-internal" && name != "Content-Type"));
  CHECK(RetryAfterSeconds(h) == doctest::Approx(1.5));  // retry-after-ms first
  f.erase("retry-after-ms");
  h = RetryHeaders(f);
  CHECK(RetryAfterSeconds(h) == doctest::Approx(1.0));
  CHECK(RetryAfterSeconds({{"RETRY-AFTER", "2"}}) == doctest::Approx(2.0));  // names in any case
  CHECK(RetryableStatus(429, h, 1.0));
  CHECK_FALSE(RetryableStatus(429, h, 0.5));  // asks to wait longer than allowed
  CHECK(RetryableStatus(503, h, 0));
  CHECK(RetryableStatus(502, Headers(), 0));
  CHECK_FALSE(RetryableStatus(500, h, 10));
  CHECK_FALSE(RetryableStatus(429, Headers(), 10));  // no Retry-After: the client decides
  CHECK(RetryDelay(1, h) == doctest::Approx(1.0));    // the upstream's Retry-After
  f.set("Retry-After", "Wed, 21 Oct 2026 07:28:00 GMT");
  h = RetryHeaders(f);
  CHECK_FALSE(RetryAfterSeconds(h).has_value());
  CHECK(RetryDelay(1, Headers()) == doctest::Approx(0.25));
  CHECK(RetryDelay(2, h) == doctest::Approx(0.5));  // a date: unknown, so the proxy's own pause
  CHECK(RetryDelay(9, Headers()) == doctest::Approx(4.0));
  CHECK(WithoutAddresses("upstream http://10.0.0.5:8000/v1 broke off the stream; http://10.0.0.5:8000/v1 again",
                         {"http://10.0.0.5:8000/v1"}) == "the upstream broke off the stream; the upstream again");
}
