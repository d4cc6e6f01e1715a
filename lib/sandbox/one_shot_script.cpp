#include "sandbox/one_shot_script.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "sandbox/box.h"

namespace forge::sandbox {

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::string OneShotBootstrap() {
  // $(cat) waits for the launcher to close stdin, so the whole script is read
  // before any of it runs; a script cut short (the launcher died while
  // sending it) lacks the last line and runs nothing.
  return "forge_script=$(cat); case \"$forge_script\" in *'\n# forge-end') eval \"$forge_script\";; "
         "*) echo 'forge-setup: the script arrived incomplete' >&2; exit 198;; esac";
}

std::string OneShotScript(const OneShot& job, const std::string& workdir, int64_t lifetime_seconds,
                          const std::string& held_marker, bool box) {
  std::string script = "unset forge_script\n";
  auto setup_fail = [](const std::string& what) {
    return " || { echo " + ShellQuote("forge-setup: cannot write " + what) + " >&2; exit " +
           std::to_string(kOneShotSetupExit) + "; }\n";
  };
  for (const auto& [path, content] : job.files) {
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (!dir.empty() && dir != "/") {
      script += "mkdir -p " + ShellQuote(dir) + " 2>/dev/null" + setup_fail(path);
    }
    script += "printf %s " + ShellQuote(content) + " > " + ShellQuote(path) + setup_fail(path);
  }
  for (const auto& [key, value] : job.exec.env) {
    script += "export " + key + "=" + ShellQuote(value) + "\n";
  }
  if (!workdir.empty()) {
    script += "mkdir -p " + ShellQuote(workdir) + " 2>/dev/null; cd " + ShellQuote(workdir) +
              setup_fail(workdir);
  }
  script += "exec </dev/null\n";
  std::string command;
  for (const auto& arg : job.exec.argv) command += ShellQuote(arg) + " ";
  command += "&\nforge_pid=$!\n";
  lifetime_seconds = std::max<int64_t>(1, lifetime_seconds);
  if (held_marker.empty()) {
    // The sandbox's own deadline: outlives nothing once the shell has exited.
    script += command;
    script += "(sleep " + std::to_string(lifetime_seconds) + "; kill -KILL $forge_pid) >/dev/null 2>&1 &\n";
    script += "wait $forge_pid\nexit $?\n# forge-end\n";
    return script;
  }
  const double timeout = job.exec.timeout_seconds;
  const int64_t deadline =
      timeout > 0 ? std::min(lifetime_seconds, static_cast<int64_t>(std::ceil(timeout))) : lifetime_seconds;
  // The watchdog exits 3 when told the command ended, 4 once it has killed
  // everything at the deadline; TERM is ignored from the kill on, so the
  // status says which happened even when both race. With forge-box its
  // timer is forge-box's: the image's `sleep`, looked up while the command
  // runs, may already be the agent's.
  std::string timer;
  if (box) {
    for (const auto& arg : SleepArgv(deadline)) timer += ShellQuote(arg) + " ";
  } else {
    timer = "sleep " + std::to_string(deadline) + " ";
  }
  const std::string watchdog = "(trap 'kill $! 2>/dev/null; exit 3' TERM; " + timer +
                               "& wait $!; trap '' TERM; kill -KILL -1; exit 4) >/dev/null 2>&1 &\n"
                               "forge_watchdog=$!\n";
  script += command + watchdog;
  script += "wait $forge_pid\nforge_status=$?\n";
  script += "kill $forge_watchdog 2>/dev/null\nwait $forge_watchdog\nforge_deadline=$(($? == 4))\n";
  // The end line on stdout first, then on stderr: each stream's line comes
  // after everything the command wrote to it, so the reader waits for both.
  script += "printf '\\n%s\\n' " + ShellQuote(held_marker) + "\n";
  script += "printf '\\n%s %d %d\\n' " + ShellQuote(held_marker) + " \"$forge_status\" \"$forge_deadline\" >&2\n";
  // The rest of the lifetime as the keep-alive (see docker_backend.h):
  // forge-box's, which runs nothing, or in 10 s steps of `sleep`, so
  // orphans are reaped, and TERM ends it early.
  const int64_t rest = std::max<int64_t>(10, lifetime_seconds - deadline);
  script += "exec >/dev/null 2>&1\n";
  if (box) {
    script += "exec";
    for (const auto& arg : KeepAliveArgv(rest)) script += " " + ShellQuote(arg);
    script += "\n# forge-end\n";
    return script;
  }
  script += "trap 'exit 0' TERM\n";
  script += "i=0; while [ $i -lt " + std::to_string((rest + 9) / 10) +
            " ]; do sleep 10 & wait $!; i=$((i+1)); done\n";
  script += "exit 0\n# forge-end\n";
  return script;
}

}  // namespace forge::sandbox
