#include "sandbox/k8s/api_client.h"

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/hash.h"

namespace forge::sandbox::k8s {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(Clock::now().time_since_epoch()).count();
}

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// Keeps Retry-After, the only header forge acts on.
size_t ReadHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size()) {
    std::string lower(line.substr(0, kName.size()));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == kName) {
      try {
        *static_cast<double*>(user) = std::stod(std::string(line.substr(kName.size())));
      } catch (...) {
        // An HTTP-date: fall back to our own backoff.
      }
    }
  }
  return size * n;
}

struct StreamState {
  const std::function<bool(std::string_view)>* on_line;
  const std::atomic<bool>* stop;
  std::string pending;
  bool stopped_by_caller = false;
};

size_t StreamBody(char* data, size_t size, size_t n, void* user) {
  auto* state = static_cast<StreamState*>(user);
  state->pending.append(data, size * n);
  size_t start = 0;
  for (size_t nl; (nl = state->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string_view line(state->pending.data() + start, nl - start);
    if (!line.empty() && !(*state->on_line)(line)) {
      state->stopped_by_caller = true;
      return 0;  // aborts the transfer
    }
  }
  state->pending.erase(0, start);
  return size * n;
}

int StreamProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* state = static_cast<StreamState*>(user);
  return state->stop->load() ? 1 : 0;
}

}  // namespace

ApiClient::ApiClient(Cluster cluster, const K8sOptions& options)
    : cluster_(std::move(cluster)),
      max_retries_(options.max_retries),
      max_backoff_(options.max_backoff_seconds),
      limiter_(options.qps, options.burst),
      token_(cluster_.token),
      token_read_at_(NowSeconds()) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

ApiClient::~ApiClient() {
  for (CURL* curl : idle_) curl_easy_cleanup(curl);
}

std::string ApiClient::Escape(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string ApiClient::Token() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!cluster_.token_file.empty() && NowSeconds() - token_read_at_ >= 60) {
    std::ifstream in(cluster_.token_file);
    std::stringstream text;
    text << in.rdbuf();
    std::string fresh = text.str();
    while (!fresh.empty() && std::isspace(static_cast<unsigned char>(fresh.back()))) {
      fresh.pop_back();
    }
    if (!fresh.empty()) token_ = fresh;  // keep the old one if the file is mid-rotation
    token_read_at_ = NowSeconds();
  }
  return token_;
}

void ApiClient::ConfigureTls(CURL* curl) const {
  if (cluster_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!cluster_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, cluster_.ca_file.c_str());
  if (!cluster_.ca_data.empty()) {
    curl_blob blob{const_cast<char*>(cluster_.ca_data.data()), cluster_.ca_data.size(),
                   CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
  }
  if (!cluster_.client_cert_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERT, cluster_.client_cert_file.c_str());
  }
  if (!cluster_.client_key_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLKEY, cluster_.client_key_file.c_str());
  }
  if (!cluster_.client_cert_data.empty()) {
    curl_blob blob{const_cast<char*>(cluster_.client_cert_data.data()),
                   cluster_.client_cert_data.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &blob);
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
  }
  if (!cluster_.client_key_data.empty()) {
    curl_blob blob{const_cast<char*>(cluster_.client_key_data.data()),
                   cluster_.client_key_data.size(), CURL_BLOB_COPY};
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &blob);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
  }
}

CURL* ApiClient::TakeHandle() {
  std::unique_lock<std::mutex> lock(mu_);
  handle_free_.wait(lock, [&] { return !idle_.empty() || handles_ < kConnections; });
  if (idle_.empty()) {
    ++handles_;
    return curl_easy_init();
  }
  CURL* curl = idle_.back();
  idle_.pop_back();
  return curl;
}

void ApiClient::ReturnHandle(CURL* curl) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(curl);
  }
  handle_free_.notify_one();
}

double ApiClient::Backoff(int attempt) const {
  double base = std::min(max_backoff_, 0.1 * std::pow(2.0, attempt));
  return base * (0.5 + 0.5 * RandomUnit());
}

