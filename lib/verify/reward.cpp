#include "verify/reward.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "records/jsonl.h"

namespace forge::verify {
namespace {

std::string Shown(std::string_view text) {
  std::string s(text.substr(0, 60));
  for (char& ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  }
  return "\"" + s + (text.size() > 60 ? "...\"" : "\"");
}

}  // namespace

Result<Reward> ParseRewardTxt(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  size_t end = text.find_last_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return Status::InvalidData("reward.txt: empty");
  std::string number(text.substr(begin, end - begin + 1));
  errno = 0;
  char* stop = nullptr;
  double value = std::strtod(number.c_str(), &stop);
  if (stop == number.c_str() || *stop != '\0' || errno == ERANGE || !std::isfinite(value)) {
    return Status::InvalidData("reward.txt: expected one number, got " + Shown(text));
  }
  return Reward{value, {}};
}

Result<Reward> ParseRewardJson(std::string_view text) {
  records::Json j = records::Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidData("reward.json: not JSON: " + Shown(text));
  if (!j.is_object()) return Status::InvalidData("reward.json: expected an object of named numbers");
  if (j.empty()) return Status::InvalidData("reward.json: empty object");
  Reward reward;
  double sum = 0;
  for (const auto& [name, value] : j.items()) {
    if (!value.is_number() || !std::isfinite(value.get<double>())) {
      return Status::InvalidData("reward.json: \"" + name + "\": expected a number, got " +
                             std::string(value.type_name()));
    }
    reward.named[name] = value.get<double>();
    sum += value.get<double>();
  }
  auto primary = reward.named.find("reward");
  reward.value = primary != reward.named.end() ? primary->second : sum / reward.named.size();
  return reward;
}

}  // namespace forge::verify
