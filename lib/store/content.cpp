#include "store/content.h"

#include "base/json_dump.h"
#include "base/json_scan.h"

namespace forge::store {

using Json = nlohmann::json;

Result<Json> ReadStoredJson(std::string_view text, const std::string& what) {
  if (auto error = JsonSyntaxError(text, nullptr, kMaxJsonDepthCeiling)) {
    if (error->rfind("nested deeper than", 0) != 0) return Status::InvalidData(what + " is not valid JSON: " + *error);
    // Stored by a proxy that took any depth: kept as its text, which
    // every reader can copy and print (a document this deep overflows
    // the stack of code that recurses over it).
    return Json(std::string(text));
  }
  return Json::parse(text, nullptr, false);
}

namespace {

// Parts smaller than this stay inline: a reference would cost more than it saves.
constexpr size_t kMinPartBytes = 48;

bool WorthABlob(const Json& v, const std::string& text) {
  return (v.is_object() || v.is_array() || v.is_string()) && text.size() >= kMinPartBytes;
}

Result<Json> SplitValue(const Json& v, const InternFn& intern) {
  if (v.is_array()) {
    Json items = Json::array();
    for (const Json& element : v) {
      std::string text = DumpJson(element);
      if (WorthABlob(element, text)) {
        auto id = intern(text);
        if (!id.ok()) return id.status();
        items.push_back(*id);
      } else {
        items.push_back(Json::array({element}));
      }
    }
    return Json::array({"l", std::move(items)});
  }
  std::string text = DumpJson(v);
  if (WorthABlob(v, text)) {
    auto id = intern(text);
    if (!id.ok()) return id.status();
    return Json::array({"b", *id});
  }
  return Json::array({"v", v});
}

Result<Json> FetchPart(int64_t id, const FetchFn& fetch) {
  auto data = fetch(id);
  if (!data.ok()) return data.status();
  return ReadStoredJson(*data, "blob " + std::to_string(id));
}

Result<Json> JoinValue(const Json& part, const FetchFn& fetch) {
  if (!part.is_array() || part.size() != 2 || !part[0].is_string()) {
    return Status::InvalidData("corrupt content skeleton");
  }
  const std::string& tag = part[0].get_ref<const std::string&>();
  if (tag == "v") return part[1];
  if (tag == "b" && part[1].is_number_integer()) return FetchPart(part[1].get<int64_t>(), fetch);
  if (tag == "l" && part[1].is_array()) {
    Json items = Json::array();
    for (const Json& item : part[1]) {
      if (item.is_number_integer()) {
        auto value = FetchPart(item.get<int64_t>(), fetch);
        if (!value.ok()) return value.status();
        items.push_back(std::move(*value));
      } else if (item.is_array() && item.size() == 1) {
        items.push_back(item[0]);
      } else {
        return Status::InvalidData("corrupt content skeleton");
      }
    }
    return items;
  }
  return Status::InvalidData("corrupt content skeleton");
}

bool WorthABlobText(std::string_view text) {
  return (IsJsonObject(text) || IsJsonArray(text) || IsJsonString(text)) && text.size() >= kMinPartBytes;
}

// A skeleton written as text, part by part: the text's own bytes where a
// value stays inline (valid JSON, so what a reader parses is what it would
// have parsed from the text), a blob's id where it does not.
class SkeletonWriter {
 public:
  // too_deep: the text nests deeper than kMaxJsonDepthCeiling somewhere.
  SkeletonWriter(const InternFn& intern, const JsonSpans& spans, bool too_deep)
      : intern_(intern), spans_(spans), too_deep_(too_deep) {}

  Status Part(std::string_view v) {
    // A value beyond the ceiling stays whole, in one blob: a reader gets it
    // back as its text (ReadStoredJson), never as a document to recurse over.
    if (too_deep_ && JsonSyntaxError(v, nullptr, kMaxJsonDepthCeiling)) {
      out_ += R"(["b",)";
      FORGE_RETURN_IF_ERROR(Blob(v));
      out_ += ']';
      return Status::Ok();
    }
    if (IsJsonArray(v)) {
      out_ += R"(["l",[)";
      bool first = true;
      for (std::string_view element : ArrayElements(v, &spans_)) {
        if (!first) out_ += ',';
        first = false;
        if (WorthABlobText(element)) {
          FORGE_RETURN_IF_ERROR(Blob(element));
        } else {
          out_.append("[").append(element).append("]");
        }
      }
      out_ += "]]";
      return Status::Ok();
    }
    if (WorthABlobText(v)) {
      out_ += R"(["b",)";
      FORGE_RETURN_IF_ERROR(Blob(v));
      out_ += ']';
      return Status::Ok();
    }
    out_.append(R"(["v",)").append(v).append("]");
    return Status::Ok();
  }

