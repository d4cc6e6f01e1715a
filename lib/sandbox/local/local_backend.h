// The local backend: a rollout is a directory and a process group on this
// machine. Not isolation — the harness sees the host's file system and
// network — but it needs no engine, starts in a millisecond, and runs
// harnesses that cannot live in a container image.
//
// Each sandbox is root/<run>/<rollout>/ with a `.forge-sandbox.json` naming
// its run and creation time (what gc reads) and a `fs/` tree: sandbox paths
// are rooted there, so "/work/x" inside is fs/work/x outside. Commands run
// with cwd fs/<workdir>, in their own process group, under RLIMIT_DATA (the
// memory limit), RLIMIT_CPU (cpus × timeout, a CPU-time budget) and
// RLIMIT_NPROC (the pids limit; ignored by the kernel for root). A deadline
// kills the whole group. NetworkPolicy::kProxyOnly alone changes the
// network: commands run in a network namespace of their own with only lo
// (root, or unprivileged user namespaces); every other policy is the host's.
//
// With bubblewrap on, every command runs under `bwrap`: the host's file
// system read-only, the sandbox's directory writable, a private /tmp (the
// sandbox's fs/tmp), /dev and /proc of its own, its own pid, ipc and uts
// namespaces, and for --network none or loopback its own network with only
// lo. Spec mounts are bound read-only at their sandbox paths. Still not a
// container: the harness sees the host's files, but can change none of them
// outside its sandbox.
#pragma once

#include <map>
#include <string>

#include "base/env.h"
#include "sandbox/sandbox.h"

namespace forge::sandbox::local {

class LocalBackend : public Backend {
 public:
  // root empty: $FORGE_LOCAL_ROOT, else $TMPDIR/forge-local (TMPDIR default
  // /tmp), from env, as are the PATH, LANG, TERM and TMPDIR commands get.
  explicit LocalBackend(const Env& env, std::string root = "", bool bubblewrap = false);

  // Runs a trivial command under bwrap with the options sandboxes use: a
  // missing bwrap or a kernel without the namespaces it needs is a
  // configuration error naming the cause, before any rollout starts.
  static Status ProbeBubblewrap();

  BackendKind kind() const override { return BackendKind::kLocal; }
  Result<std::unique_ptr<Sandbox>> Create(const Spec& spec) override;
  Result<std::unique_ptr<Sandbox>> Attach(const Handle& handle) override;
  Result<int> Collect(const std::string& run_id, int64_t older_than_seconds) override;

  const std::string& root() const { return root_; }

 private:
  std::string root_;
  bool bubblewrap_ = false;
  std::map<std::string, std::string> host_env_;  // passed to every command
};

}  // namespace forge::sandbox::local
