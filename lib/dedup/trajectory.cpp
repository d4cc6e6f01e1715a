#include "dedup/trajectory.h"

#include "pack/messages.h"

namespace forge::dedup {

namespace {

using Json = store::Json;

std::string Text(const Json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    // Content parts: keep the text of each, in order.
    std::string out;
    for (const Json& part : value) {
      std::string piece = part.is_object() && part.contains("text") ? Text(part["text"]) : Text(part);
      if (piece.empty()) continue;
      if (!out.empty()) out += '\n';
      out += piece;
    }
    return out;
  }
  if (value.is_null()) return "";
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string RenderMessage(const Json& message) {
  if (!message.is_object()) return Text(message);
  std::string role = message.contains("role") ? Text(message["role"]) : "message";
  std::string line = role + ": ";
  if (message.contains("content")) line += Text(message["content"]);
  if (auto calls = message.find("tool_calls"); calls != message.end() && calls->is_array()) {
    for (const Json& call : *calls) {
      const Json* function = call.contains("function") ? &call["function"] : &call;
      std::string name = function->contains("name") ? Text((*function)["name"]) : "tool";
      std::string arguments = function->contains("arguments") ? Text((*function)["arguments"]) : "";
      line += "\n" + name + "(" + arguments + ")";
    }
  }
  return line;
}

}  // namespace

std::string RenderTrajectory(const std::vector<store::CallRecord>& calls) {
  std::vector<Json> shown;  // the conversation so far, as the last call saw it
  std::string text;
  auto append = [&](const Json& message) {
    if (!text.empty()) text += '\n';
    text += RenderMessage(message);
  };
  for (const store::CallRecord& call : calls) {
    if (call.side_call) continue;
    // Compared in canonical form: a harness that resends the assistant's reply
    // often adds or drops null fields.
    Json messages = pack::CanonicalMessages(pack::RequestMessages(call));
    size_t common = 0;
    while (common < shown.size() && common < messages.size() && shown[common] == messages[common]) {
      ++common;
    }
    for (size_t m = common; m < messages.size(); ++m) append(messages[m]);
    shown.assign(messages.begin(), messages.end());
    Json reply = pack::ResponseMessage(call);
    if (!reply.is_null()) {
      reply = pack::CanonicalMessage(reply);
      append(reply);
      shown.push_back(reply);
    }
  }
  return text;
}

Result<std::string> TrajectoryText(store::Store& store, const std::string& rollout_id) {
  auto calls = store.calls().CallsOfRollout(rollout_id);
  if (!calls.ok()) return calls.status();
  return RenderTrajectory(*calls);
}

}  // namespace forge::dedup
