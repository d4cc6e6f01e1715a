// forge-launch: Run each rollout of each task in its own sandbox.
#include <ctime>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "base/hash.h"
#include "cli/tool.h"
#include "forge-launch/flags.h"
#include "launch/check.h"
#include "launch/network.h"
#include "launch/units.h"
#include "records/jsonl.h"
#include "sandbox/docker/image_pull.h"
#include "store/store.h"

namespace {

using forge::Status;
using forge::tools::launch::Args;

std::string NewRunId() {
  return fmt::format("run-{:%Y%m%d-%H%M%S}-{}", fmt::gmtime(std::time(nullptr)), forge::RandomHex(3));
}

forge::sandbox::BackendKind BackendOf(const Args& a) { return *forge::sandbox::BackendKindOf(a.backend); }

// `forge-launch gc`: a run's (or every run's) sandboxes, killed runs' relay
// directories and, with --images, the run's images.
Status CollectGarbage(Args& a, forge::Env& env) {
  if (a.gc_run.empty() && a.gc_older.empty() && !a.gc_all) {
    return Status::InvalidArgument("gc needs --run-id, --older-than or --all");
  }
  double older = 0;
  if (!a.gc_older.empty()) {
    auto parsed = forge::launch::ParseDuration(a.gc_older);
    if (!parsed.ok()) return parsed.status();
    older = *parsed;
  }
  auto backend = forge::launch::MakeBackend(BackendOf(a), env, a.k8s);
  if (!backend.ok()) return backend.status();
  auto removed = forge::launch::CollectGarbage(**backend, a.gc_run, static_cast<int64_t>(older));
  if (!removed.ok()) return removed.status();
  auto relay_dirs = forge::launch::RemoveStaleRelayDirs(env);
  if (!relay_dirs.ok()) return relay_dirs.status();
  env.Note(fmt::format("removed {} sandbox(es), {} relay socket dir(s) of killed runs", *removed, *relay_dirs));
  if (!a.gc_images) return Status::Ok();
  if (a.gc_run.empty()) return Status::InvalidArgument("gc --images needs --run-id");
  auto store = forge::store::Store::Open(a.store_path);
  if (!store.ok()) return store.status().Prefixed(a.store_path);
  auto images = forge::launch::CollectImages(**backend, **store, a.gc_run);
  if (!images.ok()) return images.status();
  env.Note(fmt::format("removed {} image(s) of run {}", *images, a.gc_run));
  return Status::Ok();
}

// `forge-launch check`: the tasks read as a run would read them, nothing built.
Status CheckTasks(Args& a, forge::Env& env) {
  if (a.check_inputs.empty()) a.check_inputs.push_back("-");
  forge::records::JsonlWriter out;
  forge::launch::CheckSummary summary;
  Status checked = forge::launch::CheckTasks(a.check_inputs, env, out, summary);
  env.Note(fmt::format("checked {} task(s): {} ok, {} warned, {} refused; nothing built or started",
                       summary.ok + summary.warned + summary.refused, summary.ok, summary.warned, summary.refused));
  return checked;
}

// The flags given as text (sizes, durations, the display) into the options.
Status Settle(Args& a) {
  forge::launch::LaunchOptions& o = a.options;
  auto mem = forge::launch::ParseBytes(a.memory);
  if (!mem.ok()) return mem.status();
  o.memory_bytes = *mem;
  auto timeout = forge::launch::ParseDuration(a.agent_timeout);
  if (!timeout.ok()) return timeout.status();
  o.agent_timeout_seconds = *timeout;
  auto ttl = forge::launch::ParseDuration(a.hold_ttl);
  if (!ttl.ok()) return ttl.status();
  o.hold_seconds = static_cast<int64_t>(*ttl);
  if (!a.display.empty()) {
    auto parsed = forge::sandbox::ParseDisplay(a.display);
    if (!parsed.ok()) return parsed.status().Prefixed("--display");
    o.display = *parsed;
  }
  auto logs = forge::launch::ParseBytes(a.log_bytes);
  if (!logs.ok()) return logs.status();
  o.log_bytes = static_cast<size_t>(*logs);
  if (o.inputs.empty()) o.inputs.push_back("-");
  while (!o.proxy.empty() && o.proxy.back() == '/') o.proxy.pop_back();
  return Status::Ok();
}

Status RunRollouts(Args& a, forge::Env& env) {
  FORGE_RETURN_IF_ERROR(Settle(a));
  forge::launch::LaunchOptions& o = a.options;
  o.env = &env;
  if (o.run_id.empty()) {
    o.run_id = NewRunId();
    env.Note("run id " + o.run_id + " (pass --run-id to resume it)");
  }
  auto backend = forge::launch::MakeBackend(BackendOf(a), env, a.k8s, a.bubblewrap, a.docker);
  if (!backend.ok()) return backend.status();
  if (!a.docker.registry.empty() && BackendOf(a) != forge::sandbox::BackendKind::kK8s) {
    return Status::InvalidArgument("--registry is for --backend k8s (docker runs the images it builds in place)");
  }
  auto images = forge::launch::MakeImagePublisher(env, a.docker);
  if (!images.ok()) return images.status();
  o.images = images->get();
  o.docker_config = a.docker.config.empty() ? forge::sandbox::docker::DefaultDockerConfig(env) : a.docker.config;
  auto store = forge::store::Store::Open(a.store_path, {.cache_kib = forge::store::kSmallWriterCacheKiB});
  if (!store.ok()) return store.status().Prefixed(a.store_path);
  forge::records::JsonlWriter out;
  return forge::launch::Launch(o, **backend, **store, out);
}

}  // namespace

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-launch", "Run each rollout of each task in its own sandbox.");
  Args args;
  forge::tools::launch::DefineFlags(tool.app(), args, tool.env());
  return tool.Run(argc, argv, [&] {
    if (*args.check) return CheckTasks(args, tool.env());
    return *args.gc ? CollectGarbage(args, tool.env()) : RunRollouts(args, tool.env());
  });
}
