#include "sandbox/docker/engine.h"

#include <algorithm>

#include <curl/curl.h>

#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>

namespace forge::sandbox::docker {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One easy handle per thread, reset between requests: libcurl keeps the
// connection to the socket open across resets, which saves a connect per call
// when a worker thread drives one rollout through create/start/exec/remove.
struct HandleDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};

CURL* ThreadHandle() {
  thread_local std::unique_ptr<CURL, HandleDeleter> handle;
  if (!handle) {
    GlobalInit();
    handle.reset(curl_easy_init());
  } else {
    curl_easy_reset(handle.get());
  }
  return handle.get();
}

size_t AppendBody(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

struct StreamState {
  const std::function<void(std::string_view)>* on_data;
  const std::function<bool()>* keep_going;
  bool aborted = false;
};

size_t StreamBody(char* data, size_t size, size_t count, void* user) {
  auto* state = static_cast<StreamState*>(user);
  (*state->on_data)(std::string_view(data, size * count));
  if (!(*state->keep_going)()) {
    state->aborted = true;
    return 0;  // makes libcurl stop with CURLE_WRITE_ERROR
  }
  return size * count;
}

int StreamProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* state = static_cast<StreamState*>(user);
  if (!(*state->keep_going)()) {
    state->aborted = true;
    return 1;
  }
  return 0;
}

struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void Add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
};

void CommonOptions(CURL* curl, const std::string& socket, const std::string& url,
                   const std::string& method, const std::string& body) {
  curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket.c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  if (method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  }
}

}  // namespace

std::string EngineSocket(const Env& env) {
  const std::string host = env.VarOr("DOCKER_HOST", "");
  if (std::string_view(host).starts_with("unix://")) return host.substr(7);
  return Engine::kDefaultSocket;
}

Engine::Engine(std::string socket_path, std::string api_version)
    : socket_path_(std::move(socket_path)), api_version_(std::move(api_version)) {}

std::string Engine::Url(const std::string& path) const {
  return "http://docker/" + api_version_ + path;
}

std::string Engine::Escape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

Result<HttpResponse> Engine::Call(const std::string& method, const std::string& path,
                                  const std::string& body, const CallOptions& options) {
  return Call(method, path, body, options, {});
}

Result<HttpResponse> Engine::Call(const std::string& method, const std::string& path, const std::string& body,
                                  const CallOptions& options, const std::vector<std::string>& extra_headers) {
  CURL* curl = ThreadHandle();
  if (!curl) return Status::Internal("curl_easy_init failed");
  const std::string url = Url(path);
  CommonOptions(curl, socket_path_, url, method, body);
  HeaderList headers;
  if (!body.empty() || method == "POST" || method == "PUT") {
    headers.Add("Content-Type: " + options.content_type);
  }
  headers.Add("Expect:");  // no 100-continue round trip for archive uploads
  for (const auto& header : extra_headers) headers.Add(header);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  if (options.timeout_seconds > 0) {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout_seconds * 1000));
  }
  HttpResponse response;
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
  CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    return Status::Unavailable("Docker engine at " + socket_path_ + ": " + method + " " + path +
                               ": " + curl_easy_strerror(rc));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  char* type = nullptr;
  curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &type);
  if (type) response.content_type = type;
  return response;
}

Result<nlohmann::json> Engine::CallJson(const std::string& method, const std::string& path,
                                        const nlohmann::json& body, const CallOptions& options) {
  auto response = Call(method, path, body.is_null() ? std::string() : body.dump(), options);
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status >= 300) {
    return StatusForHttp(method + " " + path, *response);
  }
  if (response->body.empty()) return nlohmann::json(nullptr);
  auto parsed = nlohmann::json::parse(response->body, nullptr, false);
  if (parsed.is_discarded()) {
    return Status::Protocol("Docker engine: " + method + " " + path + ": answer is not JSON");
  }
  return parsed;
}

Result<long> Engine::Stream(const std::string& method, const std::string& path,
                            const std::string& body,
                            const std::function<void(std::string_view)>& on_data,
                            const std::function<bool()>& keep_going,
                            const std::vector<std::string>& extra_headers) {
  CURL* curl = ThreadHandle();
  if (!curl) return Status::Internal("curl_easy_init failed");
  const std::string url = Url(path);
  CommonOptions(curl, socket_path_, url, method, body);
  HeaderList headers;
  const bool typed = std::any_of(extra_headers.begin(), extra_headers.end(),
                                 [](const std::string& h) { return h.rfind("Content-Type:", 0) == 0; });
  if (!typed) headers.Add("Content-Type: application/json");
  for (const std::string& header : extra_headers) headers.Add(header);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  StreamState state{&on_data, &keep_going};
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, StreamBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, StreamProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &state);
  // Exec streams are hijacked connections that end by closing: never reuse.
  curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
  CURLcode rc = curl_easy_perform(curl);
  if (state.aborted) return Status::Cancelled("aborted");
  if (rc != CURLE_OK) {
    return Status::Unavailable("Docker engine at " + socket_path_ + ": " + method + " " + path +
                               ": " + curl_easy_strerror(rc));
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  return status;
}

Status StatusForHttp(const std::string& what, const HttpResponse& response) {
  std::string message = response.body;
  auto parsed = nlohmann::json::parse(response.body, nullptr, false);
  if (parsed.is_object() && parsed.contains("message") && parsed["message"].is_string()) {
    message = parsed["message"].get<std::string>();
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) message.pop_back();
  std::string text = "Docker engine: " + what + ": HTTP " + std::to_string(response.status) +
                     (message.empty() ? "" : ": " + message);
  const long s = response.status;
  if (s == 404) return Status::NotFound(text);
  if (s == 409 || s == 429 || s >= 500) return Status::Busy(text);
  return Status::BadConfig(text);
}

}  // namespace forge::sandbox::docker
