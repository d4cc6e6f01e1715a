// The pure half of one attempt: what its sandbox is and what runs in it,
// built from the task, the harness profile and the run's options. Nothing
// here touches an engine or the store (the one host file an attempt may
// need, an inline solution script, goes through a writer the caller
// gives), so unit tests call each builder directly; Launcher::TryOnce
// (launcher.cpp) performs the effects in order.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "base/status.h"
#include "launch/harness.h"
#include "launch/launcher.h"
#include "launch/task_input.h"
#include "net/relay.h"
#include "records/jsonl.h"
#include "sandbox/sandbox.h"

namespace forge::launch {

struct Attempt {
  const LaunchOptions& options;
  const TaskSpec& task;
  const HarnessProfile& profile;
  sandbox::BackendKind backend;
  std::string rollout_id;
  int number = 0;       // the attempt's number
  std::string secret;   // the rollout's bearer token
  // forge-box is at sandbox::kBoxSandboxPath (docker's mount; a supervised
  // k8s pod's init container): the harness starts under forge-box mark.
  bool box = false;
};

// Where host pieces are: the installed harnesses, forge-relay, and the host
// relay's socket directory (empty when the run is not proxy-only).
struct HostPaths {
  std::string harness_install_dir;
  std::string relay_binary;
  std::string relay_dir;
  std::string box_binary;  // forge-box (sandbox/box.h), mounted into every docker sandbox
  bool egress = false;  // the relay's directory has egress.sock (net/egress_proxy.h)
};

// The network a's sandbox gets (launch/network.h's NetworkFor; a compose
// pod on docker gets a namespace of its own); the same from a task's facts.
std::string TaskNetwork(const LaunchOptions& options, const TaskSpec& task, sandbox::BackendKind backend);
std::string TaskNetwork(const LaunchOptions& options, const TaskFacts& task, sandbox::BackendKind backend);

// The sandbox before its image is known: limits, network, labels, user,
// the task's environment and its pod, their templates resolved from ours
// (BadConfig for a pod on the local backend).
Result<sandbox::Spec> SandboxSpec(const Attempt& a);

// The harness's deadline and the sandbox's server-side lifetime.
double AgentTimeout(const Attempt& a);

// Whether the harnesses are bind-mounted (a docker sandbox whose profile
// runs from {harnesses}).
bool MountsHarnesses(const Attempt& a);

// Adds the read-only host mounts (the harnesses; forge-box on docker;
// forge-relay and its socket for proxy-only) to spec. Returns where the sandbox finds the relay and
// its socket (both empty unless proxy-only).
struct RelayPaths {
  std::string relay, socket;
};
RelayPaths AddHostMounts(const Attempt& a, const HostPaths& host, sandbox::Spec& spec);

// A compose pod in a namespace of its own ("own") that the engine gives no
// egress: forge-relay as the pod's first sidecar (the main image, the
// binary and the host relay's directory mounted read-only) makes
// 127.0.0.1:kEgressPort the host's HTTP forward proxy, and main and every
// service get HTTPS_PROXY (both spellings) pointing at it, with NO_PROXY
// for loopback and the pod's service names. Call once spec.image
// is known; nothing when host.egress is false or the task is not such a pod.
void AddEgress(const Attempt& a, const HostPaths& host, sandbox::Spec& spec);

// The profile's placeholders ({proxy}, {secret}, {workdir}, ...). A local
// sandbox's paths start with "{root}", filled once the sandbox exists.
std::map<std::string, std::string> Placeholders(const Attempt& a, const HostPaths& host, const std::string& workdir,
                                                const std::string& mcp_servers);

// What goes into the sandbox before the harness: host trees (task files,
// profile helpers, the oracle's solution, skills) and files by content
// (the instruction first, then the profile's config files).
using WriteScratch = std::function<Result<std::string>(const std::string& name, const std::string& content)>;
Status AddCopies(const Attempt& a, const std::string& workdir, std::map<std::string, std::string>& vars,
                 const WriteScratch& write, sandbox::OneShot& plan);

// What tells that the environment's own services are up, waited on in the
// sandbox before the harness starts: the task's [environment.healthcheck],
// else its compose file's main.healthcheck, else the image's HEALTHCHECK;
// none when it gives none.
std::optional<tasks::Healthcheck> Readiness(const TaskSpec& task, const sandbox::ImageConfig& image);

// The harness's command line and environment, wrapped as the task needs
// (readiness, relay, display), under its deadline. Where the readiness
// check has passed (the entrypoint has run, the services are up, the check
// answers) and the next step is the harness, the environment is ready: that
// moment is the wrapper's `exec "$@"` (launch/healthcheck.h), the one point
// in the sandbox between the environment's start and the agent's.
// On docker forge-box mark runs just before the harness, inside every other
// wrapper: the moment it says is when the agent begins.
Result<sandbox::ExecRequest> HarnessExec(const Attempt& a, const std::map<std::string, std::string>& vars,
                                         const RelayPaths& relay, const net::Endpoint& proxy_endpoint,
                                         const std::optional<sandbox::Display>& display,
                                         const std::optional<tasks::Healthcheck>& ready);

// Reads what the harness's run says into record (exit code, logs, outcome,
// and forge-box mark's "baseline": the environment as the harness found it).
// A wrapper that failed before the harness ran (the relay, the readiness check,
// the display) is the environment's failure: that Status, the harness's
// outcome left unset. `where` names the image or host, for a missing Xvfb.
Status ReadHarnessRun(const Attempt& a, const sandbox::ExecResult& ran, const std::optional<sandbox::Display>& display,
                      const std::string& where, int64_t memory_bytes, records::Json& record);

}  // namespace forge::launch
