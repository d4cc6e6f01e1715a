// Runtime evidence from inside a sandbox (a pod, where fanotify's
// CAP_SYS_ADMIN is not to be had): forge-box verify runs the verifier under
// a tracer of its own process tree. A seccomp filter stops the verifier's
// processes only at the calls that open or execute a file (open, openat,
// openat2, creat, execve, execveat, in the 64-bit, x32 and 32-bit numberings),
// so every other call runs at full speed; ptrace (PTRACE_SEIZE with
// TRACEFORK/VFORK/CLONE/EXEC/EXITKILL) follows every process the verifier
// starts. Each file a verifier process reads or executes is judged by the
// same rules as the fanotify watch (verify/evidence.h), with the same facts
// (program.h, inside.h): whose it is by its change time against t0, the
// symlinks the path went through, the process's program and arguments.
// The image's answers (has_module, has_command) come from the live file
// system's files changed before t0.
//
// The filter needs no_new_privs (a process without CAP_SYS_ADMIN may not
// install one otherwise): a setuid or file-capability program the verifier
// runs keeps the verifier's own privileges (docs/forge-verify.md).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "verify/evidence.h"
#include "verify/image_layers.h"
#include "verify/inside.h"
#include "verify/program.h"

namespace forge::verify {

struct TracePlan {
  int64_t t0_ns = 0;           // changes at or after this are not the image's or the environment's
  std::string workdir;         // the sandbox's working directory (the working area's root)
  bool agent_may_run = false;  // the agent's processes were kept: nothing written while tracing is trusted
  std::string root = "/";      // the file system the image's answers come from
  // From this moment (forge-box's, once the sweep has stopped the agent's
  // processes and before it unpacks the tests) what changes is the
  // verification's own until a program of the agent's runs; 0: from Attach.
  int64_t trusted_from_ns = 0;
};

struct TraceFinding {
  std::string path;
  pid_t pid = 0;
  std::string program;
  std::string why;
};

struct TraceReport {
  bool checked = false;
  std::string why;  // (not checked) why not
  int64_t t0_ns = 0, start_ns = 0, end_ns = 0, trusted_until_ns = 0;
  int64_t events = 0, judged = 0, unverified = 0, processes = 0;
  std::vector<std::string> unverified_examples;
  std::vector<TraceFinding> findings;  // the first kMaxFindings
  size_t finding_count = 0;
};

class Tracer {
 public:
  explicit Tracer(TracePlan plan);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // In the child, between fork and exec: waits until the parent has
  // attached (or said it could not), then installs the filter. A failure is
  // written to why_fd (the child then runs untraced; the report says so).
  static void InChild(int sync_fd, int why_fd);
  // In the parent, right after fork: attaches to child and lets it go.
  void Attach(pid_t child, int sync_fd);
  // Services the traced tree until child has ended and its descendants
  // (given at most linger seconds more) too, or until deadline (monotonic
  // seconds, 0: none) or *terminate: then every traced process is killed.
  // Returns child's wait status.
  int Run(double deadline, double linger, const volatile sig_atomic_t* terminate, bool* timed_out);
  // The child's own word on why it was not filtered (read from why_fd).
  void ChildFailed(const std::string& why);
  // Who wrote the file at path (a symlink is not followed): "" when the
  // verifier did during this verification, or there is no such file.
  std::string Writer(const std::string& path);
  TraceReport Finish();

 private:
  struct Proc {
    evidence::Role role = evidence::Role::kMachinery;
    bool started = false;
    bool refreshed = false;
    Program program;
  };
  struct Pending {
    std::optional<inside::Asked> asked;
    bool write = false;
  };

  void OnStop(pid_t tid, int status);
  bool OnSeccomp(pid_t tid);  // true: stop it again at the call's exit
  void OnExit(pid_t tid);
  Proc* ProcOf(pid_t tid);
  void Judge(pid_t tid, Proc& proc, bool exec, const std::optional<inside::Asked>& asked, int file_fd,
             const struct stat& st);
  void JudgeExec(pid_t tid, Proc& proc, const std::optional<inside::Asked>& asked);
  evidence::Origin OriginOf(const struct stat& st) const;
  void Find(const std::string& path, pid_t pid, const Proc& proc, const std::string& why);
  void KillAll();

  TracePlan plan_;
  std::string area_;
  ImageLayers image_layers_;
  evidence::Image image_;
  pid_t root_ = 0;
  bool attached_ = false;
  std::string why_unchecked_;
  int64_t untrusted_since_ = INT64_MAX;
  std::map<pid_t, pid_t> tgid_;            // traced thread -> its process
  std::map<pid_t, Proc> procs_;            // by process id
  std::map<pid_t, Pending> pending_;       // a thread stopped again at its open's exit
  std::map<std::pair<dev_t, ino_t>, bool> writes_;  // last opened for writing by: the verifier (true)
  TraceReport report_;
};

// The filter (classic BPF) the child installs: SECCOMP_RET_TRACE for the
// calls that open or execute a file, SECCOMP_RET_ALLOW for every other.
// Exposed for the unit tests.
std::vector<unsigned char> TraceFilterProgram();

}  // namespace forge::verify

namespace forge::verify {

// The report as forge-box verify sends it back in its framed answer (one
// field a line, "finding PID\tPROGRAM\tPATH\tWHY", with \\, \t and \n
// escaped), and read back by forge-verify; nullopt when it is malformed.
std::string FormatTraceReport(const TraceReport& report);
std::optional<TraceReport> ParseTraceReport(std::string_view text);

}  // namespace forge::verify
