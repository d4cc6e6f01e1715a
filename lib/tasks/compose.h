// A Harbor task's environment/docker-compose.yaml, read into the task
// record's "pod" object.
//
// Harbor merges the task's compose file on top of its own: service `main` is
// the task's container (built from environment/Dockerfile or [environment]
// docker_image, running `sleep infinity`); every other service is a
// companion (an API server, an MCP server, a simulated user, a desktop).
// forge runs them as a pod: the companions share main's network namespace,
// as a Kubernetes pod's containers do, and every service name resolves to
// 127.0.0.1 in it, so no bridge network is needed.
//
// What the cookbook recipes use is read: image or build (a context
// directory), command, entrypoint, environment, working_dir, user,
// depends_on (conditions service_started, service_healthy,
// service_completed_successfully), healthcheck, volumes (named volumes
// shared between services, and bind mounts of paths under environment/),
// and expose (a no-op: a pod shares every port). For `main` only
// depends_on, environment, volumes, expose and healthcheck (waited on
// before the harness starts). Anything else (ports,
// networks, cap_add, deploy, ...) is refused with the file, line and key,
// never silently dropped. ${VAR} and ${VAR:-default} are interpolated as
// compose does, from Harbor's compose variables and then the host
// environment; a variable that is unset becomes empty, with a warning.
// Except in `environment`: there a host variable stays a template in the
// record (a secret such as ${ANTHROPIC_API_KEY} never reaches a record or
// the store) and is resolved by ResolveComposeEnv when a container is made.
//
// The record ("pod"), with absolute paths:
//   {"compose_file": "/t/environment/docker-compose.yaml",
//    "main": {"depends_on": {"api": "service_healthy"},
//             "environment": {"KEY": "${HOST_VAR:-x}", "BARE": null},
//             "volumes": [{"source": "data", "target": "/data", "read_only": false}]},
//    "services": {"api": {"build": "/t/environment/api" | "image": "x",
//                         "command": [...], "entrypoint": [...], "environment": {...},
//                         "working_dir": "", "user": "", "depends_on": {...},
//                         "healthcheck": {"test": ["CMD", ...] | ["CMD-SHELL", "..."],
//                                         "interval_sec", "timeout_sec", "retries",
//                                         "start_period_sec"},
//                         "volumes": [{"source": "data" | "/abs/host/path", ...}]}},
//    "volumes": ["data"]}
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "records/jsonl.h"
#include "tasks/env_template.h"

namespace forge::tasks {

// The service Harbor's compose template names as the task's own container.
inline constexpr const char* kMainService = "main";

// Reads the compose file at path. vars are the compose variables Harbor
// sets (CONTEXT_DIR, CPUS, MEMORY, ...), looked up before the host's
// variables, which host gives. Errors name the file, line and key:
// "t/environment/docker-compose.yaml:12: services.db.ports: not supported ...".
Result<records::Json> ReadCompose(const std::string& path,
                                  const std::map<std::string, std::string>& vars,
                                  const Env& host, std::vector<std::string>* warnings);

// A compose `environment` as the record keeps it: each value a template in
// compose's syntax (${VAR}, ${VAR:-default}, ${VAR-default}, $VAR; $$ is a
// dollar), or nullopt for a bare KEY, which takes the host's value when it
// is set and is left out when it is not.
using ComposeEnv = std::map<std::string, std::optional<std::string>>;

// Reads a record's compose environment object (strings and nulls).
// InvalidData naming field otherwise.
Result<ComposeEnv> ComposeEnvFromJson(const records::Json& value, const std::string& field);

// The environment a container is given: every template resolved from
// lookup as compose does (an unset variable is empty unless it has a
// default). InvalidData naming field.KEY for a malformed template.
Result<std::map<std::string, std::string>> ResolveComposeEnv(const ComposeEnv& env, const std::string& field,
                                                             const EnvLookup& lookup);

// "2s", "1m30s", "500ms", "1h" in seconds (compose durations).
Result<double> ParseComposeDuration(const std::string& text);

// A compose command string split as a shell splits words (quotes kept
// together, no expansion).
Result<std::vector<std::string>> SplitComposeCommand(const std::string& text);

}  // namespace forge::tasks
