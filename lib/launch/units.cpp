#include "launch/units.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace forge::launch {
namespace {

Result<std::pair<double, std::string>> Split(const std::string& text, const char* what) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value < 0) {
    return Status::InvalidArgument("bad " + std::string(what) + " '" + text + "'");
  }
  std::string unit;
  for (const char* p = end; *p; ++p) unit.push_back(static_cast<char>(std::tolower(*p)));
  return std::make_pair(value, unit);
}

}  // namespace

Result<int64_t> ParseBytes(const std::string& text) {
  auto parts = Split(text, "size");
  if (!parts.ok()) return parts.status();
  auto [value, unit] = *parts;
  if (unit.ends_with("ib")) unit.resize(unit.size() - 2);
  else if (unit.size() > 1 && unit.ends_with("b")) unit.pop_back();
  double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k") scale = 1024.0;
  else if (unit == "m") scale = 1024.0 * 1024;
  else if (unit == "g") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t") scale = 1024.0 * 1024 * 1024 * 1024;
  else return Status::InvalidArgument("bad size '" + text + "' (units: k, m, g, t)");
  return static_cast<int64_t>(std::llround(value * scale));
}

Result<double> ParseDuration(const std::string& text) {
  auto parts = Split(text, "duration");
  if (!parts.ok()) return parts.status();
  auto [value, unit] = *parts;
  if (unit.empty() || unit == "s") return value;
  if (unit == "m") return value * 60;
  if (unit == "h") return value * 3600;
  if (unit == "d") return value * 86400;
  return Status::InvalidArgument("bad duration '" + text + "' (units: s, m, h, d)");
}

}  // namespace forge::launch
