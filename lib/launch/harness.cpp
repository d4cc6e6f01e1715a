#include "launch/harness.h"

#include "launch/mcp.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace forge::launch {
namespace {

using Json = records::Json;

Status StringMap(const Json& json, const char* field, const std::string& where,
                 std::map<std::string, std::string>& out) {
  if (!json.contains(field)) return Status::Ok();
  const Json& value = json[field];
  if (!value.is_object()) return Status::BadConfig(where + ": '" + field + "' must be an object of strings");
  for (const auto& [k, v] : value.items()) {
    if (!v.is_string()) return Status::BadConfig(where + ": '" + field + "." + k + "' must be a string");
    out[k] = v.get<std::string>();
  }
  return Status::Ok();
}

}  // namespace

Result<HarnessProfile> ParseHarness(const Json& json, const std::string& where) {
  if (!json.is_object()) return Status::BadConfig(where + ": a harness profile is a JSON object");
  HarnessProfile profile;
  auto text = [&](const char* field, std::string& out) -> Status {
    if (!json.contains(field)) return Status::Ok();
    if (!json[field].is_string()) return Status::BadConfig(where + ": '" + field + "' must be a string");
    out = json[field].get<std::string>();
    return Status::Ok();
  };
  FORGE_RETURN_IF_ERROR(text("name", profile.name));
  FORGE_RETURN_IF_ERROR(text("description", profile.description));
  FORGE_RETURN_IF_ERROR(text("skills_dir", profile.skills_dir));
  FORGE_RETURN_IF_ERROR(text("solution_dir", profile.solution_dir));
  FORGE_RETURN_IF_ERROR(text("default_model", profile.default_model));
  FORGE_RETURN_IF_ERROR(text("requires", profile.requires_));
  std::string mcp_format;
  FORGE_RETURN_IF_ERROR(text("mcp_format", mcp_format));
  if (!mcp_format.empty()) {
    profile.mcp_format = McpFormatOf(mcp_format);
    if (!profile.mcp_format) {
      return Status::BadConfig(where + ": 'mcp_format' \"" + mcp_format + "\" is not one of " + McpFormatNames());
    }
  }
  if (!json.contains("command") || !json["command"].is_array() || json["command"].empty()) {
    return Status::BadConfig(where + ": 'command' must be a non-empty array of strings");
  }
  for (const auto& arg : json["command"]) {
    if (!arg.is_string()) return Status::BadConfig(where + ": 'command' must hold strings only");
    profile.command.push_back(arg.get<std::string>());
  }
  FORGE_RETURN_IF_ERROR(StringMap(json, "env", where, profile.env));
  FORGE_RETURN_IF_ERROR(StringMap(json, "config_files", where, profile.config_files));
  FORGE_RETURN_IF_ERROR(StringMap(json, "files", where, profile.files));
  return profile;
}

Result<HarnessProfile> LoadHarness(const std::string& dir, const std::string& name) {
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) {
      return Status::InvalidArgument("harness name '" + name + "' must be [A-Za-z0-9_-]+");
    }
  }
  const std::string path = dir + "/" + name + ".json";
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": no such harness profile");
  std::stringstream text;
  text << in.rdbuf();
  auto json = Json::parse(text.str(), nullptr, false, true);
  if (json.is_discarded()) return Status::BadConfig(path + ": not valid JSON");
  auto profile = ParseHarness(json, path);
  if (!profile.ok()) return profile.status();
  if (profile->name.empty()) profile->name = name;
  profile->source_dir = dir;
  return profile;
}

std::string DefaultHarnessDir(const Env& env) {
  if (auto dir = env.VarOr("FORGE_HARNESS_DIR", ""); !dir.empty()) return dir;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto installed = exe.parent_path().parent_path() / "share/forge/harnesses";
    if (std::filesystem::is_directory(installed, ec)) return installed.string();
  }
#ifdef FORGE_SOURCE_DIR
  return std::string(FORGE_SOURCE_DIR) + "/harnesses";
#else
  return "harnesses";
#endif
}

std::string DefaultHarnessInstallDir(const Env& env) {
  if (auto dir = env.VarOr("FORGE_HARNESS_INSTALL_DIR", ""); !dir.empty()) return dir;
  if (auto cache = env.VarOr("XDG_CACHE_HOME", ""); !cache.empty()) return cache + "/forge/harnesses";
  return env.VarOr("HOME", "/root") + "/.cache/forge/harnesses";
}

bool UsesPlaceholder(const HarnessProfile& profile, const std::string& key) {
  const std::string needle = "{" + key + "}";
  auto has = [&](const std::string& text) { return text.find(needle) != std::string::npos; };
  for (const auto& arg : profile.command) if (has(arg)) return true;
  for (const auto& [name, value] : profile.env) if (has(value)) return true;
  for (const auto& [path, content] : profile.config_files) if (has(path) || has(content)) return true;
  return false;
}

std::string FillPlaceholders(const std::string& text, const std::map<std::string, std::string>& vars) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find('{', pos);
    if (open == std::string::npos) break;
    size_t close = text.find('}', open + 1);
    if (close == std::string::npos) break;
    auto it = vars.find(text.substr(open + 1, close - open - 1));
    if (it == vars.end()) {
      out.append(text, pos, open + 1 - pos);
      pos = open + 1;
      continue;
    }
    out.append(text, pos, open - pos);
    out += it->second;
    pos = close + 1;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace forge::launch
