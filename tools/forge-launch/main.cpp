// forge-launch: Run each rollout of each task in its own sandbox.
#include <cmath>
#include <cstdlib>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "base/hash.h"
#include "cli/diagnostics.h"
#include "cli/k8s_flags.h"
#include "cli/tool.h"
#include "launch/check.h"
#include "launch/launcher.h"
#include "launch/network.h"
#include "launch/units.h"
#include "records/jsonl.h"
#include "store/store.h"

namespace {

std::string DefaultStore() {
  const char* env = std::getenv("FORGE_STORE");
  return env && *env ? env : "forge.db";
}

std::string NewRunId() {
  return fmt::format("run-{:%Y%m%d-%H%M%S}-{}", fmt::gmtime(std::time(nullptr)), forge::RandomHex(3));
}

}  // namespace

int main(int argc, char** argv) {
  forge::cli::Tool tool("forge-launch", "Run each rollout of each task in its own sandbox.");
  CLI::App& app = tool.app();
  forge::launch::LaunchOptions options;
  std::string backend_name = "docker", store_path = DefaultStore();
  std::string memory = "4g", agent_timeout = "600", hold_ttl = "1h", log_bytes = "64k";

  app.add_option("tasks", options.inputs, "Task JSONL files, Harbor task dirs or datasets; '-' or none reads stdin");
  app.add_option("-n,--attempts", options.attempts, "Rollouts per task")->capture_default_str();
  app.add_option("-j,--jobs", options.jobs, "Rollouts running at once")->capture_default_str();
  app.add_option("--backend", backend_name, "Sandbox backend: local, docker or k8s")->capture_default_str();
  bool bubblewrap = false;
  app.add_flag("--bubblewrap", bubblewrap,
               "local backend: run each command under bwrap (host read-only, private /tmp, own pid/ipc/uts "
               "namespaces; own network for --network none or loopback)");
  app.add_option("--proxy", options.proxy, "Base URL of forge-proxy the harness is pointed at");
  app.add_option("--run-id", options.run_id,
                 "Run id (labels, store, resume); rerun with the same id to resume. Default: new");
  app.add_option("--store", store_path, "SQLite store ($FORGE_STORE)")->capture_default_str();
  app.add_flag("--hold", options.hold, "Keep each sandbox after the harness for forge-verify");
  app.add_option("--harness", options.harness, "Harness profile for tasks naming none")->capture_default_str();
  app.add_option("--command", options.command, "Shell command for the 'command' harness");
  app.add_option("--harness-dir", options.harness_dir, "Directory of harness profiles ($FORGE_HARNESS_DIR)");
  app.add_option("--harness-install-dir", options.harness_install_dir,
                 "Where scripts/install-harnesses.sh put the real harnesses ({harnesses} in profiles)");
  app.add_option("--harness-mount", options.harness_mount,
                 "Where docker sandboxes see that directory, mounted read-only")
      ->capture_default_str();
  app.add_option("--model", options.model, "Model name handed to the harness");
  app.add_option("--image", options.image, "Image for tasks naming none");
  forge::launch::DockerOptions docker;
  app.add_option("--docker-config", docker.config,
                 "Docker config giving registry credentials for pulls and builds: credHelpers, "
                 "credsStore, auths, as the docker CLI reads them "
                 "(default $DOCKER_CONFIG/config.json, else ~/.docker/config.json)");
  app.add_flag("--legacy-builder", docker.legacy_builder,
               "Build task images with the engine's legacy builder instead of BuildKit");
  app.add_option("--network", options.network, forge::launch::kNetworkHelp)
      ->check(CLI::IsMember(forge::launch::NetworkNames()));
  app.add_option("--relay-binary", options.relay_binary,
                 "forge-relay for --network proxy-only (default: next to forge-launch)");
  app.add_option("--agent-timeout", agent_timeout, "Harness deadline unless the task sets one (90s, 10m)")
      ->capture_default_str();
  app.add_option("--cpus", options.cpus, "CPUs per sandbox unless the task sets them")->capture_default_str();
  app.add_option("--memory", memory, "Memory per sandbox, no swap (4g)")->capture_default_str();
  app.add_option("--pids", options.pids, "Process limit per sandbox")->capture_default_str();
  app.add_option("--infra-retries", options.infra_retries, "Retries of an infrastructure failure")
      ->capture_default_str();
  app.add_option("--retry-backoff", options.backoff_seconds,
                 "First infra retry delay in seconds; doubles, capped at 30")->capture_default_str();
  app.add_option("--log-bytes", log_bytes, "Harness output kept per stream")->capture_default_str();
  app.add_option("--hold-ttl", hold_ttl, "Server-side lifetime of a held sandbox after its harness")
      ->capture_default_str();
  app.add_option("--workdir", options.workdir,
                 "Working directory in the sandbox (default: the task's environment.workdir, else the "
                 "image's WORKDIR, else /work)");
  app.add_flag("--cap-drop-all", options.drop_all_capabilities,
               "Drop every capability (default: Docker's default set, as docker run and Harbor give)");
  app.add_option("--user", options.user, "User the harness runs as (default: the image's)");
  app.add_option("--skills", options.skills_dir,
                 "Directory of skill folders (each with a SKILL.md) copied to the harness's skills_dir");
  std::string display;
  app.add_option("--display", display,
                 "Start an Xvfb display WxH[xD] (1280x800x24) before each harness; DISPLAY is exported. "
                 "Xvfb must be in the image (on the host for --backend local)");
  forge::sandbox::k8s::K8sOptions k8s;
  forge::cli::AddK8sFlags(app, k8s);

  CLI::App* gc = app.add_subcommand(
      "gc", "Remove sandboxes left by a run (or by all runs), and killed runs' relay socket dirs");
  std::string gc_run, gc_older;
  bool gc_all = false;
  gc->add_option("--run-id", gc_run, "Only this run's sandboxes");
  gc->add_option("--older-than", gc_older, "Only sandboxes older than this (30m, 6h)");
  gc->add_flag("--all", gc_all, "Every forge sandbox of the backend");
  bool gc_images = false;
  gc->add_flag("--images", gc_images,
               "Also remove the images the run built and those pulled for it (needs --run-id and --store)");

  CLI::App* check = app.add_subcommand(
      "check", "Read the tasks as a run would, build and start nothing: one forge.check/1 record per task "
               "(ok, warned or refused) and a summary; exit 65 if any is refused");
  std::vector<std::string> check_inputs;
  check->add_option("tasks", check_inputs, "Task JSONL files, Harbor task dirs or datasets; '-' or none reads stdin");

  return tool.Run(argc, argv, [&]() -> forge::Status {
    if (*check) {
      if (check_inputs.empty()) check_inputs.push_back("-");
      forge::records::JsonlWriter out;
      forge::launch::CheckSummary summary;
      forge::Status checked = forge::launch::CheckTasks(check_inputs, out, summary);
      forge::cli::Note(fmt::format("checked {} task(s): {} ok, {} warned, {} refused; nothing built or started",
                                   summary.ok + summary.warned + summary.refused, summary.ok, summary.warned,
                                   summary.refused));
      return checked;
    }
    if (*gc) {
      if (gc_run.empty() && gc_older.empty() && !gc_all) {
        return forge::Status::InvalidArgument("gc needs --run-id, --older-than or --all");
      }
      double older = 0;
      if (!gc_older.empty()) {
        auto parsed = forge::launch::ParseDuration(gc_older);
        if (!parsed.ok()) return parsed.status();
        older = *parsed;
      }
      auto backend = forge::launch::MakeBackend(backend_name, k8s);
      if (!backend.ok()) return backend.status();
      auto removed = forge::launch::CollectGarbage(**backend, gc_run, static_cast<int64_t>(older));
      if (!removed.ok()) return removed.status();
      auto relay_dirs = forge::launch::RemoveStaleRelayDirs();
      if (!relay_dirs.ok()) return relay_dirs.status();
      forge::cli::Note(fmt::format("removed {} sandbox(es), {} relay socket dir(s) of killed runs", *removed,
                                   *relay_dirs));
      if (gc_images) {
        if (gc_run.empty()) return forge::Status::InvalidArgument("gc --images needs --run-id");
        auto store = forge::store::Store::Open(store_path);
        if (!store.ok()) return store.status().Prefixed(store_path);
        auto images = forge::launch::CollectImages(**backend, **store, gc_run);
        if (!images.ok()) return images.status();
        forge::cli::Note(fmt::format("removed {} image(s) of run {}", *images, gc_run));
      }
      return forge::Status::Ok();
    }
    auto mem = forge::launch::ParseBytes(memory);
    if (!mem.ok()) return mem.status();
    options.memory_bytes = *mem;
    auto timeout = forge::launch::ParseDuration(agent_timeout);
    if (!timeout.ok()) return timeout.status();
    options.agent_timeout_seconds = *timeout;
    auto ttl = forge::launch::ParseDuration(hold_ttl);
    if (!ttl.ok()) return ttl.status();
    options.hold_seconds = static_cast<int64_t>(*ttl);
    if (!display.empty()) {
      auto parsed = forge::sandbox::ParseDisplay(display);
      if (!parsed.ok()) return parsed.status().Prefixed("--display");
      options.display = *parsed;
    }
    auto logs = forge::launch::ParseBytes(log_bytes);
    if (!logs.ok()) return logs.status();
    options.log_bytes = static_cast<size_t>(*logs);
    if (options.inputs.empty()) options.inputs.push_back("-");
    if (options.run_id.empty()) {
      options.run_id = NewRunId();
      forge::cli::Note("run id " + options.run_id + " (pass --run-id to resume it)");
    }
    while (!options.proxy.empty() && options.proxy.back() == '/') options.proxy.pop_back();
    auto backend = forge::launch::MakeBackend(backend_name, k8s, bubblewrap, docker);
    if (!backend.ok()) return backend.status();
    auto store = forge::store::Store::Open(store_path);
    if (!store.ok()) return store.status().Prefixed(store_path);
    forge::records::JsonlWriter out;
    return forge::launch::Launch(options, **backend, **store, out);
  });
}
