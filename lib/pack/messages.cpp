#include "pack/messages.h"

namespace forge::pack {
namespace {

const Json* ChatRequest(const store::CallRecord& call) {
  if (call.upstream_request.is_object() && call.upstream_request.contains("messages")) {
    return &call.upstream_request;
  }
  if (call.request.is_object() && call.request.contains("messages")) return &call.request;
  return nullptr;
}

}  // namespace

Json RequestMessages(const store::CallRecord& call) {
  const Json* request = ChatRequest(call);
  if (!request || !(*request)["messages"].is_array()) return Json::array();
  return (*request)["messages"];
}

Json RequestTools(const store::CallRecord& call) {
  const Json* request = ChatRequest(call);
  if (!request) return nullptr;
  auto it = request->find("tools");
  if (it == request->end() || !it->is_array() || it->empty()) return nullptr;
  return *it;
}

Json ResponseMessage(const store::CallRecord& call) {
  for (const Json* response : {&call.upstream_response, &call.response}) {
    if (!response->is_object()) continue;
    auto choices = response->find("choices");
    if (choices == response->end() || !choices->is_array() || choices->empty()) continue;
    const Json& choice = (*choices)[0];
    if (choice.is_object() && choice.contains("message") && choice["message"].is_object()) {
      Json message = choice["message"];
      if (!message.contains("role")) message["role"] = "assistant";
      return message;
    }
  }
  return nullptr;
}

Json CanonicalMessage(const Json& message) {
  if (!message.is_object()) return message;
  Json out = Json::object();
  out["role"] = message.value("role", "user");
  auto content = message.find("content");
  out["content"] = (content == message.end()) ? Json("") : *content;
  if (out["content"].is_null()) out["content"] = "";
  for (const char* key : {"tool_call_id", "name", "reasoning_content"}) {
    auto it = message.find(key);
    if (it != message.end() && !it->is_null()) out[key] = *it;
  }
  auto calls = message.find("tool_calls");
  if (calls != message.end() && calls->is_array() && !calls->empty()) {
    Json canonical = Json::array();
    for (const Json& call : *calls) {
      Json c = call;
      if (!c.contains("type")) c["type"] = "function";
      if (c.contains("function") && c["function"].is_object()) {
        Json& arguments = c["function"]["arguments"];
        if (arguments.is_null()) arguments = "{}";
        else if (!arguments.is_string()) arguments = arguments.dump();
      }
      canonical.push_back(std::move(c));
    }
    out["tool_calls"] = std::move(canonical);
  }
  return out;
}

Json CanonicalMessages(const Json& messages) {
  Json out = Json::array();
  if (!messages.is_array()) return out;
  for (const Json& m : messages) out.push_back(CanonicalMessage(m));
  return out;
}

}  // namespace forge::pack
