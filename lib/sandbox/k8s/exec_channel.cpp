#include "sandbox/k8s/exec_channel.h"

#include <algorithm>
#include <thread>

#include "base/clock.h"
#include "sandbox/k8s/api_client.h"
#include "sandbox/k8s/websocket.h"

namespace forge::sandbox::k8s {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kStdinChunk = 32 * 1024;

void Keep(std::string& into, std::string_view data, size_t cap, bool& truncated) {
  size_t room = into.size() < cap ? cap - into.size() : 0;
  if (data.size() > room) truncated = true;
  into.append(data.substr(0, room));
}

}  // namespace

std::string ExecPath(const ExecCall& call) {
  std::string path = "/api/v1/namespaces/" + ApiClient::Escape(call.namespace_) + "/pods/" +
                     ApiClient::Escape(call.pod) + "/exec?container=" +
                     ApiClient::Escape(call.container);
  for (const std::string& arg : call.command) path += "&command=" + ApiClient::Escape(arg);
  path += call.send_stdin ? "&stdin=true" : "&stdin=false";
  path += "&stdout=true&stderr=true&tty=false";
  return path;
}

Result<int> ExitCodeFromStatus(const nlohmann::json& status) {
  if (!status.is_object()) return Status::Protocol("exec status is not a JSON object");
  std::string outcome = status.value("status", "");
  if (outcome == "Success") return 0;
  std::string reason = status.value("reason", "");
  if (reason == "NonZeroExitCode" && status.contains("details") &&
      status["details"].is_object() && status["details"].contains("causes") &&
      status["details"]["causes"].is_array()) {
    for (const auto& cause : status["details"]["causes"]) {
      if (cause.is_object() && cause.value("reason", "") == "ExitCode") {
        std::string text = cause.value("message", "");
        try {
          size_t used = 0;
          int code = std::stoi(text, &used);
          if (used == text.size()) return code;
        } catch (...) {
        }
        return Status::Protocol("exec status: exit code '" + text + "' is not a number");
      }
    }
    return Status::Protocol("exec status: NonZeroExitCode without an ExitCode cause");
  }
  std::string message = status.value("message", "");
  return Status::Unavailable("exec failed: " + (reason.empty() ? outcome : reason) +
                             (message.empty() ? "" : ": " + message));
}

Result<ExecOutcome> RunExec(ApiClient& client, const ExecCall& call) {
  Clock::time_point start = Clock::now();
  Clock::time_point deadline =
      call.timeout_seconds > 0
          ? start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(call.timeout_seconds))
          : Clock::time_point::max();
  Clock::time_point connect_deadline = std::min(deadline, start + std::chrono::seconds(60));

  // An upgrade that was throttled, met a server error or found no server
  // (an API server restarting) ran nothing: it is tried again, with backoff,
  // until the connect deadline.
  Result<std::unique_ptr<WebSocket>> connected = Status::Busy("exec: not tried");
  for (int attempt = 0;; ++attempt) {
    connected = WebSocket::Connect(client, ExecPath(call), {kProtocolV5, kProtocolV4}, connect_deadline);
    if (connected.ok() || connected.status().kind() != Kind::kBusy) break;
    const auto pause = std::chrono::milliseconds(std::min(500 << std::min(attempt, 3), 4000));
    if (Clock::now() + pause >= connect_deadline || (call.stop_requested && call.stop_requested())) break;
    std::this_thread::sleep_for(pause);
  }
  if (!connected.ok()) return connected.status();
  WebSocket& ws = **connected;
  ExecOutcome outcome;
  outcome.protocol = ws.protocol();
  ExecResult& result = outcome.result;

  if (call.send_stdin) {
    for (size_t at = 0; at < call.stdin_data.size(); at += kStdinChunk) {
      std::string frame(1, static_cast<char>(kStdin));
      frame.append(call.stdin_data, at, kStdinChunk);
      ws.QueueBinary(frame);
    }
    // v4 cannot say EOF; callers there bound stdin themselves (head -c).
    if (outcome.protocol == kProtocolV5 && call.stdin_heartbeat_seconds <= 0) {
      ws.QueueBinary(std::string{static_cast<char>(kClose), static_cast<char>(kStdin)});
    }
  }

  std::optional<nlohmann::json> status;
  const auto beat = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(std::max(call.stdin_heartbeat_seconds, 0.0)));
  Clock::time_point next_beat = beat.count() > 0 ? Clock::now() + beat : Clock::time_point::max();
  while (true) {
    if (call.stop_requested && call.stop_requested()) {
      return Status::Cancelled("exec in pod " + call.pod + " interrupted");
    }
    if (Clock::now() >= next_beat) {
      ws.QueueBinary(std::string{static_cast<char>(kStdin), '\0'});
      next_beat = Clock::now() + beat;
    }
    Clock::time_point slice = call.stop_requested
                                  ? std::min(deadline, Clock::now() + std::chrono::milliseconds(250))
                                  : deadline;
    slice = std::min(slice, next_beat);
    Result<std::optional<WsMessage>> message = ws.Next(slice);
    if (!message.ok()) return message.status();
    if (!message->has_value()) {
      if (Clock::now() < deadline) continue;  // only a slice ended
      result.timed_out = true;
      break;
    }
    const WsMessage& m = **message;
    if (m.kind == WsMessage::kClose) break;
    if (m.data.empty()) continue;
    uint8_t channel = static_cast<uint8_t>(m.data[0]);
    std::string_view data(m.data.data() + 1, m.data.size() - 1);
    if (data.empty()) continue;  // the server opens each channel with a bare byte
    switch (channel) {
      case kStdout:
        Keep(result.stdout_data, data, call.max_output_bytes, result.truncated);
        break;
      case kStderr:
        Keep(result.stderr_data, data, call.max_output_bytes, result.truncated);
        break;
      case kStatus:
        try {
          status = nlohmann::json::parse(data);
        } catch (const nlohmann::json::exception&) {
          return Status::Protocol("exec: channel 3 is not a JSON status: " +
                                  std::string(data.substr(0, 120)));
        }
        break;
      default:
        break;  // resize and close are client-to-server
    }
  }
  result.seconds = SecondsSince(start);
  if (result.timed_out) {
    result.exit_code = -1;
    return outcome;
  }
  if (!status) {
    return Status::Unavailable("exec in pod " + call.pod +
                               ": connection ended without an exit status");
  }
  Result<int> code = ExitCodeFromStatus(*status);
  if (!code.ok()) return code.status().Prefixed("pod " + call.pod);
  result.exit_code = *code;
  // Say goodbye properly; the server may already have closed.
  ws.QueueClose(1000);
  (void)ws.Flush(Clock::now() + std::chrono::milliseconds(200));
  return outcome;
}

}  // namespace forge::sandbox::k8s
