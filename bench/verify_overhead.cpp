// What Harbor-style verification costs per rollout on the local Docker
// engine, next to the baseline of one bare exec round trip in the same
// container: attach, the preparation alone (stop the agent's processes, the
// tamper evidence, /tests and /logs/verifier moved aside), the whole
// verification (preparation + upload tests + run test.sh + read the reward),
// release. Bounded: 10 containers, one verification each.
//
//   bench-verify_overhead [image]   (default forge-busybox:latest)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/terminal_env.h"
#include "sandbox/docker/docker_backend.h"
#include "verify/hardening.h"
#include "verify/verifiers.h"

namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}
double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::string image = argc > 1 ? argv[1] : "forge-busybox:latest";
  const int n = 10;
  namespace fs = std::filesystem;
  fs::path tests = fs::temp_directory_path() / ("forge-bench-verify-" + std::to_string(getpid()));
  fs::create_directories(tests);
  std::ofstream(tests / "test.sh") << "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n";

  forge::cli::TerminalEnv env("bench-verify_overhead");
  forge::sandbox::docker::DockerBackend backend(env);
  if (auto ping = backend.Ping(); !ping.ok()) {
    std::fprintf(stderr, "bench-verify_overhead: %s\n", ping.message().c_str());
    return 69;
  }
  forge::verify::VerifierSpec spec;
  spec.kind = forge::tasks::VerifierKind::kHarbor;
  spec.tests_dir = tests.string();
  spec.timeout_sec = 30;

  std::vector<double> bare, attach, prepare, verify, release;
  int passed = 0;
  for (int i = 0; i < n; ++i) {
    forge::sandbox::Spec s;
    s.run_id = "bench-verify";
    s.rollout_id = "bench-verify-" + std::to_string(getpid()) + "-" + std::to_string(i);
    s.image = image;
    s.lifetime_seconds = 600;
    auto created = backend.Create(s);
    if (!created.ok()) {
      std::fprintf(stderr, "bench-verify_overhead: create: %s\n", created.status().message().c_str());
      return 69;
    }
    forge::sandbox::Handle handle = (*created)->handle();
    created->reset();  // verification attaches like forge-verify does

    auto t = Clock::now();
    auto box = backend.Attach(handle);
    attach.push_back(Ms(t));
    if (!box.ok()) return 69;
    forge::sandbox::ExecRequest req;
    req.argv = {"/bin/sh", "-c", "true"};
    t = Clock::now();
    (void)(*box)->Exec(req);
    bare.push_back(Ms(t));
    forge::verify::PrepareOptions prep;
    prep.clear_harbor_dirs = true;
    prep.script = "#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n";
    t = Clock::now();
    auto prepared = forge::verify::PrepareSandbox(**box, prep);
    prepare.push_back(Ms(t));
    // The evidence taken before stands: the preparation's own moves are
    // changes too, as on a second verification.
    const forge::verify::Json evidence = prepared.ok() ? prepared->tamper : forge::verify::Json::object();
    t = Clock::now();
    auto verdict = forge::verify::RunHarbor(**box, spec, 1.0, nullptr, &evidence);
    verify.push_back(Ms(t));
    if (verdict.outcome == forge::verify::Outcome::kPassed) ++passed;
    t = Clock::now();
    (void)(*box)->Release();
    release.push_back(Ms(t));
  }
  fs::remove_all(tests);
  std::printf("docker, %s, %d rollouts (median ms)\n", image.c_str(), n);
  std::printf("  baseline: one bare exec (sh -c true)          %8.1f\n", Median(bare));
  std::printf("  attach to the held container                 %8.1f\n", Median(attach));
  std::printf("  prepare (stop, evidence, move aside)          %8.1f  (%.1fx the bare exec)\n",
              Median(prepare), Median(prepare) / std::max(0.001, Median(bare)));
  std::printf("  harbor verify (prepare, upload, test.sh, reward) %5.1f  (%.1fx the bare exec)\n",
              Median(verify), Median(verify) / std::max(0.001, Median(bare)));
  std::printf("  release                                       %8.1f\n", Median(release));
  std::printf("  passed %d of %d\n", passed, n);
  return passed == n ? 0 : 1;
}
