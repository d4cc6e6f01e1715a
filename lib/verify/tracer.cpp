#include "verify/tracer.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/ptrace.h>
#include <linux/seccomp.h>
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "base/clock.h"

// glibc's <sys/ptrace.h> clashes with <linux/ptrace.h>: the call itself.
namespace {
long Ptrace(long request, pid_t pid, void* addr, void* data) { return syscall(SYS_ptrace, request, pid, addr, data); }
}  // namespace

namespace forge::verify {
namespace {

using evidence::Origin;
using evidence::Role;

constexpr size_t kMaxTraceFindings = 20;
constexpr uint32_t kX32Bit = 0x40000000;

// The calls traced, by numbering: x86-64 (and x32, whose numbers carry
// kX32Bit and differ only for execve and execveat), and i386.
struct TracedCall {
  uint32_t arch;
  uint32_t nr;
  long native;  // the x86-64 number the call is decoded as
};
constexpr TracedCall kTracedCalls[] = {
    {AUDIT_ARCH_X86_64, SYS_open, SYS_open},          {AUDIT_ARCH_X86_64, SYS_openat, SYS_openat},
    {AUDIT_ARCH_X86_64, SYS_openat2, SYS_openat2},    {AUDIT_ARCH_X86_64, SYS_creat, SYS_creat},
    {AUDIT_ARCH_X86_64, SYS_execve, SYS_execve},      {AUDIT_ARCH_X86_64, SYS_execveat, SYS_execveat},
    {AUDIT_ARCH_X86_64, kX32Bit | SYS_open, SYS_open}, {AUDIT_ARCH_X86_64, kX32Bit | SYS_openat, SYS_openat},
    {AUDIT_ARCH_X86_64, kX32Bit | SYS_openat2, SYS_openat2}, {AUDIT_ARCH_X86_64, kX32Bit | SYS_creat, SYS_creat},
    {AUDIT_ARCH_X86_64, kX32Bit | 520, SYS_execve},   {AUDIT_ARCH_X86_64, kX32Bit | 545, SYS_execveat},
    {AUDIT_ARCH_I386, 5, SYS_open},                   {AUDIT_ARCH_I386, 8, SYS_creat},
    {AUDIT_ARCH_I386, 11, SYS_execve},                {AUDIT_ARCH_I386, 295, SYS_openat},
    {AUDIT_ARCH_I386, 358, SYS_execveat},             {AUDIT_ARCH_I386, 437, SYS_openat2},
};

// Calls the verifier's tree is refused outright, in every ABI: ways to open
// a file that no trap above sees. io_uring's openat runs in the kernel's
// workers, not as a system call (ENOSYS, as a kernel built without io_uring
// answers: programs fall back to plain calls); open_by_handle_at opens by a
// handle, not a name (EPERM, as without CAP_DAC_READ_SEARCH).
struct RefusedCall {
  uint32_t arch;
  uint32_t nr;
  int error;
};
constexpr RefusedCall kRefusedCalls[] = {
    {AUDIT_ARCH_X86_64, 425, ENOSYS}, {AUDIT_ARCH_X86_64, 426, ENOSYS}, {AUDIT_ARCH_X86_64, 427, ENOSYS},
    {AUDIT_ARCH_X86_64, kX32Bit | 425, ENOSYS}, {AUDIT_ARCH_X86_64, kX32Bit | 426, ENOSYS},
    {AUDIT_ARCH_X86_64, kX32Bit | 427, ENOSYS}, {AUDIT_ARCH_I386, 425, ENOSYS},
    {AUDIT_ARCH_I386, 426, ENOSYS},             {AUDIT_ARCH_I386, 427, ENOSYS},
    {AUDIT_ARCH_X86_64, 304, EPERM},            {AUDIT_ARCH_X86_64, kX32Bit | 304, EPERM},
    {AUDIT_ARCH_I386, 342, EPERM},
};

std::string ProcFile(pid_t pid, const std::string& what) { return "/proc/" + std::to_string(pid) + "/" + what; }

pid_t TracedTgidOf(pid_t tid) {
  std::string text;
  const inside::Fd fd(open(ProcFile(tid, "status").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return 0;
  char buf[4096];
  const ssize_t n = read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* at = std::strstr(buf, "\nTgid:");
  return at == nullptr ? 0 : static_cast<pid_t>(std::atol(at + 6));
}

// A write-mode open: what it reads is nothing; what it writes is its opener's.
bool OpensToWrite(int64_t flags) {
  return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0;
}

// An open that reads nothing anyone else wrote (watch.cpp's OnPermission).
bool OpensToReadNothing(int64_t flags) {
  if ((flags & O_PATH) == O_PATH) return true;
  if ((flags & O_ACCMODE) == O_WRONLY || (flags & O_TMPFILE) == O_TMPFILE) return true;
  return (flags & O_ACCMODE) == O_RDWR && ((flags & O_TRUNC) || ((flags & O_CREAT) && (flags & O_EXCL)));
}

// A file of a pseudo file system (/proc, /sys and their kind), which the
// watch does not mark either: its times are the moment it is read.
bool Pseudo(int fd) {
  struct statfs fs{};
  if (fstatfs(fd, &fs) != 0) return false;
  const unsigned long kinds[] = {PROC_SUPER_MAGIC, SYSFS_MAGIC,   CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
                                 DEVPTS_SUPER_MAGIC, 0x19800202 /* mqueue */, SECURITYFS_MAGIC, DEBUGFS_MAGIC,
                                 TRACEFS_MAGIC, BPF_FS_MAGIC, BINFMTFS_MAGIC, 0x65735543 /* fusectl */,
                                 0x62656570 /* configfs */, PSTOREFS_MAGIC};
  for (const unsigned long kind : kinds) {
    if (static_cast<unsigned long>(fs.f_type) == kind) return true;
  }
  return false;
}

}  // namespace

std::vector<unsigned char> TraceFilterProgram() {
  std::vector<sock_filter> f;
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.push_back(BPF_STMT(BPF_ST, 0));  // M[0] = arch
  f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  // if (nr == c.nr && arch == c.arch) return action: nr is in A; arch in M[0].
  auto when = [&f](uint32_t arch, uint32_t nr, uint32_t action) {
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 4));
    f.push_back(BPF_STMT(BPF_LD | BPF_MEM, 0));
    f.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 1));
    f.push_back(BPF_STMT(BPF_RET | BPF_K, action));
    f.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
  };
  for (const TracedCall& c : kTracedCalls) when(c.arch, c.nr, SECCOMP_RET_TRACE);
  for (const RefusedCall& c : kRefusedCalls) {
    when(c.arch, c.nr, SECCOMP_RET_ERRNO | (static_cast<uint32_t>(c.error) & SECCOMP_RET_DATA));
  }
  f.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  std::vector<unsigned char> bytes(f.size() * sizeof(sock_filter));
  std::memcpy(bytes.data(), f.data(), bytes.size());
  return bytes;
}

