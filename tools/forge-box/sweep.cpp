// forge-box sweep: makes a sandbox the agent left fit for its verifier,
// with syscalls only, so nothing the agent put on PATH (a `df`, a `mv`, a
// shell) takes part. Run as root through the engine's exec, before the
// verifier.
//   --stop         stops every process but PID 1, this one and the kept
//                  ones, again until none is left (a forking loop can
//                  outrun one pass): "stopped N", or "left N" (exit 3)
//   --keep LIST    PID:START,... : the environment's processes (forge-box
//                  mark's list), matched by pid and start time
//   --clear        renames /tests and /logs/verifier aside (a rename needs
//                  no permission on what it moves and moves a symlink, not
//                  what it points at; /logs too when it is not a plain
//                  directory), removes what it can of them, makes both
//                  afresh (/logs/verifier mode 0777) and says the free
//                  space of each ("avail KIB"); a failure is "cannot ..."
//                  (exit 4)
//   --tag TAG      names the renamed directories; the last line is "done TAG"
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "commands.h"
#include "proc.h"
#include "sweep.h"
#include "sandbox/box_protocol.h"

namespace forge::box {
namespace {

void Say(const std::string& line) { WriteAll(1, std::string(sandbox::kSweepTag) + line + "\n"); }

std::string Error() { return std::strerror(errno); }

// Stops every process that is not kept; the count found alive the first time.
int StopProcesses(const std::set<std::pair<pid_t, int64_t>>& keep, int* left) {
  int first = -1;
  for (int round = 0;; ++round) {
    int alive = 0;
    for (const Process& p : ListProcesses()) {
      if (p.pid == 1 || p.dead || keep.count({p.pid, p.start})) continue;
      ++alive;
      kill(p.pid, SIGKILL);
    }
    if (first < 0) first = alive;
    if (alive == 0) return first;
    if (round >= 100) {
      *left = alive;
      return first;
    }
    // A killed process takes a moment to become a zombie.
    timespec pause = {0, round < 10 ? 1000000L : 10000000L};
    nanosleep(&pause, nullptr);
  }
}

// Removes what it can of a tree, never following a symlink; depth-bounded,
// so a chain deeper than PATH_MAX is left where it was renamed to.
void RemoveTree(int parent, const char* name, int depth) {
  struct stat st{};
  if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    unlinkat(parent, name, 0);
    return;
  }
  if (depth > 256) return;
  fchmodat(parent, name, 0700, 0);  // a directory the agent made unreadable
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return;
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    close(fd);
    return;
  }
  while (dirent* entry = readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") == 0 || std::strcmp(entry->d_name, "..") == 0) continue;
    RemoveTree(fd, entry->d_name, depth + 1);
  }
  closedir(dir);
  unlinkat(parent, name, AT_REMOVEDIR);
}

bool Exists(const char* path) {
  struct stat st{};
  return lstat(path, &st) == 0;
}

// Renames path aside and removes what it can of it; false (said) on failure.
bool Aside(const char* path, const std::string& aside) {
  if (!Exists(path)) return true;
  if (rename(path, aside.c_str()) != 0) {
    Say(std::string("cannot clear ") + path + ": " + Error());
    return false;
  }
  RemoveTree(AT_FDCWD, aside.c_str(), 0);
  return true;
}

bool MakeDir(const char* path, mode_t mode) {
  if (mkdir(path, mode) != 0 && errno != EEXIST) {
    Say(std::string("cannot make ") + path + ": " + Error());
    return false;
  }
  struct stat st{};
  if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    Say(std::string(path) + " is not a fresh directory");
    return false;
  }
  if (chmod(path, mode) != 0) {
    Say(std::string("cannot make ") + path + ": chmod: " + Error());
    return false;
  }
  return true;
}

bool Clear(const std::string& tag) {
  struct stat logs{};
  if (lstat("/logs", &logs) == 0 && !S_ISDIR(logs.st_mode) && !Aside("/logs", "/.forge-old-logs-" + tag)) {
    return false;
  }
  if (!Aside("/tests", "/.forge-old-tests-" + tag)) return false;
  if (!Aside("/logs/verifier", "/logs/.forge-old-verifier-" + tag)) return false;
  if (!MakeDir("/logs", 0755) || !MakeDir("/logs/verifier", 0777) || !MakeDir("/tests", 0755)) return false;
  for (const char* dir : {"/tests", "/logs/verifier"}) {
    struct statvfs fs{};
    if (statvfs(dir, &fs) == 0) {
      Say("avail " + std::to_string(static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize / 1024));
    }
  }
  return true;
}

}  // namespace

bool SweepArg(int argc, char** argv, int* i, SweepArgs* out, bool* bad) {
  const std::string arg = argv[*i];
  if (arg == "--stop") {
    out->stop = true;
  } else if (arg == "--clear") {
    out->clear = true;
  } else if (arg == "--tag" && *i + 1 < argc) {
    out->tag = argv[++*i];
  } else if (arg == "--keep" && *i + 1 < argc) {
    if (!ParseProcesses(argv[++*i], &out->kept)) {
      Say(std::string("bad --keep list: ") + argv[*i]);
      *bad = true;
    }
  } else {
    return false;
  }
  return true;
}

bool SweepArgsValid(const SweepArgs& args) {
  if (!args.tag.empty() && args.tag.find('/') == std::string::npos) return true;
  Say("--tag TAG is required (no slash)");
  return false;
}

int Sweep(int argc, char** argv) {
  SweepArgs args;
  for (int i = 0; i < argc; ++i) {
    bool bad = false;
    if (!SweepArg(argc, argv, &i, &args, &bad)) {
      Say(std::string("unknown argument ") + argv[i]);
      return 64;
    }
    if (bad) return 64;
  }
  if (!SweepArgsValid(args)) return 64;
  return SweepSteps(args);
}

int SweepSteps(const SweepArgs& args) {
  if (args.stop) {
    std::set<std::pair<pid_t, int64_t>> keep;
    for (const Process& p : args.kept) keep.insert({p.pid, p.start});
    int left = 0;
    const int stopped = StopProcesses(keep, &left);
    if (left > 0) {
      Say("left " + std::to_string(left));
      return 3;
    }
    Say("stopped " + std::to_string(stopped));
  }
  if (args.clear && !Clear(args.tag)) return 4;
  Say("done " + args.tag);
  return 0;
}

}  // namespace forge::box
