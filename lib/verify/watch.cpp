#include "verify/watch.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#if __has_include("sandbox/docker/engine.h")
#include "base/clock.h"
#include "sandbox/docker/engine.h"
#define FORGE_WATCH_HAVE_DOCKER_ENGINE 1
#endif

namespace forge::verify {
namespace {

using evidence::Origin;
using evidence::Role;
using inside::Fd;

constexpr size_t kMaxFindings = 20;

std::string ProcPath(pid_t pid, const char* what) { return fmt::format("/proc/{}/{}", pid, what); }

// /proc/PID/stat: parent, start time; false when the process is gone.
bool ReadStat(pid_t pid, pid_t* ppid, int64_t* start) {
  std::ifstream in(ProcPath(pid, "stat"));
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 4) *ppid = static_cast<pid_t>(std::atol(field.c_str()));
    if (i == 22) {
      *start = std::atoll(field.c_str());
      return true;
    }
  }
  return false;
}

// Now on the clock /proc/PID/stat's start times count (clock ticks since boot).
int64_t BootTicks() {
  timespec boot{};
  clock_gettime(CLOCK_BOOTTIME, &boot);
  const int64_t hz = sysconf(_SC_CLK_TCK);
  return static_cast<int64_t>(boot.tv_sec) * hz + static_cast<int64_t>(boot.tv_nsec) * hz / 1000000000;
}

pid_t TgidOf(pid_t tid) {
  std::ifstream in(ProcPath(tid, "status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Tgid:", 0) == 0) return static_cast<pid_t>(std::atol(line.c_str() + 5));
  }
  return 0;
}

Fd OpenInRoot(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string relative = path;
  while (!relative.empty() && relative[0] == '/') relative.erase(0, 1);
  if (relative.empty()) relative = ".";
  return Fd(static_cast<int>(syscall(SYS_openat2, root, relative.c_str(), &how, sizeof how)));
}

// mountinfo's octal escapes (\040 for a space).
std::string Unescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 4 <= text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 3), nullptr, 8)));
      i += 3;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

bool Skipped(const std::string& fstype, const std::string& mount_point) {
  for (const char* pseudo : {"proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "securityfs", "debugfs",
                             "tracefs", "bpf", "binfmt_misc", "fusectl", "configfs", "pstore"}) {
    if (fstype == pseudo) return true;
  }
  return mount_point == "/proc" || mount_point.rfind("/proc/", 0) == 0 || mount_point == "/sys" ||
         mount_point.rfind("/sys/", 0) == 0;
}

}  // namespace

Watch::Watch(WatchPlan plan) : plan_(std::move(plan)), area_(evidence::WorkingArea(plan_.workdir)), layers_(plan_.layers) {
  image_.has_module = [this](const std::string& name) { return layers_.HasModule(name); };
  image_.has_command = [this](const std::string& name) { return layers_.HasCommand(name); };
}

Result<std::unique_ptr<Watch>> Watch::Start(WatchPlan plan) {
  std::unique_ptr<Watch> watch(new Watch(std::move(plan)));
  watch->pid_ns_ = inside::LinkTarget(ProcPath(watch->plan_.init_pid, "ns/pid"));
  if (watch->pid_ns_.empty()) return Status::Unavailable("the sandbox's PID 1 is gone");
  watch->group_ = Fd(fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK | FAN_UNLIMITED_QUEUE |
                                       FAN_REPORT_TID,
                                   O_RDONLY | O_LARGEFILE | O_CLOEXEC));
  if (!watch->group_.ok()) return Status::Unavailable(std::string("fanotify_init: ") + std::strerror(errno));
  watch->wake_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  FORGE_RETURN_IF_ERROR(watch->Mark());
  watch->start_ns_ = ClockNs(CLOCK_REALTIME_COARSE);
  watch->start_ticks_ = BootTicks();
  if (watch->plan_.agent_may_run) watch->untrusted_since_ = watch->start_ns_;
  watch->thread_ = std::thread([w = watch.get()] { w->Loop(); });
  return watch;
}

Watch::~Watch() {
  if (!finished_) (void)Finish();
}

