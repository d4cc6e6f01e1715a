#include "proxy/format_registry.h"

#include <functional>

#include "proxy/formats/formats.h"
#include "proxy/formats/gemini.h"
#include "proxy/formats/openai_errors.h"

namespace forge::proxy {
namespace {

// Client paths. OpenAI completions is the one format that is not translated
// to chat: it goes to the upstream's own /v1/completions.
constexpr Route kRoutes[] = {
    {"POST", "/v1/chat/completions", FormatId::kOpenAIChat, "/v1/chat/completions"},
    {"POST", "/chat/completions", FormatId::kOpenAIChat, "/v1/chat/completions"},
    {"POST", "/v1/completions", FormatId::kOpenAICompletions, "/v1/completions"},
    {"POST", "/completions", FormatId::kOpenAICompletions, "/v1/completions"},
    {"POST", "/v1/messages/count_tokens", FormatId::kAnthropicCountTokens, "/v1/chat/completions"},
    {"POST", "/v1/messages", FormatId::kAnthropic, "/v1/chat/completions"},
    {"POST", "/v1/responses", FormatId::kResponses, "/v1/chat/completions"},
    {"POST", "/responses", FormatId::kResponses, "/v1/chat/completions"},
    // models/{model}:{generateContent|streamGenerateContent|countTokens}; the
    // URL's method picks gemini-count-tokens (GeminiFormat::ReadUrl).
    {"POST", "/v1beta/models/*", FormatId::kGemini, "/v1/chat/completions"},
    {"POST", "/v1/models/*", FormatId::kGemini, "/v1/chat/completions"},
};

struct Factory {
  FormatId id;
  std::string_view name;  // the format's name()
  std::unique_ptr<ClientFormat> (*make)();
};

constexpr Factory kFactories[] = {
    {FormatId::kOpenAIChat, "openai-chat", NewOpenAIChatFormat},
    {FormatId::kOpenAICompletions, "openai-completions", NewOpenAICompletionsFormat},
    {FormatId::kAnthropic, "anthropic", NewAnthropicFormat},
    {FormatId::kAnthropicCountTokens, "anthropic-count-tokens", NewAnthropicCountTokensFormat},
    {FormatId::kResponses, "responses", NewResponsesFormat},
    {FormatId::kGemini, "gemini", NewGeminiFormat},
    {FormatId::kGeminiCountTokens, "gemini-count-tokens", NewGeminiCountTokensFormat},
};

bool Matches(std::string_view pattern, std::string_view path) {
  if (!pattern.empty() && pattern.back() == '*') {
    pattern.remove_suffix(1);
    return path.substr(0, pattern.size()) == pattern;
  }
  return pattern == path;
}

}  // namespace

const Route* FindRoute(std::string_view method, std::string_view path) {
  for (const Route& route : kRoutes) {
    if (route.method == method && Matches(route.path, path)) return &route;
  }
  return nullptr;
}

std::unique_ptr<ClientFormat> MakeClientFormat(FormatId format) {
  for (const Factory& factory : kFactories) {
    if (factory.id == format) return factory.make();
  }
  return nullptr;
}

std::unique_ptr<ClientFormat> MakeClientFormat(std::string_view name) {
  for (const Factory& factory : kFactories) {
    if (factory.name == name) return factory.make();
  }
  return nullptr;
}

ClientUrl ReadClientUrl(const Route& route, std::string_view target) {
  if (route.format == FormatId::kGemini) return GeminiFormat::ReadUrl(target);
  ClientUrl url;
  url.format = route.format;
  return url;
}

namespace {

std::string_view BarePath(std::string_view path) {
  path = path.substr(0, path.find('?'));
  if (path.rfind("/r/", 0) == 0) {
    size_t end = path.find('/', 3);
    path = end == std::string_view::npos ? std::string_view("/") : path.substr(end);
  }
  return path;
}

}  // namespace

Json ErrorBodyForPath(std::string_view path, int http_status, const std::string& message) {
  if (const Route* route = FindRoute("POST", BarePath(path))) {
    return MakeClientFormat(route->format)->ErrorBody(http_status, message);
  }
  return OpenAIErrorBody(http_status, message);
}

std::string_view AllowedMethods(std::string_view path) {
  path = BarePath(path);
  if (FindRoute("POST", path)) return "POST";
  if (path == "/healthz" || path == "/metrics" || path == "/v1/models") return "GET";
  if (path.rfind("/admin/", 0) == 0) return "GET, POST";
  return "";
}

}  // namespace forge::proxy
