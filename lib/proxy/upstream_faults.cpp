#include "proxy/upstream_faults.h"

#include <algorithm>
#include <cstdlib>
#include <strings.h>

namespace forge::proxy {
namespace {

bool FieldNameIs(std::string_view s, std::string_view other) {
  return s.size() == other.size() && strncasecmp(s.data(), other.data(), s.size()) == 0;
}

bool FieldNameStarts(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && FieldNameIs(s.substr(0, prefix.size()), prefix);
}

const std::string* FieldValue(const Headers& headers, std::string_view name) {
  for (const auto& [field, value] : headers) {
    if (FieldNameIs(field, name)) return &value;
  }
  return nullptr;
}

std::optional<double> Seconds(const std::string& s) {
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

bool IsRetryHeader(std::string_view name) {
  return FieldNameIs(name, "retry-after") || FieldNameIs(name, "retry-after-ms") ||
         FieldNameStarts(name, "x-ratelimit-") || FieldNameStarts(name, "anthropic-ratelimit-");
}

std::optional<double> RetryAfterSeconds(const Headers& retry_headers) {
  if (const std::string* ms = FieldValue(retry_headers, "retry-after-ms")) {
    if (auto v = Seconds(*ms)) return *v / 1000;
  }
  if (const std::string* s = FieldValue(retry_headers, "retry-after")) return Seconds(*s);
  return std::nullopt;
}

bool RetryableStatus(int status, const Headers& retry_headers, double max_wait) {
  if (status == 502 || status == 503) return true;
  if (status != 429) return false;
  auto wait = RetryAfterSeconds(retry_headers);
  return wait && *wait <= max_wait;
}

double RetryDelay(int attempt, const Headers& retry_headers) {
  if (auto wait = RetryAfterSeconds(retry_headers)) return *wait;
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
