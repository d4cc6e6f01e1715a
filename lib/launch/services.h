// The task record's "pod" (tasks/compose.h writes it from a Harbor task's
// docker-compose.yaml; a JSONL task may give it directly) as the sandbox's
// Pod: services in an order that starts every dependency first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "launch/task_input.h"
#include "sandbox/pod.h"

namespace forge::launch {

// InvalidData naming the field ("pod.services.api.depends_on: ...") when the
// object is malformed, a service depends on one that is not there, or the
// dependencies form a cycle.
// The services' environments are left empty: their templates go to env
// when it is given.
Result<std::shared_ptr<const sandbox::Pod>> PodFromJson(const records::Json& pod, PodEnv* env = nullptr);

// The pod one sandbox runs: every service's environment resolved from
// lookup (compose's rules); main's goes into main_env. InvalidData naming
// the field for a malformed template.
Result<std::shared_ptr<const sandbox::Pod>> ResolvePod(const sandbox::Pod& pod, const PodEnv& env,
                                                       const tasks::EnvLookup& lookup,
                                                       std::map<std::string, std::string>* main_env);

// argv run after the skill folders under src (a sandbox directory, Harbor's
// environment.skills_dir) are copied into dest (the profile's skills_dir).
// A missing src is no error: the image may not have it.
std::vector<std::string> WithSandboxSkills(const std::string& src, const std::string& dest,
                                           const std::vector<std::string>& argv);

// The task record's "pod", environment.mcp_servers and environment.skills_dir
// into spec; errors name the field.
Status ReadPodAndTools(const records::Json& task, TaskSpec* spec);

}  // namespace forge::launch
