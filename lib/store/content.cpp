#include "store/content.h"

#include "base/base64.h"
#include "base/json_dump.h"
#include "base/json_scan.h"
#include "store/inline_images.h"

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

Result<Json> PartRef(std::string_view text, const PartFn& part) {
  auto ref = part(text);
  if (!ref.ok()) return ref.status();
  Json parsed = Json::parse(*ref, nullptr, false);
  if (parsed.is_discarded()) return Status::Internal("a part's ref is not JSON: " + *ref);
  return parsed;
}

Result<Json> SplitValue(const Json& v, const PartFn& part) {
  if (v.is_array()) {
    Json items = Json::array();
    for (const Json& element : v) {
      std::string text = DumpJson(element);
      if (WorthABlob(element, text)) {
        auto ref = PartRef(text, part);
        if (!ref.ok()) return ref.status();
        items.push_back(std::move(*ref));
      } else {
        items.push_back(Json::array({element}));
      }
    }
    return Json::array({"l", std::move(items)});
  }
  std::string text = DumpJson(v);
  if (WorthABlob(v, text)) {
    auto ref = PartRef(text, part);
    if (!ref.ok()) return ref.status();
    return Json::array({"b", std::move(*ref)});
  }
  return Json::array({"v", v});
}

// A part's text from its ref: a blob, or a blob with images spliced back in.
Result<std::string> FetchPartText(const Json& ref, const FetchFn& fetch) {
  if (ref.is_number_integer()) return fetch(ref.get<int64_t>());
  auto t = ref.find("t");
  auto i = ref.find("i");
  if (t == ref.end() || !t->is_number_integer() || i == ref.end() || !i->is_array()) {
    return Status::InvalidData("corrupt content skeleton");
  }
  auto text = fetch(t->get<int64_t>());
  if (!text.ok()) return text.status();
  std::string out;
  size_t from = 0;
  for (const Json& splice : *i) {
    if (!splice.is_array() || splice.size() != 2 || !splice[0].is_number_unsigned() ||
        !splice[1].is_number_integer() || splice[0].get<size_t>() < from || splice[0].get<size_t>() > text->size()) {
      return Status::InvalidData("corrupt content skeleton");
    }
    auto image = fetch(splice[1].get<int64_t>());
    if (!image.ok()) return image.status();
    size_t at = splice[0].get<size_t>();
    out.append(*text, from, at - from).append(Base64Encode(*image));
    from = at;
  }
  out.append(*text, from);
  return out;
}

Result<Json> FetchPart(const Json& ref, const FetchFn& fetch) {
  auto data = FetchPartText(ref, fetch);
  if (!data.ok()) return data.status();
  return ReadStoredJson(*data, "part " + ref.dump());
}

bool IsRef(const Json& item) { return item.is_number_integer() || item.is_object(); }

