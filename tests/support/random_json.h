// Random JSON documents for differential tests against nlohmann::json: the
// values and strings that matter to a writer or a reader of JSON text.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace forge::testing {

// Strings made of the pieces that matter to an escaper: plain runs long and
// short, quotes, backslashes, every control byte, DEL, well-formed UTF-8 of
// each length, and broken sequences (a stray continuation, an overlong form,
// a surrogate, a lead byte cut short, bytes that never start a sequence).
inline std::string RandomString(std::mt19937& rng) {
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

inline nlohmann::json RandomValue(std::mt19937& rng, int depth) {
  switch (rng() % (depth > 3 ? 6 : 8)) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: return static_cast<int64_t>(rng()) - (1ll << 31);
    case 3: return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
    case 4: return static_cast<uint64_t>(rng()) << 32 | rng();
    case 5: return RandomString(rng);
    case 6: {
      nlohmann::json object = nlohmann::json::object();
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) object[RandomString(rng)] = RandomValue(rng, depth + 1);
      return object;
    }
    default: {
      nlohmann::json array = nlohmann::json::array();
      for (int k = static_cast<int>(rng() % 5); k > 0; --k) array.push_back(RandomValue(rng, depth + 1));
      return array;
    }
  }
}

}  // namespace forge::testing
