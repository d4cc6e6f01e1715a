// The local backend: a rollout is a directory and a process group on this
// machine. Not isolation — the harness sees the host's file system and
// network — but it needs no engine, starts in a millisecond, and runs
// harnesses that cannot live in a container image.
//
// Each sandbox is root/<run>/<rollout>/ with a `.forge-sandbox.json` naming
// its run and creation time (what gc reads) and a `fs/` tree: sandbox paths
// are rooted there, so "/work/x" inside is fs/work/x outside. Commands run
// with cwd fs/<workdir>, in their own process group, under RLIMIT_AS (the
// memory limit), RLIMIT_CPU (cpus × timeout, a CPU-time budget) and
// RLIMIT_NPROC (the pids limit; ignored by the kernel for root). A deadline
// kills the whole group. NetworkPolicy::kProxyOnly alone changes the
// network: commands run in a network namespace of their own with only lo
// (root, or unprivileged user namespaces); every other policy is the host's.
#pragma once

#include <string>

#include "sandbox/sandbox.h"

namespace forge::sandbox::local {

class LocalBackend : public Backend {
 public:
  // root empty: $FORGE_LOCAL_ROOT, else $TMPDIR/forge-local (TMPDIR default /tmp).
  explicit LocalBackend(std::string root = "");

  std::string name() const override { return "local"; }
  Result<std::unique_ptr<Sandbox>> Create(const Spec& spec) override;
  Result<std::unique_ptr<Sandbox>> Attach(const Handle& handle) override;
  Result<int> Collect(const std::string& run_id, int64_t older_than_seconds) override;

  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

}  // namespace forge::sandbox::local