  // raw_key: between the quotes, escapes as written.
  void Key(std::string_view raw_key) {
    out_ += out_.empty() ? '{' : ',';
    out_.append("\"").append(raw_key).append("\":");
  }

  void Literal(std::string_view json) { out_ += json; }

  std::string Finish() {
    out_ += out_.empty() ? "{}" : "}";
    return std::move(out_);
  }

 private:
  Status Blob(std::string_view text) {
    auto id = intern_(text);
    if (!id.ok()) return id.status();
    out_ += std::to_string(*id);
    return Status::Ok();
  }

  const InternFn& intern_;
  const JsonSpans& spans_;
  bool too_deep_;
  std::string out_;
};

}  // namespace

Result<std::string> SplitText(std::string_view text, const InternFn& intern) {
  JsonSpans spans;
  // Only a text found to be too deep pays for a second scan and per-part checks.
  bool too_deep = false;
  if (auto error = JsonSyntaxError(text, &spans, kMaxJsonDepthCeiling)) {
    if (error->rfind("nested deeper than", 0) != 0) return Status::InvalidData("content is not valid JSON");
    spans.Clear();
    if (JsonSyntaxError(text, &spans)) return Status::InvalidData("content is not valid JSON");
    too_deep = true;
  }
  text = TrimJson(text);
  SkeletonWriter skeleton(intern, spans, too_deep);
  if (!IsJsonObject(text)) {
    skeleton.Key("");
    FORGE_RETURN_IF_ERROR(skeleton.Part(text));
    skeleton.Key("$whole");
    skeleton.Literal("true");
    return skeleton.Finish();
  }
  // A duplicate key is written again; a reader's parser keeps the last, as
  // it would have of the text's.
  for (const JsonMember& member : ObjectMembers(text, &spans)) {
    skeleton.Key(member.key);
    FORGE_RETURN_IF_ERROR(skeleton.Part(member.value));
  }
  return skeleton.Finish();
}

Result<Json> Split(const Json& value, const InternFn& intern) {
  Json skeleton = Json::object();
  if (!value.is_object()) {
    auto part = SplitValue(value, intern);
    if (!part.ok()) return part.status();
    skeleton[""] = std::move(*part);
    skeleton["$whole"] = true;
    return skeleton;
  }
  for (const auto& [key, item] : value.items()) {
    auto part = SplitValue(item, intern);
    if (!part.ok()) return part.status();
    skeleton[key] = std::move(*part);
  }
  return skeleton;
}

Json TopLevelDiff(const Json& base, const Json& target) {
  Json set = Json::object();
  Json unset = Json::array();
  for (const auto& [key, value] : target.items()) {
    auto same = base.find(key);
    if (same == base.end() || *same != value) set[key] = value;
  }
  for (const auto& [key, value] : base.items()) {
    if (!target.contains(key)) unset.push_back(key);
  }
  return {{"set", std::move(set)}, {"unset", std::move(unset)}};
}

Json ApplyTopLevelDiff(const Json& base, const Json& diff) {
  Json result = base;
  for (const auto& key : diff["unset"]) result.erase(key.get<std::string>());
  for (const auto& [key, value] : diff["set"].items()) result[key] = value;
  return result;
}

Result<Json> Join(const Json& skeleton, const FetchFn& fetch) {
  if (!skeleton.is_object()) return Status::InvalidData("corrupt content skeleton");
  if (auto whole = skeleton.find("$whole"); whole != skeleton.end() && *whole == true) {
    if (!skeleton.contains("")) return Status::InvalidData("corrupt content skeleton");
    return JoinValue(skeleton[""], fetch);
  }
  Json value = Json::object();
  for (const auto& [key, part] : skeleton.items()) {
    auto joined = JoinValue(part, fetch);
    if (!joined.ok()) return joined.status();
    value[key] = std::move(*joined);
  }
  return value;
}

}  // namespace forge::store
