#include <doctest/doctest.h>

#include <random>
#include <string>

#include "base/json_dump.h"
#include "support/random_json.h"

using Json = nlohmann::json;

using forge::testing::RandomValue;

namespace {

std::string NlohmannDump(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace

TEST_CASE("DumpJson writes the bytes nlohmann's dump writes, for every kind of value and string") {
  std::mt19937 rng(20261201);
  int with_broken_utf8 = 0;
  for (int n = 0; n < 3000; ++n) {
    Json doc = RandomValue(rng, 0);
    std::string expected = NlohmannDump(doc);
    CAPTURE(expected);
    CHECK(forge::DumpJson(doc) == expected);
    with_broken_utf8 += expected.find("\xEF\xBF\xBD") != std::string::npos;
  }
  CHECK(with_broken_utf8 > 100);  // the replacement path ran
  // Numbers and literals as nlohmann formats them.
  for (const Json& v : {Json(0.1), Json(-0.0), Json(1e300), Json(5e-324), Json(UINT64_MAX), Json(INT64_MIN), Json(true),
                        Json(nullptr), Json::object(), Json::array()}) {
    CHECK(forge::DumpJson(v) == NlohmannDump(v));
  }
}

TEST_CASE("DumpJson on a long conversation: plain runs across the sixteen-byte steps, escapes at their edges") {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += (i % 97 == 0) ? "\"quoted\"\n" : (i % 89 == 0 ? "\xE2\x82\xAC" : "word ");
  Json request = {{"model", "m"}, {"system", text}, {"messages", {{{"role", "user"}, {"content", text + "\t!"}}}}};
  CHECK(forge::DumpJson(request) == NlohmannDump(request));
  for (size_t cut = 0; cut < 40; ++cut) {  // every alignment of an escape against the block edge
    Json s = std::string(cut, 'y') + "\\" + std::string(40, 'z') + "\x01";
    CHECK(forge::DumpJson(s) == NlohmannDump(s));
  }
}
