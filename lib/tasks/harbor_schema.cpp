#include "tasks/harbor_schema.h"

namespace forge::tasks {
namespace {

constexpr HarborAction kMap = HarborAction::kMap;
constexpr HarborAction kWarn = HarborAction::kWarn;
constexpr HarborAction kRefuse = HarborAction::kRefuse;

// The compose half of issue 34 (compose services as pods, MCP servers,
// skills) is handled outside lib/tasks/harbor.cpp.
constexpr std::string_view kCompose = "lib/tasks/compose.*, lib/launch/services.*";

}  // namespace

std::string_view HarborActionName(HarborAction action) {
  switch (action) {
    case HarborAction::kMap: return "map";
    case HarborAction::kWarn: return "warn-and-carry";
    case HarborAction::kRefuse: return "refuse";
  }
  return "?";
}

const std::vector<HarborField>& HarborSchema() {
  static const std::vector<HarborField> kSchema = {
      {"schema_version", kMap, "", "the format's version: read, not a property of the task"},
      {"version", kMap, "", "older name of schema_version"},
      {"source", kMap, "harbor.source", "the dataset the task came from"},
      {"task.name", kMap, "id", "the task's id (`org/name`); else the directory's name"},
      {"task.version", kMap, "harbor.task.version", "descriptive"},
      {"task.description", kMap, "harbor.task.description", "descriptive"},
      {"task.authors", kMap, "harbor.task.authors", "descriptive"},
      {"task.keywords", kMap, "harbor.task.keywords", "descriptive"},
      {"metadata", kMap, "metadata", "free-form, kept whole"},
      {"steps", kRefuse, "",
       "multi-step tasks: each step has its own instruction, tests and reward gate in one "
       "environment; forge-launch runs one harness per rollout and forge-verify one verifier, "
       "so running a multi-step task as one step would give a wrong reward"},
      {"multi_step_reward_strategy", kRefuse, "", "only meaningful with steps"},
      {"artifacts", kWarn, "harbor.artifacts",
       "files Harbor copies out of the environment after the run; forge does not collect them"},
      {"agent.timeout_sec", kMap, "agent.timeout_sec", "the harness's deadline"},
      {"agent.user", kMap, "agent.user", "the user the harness runs as; else the image's USER"},
      {"agent.setup_timeout_sec", kMap, "harbor.agent.setup_timeout_sec",
       "kept: forge installs nothing at rollout time, so there is no setup phase to bound"},
      {"agent.network_mode", kRefuse, "", "a network policy for the agent phase alone"},
      {"agent.allowed_hosts", kRefuse, "", "a host allowlist; forge has none (use --network proxy-only)"},
      {"verifier.timeout_sec", kMap, "verifier.timeout_sec", "the verifier's deadline"},
      {"verifier.env", kMap, "verifier.env",
       "the verifier's environment; `${VAR}` and `${VAR:-default}` are resolved from the "
       "environment of forge-verify when it runs (a missing variable is an error naming it)"},
      {"verifier.user", kMap, "verifier.user", "the user tests/test.sh runs as"},
      {"verifier.network_mode", kRefuse, "", "a network policy for the verifier phase alone"},
      {"verifier.allowed_hosts", kRefuse, "", "a host allowlist; forge has none"},
      {"verifier.environment_mode", kMap, "",
       "`shared` (the default: tests run in the agent's sandbox) is what forge does; "
       "`separate` is refused"},
      {"verifier.environment", kRefuse, "", "a separate verifier environment"},
      {"verifier.collect", kRefuse, "", "commands run in compose services before verification"},
      {"verifier.continuous", kMap, "harbor.verifier.continuous",
       "kept when `enabled` is false; verification during the agent phase is refused"},
      {"solution.env", kMap, "solution.env",
       "the oracle's environment; templates resolved by forge-launch, as verifier.env"},
      {"environment.docker_image", kMap, "environment.image",
       "a pre-built image, used instead of environment/Dockerfile; pulled when missing"},
      {"environment.build_timeout_sec", kMap, "environment.build_timeout_sec",
       "bound on building environment/Dockerfile"},
      {"environment.os", kMap, "",
       "`linux` is what forge runs; `windows` is refused"},
      {"environment.cpus", kMap, "environment.cpus", "CPU limit (NanoCpus)"},
      {"environment.memory_mb", kMap, "environment.memory_mb", "memory limit, no swap"},
      {"environment.storage_mb", kMap, "environment.storage_mb",
       "recorded; not enforced, as Harbor's docker environment does not enforce it"},
      {"environment.memory", kMap, "environment.memory_mb", "deprecated `\"4G\"` spelling of memory_mb"},
      {"environment.storage", kMap, "environment.storage_mb", "deprecated spelling of storage_mb"},
      {"environment.gpus", kMap, "environment.gpus",
       "a GPU device request; a task needing GPUs on a backend without them is refused, never run without"},
      {"environment.gpu_types", kWarn, "harbor.environment.gpu_types",
       "forge cannot choose a GPU model: the engine gives any"},
      {"environment.tpu", kRefuse, "", "TPU slices"},
      {"environment.allow_internet", kMap, "environment.allow_internet",
       "`false` always wins: no network, or with --proxy only the proxy (proxy-only)"},
      {"environment.network_mode", kMap, "environment.allow_internet",
       "`public` and `no-network` as allow_internet; `allowlist` is refused"},
      {"environment.allowed_hosts", kRefuse, "", "a host allowlist; forge has none"},
      {"environment.env", kMap, "environment.env",
       "the sandbox's environment; templates resolved by forge-launch from its own environment"},
      {"environment.workdir", kMap, "environment.workdir",
       "the harness's working directory; else the image's WORKDIR"},
      {"environment.healthcheck", kMap, "environment.healthcheck",
       "command retried until it passes before the harness starts (Docker HEALTHCHECK semantics)"},
      {"environment.mcp_servers", kMap, "environment.mcp_servers",
       "handed to every harness profile that speaks MCP", kCompose},
      {"environment.skills_dir", kMap, "environment.skills_dir", "joins forge's skills", kCompose},
      {"environment/docker-compose.yaml", kMap, "environment.compose",
       "compose services run as sidecars sharing the sandbox's network, as a pod's containers",
       kCompose},
  };
  return kSchema;
}

const HarborField* FindHarborField(std::string_view key) {
  for (const HarborField& field : HarborSchema()) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

bool IsHarborSection(std::string_view key) {
  return key == "task" || key == "agent" || key == "verifier" || key == "solution" ||
         key == "environment";
}

std::string HarborSchemaMarkdown() {
  std::string out = "| task.toml | action | record field | what forge does |\n|---|---|---|---|\n";
  for (const HarborField& f : HarborSchema()) {
    out += "| `" + std::string(f.key) + "` | " + std::string(HarborActionName(f.action)) + " | " +
           (f.record.empty() ? "—" : "`" + std::string(f.record) + "`") + " | " + std::string(f.note) +
           (f.handler.empty() ? "" : " (" + std::string(f.handler) + ")") + " |\n";
  }
  return out;
}

}  // namespace forge::tasks
