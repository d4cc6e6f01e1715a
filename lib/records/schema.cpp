#include "records/schema.h"

#include <vector>

namespace forge::records {
namespace {

enum class Type { kString, kNumber, kInteger, kBool, kObject, kArray };

struct Field {
  const char* name;
  Type type;
  bool required;
};

struct KindInfo {
  RecordKind kind;
  const char* name;
  int version;
  std::vector<Field> fields;
};

const std::vector<KindInfo>& Kinds() {
  static const std::vector<KindInfo> kKinds = {
      {RecordKind::kTask, "task", 1,
       {{"id", Type::kString, true},
        {"instruction", Type::kString, true},
        {"environment", Type::kObject, false},
        {"agent", Type::kObject, false},
        {"verifier", Type::kObject, false},
        {"harness", Type::kString, false},
        {"metadata", Type::kObject, false}}},
      {RecordKind::kRollout, "rollout", 1,
       {{"rollout_id", Type::kString, true},
        {"run_id", Type::kString, true},
        {"task_id", Type::kString, true},
        {"attempt", Type::kInteger, true},
        {"harness", Type::kString, false},
        {"outcome", Type::kString, true},
        {"sandbox", Type::kObject, false},
        {"timings", Type::kObject, false}}},
      {RecordKind::kVerdict, "verdict", 1,
       {{"rollout_id", Type::kString, true},
        {"task_id", Type::kString, true},
        {"verdict", Type::kObject, true}}},
      {RecordKind::kSample, "sample", 1,
       {{"rollout_id", Type::kString, true},
        {"task_id", Type::kString, false}}},
  };
  return kKinds;
}

const KindInfo& Info(RecordKind kind) {
  for (const auto& info : Kinds()) {
    if (info.kind == kind) return info;
  }
  return Kinds().front();  // unreachable: every kind is in the table
}

bool HasType(const nlohmann::json& v, Type type) {
  switch (type) {
    case Type::kString: return v.is_string();
    case Type::kNumber: return v.is_number();
    case Type::kInteger: return v.is_number_integer();
    case Type::kBool: return v.is_boolean();
    case Type::kObject: return v.is_object();
    case Type::kArray: return v.is_array();
  }
  return false;
}

const char* TypeName(Type type) {
  switch (type) {
    case Type::kString: return "a string";
    case Type::kNumber: return "a number";
    case Type::kInteger: return "an integer";
    case Type::kBool: return "true or false";
    case Type::kObject: return "an object";
    case Type::kArray: return "an array";
  }
  return "?";
}

}  // namespace

std::string_view KindName(RecordKind kind) { return Info(kind).name; }
int SchemaVersion(RecordKind kind) { return Info(kind).version; }

std::string SchemaTag(RecordKind kind) {
  return std::string("forge.") + Info(kind).name + "/" + std::to_string(Info(kind).version);
}

void Stamp(nlohmann::json& record, RecordKind kind) { record["schema"] = SchemaTag(kind); }

std::optional<RecordKind> DeclaredKind(const nlohmann::json& record) {
  auto it = record.find("schema");
  if (it == record.end() || !it->is_string()) return std::nullopt;
  const std::string& tag = it->get_ref<const std::string&>();
  for (const auto& info : Kinds()) {
    std::string prefix = std::string("forge.") + info.name + "/";
    if (tag.rfind(prefix, 0) == 0) return info.kind;
  }
  return std::nullopt;
}

Status Validate(const nlohmann::json& record, RecordKind kind) {
  const KindInfo& info = Info(kind);
  std::string what = info.name;
  if (!record.is_object()) return Status::InvalidData(what + ": expected a JSON object");
  if (auto it = record.find("schema"); it != record.end()) {
    if (!it->is_string()) return Status::InvalidData(what + ": field 'schema' must be a string");
    const std::string& tag = it->get_ref<const std::string&>();
    std::string prefix = std::string("forge.") + info.name + "/";
    // A verdict is a rollout with a verdict added: both tags are fine where a
    // rollout is expected, and a verdict reader accepts any rollout-family tag.
    bool family = (kind == RecordKind::kRollout && tag.rfind("forge.verdict/", 0) == 0) ||
                  (kind == RecordKind::kVerdict && tag.rfind("forge.rollout/", 0) == 0);
    if (tag.rfind(prefix, 0) == 0) {
      int version = std::atoi(tag.c_str() + prefix.size());
      if (version < 1 || version > info.version) {
        return Status::InvalidData(what + ": schema '" + tag + "' is not supported by this forge (reads up to " +
                               SchemaTag(kind) + ")");
      }
    } else if (!family) {
      return Status::InvalidData(what + ": expected a " + what + " record, got schema '" + tag + "'");
    }
  }
  for (const Field& field : info.fields) {
    auto it = record.find(field.name);
    if (it == record.end() || it->is_null()) {
      if (field.required) return Status::InvalidData(what + ": missing field '" + field.name + "'");
      continue;
    }
    if (!HasType(*it, field.type)) {
      return Status::InvalidData(what + ": field '" + field.name + "' must be " + TypeName(field.type) +
                             ", got " + it->type_name());
    }
  }
  return Status::Ok();
}

}  // namespace forge::records