Status Watch::Mark() {
  Fd root(open(ProcPath(plan_.init_pid, "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) return Status::Unavailable("the sandbox's root: " + std::string(std::strerror(errno)));
  std::ifstream mountinfo(ProcPath(plan_.init_pid, "mountinfo"));
  std::string line;
  int marked = 0;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, mount_root, mount_point, field;
    fields >> id >> parent >> devno >> mount_root >> mount_point;
    while (fields >> field && field != "-") {
    }
    std::string fstype;
    fields >> fstype;
    mount_point = Unescape(mount_point);
    if (Skipped(fstype, mount_point)) continue;
    Fd at = OpenInRoot(root.get(), mount_point, O_PATH);
    const uint64_t mask = FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM | FAN_CLOSE_WRITE;
    // The mark's path is the O_PATH fd's magic link, which names the mount
    // as the sandbox sees it.
    const std::string link = ProcPath(getpid(), ("fd/" + std::to_string(at.get())).c_str());
    if (!at.ok() || fanotify_mark(group_.get(), FAN_MARK_ADD | FAN_MARK_MOUNT, mask, AT_FDCWD, link.c_str()) != 0) {
      // The agent cannot add or move mounts: a mount forge cannot watch is
      // forge's or the host's problem, and verifying without it would miss
      // what the verifier reads there.
      return Status::Unavailable("cannot watch the sandbox's mount " + mount_point + " (" + fstype +
                                 "): " + std::strerror(errno));
    }
    ++marked;
  }
  if (marked == 0) return Status::Unavailable("the sandbox has no mount to watch");
  return Status::Ok();
}

int64_t Watch::NowNs() const { return ClockNs(CLOCK_REALTIME_COARSE); }

void Watch::Loop() {
  alignas(fanotify_event_metadata) char buf[64 * 1024];
  for (;;) {
    uint64_t asked = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      asked = drain_asked_;
    }
    ssize_t n = read(group_.get(), buf, sizeof buf);
    if (n <= 0) {
      if (n < 0 && errno != EAGAIN && errno != EINTR) break;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        drain_done_ = asked;
      }
      drained_cv_.notify_all();
      if (stop_.load()) break;
      pollfd fds[2] = {{group_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
      poll(fds, 2, 1000);
      uint64_t value;
      if (fds[1].revents & POLLIN) (void)!read(wake_.get(), &value, sizeof value);
      continue;
    }
    auto* meta = reinterpret_cast<fanotify_event_metadata*>(buf);
    for (; FAN_EVENT_OK(meta, n); meta = FAN_EVENT_NEXT(meta, n)) {
      if (meta->vers != FANOTIFY_METADATA_VERSION || meta->fd < 0) continue;
      if (meta->mask & (FAN_OPEN_PERM | FAN_OPEN_EXEC_PERM)) {
        OnPermission(meta->fd, meta->pid, meta->mask & FAN_OPEN_EXEC_PERM);
      } else if (meta->mask & FAN_CLOSE_WRITE) {
        OnCloseWrite(meta->fd, meta->pid);
      } else {
        close(meta->fd);
      }
    }
  }
}

void Watch::Drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_) return;
  const uint64_t ticket = ++drain_asked_;
  uint64_t one = 1;
  (void)!write(wake_.get(), &one, sizeof one);
  drained_cv_.wait_for(lock, std::chrono::seconds(30), [&] { return drain_done_ >= ticket; });
}

bool Watch::InSandbox(pid_t pid) { return inside::LinkTarget(ProcPath(pid, "ns/pid")) == pid_ns_; }

Role Watch::RoleOf(pid_t pid, int depth) {
  if (pid == plan_.init_pid) return Role::kOther;  // the keep-alive and the environment under it
  pid_t ppid = 0;
  int64_t start = 0;
  if (!ReadStat(pid, &ppid, &start) || depth > 64) return Role::kOther;
  if (auto it = procs_.find({pid, start}); it != procs_.end()) return it->second.role;
  if (ppid <= 0 || !InSandbox(ppid)) {
    // Its parent is outside: exec'd into the sandbox by the engine, or an
    // orphan the engine's subreaper (containerd-shim) adopted. The verifier
    // is forge's one exec while the watch runs, the first such process to
    // start after the watch began; any other came before (the agent's, kept)
    // or lost its lineage when its parent ended (a loop a program of the
    // agent's left behind): not the verifier's machinery, and what it writes
    // is not the verifier's.
    const ProcKey key{pid, start};
    if (!verifier_root_ && start >= start_ticks_) verifier_root_ = key;
    return verifier_root_ == key ? Role::kMachinery : Role::kOther;
  }
  pid_t grandparent = 0;
  int64_t parent_start = 0;
  if (!ReadStat(ppid, &grandparent, &parent_start)) return Role::kOther;
  Role role = RoleOf(ppid, depth + 1);
  procs_[{ppid, parent_start}].role = role;
  return role;
}

