// The Docker Engine HTTP API, spoken over its unix socket through libcurl.
// One small client: a request/response call for the JSON endpoints and a
// streaming call for exec output, both mapping transport and HTTP failures to
// a Status whose code says whether trying again may help.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/env.h"
#include "base/status.h"

namespace forge::sandbox::docker {

struct HttpResponse {
  long status = 0;
  std::string body;
  std::string content_type;
};

struct CallOptions {
  std::string content_type = "application/json";
  double timeout_seconds = 120;  // whole request; 0 = none
};

class Engine {
 public:
  explicit Engine(std::string socket_path = kDefaultSocket, std::string api_version = "v1.41");
  static constexpr const char* kDefaultSocket = "/var/run/docker.sock";

  const std::string& socket_path() const { return socket_path_; }
  const std::string& api_version() const { return api_version_; }

  // Raw call: a transport failure is Unavailable; any HTTP status is returned.
  Result<HttpResponse> Call(const std::string& method, const std::string& path,
                            const std::string& body = "", const CallOptions& options = {});
  // The same with extra "Name: value" header lines (X-Registry-Auth).
  Result<HttpResponse> Call(const std::string& method, const std::string& path, const std::string& body,
                            const CallOptions& options, const std::vector<std::string>& headers);

  // A call that must answer 2xx with JSON (or nothing): a non-2xx status
  // becomes a Status carrying the engine's message (see StatusForHttp).
  Result<nlohmann::json> CallJson(const std::string& method, const std::string& path,
                                  const nlohmann::json& body = nullptr,
                                  const CallOptions& options = {});

  // Streams a response body to on_data. The body is JSON unless headers
  // name another Content-Type. keep_going is polled about every
  // 100 ms and once per chunk; returning false aborts the transfer, which then
  // ends with Cancelled("aborted"). Returns the HTTP status.
  Result<long> Stream(const std::string& method, const std::string& path,
                      const std::string& body, const std::function<void(std::string_view)>& on_data,
                      const std::function<bool()>& keep_going, const std::vector<std::string>& headers = {});

  // Percent-encodes a query parameter value.
  static std::string Escape(std::string_view value);

 private:
  std::string Url(const std::string& path) const;

  std::string socket_path_;
  std::string api_version_;
};

// The engine's socket: $DOCKER_HOST when it is unix://..., else the default.
std::string EngineSocket(const Env& env);

// Maps an engine error status to a Status: 404 NotFound, 409/429/5xx Busy
// (an infrastructure hiccup worth a retry), other 4xx BadConfig. The message
// names the request and quotes the engine's {"message": ...}.
Status StatusForHttp(const std::string& what, const HttpResponse& response);

}  // namespace forge::sandbox::docker
