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
// depends_on, environment, volumes and expose. Anything else (ports,
// networks, cap_add, deploy, ...) is refused with the file, line and key,
// never silently dropped. ${VAR} and ${VAR:-default} are interpolated as
// compose does, from Harbor's compose variables and then the host
// environment; a variable that is unset becomes empty, with a warning.
//
// The record ("pod"), with absolute paths:
//   {"compose_file": "/t/environment/docker-compose.yaml",
//    "main": {"depends_on": {"api": "service_healthy"}, "environment": {...},
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

#include <map>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "records/jsonl.h"

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

// "2s", "1m30s", "500ms", "1h" in seconds (compose durations).
Result<double> ParseComposeDuration(const std::string& text);

// A compose command string split as a shell splits words (quotes kept
// together, no expansion).
Result<std::vector<std::string>> SplitComposeCommand(const std::string& text);

}  // namespace forge::tasks
