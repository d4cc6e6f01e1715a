#include "verify/program.h"

#include <fcntl.h>

#include <string>

#include "verify/inside.h"

namespace forge::verify {

Program ReadProgram(pid_t tid, pid_t pid) {
  Program p;
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string thread = "/proc/" + std::to_string(tid);
  p.path = inside::LinkTarget(proc + "/exe");
  p.python = evidence::IsPythonProgram(p.path);
  p.shell = evidence::IsShellProgram(p.path);
  const std::vector<std::string> argv = inside::Cmdline(pid);
  inside::Fd root(open((thread + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  inside::Fd cwd(open((thread + "/cwd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.ok() || !cwd.ok()) return p;
  const std::string cwd_path = inside::LinkTarget(thread + "/cwd");
  bool before_first = true;
  for (size_t i = 1; i < argv.size() && i < 64; ++i) {
    std::string arg = argv[i];
    if (arg.empty() || arg.size() > 4096) continue;
    if (arg[0] == '-') {
      if (before_first && (arg == "-c" || arg == "-m" || arg == "-e")) p.script_allowed = false;
      const size_t eq = arg.find('=');
      if (eq == std::string::npos) continue;
      arg = arg.substr(eq + 1);
    }
    inside::Walked w = inside::Walk(root.get(), cwd.get(), cwd_path, arg);
    if (!w.fd.ok() || !S_ISREG(w.st.st_mode)) continue;
    p.arg_files.emplace_back(w.st.st_dev, w.st.st_ino);
    before_first = false;
  }
  return p;
}

void NoteArguments(const Program& program, const struct stat& st, evidence::Access* access) {
  for (size_t i = 0; i < program.arg_files.size(); ++i) {
    if (program.arg_files[i] != std::make_pair(st.st_dev, st.st_ino)) continue;
    access->named_in_argv = true;
    access->first_file_arg = i == 0 && program.script_allowed;
  }
}

}  // namespace forge::verify
