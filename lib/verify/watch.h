// Runtime evidence (docker backend, forge-verify as root on the engine's
// host): while the verifier runs, a fanotify group on every mount of the
// sandbox holds each open and execve by the sandbox's processes until it has
// looked at it, so what it reads about the process (its ancestry, the path it
// asked for, its command line) is that moment's. Each file the verifier's
// processes open or execute is judged by verify/evidence.h; files written
// while watching are attributed to their writer, so the verifier's own
// writes (and forge's uploads) are not taken for the agent's.
//
// Whose a file is comes from its change time, which no process without
// CAP_SYS_TIME can set: at or after t0 (the moment the harness started,
// forge-box mark) it changed after the agent began. Image files carry the
// time their layer was extracted; a write, copy-up, rename, link or chmod
// gives a file the time it happened.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/status.h"
#include "records/jsonl.h"
#include "sandbox/box.h"
#include "sandbox/sandbox.h"
#include "verify/evidence.h"
#include "verify/image_layers.h"
#include "verify/inside.h"
#include "verify/program.h"

namespace forge::verify {

using records::Json;

struct WatchPlan {
  pid_t init_pid = 0;               // the sandbox's PID 1, as the host numbers it
  std::vector<std::string> layers;  // the image's layer directories, top first
  std::string workdir;              // the sandbox's working directory
  int64_t t0_ns = 0;                // changes at or after this are not the image's or the environment's
  bool agent_may_run = false;       // the agent's processes were kept (verifier.keep_processes)
  // Earlier verifications' windows [from, until): what they wrote is the verifier's.
  std::vector<std::pair<int64_t, int64_t>> trusted;
};

// A plan for the sandbox, or why runtime evidence cannot be taken for it
// (NotFound: another backend, not root, an engine on another host, a storage
// driver other than overlay2; Unavailable: the engine did not answer;
// InvalidData: the host's clock stepped back since the harness started).
// Without a baseline, t0 is the sandbox's start (its entrypoint's writes then
// count as the agent's: never the other way round).
Result<WatchPlan> PlanWatch(sandbox::Sandbox& sandbox, const std::optional<sandbox::Baseline>& baseline,
                            bool agent_may_run);

class Watch {
 public:
  // Marks every mount of the sandbox (but /proc, /sys and their kind);
  // the watch runs from then until Finish.
  static Result<std::unique_ptr<Watch>> Start(WatchPlan plan);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // Returns once every event queued before the call has been handled.
  void Drain();
  // Who wrote the file at path (a symlink is not followed): "" when the
  // verifier or forge did during this verification, else why it is not
  // theirs. *exists is false (and "" returned) when there is no such file.
  std::string Writer(const std::string& path, bool* exists);
  bool tampered();
  // Stops watching and returns the evidence: {"checked": true, "method":
  // "fanotify", "t0_ns", "window": [from, until], "findings": [{path, pid,
  // program, why}], counts}.
  Json Finish();

 private:
  explicit Watch(WatchPlan plan);
  struct Proc {
    evidence::Role role = evidence::Role::kOther;
    bool python = false;
    bool shell = false;
    bool started = false;
    bool refreshed = false;  // exe, argv and their files read since the last execve
    std::string program;
    Program args;  // what its arguments name
    std::vector<std::string> interpreters;  // named by the files its execve opened so far
  };
  using ProcKey = std::pair<pid_t, int64_t>;  // pid, start time
  struct Written {
    int64_t ctime = 0;
    bool trusted = false;
  };

  Status Mark();
  void Loop();
  void OnPermission(int fd, pid_t tid, bool exec);
  void OnCloseWrite(int fd, pid_t tid);
  // The process a thread belongs to, created (with its role) on first sight.
  Proc* ProcessOf(pid_t tid, ProcKey* key);
  evidence::Role RoleOf(pid_t pid, int depth);
  bool InSandbox(pid_t pid);
  void Refresh(pid_t tid, ProcKey key, Proc& proc);
  evidence::Origin OriginOf(const struct stat& st);
  // The agent's symlink the lookup went through ("" when none), or
  // nullopt when the path the thread asked for could not be followed to
  // the file it got. Nothing here opens a file through the sandbox's mounts
  // for reading: that would wait for this watch's own loop.
  std::optional<std::string> AgentLink(pid_t tid, const std::optional<inside::Asked>& asked,
                                       const struct stat& st, int event_fd, Proc& proc);
  void Find(const std::string& path, pid_t pid, const Proc& proc, const std::string& why);
  int64_t NowNs() const;

  WatchPlan plan_;
  std::string area_;
  std::string pid_ns_;  // the sandbox's pid namespace, as /proc/PID/ns/pid names it
  ImageLayers layers_;
  evidence::Image image_;
  inside::Fd group_, wake_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // guards everything below
  std::condition_variable drained_cv_;
  uint64_t drain_asked_ = 0, drain_done_ = 0;
  int64_t start_ns_ = 0, end_ns_ = 0;
  int64_t start_ticks_ = 0;               // start_ns_ on the boot clock, in /proc's clock ticks
  std::optional<ProcKey> verifier_root_;  // the process forge exec'd: the verifier
  int64_t untrusted_since_ = INT64_MAX;
  std::map<ProcKey, Proc> procs_;
  std::map<pid_t, ProcKey> threads_;
  std::map<std::pair<dev_t, ino_t>, Written> writes_;
  std::vector<Json> findings_;
  std::vector<std::string> unverified_examples_;
  size_t finding_count_ = 0;
  int64_t events_ = 0, judged_ = 0, unverified_ = 0;
  bool finished_ = false;
};

}  // namespace forge::verify
