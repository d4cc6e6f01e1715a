// OpenAI's error shape, {"error": {"message", "type", "param", "code"}},
// which both OpenAI formats (and the proxy's own endpoints) answer with.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace forge::proxy {

inline nlohmann::json OpenAIErrorBody(int http_status, const std::string& message) {
  const char* type = "api_error";
  const char* code = nullptr;
  switch (http_status) {
    case 400: type = "invalid_request_error"; break;
    case 401: type = "invalid_request_error"; code = "invalid_api_key"; break;
    case 404: type = "invalid_request_error"; code = "not_found"; break;
    case 413: type = "invalid_request_error"; code = "request_too_large"; break;
    case 429: type = "rate_limit_error"; code = "rate_limit_exceeded"; break;
    case 504: type = "timeout_error"; break;
    default: break;
  }
  nlohmann::json error = {{"message", message}, {"type", type}, {"param", nullptr}};
  error["code"] = code ? nlohmann::json(code) : nlohmann::json(nullptr);
  return {{"error", std::move(error)}};
}

}  // namespace forge::proxy
