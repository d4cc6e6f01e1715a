#include "proxy/upstream_faults.h"

#include <algorithm>
#include <cstdlib>

#include "proxy/asio.h"

namespace forge::proxy {
namespace {

bool StartsWithNoCase(beast::string_view s, beast::string_view prefix) {
  return s.size() >= prefix.size() && beast::iequals(s.substr(0, prefix.size()), prefix);
}

std::optional<double> Seconds(beast::string_view text) {
  std::string s(text.data(), text.size());
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || *end != '\0' || !(v >= 0)) return std::nullopt;
  return v;
}

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

}  // namespace

Headers RetryHeaders(const http::fields& upstream) {
  Headers out;
  for (const auto& field : upstream) {
    beast::string_view name = field.name_string();
    if (beast::iequals(name, "retry-after") || beast::iequals(name, "retry-after-ms") ||
        StartsWithNoCase(name, "x-ratelimit-") || StartsWithNoCase(name, "anthropic-ratelimit-")) {
      beast::string_view value = field.value();
      out.emplace_back(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
    }
  }
  return out;
}

std::optional<double> RetryAfterSeconds(const http::fields& upstream) {
  if (auto ms = upstream.find("retry-after-ms"); ms != upstream.end()) {
    if (auto v = Seconds(ms->value())) return *v / 1000;
  }
  if (auto s = upstream.find(http::field::retry_after); s != upstream.end()) return Seconds(s->value());
  return std::nullopt;
}

bool RetryableStatus(int status, const http::fields& upstream, double max_wait) {
  if (status == 502 || status == 503) return true;
  if (status != 429) return false;
  auto wait = RetryAfterSeconds(upstream);
  return wait && *wait <= max_wait;
}

double RetryDelay(int attempt, const http::fields* upstream) {
  if (upstream) {
    if (auto wait = RetryAfterSeconds(*upstream)) return *wait;
  }
  return std::min(4.0, 0.25 * static_cast<double>(1 << std::min(attempt - 1, 8)));
}

std::string WithoutAddresses(std::string message, const std::vector<std::string>& urls) {
  for (const std::string& url : urls) {
    ReplaceAll(message, "upstream " + url, "the upstream");
    ReplaceAll(message, url, "the upstream");
  }
  return message;
}

}  // namespace forge::proxy
