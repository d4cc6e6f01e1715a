// The stages of a model call that compute without a socket (call_handler_asio.h):
// attribute's key, decode, admission, and how an Outcome says what the
// client gets.
#include <doctest/doctest.h>

#include <string>

#include "proxy/admission.h"
#include "proxy/attribute.h"
#include "proxy/decode.h"
#include "proxy/format_registry.h"
#include "proxy/outcome.h"

// A namespace of its own, so that its using-directive reaches no other file of
// a unity build.
namespace proxy_stages_test {
using namespace forge::proxy;

TEST_CASE("attribute: the key is the bearer token, else x-api-key, else x-goog-api-key") {
  CHECK(SecretOf("Bearer s1", "s2", "s3") == "s1");
  CHECK(SecretOf("Bearer ", "s2", "s3") == "s2");
  CHECK(SecretOf("Basic abc", "", "s3") == "s3");
  CHECK(SecretOf("", "", "").empty());
}

TEST_CASE("decode: the upstream's own format read as bytes, any other translated") {
  const Route& chat = *FindRoute("POST", "/v1/chat/completions");
  const std::string body = R"({"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]})";
  const DecodeLimits limits{512, 0};
  DecodedCall bytes(chat, "/v1/chat/completions");
  CHECK_FALSE(Decode(body, true, limits, bytes));
  REQUIRE(bytes.raw);
  CHECK(bytes.chat.stream);
  CHECK(bytes.raw->model == "m");
  CHECK(bytes.client_request.is_null());  // no document made

  DecodedCall parsed(chat, "/v1/chat/completions");  // as replay reads it
  CHECK_FALSE(Decode(body, false, limits, parsed));
  CHECK_FALSE(parsed.raw);
  CHECK(parsed.client_request["model"] == "m");
  CHECK(parsed.chat.stream);

  DecodedCall bad(chat, "/v1/chat/completions");
  auto refused = Decode(R"({"messages":"x"})", true, limits, bad);
  REQUIRE(refused);
  CHECK(refused->status == 400);

  const Route& gemini = *FindRoute("POST", "/v1beta/models/*");
  DecodedCall nowhere(gemini, "/v1beta/models/no-method");
  refused = Decode(R"({"contents":[]})", false, limits, nowhere);
  REQUIRE(refused);
  CHECK(refused->status == 404);
}

TEST_CASE("admission: --max-per-rollout counts a rollout's calls in flight; a pause refuses or waits") {
  Metrics metrics;
  Admission admission(metrics, 1, 7);
  CHECK(admission.policy_version() == 7);
  CHECK_FALSE(admission.Admit("r1"));
  {
    Admission::InFlight one(admission, "r1");
    CHECK(metrics.in_flight.load() == 1);
    auto refused = admission.Admit("r1");
    REQUIRE(refused);
    CHECK(refused->status == 429);
    CHECK_FALSE(admission.Admit("r2"));
  }
  CHECK(metrics.in_flight.load() == 0);
  CHECK_FALSE(admission.Admit("r1"));

  admission.Pause(false);  // calls wait: admitted, for the caller to wait out
  CHECK(admission.paused());
  CHECK_FALSE(admission.Admit("r1"));
  admission.Pause(true);
  auto refused = admission.Admit("r1");
  REQUIRE(refused);
  CHECK(refused->status == 429);
  bool marked = false;
  for (const auto& [name, value] : refused->headers) marked = marked || name == "X-Forge-Paused";
  CHECK(marked);
  admission.Resume();
  CHECK_FALSE(admission.Admit("r1"));
}

TEST_CASE("outcome: a failed call tells the client, unless the client has gone") {
  CHECK(Outcome::Failed(502, "upstream gone").reply == Outcome::Reply::kError);
  CHECK(Outcome::Failed(kClientHungUpStatus, kClientHungUpMessage).reply == Outcome::Reply::kNothing);
  Outcome whole = Outcome::Whole(200, "{}");
  CHECK(whole.error.empty());
  CHECK(whole.reply == Outcome::Reply::kWhole);
}

}  // namespace proxy_stages_test
