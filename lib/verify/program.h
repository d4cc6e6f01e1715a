// What a process of the sandbox is running, read from /proc the way both
// runtime witnesses need it: the fanotify watch from the host (watch.h) and
// forge-box's tracer inside a pod (tools/forge-box/trace.cpp). The program
// (its executable), whether it is a Python interpreter or a shell, and the
// files its arguments name, in order, so an access can be told to be its
// script or its input (evidence::Access).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "verify/evidence.h"

namespace forge::verify {

struct Program {
  std::string path;  // /proc/PID/exe's target
  bool python = false;
  bool shell = false;
  std::vector<std::pair<dev_t, ino_t>> arg_files;  // files the arguments name, in order
  bool script_allowed = true;                      // no -c/-m/-e before the first file argument
};

// The program thread tid (of process pid) runs now; its arguments are
// resolved from its root and working directory.
Program ReadProgram(pid_t tid, pid_t pid);

// Marks access as the program's script or one of its inputs when st is a
// file its arguments name.
void NoteArguments(const Program& program, const struct stat& st, evidence::Access* access);

}  // namespace forge::verify
