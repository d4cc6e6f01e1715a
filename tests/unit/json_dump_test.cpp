#include <doctest/doctest.h>

#include <random>
#include <string>

#include "base/json_dump.h"

using Json = nlohmann::json;

namespace {

std::string NlohmannDump(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Strings made of the pieces that matter to an escaper: plain runs long and
// short, quotes, backslashes, every control byte, DEL, well-formed UTF-8 of
// each length, and broken sequences (a stray continuation, an overlong form,
// a surrogate, a lead byte cut short, bytes that never start a sequence).
std::string RandomString(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
      "a", "plain text ", std::string(40, 'x'), "\"", "\\", "/", "\x7f", "\xC3\xA9", "\xE4\xB8\xAD",
      "\xF0\x9F\x98\x80", "\xEF\xBF\xBD", "\x80", "\xC0\xAF", "\xED\xA0\x80", "\xE4\xB8", "\xF5\x80\x80\x80", "\xFF"};
  std::string s;
  int parts = static_cast<int>(rng() % 12);
  for (int k = 0; k < parts; ++k) {
    if (rng() % 5 == 0) {
      s += static_cast<char>(rng() % 32);  // a control byte
    } else {
      s += pieces[rng() % pieces.size()];
    }
  }
  return s;
}

Json RandomValue(std::mt19937& rng, int depth) {
  switch (rng() % (depth > 3 ? 6 : 8)) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: return static_cast<int64_t>(rng()) - (1ll << 31);
    case 3: return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
    case 4: return static_cast<uint64_t>(rng()) << 32 | rng();
    case 5: return RandomString(rng);
    case 6: {
      Json object = Json::object();
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) object[RandomString(rng)] = RandomValue(rng, depth + 1);
      return object;
    }
    default: {
      Json array = Json::array();
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) array.push_back(RandomValue(rng, depth + 1));
      return array;
    }
  }
}

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