Result<Json> JoinValue(const Json& part, const FetchFn& fetch) {
  if (!part.is_array() || part.size() != 2 || !part[0].is_string()) {
    return Status::InvalidData("corrupt content skeleton");
  }
  const std::string& tag = part[0].get_ref<const std::string&>();
  if (tag == "v") return part[1];
  if (tag == "b" && IsRef(part[1])) return FetchPart(part[1], fetch);
  if (tag == "l" && part[1].is_array()) {
    Json items = Json::array();
    for (const Json& item : part[1]) {
      if (IsRef(item)) {
        auto value = FetchPart(item, fetch);
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
  SkeletonWriter(const PartFn& part, const JsonSpans& spans, bool too_deep)
      : part_(part), spans_(spans), too_deep_(too_deep) {}

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
    auto ref = part_(text);
    if (!ref.ok()) return ref.status();
    out_ += *ref;
    return Status::Ok();
  }

  const PartFn& part_;
  const JsonSpans& spans_;
  bool too_deep_;
  std::string out_;
};

}  // namespace

Result<std::string> SplitText(std::string_view text, const PartFn& part) {
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
  SkeletonWriter skeleton(part, spans, too_deep);
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

Result<Json> Split(const Json& value, const PartFn& store_part) {
  Json skeleton = Json::object();
  if (!value.is_object()) {
    auto part = SplitValue(value, store_part);
    if (!part.ok()) return part.status();
    skeleton[""] = std::move(*part);
    skeleton["$whole"] = true;
    return skeleton;
  }
  for (const auto& [key, item] : value.items()) {
    auto part = SplitValue(item, store_part);
    if (!part.ok()) return part.status();
    skeleton[key] = std::move(*part);
  }
  return skeleton;
}

Result<std::string> StorePart(std::string_view part, const InternFn& intern) {
  // Too short to hold an image's base64 (a 1x1 PNG's is ~90 characters).
  constexpr size_t kMinImagePart = 64;
  std::vector<InlineImage> images;
  if (part.size() >= kMinImagePart) images = FindInlineImages(part);
  if (images.empty()) {
    auto id = intern(part);
    if (!id.ok()) return id.status();
    return std::to_string(*id);
  }
  std::string text;  // the part without its images' base64
  std::string splices;
  size_t from = 0;
  for (const InlineImage& image : images) {
    text.append(part.substr(from, image.begin - from));
    auto id = intern(image.bytes);
    if (!id.ok()) return id.status();
    if (!splices.empty()) splices += ',';
    splices += "[" + std::to_string(text.size()) + "," + std::to_string(*id) + "]";
    from = image.end;
  }
  text.append(part.substr(from));
  auto id = intern(text);
  if (!id.ok()) return id.status();
  return R"({"t":)" + std::to_string(*id) + R"(,"i":[)" + splices + "]}";
}

namespace {

void CollectImages(const nlohmann::ordered_json& ref, std::vector<int64_t>& into) {
  if (!ref.is_object()) return;
  auto i = ref.find("i");
  if (i == ref.end() || !i->is_array()) return;
  for (const auto& splice : *i) {
    if (splice.is_array() && splice.size() == 2 && splice[1].is_number_integer()) into.push_back(splice[1].get<int64_t>());
  }
}

}  // namespace

std::vector<int64_t> SkeletonImages(std::string_view skeleton) {
  std::vector<int64_t> images;
  // A quick test first: most skeletons name no image.
  if (skeleton.find(R"("i":)") == std::string_view::npos) return images;
  // In the text's key order: the document's.
  auto parsed = nlohmann::ordered_json::parse(skeleton, nullptr, false);
  if (!parsed.is_object()) return images;
  for (const auto& [key, part] : parsed.items()) {
    if (!part.is_array() || part.size() != 2 || !part[0].is_string()) continue;
    if (part[0] == "b") CollectImages(part[1], images);
    if (part[0] == "l" && part[1].is_array()) {
      for (const auto& item : part[1]) CollectImages(item, images);
    }
  }
  return images;
}

Result<std::string> SplitText(std::string_view text, const InternFn& intern) {
  return SplitText(text, [&](std::string_view part) { return StorePart(part, intern); });
}

Result<Json> Split(const Json& value, const InternFn& intern) {
  return Split(value, [&](std::string_view part) { return StorePart(part, intern); });
}

Json FlatDiff(const Json& diff) {
  Json flat = Json::object();
  for (const auto& [key, value] : diff["set"].items()) flat["=" + key] = value;
  flat["-"] = diff["unset"];
  return flat;
}

Json UnflattenDiff(const Json& flat) {
  Json diff = {{"set", Json::object()}, {"unset", Json::array()}};
  if (!flat.is_object()) return diff;
  for (const auto& [key, value] : flat.items()) {
    if (key == "-") diff["unset"] = value;
    else if (!key.empty() && key[0] == '=') diff["set"][key.substr(1)] = value;
  }
  return diff;
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
