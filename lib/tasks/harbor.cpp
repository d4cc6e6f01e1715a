#include "tasks/harbor.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include <toml++/toml.h>

#include "tasks/compose.h"
#include "tasks/harbor_schema.h"
#include "tasks/mcp_servers.h"

namespace forge::tasks {
namespace {

namespace fs = std::filesystem;

bool IsFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

Json TomlToJson(const toml::node& node) {
  if (const toml::table* t = node.as_table()) {
    Json j = Json::object();
    for (auto&& [key, value] : *t) j[std::string(key.str())] = TomlToJson(value);
    return j;
  }
  if (const toml::array* a = node.as_array()) {
    Json j = Json::array();
    for (const toml::node& value : *a) j.push_back(TomlToJson(value));
    return j;
  }
  if (auto s = node.as_string()) return s->get();
  if (auto i = node.as_integer()) return i->get();
  if (auto f = node.as_floating_point()) return f->get();
  if (auto b = node.as_boolean()) return b->get();
  // Dates and times have no JSON type; keep their TOML spelling.
  std::ostringstream out;
  if (auto d = node.as_date()) out << *d;
  if (auto t = node.as_time()) out << *t;
  if (auto dt = node.as_date_time()) out << *dt;
  return out.str();
}

const char* TomlTypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    default: return "date/time";
  }
}

// Where a field of the record came from in task.toml, so an error found
// while validating the record names the key and line the user wrote.
struct Origin {
  std::string key;  // dotted TOML key, e.g. "environment.docker_image"
  int64_t line = 0;
};

class HarborReader {
 public:
  HarborReader(fs::path dir, const Env& env, std::vector<std::string>* warnings)
      : dir_(std::move(dir)), toml_path_((dir_ / "task.toml").string()), env_(env), warnings_(warnings) {}

  Result<Task> Read() {
    toml::table table;
    try {
      table = toml::parse_file(toml_path_);
    } catch (const toml::parse_error& e) {
      return Status::InvalidData(toml_path_ + ":" + std::to_string(e.source().begin.line) + ":" +
                             std::to_string(e.source().begin.column) + ": " +
                             std::string(e.description()));
    }
    record_ = {{"schema", kTaskSchema}};
    for (auto&& [key, node] : table) {
      FORGE_RETURN_IF_ERROR(ReadTopLevel(std::string(key.str()), node));
    }
    FORGE_RETURN_IF_ERROR(ReadFiles());
    if (!record_.contains("id")) record_["id"] = dir_.filename().string();

    auto task = TaskFromJson(record_, dir_.string(), dir_.string());
    if (!task.ok()) return Locate(task.status());
    return task;
  }

 private:
  void Warn(int64_t line, const std::string& message) {
    if (warnings_ != nullptr) {
      warnings_->push_back(toml_path_ + ":" + std::to_string(line) + ": " + message);
    }
  }

  Status Error(int64_t line, const std::string& message) const {
    return Status::InvalidData(toml_path_ + ":" + std::to_string(line) + ": " + message);
  }

  static int64_t Line(const toml::node& node) { return node.source().begin.line; }

  // Sets the record field at a dotted path ("harbor.task.description").
  void SetRecord(const std::string& path, Json value) {
    Json* at = &record_;
    size_t pos = 0;
    for (size_t dot; (dot = path.find('.', pos)) != std::string::npos; pos = dot + 1) {
      at = &(*at)[path.substr(pos, dot - pos)];
    }
    (*at)[path.substr(pos)] = std::move(value);
  }

  void Unknown(const std::string& dotted, const toml::node& node) {
    Warn(Line(node), "unknown key " + dotted + " (not used; kept as harbor." + dotted + ")");
    SetRecord("harbor." + dotted, TomlToJson(node));
  }

  Status ReadTopLevel(const std::string& key, const toml::node& node) {
    if (!IsHarborSection(key)) return ReadKey(key, node);
    const toml::table* table = node.as_table();
    if (table == nullptr) {
      return Error(Line(node), key + ": expected a table, got " + TomlTypeName(node));
    }
    for (auto&& [k, value] : *table) {
      FORGE_RETURN_IF_ERROR(ReadKey(key + "." + std::string(k.str()), value));
    }
    return Status::Ok();
  }