Watch::Proc* Watch::ProcessOf(pid_t tid, ProcKey* key) {
  pid_t ppid = 0;
  int64_t tid_start = 0;
  if (!ReadStat(tid, &ppid, &tid_start)) {
    // Gone (a close-write after the writer exited): what was seen of it.
    auto it = threads_.find(tid);
    if (it == threads_.end()) return nullptr;
    *key = it->second;
    auto p = procs_.find(*key);
    return p == procs_.end() ? nullptr : &p->second;
  }
  auto known = threads_.find(tid);
  if (known == threads_.end() || (known->second.first == tid && known->second.second != tid_start)) {
    const pid_t tgid = TgidOf(tid);
    if (tgid <= 0) return nullptr;
    int64_t start = tid_start;
    pid_t unused = 0;
    if (tgid != tid && !ReadStat(tgid, &unused, &start)) return nullptr;
    known = threads_.insert_or_assign(tid, ProcKey{tgid, start}).first;
  }
  *key = known->second;
  auto it = procs_.find(*key);
  if (it == procs_.end()) {
    if (!InSandbox(key->first)) return nullptr;
    Proc proc;
    proc.role = RoleOf(key->first, 0);
    it = procs_.emplace(*key, proc).first;
  }
  return &it->second;
}

void Watch::Refresh(pid_t tid, ProcKey key, Proc& proc) {
  proc.refreshed = true;
  Program program = ReadProgram(tid, key.first);
  proc.program = program.path;
  proc.python = program.python;
  proc.shell = program.shell;
  proc.args = std::move(program);
}

Origin Watch::OriginOf(const struct stat& st) {
  const int64_t c = inside::CtimeNs(st);
  if (c < plan_.t0_ns) return Origin::kPristine;
  for (const auto& [from, until] : plan_.trusted) {
    if (c >= from && c < until) return Origin::kTrusted;
  }
  if (c >= start_ns_ && c < untrusted_since_) return Origin::kTrusted;
  auto it = writes_.find({st.st_dev, st.st_ino});
  if (it != writes_.end() && it->second.trusted && it->second.ctime == c) return Origin::kTrusted;
  return Origin::kAgent;
}

