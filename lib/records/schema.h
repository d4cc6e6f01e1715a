// The record kinds that flow between forge's stages, each with a versioned
// schema named in its "schema" field ("forge.rollout/1"). A stage checks the
// fields it relies on and passes every other field through untouched, so a
// user's own fields and a newer stage's fields survive older stages.
// man/forge-records.5 documents each kind.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace forge::records {

enum class RecordKind { kTask, kRollout, kVerdict, kSample };

// "task", "rollout", "verdict", "sample".
std::string_view KindName(RecordKind kind);
// The version this build writes and the newest it reads.
int SchemaVersion(RecordKind kind);
// "forge.rollout/1".
std::string SchemaTag(RecordKind kind);

// Sets "schema" to this build's tag for kind.
void Stamp(nlohmann::json& record, RecordKind kind);

// Checks the fields that kind requires, and the schema tag when present
// (absent is accepted: hand-written records need not carry it). The message
// names the field, e.g. "rollout: field 'task_id' must be a string".
Status Validate(const nlohmann::json& record, RecordKind kind);

// The kind a record declares in its "schema" field, if any.
std::optional<RecordKind> DeclaredKind(const nlohmann::json& record);

}  // namespace forge::records
