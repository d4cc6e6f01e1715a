// The processes of forge-box's pid namespace, read from /proc with plain
// syscalls (forge-box runs in any image: no library beyond libc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace forge::box {

struct Process {
  pid_t pid = 0;
  int64_t start = 0;   // /proc/PID/stat field 22: clock ticks since boot
  bool dead = false;   // a zombie, or gone: nothing left to stop
};

// Every process but this one; pid 1 included.
std::vector<Process> ListProcesses();

// "PID:START,PID:START" as forge-box prints and reads it.
std::string FormatProcesses(const std::vector<Process>& processes);
// false when the text is not that form.
bool ParseProcesses(const std::string& text, std::vector<Process>* out);

// Writes all of text to fd, retrying short writes.
void WriteAll(int fd, const std::string& text);

}  // namespace forge::box
