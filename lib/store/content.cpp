#include "store/content.h"

#include "base/hash.h"

namespace forge::store {
namespace {

constexpr const char* kRef = "$forge_blob";
// Parts smaller than this stay inline: a reference would cost more than it saves.
constexpr size_t kMinPartBytes = 64;

bool LooksLikeRef(const nlohmann::json& v) {
  return v.is_object() && v.size() == 1 && v.contains(kRef) && v[kRef].is_string();
}

// A value at a split position becomes a reference when it is big enough or
// when it would be mistaken for one on the way back.
nlohmann::json SplitPart(const nlohmann::json& part, SplitContent& out) {
  if (!part.is_object() && !part.is_string() && !part.is_array()) return part;
  std::string text = part.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text.size() < kMinPartBytes && !(part.is_object() && part.contains(kRef))) return part;
  std::string hash = Sha256Hex(text);
  out.blobs.emplace_back(hash, std::move(text));
  return nlohmann::json{{kRef, hash}};
}

Result<nlohmann::json> JoinPart(const nlohmann::json& part,
                                const std::function<Result<std::string>(const std::string&)>& fetch) {
  if (!LooksLikeRef(part)) return part;
  const std::string hash = part[kRef].get<std::string>();
  auto data = fetch(hash);
  if (!data.ok()) return data.status();
  nlohmann::json value = nlohmann::json::parse(*data, nullptr, false);
  if (value.is_discarded()) return Status::DataErr("blob " + hash + " is not valid JSON");
  return value;
}

}  // namespace

SplitContent Split(const nlohmann::json& value) {
  SplitContent out;
  if (!value.is_object()) {
    out.skeleton = SplitPart(value, out);
    return out;
  }
  out.skeleton = nlohmann::json::object();
  for (const auto& [key, item] : value.items()) {
    if (item.is_array()) {
      nlohmann::json parts = nlohmann::json::array();
      for (const auto& element : item) parts.push_back(SplitPart(element, out));
      out.skeleton[key] = std::move(parts);
    } else {
      out.skeleton[key] = SplitPart(item, out);
    }
  }
  return out;
}

Result<nlohmann::json> Join(const nlohmann::json& skeleton,
                            const std::function<Result<std::string>(const std::string&)>& fetch) {
  if (!skeleton.is_object() || LooksLikeRef(skeleton)) return JoinPart(skeleton, fetch);
  nlohmann::json value = nlohmann::json::object();
  for (const auto& [key, item] : skeleton.items()) {
    if (item.is_array()) {
      nlohmann::json elements = nlohmann::json::array();
      for (const auto& part : item) {
        auto joined = JoinPart(part, fetch);
        if (!joined.ok()) return joined.status();
        elements.push_back(std::move(*joined));
      }
      value[key] = std::move(elements);
    } else {
      auto joined = JoinPart(item, fetch);
      if (!joined.ok()) return joined.status();
      value[key] = std::move(*joined);
    }
  }
  return value;
}

}  // namespace forge::store