std::optional<std::string> Watch::AgentLink(pid_t tid, const std::optional<inside::Asked>& asked,
                                            const struct stat& st, int event_fd, Proc& proc) {
  if (!asked) return std::nullopt;
  Fd root(open(ProcPath(tid, "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  const std::string base_link =
      asked->dirfd == AT_FDCWD ? ProcPath(tid, "cwd") : ProcPath(tid, ("fd/" + std::to_string(asked->dirfd)).c_str());
  Fd base(open(base_link.c_str(), O_PATH | O_CLOEXEC));
  if (!root.ok() || !base.ok()) return std::nullopt;
  inside::Walked walked = inside::Walk(root.get(), base.get(), inside::LinkTarget(base_link), asked->path);
  if (walked.via_proc) return "";
  if (asked->exec) {
    if (walked.fd.ok() && inside::SameFile(walked.st, st)) {
      proc.interpreters.clear();  // a new execve's own file
    } else {
      // Its later files are its program's interpreters: the "#!" line's or
      // the ELF loader, named by a file before (read from that file's own
      // event, which generates none).
      for (const std::string& interpreter : proc.interpreters) {
        walked = inside::Walk(root.get(), root.get(), "/", interpreter);
        if (walked.fd.ok() && inside::SameFile(walked.st, st)) break;
      }
    }
    const std::string next = inside::InterpreterOf(event_fd);
    if (!next.empty() && proc.interpreters.size() < 8) proc.interpreters.push_back(next);
  }
  if (!walked.fd.ok() || !inside::SameFile(walked.st, st)) return std::nullopt;
  for (const auto& [path, link_st] : walked.links) {
    if (OriginOf(link_st) == Origin::kAgent) return path;
  }
  return "";
}

void Watch::Find(const std::string& path, pid_t pid, const Proc& proc, const std::string& why) {
  ++finding_count_;
  if (findings_.size() >= kMaxFindings) return;
  findings_.push_back({{"path", path}, {"pid", pid}, {"program", proc.program}, {"why", why}});
}

void Watch::OnPermission(int raw_fd, pid_t tid, bool exec) {
  Fd fd(raw_fd);
  struct Allow {
    int group, fd;
    ~Allow() {
      fanotify_response response{fd, FAN_ALLOW};
      (void)!write(group, &response, sizeof response);
    }
  } allow{group_.get(), raw_fd};
  std::lock_guard<std::mutex> lock(mutex_);
  ++events_;
  struct stat st{};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  ProcKey key;
  Proc* proc = ProcessOf(tid, &key);
  if (proc == nullptr || proc->role != Role::kMachinery) return;
  ++judged_;
  const std::optional<inside::Asked> asked = inside::AskedBy(tid);
  if (!exec && asked) {
    // An execve's files come twice, as an exec and as an open: judged once.
    if (asked->exec) return;
    // A write-only open reads nothing (its close says what it wrote); an
    // O_TMPFILE has no name to follow and nothing anyone else wrote; a file
    // this open creates (O_CREAT|O_EXCL) or empties (O_TRUNC, done after this
    // event) holds only what its opener writes.
    const int64_t f = asked->flags;
    if ((f & O_ACCMODE) == O_WRONLY || (f & O_TMPFILE) == O_TMPFILE) return;
    if ((f & O_ACCMODE) == O_RDWR && ((f & O_TRUNC) || ((f & O_CREAT) && (f & O_EXCL)))) return;
  }
  if (exec) proc->refreshed = false;  // a new program: its exe and arguments later
  if (!exec && !proc->refreshed) Refresh(tid, key, *proc);
  evidence::Access access;
  access.exec = exec;
  access.path = inside::LinkTarget(ProcPath(getpid(), ("fd/" + std::to_string(fd.get())).c_str()));
  access.origin = OriginOf(st);
  if (proc->python && access.origin == Origin::kPristine) layers_.AddPythonRootOf(access.path);
  auto link = AgentLink(tid, asked, st, fd.get(), *proc);
  if (!link) {
    // The path it asked for could not be followed to this file here: how it
    // got there cannot be told, so it may have been through a symlink of the
    // agent's. Never seen with the shells, Python and coreutils (the suite
    // counts them); taken as the agent's hand rather than let through.
    ++unverified_;
    if (unverified_examples_.size() < kMaxFindings) unverified_examples_.push_back(access.path);
    access.path_unknown = true;
  } else {
    access.agent_link = *link;
  }
  NoteArguments(proc->args, st, &access);
  evidence::ProcessView view{proc->role, proc->python, proc->started, proc->shell};
  // The judged file's content comes from its event's fd: reading through the
  // sandbox's mounts here would wait for this very loop.
  evidence::Decision d = evidence::JudgeOpen(view, access, area_, image_, fd.get());
  if (!d.tampered.empty()) Find(access.path, key.first, *proc, d.tampered);
  if (d.ends_startup) proc->started = true;
  if (d.becomes_agent) {
    proc->role = Role::kAgentProgram;
    untrusted_since_ = std::min(untrusted_since_, NowNs());
  }
  if (exec) proc->started = false;
}

void Watch::OnCloseWrite(int raw_fd, pid_t tid) {
  Fd fd(raw_fd);
  std::lock_guard<std::mutex> lock(mutex_);
  ++events_;
  struct stat st{};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  bool trusted = false;
  ProcKey key;
  if (Proc* proc = ProcessOf(tid, &key)) {
    trusted = proc->role == Role::kMachinery;
  } else {
    // Not a process of the sandbox's: the engine writing forge's upload.
    trusted = access(ProcPath(tid, "stat").c_str(), F_OK) == 0 && !InSandbox(tid);
  }
  writes_[{st.st_dev, st.st_ino}] = {inside::CtimeNs(st), trusted};
}

std::string Watch::Writer(const std::string& path, bool* exists) {
  Drain();
  std::lock_guard<std::mutex> lock(mutex_);
  *exists = false;
  Fd root(open(ProcPath(plan_.init_pid, "root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok()) return "the sandbox is gone";
  const size_t slash = path.rfind('/');
  Fd dir = OpenInRoot(root.get(), path.substr(0, slash), O_PATH | O_DIRECTORY);
  struct stat st{};
  if (!dir.ok() || fstatat(dir.get(), path.substr(slash + 1).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return "";
  *exists = true;
  if (!S_ISREG(st.st_mode)) return path + " is not a regular file";
  if (OriginOf(st) == Origin::kTrusted) return "";
  return path + " was not written by the verifier (its last change was by another process)";
}

bool Watch::tampered() {
  std::lock_guard<std::mutex> lock(mutex_);
  return finding_count_ > 0;
}

Json Watch::Finish() {
  if (!finished_) {
    Drain();
    stop_.store(true);
    uint64_t one = 1;
    (void)!write(wake_.get(), &one, sizeof one);
    if (thread_.joinable()) thread_.join();
    group_ = Fd();  // any event still pending is allowed as the group goes
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    end_ns_ = ClockNs(CLOCK_REALTIME_COARSE);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Json j = {{"checked", true},
            {"method", "fanotify"},
            {"t0_ns", plan_.t0_ns},
            {"working_area", area_},
            {"window", {start_ns_, end_ns_}},
            {"trusted_until_ns", std::min(untrusted_since_, end_ns_)},
            {"events", events_},
            {"judged", judged_},
            {"unverified_paths", unverified_},
            {"unverified_examples", unverified_examples_},
            {"findings", findings_},
            {"finding_count", finding_count_}};
  return j;
}

Result<WatchPlan> PlanWatch(sandbox::Sandbox& sandbox, const std::optional<sandbox::Baseline>& baseline,
                            bool agent_may_run) {
#ifdef FORGE_WATCH_HAVE_DOCKER_ENGINE
  sandbox::docker::Engine* engine = sandbox::docker::EngineOf(sandbox);
  if (engine == nullptr) {
    return Status::NotFound("the " + sandbox.handle().backend + " backend gives no runtime evidence");
  }
  if (geteuid() != 0) return Status::NotFound("forge-verify is not root (fanotify needs CAP_SYS_ADMIN)");
  auto inspect = engine->CallJson("GET", "/containers/" + sandbox::docker::Engine::Escape(sandbox.handle().id) + "/json");
  if (!inspect.ok()) return inspect.status().Prefixed("inspect " + sandbox.handle().id);
  WatchPlan plan;
  plan.agent_may_run = agent_may_run;
  plan.init_pid = inspect->value("/State/Pid"_json_pointer, 0);
  plan.workdir = inspect->value("/Config/WorkingDir"_json_pointer, std::string());
  const std::string driver = inspect->value("/GraphDriver/Name"_json_pointer, std::string());
  if (driver != "overlay2") return Status::NotFound("the engine's storage driver is " + driver + ", not overlay2");
  const std::string upper = inspect->value("/GraphDriver/Data/UpperDir"_json_pointer, std::string());
  std::istringstream lower(inspect->value("/GraphDriver/Data/LowerDir"_json_pointer, std::string()));
  for (std::string dir; std::getline(lower, dir, ':');) plan.layers.push_back(dir);
  // The engine is on this host when the sandbox's PID 1, as it numbers it,
  // has the sandbox's own file system as its root here.
  std::ifstream mountinfo(ProcPath(plan.init_pid, "mountinfo"));
  std::string root_mount;
  std::getline(mountinfo, root_mount);
  if (plan.init_pid <= 0 || upper.empty() || root_mount.find("upperdir=" + upper) == std::string::npos) {
    return Status::NotFound("the engine runs on another host (its sandbox's PID 1 is not visible here)");
  }
  std::ifstream redirect("/sys/module/overlay/parameters/redirect_dir");
  std::string redirect_dir;
  redirect >> redirect_dir;
  if ((redirect_dir == "Y" || root_mount.find("redirect_dir=on") != std::string::npos) &&
      root_mount.find("redirect_dir=off") == std::string::npos) {
    return Status::NotFound("overlayfs renames directories in place here (redirect_dir): a directory the agent "
                            "moved would keep its files' times");
  }
  if (baseline) {
    plan.t0_ns = baseline->t0_ns;
    // The wall clock against the boot clock: a step back since the harness
    // started would give the agent's files times before t0.
    timespec real{}, boot{};
    clock_gettime(CLOCK_REALTIME_COARSE, &real);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    const int64_t offset_now = (static_cast<int64_t>(real.tv_sec) - boot.tv_sec) * 1000000000 +
                               (real.tv_nsec - boot.tv_nsec);
    if (offset_now < baseline->t0_ns - baseline->boot_ns - 1000000000) {
      return Status::InvalidData(fmt::format("the host's clock stepped back {:.1f} s since the harness started",
                                             (baseline->t0_ns - baseline->boot_ns - offset_now) / 1e9));
    }
  } else {
    // No mark: from the sandbox's start, so the environment's writes count
    // as the agent's rather than the agent's as the environment's.
    const std::string started = inspect->value("/State/StartedAt"_json_pointer, std::string());
    std::tm tm{};
    int nanos = 0;
    if (std::sscanf(started.c_str(), "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec) != 6) {
      return Status::Protocol("the engine's StartedAt: " + started);
    }
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    if (size_t dot = started.find('.'); dot != std::string::npos) {
      std::string digits = started.substr(dot + 1, 9);
      while (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back()))) digits.pop_back();
      digits.resize(9, '0');
      nanos = std::atoi(digits.c_str());
    }
    plan.t0_ns = static_cast<int64_t>(timegm(&tm)) * 1000000000 + nanos;
  }
  return plan;
#else
  (void)baseline, (void)agent_may_run;
  return Status::NotFound("the " + sandbox.handle().backend + " backend gives no runtime evidence");
#endif
}

}  // namespace forge::verify
