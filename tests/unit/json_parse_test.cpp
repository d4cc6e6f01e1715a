// ParseJson against nlohmann::json::parse: the same document, value for
// value and type for type, from the same text; refused where nlohmann
// refuses.
#include <doctest/doctest.h>

#include <functional>
#include <random>
#include <string>

#include "base/json_field.h"
#include "base/json_parse.h"
#include "support/random_json.h"

using Json = nlohmann::json;
using forge::ParseJson;

namespace {

// Equal values and equal types all the way down (nlohmann's == calls 5 and
// 5u equal; a translator asking is_number_unsigned() would not).
bool Same(const Json& a, const Json& b) {
  if (a.type() != b.type()) return false;
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
      if (ia.key() != ib.key() || !Same(*ia, *ib)) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k) {
      if (!Same(a[k], b[k])) return false;
    }
    return true;
  }
  if (a.is_number_float()) {  // bit for bit (NaN cannot occur in JSON)
    return std::signbit(a.get<double>()) == std::signbit(b.get<double>()) && a.get<double>() == b.get<double>();
  }
  return a == b;
}

void ExpectSameAsNlohmann(const std::string& text) {
  CAPTURE(text);
  std::string error;
  auto ours = ParseJson(text, &error);
  Json theirs = Json::parse(text, nullptr, false);
  REQUIRE_MESSAGE(ours.has_value(), error);
  REQUIRE_FALSE(theirs.is_discarded());
  CHECK(Same(*ours, theirs));
}

}  // namespace

TEST_CASE("ParseJson builds nlohmann's document from random texts, compact and indented") {
  std::mt19937 rng(12012026);
  for (int n = 0; n < 2000; ++n) {
    Json doc = forge::testing::RandomValue(rng, 0);
    // (replace: the generator's broken UTF-8 becomes U+FFFD, so the text is JSON)
    std::string compact = doc.dump(-1, ' ', false, Json::error_handler_t::replace);
    ExpectSameAsNlohmann(compact);
    if (n % 4 == 0) ExpectSameAsNlohmann(doc.dump(2, ' ', n % 8 == 0, Json::error_handler_t::replace));
  }
}

TEST_CASE("ParseJson reads numbers, escapes, duplicates and edges as nlohmann does") {
  const std::vector<std::string> texts = {
      // Integers: unsigned without a sign, signed with one, double past 64 bits.
      "0", "-0", "7", "-7", "18446744073709551615", "18446744073709551616", "9223372036854775807",
      "-9223372036854775808", "-9223372036854775809", "123456789012345678901234567890",
      // Fractions and exponents are doubles, however integral.
      "1.0", "-0.0", "1e2", "1E+2", "1e-2", "0.1", "2.5e-324", "1e-400", "-1e-400", "1.7976931348623157e308",
      "[1, -1, 1.5, 1e5, 0]",
      // Strings: escapes of every kind, surrogate pairs, raw UTF-8, NUL.
      R"("plain")", R"("a\"b\\c\/d\be\ff\ng\rh\ti")", R"("\u00e9\u4e2d\ud83d\ude00")", "\"\xC3\xA9\xF0\x9F\x98\x80\"",
      R"("\u0000x")", R"({"k\u0065y": "v"})",
      // Duplicate keys: the last value stays.
      R"({"a": 1, "b": 2, "a": [3]})", R"({"a": {"x": 1}, "a": {"y": 2}})",
      // Space everywhere, a byte-order mark, text after a NUL.
      " \n\t{ \"a\" : [ 1 , { } , [ ] , \"\" ] }\r\n", "\xEF\xBB\xBF{\"a\":1}", std::string("{\"a\":1}\0trailing", 16),
      // Nesting: empty containers and deep ones.
      "{}", "[]", "[[[]]]", std::string(5000, '[') + std::string(5000, ']'),
      // A conversation as a harness sends one, with a long message.
      R"({"model":"m","max_tokens":100,"messages":[{"role":"user","content":")" + std::string(100000, 'x') +
          R"("},{"role":"assistant","content":[{"type":"text","text":"ok\n"}]}],"stream":true})",
  };
  for (const std::string& text : texts) ExpectSameAsNlohmann(text);
}

TEST_CASE("ParseJson refuses what nlohmann refuses, saying where") {
  for (std::string text : {"", "{", "[1,]", "{\"a\" 1}", "01", "1e400", "\"\\ud800\"", "\"\xC0\xAF\"", "[1]x", "nul"}) {
    CAPTURE(text);
    std::string error;
    CHECK_FALSE(ParseJson(text, &error).has_value());
    CHECK_FALSE(Json::accept(text));
    CHECK(error.find("at byte") != std::string::npos);
  }
}

TEST_CASE("json_field: mistyped fields read as absent, never thrown on") {
  Json o = Json::parse(R"({"i":7,"u":18446744073709551615,"f":2.9,"big":1e300,"s":"7","b":true,
                          "nb":"true","idx":-1,"n":null})");
  CHECK(forge::JsonInt(o, "i", -1) == 7);
  CHECK(forge::JsonInt(o, "u", -1) == -1);  // beyond int64
  CHECK(forge::JsonInt(o, "f", -1) == 2);
  CHECK(forge::JsonInt(o, "big", -1) == -1);
  CHECK(forge::JsonInt(o, "s", -1) == -1);
  CHECK(forge::JsonInt(o, "n", -1) == -1);
  CHECK(forge::JsonInt(Json::array({1}), "i", -1) == -1);
  CHECK(forge::JsonTrue(o, "b"));
  CHECK_FALSE(forge::JsonTrue(o, "nb"));
  CHECK_FALSE(forge::JsonTrue(Json("b"), "b"));
  CHECK(forge::JsonText(o, "s") == "7");
  CHECK(forge::JsonText(o, "i", "none") == "none");
  CHECK(forge::JsonText(Json(3), "s", "none") == "none");
  CHECK_FALSE(forge::JsonIndex(o, "idx").has_value());
  CHECK(forge::JsonIndex(o, "absent") == size_t{0});
}
