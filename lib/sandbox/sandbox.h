// One interface, three backends (local process, Docker Engine API,
// Kubernetes API). forge-launch creates a sandbox per rollout and may hold it
// after the harness exits; forge-verify attaches to the held sandbox by its
// handle, runs the verifier in it and releases it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"
#include "base/status.h"
#include "base/stop_token.h"
#include "sandbox/pod.h"

namespace forge::sandbox {

// The sandbox backends, named as --backend and a sandbox handle name them.
enum class BackendKind { kLocal, kDocker, kK8s };
inline constexpr EnumNames<BackendKind, 3> kBackendNames = {
    {{BackendKind::kLocal, "local"}, {BackendKind::kDocker, "docker"}, {BackendKind::kK8s, "k8s"}}};
constexpr std::string_view BackendName(BackendKind kind) { return NameOf(kBackendNames, kind); }
// nullopt for a name no backend has.
constexpr std::optional<BackendKind> BackendKindOf(std::string_view name) { return ValueOf(kBackendNames, name); }

struct Limits {
  double cpus = 4.0;
  int64_t memory_bytes = int64_t{4} << 30;  // no swap beyond this
  int64_t pids = 4096;
};

enum class NetworkPolicy {
  kNone,      // no network at all
  kLoopback,  // the sandbox's own loopback only
  kHost,      // the host's network namespace: reaches a proxy on 127.0.0.1
  // The sandbox's own loopback, where a relay the launcher starts before the
  // harness reaches the proxy (launch/network.h). Docker: NetworkMode none;
  // local: a new network namespace with only lo up.
  kProxyOnly,
  // A namespace of the sandbox's own with egress (a compose pod that may
  // reach the internet: its services' ports are its own). Docker: the
  // engine's bridge, or none on an engine without one (then only the relay
  // reaches out); the proxy, if any, through the relay as for kProxyOnly.
  kOwn,
};

// The exit status of a kProxyOnly harness command whose network setup failed
// (its relay, or the local backend's namespace) with a "forge-relay:" line
// on stderr saying why; the harness itself did not run.
inline constexpr int kNetworkSetupExit = 197;

// A host directory the sandbox sees at sandbox_path, read-only unless said
// otherwise: how tools installed on the host (the npm harnesses) reach a
// container without installing anything from the network at rollout time.
// The docker backend binds it; the local backend runs on the host's file
// system already and binds it only under bubblewrap (where /tmp is private).
struct Mount {
  std::string host_path;     // absolute
  std::string sandbox_path;  // absolute
  bool read_only = true;
};

struct Spec {
  std::string run_id;      // every object is labelled with it, for gc
  std::string rollout_id;  // labelled too
  std::string image;       // image to start from
  std::string build_context;  // directory with a Dockerfile to build instead, if set
  double build_timeout_seconds = 3600;  // a build that takes longer is abandoned
  Limits limits;
  NetworkPolicy network = NetworkPolicy::kNone;
  std::map<std::string, std::string> labels;  // extra labels
  std::map<std::string, std::string> env;
  std::string workdir = "/work";
  std::string user;  // empty: the image's default
  std::vector<Mount> mounts;
  // forge-box on the host (sandbox/box.h): the docker backend binds it
  // read-only at kBoxSandboxPath and makes it PID 1's keep-alive, so a held
  // sandbox runs no program of its own to stay alive. Empty: a shell loop
  // (`sleep` from the image) keeps it alive, as before.
  std::string box_binary;
  // Capabilities: Docker's default set (what `docker run` and Harbor give:
  // root may chown and apt-get may drop to _apt), always with
  // no-new-privileges; true drops them all (forge-launch --cap-drop-all).
  bool drop_all_capabilities = false;
  // GPUs the sandbox gets (a device request); the launcher refuses a task
  // needing more than the backend has rather than run it without.
  int64_t gpus = 0;
  // Server-side bound on the sandbox's whole life, so nothing leaks if forge dies.
  int64_t lifetime_seconds = 6 * 3600;
  // Services that run beside the main container, sharing its network (pod.h).
  std::shared_ptr<const Pod> pod;
};

// Names a sandbox across processes: written into rollout records and the
// store so that forge-verify can attach to what forge-launch held.
struct Handle {
  std::string backend;  // BackendName's: "local", "docker", "k8s" (or a record's unknown name)
  std::string id;       // container id, pod name, or directory
  nlohmann::json ToJson() const { return {{"backend", backend}, {"id", id}}; }
  bool Is(BackendKind kind) const { return backend == BackendName(kind); }
};

struct ExecRequest {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string workdir;  // empty: the sandbox's workdir
  std::string user;     // empty: the sandbox's user
  std::string stdin_data;
  double timeout_seconds = 0;          // 0: none
  size_t max_output_bytes = 1 << 20;   // per stream; the rest is dropped and flagged
  // When set and a stop is requested, the command is killed as on a timeout
  // and Exec returns Cancelled: how SIGINT reaches a harness that is running.
  const StopToken* cancel = nullptr;
  // > 0 (k8s): stdin stays open after stdin_data, and one byte more is sent
  // on it every this many seconds while the command runs: forge-box verify
  // --heartbeat ends the verifier once they stop (verify/client_watch.h).
  double stdin_heartbeat_seconds = 0;
  // Runs even once a stop is requested: a cleanup after a stopped command.
  bool after_stop = false;
};

struct ExecResult {
  int exit_code = -1;
  bool timed_out = false;
  bool out_of_memory = false;
  std::string stdout_data;
  std::string stderr_data;
  bool truncated = false;
  double seconds = 0;
};

// A rollout run the way `docker run --rm` runs: files are put in place, the
// command is the sandbox's own process (under the deadline, and under the
// sandbox's lifetime even if forge dies), and the sandbox is gone when RunOnce
// returns — or, when it is held for the verifier, stays with the sandbox's own
// process keeping it alive. Fewer engine round trips than Create + CopyIn +
// Exec (+ Release).
struct OneShot {
  // Host files or trees copied in before the command starts, as CopyIn does:
  // (host path, sandbox directory).
  std::vector<std::pair<std::string, std::string>> copies;
  // Files written by content just before the command starts: (sandbox path,
  // content). They may hold the rollout's secret, so they never appear in the
  // sandbox's configuration; neither does exec.env.
  std::vector<std::pair<std::string, std::string>> files;
  ExecRequest exec;  // argv, env, deadline, output cap, cancel
  // Told "create", "setup", "agent", "release" as each phase begins.
  std::function<void(const std::string& phase)> on_phase;
};

class Sandbox {
 public:
  virtual ~Sandbox() = default;
  virtual const Handle& handle() const = 0;
  virtual Result<ExecResult> Exec(const ExecRequest& request) = 0;
  // Whether Exec honours ExecRequest::user (a pod's exec runs as its user).
  virtual bool ExecsAsAnyUser() const { return true; }
  // Copies a host file or directory tree into the sandbox under dest_dir
  // (created if missing): a file lands as dest_dir/<its name>, a directory's
  // contents land in dest_dir itself.
  virtual Status CopyIn(const std::string& host_path, const std::string& dest_dir) = 0;
  // Reads one file from the sandbox; NotFound if it does not exist.
  virtual Result<std::string> ReadFile(const std::string& path, size_t max_bytes) = 0;
  // Removes the sandbox and everything it holds.
  virtual Status Release() = 0;
  // forge-box is mounted at kBoxSandboxPath (sandbox/box.h): forge's steps
  // run it rather than anything of the sandbox's.
  virtual bool has_box() const { return false; }
  // Each Exec is a request through a remote API server (a pod's exec): with
  // has_box(), forge's work of several steps there (a verification) goes as
  // one forge-box stream.
  virtual bool exec_is_request() const { return false; }
};

// What an image says about how to run it (Docker's image Config), so a
// task runs where and as its image means: empty fields are unknown or unset.
struct ImageConfig {
  std::string workdir;
  std::string user;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::optional<Healthcheck> healthcheck;  // the image's HEALTHCHECK, unless NONE
  bool pulled = false;  // PrepareImage pulled it for this run (gc --images removes it)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  std::string name() const { return std::string(BackendName(kind())); }
  // Makes spec's image available (builds spec.build_context, pulls a missing
  // image) and says what its configuration is. Afterwards spec->image names
  // it and spec->build_context is empty. Backends that cannot look inside an
  // image (local, k8s) leave spec alone and return an empty ImageConfig.
  // on_progress is told how a long step goes ("pull 12.0/40.1 MB").
  using ProgressText = std::function<void(const std::string&)>;
  virtual Result<ImageConfig> PrepareImage(Spec* spec, const ProgressText& on_progress) {
    (void)spec, (void)on_progress;
    return ImageConfig{};
  }
  // GPUs the backend can hand out; -1 when it cannot tell (k8s: the
  // scheduler decides).
  virtual int AvailableGpus() { return 0; }
  // Whether a sandbox on NetworkPolicy::kOwn gets egress from the engine
  // itself (Docker's bridge); else the launcher gives it its own.
  virtual bool OwnNetworkHasEgress() { return false; }
  virtual Result<std::unique_ptr<Sandbox>> Create(const Spec& spec) = 0;
  // Whether RunOnce is available; callers fall back to Create + Exec.
  virtual bool CanRunOnce() const { return false; }
  // Runs job in a new sandbox made from spec and removes it, or, when hold
  // is set, leaves it running and hands it over there (a deadline kill keeps
  // it too, as Exec's does; a cancel removes it). CannotCreate when the files
  // could not be written (e.g. the image's user may not write there):
  // nothing ran, so the caller may take the Create + Exec path.
  virtual Result<ExecResult> RunOnce(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold) {
    (void)spec, (void)job, (void)hold;
    return Status::Internal(name() + " backend cannot run a one-shot sandbox");
  }
  // RunOnce with no thread waiting while the sandbox runs: its steps go to
  // post (the caller's pool), its waits are parked as state, and done gets
  // what RunOnce would return, once, from one of those steps (or inline,
  // before RunOnceParked returns). spec, job and *hold must outlive done's
  // call. The default, for backends that cannot park, is RunOnce itself.
  using Post = std::function<void(std::function<void()>)>;
  using RunDone = std::function<void(Result<ExecResult>)>;
  virtual bool ParksRunOnce() const { return false; }
  virtual void RunOnceParked(const Spec& spec, const OneShot& job, std::unique_ptr<Sandbox>* hold, const Post& post,
                             RunDone done) {
    (void)post;
    done(RunOnce(spec, job, hold));
  }
  // Reattaches to a sandbox another process created and held.
  virtual Result<std::unique_ptr<Sandbox>> Attach(const Handle& handle) = 0;
  // Removes everything labelled with run_id (all runs when empty) and, when
  // older_than_seconds > 0, only what is older. Returns how many were removed.
  virtual Result<int> Collect(const std::string& run_id, int64_t older_than_seconds) = 0;
  // Removes the images run_id built, and those named in pulled (what
  // PrepareImage pulled for it); one still in use by a sandbox stays.
  // Returns how many went.
  virtual Result<int> CollectImages(const std::string& run_id, const std::vector<std::string>& pulled) {
    (void)run_id, (void)pulled;
    return 0;
  }
};

}  // namespace forge::sandbox