  // One key, as the schema table (tasks/harbor_schema.h) says.
  Status ReadKey(const std::string& dotted, const toml::node& node) {
    const HarborField* field = FindHarborField(dotted);
    if (field == nullptr) {
      Unknown(dotted, node);
      return Status::Ok();
    }
    const std::string record(field->record);
    switch (field->action) {
      case HarborAction::kRefuse:
        return Error(Line(node), dotted + ": not supported by forge: " + std::string(field->note));
      case HarborAction::kWarn:
        Warn(Line(node), dotted + ": not used by forge (" + std::string(field->note) + "); kept as " + record);
        SetRecord(record, TomlToJson(node));
        return Status::Ok();
      case HarborAction::kMap:
        break;
    }
    FORGE_RETURN_IF_ERROR(CheckValue(dotted, node));
    if (dotted == "solution.env") {
      solution_env_ = &node;
    } else if (dotted == "environment.memory" || dotted == "environment.storage") {
      return ReadDeprecatedSize(dotted.substr(dotted.find('.') + 1), node);
    } else if (dotted == "environment.network_mode") {
      SetRecord(record, node.value<std::string>() == std::optional<std::string>("public"));
    } else if (dotted == "environment.mcp_servers" || dotted == "environment.skills_dir") {
      FORGE_RETURN_IF_ERROR(ReadToolKey(dotted.substr(dotted.find('.') + 1), node));
    } else if (!record.empty()) {
      if (dotted == "environment.memory_mb" || dotted == "environment.storage_mb") {
        FORGE_RETURN_IF_ERROR(CheckSizeConflict(dotted.substr(dotted.find('.') + 1), node));
      }
      SetRecord(record, TomlToJson(node));
    }
    if (!record.empty()) origins_[record] = {dotted, Line(node)};
    return Status::Ok();
  }

  // Mapped keys whose value decides whether forge can honour them.
  Status CheckValue(const std::string& dotted, const toml::node& node) const {
    auto text = node.value<std::string>();
    auto is = [&](const char* want) { return text && *text == want; };
    auto refuse = [&](const std::string& why) {
      return Error(Line(node), dotted + ": not supported by forge: " + why);
    };
    if (dotted == "environment.os" && !is("linux") && !is("Linux") && !is("LINUX")) {
      return refuse("forge runs linux containers only");
    }
    if (dotted == "environment.network_mode" && !is("public") && !is("no-network")) {
      return refuse("`public` and `no-network` only (a host allowlist has no forge equivalent)");
    }
    if (dotted == "verifier.environment_mode" && !is("shared")) {
      return refuse("the verifier runs in the agent's sandbox (`shared`) only");
    }
    if (dotted == "metadata" && node.as_table() == nullptr) {
      return Error(Line(node), "metadata: expected a table, got " + std::string(TomlTypeName(node)));
    }
    if (dotted == "verifier.continuous") {
      const toml::table* t = node.as_table();
      if (t == nullptr) return Error(Line(node), dotted + ": expected a table, got " + TomlTypeName(node));
      if (t->get("enabled") && t->get("enabled")->value<bool>().value_or(true)) {
        return refuse("verification during the agent phase");
      }
    }
    return Status::Ok();
  }

