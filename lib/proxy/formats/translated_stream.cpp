#include "proxy/formats/translated_stream.h"

#include "base/json_field.h"

namespace forge::proxy {

std::string TranslatedStream::Begin() {
  if (started_) return "";
  started_ = true;
  return Opening();
}

std::string TranslatedStream::OnChunk(const Json& chunk) {
  if (ended_) return "";
  acc_.Add(chunk);
  std::string out = Begin();
  const Json* choice = wire::FirstChoice(chunk);
  if (!choice) return out;
  if (const Json* delta = wire::Find(*choice, "delta"); delta && delta->is_object()) out += Delta(*delta);
  if (wire::Find(*choice, "finish_reason")) out += CloseOpen();
  return out;
}

bool TranslatedStream::OnContentDelta(const std::string& content, std::string& out) {
  // Before a first chunk (an opening after an event that was not JSON is
  // not one), the chunk goes to OnChunk, which takes its id and model.
  if (ended_ || !acc_.started()) return false;
  acc_.AddContent(content);
  out += Content(content);
  return true;
}

std::string TranslatedStream::OnEnd() {
  if (ended_) return "";
  std::string out = Begin();
  out += CloseOpen();
  out += Closing();
  ended_ = true;
  return out;
}

std::string TranslatedStream::OnError(const std::string& message) {
  if (ended_) return "";
  ended_ = true;
  return Failure(message);
}

std::string TranslatedStream::OnMalformed(const std::string& data) {
  if (ended_) return "";
  std::string out = Begin();
  return out + Malformed(data);
}

std::string FragmentedToolStream::Delta(const Json& delta) {
  std::string out;
  if (const Json* r = wire::ReasoningField(delta); r && !r->get_ref<const std::string&>().empty()) {
    out += Reasoning(r->get_ref<const std::string&>());
  }
  if (const Json* c = wire::Find(delta, "content"); c && c->is_string()) {
    out += Content(c->get_ref<const std::string&>());
  }
  const Json* calls = wire::Find(delta, "tool_calls");
  if (!calls || !calls->is_array()) return out;
  for (const Json& call : *calls) {
    if (!call.is_object()) continue;
    auto index = JsonIndex(call);
    if (!index || *index > kMaxStreamIndex) continue;
    const Json* fn = wire::Find(call, "function");
    auto known = tools_.find(*index);
    if (known == tools_.end()) {
      int at = -1;
      out += OpenTool(call, *index, fn ? JsonText(*fn, "name") : "", at);
      known = tools_.emplace(*index, at).first;
    }
    // A fragment for an earlier call (servers that interleave parallel
    // calls) still goes out at once, addressed by its own index.
    if (const Json* args = fn ? wire::Find(*fn, "arguments") : nullptr;
        args && args->is_string() && !args->get_ref<const std::string&>().empty()) {
      out += ToolArguments(known->second, args->get_ref<const std::string&>());
    }
  }
  return out;
}

}  // namespace forge::proxy
