// Looking into a running container from its host, as root, without running
// anything inside: resolving a path the way the container's processes do
// (its root, its mounts, its symlinks), what a process blocked in open or
// execve asked for (/proc/TID/syscall and /proc/TID/mem), and what its
// command line names. The watch (verify/watch.h) uses these while a
// process waits for its permission event to be answered, so they are the
// process's facts of that moment.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace forge::verify::inside {

// An fd that closes itself.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.release()) {}
  Fd& operator=(Fd&& other) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd();
  int get() const { return fd_; }
  bool ok() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

// Where a path lookup went: the file it ended at, and every symlink it
// followed, by the container path of the link.
struct Walked {
  Fd fd;                // O_PATH, the final file; invalid when the lookup failed
  struct stat st = {};  // of the final file
  std::vector<std::pair<std::string, struct stat>> links;
  bool via_proc = false;  // went through /proc (magic links): its links are not followed
};

// Resolves path in a container: absolute paths and absolute symlink targets
// from root, relative ones from base (base_path is its container path),
// never above root, at most 40 symlinks; the last component is followed
// when it is a symlink (as open and execve do).
Walked Walk(int root, int base, const std::string& base_path, const std::string& path);

// What a thread blocked in a system call asked for: the path and directory
// fd of open, openat, openat2, creat, execve and execveat, and the open
// flags. nullopt when the call is none of those or cannot be read.
struct Asked {
  bool exec = false;
  int dirfd = -100;  // AT_FDCWD
  std::string path;
  int64_t flags = 0;  // open flags (O_ACCMODE ...); 0 for exec
};
std::optional<Asked> AskedBy(pid_t tid);
// The same for a call the caller has read itself (a tracer's stop): its
// number (this machine's native numbering) and arguments; the path is read
// from the thread's memory.
std::optional<Asked> AskedIn(pid_t tid, long long nr, const uint64_t args[6]);

// A process's command line (argv), from /proc/PID/cmdline.
std::vector<std::string> Cmdline(pid_t pid);

// The container path of an fd of ours or of a process's (readlink of a
// /proc/.../fd/N or cwd link).
std::string LinkTarget(const std::string& proc_link);

// The first 256 bytes' interpreter: a "#!" line's program, or an ELF
// file's PT_INTERP; empty when there is none.
std::string InterpreterOf(int fd);

// Whether two stats are the same file.
inline bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

inline int64_t CtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

}  // namespace forge::verify::inside
