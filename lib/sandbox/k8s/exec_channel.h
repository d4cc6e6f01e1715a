// `kubectl exec` over WebSocket: the channel protocol of
// v5.channel.k8s.io (preferred) and v4.channel.k8s.io (fallback). Every
// binary message starts with a channel byte: 0 stdin, 1 stdout, 2 stderr,
// 3 status (a metav1.Status JSON when the process ends), 4 resize; v5 adds
// 255 = "close this channel", which is how stdin reaches EOF.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::k8s {

class ApiClient;

inline constexpr const char* kProtocolV5 = "v5.channel.k8s.io";
inline constexpr const char* kProtocolV4 = "v4.channel.k8s.io";

enum Channel : uint8_t {
  kStdin = 0,
  kStdout = 1,
  kStderr = 2,
  kStatus = 3,
  kResize = 4,
  kClose = 255,  // v5 only
};

struct ExecCall {
  std::string namespace_;
  std::string pod;
  std::string container;
  std::vector<std::string> command;
  bool send_stdin = false;
  std::string stdin_data;
  double timeout_seconds = 0;
  size_t max_output_bytes = 1 << 20;
  std::function<bool()> stop_requested;  // ends the exec with Status::Cancelled
  // > 0: stdin is never closed; a one-byte stdin message goes every this
  // many seconds until the command ends (ExecRequest::stdin_heartbeat_seconds).
  double stdin_heartbeat_seconds = 0;
};

struct ExecOutcome {
  ExecResult result;
  std::string protocol;  // the subprotocol the server chose
};

// The query string of the exec endpoint for a call.
std::string ExecPath(const ExecCall& call);

// Exit code from the channel-3 status: "Success" is 0; NonZeroExitCode
// carries the code in details.causes[reason=ExitCode].message. Anything else
// (the container is gone, an internal error) is an infrastructure error.
Result<int> ExitCodeFromStatus(const nlohmann::json& status);

// Runs one exec to completion (or its timeout). A connection that ends
// without a status is an infrastructure error, never an exit code of 0.
Result<ExecOutcome> RunExec(ApiClient& client, const ExecCall& call);

}  // namespace forge::sandbox::k8s