Tracer::Tracer(TracePlan plan)
    : plan_(std::move(plan)), area_(evidence::WorkingArea(plan_.workdir)), image_layers_(plan_.root, plan_.t0_ns) {
  image_.has_module = [this](const std::string& name) { return image_layers_.HasModule(name); };
  image_.has_command = [this](const std::string& name) { return image_layers_.HasCommand(name); };
  report_.t0_ns = plan_.t0_ns;
}

Tracer::~Tracer() { KillAll(); }

void Tracer::InChild(int sync_fd, int why_fd) {
  char go = 0;
  while (read(sync_fd, &go, 1) < 0 && errno == EINTR) {
  }
  close(sync_fd);
  if (go != 'T') return;  // not attached: the parent knows why
  const std::vector<unsigned char> program = TraceFilterProgram();
  sock_fprog fprog{static_cast<unsigned short>(program.size() / sizeof(sock_filter)),
                   reinterpret_cast<sock_filter*>(const_cast<unsigned char*>(program.data()))};
  const char* step = "prctl(PR_SET_NO_NEW_PRIVS)";
  bool ok = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
  if (ok) {
    step = "seccomp(SECCOMP_SET_MODE_FILTER)";
    ok = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0;
  }
  if (!ok) {
    const std::string why = std::string(step) + ": " + std::strerror(errno);
    (void)!write(why_fd, why.data(), why.size());
  }
}