Result<HttpResponse> ApiClient::Call(const std::string& method, const std::string& path,
                                     const std::string& body, std::string_view what) {
  std::string url = Url(path);
  std::string last_problem;
  for (int attempt = 0;; ++attempt) {
    limiter_.Acquire();
    CURL* curl = TakeHandle();
    curl_easy_reset(curl);
    HttpResponse response;
    double retry_after = -1;
    char error[CURL_ERROR_SIZE] = {0};
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Accept: application/json");
    std::string auth = Token();
    if (!auth.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + auth).c_str());
    if (!body.empty()) headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
    if (!body.empty() || method == "POST") {
      curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
      curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response.body);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, ReadHeader);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &retry_after);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    ConfigureTls(curl);
    stats_.requests++;
    CURLcode rc = curl_easy_perform(curl);
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
    curl_slist_free_all(headers);
    ReturnHandle(curl);

    double wait = -1;
    if (rc != CURLE_OK) {
      stats_.transport_errors++;
      last_problem = std::string(error[0] ? error : curl_easy_strerror(rc));
      wait = Backoff(attempt);
    } else if (response.status == 429) {
      stats_.throttled++;
      last_problem = "429 Too Many Requests";
      wait = retry_after >= 0 ? std::min(retry_after, max_backoff_) : Backoff(attempt);
      limiter_.PauseUntil(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(wait)));
    } else if (response.status >= 500 && response.status != 501) {
      stats_.server_errors++;
      last_problem = ApiError(response, "").message();
      wait = Backoff(attempt);
    } else {
      return response;
    }
    if (attempt >= max_retries_) {
      return Status::Unavailable(std::string(what) + ": API server " + cluster_.server + ": " +
                                 last_problem + " (gave up after " +
                                 std::to_string(attempt + 1) + " attempts)");
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
}

Result<long> ApiClient::Stream(const std::string& path,
                               const std::function<bool(std::string_view)>& on_line,
                               const std::atomic<bool>& stop) {
  limiter_.Acquire();
  std::string url = Url(path);
  CURL* curl = curl_easy_init();
  StreamState state{&on_line, &stop, {}, false};
  char error[CURL_ERROR_SIZE] = {0};
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  std::string auth = Token();
  if (!auth.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + auth).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, StreamBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, StreamProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &state);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  // A silent connection for this long is dead (watches send bookmarks).
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 600L);
  ConfigureTls(curl);
  stats_.requests++;
  CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (!state.pending.empty() && rc == CURLE_OK) on_line(state.pending);
  if (rc == CURLE_OK || state.stopped_by_caller || stop.load()) return status;
  stats_.transport_errors++;
  return Status::Unavailable("stream " + path + ": " +
                             std::string(error[0] ? error : curl_easy_strerror(rc)));
}

Status ApiError(const HttpResponse& response, std::string_view what) {
  std::string detail;
  try {
    nlohmann::json status = nlohmann::json::parse(response.body);
    if (status.is_object() && status.contains("message") && status["message"].is_string()) {
      detail = status["message"].get<std::string>();
      if (status.contains("reason") && status["reason"].is_string()) {
        detail = status["reason"].get<std::string>() + ": " + detail;
      }
    }
  } catch (const nlohmann::json::exception&) {
  }
  if (detail.empty()) detail = response.body.substr(0, 200);
  std::string message = std::string(what) + (what.empty() ? "" : ": ") + "HTTP " +
                        std::to_string(response.status) + (detail.empty() ? "" : " " + detail);
  switch (response.status) {
    case 401:
    case 403:
      return Status::BadConfig(message + " (check the token and RBAC: pods create/get/list/watch/"
                                         "delete/deletecollection, pods/exec, pods/log)");
    case 404:
      return Status::NotFound(message);
    case 400:
    case 422:
      return Status::InvalidData(message);
    case 429:
      return Status::Unavailable(message);
    default:
      if (response.status >= 500) return Status::Unavailable(message);
      return Status::Protocol(message);
  }
}

Result<nlohmann::json> ParseJsonBody(const HttpResponse& response, std::string_view what) {
  try {
    return nlohmann::json::parse(response.body);
  } catch (const nlohmann::json::exception& e) {
    return Status::Protocol(std::string(what) + ": malformed JSON from the API server: " + e.what());
  }
}

}  // namespace forge::sandbox::k8s