  // [[environment.mcp_servers]] and environment.skills_dir, checked here so
  // an error names its line; the launcher hands them to the harness.
  Status ReadToolKey(const std::string& key, const toml::node& node) {
    const std::string dotted = "environment." + key;
    SetRecord(dotted, TomlToJson(node));
    if (key == "skills_dir") {
      auto dir = node.value<std::string>();
      if (!dir || dir->empty() || (*dir)[0] != '/') {
        return Error(Line(node), dotted + ": expected an absolute path in the environment");
      }
      return Status::Ok();
    }
    const toml::array* list = node.as_array();
    if (list == nullptr) return Error(Line(node), dotted + ": expected an array of tables");
    const Json& servers = record_["environment"][key];
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string at = dotted + "[" + std::to_string(i) + "]";
      auto server = McpServerFromJson(servers[i], at);
      if (!server.ok()) return Error(Line((*list)[i]), server.status().message());
    }
    auto all = McpServersFromJson(&servers, dotted);
    return all.ok() ? Status::Ok() : Error(Line(node), all.status().message());
  }

  // environment/docker-compose.yaml: the task's services, run as a pod
  // beside the main container (tasks/compose.h).
  Status ReadPod(const fs::path& compose) {
    const Json env = record_.contains("environment") ? record_["environment"] : Json::object();
    const std::map<std::string, std::string> vars = {
        {"CONTEXT_DIR", (dir_ / "environment").string()},
        {"MAIN_IMAGE_NAME", "hb__" + dir_.filename().string()},
        {"PREBUILT_IMAGE_NAME", env.value("image", std::string())},
        {"CPUS", std::to_string(env.value("cpus", 1))},
        {"MEMORY", std::to_string(env.value("memory_mb", int64_t{2048})) + "M"},
        {"ENV_AGENT_LOGS_PATH", "/logs/agent"},
        {"ENV_VERIFIER_LOGS_PATH", "/logs/verifier"},
        {"ENV_ARTIFACTS_PATH", "/logs/artifacts"},
    };
    auto pod = ReadCompose(compose.string(), vars, env_, warnings_);
    if (!pod.ok()) return pod.status();
    record_["pod"] = std::move(*pod);
    return Status::Ok();
  }

  // Harbor's deprecated memory = "4G" / storage = "10G" become memory_mb /
  // storage_mb; giving both spellings with different values is an error.
  Status ReadDeprecatedSize(const std::string& key, const toml::node& node) {
    const std::string dotted = "environment." + key;
    auto text = node.value<std::string>();
    if (!text) {
      return Error(Line(node), dotted + ": expected a size string like \"4G\", got " +
                                   TomlTypeName(node));
    }
    auto mb = ParseSizeMb(*text);
    if (!mb.ok()) return Error(Line(node), dotted + ": " + mb.status().message());
    const std::string field = key + "_mb";
    FORGE_RETURN_IF_ERROR(CheckSizeConflict(field, *mb, Line(node)));
    record_["environment"][field] = *mb;
    origins_["environment." + field] = {dotted, Line(node)};
    return Status::Ok();
  }

  Status CheckSizeConflict(const std::string& key, const toml::node& node) {
    if (key != "memory_mb" && key != "storage_mb") return Status::Ok();
    auto value = node.value<int64_t>();
    return value ? CheckSizeConflict(key, *value, Line(node)) : Status::Ok();
  }

  Status CheckSizeConflict(const std::string& field, int64_t mb, int64_t line) {
    const Json& env = record_.contains("environment") ? record_["environment"] : Json();
    if (env.is_object() && env.contains(field) && env[field].is_number_integer() &&
        env[field].get<int64_t>() != mb) {
      const std::string old_key = field.substr(0, field.size() - 3);
      return Error(line, "environment." + field + " and the deprecated environment." + old_key +
                             " disagree (" + std::to_string(env[field].get<int64_t>()) +
                             " vs " + std::to_string(mb) + " MB)");
    }
    return Status::Ok();
  }

  Status ReadFiles() {
    const fs::path instruction = dir_ / "instruction.md";
    std::ifstream in(instruction, std::ios::binary);
    if (!IsFile(instruction) || !in) {
      return Status::InvalidData(instruction.string() + ": missing (a Harbor task needs its prompt)");
    }
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad()) return Status::InvalidData(instruction.string() + ": read error");
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      return Status::InvalidData(instruction.string() + ": empty");
    }
    record_["instruction"] = text;

    const fs::path env_dir = dir_ / "environment";
    if (IsFile(env_dir / "Dockerfile")) {
      record_["environment"]["build_context"] = env_dir.string();
    } else if (!record_.contains("environment") || !record_["environment"].contains("image")) {
      return Status::InvalidData((env_dir / "Dockerfile").string() +
                             ": missing, and task.toml sets no [environment] docker_image (a compose "
                             "task's main service is built from it too)");
    }
    // Harbor reads docker-compose.yaml only; the .yml spelling would be ignored there.
    if (IsFile(env_dir / "docker-compose.yaml")) {
      FORGE_RETURN_IF_ERROR(ReadPod(env_dir / "docker-compose.yaml"));
    } else if (IsFile(env_dir / "docker-compose.yml")) {
      return Status::InvalidData((env_dir / "docker-compose.yml").string() +
                             ": Harbor reads environment/docker-compose.yaml only; rename it");
    }

    const fs::path tests = dir_ / "tests";
    if (!IsFile(tests / "test.sh")) {
      return Status::InvalidData((tests / "test.sh").string() + ": missing (the task's verifier)");
    }
    record_["verifier"]["kind"] = "harbor";
    record_["verifier"]["tests_dir"] = tests.string();

    const fs::path solution = dir_ / "solution";
    if (IsFile(solution / "solve.sh")) {
      record_["solution"]["dir"] = solution.string();
      if (solution_env_ != nullptr) {
        record_["solution"]["env"] = TomlToJson(*solution_env_);
        origins_["solution.env"] = {"solution.env", Line(*solution_env_)};
      }
    } else if (solution_env_ != nullptr) {
      Warn(Line(*solution_env_), "[solution] ignored: " + (solution / "solve.sh").string() +
                                     " does not exist");
    }
    return Status::Ok();
  }

  // Puts the TOML file, line and key in front of a record validation error
  // ("environment.image: ..." becomes "t/task.toml:9: environment.docker_image: ...").
  Status Locate(const Status& status) const {
    const std::string& message = status.message();
    const size_t colon = message.find(": ");
    if (colon == std::string::npos) return status.Prefixed(dir_.string());
    const std::string field = message.substr(0, colon);
    // The longest known prefix: "verifier.env.X" comes from "verifier.env".
    for (std::string prefix = field;;) {
      auto it = origins_.find(prefix);
      if (it != origins_.end()) {
        return Error(it->second.line,
                     it->second.key + field.substr(prefix.size()) + message.substr(colon));
      }
      const size_t dot = prefix.rfind('.');
      if (dot == std::string::npos) break;
      prefix.resize(dot);
    }
    return status.Prefixed(dir_.string());
  }

  fs::path dir_;
  std::string toml_path_;
  const Env& env_;
  std::vector<std::string>* warnings_;
  Json record_;
  const toml::node* solution_env_ = nullptr;
  std::map<std::string, Origin> origins_;
};

}  // namespace

