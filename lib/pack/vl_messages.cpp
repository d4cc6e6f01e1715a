#include "pack/vl_messages.h"

namespace forge::pack {
namespace {

using Json = nlohmann::json;

bool IsImagePart(const Json& part) {
  if (!part.is_object()) return false;
  std::string type = part.value("type", "");
  return type == "image_url" || type == "input_image" || type == "image";
}

template <typename Fn>
Json MapContents(const Json& messages, Fn fn) {
  Json out = Json::array();
  for (const Json& m : messages) {
    Json copy = m;
    if (m.is_object() && m.contains("content") && m["content"].is_array()) copy["content"] = fn(m["content"]);
    out.push_back(std::move(copy));
  }
  return out;
}

}  // namespace

size_t CountImageParts(const Json& messages) {
  size_t n = 0;
  if (!messages.is_array()) return 0;
  for (const Json& m : messages) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    for (const Json& part : m["content"]) n += IsImagePart(part);
  }
  return n;
}

Json TrlMessages(const Json& messages) {
  return MapContents(messages, [](const Json& parts) {
    Json out = Json::array();
    for (const Json& part : parts) out.push_back(IsImagePart(part) ? Json{{"type", "image"}} : part);
    return out;
  });
}

Json ImageTagMessages(const Json& messages) {
  return MapContents(messages, [](const Json& parts) {
    std::string text;
    for (const Json& part : parts) {
      if (IsImagePart(part)) text += "<image>";
      else if (part.is_object() && part.contains("text") && part["text"].is_string()) text += part["text"].get<std::string>();
    }
    return Json(text);
  });
}

}  // namespace forge::pack
