// The task record (schema "forge.task/1"): what one rollout is asked to do,
// where it runs, and how its result is judged. forge's own task JSONL and
// Harbor task directories are both read into this one record, so every later
// stage sees a single shape whatever the source was.
//
// The typed fields are what forge acts on. `extra` keeps the object as it
// was read, so ToJson() gives back fields forge does not know, at any depth,
// untouched.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"

namespace forge::tasks {

using records::Json;

inline constexpr std::string_view kTaskSchema = "forge.task/1";

// Harbor's defaults, so a task reads the same whichever format it came in.
inline constexpr double kDefaultTimeoutSec = 600;
inline constexpr double kDefaultCpus = 1;
inline constexpr int64_t kDefaultMemoryMb = 2048;
inline constexpr int64_t kDefaultStorageMb = 10240;

// Harbor's [environment.healthcheck], with Docker HEALTHCHECK's meaning: the
// command is run every interval_sec (start_interval_sec during the first
// start_period_sec, whose failures do not count) until it exits 0; `retries`
// failures in a row fail the rollout before the harness starts.
struct Healthcheck {
  std::string command;  // run by /bin/sh -c
  double interval_sec = 5;
  double timeout_sec = 30;
  double start_period_sec = 0;
  double start_interval_sec = 5;
  int64_t retries = 3;
};

struct Environment {
  std::string image;          // a pre-built image; used instead of building
  std::string build_context;  // absolute path of a directory holding a Dockerfile
  // Harbor's environment/docker-compose.yaml (absolute path), run by the
  // compose half (lib/tasks/compose.*); empty when the task has none.
  std::string compose;
  // The sandbox's environment: values may be ${VAR} / ${VAR:-default}
  // templates (tasks/env_template.h), resolved only when the task runs.
  std::map<std::string, std::string> env;
  std::string workdir;  // empty: the image's WORKDIR
  std::optional<Healthcheck> healthcheck;
  double cpus = kDefaultCpus;
  int64_t memory_mb = kDefaultMemoryMb;
  int64_t storage_mb = kDefaultStorageMb;
  int64_t gpus = 0;
  bool allow_internet = true;  // Harbor's default
  double build_timeout_sec = kDefaultTimeoutSec;
};

struct AgentSettings {
  double timeout_sec = kDefaultTimeoutSec;
  std::string user;  // empty: the image's default user
};

enum class VerifierKind {
  kNone,     // the task has no verifier (e.g. rollouts collected for SFT only)
  kHarbor,   // tests_dir is copied to /tests, `/tests/test.sh` writes /logs/verifier/reward.txt
  kCommand,  // `command` runs in the sandbox; exit status 0 is reward 1
  kFiles,    // every `expect` entry must hold in the sandbox's file system
  kJudge,    // a model grades the rollout against `rubric`
};

std::string_view VerifierKindName(VerifierKind kind);

// One check of a "files" verifier: the file at `path` exists, and if set,
// its content equals / contains the given text.
struct FileExpectation {
  std::string path;  // absolute, inside the sandbox
  std::optional<std::string> equals;
  std::optional<std::string> contains;
};

struct Verifier {
  VerifierKind kind = VerifierKind::kNone;
  double timeout_sec = kDefaultTimeoutSec;
  std::map<std::string, std::string> env;
  std::string user;
  // harbor, command: leave the agent's processes running while the verifier
  // runs (a task whose test checks a server the agent started). Off: every
  // process the agent left is stopped first (verify/hardening.h).
  bool keep_processes = false;
  std::string tests_dir;                // harbor: absolute host path
  std::string command;                  // command: run by /bin/sh -c
  std::vector<FileExpectation> expect;  // files
  std::string rubric;                   // judge
  std::string model;                    // judge; empty: the verifier's default
  std::vector<std::string> files;       // judge: sandbox files shown to the judge
};

// A reference solution: either a host directory holding solve.sh (copied to
// /solution and run there) or an inline shell script.
struct Solution {
  std::string dir;
  std::string script;
  std::map<std::string, std::string> env;
};

struct Task {
  std::string id;
  std::string instruction;
  Environment environment;
  AgentSettings agent;
  Verifier verifier;
  std::optional<Solution> solution;
  std::string harness;            // default harness; empty: the launcher decides
  Json metadata = Json::object(); // free-form
  std::string source;             // task directory, or "file:line" of a JSONL task
  Json extra = Json::object();    // the object as read; carries unknown fields

  // The canonical record: `extra` with every known field set from the typed
  // fields, defaults filled in.
  Json ToJson() const;
};

// Validates one task object and fills in defaults. Relative paths
// (environment.build_context, verifier.tests_dir, solution.dir) resolve
// against base_dir and must exist. `source` is used when the object has no
// "source" of its own. Errors name the field: "environment.cpus: expected a
// number, got string".
Result<Task> TaskFromJson(const Json& object, const std::string& base_dir,
                          const std::string& source);

// Just the task object's "verifier" (kind kNone when it has none), checked
// the same way; forge-verify reads task records with it.
Result<Verifier> VerifierFromJson(const Json& object, const std::string& base_dir);

}  // namespace forge::tasks
