// CapMaxTokens: what a harness asks for (Claude Code: 128000) lowered to what
// the policy server can give, before the request goes upstream.
#include <doctest/doctest.h>

#include "proxy/request_limits.h"

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
