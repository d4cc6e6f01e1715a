// Harbor's task.toml schema as one table: every key Harbor's TaskConfig
// model defines (src/harbor/models/task/config.py), what forge does with it,
// and where it lands in the task record. The table drives the reader
// (lib/tasks/harbor.cpp: a refused key is an error naming file, line and
// key; a warned one is reported and kept), and docs/forge-tasks.md's field
// reference is generated from it (a unit test holds the two together).
//
// The rule: every field is honoured as Harbor honours it, or refused, never
// silently dropped. A key the table lacks (a newer Harbor's) is warned about
// and kept under the record's "harbor" object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace forge::tasks {

enum class HarborAction {
  kMap,     // honoured: read into the record field and acted on as Harbor does
  kWarn,    // kept under the record field, with a warning: forge does not act on it
  kRefuse,  // an error: running the task without it would change its result
};

std::string_view HarborActionName(HarborAction action);

struct HarborField {
  std::string_view key;     // dotted task.toml key ("environment.docker_image"), or a file
  HarborAction action;
  std::string_view record;  // the record field it becomes; "" when it is only checked
  std::string_view note;    // what forge does with it (the reference's last column)
  // Where the code acting on it lives, when another part of forge owns it
  // (compose services, MCP servers, skills: lib/tasks/compose.*, lib/launch/services.*).
  std::string_view handler = {};
};

const std::vector<HarborField>& HarborSchema();

// The row for a dotted key, or nullptr.
const HarborField* FindHarborField(std::string_view key);

// Whether key is a table whose own keys the table lists ("task", "environment",
// "verifier", "environment.healthcheck", ...).
bool IsHarborSection(std::string_view key);

// The reference table of docs/forge-tasks.md (GitHub markdown).
std::string HarborSchemaMarkdown();

}  // namespace forge::tasks