void Tracer::Attach(pid_t child, int sync_fd) {
  root_ = child;
  const long options = PTRACE_O_TRACESECCOMP | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE |
                       PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD;
  attached_ = Ptrace(PTRACE_SEIZE, child, nullptr, reinterpret_cast<void*>(options)) == 0;
  if (!attached_) why_unchecked_ = std::string("ptrace(PTRACE_SEIZE): ") + std::strerror(errno);
  if (attached_) {
    tgid_[child] = child;
    procs_[child] = Proc{};
    ++report_.processes;
  }
  report_.start_ns = plan_.trusted_from_ns > 0 ? plan_.trusted_from_ns : ClockNs(CLOCK_REALTIME_COARSE);
  if (plan_.agent_may_run) untrusted_since_ = report_.start_ns;
  const char go = attached_ ? 'T' : 'U';
  (void)!write(sync_fd, &go, 1);
  close(sync_fd);
}

void Tracer::ChildFailed(const std::string& why) {
  if (!why.empty() && why_unchecked_.empty()) why_unchecked_ = why;
}

int Tracer::Run(double deadline, double linger, const volatile sig_atomic_t* terminate, bool* timed_out) {
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigset_t old;
  sigprocmask(SIG_BLOCK, &chld, &old);
  int root_status = 0;
  double ended_at = 0, killed_at = 0;
  for (;;) {
    int status = 0;
    const pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
    if (tid < 0 && errno == EINTR) continue;
    if (tid < 0) break;  // nothing left to wait for
    if (tid > 0) {
      if (WIFEXITED(status) || WIFSIGNALED(status)) {
        if (tid == root_) root_status = status, ended_at = MonotonicSeconds();
        pending_.erase(tid);
        if (auto it = tgid_.find(tid); it != tgid_.end()) {
          if (it->second == tid) procs_.erase(tid);
          tgid_.erase(it);
        }
      } else if (WIFSTOPPED(status)) {
        OnStop(tid, status);
      }
      continue;
    }
    const double now = MonotonicSeconds();
    const bool stop = (terminate != nullptr && *terminate) || (deadline > 0 && now > deadline);
    if (stop && ended_at == 0 && killed_at == 0 && timed_out != nullptr) *timed_out = !(terminate && *terminate);
    if ((stop || (ended_at > 0 && now > ended_at + linger)) && (killed_at == 0 || now > killed_at + 0.2)) {
      if (ended_at > 0 && tgid_.empty()) break;
      if (killed_at > 0 && now > killed_at + 10) break;  // EXITKILL ends what is left when forge-box does
      KillAll();
      if (killed_at == 0) killed_at = now;
    }
    timespec wait{0, 20 * 1000 * 1000};
    sigtimedwait(&chld, nullptr, &wait);
  }
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return root_status;
}

void Tracer::KillAll() {
  if (root_ > 0) kill(-root_, SIGKILL);
  for (const auto& [tid, tgid] : tgid_) kill(tgid, SIGKILL);
}

void Tracer::OnStop(pid_t tid, int status) {
  const int sig = WSTOPSIG(status);
  const int event = status >> 16;
  long resume = PTRACE_CONT;
  int deliver = 0;
  if (!tgid_.count(tid)) ProcOf(tid);  // a new process or thread, before its parent's event
  if (sig == SIGTRAP && event == PTRACE_EVENT_SECCOMP) {
    if (OnSeccomp(tid)) resume = PTRACE_SYSCALL;
  } else if (sig == (SIGTRAP | 0x80)) {
    OnExit(tid);
  } else if (sig == SIGTRAP && (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
                                event == PTRACE_EVENT_CLONE)) {
    unsigned long child = 0;
    Ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &child);
    if (child > 0 && !tgid_.count(static_cast<pid_t>(child))) {
      const pid_t parent = tgid_.count(tid) ? tgid_[tid] : tid;
      const pid_t c = static_cast<pid_t>(child);
      if (event == PTRACE_EVENT_CLONE && TracedTgidOf(c) == parent) {
        tgid_[c] = parent;
      } else {
        tgid_[c] = c;
        procs_[c] = procs_.count(parent) ? procs_[parent] : Proc{};
        ++report_.processes;
      }
    }
  } else if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC) {
    const pid_t tgid = tgid_.count(tid) ? tgid_[tid] : tid;
    unsigned long former = 0;
    Ptrace(PTRACE_GETEVENTMSG, tid, nullptr, &former);
    if (static_cast<pid_t>(former) != tid) tgid_.erase(static_cast<pid_t>(former));
    tgid_[tid] = tgid;
    if (Proc* p = ProcOf(tid)) p->refreshed = false, p->started = false;
  } else if (event == PTRACE_EVENT_STOP) {
    // The first stop of a new tracee, or a group stop: it runs on.
  } else if (event == 0) {
    deliver = sig;  // a signal for the tracee: delivered
  }
  Ptrace(resume, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(deliver)));
}

