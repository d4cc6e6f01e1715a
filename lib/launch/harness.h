// Harness profiles are data, one JSON file per harness in harnesses/: how to
// run it headless on an instruction, which environment variables and config
// files point it at the proxy with the rollout's secret, where skills go,
// and which switches turn telemetry and update checks off. forge-launch
// fills in the placeholders and runs the command; it never edits a harness.
//
// Placeholders, in command, env values and config file contents:
//   {proxy}        the proxy's base URL, no trailing slash (e.g. http://127.0.0.1:8080)
//   {secret}       the rollout's API key (only its SHA-256 is stored)
//   {model}        --model, or the profile's default_model
//   {instruction}  the task's instruction text
//   {instruction_file}  where that text was copied in the sandbox
//   {harnesses}    where scripts/install-harnesses.sh installed the real harnesses,
//                  as the sandbox sees it: the host directory on the local
//                  backend, kHarnessMountPath in docker sandboxes (mounted
//                  read-only there when the profile uses it)
//   {workdir} {rollout_id} {run_id} {task_id} {command}
//   {mcp_servers}  the task's MCP servers in the profile's "mcp_format" (launch/mcp.h)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "launch/mcp.h"
#include "records/jsonl.h"

namespace forge::launch {

struct HarnessProfile {
  std::string name;
  std::string description;
  std::vector<std::string> command;          // argv, placeholders filled per rollout
  std::map<std::string, std::string> env;    // placeholders filled per rollout
  // Sandbox path -> content template: config files written before the run.
  std::map<std::string, std::string> config_files;
  // Sandbox directory -> path relative to the profile's directory: helper
  // files shipped with forge (e.g. the reference ReACT script).
  std::map<std::string, std::string> files;
  std::string skills_dir;                    // where SKILL.md folders go
  // Where the task's reference solution is copied (the oracle harness);
  // empty: the solution never enters the sandbox.
  std::string solution_dir;
  std::string default_model;
  std::string requires_;                     // what the image must provide
  // How the harness reads MCP servers (launch/mcp.h); empty: it has no MCP client.
  std::optional<McpFormat> mcp_format;  // none: the harness has no MCP client
  std::string source_dir;                    // the directory the profile came from
};

// Reads harnesses/<name>.json from dir. NotFound naming the file if missing,
// BadConfig naming the field if malformed.
Result<HarnessProfile> LoadHarness(const std::string& dir, const std::string& name);
Result<HarnessProfile> ParseHarness(const records::Json& json, const std::string& where);

// The directory profiles are read from: $FORGE_HARNESS_DIR, else
// <exe>/../share/forge/harnesses if it exists, else the source tree's.
std::string DefaultHarnessDir(const Env& env);

// Where scripts/install-harnesses.sh installs the npm harnesses:
// $FORGE_HARNESS_INSTALL_DIR, else $XDG_CACHE_HOME/forge/harnesses, else
// ~/.cache/forge/harnesses.
std::string DefaultHarnessInstallDir(const Env& env);

// Where docker sandboxes see the harness install directory.
inline constexpr const char* kHarnessMountPath = "/opt/forge/harnesses";

// True when the profile's command, env or config files name {key}.
bool UsesPlaceholder(const HarnessProfile& profile, const std::string& key);

// Replaces every {key} known in vars; unknown {words} are left as they are
// (shell scripts and JSON in templates use braces too).
std::string FillPlaceholders(const std::string& text, const std::map<std::string, std::string>& vars);

}  // namespace forge::launch