bool IsHarborTaskDir(const std::string& dir) { return IsFile(fs::path(dir) / "task.toml"); }

Result<int64_t> ParseSizeMb(const std::string& text) {
  const std::string bad = "invalid size \"" + text + "\" (expected e.g. \"4G\", \"512M\")";
  size_t end = 0;
  double number = 0;
  try {
    number = std::stod(text, &end);
  } catch (const std::exception&) {
    return Status::InvalidData(bad);
  }
  std::string unit = text.substr(end);
  while (!unit.empty() && unit.back() == ' ') unit.pop_back();
  if (unit.size() != 1 || !std::isfinite(number) || number <= 0) return Status::InvalidData(bad);
  switch (std::toupper(static_cast<unsigned char>(unit[0]))) {
    case 'G': return static_cast<int64_t>(number * 1024);
    case 'M': return static_cast<int64_t>(number);
    case 'K': return static_cast<int64_t>(number / 1024);
    default: return Status::InvalidData(bad);
  }
}

Result<Task> ReadHarborTask(const std::string& dir, const Env& env, std::vector<std::string>* warnings) {
  std::error_code ec;
  fs::path path = fs::absolute(dir, ec).lexically_normal();
  if (!path.has_filename()) path = path.parent_path();
  if (!IsFile(path / "task.toml")) {
    return Status::InvalidData((path / "task.toml").string() + ": missing");
  }
  return HarborReader(path, env, warnings).Read();
}

}  // namespace forge::tasks