Tracer::Proc* Tracer::ProcOf(pid_t tid) {
  auto known = tgid_.find(tid);
  if (known == tgid_.end()) {
    // Seen before its parent's fork event: its parent's role.
    pid_t tgid = TracedTgidOf(tid);
    if (tgid <= 0) tgid = tid;
    known = tgid_.emplace(tid, tgid).first;
    if (!procs_.count(tgid)) {
      Proc p;
      std::string stat;
      const inside::Fd fd(open(ProcFile(tgid, "stat").c_str(), O_RDONLY | O_CLOEXEC));
      char buf[1024];
      const ssize_t n = fd.ok() ? read(fd.get(), buf, sizeof buf - 1) : -1;
      if (n > 0) {
        buf[n] = '\0';
        const char* close = std::strrchr(buf, ')');
        pid_t ppid = 0;
        if (close != nullptr && std::sscanf(close + 2, "%*c %d", &ppid) == 1 && procs_.count(ppid)) p = procs_[ppid];
      }
      procs_[tgid] = p;
      ++report_.processes;
    }
  }
  auto it = procs_.find(known->second);
  return it == procs_.end() ? nullptr : &it->second;
}

bool Tracer::OnSeccomp(pid_t tid) {
  ++report_.events;
  ptrace_syscall_info info{};
  if (Ptrace(PTRACE_GET_SYSCALL_INFO, tid, reinterpret_cast<void*>(sizeof info), &info) <= 0 ||
      info.op != PTRACE_SYSCALL_INFO_SECCOMP) {
    return false;
  }
  long native = -1;
  for (const TracedCall& c : kTracedCalls) {
    if (c.arch == info.arch && c.nr == info.seccomp.nr) native = c.native;
  }
  if (native < 0) return false;
  uint64_t args[6];
  for (int i = 0; i < 6; ++i) args[i] = info.arch == AUDIT_ARCH_I386 ? info.seccomp.args[i] & 0xffffffffu : info.seccomp.args[i];
  std::optional<inside::Asked> asked = inside::AskedIn(tid, native, args);
  Proc* proc = ProcOf(tid);
  if (proc == nullptr) return false;
  if (native == SYS_execve || native == SYS_execveat) {
    JudgeExec(tid, *proc, asked);
    return false;
  }
  Pending pending;
  if (asked) {
    if ((asked->flags & O_PATH) == O_PATH) return false;
    pending.write = OpensToWrite(asked->flags);
  }
  pending.asked = std::move(asked);
  pending_[tid] = std::move(pending);
  return true;
}

