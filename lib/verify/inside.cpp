#include "verify/inside.h"

#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

namespace forge::verify::inside {

Fd& Fd::operator=(Fd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) close(fd_);
}

int Fd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

namespace {

std::deque<std::string> Split(const std::string& path) {
  std::deque<std::string> out;
  size_t at = 0;
  while (at < path.size()) {
    size_t end = path.find('/', at);
    if (end == std::string::npos) end = path.size();
    if (end > at) out.emplace_back(path.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

bool ReadWhole(const std::string& file, std::string* out, size_t max) {
  int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->resize(max);
  size_t got = 0;
  while (got < max) {
    ssize_t n = read(fd, out->data() + got, max - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out->resize(got);
  return true;
}

// A NUL-terminated string at addr in the thread's memory.
std::optional<std::string> ReadString(pid_t tid, uint64_t addr) {
  char file[64];
  std::snprintf(file, sizeof file, "/proc/%d/mem", static_cast<int>(tid));
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[512];
  for (size_t done = 0; done < 4096;) {
    ssize_t n = pread(fd, buf, sizeof buf, static_cast<off_t>(addr + done));
    if (n <= 0) break;
    const void* nul = std::memchr(buf, '\0', static_cast<size_t>(n));
    if (nul != nullptr) {
      out.append(buf, static_cast<const char*>(nul) - buf);
      close(fd);
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
    done += static_cast<size_t>(n);
  }
  close(fd);
  return std::nullopt;
}

std::optional<uint64_t> ReadWord(pid_t tid, uint64_t addr) {
  char file[64];
  std::snprintf(file, sizeof file, "/proc/%d/mem", static_cast<int>(tid));
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  uint64_t word = 0;
  ssize_t n = pread(fd, &word, sizeof word, static_cast<off_t>(addr));
  close(fd);
  if (n != sizeof word) return std::nullopt;
  return word;
}

}  // namespace

Walked Walk(int root, int base, const std::string& base_path, const std::string& path) {
  Walked w;
  struct stat root_st{};
  if (fstat(root, &root_st) != 0) return w;
  const bool absolute = !path.empty() && path[0] == '/';
  Fd current(dup(absolute ? root : base));
  std::string current_path = absolute ? "/" : base_path;
  std::deque<std::string> todo = Split(path);
  int links = 0;
  while (!todo.empty() && current.ok()) {
    const std::string name = todo.front();
    todo.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      struct stat here{};
      if (fstat(current.get(), &here) == 0 && SameFile(here, root_st)) continue;
      current = Fd(openat(current.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
      current_path = Parent(current_path);
      continue;
    }
    const std::string next_path = Join(current_path, name);
    if (next_path == "/proc" || next_path.starts_with("/proc/")) {
      // /proc/self and /proc/PID/fd name this process's files or another's:
      // they are not followed here (the file behind an fd was checked when
      // it was opened).
      w.via_proc = true;
      return w;
    }
    Fd next(openat(current.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next.ok()) return w;
    struct stat st{};
    if (fstat(next.get(), &st) != 0) return w;
    if (S_ISLNK(st.st_mode)) {
      if (++links > 40) return w;
      char target[4096];
      ssize_t n = readlinkat(next.get(), "", target, sizeof target - 1);
      if (n <= 0) return w;
      target[n] = '\0';
      w.links.emplace_back(next_path, st);
      std::deque<std::string> more = Split(target);
      todo.insert(todo.begin(), more.begin(), more.end());
      if (target[0] == '/') {
        current = Fd(dup(root));
        current_path = "/";
      }
      continue;
    }
    current = std::move(next);
    current_path = next_path;
  }
  if (!current.ok() || fstat(current.get(), &w.st) != 0) return w;
  w.fd = std::move(current);
  return w;
}

std::optional<Asked> AskedBy(pid_t tid) {
  char file[64];
  std::snprintf(file, sizeof file, "/proc/%d/syscall", static_cast<int>(tid));
  std::string text;
  // The kernel queues a permission event before its task sleeps on the
  // answer: read in that gap, the file says "running". The task cannot go
  // on without the answer, so it is read again until the task is asleep
  // (bounded: a task that never sleeps leaves the path unknown).
  for (int tries = 0;; ++tries) {
    if (!ReadWhole(file, &text, 256)) return std::nullopt;
    if (text.rfind("running", 0) != 0 || tries == 2000) break;
    sched_yield();
  }
  long long nr = 0;
  unsigned long long a[6] = {};
  if (std::sscanf(text.c_str(), "%lld %llx %llx %llx %llx %llx %llx", &nr, &a[0], &a[1], &a[2], &a[3], &a[4],
                  &a[5]) != 7) {
    return std::nullopt;
  }
  const uint64_t args[6] = {a[0], a[1], a[2], a[3], a[4], a[5]};
  return AskedIn(tid, nr, args);
}

std::optional<Asked> AskedIn(pid_t tid, long long nr, const uint64_t a[6]) {
  Asked asked;
  uint64_t path_addr = 0;
  switch (nr) {
#ifdef SYS_open
    case SYS_open: path_addr = a[0]; asked.flags = static_cast<int64_t>(a[1]); break;
#endif
#ifdef SYS_creat
    case SYS_creat: path_addr = a[0]; asked.flags = O_WRONLY | O_CREAT | O_TRUNC; break;
#endif
    case SYS_openat:
      asked.dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      asked.flags = static_cast<int64_t>(a[2]);
      break;
#ifdef SYS_openat2
    case SYS_openat2: {
      asked.dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      auto flags = ReadWord(tid, a[2]);  // struct open_how starts with its flags
      if (!flags) return std::nullopt;
      asked.flags = static_cast<int64_t>(*flags);
      break;
    }
#endif
    case SYS_execve: asked.exec = true; path_addr = a[0]; break;
    case SYS_execveat:
      asked.exec = true;
      asked.dirfd = static_cast<int>(a[0]);
      path_addr = a[1];
      break;
    default: return std::nullopt;
  }
  auto path = ReadString(tid, path_addr);
  if (!path) return std::nullopt;
  asked.path = std::move(*path);
  return asked;
}

std::vector<std::string> Cmdline(pid_t pid) {
  char file[64];
  std::snprintf(file, sizeof file, "/proc/%d/cmdline", static_cast<int>(pid));
  std::string text;
  std::vector<std::string> argv;
  if (!ReadWhole(file, &text, 64 * 1024)) return argv;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\0', at);
    if (end == std::string::npos) end = text.size();
    argv.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return argv;
}

std::string LinkTarget(const std::string& proc_link) {
  char buf[4096];
  ssize_t n = readlink(proc_link.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::string InterpreterOf(int fd) {
  unsigned char head[256];
  ssize_t n = pread(fd, head, sizeof head, 0);
  if (n < 4) return "";
  if (head[0] == '#' && head[1] == '!') {
    std::string line(reinterpret_cast<char*>(head) + 2, static_cast<size_t>(n) - 2);
    line = line.substr(0, line.find('\n'));
    size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos) return "";
    size_t end = line.find_first_of(" \t", begin);
    return line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  }
  if (std::memcmp(head, ELFMAG, SELFMAG) != 0 || head[EI_CLASS] != ELFCLASS64 ||
      static_cast<size_t>(n) < sizeof(Elf64_Ehdr)) {
    return "";
  }
  Elf64_Ehdr eh;
  std::memcpy(&eh, head, sizeof eh);
  for (int i = 0; i < eh.e_phnum && i < 64; ++i) {
    Elf64_Phdr ph;
    if (pread(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + static_cast<uint64_t>(i) * eh.e_phentsize)) !=
        static_cast<ssize_t>(sizeof ph)) {
      return "";
    }
    if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > 4096) continue;
    std::string interp(ph.p_filesz, '\0');
    if (pread(fd, interp.data(), interp.size(), static_cast<off_t>(ph.p_offset)) !=
        static_cast<ssize_t>(interp.size())) {
      return "";
    }
    return interp.substr(0, interp.find('\0'));
  }
  return "";
}

}  // namespace forge::verify::inside
