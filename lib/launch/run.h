// One forge-launch run, inside lib/launch: the Launcher, whose stages
// (tasks read, jobs planned, what the cluster needs checked, the rollouts
// run) are launcher.cpp and whose rollouts' steps are rollout.cpp.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/env.h"
#include "base/status.h"
#include "base/work_pool.h"
#include "launch/attempt.h"
#include "launch/harness.h"
#include "launch/launcher.h"
#include "launch/network.h"
#include "launch/task_input.h"
#include "launch/task_list.h"
#include "records/jsonl.h"
#include "sandbox/sandbox.h"
#include "store/store.h"

namespace forge::launch {

using Json = records::Json;
using Clock = std::chrono::steady_clock;

// A rollout to run: a task of the run's TaskList and its attempt number.
struct Job {
  size_t task;
  int attempt;
};

// The most threads a run's steps take where rollouts wait parked: the
// steps block on the API server (create, exec, log, delete), not the CPU.
constexpr int kStepThreads = 64;

class Launcher {
 public:
  Launcher(const LaunchOptions& options, sandbox::Backend& backend, store::Store& store,
           records::JsonlWriter& out)
      : options_(options), env_(*options.env), backend_(backend), store_(store), out_(out), cancel_(&env_.stop()) {}

  Status Run();

 private:
  // Run's stages, in order.
  Status ReadTasks(size_t& bad_tasks);
  Result<std::vector<Job>> PlanJobs();
  Status StartRelay(const std::vector<Job>& jobs);
  Status EnforceNetworks(const std::vector<Job>& jobs);
  Status CheckImages(const std::vector<Job>& jobs);
  Status PullSecret(const std::vector<Job>& jobs);
  int RunJobs(const std::vector<Job>& jobs);
  // A rollout is a chain of steps on pool_ (launcher.cpp, "A rollout's
  // steps"): it holds a thread only while a step runs, not while the
  // backend's sandbox runs (Backend::RunOnceParked) or a retry backs off.
  struct Rollout;
  struct Try;
  using RolloutPtr = std::shared_ptr<Rollout>;
  void StartRollout(const Job& job);
  void BeginTry(const RolloutPtr& r);
  // A try up to its harness's run: create, set up, start the harness.
  Status StartTry(const RolloutPtr& r);
  void RunHarness(const RolloutPtr& r);
  void OneShotRan(const RolloutPtr& r, Result<sandbox::ExecResult> ran);
  // A try after its harness's run: its result read, the sandbox held or released.
  void HarnessRan(const RolloutPtr& r, Result<sandbox::ExecResult> ran);
  Status EndTry(Try& t, Result<sandbox::ExecResult> ran, Json& record);
  // A try's Status: the rollout's end, or a retry after a backoff.
  void TryEnded(const RolloutPtr& r, Status s);
  void FinishRollout(const RolloutPtr& r);
  // Under mutex_: the next job's index, counted in flight, unless there is
  // none or a stop was requested.
  std::optional<size_t> TakeJob();
  void Post(size_t job);
  // On k8s, a task's environment/Dockerfile as the pushed image's digest
  // (spec.image), and each compose service's build: as its service's image.
  Status PublishImage(const Attempt& a, sandbox::Spec& spec, Json& record);
  Status PublishServiceImages(const Attempt& a, sandbox::Spec& spec, Json& record);
  // The rollout's row (its secret's hash) in the store; an earlier try's calls set aside.
  Status Register(const Attempt& a, Json& record);
  // While workers run jobs (below): freed memory given back and the
  // progress lines redrawn, each second until done.
  void EverySecond(const StopToken& done);
  // The harness in a sandbox created, filled from plan, and exec'd (a pod
  // with services, or a backend without one-shot sandboxes); t.box holds it.
  Result<sandbox::ExecResult> ExecHarness(Try& t, Json& record);
  HostPaths Host() const;
  // Sets aside the calls recorded under the rollout, noting them in record:
  // all of them (a try's start: they are an earlier try's), or those that
  // started before `before` (a late call of a try set aside already, which
  // joins the calls set aside last).
  void SetAsideEarlierCalls(const std::string& task_id, int attempt, const std::string& rollout_id,
                            std::optional<double> before, Json& record);
  Result<const HarnessProfile*> Profile(const std::string& name);
  // {mcp_servers} for the profile; a task's servers that the harness cannot
  // read are said once per task and harness.
  Result<std::string> McpServersFor(const TaskSpec& task, const HarnessProfile& profile);
  // Absolute, since the docker engine binds only absolute host paths.
  std::string HarnessInstallDir() const;
  Status Emit(const Json& record);
  void UpdateProgress();
  // The phase a running rollout is in, for the progress lines ("" when done).
  void SetPhase(const std::string& rollout_id, const std::string& task_id, int attempt,
                const std::string& phase);
  // How the current phase goes ("pull 12.0/40.1 MB"), its clock left running.
  void SetPhaseText(const std::string& rollout_id, const std::string& text);

  const LaunchOptions& options_;
  Env& env_;
  sandbox::Backend& backend_;
  store::Store& store_;
  records::JsonlWriter& out_;
  // Requested by a stop of env_ (SIGINT, SIGTERM) or when the output is gone.
  StopToken cancel_;
  // --network proxy-only: the host half of the relay, for the whole run.
  std::unique_ptr<HostRelay> host_relay_;
  net::Endpoint proxy_endpoint_;
  std::mutex mutex_;  // guards the fields below
  std::map<std::string, HarnessProfile> profiles_;
  std::set<std::string> mcp_warned_;
  Status output_status_;
  std::unique_ptr<Progress> progress_;
  int running_ = 0, ok_ = 0, failed_ = 0, infra_ = 0;
  struct Running {
    std::string label;
    std::string phase;
    Clock::time_point since;
  };
  std::map<std::string, Running> phases_;  // by rollout id
  std::optional<TaskList> tasks_;  // read by Run before any rollout, then only read
  const std::vector<Job>* jobs_ = nullptr;
  size_t next_job_ = 0;
  int in_flight_ = 0;
  std::condition_variable idle_;  // in_flight_ fell to 0
  std::unique_ptr<WorkPool> pool_;
  int infra_errors_ = 0;
};

}  // namespace forge::launch