void Tracer::OnExit(pid_t tid) {
  auto it = pending_.find(tid);
  if (it == pending_.end()) return;
  const Pending pending = std::move(it->second);
  pending_.erase(it);
  ptrace_syscall_info info{};
  if (Ptrace(PTRACE_GET_SYSCALL_INFO, tid, reinterpret_cast<void*>(sizeof info), &info) <= 0 ||
      info.op != PTRACE_SYSCALL_INFO_EXIT || info.exit.is_error || info.exit.rval < 0) {
    return;
  }
  const inside::Fd fd(open(ProcFile(tid, "fd/" + std::to_string(info.exit.rval)).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat st{};
  if (!fd.ok() || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || Pseudo(fd.get())) return;
  Proc* proc = ProcOf(tid);
  if (proc == nullptr) return;
  if (pending.write) writes_[{st.st_dev, st.st_ino}] = proc->role == Role::kMachinery;
  if (pending.asked && OpensToReadNothing(pending.asked->flags)) return;
  Judge(tid, *proc, false, pending.asked, fd.get(), st);
}

// An execve: its file, then the interpreters it names (a "#!" line's
// program, an ELF file's loader), each judged as executed.
void Tracer::JudgeExec(pid_t tid, Proc& proc, const std::optional<inside::Asked>& asked) {
  std::optional<inside::Asked> next = asked;
  for (int depth = 0; depth < 4; ++depth) {
    if (!next) {
      if (proc.role == Role::kMachinery) Find("(unreadable path)", tgid_[tid], proc, "an execve whose path could not be read");
      return;
    }
    const inside::Fd root(open(ProcFile(tid, "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    const std::string base_link = next->dirfd == AT_FDCWD ? ProcFile(tid, "cwd") : ProcFile(tid, "fd/" + std::to_string(next->dirfd));
    const inside::Fd base(open(base_link.c_str(), O_PATH | O_CLOEXEC));
    if (!root.ok() || !base.ok()) return;
    inside::Walked w = inside::Walk(root.get(), base.get(), inside::LinkTarget(base_link), next->path);
    if (!w.fd.ok() || !S_ISREG(w.st.st_mode)) return;  // the execve fails
    const inside::Fd file(open(ProcFile(getpid(), "fd/" + std::to_string(w.fd.get())).c_str(), O_RDONLY | O_CLOEXEC));
    if (!file.ok()) return;
    if (!Pseudo(file.get())) Judge(tid, proc, true, next, file.get(), w.st);
    const std::string interpreter = inside::InterpreterOf(file.get());
    if (interpreter.empty()) return;
    next = inside::Asked{true, AT_FDCWD, interpreter, 0};
    if (interpreter[0] != '/') return;
  }
}

Origin Tracer::OriginOf(const struct stat& st) const {
  const int64_t c = inside::CtimeNs(st);
  if (c < plan_.t0_ns) return Origin::kPristine;
  if (c >= report_.start_ns && c < untrusted_since_) return Origin::kTrusted;
  auto it = writes_.find({st.st_dev, st.st_ino});
  if (it != writes_.end() && it->second && c >= report_.start_ns) return Origin::kTrusted;
  return Origin::kAgent;
}

void Tracer::Judge(pid_t tid, Proc& proc, bool exec, const std::optional<inside::Asked>& asked, int file_fd,
                   const struct stat& st) {
  if (proc.role != Role::kMachinery) return;
  ++report_.judged;
  const pid_t pid = tgid_.count(tid) ? tgid_[tid] : tid;
  if (!exec && !proc.refreshed) {
    proc.program = ReadProgram(tid, pid);
    proc.refreshed = true;
  }
  evidence::Access access;
  access.exec = exec;
  access.path = inside::LinkTarget(ProcFile(getpid(), "fd/" + std::to_string(file_fd)));
  access.origin = OriginOf(st);
  if (proc.program.python && access.origin == Origin::kPristine) image_layers_.AddPythonRootOf(access.path);
  // How the path it asked for got to this file: through a symlink of the agent's?
  bool followed = false;
  if (asked) {
    const inside::Fd root(open(ProcFile(tid, "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    const std::string base_link =
        asked->dirfd == AT_FDCWD ? ProcFile(tid, "cwd") : ProcFile(tid, "fd/" + std::to_string(asked->dirfd));
    const inside::Fd base(open(base_link.c_str(), O_PATH | O_CLOEXEC));
    if (root.ok() && base.ok()) {
      inside::Walked w = inside::Walk(root.get(), base.get(), inside::LinkTarget(base_link), asked->path);
      followed = w.via_proc || (w.fd.ok() && inside::SameFile(w.st, st));
      for (const auto& [path, link_st] : w.links) {
        if (followed && !w.via_proc && access.agent_link.empty() && OriginOf(link_st) == Origin::kAgent) {
          access.agent_link = path;
        }
      }
    }
  }
  if (!followed) {
    ++report_.unverified;
    if (report_.unverified_examples.size() < kMaxTraceFindings) report_.unverified_examples.push_back(access.path);
    access.path_unknown = true;
  }
  NoteArguments(proc.program, st, &access);
  evidence::ProcessView view{proc.role, proc.program.python, proc.started, proc.program.shell};
  const evidence::Decision d = evidence::JudgeOpen(view, access, area_, image_, file_fd);
  if (!d.tampered.empty()) Find(access.path, pid, proc, d.tampered);
  if (d.ends_startup) proc.started = true;
  if (d.becomes_agent) {
    proc.role = Role::kAgentProgram;
    untrusted_since_ = std::min(untrusted_since_, ClockNs(CLOCK_REALTIME_COARSE));
  }
  if (exec) proc.started = false;
}

void Tracer::Find(const std::string& path, pid_t pid, const Proc& proc, const std::string& why) {
  ++report_.finding_count;
  if (report_.findings.size() < kMaxTraceFindings) report_.findings.push_back({path, pid, proc.program.path, why});
}

std::string Tracer::Writer(const std::string& path) {
  struct stat st{};
  if (lstat(path.c_str(), &st) != 0) return "";
  if (!S_ISREG(st.st_mode)) return path + " is not a regular file";
  if (!attached_ || OriginOf(st) == Origin::kTrusted) return "";
  return path + " was not written by the verifier (its last change was by another process)";
}

TraceReport Tracer::Finish() {
  report_.end_ns = ClockNs(CLOCK_REALTIME_COARSE);
  report_.trusted_until_ns = std::min(untrusted_since_, report_.end_ns);
  report_.checked = attached_ && why_unchecked_.empty();
  report_.why = why_unchecked_;
  return report_;
}

}  // namespace forge::verify

namespace forge::verify {
namespace {

std::string EscapeField(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\t') out += "\\t";
    else if (c == '\n') out += "\\n";
    else out.push_back(c);
  }
  return out;
}

std::string UnescapeField(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out.push_back(s[i]);
      continue;
    }
    const char c = s[++i];
    out.push_back(c == 't' ? '\t' : c == 'n' ? '\n' : c);
  }
  return out;
}

std::vector<std::string_view> TabFields(std::string_view line) {
  std::vector<std::string_view> out;
  for (size_t at = 0;;) {
    const size_t tab = line.find('\t', at);
    out.push_back(line.substr(at, tab == std::string_view::npos ? std::string_view::npos : tab - at));
    if (tab == std::string_view::npos) return out;
    at = tab + 1;
  }
}

bool TraceNumber(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const std::string s(text);
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace

std::string FormatTraceReport(const TraceReport& r) {
  std::string out = "checked\t" + std::string(r.checked ? "1" : "0") + "\n";
  if (!r.why.empty()) out += "why\t" + EscapeField(r.why) + "\n";
  const std::pair<const char*, int64_t> numbers[] = {
      {"t0_ns", r.t0_ns},         {"start_ns", r.start_ns},   {"end_ns", r.end_ns},
      {"trusted_until_ns", r.trusted_until_ns}, {"events", r.events}, {"judged", r.judged},
      {"unverified", r.unverified}, {"processes", r.processes},
      {"finding_count", static_cast<int64_t>(r.finding_count)}};
  for (const auto& [key, value] : numbers) out += std::string(key) + "\t" + std::to_string(value) + "\n";
  for (const auto& path : r.unverified_examples) out += "unverified_example\t" + EscapeField(path) + "\n";
  for (const auto& f : r.findings) {
    out += "finding\t" + std::to_string(f.pid) + "\t" + EscapeField(f.program) + "\t" + EscapeField(f.path) + "\t" +
           EscapeField(f.why) + "\n";
  }
  return out;
}

std::optional<TraceReport> ParseTraceReport(std::string_view text) {
  TraceReport r;
  bool checked_seen = false;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    if (eol == std::string_view::npos) return std::nullopt;
    const std::vector<std::string_view> f = TabFields(text.substr(0, eol));
    text.remove_prefix(eol + 1);
    int64_t n = 0;
    if (f[0] == "finding" && f.size() == 5 && TraceNumber(f[1], &n)) {
      r.findings.push_back({UnescapeField(f[3]), static_cast<pid_t>(n), UnescapeField(f[2]), UnescapeField(f[4])});
      continue;
    }
    if (f.size() != 2) return std::nullopt;
    if (f[0] == "why") r.why = UnescapeField(f[1]);
    else if (f[0] == "unverified_example") r.unverified_examples.push_back(UnescapeField(f[1]));
    else if (!TraceNumber(f[1], &n)) return std::nullopt;
    else if (f[0] == "checked") r.checked = n == 1, checked_seen = true;
    else if (f[0] == "t0_ns") r.t0_ns = n;
    else if (f[0] == "start_ns") r.start_ns = n;
    else if (f[0] == "end_ns") r.end_ns = n;
    else if (f[0] == "trusted_until_ns") r.trusted_until_ns = n;
    else if (f[0] == "events") r.events = n;
    else if (f[0] == "judged") r.judged = n;
    else if (f[0] == "unverified") r.unverified = n;
    else if (f[0] == "processes") r.processes = n;
    else if (f[0] == "finding_count") r.finding_count = static_cast<size_t>(n);
  }
  if (!checked_seen || r.finding_count < r.findings.size()) return std::nullopt;
  return r;
}

}  // namespace forge::verify
