#include "proxy/formats/translated_stream.h"

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

}  // namespace forge::proxy
