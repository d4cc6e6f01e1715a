#include "proc.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace forge::box {
namespace {

// Reads /proc/PID/stat: false when the process is gone.
bool ReadStat(pid_t pid, Process* p) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // comm may hold spaces and parentheses: the fields start after the last ')'.
  char* rest = std::strrchr(buf, ')');
  if (rest == nullptr || rest[1] == '\0') return false;
  rest += 2;  // ") S ..."
  const char state = rest[0];
  p->pid = pid;
  p->dead = state == 'Z' || state == 'X' || state == 'x';
  // state is field 3; starttime is field 22.
  char* cursor = rest;
  for (int field = 3; field < 22; ++field) {
    cursor = std::strchr(cursor, ' ');
    if (cursor == nullptr) return false;
    ++cursor;
  }
  p->start = std::strtoll(cursor, nullptr, 10);
  return true;
}

}  // namespace

std::vector<Process> ListProcesses() {
  std::vector<Process> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  const pid_t self = getpid();
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid <= 0 || pid == self) continue;
    Process p;
    if (ReadStat(static_cast<pid_t>(pid), &p)) out.push_back(p);
  }
  closedir(dir);
  return out;
}

std::string FormatProcesses(const std::vector<Process>& processes) {
  std::string text;
  for (const Process& p : processes) {
    if (!text.empty()) text += ',';
    text += std::to_string(p.pid) + ':' + std::to_string(p.start);
  }
  return text;
}

bool ParseProcesses(const std::string& text, std::vector<Process>* out) {
  const char* c = text.c_str();
  while (*c != '\0') {
    char* end = nullptr;
    long pid = std::strtol(c, &end, 10);
    if (end == c || *end != ':' || pid <= 0) return false;
    c = end + 1;
    long long start = std::strtoll(c, &end, 10);
    if (end == c || (*end != ',' && *end != '\0')) return false;
    out->push_back({static_cast<pid_t>(pid), start, false});
    c = *end == ',' ? end + 1 : end;
  }
  return true;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace forge::box
