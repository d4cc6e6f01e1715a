#include "launch/attempt.h"

#include <filesystem>

#include <fmt/format.h>

#include "launch/healthcheck.h"
#include "launch/network.h"
#include "launch/services.h"
#include "sandbox/box.h"
#include "sandbox/one_shot_script.h"
#include "tasks/env_template.h"

namespace forge::launch {
namespace {

namespace fs = std::filesystem;

std::string Tail(const std::string& text, size_t max) {
  return text.size() <= max ? text : text.substr(text.size() - max);
}

// The harness reaches the proxy through the relay (on k8s, through the
// proxy's Service, under a NetworkPolicy).
bool ProxyOnly(const Attempt& a) {
  return a.backend != sandbox::BackendKind::kK8s &&
         RelaysProxy(TaskNetwork(a.options, a.task, a.backend), a.options.proxy);
}

// The line a wrapper wrote to stderr, from its tag to the end of the line.
std::optional<std::string> WrapperLine(const std::string& stderr_data, const std::string& tag) {
  const size_t at = stderr_data.find(tag);
  if (at == std::string::npos) return std::nullopt;
  std::string line = stderr_data.substr(at);
  return line.substr(0, line.find('\n'));
}

}  // namespace

std::string TaskNetwork(const LaunchOptions& options, const TaskFacts& task, sandbox::BackendKind backend) {
  return NetworkFor(options.network, options.proxy, task.allow_internet,
                    task.has_pod && backend == sandbox::BackendKind::kDocker);
}

std::string TaskNetwork(const LaunchOptions& options, const TaskSpec& task, sandbox::BackendKind backend) {
  return NetworkFor(options.network, options.proxy, task.allow_internet,
                    task.pod && backend == sandbox::BackendKind::kDocker);
}

Result<sandbox::Spec> SandboxSpec(const Attempt& a) {
  const TaskSpec& task = a.task;
  const LaunchOptions& options = a.options;
  sandbox::Spec spec;
  spec.run_id = options.run_id;
  spec.rollout_id = a.rollout_id;
  spec.image = task.image.empty() && task.build_context.empty() ? options.image : task.image;
  spec.build_context = task.image.empty() ? task.build_context : "";
  spec.limits.cpus = task.cpus.value_or(options.cpus);
  spec.limits.memory_bytes = task.memory_bytes.value_or(options.memory_bytes);
  spec.limits.pids = task.pids.value_or(options.pids);
  spec.build_timeout_seconds = task.build_timeout_seconds;
  spec.drop_all_capabilities = options.drop_all_capabilities;
  spec.gpus = task.gpus;
  auto policy = ParseNetwork(TaskNetwork(options, task, a.backend));
  if (!policy.ok()) return policy.status();
  spec.network = *policy;
  spec.labels = {{"forge.task", task.id.substr(0, 63)}, {"forge.attempt", std::to_string(a.number)}};
  spec.user = task.user.empty() ? options.user : task.user;
  // The task's environment, its templates resolved from ours (as Harbor does).
  auto task_env = tasks::ResolveEnvTemplates(task.env, "environment.env", tasks::HostEnvLookup(*options.env));
  if (!task_env.ok()) return task_env.status().Prefixed(task.id);
  spec.env = std::move(*task_env);
  if (task.pod) {
    if (a.backend == sandbox::BackendKind::kLocal) {
      return Status::BadConfig("task " + task.id + " has services (a compose pod); the local backend runs no "
                               "containers: use --backend docker or k8s");
    }
    // The compose file's environments too, main's over the task's.
    auto pod = ResolvePod(*task.pod, task.pod_env, tasks::HostEnvLookup(*options.env), &spec.env);
    if (!pod.ok()) return pod.status().Prefixed(task.id);
    spec.pod = *pod;
  }
  spec.lifetime_seconds = static_cast<int64_t>(AgentTimeout(a)) + 600 + (options.hold ? options.hold_seconds : 0);
  return spec;
}

double AgentTimeout(const Attempt& a) {
  return a.task.agent_timeout_seconds > 0 ? a.task.agent_timeout_seconds : a.options.agent_timeout_seconds;
}

bool MountsHarnesses(const Attempt& a) {
  return a.backend == sandbox::BackendKind::kDocker && UsesPlaceholder(a.profile, "harnesses");
}

RelayPaths AddHostMounts(const Attempt& a, const HostPaths& host, sandbox::Spec& spec) {
  // The real harnesses stay installed on the host; a container sees them
  // read-only at a fixed path, so nothing is fetched at rollout time.
  if (MountsHarnesses(a)) spec.mounts.push_back({host.harness_install_dir, a.options.harness_mount, true});
  if (a.backend == sandbox::BackendKind::kDocker) spec.box_binary = host.box_binary;
  RelayPaths relay;
  if (!ProxyOnly(a)) return relay;
  // proxy-only: where the harness's wrapper finds forge-relay and the host
  // relay's socket. The local backend runs on the host's file system.
  if (a.backend == sandbox::BackendKind::kDocker) {
    // A read-only socket directory still lets the sandbox connect, and
    // nothing in it can replace the socket.
    spec.mounts.push_back({host.relay_binary, kRelaySandboxPath, true});
    spec.mounts.push_back({host.relay_dir, kRelaySocketDir, true});
    relay.relay = kRelaySandboxPath;
    relay.socket = std::string(kRelaySocketDir) + "/" + kRelaySocketName;
  } else {
    relay.relay = host.relay_binary;
    relay.socket = host.relay_dir + "/" + kRelaySocketName;
    // Under bubblewrap /tmp is the sandbox's own: the socket's directory and
    // the relay binary (both may live under the host's /tmp) are bound in at
    // their host paths.
    spec.mounts.push_back({host.relay_dir, host.relay_dir, true});
    spec.mounts.push_back({relay.relay, relay.relay, true});
  }
  return relay;
}

void AddEgress(const Attempt& a, const HostPaths& host, sandbox::Spec& spec) {
  if (!host.egress || !spec.pod || TaskNetwork(a.options, a.task, a.backend) != "own") return;
  auto pod = std::make_shared<sandbox::Pod>(*spec.pod);
  sandbox::PodService relay;
  relay.name = kEgressService;
  relay.image = spec.image;
  relay.entrypoint = std::vector<std::string>{kRelaySandboxPath};
  relay.command = std::vector<std::string>{"127.0.0.1:" + std::to_string(kEgressPort),
                                           "unix:" + std::string(kRelaySocketDir) + "/" + kEgressSocketName};
  relay.mounts = {{"", host.relay_binary, kRelaySandboxPath, true}, {"", host.relay_dir, kRelaySocketDir, true}};
  std::string no_proxy = "localhost,127.0.0.1,::1";
  for (const auto& service : pod->services) no_proxy += "," + service.name;
  const std::string url = "http://127.0.0.1:" + std::to_string(kEgressPort);
  // HTTPS only: minimal clients (busybox wget) ignore NO_PROXY, and an
  // http_proxy would send the pod's own http://localhost and http://service
  // calls (healthchecks, tests) to the host.
  const std::map<std::string, std::string> proxy_env = {{"HTTPS_PROXY", url}, {"https_proxy", url},
                                                        {"NO_PROXY", no_proxy}, {"no_proxy", no_proxy}};
  for (const auto& [k, v] : proxy_env) {
    spec.env.emplace(k, v);  // the task's own setting wins
    for (auto& service : pod->services) service.env.emplace(k, v);
  }
  // First: the services may reach out as they start.
  pod->services.insert(pod->services.begin(), std::move(relay));
  spec.pod = std::move(pod);
}

std::map<std::string, std::string> Placeholders(const Attempt& a, const HostPaths& host, const std::string& workdir,
                                                const std::string& mcp_servers) {
  const std::string root = a.backend == sandbox::BackendKind::kLocal ? "{root}" : "";
  const LaunchOptions& options = a.options;
  return {
      {"proxy", options.proxy},
      {"secret", a.secret},
      {"model", options.model.empty() ? a.profile.default_model : options.model},
      {"instruction", a.task.instruction},
      {"instruction_file", root + "/forge/instruction.md"},
      {"workdir", root + workdir},
      {"root", root},
      // Containers see it at harness_mount: docker's bind mount, the k8s image's harness layer.
      {"harnesses", a.backend == sandbox::BackendKind::kLocal ? host.harness_install_dir : options.harness_mount},
      {"rollout_id", a.rollout_id},
      {"run_id", options.run_id},
      {"task_id", a.task.id},
      {"command", a.task.command.empty() ? options.command : a.task.command},
      {"mcp_servers", mcp_servers},
  };
}

Status AddCopies(const Attempt& a, const std::string& workdir, std::map<std::string, std::string>& vars,
                 const WriteScratch& write, sandbox::OneShot& plan) {
  const TaskSpec& task = a.task;
  const HarnessProfile& profile = a.profile;
  if (!task.files_dir.empty()) plan.copies.emplace_back(task.files_dir, workdir);
  plan.files.emplace_back("/forge/instruction.md", task.instruction);
  if (!profile.solution_dir.empty()) {
    // Only the oracle sees the solution: it checks that the task is solvable.
    if (!task.solution_dir.empty()) {
      plan.copies.emplace_back(task.solution_dir, profile.solution_dir);
    } else if (!task.solution_script.empty()) {
      auto script = write("solve.sh", task.solution_script);
      if (!script.ok()) return script.status();
      plan.copies.emplace_back(*script, profile.solution_dir);
    } else {
      return Status::InvalidData("task " + task.id + " has no solution for the " + profile.name + " harness");
    }
    vars["solution_dir"] = vars["root"] + profile.solution_dir;
  }
  for (const auto& [dest_dir, source] : profile.files) {
    plan.copies.emplace_back((fs::path(profile.source_dir) / source).string(), dest_dir);
  }
  for (const std::string* skills : {&a.options.skills_dir, &task.skills_dir}) {
    if (skills->empty() || profile.skills_dir.empty()) continue;
    auto folders = SkillFolders(*skills);
    if (!folders.ok()) return folders.status();
    for (const auto& folder : *folders) {
      plan.copies.emplace_back(folder, profile.skills_dir + "/" + fs::path(folder).filename().string());
    }
  }
  // A config file's path is where CopyIn puts it, a sandbox path, even on the
  // local backend whose {root} makes the harness's env and argv host paths.
  std::map<std::string, std::string> sandbox_vars = vars;
  sandbox_vars["root"] = "";
  sandbox_vars["workdir"] = workdir;
  sandbox_vars["instruction_file"] = "/forge/instruction.md";
  for (const auto& [path, content] : profile.config_files) {
    plan.files.emplace_back(FillPlaceholders(path, sandbox_vars), FillPlaceholders(content, vars));
  }
  return Status::Ok();
}

std::optional<tasks::Healthcheck> Readiness(const TaskSpec& task, const sandbox::ImageConfig& image) {
  if (task.healthcheck) return task.healthcheck;
  const std::optional<sandbox::Healthcheck>& docker =
      task.pod && task.pod->main_healthcheck ? task.pod->main_healthcheck : image.healthcheck;
  if (!docker) return std::nullopt;
  tasks::Healthcheck check;
  if (docker->test[0] == "CMD-SHELL") {
    check.command = docker->test[1];
  } else {
    for (size_t i = 1; i < docker->test.size(); ++i) {
      check.command += (i > 1 ? " " : "") + sandbox::ShellQuote(docker->test[i]);
    }
  }
  check.interval_sec = docker->interval_seconds;
  check.start_interval_sec = docker->interval_seconds;
  check.timeout_sec = docker->timeout_seconds;
  check.start_period_sec = docker->start_period_seconds;
  check.retries = docker->retries;
  return check;
}

Result<sandbox::ExecRequest> HarnessExec(const Attempt& a, const std::map<std::string, std::string>& vars,
                                         const RelayPaths& relay, const net::Endpoint& proxy_endpoint,
                                         const std::optional<sandbox::Display>& display,
                                         const std::optional<tasks::Healthcheck>& ready) {
  const TaskSpec& task = a.task;
  const HarnessProfile& profile = a.profile;
  sandbox::ExecRequest exec;
  for (const auto& arg : profile.command) exec.argv.push_back(FillPlaceholders(arg, vars));
  if (!task.sandbox_skills_dir.empty() && !profile.skills_dir.empty()) {
    // Harbor's environment.skills_dir: skill folders the image holds join
    // the harness's skills (beside --skills and the task's "skills").
    const std::string& root = vars.at("root");
    exec.argv = WithSandboxSkills(root + task.sandbox_skills_dir, root + profile.skills_dir, exec.argv);
  }
  for (const auto& [k, v] : profile.env) exec.env[k] = FillPlaceholders(v, vars);
  exec.env["FORGE_ROLLOUT_ID"] = a.rollout_id;
  exec.env["FORGE_RUN_ID"] = a.options.run_id;
  exec.env["FORGE_TASK_ID"] = task.id;
  exec.env["FORGE_ATTEMPT"] = std::to_string(a.number);
  exec.env["FORGE_INSTRUCTION_FILE"] = vars.at("instruction_file");
  if (!profile.solution_dir.empty()) {
    auto solution_env = tasks::ResolveEnvTemplates(task.solution_env, "solution.env", tasks::HostEnvLookup(*a.options.env));
    if (!solution_env.ok()) return solution_env.status().Prefixed(task.id);
    for (const auto& [k, v] : *solution_env) exec.env[k] = v;
  }
  if (a.box) exec.argv = sandbox::WithMark(exec.argv);
  // The environment is ready once this check passes; the harness starts next.
  if (ready) exec.argv = WithHealthcheck(*ready, exec.argv);
  if (!a.options.proxy.empty()) {
    exec.env["FORGE_PROXY_URL"] = a.options.proxy;
    exec.env["FORGE_API_KEY"] = a.secret;
  }
  // The relay listens before the harness starts, at the proxy URL's own address.
  if (!relay.relay.empty()) exec.argv = WithRelay(exec.argv, proxy_endpoint, relay.relay, relay.socket);
  // A GUI task's virtual display: the wrapper starts Xvfb from the sandbox
  // (image or host), exports DISPLAY, runs the harness and stops Xvfb.
  if (display) exec.argv = sandbox::WithDisplay(*display, exec.argv);
  exec.timeout_seconds = AgentTimeout(a);
  exec.max_output_bytes = a.options.log_bytes;
  return exec;
}

Status ReadHarnessRun(const Attempt& a, const sandbox::ExecResult& ran, const std::optional<sandbox::Display>& display,
                      const std::string& where, int64_t memory_bytes, records::Json& record) {
  if (ProxyOnly(a) && ran.exit_code == kRelayStartExit) {
    if (auto line = WrapperLine(ran.stderr_data, "forge-relay: ")) {
      // The harness never ran: a sandbox problem (e.g. an image whose /forge
      // is mounted noexec), not the harness's failure, and not one a retry fixes.
      return Status::BadConfig("--network proxy-only: the sandbox's relay did not start: " + *line);
    }
  }
  if (ran.exit_code == kHealthcheckExit) {
    if (auto line = WrapperLine(ran.stderr_data, "forge-healthcheck: ")) {
      // The environment never became ready: the harness did not run.
      record["error_kind"] = "healthcheck_failed";
      return Status::BadConfig("healthcheck: " + line->substr(19));
    }
  }
  if (auto failed = display ? sandbox::DisplayFailed(ran) : std::nullopt) {
    // The harness never ran. A missing Xvfb is the environment's fault, not
    // the agent's: an infra_error (not counted as an attempt; a rerun after
    // the image is fixed redoes it), but not retried now, since a retry
    // meets the same image. An Xvfb that would not start may be transient.
    record["error_kind"] = failed->missing_xvfb ? "no_xvfb" : "display_failed";
    return failed->missing_xvfb
               ? Status::BadConfig(where + " has no Xvfb for the " + display->ToString() +
                                   " display (install xvfb there; forge installs nothing at rollout time): " +
                                   failed->detail)
               : Status::Unavailable(where + ": " + failed->detail);
  }
  record["exit_code"] = ran.exit_code;
  std::string stderr_data = ran.stderr_data;
  if (auto baseline = sandbox::TakeMark(&stderr_data)) record["baseline"] = baseline->ToJson();
  record["logs"] = {{"stdout", ran.stdout_data}, {"stderr", stderr_data}, {"truncated", ran.truncated}};
  if (ran.out_of_memory) record["oom"] = true;
  if (ran.timed_out) {
    record["outcome"] = "agent_timeout";
    record["error"] = fmt::format("harness killed at its {} s deadline", AgentTimeout(a));
  } else if (ran.exit_code != 0) {
    record["outcome"] = "agent_error";
    record["error"] = ran.out_of_memory
                          ? fmt::format("harness killed: out of memory (limit {} bytes)", memory_bytes)
                          : fmt::format("harness exited with status {}: {}", ran.exit_code, Tail(stderr_data, 300));
  } else {
    record["outcome"] = "ok";
  }
  return Status::Ok();
}

}  // namespace forge::launch
